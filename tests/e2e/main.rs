//! End-to-end tests over the real binaries. Each test has its own HOME, XDG dirs, socket and
//! data directory (see `amanmcp_tests::TestEnv`).

mod across;
mod answers;
mod budget;
mod compaction;
mod daemon;
mod graph;
mod hardening;
mod http;
mod index;
mod install;
mod lookup;
mod mcp;
mod mcp_client;
mod memory;
mod priority;
mod project;
mod protocol;
mod quick_pass;
mod ranking;
mod recovery;
mod scan;
mod security;
mod semantic;
mod service;
mod setup;
mod status;
mod usages;
mod watch;
