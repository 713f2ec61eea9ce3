//! `amanmcpd`: the per-user daemon that owns project indexes and serves them over gRPC.
//!
//! See ARCHITECTURE.md for the code map. Layers, lowest first (a module imports only from
//! the ones before it): [`error`], [`nice`] (which threads yield the CPU to searches), [`memory`] (the memory budget), [`files`] (what is on disk), [`chunk`] (splitting code),
//! [`index`] (one project's storage and the pipeline that fills it), [`embed`] (embedders
//! and the embedding worker), [`search`] (query analysis, fusion, ranking, lookup),
//! [`watch`], [`project`] (one loaded project), [`registry`], [`across`] (one query over
//! several projects), [`metrics`] (counts and gauges in Prometheus' format), [`rpc`] (the only module
//! that knows protobuf) and [`server`].

pub mod across;
pub mod chunk;
mod crash;
pub mod embed;
pub mod error;
pub mod files;
pub mod index;
pub mod memory;
pub mod metrics;
pub mod nice;
pub mod project;
pub mod registry;
pub mod rpc;
pub mod search;
pub mod server;
pub mod watch;
