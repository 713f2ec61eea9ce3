//! The MCP server the shim exposes: tool schemas, argument checking, result rendering.
//! Every tool call becomes a daemon call keyed by this session's project root.

use std::path::PathBuf;
use std::sync::Arc;

use amanmcp_proto::pb;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value, json};

use crate::link::{DaemonLink, LinkError, state_name};

/// Largest `limit` a search may ask for.
pub const MAX_LIMIT: u64 = 100;
/// `limit` when none is given.
pub const DEFAULT_LIMIT: u64 = 10;
/// Largest `limit` of a symbol lookup.
pub const MAX_LOOKUP_LIMIT: u64 = 50;
/// Default `limit` of a symbol lookup.
pub const DEFAULT_LOOKUP_LIMIT: u64 = 5;

const INSTRUCTIONS: &str = "amanmcp searches this project's code locally. Use `search` to find \
code by words, identifiers, error messages or a description of behaviour; results give \
path:start-end line ranges and the code. Use `lookup` to read a file or line range, or to jump \
to a definition by name (`Session.request`). Use `index-status` to see whether indexing is \
complete. Paths are relative to the project root.";

/// The MCP server of one shim session.
#[derive(Clone)]
pub struct AmanServer {
    link: Arc<DaemonLink>,
    root: Arc<PathBuf>,
}

impl AmanServer {
    /// A server for the project at `root` (canonical), talking to the daemon over `link`.
    pub fn new(link: Arc<DaemonLink>, root: PathBuf) -> Self {
        AmanServer {
            link,
            root: Arc::new(root),
        }
    }

    fn root(&self) -> String {
        self.root.to_string_lossy().into_owned()
    }

    /// Ask the daemon to load the project (starting the daemon if needed). Used at startup,
    /// in the background, so indexing begins before the first search.
    pub async fn warm_up(&self) {
        if let Err(e) = self.link.open_project(&self.root()).await {
            tracing::warn!(error = %e, "could not open the project in the daemon yet");
        }
    }

    async fn search(&self, args: &JsonObject) -> Result<CallToolResult, ToolError> {
        let query = required_string(args, "query")?;
        let limit = optional_integer(args, "limit", 1, MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
        let path_glob = optional_string(args, "path")?;
        let language = optional_string(args, "language")?;
        let request = pb::SearchRequest {
            root: self.root(),
            query: query.clone(),
            limit: limit as u32,
            offset: 0,
            path_glob,
            language,
        };
        let reply = self
            .link
            .call(|mut client| {
                let request = request.clone();
                async move { client.search(request).await.map(|r| r.into_inner()) }
            })
            .await?;
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
        let notice = indexing_notice(&index);
        let mut structured = json!({
            "results": results,
            "total": reply.total,
            "truncated": reply.truncated,
            "index": index_summary(&index),
        });
        if let Some(notice) = &notice {
            structured["notice"] = json!(notice);
        }
        let text = render_search(&query, &reply, notice.as_deref());
        Ok(structured_result(text, structured))
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
            root: self.root(),
            path,
            start_line: start_line.map(|n| n as u32),
            end_line: end_line.map(|n| n as u32),
            symbol: symbol.clone(),
            kind,
            limit: limit as u32,
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

    async fn index_status(&self) -> Result<CallToolResult, ToolError> {
        let status = self.link.open_project(&self.root()).await?;
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
        if let Some(notice) = &status.notice {
            text.push_str(&format!("Notice: {notice}\n"));
        }
        Ok(structured_result(text, structured))
    }
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
    json!({
        "state": state_name(status.state),
        "files": status.files,
        "chunks": status.chunks,
    })
}

fn indexing_notice(status: &pb::ProjectStatus) -> Option<String> {
    (state_name(status.state) == "indexing").then(|| {
        if status.files_total == 0 {
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
        out.push_str(&format!("No results for {query:?}."));
        return out;
    }
    out.push_str(&format!(
        "{} of {} results for {query:?}:\n",
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
            "chunks": {"type": "integer", "description": "Chunks searchable now."}
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
            "notice": {"type": "string", "description": "Present while the index is incomplete."}
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
    vec![
        Tool::new(
            "search",
            "Search this project's code. Returns the best-matching code chunks with their path and 1-based line range, best first.",
            schema(search_input),
        )
        .with_title("Search code")
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
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
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
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.clone().unwrap_or_default();
        let started = std::time::Instant::now();
        let outcome = match request.name.as_ref() {
            "search" => self.search(&args).await,
            "lookup" => self.lookup(&args).await,
            "index-status" => self.index_status().await,
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown tool `{other}`; available: search, lookup, index-status"),
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
                CallToolResult::error(vec![ContentBlock::text(e.to_string())])
            }
        }
        .into())
    }
}
