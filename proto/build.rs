//! Compiles the gRPC contract with protox (pure Rust), so no `protoc` binary is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/amanmcp/v1/daemon.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
