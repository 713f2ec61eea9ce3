//! The amanmcp shim: speaks MCP over stdio to an AI client and forwards to `amanmcpd`.
//!
//! Knows MCP and the gRPC client; knows nothing about indexing. [`link`] reaches (and if
//! needed starts) the daemon, [`framing`] reads stdin and [`gate`] judges every message, [`mcp`] is the MCP server,
//! [`project`] decides which project a session serves, [`status`] is the one view of a
//! project's status that `amanctl` and the tools share, [`setup`] writes clients' MCP
//! configurations and [`service`] the daemon's service unit. [`http`] is the daemon's optional
//! Streamable HTTP endpoint: the same MCP server, mounted in axum by `amanmcpd`.

pub mod framing;
pub mod gate;
pub mod http;
pub mod link;
pub mod mcp;
pub mod mcp_client;
pub mod preview;
pub mod project;
pub mod service;
pub mod setup;
pub mod status;
