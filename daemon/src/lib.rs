//! `amanmcpd`: the per-user daemon that owns project indexes and serves them over gRPC.
//!
//! See ARCHITECTURE.md for the code map. In short: [`server`] binds the socket,
//! [`rpc`] is the only module that knows protobuf, [`registry`] holds loaded projects,
//! [`project`] owns one project's index, [`indexer`] runs a pass, [`writer`] is the single
//! writer, [`store`] (LMDB) and [`lexical`] (tantivy) are the storage.

pub mod chunk;
pub mod codec;
pub mod embed;
pub mod embedding;
pub mod error;
pub mod hybrid;
pub mod indexer;
pub mod lang;
pub mod lexical;
pub mod lookup;
pub mod project;
pub mod query;
pub mod registry;
pub mod rpc;
pub mod scan;
pub mod server;
pub mod store;
pub mod syntax;
pub mod tokenizer;
pub mod verify;
pub mod watch;
pub mod writer;
