//! Finds the bundled model's files: the `assets` folder of the `pocket-encoder` crate this
//! package depends on, wherever cargo keeps its sources (a registry, a vendor folder), as
//! `cargo metadata` reports it. The crate keeps its weights private; this package reads the
//! same bytes to run the model many texts at a time.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = std::env::var("TARGET").expect("TARGET");
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
        ])
        .arg(&target)
        .arg("--manifest-path")
        .arg(manifest.join("Cargo.toml"))
        .output()
        .expect("cannot run `cargo metadata`");
    if !output.status.success() {
        panic!(
            "`cargo metadata` failed, so the bundled model's files cannot be found: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("`cargo metadata` printed no JSON");
    let package = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "pocket-encoder")
        .expect("`cargo metadata` lists no pocket-encoder package");
    let assets = PathBuf::from(package["manifest_path"].as_str().expect("a manifest path"))
        .parent()
        .expect("a manifest's folder")
        .join("assets");
    for file in ["model.safetensors", "shapes.json", "tokenizer.json"] {
        let path = assets.join(file);
        assert!(
            path.is_file(),
            "the bundled model has no {}",
            path.display()
        );
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!(
        "cargo:rustc-env=AMANMCP_ENCODER_ASSETS={}",
        assets.display()
    );
}
