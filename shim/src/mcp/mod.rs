//! The MCP server the shim exposes. Every tool call becomes a daemon call keyed by this
//! session's project root.
//!
//! [`tools`] holds the handlers, [`args`] checks arguments, [`render`] turns replies into
//! results within [`budget`], [`schema`] describes the tools, [`resources`] serves `file://` URIs and
//! [`prompts`] the prompt templates. This file holds the session and the protocol dispatch.

// `logging/setLevel` and `notifications/message` are part of MCP 2025-11-25, which clients
// speak today; rmcp marks them deprecated for a later revision of the spec (SEP-2577).
#![allow(deprecated)]

mod args;
mod budget;
mod graph;
mod prompts;
mod render;
mod resources;
mod schema;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::json;

pub use prompts::prompts;
pub use resources::{file_uri, uri_path};
pub use schema::tools;

use crate::link::DaemonLink;
use args::ToolError;

/// Largest `limit` a search may ask for.
pub const MAX_LIMIT: u64 = 100;
/// `limit` when none is given.
pub const DEFAULT_LIMIT: u64 = 10;
/// Deepest page start a search may ask for.
pub const MAX_OFFSET: u64 = 900;
/// Largest `limit` of a symbol lookup.
pub const MAX_LOOKUP_LIMIT: u64 = 50;
/// Default `limit` of a symbol lookup.
pub const DEFAULT_LOOKUP_LIMIT: u64 = 5;
/// Largest `limit` of a usages call.
pub const MAX_USAGES_LIMIT: u64 = 500;
/// Default `limit` of a usages call.
pub const DEFAULT_USAGES_LIMIT: u64 = 50;
/// Deepest page start of a usages call.
pub const MAX_USAGES_OFFSET: u64 = 100_000;

const INSTRUCTIONS: &str = "amanmcp searches this project's code locally. Use `search` to find \
code by words, identifiers, error messages or a description of behaviour; results give \
path:start-end line ranges and the code. Use `lookup` to read a file or line range, or to jump \
to a definition by name (`Session.request`). Use `usages` to see where a name is defined \
and used (each line with its enclosing symbol). Use `similar` to find code like a given location, \
symbol or snippet. Use `index-status` to see whether indexing is complete; `reindex` is rarely \
needed because the index follows file changes. Paths are relative to the project root.";

/// The MCP server of one shim session.
#[derive(Clone)]
pub struct AmanServer {
    link: Arc<DaemonLink>,
    /// The project root. Without `--project`, a client that declares roots decides it: the
    /// write lock is held until its `roots/list` answer arrives, so calls wait for it.
    root: Arc<tokio::sync::RwLock<PathBuf>>,
    explicit_root: bool,
    /// Taken in `initialize` when the client declares roots; released once they are known.
    roots_pending: Arc<std::sync::Mutex<Option<tokio::sync::OwnedRwLockWriteGuard<PathBuf>>>>,
    /// Lowest level sent as `notifications/message` (set by `logging/setLevel`).
    log_level: Arc<std::sync::Mutex<LoggingLevel>>,
}

/// The project an HTTP request names (`/mcp?project=PATH`, canonical), put in the request's
/// extensions by the HTTP endpoint.
#[derive(Debug, Clone)]
pub struct RequestProject(pub PathBuf);

/// What a tool or resource call says when the session serves no project yet.
const NO_PROJECT: &str = "this session has no project: start the client inside the project's \
repository, pass `--project /path/to/project` to amanmcp, declare the project as a root, or \
(over HTTP) connect to /mcp?project=/path/to/project";

fn request_project(extensions: &rmcp::model::Extensions) -> Option<PathBuf> {
    let parts = extensions.get::<axum::http::request::Parts>()?;
    parts
        .extensions
        .get::<RequestProject>()
        .map(|project| project.0.clone())
}

fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl AmanServer {
    /// A server for the project at `root` (canonical), talking to the daemon over `link`.
    pub fn new(link: Arc<DaemonLink>, root: PathBuf, explicit_root: bool) -> Self {
        AmanServer {
            link,
            root: Arc::new(tokio::sync::RwLock::new(root)),
            explicit_root,
            roots_pending: Arc::new(std::sync::Mutex::new(None)),
            log_level: Arc::new(std::sync::Mutex::new(LoggingLevel::Warning)),
        }
    }

    async fn root_path(&self) -> PathBuf {
        self.root.read().await.clone()
    }

    async fn root(&self) -> String {
        self.root_path().await.to_string_lossy().into_owned()
    }

    /// Serve the project an HTTP request names, if this session has none yet. True when the
    /// request names one.
    async fn adopt_request_project(&self, extensions: &rmcp::model::Extensions) -> bool {
        let Some(path) = request_project(extensions) else {
            return false;
        };
        let mut root = self.root.write().await;
        if root.as_os_str().is_empty() {
            *root = path;
            drop(root);
            let warm = self.clone();
            tokio::spawn(async move { warm.warm_up().await });
        }
        true
    }

    /// The session's project, taken from the request when it has none yet; `Err` when there
    /// is none at all (an HTTP session that named no project and declared no roots).
    async fn require_root(&self, extensions: &rmcp::model::Extensions) -> Result<(), String> {
        if self.root_path().await.as_os_str().is_empty() {
            self.adopt_request_project(extensions).await;
        }
        match self.root_path().await.as_os_str().is_empty() {
            true => Err(NO_PROJECT.to_string()),
            false => Ok(()),
        }
    }

    /// Ask the daemon to load the project (starting the daemon if needed). Used at startup,
    /// in the background, so indexing begins before the first search.
    pub async fn warm_up(&self) {
        if let Err(e) = self.link.open_project(&self.root().await).await {
            tracing::warn!(error = %e, "could not open the project in the daemon yet");
        }
    }

    /// Send `notifications/message` if `level` is at or above the client's chosen level.
    async fn log(&self, peer: &rmcp::Peer<RoleServer>, level: LoggingLevel, message: String) {
        let threshold = *self.log_level.lock().unwrap_or_else(|e| e.into_inner());
        if level_rank(level) >= level_rank(threshold) {
            let param = LoggingMessageNotificationParam::new(level, json!({"message": message}))
                .with_logger("amanmcp");
            let _ = peer.notify_logging_message(param).await;
        }
    }
}

impl ServerHandler for AmanServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("amanmcp", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.clone().unwrap_or_default();
        if let Err(message) = self.require_root(&context.extensions).await {
            return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
        }
        let started = std::time::Instant::now();
        let outcome = match request.name.as_ref() {
            "search" => self.search(&args).await,
            "lookup" => self.lookup(&args).await,
            "usages" => self.usages(&args).await,
            kind @ ("callers" | "callees" | "impact" | "trace") => self.graph(kind, &args).await,
            "reindex" => self.reindex(&args, &context).await,
            "similar" => self.similar(&args).await,
            "index-status" => self.index_status().await,
            other => {
                return Err(McpError::invalid_params(
                    format!(
                        "unknown tool `{other}`; available: search, lookup, usages, callers, callees, impact, trace, similar, reindex, index-status"
                    ),
                    None,
                ));
            }
        };
        tracing::debug!(tool = %request.name, ms = started.elapsed().as_millis() as u64, ok = outcome.is_ok(), "tool call");
        Ok(match outcome {
            Ok(result) => result,
            Err(ToolError::Argument(message)) => {
                CallToolResult::error(vec![ContentBlock::text(message)])
            }
            Err(ToolError::Link(e)) => {
                let message = format!("{} failed: {e}", request.name);
                self.log(&context.peer, LoggingLevel::Error, message).await;
                CallToolResult::error(vec![ContentBlock::text(e.to_string())])
            }
        }
        .into())
    }

    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let named = self.adopt_request_project(&context.extensions).await;
        if !named && !self.explicit_root && request.capabilities.roots.is_some() {
            // No tool call may run before the client's roots are known (they come after
            // `initialized`); hold the root until then.
            let guard = self.root.clone().write_owned().await;
            *self.roots_pending.lock().unwrap_or_else(|e| e.into_inner()) = Some(guard);
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let pending = self
            .roots_pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(mut guard) = pending else { return };
        // Ask from a task, so the service loop stays free to carry the answer.
        let server = self.clone();
        tokio::spawn(async move {
            let asked =
                tokio::time::timeout(std::time::Duration::from_secs(5), context.peer.list_roots())
                    .await;
            let chosen = match asked {
                Ok(Ok(result)) => result.roots.iter().find_map(|root| {
                    let path = PathBuf::from(uri_path(&root.uri)?).canonicalize().ok()?;
                    path.is_dir().then_some(path)
                }),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "roots/list failed; keeping the working directory's project");
                    None
                }
                Err(_) => {
                    tracing::warn!(
                        "roots/list unanswered; keeping the working directory's project"
                    );
                    None
                }
            };
            if let Some(path) = chosen {
                tracing::info!(root = %path.display(), "project chosen by the client's roots");
                *guard = path;
            }
            drop(guard);
            server.warm_up().await;
        });
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.require_root(&context.extensions)
            .await
            .map_err(|message| McpError::invalid_request(message, None))?;
        self.resource_page(request.and_then(|r| r.cursor)).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.require_root(&context.extensions)
            .await
            .map_err(|message| McpError::invalid_request(message, None))?;
        Ok(self.resource_templates().await)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.require_root(&context.extensions)
            .await
            .map_err(|message| McpError::invalid_request(message, None))?;
        self.read_uri(request.uri).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        prompts::get(request)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = request.level;
        Ok(())
    }
}
