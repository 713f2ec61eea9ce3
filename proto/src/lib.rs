//! The contract between `amanmcpd` and its clients: the gRPC messages of `amanmcp.v1`
//! and where the daemon's Unix socket lives. Nothing else belongs here.

pub mod endpoint;

/// Generated gRPC types and stubs for `amanmcp.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/amanmcp.v1.rs"));
}

pub use pb::daemon_client::DaemonClient;
pub use pb::daemon_server::{Daemon, DaemonServer};
