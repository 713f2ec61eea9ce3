//! The MCP server the shim exposes: tool schemas, argument checking, result rendering.
//! Every tool call becomes a daemon call keyed by this session's project root.

// `logging/setLevel` and `notifications/message` are part of MCP 2025-11-25, which clients
// speak today; rmcp marks them deprecated for a later revision of the spec (SEP-2577).
#![allow(deprecated)]

use std::path::PathBuf;
use std::sync::Arc;

use amanmcp_proto::pb;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InitializeResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProgressNotificationParam, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value, json};

use crate::link::{DaemonLink, LinkError, state_name};

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

const INSTRUCTIONS: &str = "amanmcp searches this project's code locally. Use `search` to find \
code by words, identifiers, error messages or a description of behaviour; results give \
path:start-end line ranges and the code. Use `lookup` to read a file or line range, or to jump \
to a definition by name (`Session.request`). Use `similar` to find code like a given location, \
symbol or snippet. Use `index-status` to see whether indexing is complete; `reindex` is rarely \
needed because the index follows file changes. Paths are relative to the project root.";

/// Files per `resources/list` page.
const RESOURCE_PAGE: u32 = 200;

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

/// `file://` URI of an absolute path (RFC 8089; bytes outside the unreserved set encoded).
pub fn file_uri(path: &std::path::Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => {
                uri.push(*byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

/// The path of a `file://` URI, if it is one.
pub fn uri_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn mime_type(language: &str) -> &'static str {
    match language {
        "markdown" => "text/markdown",
        "json" => "application/json",
        "yaml" => "application/yaml",
        "toml" => "application/toml",
        "html" => "text/html",
        "css" => "text/css",
        "xml" => "application/xml",
        "rust" => "text/x-rust",
        "python" => "text/x-python",
        "javascript" => "text/javascript",
        "typescript" | "tsx" => "text/x-typescript",
        "go" => "text/x-go",
        "java" => "text/x-java",
        "c" => "text/x-c",
        "cpp" => "text/x-c++",
        "csharp" => "text/x-csharp",
        "ruby" => "text/x-ruby",
        "php" => "text/x-php",
        "bash" => "text/x-shellscript",
        _ => "text/plain",
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

    /// Ask the daemon to load the project (starting the daemon if needed). Used at startup,
    /// in the background, so indexing begins before the first search.
    pub async fn warm_up(&self) {
        if let Err(e) = self.link.open_project(&self.root().await).await {
            tracing::warn!(error = %e, "could not open the project in the daemon yet");
        }
    }

    async fn search(&self, args: &JsonObject) -> Result<CallToolResult, ToolError> {
        let query = required_string(args, "query")?;
        let limit = optional_integer(args, "limit", 1, MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
        let path_glob = optional_string(args, "path")?;
        let language = optional_string(args, "language")?;
        let offset = optional_integer(args, "offset", 0, MAX_OFFSET)?.unwrap_or(0);
        let mode = optional_mode(args)?;
        let request = pb::SearchRequest {
            root: self.root().await,
            query: query.clone(),
            limit: limit as u32,
            offset: offset as u32,
            path_glob,
            language,
            mode,
        };
        let reply = self
            .link
            .call(|mut client| {
                let request = request.clone();
                async move { client.search(request).await.map(|r| r.into_inner()) }
            })
            .await?;
        Ok(search_result(&format!("{query:?}"), reply))
    }

    async fn lookup(&self, args: &JsonObject) -> Result<CallToolResult, ToolError> {
        let path = optional_string(args, "path")?;
        let symbol = optional_string(args, "symbol")?;
        let kind = optional_string(args, "kind")?;
        let start_line = optional_integer(args, "start_line", 1, u32::MAX as u64)?;
        let end_line = optional_integer(args, "end_line", 1, u32::MAX as u64)?;
        let limit =
            optional_integer(args, "limit", 1, MAX_LOOKUP_LIMIT)?.unwrap_or(DEFAULT_LOOKUP_LIMIT);
        if path.is_none() && symbol.is_none() {
            return Err(ToolError::Argument(
                "give `path` (a file in the project), `symbol` (e.g. `Session.request`), or both"
                    .into(),
            ));
        }
        let request = pb::LookupRequest {
            root: self.root().await,
            path,
            start_line: start_line.map(|n| n as u32),
            end_line: end_line.map(|n| n as u32),
            symbol: symbol.clone(),
            kind,
            limit: limit as u32,
            whole_file: false,
        };
        let reply = self
            .link
            .call(|mut client| {
                let request = request.clone();
                async move { client.lookup(request).await.map(|r| r.into_inner()) }
            })
            .await?;
        let matches: Vec<Value> = reply
            .matches
            .iter()
            .map(|m| {
                let mut item = json!({
                    "path": m.path,
                    "start_line": m.start_line,
                    "end_line": m.end_line,
                    "language": m.language,
                    "code": m.code,
                    "truncated": m.truncated,
                    "total_lines": m.total_lines,
                });
                for (key, value) in [
                    ("symbol", &m.symbol),
                    ("kind", &m.kind),
                    ("signature", &m.signature),
                    ("enclosing", &m.enclosing),
                ] {
                    if let Some(value) = value {
                        item[key] = json!(value);
                    }
                }
                item
            })
            .collect();
        let structured = json!({"matches": matches, "total": reply.total});
        let mut text = String::new();
        if reply.matches.is_empty() {
            text.push_str(&format!(
                "No symbol named {:?} in the index.",
                symbol.as_deref().unwrap_or_default()
            ));
        }
        for m in &reply.matches {
            text.push_str(&format!("{}:{}-{}", m.path, m.start_line, m.end_line));
            if let (Some(kind), Some(symbol)) = (&m.kind, &m.symbol) {
                text.push_str(&format!(" {kind} {symbol}"));
            }
            if let Some(enclosing) = &m.enclosing {
                text.push_str(&format!(" (in {enclosing})"));
            }
            text.push_str(&format!("\n```{}\n{}\n```\n", m.language, m.code));
            if m.truncated {
                text.push_str(&format!(
                    "(cut at {} lines of {}; pass start_line/end_line for more)\n",
                    m.end_line - m.start_line + 1,
                    m.total_lines
                ));
            }
        }
        Ok(structured_result(text, structured))
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

    async fn reindex(
        &self,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let path = optional_string(args, "path")?;
        let root = self.root().await;
        let started = std::time::Instant::now();
        let request = pb::ReindexRequest {
            root: root.clone(),
            path: path.clone(),
        };
        let first = self
            .link
            .call(|mut client| {
                let request = request.clone();
                async move { client.reindex(request).await.map(|r| r.into_inner()) }
            })
            .await?;
        let token = context.meta.get_progress_token();
        let mut status = first.clone();
        if path.is_none() {
            // A full pass runs in the daemon; follow it, reporting progress, until it ends or
            // the client cancels.
            loop {
                if status.passes > first.passes && state_name(status.state) != "indexing" {
                    break;
                }
                if let Some(token) = &token {
                    let mut param =
                        ProgressNotificationParam::new(token.clone(), status.files_done as f64);
                    param.total = (status.files_total > 0).then_some(status.files_total as f64);
                    param.message = Some(format!(
                        "indexing {}/{} files",
                        status.files_done, status.files_total
                    ));
                    let _ = context.peer.notify_progress(param).await;
                }
                tokio::select! {
                    _ = context.ct.cancelled() => {
                        return Err(ToolError::Argument("reindex cancelled by the client; the daemon finishes its pass in the background".into()));
                    }
                    _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {}
                }
                let reply = self
                    .link
                    .call(|mut client| async move {
                        client
                            .status(pb::StatusRequest {})
                            .await
                            .map(|r| r.into_inner())
                    })
                    .await?;
                if let Some(p) = reply.projects.into_iter().find(|p| p.root == root) {
                    status = p;
                }
            }
            if let Some(token) = &token {
                let mut param =
                    ProgressNotificationParam::new(token.clone(), status.files_total as f64);
                param.total = Some(status.files_total as f64);
                param.message = Some("done".into());
                let _ = context.peer.notify_progress(param).await;
            }
        }
        let ms = started.elapsed().as_millis() as u64;
        let mut structured = index_summary(&status);
        structured["scope"] = json!(path.as_deref().unwrap_or("project"));
        structured["ms"] = json!(ms);
        if path.is_none() {
            structured["changed"] = json!(status.last_pass_changed);
            structured["removed"] = json!(status.last_pass_removed);
        }
        let text = match &path {
            Some(path) => format!(
                "Re-indexed {path} in {ms} ms. Index: {}, {} files, {} chunks.",
                state_name(status.state),
                status.files,
                status.chunks
            ),
            None => format!(
                "Re-indexed the project in {ms} ms: {} files changed, {} removed. Index: {}, {} files, {} chunks.",
                status.last_pass_changed,
                status.last_pass_removed,
                state_name(status.state),
                status.files,
                status.chunks
            ),
        };
        self.log(&context.peer, LoggingLevel::Info, text.clone())
            .await;
        Ok(structured_result(text, structured))
    }

    async fn similar(&self, args: &JsonObject) -> Result<CallToolResult, ToolError> {
        let path = optional_string(args, "path")?;
        let line = optional_integer(args, "line", 1, u32::MAX as u64)?;
        let symbol = optional_string(args, "symbol")?;
        let snippet = optional_string(args, "snippet")?;
        let limit = optional_integer(args, "limit", 1, MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
        let label = match (&path, line, &symbol, &snippet) {
            (Some(path), Some(line), None, None) => format!("code similar to {path}:{line}"),
            (None, None, Some(symbol), None) => format!("code similar to {symbol}"),
            (None, None, None, Some(_)) => "code similar to the snippet".to_string(),
            (Some(_), None, None, None) => {
                return Err(ToolError::Argument(
                    "argument `line` is required with `path` (the line of the code to compare)"
                        .into(),
                ));
            }
            _ => {
                return Err(ToolError::Argument(
                    "give exactly one reference: `path` with `line`, `symbol`, or `snippet`".into(),
                ));
            }
        };
        let request = pb::SimilarRequest {
            root: self.root().await,
            path,
            line: line.map(|n| n as u32),
            symbol,
            snippet,
            limit: limit as u32,
            path_glob: optional_string(args, "in_path")?,
            language: optional_string(args, "language")?,
            mode: optional_mode(args)?,
        };
        let reply = self
            .link
            .call(|mut client| {
                let request = request.clone();
                async move { client.similar(request).await.map(|r| r.into_inner()) }
            })
            .await?;
        Ok(search_result(&label, reply))
    }

    async fn index_status(&self) -> Result<CallToolResult, ToolError> {
        let status = self.link.open_project(&self.root().await).await?;
        let mut structured = index_summary(&status);
        let skipped: Map<String, Value> = status
            .skipped
            .iter()
            .map(|s| (s.reason.clone(), json!(s.files)))
            .collect();
        structured["root"] = json!(status.root);
        structured["files_done"] = json!(status.files_done);
        structured["files_total"] = json!(status.files_total);
        structured["index_bytes"] = json!(status.index_bytes);
        structured["source_bytes"] = json!(status.source_bytes);
        structured["skipped"] = Value::Object(skipped);
        structured["last_pass_ms"] = json!(status.last_pass_ms);
        structured["watch"] = json!(status.watch);
        structured["last_pass_changed"] = json!(status.last_pass_changed);
        structured["last_pass_removed"] = json!(status.last_pass_removed);
        if let Some(error) = &status.last_error {
            structured["last_error"] = json!(error);
        }
        if let Some(notice) = &status.notice {
            structured["notice"] = json!(notice);
        }
        if let Some(vectors) = &status.vectors {
            structured["embedding"] = embedding_json(vectors);
        }
        let mut text = format!(
            "Project {}\nState: {}\nFiles: {}  Chunks: {}\nProgress: {}/{} files\nIndex size: {} bytes (source {} bytes)\n",
            status.root,
            state_name(status.state),
            status.files,
            status.chunks,
            status.files_done,
            status.files_total,
            status.index_bytes,
            status.source_bytes,
        );
        if !status.skipped.is_empty() {
            let parts: Vec<String> = status
                .skipped
                .iter()
                .map(|s| format!("{} {}", s.files, s.reason))
                .collect();
            text.push_str(&format!("Skipped: {}\n", parts.join(", ")));
        }
        if let Some(error) = &status.last_error {
            text.push_str(&format!("Last error: {error}\n"));
        }
        text.push_str(&format!("Watching: {}\n", status.watch));
        match &status.vectors {
            Some(vectors) => text.push_str(&format!(
                "Semantic: {}; embedder {} ({})\n",
                embedding_progress(vectors),
                vectors.embedder,
                vectors.health
            )),
            None => text.push_str("Semantic: off (keyword search only)\n"),
        }
        if let Some(notice) = &status.notice {
            text.push_str(&format!("Notice: {notice}\n"));
        }
        Ok(structured_result(text, structured))
    }
}

/// Render a search-shaped reply as readable text plus `structuredContent`.
fn search_result(label: &str, reply: pb::SearchReply) -> CallToolResult {
    let index = reply.index.clone().unwrap_or_default();
    let results: Vec<Value> = reply
        .results
        .iter()
        .map(|hit| {
            let mut item = json!({
                "path": hit.path,
                "start_line": hit.start_line,
                "end_line": hit.end_line,
                "language": hit.language,
                "score": hit.score,
                "snippet": hit.snippet,
            });
            if let Some(symbol) = &hit.symbol {
                item["symbol"] = json!(symbol);
            }
            if let Some(kind) = &hit.kind {
                item["kind"] = json!(kind);
            }
            item
        })
        .collect();
    let mut notice = indexing_notice(&index);
    if let Some(reason) = &reply.semantic_unavailable {
        let text = format!("Semantic search unavailable ({reason}); these are keyword results.");
        notice = Some(match notice {
            Some(n) => format!("{n} {text}"),
            None => text,
        });
    }
    let mut structured = json!({
        "results": results,
        "total": reply.total,
        "truncated": reply.truncated,
        "index": index_summary(&index),
        "semantic": reply.semantic_used,
        "vectors_complete": reply.vectors_complete,
    });
    if let Some(notice) = &notice {
        structured["notice"] = json!(notice);
    }
    let text = render_search(label, &reply, notice.as_deref());
    structured_result(text, structured)
}

/// A tool call that failed in a way the model should see.
#[derive(Debug)]
enum ToolError {
    /// A bad argument: names the parameter and the problem.
    Argument(String),
    /// The daemon could not serve the call.
    Link(LinkError),
}

impl From<LinkError> for ToolError {
    fn from(e: LinkError) -> Self {
        ToolError::Link(e)
    }
}

fn structured_result(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn required_string(args: &JsonObject, name: &str) -> Result<String, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Err(ToolError::Argument(format!(
            "missing required argument `{name}` (a non-empty string)"
        ))),
        Some(Value::String(s)) if s.trim().is_empty() => Err(ToolError::Argument(format!(
            "argument `{name}` must not be empty"
        ))),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(ToolError::Argument(format!(
            "argument `{name}` must be a string, got {}",
            type_name(other)
        ))),
    }
}

fn optional_string(args: &JsonObject, name: &str) -> Result<Option<String>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ToolError::Argument(format!(
            "argument `{name}` must be a string, got {}",
            type_name(other)
        ))),
    }
}

fn optional_integer(
    args: &JsonObject,
    name: &str,
    min: u64,
    max: u64,
) -> Result<Option<u64>, ToolError> {
    let value = match args.get(name) {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => value,
    };
    let number = value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0)
            .map(|f| f as i64)
    });
    match number {
        Some(n) if n >= min as i64 && n <= max as i64 => Ok(Some(n as u64)),
        Some(n) => Err(ToolError::Argument(format!(
            "argument `{name}` must be between {min} and {max}, got {n}"
        ))),
        None => Err(ToolError::Argument(format!(
            "argument `{name}` must be an integer, got {}",
            match value {
                Value::Number(n) => n.to_string(),
                other => type_name(other).to_string(),
            }
        ))),
    }
}

fn index_summary(status: &pb::ProjectStatus) -> Value {
    let mut summary = json!({
        "state": state_name(status.state),
        "files": status.files,
        "chunks": status.chunks,
    });
    if let Some(vectors) = &status.vectors {
        summary["embedded"] = json!(vectors.embedded);
    }
    summary
}

/// The `mode` argument: `hybrid` (default), `lexical` or `semantic`.
fn optional_mode(args: &JsonObject) -> Result<String, ToolError> {
    let mode = optional_string(args, "mode")?.unwrap_or_default();
    match mode.as_str() {
        "" | "hybrid" | "lexical" | "semantic" => Ok(mode),
        other => Err(ToolError::Argument(format!(
            "argument `mode` must be one of hybrid, lexical, semantic (got {other:?})"
        ))),
    }
}

/// The embedder's state as JSON (`index-status`, `amanctl status --json`).
pub fn embedding_json(vectors: &pb::VectorStatus) -> Value {
    let mut out = json!({
        "model": vectors.model,
        "embedder": vectors.embedder,
        "embedded": vectors.embedded,
        "pending": vectors.pending,
        "chunks_per_second": vectors.rate,
        "health": vectors.health,
    });
    if vectors.pending > 0 && vectors.rate > 0.0 {
        out["eta_seconds"] = json!((vectors.pending as f64 / vectors.rate).ceil());
    }
    out
}

/// Embedding progress as words: `1200/3400 chunks embedded (85.2 chunks/s, ~27 s left)`.
pub fn embedding_progress(vectors: &pb::VectorStatus) -> String {
    let total = vectors.embedded + vectors.pending;
    let mut out = format!("{}/{} chunks embedded", vectors.embedded, total);
    if vectors.pending > 0 && vectors.rate > 0.0 {
        let eta = vectors.pending as f64 / vectors.rate;
        out.push_str(&format!(
            " ({:.1} chunks/s, ~{:.0} s left)",
            vectors.rate,
            eta.ceil()
        ));
    }
    out
}

fn indexing_notice(status: &pb::ProjectStatus) -> Option<String> {
    (state_name(status.state) == "indexing").then(|| {
        let lexical_done = status.files_total > 0 && status.files_done >= status.files_total;
        if let Some(vectors) = status.vectors.as_ref().filter(|v| v.pending > 0 && lexical_done) {
            format!(
                "Keyword search is complete; semantic vectors are still being computed ({}), so meaning-based ranking may miss some code.",
                embedding_progress(vectors)
            )
        } else if status.files_total == 0 {
            "The index is still being built (scanning files); results may be incomplete.".into()
        } else {
            format!(
                "The index is still being built ({}/{} files done); results may be incomplete.",
                status.files_done, status.files_total
            )
        }
    })
}

fn render_search(query: &str, reply: &pb::SearchReply, notice: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(notice) = notice {
        out.push_str(notice);
        out.push_str("\n\n");
    }
    if reply.results.is_empty() {
        out.push_str(&format!("No results for {query}."));
        return out;
    }
    out.push_str(&format!(
        "{} of {} results for {query}:\n",
        reply.results.len(),
        reply.total
    ));
    for hit in &reply.results {
        out.push_str(&format!(
            "\n{}:{}-{}",
            hit.path, hit.start_line, hit.end_line
        ));
        if let Some(symbol) = &hit.symbol {
            out.push_str(&format!(" {symbol}"));
            if let Some(kind) = &hit.kind {
                out.push_str(&format!(" ({kind})"));
            }
        }
        out.push_str(&format!(" score {:.2}\n```{}\n", hit.score, hit.language));
        out.push_str(&hit.snippet);
        if !hit.snippet.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("```\n");
    }
    if reply.truncated {
        out.push_str("\n(more results exist; raise `limit` or narrow with `path`/`language`)\n");
    }
    out
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("schemas are JSON objects"),
    }
}

fn index_schema() -> Value {
    json!({
        "type": "object",
        "description": "Index state when the call ran.",
        "properties": {
            "state": {"type": "string", "enum": ["indexing", "ready", "error"]},
            "files": {"type": "integer", "description": "Files searchable now."},
            "chunks": {"type": "integer", "description": "Chunks searchable now."},
            "embedded": {"type": "integer", "description": "Chunks with a semantic vector (absent when semantic search is off). `state` is `ready` only when every chunk has one."}
        },
        "required": ["state", "files", "chunks"]
    })
}

fn lookup_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "A file, relative to the project root (e.g. `src/lib.rs`). Alone: returns the file (or the line range)."},
            "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based) when looking up a path."},
            "end_line": {"type": "integer", "minimum": 1, "description": "Last line to return (1-based, inclusive) when looking up a path."},
            "symbol": {"type": "string", "description": "A symbol name, bare (`request`) or qualified (`Session.request`, `Runtime::block_on`). With `path`, only that file is searched."},
            "kind": {"type": "string", "description": "Only symbols of this kind: function, method, class, struct, enum, trait, interface, impl, module, namespace, type, const, section, ..."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LOOKUP_LIMIT, "default": DEFAULT_LOOKUP_LIMIT, "description": "Most symbol matches to return (1-50, default 5)."}
        }
    })
}

fn lookup_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "matches": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "start_line": {"type": "integer"},
                        "end_line": {"type": "integer"},
                        "language": {"type": "string"},
                        "symbol": {"type": "string"},
                        "kind": {"type": "string"},
                        "signature": {"type": "string"},
                        "enclosing": {"type": "string", "description": "The symbol containing this code."},
                        "code": {"type": "string"},
                        "truncated": {"type": "boolean", "description": "The code was cut to 400 lines."},
                        "total_lines": {"type": "integer", "description": "Lines in the whole file."}
                    },
                    "required": ["path", "start_line", "end_line", "language", "code", "truncated", "total_lines"]
                }
            },
            "total": {"type": "integer"}
        },
        "required": ["matches", "total"]
    })
}

/// The tools this server offers.
pub fn tools() -> Vec<Tool> {
    let read_only = ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true);
    let search_input = json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "What to look for: identifiers (camelCase and snake_case parts match too), words from the code or comments, an error message, or a short description."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": "Maximum number of results (1-100, default 10)."
            },
            "path": {
                "type": "string",
                "description": "Only files whose project-relative path matches this glob, e.g. `src/**/*.rs`, `*.py` or `tests/`."
            },
            "language": {
                "type": "string",
                "description": "Only files of this language, e.g. `rust`, `python`, `typescript`, `go`, `markdown`."
            },
            "mode": {
                "type": "string",
                "enum": ["hybrid", "lexical", "semantic"],
                "default": "hybrid",
                "description": "hybrid (default): keywords and meaning, fused; lexical: exact words and identifiers only; semantic: meaning only."
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_OFFSET,
                "default": 0,
                "description": "Results to skip, for the next page."
            }
        },
        "required": ["query"]
    });
    let search_output = json!({
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Relative to the project root."},
                        "start_line": {"type": "integer", "description": "1-based, inclusive."},
                        "end_line": {"type": "integer", "description": "1-based, inclusive."},
                        "language": {"type": "string"},
                        "symbol": {"type": "string"},
                        "kind": {"type": "string"},
                        "score": {"type": "number"},
                        "snippet": {"type": "string", "description": "The code of the chunk."}
                    },
                    "required": ["path", "start_line", "end_line", "language", "score", "snippet"]
                }
            },
            "total": {"type": "integer", "description": "Matching chunks in all."},
            "truncated": {"type": "boolean", "description": "True when more results exist than returned."},
            "index": index_schema(),
            "semantic": {"type": "boolean", "description": "Whether semantic vectors took part in the ranking."},
            "vectors_complete": {"type": "boolean", "description": "Whether every chunk had its vector when the search ran."},
            "notice": {"type": "string", "description": "Present while the index is incomplete, or when semantic search was unavailable."}
        },
        "required": ["results", "total", "truncated", "index"]
    });
    let mut status_output = index_schema();
    let props = status_output["properties"]
        .as_object_mut()
        .expect("index schema has properties");
    props.insert("root".into(), json!({"type": "string"}));
    props.insert("files_done".into(), json!({"type": "integer"}));
    props.insert("files_total".into(), json!({"type": "integer"}));
    props.insert("index_bytes".into(), json!({"type": "integer"}));
    props.insert("source_bytes".into(), json!({"type": "integer"}));
    props.insert(
        "skipped".into(),
        json!({"type": "object", "additionalProperties": {"type": "integer"}, "description": "Files not indexed, by reason."}),
    );
    props.insert("last_pass_ms".into(), json!({"type": "integer"}));
    props.insert("last_error".into(), json!({"type": "string"}));
    props.insert(
        "watch".into(),
        json!({"type": "string", "description": "How changes are noticed: events (N directories), polling: <why>, or off."}),
    );
    props.insert(
        "last_pass_changed".into(),
        json!({"type": "integer", "description": "Files re-chunked by the last pass."}),
    );
    props.insert(
        "last_pass_removed".into(),
        json!({"type": "integer", "description": "Files dropped by the last pass."}),
    );
    props.insert(
        "notice".into(),
        json!({"type": "string", "description": "Set when the index had to be rebuilt."}),
    );
    props.insert(
        "embedding".into(),
        json!({
            "type": "object",
            "description": "Semantic vectors: absent when semantic search is off.",
            "properties": {
                "model": {"type": "string"},
                "embedder": {"type": "string"},
                "embedded": {"type": "integer"},
                "pending": {"type": "integer"},
                "chunks_per_second": {"type": "number"},
                "eta_seconds": {"type": "number", "description": "Seconds until every chunk has its vector, at the current rate (absent when unknown)."},
                "health": {"type": "string", "description": "ok, unknown (not used yet) or error: ..."}
            }
        }),
    );
    vec![
        Tool::new(
            "search",
            "Search this project's code. Returns the best-matching code chunks with their path and 1-based line range, best first.",
            schema(search_input),
        )
        .with_title("Search code")
        .with_raw_output_schema(schema(search_output.clone()))
        .with_annotations(read_only.clone()),
        Tool::new(
            "similar",
            "Find code similar to a reference, the reference itself excluded: a location (`path` + `line`), a `symbol` (e.g. `Session.request`), or a code `snippet`. Useful for finding duplicated logic, other implementations of a pattern, or code to update together.",
            schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File of the reference code, relative to the project root (with `line`)."},
                    "line": {"type": "integer", "minimum": 1, "description": "A line inside the reference code (1-based; with `path`)."},
                    "symbol": {"type": "string", "description": "A symbol whose definition is the reference, bare or qualified."},
                    "snippet": {"type": "string", "description": "A piece of code to compare against."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "Maximum number of results (1-100, default 10)."},
                    "in_path": {"type": "string", "description": "Only files whose path matches this glob, e.g. `src/**/*.rs`."},
                    "mode": {"type": "string", "enum": ["hybrid", "lexical", "semantic"], "default": "hybrid", "description": "hybrid (default): shared terms and meaning, fused; lexical: shared terms only; semantic: meaning only."},
                    "language": {"type": "string", "description": "Only files of this language, e.g. `rust`, `python`."}
                }
            })),
        )
        .with_title("Find similar code")
        .with_raw_output_schema(schema(search_output))
        .with_annotations(read_only.clone()),
        Tool::new(
            "lookup",
            "Get code by location or by name: a file (optionally a 1-based line range) and/or a symbol such as `parse_config`, `Session.request` or `Runtime::block_on` (optionally filtered by kind). Returns the code with its path, lines, kind, signature and enclosing symbol. Paths must stay inside the project.",
            schema(lookup_input()),
        )
        .with_title("Look up code")
        .with_raw_output_schema(schema(lookup_output()))
        .with_annotations(read_only.clone()),
        Tool::new(
            "reindex",
            "Re-check the index against the files on disk now: the whole project (reports progress when the request carries a progress token; returns when done), or one file or directory given as `path`. Rarely needed: the index follows file changes on its own.",
            schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A file or directory relative to the project root. Omit to re-check the whole project."}
                }
            })),
        )
        .with_title("Re-index")
        .with_raw_output_schema(schema(json!({
            "type": "object",
            "properties": {
                "state": {"type": "string", "enum": ["indexing", "ready", "error"]},
                "files": {"type": "integer"},
                "chunks": {"type": "integer"},
                "scope": {"type": "string", "description": "`project` or the path re-checked."},
                "ms": {"type": "integer", "description": "Time taken."},
                "changed": {"type": "integer", "description": "Files re-chunked (whole-project runs)."},
                "removed": {"type": "integer", "description": "Files dropped (whole-project runs)."}
            },
            "required": ["state", "files", "chunks", "scope", "ms"]
        })))
        .with_annotations(
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .idempotent(true),
        ),
        Tool::new(
            "index-status",
            "Show the state of this project's index: ready or still indexing (with progress), files and chunks indexed, size on disk, skipped files and the last error.",
            schema(json!({"type": "object", "properties": {}})),
        )
        .with_title("Index status")
        .with_raw_output_schema(schema(status_output))
        .with_annotations(read_only),
    ]
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
        let started = std::time::Instant::now();
        let outcome = match request.name.as_ref() {
            "search" => self.search(&args).await,
            "lookup" => self.lookup(&args).await,
            "reindex" => self.reindex(&args, &context).await,
            "similar" => self.similar(&args).await,
            "index-status" => self.index_status().await,
            other => {
                return Err(McpError::invalid_params(
                    format!(
                        "unknown tool `{other}`; available: search, lookup, similar, reindex, index-status"
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
        if !self.explicit_root && request.capabilities.roots.is_some() {
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
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let offset = match request.and_then(|r| r.cursor) {
            Some(cursor) => cursor.parse::<u32>().map_err(|_| {
                McpError::invalid_params(format!("invalid cursor {cursor:?}"), None)
            })?,
            None => 0,
        };
        let root_path = self.root_path().await;
        let root = root_path.to_string_lossy().into_owned();
        let reply = self
            .link
            .call(|mut client| {
                let root = root.clone();
                async move {
                    client
                        .list_files(pb::ListFilesRequest {
                            root,
                            offset,
                            limit: RESOURCE_PAGE,
                        })
                        .await
                        .map(|r| r.into_inner())
                }
            })
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let next = offset as u64 + reply.files.len() as u64;
        let resources = reply
            .files
            .iter()
            .map(|f| {
                Resource::new(file_uri(&root_path.join(&f.path)), f.path.clone())
                    .with_mime_type(mime_type(&f.language))
                    .with_size(f.size)
            })
            .collect();
        Ok(ListResourcesResult {
            resources,
            next_cursor: (next < reply.total).then(|| next.to_string()),
            ..ListResourcesResult::default()
        })
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let template = format!("{}/{{path}}", file_uri(&self.root_path().await));
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(template, "project-file")
                .with_title("A file of this project")
                .with_description("Any indexed file of the project, by its relative path."),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let not_found = |why: String| McpError::resource_not_found(why, Some(json!({"uri": uri})));
        let Some(path) = uri_path(&uri) else {
            return Err(not_found(format!(
                "not a file:// URI of this project: {uri}"
            )));
        };
        let lookup = pb::LookupRequest {
            root: self.root().await,
            path: Some(path),
            whole_file: true,
            ..Default::default()
        };
        let reply = self
            .link
            .call(|mut client| {
                let lookup = lookup.clone();
                async move { client.lookup(lookup).await.map(|r| r.into_inner()) }
            })
            .await;
        match reply {
            Ok(reply) => match reply.matches.into_iter().next() {
                Some(found) => {
                    let contents = ResourceContents::TextResourceContents {
                        uri: uri.clone(),
                        mime_type: Some(mime_type(&found.language).to_string()),
                        text: found.code,
                        meta: None,
                    };
                    Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
                        vec![contents],
                    )))
                }
                None => Err(not_found(format!("no such resource: {uri}"))),
            },
            Err(LinkError::Rejected(why)) => Err(not_found(why)),
            Err(e) => Err(McpError::internal_error(e.to_string(), None)),
        }
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
        let args = request.arguments.unwrap_or_default();
        let arg = |name: &str| -> Result<String, McpError> {
            match args.get(name) {
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
                _ => Err(McpError::invalid_params(
                    format!("prompt `{}` needs the argument `{name}`", request.name),
                    None,
                )),
            }
        };
        let (description, text) = match request.name.as_str() {
            "explain-symbol" => {
                let symbol = arg("symbol")?;
                (
                    format!("Explain {symbol}"),
                    format!(
                        "Explain `{symbol}` in this project. First call the `lookup` tool with symbol \"{symbol}\" to read its definition (and its enclosing type). Then describe what it does, its inputs and outputs, the errors it can produce, and anything surprising. Call `search` with \"{symbol}\" to show two or three places that use it, citing path:line."
                    ),
                )
            }
            "find-usages" => {
                let symbol = arg("symbol")?;
                (
                    format!("Find usages of {symbol}"),
                    format!(
                        "Find every place in this project that uses `{symbol}`. Call `search` with \"{symbol}\" (raise `limit` as needed; narrow with `path` or `language`), read each hit, and list the call sites as path:line with one line on what each does with it. Leave out the definition itself (use `lookup` to see where it is)."
                    ),
                )
            }
            "review-change" => {
                let change = arg("change")?;
                (
                    "Review a change against similar code".to_string(),
                    format!(
                        "Review this change for consistency with the rest of the project:\n\n{change}\n\nUse `search` with the identifiers and phrases it touches to find similar code, and `lookup` to read the definitions it calls. Point out duplicated logic, conventions it breaks, and callers it may affect, citing path:line."
                    ),
                )
            }
            other => {
                return Err(McpError::invalid_params(
                    format!(
                        "unknown prompt `{other}`; available: explain-symbol, find-usages, review-change"
                    ),
                    None,
                ));
            }
        };
        Ok(GetPromptResponse::Complete(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(description),
        ))
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

/// The prompt templates this server offers.
pub fn prompts() -> Vec<Prompt> {
    let symbol = || {
        vec![
            PromptArgument::new("symbol")
                .with_description(
                    "A function, method, class or other symbol, e.g. `Session.request`.",
                )
                .with_required(true),
        ]
    };
    vec![
        Prompt::new(
            "explain-symbol",
            Some("Explain what a function, method or type does, with its definition and uses."),
            Some(symbol()),
        ),
        Prompt::new(
            "find-usages",
            Some("List every place a symbol is used, as path:line."),
            Some(symbol()),
        ),
        Prompt::new(
            "review-change",
            Some("Review a change (a diff or a description) against similar code in the project."),
            Some(vec![
                PromptArgument::new("change")
                    .with_description("The diff or description of the change.")
                    .with_required(true),
            ]),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_round_trip() {
        for path in ["/tmp/a b/c#d.rs", "/home/x/ünï.py", "/plain/path.rs"] {
            let uri = file_uri(std::path::Path::new(path));
            assert!(uri.starts_with("file:///"), "{uri}");
            assert!(!uri.contains(' ') && !uri.contains('#'), "{uri}");
            assert_eq!(uri_path(&uri).as_deref(), Some(path));
        }
        assert_eq!(uri_path("file://localhost/x/y").as_deref(), Some("/x/y"));
        assert_eq!(uri_path("https://example.com/x"), None);
        assert_eq!(uri_path("file://relative"), None);
        assert_eq!(uri_path("file:///bad%zz"), None);
    }
}
