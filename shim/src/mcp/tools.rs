//! The tool handlers: each checks its arguments, makes one daemon call keyed by the
//! session's project root, and renders the reply.

use amanmcp_proto::pb;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonObject, LoggingLevel, ProgressNotificationParam};
use rmcp::service::RequestContext;
use serde_json::json;

use super::args::{
    ToolError, optional_integer, optional_mode, optional_projects, optional_scope, optional_string,
    required_string,
};
use super::budget::Shape;
use super::render::{lookup_result, search_result, structured_result, usages_result};
use super::{
    AmanServer, DEFAULT_LIMIT, DEFAULT_LOOKUP_LIMIT, DEFAULT_USAGES_LIMIT, MAX_LIMIT,
    MAX_LOOKUP_LIMIT, MAX_OFFSET, MAX_USAGES_LIMIT, MAX_USAGES_OFFSET,
};
use crate::link::state_name;
use crate::status::{self, index_summary};

impl AmanServer {
    pub(super) async fn search(&self, args: &JsonObject) -> Result<CallToolResult, ToolError> {
        let query = required_string(args, "query")?;
        let limit = optional_integer(args, "limit", 1, MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
        let shape = Shape::from_args(args)?;
        let (path, path_glob) = optional_scope(args)?;
        let language = optional_string(args, "language")?;
        let offset = optional_integer(args, "offset", 0, MAX_OFFSET)?.unwrap_or(0);
        let mode = optional_mode(args)?;
        let projects = optional_projects(args)?;
        let graph = match optional_string(args, "context")?.as_deref() {
            None => false,
            Some("graph") => true,
            Some(other) => {
                return Err(ToolError::Argument(format!(
                    "argument `context` must be \"graph\" (got {other:?})"
                )));
            }
        };
        let request = pb::SearchRequest {
            root: self.root().await,
            query: query.clone(),
            limit: limit as u32,
            offset: offset as u32,
            path_glob,
            language,
            mode,
            projects,
            path,
        };
        let reply = self
            .link
            .call(|mut client| {
                let request = request.clone();
                async move { client.search(request).await.map(|r| r.into_inner()) }
            })
            .await?;
        let context = if graph {
            self.neighbourhoods(&reply.results).await?
        } else {
            Vec::new()
        };
        Ok(search_result(
            &format!("{query:?}"),
            &query,
            reply,
            shape,
            offset,
            &context,
        ))
    }

    pub(super) async fn lookup(&self, args: &JsonObject) -> Result<CallToolResult, ToolError> {
        let path = optional_string(args, "path")?;
        let symbol = optional_string(args, "symbol")?;
        let kind = optional_string(args, "kind")?;
        let start_line = optional_integer(args, "start_line", 1, u32::MAX as u64)?;
        let end_line = optional_integer(args, "end_line", 1, u32::MAX as u64)?;
        let limit =
            optional_integer(args, "limit", 1, MAX_LOOKUP_LIMIT)?.unwrap_or(DEFAULT_LOOKUP_LIMIT);
        let shape = Shape::from_args(args)?;
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
        Ok(lookup_result(symbol.as_deref(), &reply, shape))
    }

    pub(super) async fn usages(&self, args: &JsonObject) -> Result<CallToolResult, ToolError> {
        let name = required_string(args, "name")?;
        let (path, path_glob) = optional_scope(args)?;
        let limit =
            optional_integer(args, "limit", 1, MAX_USAGES_LIMIT)?.unwrap_or(DEFAULT_USAGES_LIMIT);
        let offset = optional_integer(args, "offset", 0, MAX_USAGES_OFFSET)?.unwrap_or(0);
        let shape = Shape::from_args(args)?;
        let projects = optional_projects(args)?;
        let request = pb::UsagesRequest {
            root: self.root().await,
            name,
            path_glob,
            limit: limit as u32,
            offset: offset as u32,
            projects,
            path,
        };
        let reply = self
            .link
            .call(|mut client| {
                let request = request.clone();
                async move { client.usages(request).await.map(|r| r.into_inner()) }
            })
            .await?;
        Ok(usages_result(&reply, shape, offset))
    }

    pub(super) async fn reindex(
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
            let cancelled = std::sync::atomic::AtomicBool::new(false);
            status = status::follow(
                &self.link,
                status,
                std::time::Duration::ZERO,
                |s| s.passes > first.passes && state_name(s.state) != "indexing",
                |s| {
                    let (token, cancelled) = (&token, &cancelled);
                    async move {
                        if let Some(token) = token {
                            let mut param =
                                ProgressNotificationParam::new(token.clone(), s.files_done as f64);
                            param.total = (s.files_total > 0).then_some(s.files_total as f64);
                            param.message =
                                Some(format!("indexing {}/{} files", s.files_done, s.files_total));
                            let _ = context.peer.notify_progress(param).await;
                        }
                        tokio::select! {
                            _ = context.ct.cancelled() => { cancelled.store(true, std::sync::atomic::Ordering::Relaxed); false }
                            _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => true,
                        }
                    }
                },
            )
            .await?;
            if cancelled.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(ToolError::Argument("reindex cancelled by the client; the daemon finishes its pass in the background".into()));
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

    pub(super) async fn similar(&self, args: &JsonObject) -> Result<CallToolResult, ToolError> {
        let path = optional_string(args, "path")?;
        let line = optional_integer(args, "line", 1, u32::MAX as u64)?;
        let symbol = optional_string(args, "symbol")?;
        let snippet = optional_string(args, "snippet")?;
        let limit = optional_integer(args, "limit", 1, MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
        let shape = Shape::from_args(args)?;
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
        Ok(search_result(&label, "", reply, shape, 0, &[]))
    }

    pub(super) async fn index_status(&self) -> Result<CallToolResult, ToolError> {
        let status = self.link.project_status(&self.root().await).await?;
        Ok(structured_result(
            status::project_text(&status),
            status::project_json(&status),
        ))
    }
}
