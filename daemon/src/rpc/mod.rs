//! The gRPC service. The only module that converts between protobuf and domain types.

use std::sync::Arc;
use std::time::Instant;

use amanmcp_proto::pb;
use tokio::sync::Notify;
use tonic::{Request, Response, Status};

use crate::across;
mod convert;
use crate::error::Error;
use crate::project::ProjectStatus;
use crate::registry::Registry;
use crate::search::SearchParams;
use crate::search::fusion::SearchMode;
use crate::search::graph::GraphParams;
use crate::search::lookup::{LookupParams, Reference};
use crate::search::usages::{MAX_USAGES_LIMIT, UsagesParams};
use convert::{graph_reply, project_status_to_pb, search_reply, with_projects};

/// Default page size when a request leaves `limit` at 0.
const DEFAULT_LIMIT: usize = 10;

/// State shared by every RPC.
pub struct RpcService {
    registry: Arc<Registry>,
    /// Calls counted since start; also the daemon's uptime.
    metrics: Arc<crate::metrics::Metrics>,
    socket_path: String,
    shutdown: Arc<Notify>,
}

impl RpcService {
    /// A service over `registry`; `shutdown` is notified by the Shutdown RPC; `metrics` is
    /// what the server's [`crate::metrics::RpcMetricsLayer`] counts.
    pub fn new(
        registry: Arc<Registry>,
        metrics: Arc<crate::metrics::Metrics>,
        socket_path: String,
        shutdown: Arc<Notify>,
    ) -> Self {
        RpcService {
            registry,
            metrics,
            socket_path,
            shutdown,
        }
    }
}

/// The version the Status RPC reports: the package's, unless `AMANMCP_TEST_REPORT_VERSION`
/// says otherwise (the version-handshake test plays an older daemon with it).
fn reported_version() -> String {
    std::env::var("AMANMCP_TEST_REPORT_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string())
}

impl RpcService {
    /// Every loaded project's status, read off the async threads.
    async fn statuses(&self) -> Result<Vec<ProjectStatus>, Status> {
        let registry = self.registry.clone();
        blocking(move || Ok(registry.statuses())).await
    }
}

/// Longest error message sent back: it travels in an HTTP/2 header (`grpc-message`), and a
/// message echoing a huge argument would break the connection instead of reporting.
const MAX_STATUS_MESSAGE: usize = 1024;

fn to_status(e: Error) -> Status {
    match e {
        Error::User(e) => Status::invalid_argument(clip(e.to_string())),
        Error::Index(e) => {
            tracing::error!(error = %clip(e.to_string()), "internal error");
            Status::internal(clip(e.to_string()))
        }
    }
}

/// `text` cut to [`MAX_STATUS_MESSAGE`] bytes at a character boundary, saying so.
fn clip(mut text: String) -> String {
    if text.len() > MAX_STATUS_MESSAGE {
        let mut end = MAX_STATUS_MESSAGE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("… (cut)");
    }
    text
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Status::internal(format!("worker failed: {e}")))?
        .map_err(to_status)
}

fn search_mode(mode: &str) -> Result<SearchMode, Error> {
    SearchMode::parse(mode).ok_or_else(|| {
        crate::error::UserError::InvalidArgument {
            name: "mode",
            reason: format!("{mode:?}: use hybrid, lexical or semantic"),
        }
        .into()
    })
}

/// Log one served call: what was asked, how long it took, how much came back, the outcome.
fn log_call(call: &str, started: Instant, outcome: Result<usize, &Status>) {
    let ms = started.elapsed().as_secs_f64() * 1e3;
    match outcome {
        Ok(results) => tracing::info!(call, ms, results, "ok"),
        Err(status) => {
            tracing::info!(call, ms, code = ?status.code(), error = status.message(), "failed")
        }
    }
}

#[tonic::async_trait]
impl amanmcp_proto::Daemon for RpcService {
    async fn status(
        &self,
        _request: Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusReply>, Status> {
        let projects = self.statuses().await?;
        Ok(Response::new(pb::StatusReply {
            version: reported_version(),
            pid: std::process::id(),
            uptime_ms: self.metrics.uptime().as_millis() as u64,
            socket_path: self.socket_path.clone(),
            data_dir: self.registry.data_dir().to_string_lossy().into_owned(),
            projects: projects.into_iter().map(project_status_to_pb).collect(),
            rss_bytes: crate::metrics::resident_bytes().unwrap_or(0),
        }))
    }

    async fn metrics(
        &self,
        _request: Request<pb::MetricsRequest>,
    ) -> Result<Response<pb::MetricsReply>, Status> {
        let projects = self.statuses().await?;
        Ok(Response::new(pb::MetricsReply {
            text: self.metrics.render(&projects),
        }))
    }

    async fn open_project(
        &self,
        request: Request<pb::OpenProjectRequest>,
    ) -> Result<Response<pb::ProjectStatus>, Status> {
        let pb::OpenProjectRequest { root, status_only } = request.into_inner();
        let registry = self.registry.clone();
        let started = Instant::now();
        let call = format!("open_project root={root:?} status_only={status_only}");
        let status = blocking(move || Ok(registry.open(&root, !status_only)?.status())).await;
        log_call(&call, started, status.as_ref().map(|s| s.files as usize));
        Ok(Response::new(project_status_to_pb(status?)))
    }

    async fn search(
        &self,
        request: Request<pb::SearchRequest>,
    ) -> Result<Response<pb::SearchReply>, Status> {
        let req = request.into_inner();
        let registry = self.registry.clone();
        let started = Instant::now();
        let call = format!(
            "search query={:?} limit={} offset={} mode={:?} glob={:?} path={:?} language={:?}",
            req.query, req.limit, req.offset, req.mode, req.path_glob, req.path, req.language
        );
        let outcome = blocking(move || {
            let params = SearchParams {
                query: req.query,
                limit: if req.limit == 0 {
                    DEFAULT_LIMIT
                } else {
                    req.limit as usize
                },
                offset: req.offset as usize,
                path_glob: req.path_glob,
                within: req.path,
                language: req.language,
                mode: search_mode(&req.mode)?,
            };
            if req.projects.is_empty() {
                let project = registry.open(&req.root, false)?;
                return Ok((project.search(&params)?, Vec::new()));
            }
            let projects = across::projects(&registry, &req.root, &req.projects)?;
            across::search(&projects, &params)
        })
        .await;
        log_call(&call, started, outcome.as_ref().map(|o| o.0.hits.len()));
        let (outcome, projects) = outcome?;
        Ok(Response::new(search_reply(outcome, projects)))
    }

    async fn lookup(
        &self,
        request: Request<pb::LookupRequest>,
    ) -> Result<Response<pb::LookupReply>, Status> {
        let req = request.into_inner();
        let registry = self.registry.clone();
        let started = Instant::now();
        let call = format!(
            "lookup path={:?} symbol={:?} kind={:?} lines={:?}-{:?}",
            req.path, req.symbol, req.kind, req.start_line, req.end_line
        );
        let found = blocking(move || {
            let project = registry.open(&req.root, false)?;
            let matches = project.lookup(&LookupParams {
                path: req.path,
                start_line: req.start_line,
                end_line: req.end_line,
                symbol: req.symbol,
                kind: req.kind,
                limit: if req.limit == 0 {
                    5
                } else {
                    req.limit as usize
                },
                whole_file: req.whole_file,
            })?;
            Ok((matches, project.unparsed_files()))
        })
        .await;
        log_call(&call, started, found.as_ref().map(|(m, _)| m.len()));
        let (matches, unparsed_files) = found?;
        Ok(Response::new(pb::LookupReply {
            total: matches.len() as u64,
            unparsed_files,
            matches: matches
                .into_iter()
                .map(|m| pb::LookupMatch {
                    path: m.path,
                    start_line: m.start_line,
                    end_line: m.end_line,
                    language: m.language,
                    symbol: m.symbol,
                    kind: m.kind,
                    signature: m.signature,
                    enclosing: m.enclosing,
                    code: m.code,
                    truncated: m.truncated,
                    total_lines: m.total_lines,
                })
                .collect(),
        }))
    }

    async fn usages(
        &self,
        request: Request<pb::UsagesRequest>,
    ) -> Result<Response<pb::UsagesReply>, Status> {
        let req = request.into_inner();
        let registry = self.registry.clone();
        let started = Instant::now();
        let (name, glob, path) = (&req.name, &req.path_glob, &req.path);
        let call = format!("usages name={name:?} glob={glob:?} path={path:?}");
        let found = blocking(move || {
            let params = UsagesParams {
                name: req.name,
                path_glob: req.path_glob,
                within: req.path,
                limit: (req.limit as usize).clamp(1, MAX_USAGES_LIMIT),
                offset: req.offset as usize,
            };
            if req.projects.is_empty() {
                let project = registry.open(&req.root, false)?;
                return Ok((project.usages(&params)?, Vec::new()));
            }
            let projects = across::projects(&registry, &req.root, &req.projects)?;
            across::usages(&projects, &params)
        })
        .await;
        log_call(&call, started, found.as_ref().map(|f| f.0.usages.len()));
        let (found, projects) = found?;
        Ok(Response::new(pb::UsagesReply {
            name: found.name,
            total: found.total as u64,
            files: found.files as u64,
            definitions: found.definitions as u64,
            complete: found.complete,
            usages: found
                .usages
                .into_iter()
                .zip(with_projects(projects))
                .map(|(u, project)| pb::Usage {
                    project,
                    path: u.path,
                    line: u.line,
                    column: u.column,
                    text: u.text,
                    enclosing: u.enclosing,
                    definition: u.definition,
                    language: u.language,
                })
                .collect(),
        }))
    }

    async fn graph(
        &self,
        request: Request<pb::GraphRequest>,
    ) -> Result<Response<pb::GraphReply>, Status> {
        let req = request.into_inner();
        let registry = self.registry.clone();
        let started = Instant::now();
        let call = format!("graph {} {:?} to={:?}", req.kind, req.symbols, req.to);
        // The page of links to send; a trace's paths index its links, so all of them go.
        let (offset, limit) = if req.kind == "trace" {
            (0, None)
        } else {
            (req.offset as usize, req.limit.map(|l| l as usize))
        };
        let found = blocking(move || {
            let default = if matches!(req.kind.as_str(), "impact" | "trace") {
                3
            } else {
                1
            };
            let params = GraphParams {
                symbols: req.symbols,
                to: req.to,
                within: req.path,
                depth: if req.depth == 0 { default } else { req.depth },
                diff: req.diff,
            };
            if req.projects.is_empty() {
                let project = registry.open(&req.root, false)?;
                let answer = project.graph(&req.kind, &params)?;
                return Ok((answer, Vec::new(), project.unparsed_files()));
            }
            if req.kind != "callers" {
                return Err(crate::error::UserError::InvalidArgument {
                    name: "projects",
                    reason: "only `callers` looks into other projects".into(),
                }
                .into());
            }
            let projects = across::projects(&registry, &req.root, &req.projects)?;
            let unparsed = projects.iter().map(|p| p.unparsed_files()).sum();
            let (answer, from) = across::callers(&projects, &params)?;
            Ok((answer, from, unparsed))
        })
        .await;
        log_call(&call, started, found.as_ref().map(|f| f.0.links.len()));
        let (answer, projects, unparsed_files) = found?;
        Ok(Response::new(graph_reply(
            answer,
            projects,
            offset,
            limit,
            unparsed_files,
        )))
    }

    async fn verify(
        &self,
        request: Request<pb::VerifyRequest>,
    ) -> Result<Response<pb::VerifyReply>, Status> {
        let root = request.into_inner().root;
        let registry = self.registry.clone();
        let report = blocking(move || registry.open(&root, false)?.verify()).await?;
        Ok(Response::new(pb::VerifyReply {
            ok: report.problems.is_empty(),
            problems: report.problems,
            files: report.files,
            chunks: report.chunks,
            docs: report.docs,
        }))
    }

    async fn similar(
        &self,
        request: Request<pb::SimilarRequest>,
    ) -> Result<Response<pb::SearchReply>, Status> {
        let req = request.into_inner();
        let registry = self.registry.clone();
        let started = Instant::now();
        let (path, line, symbol) = (&req.path, req.line, &req.symbol);
        let bytes = req.snippet.as_ref().map_or(0, String::len);
        let call =
            format!("similar path={path:?} line={line:?} symbol={symbol:?} snippet_bytes={bytes}");
        let outcome = blocking(move || {
            let mode = search_mode(&req.mode)?;
            let reference = match (req.path, req.line, req.symbol, req.snippet) {
                (Some(path), Some(line), None, None) => Reference::Location { path, line },
                (None, None, Some(symbol), None) => Reference::Symbol(symbol),
                (None, None, None, Some(snippet)) => Reference::Snippet(snippet),
                _ => {
                    return Err(crate::error::UserError::InvalidArgument {
                        name: "reference",
                        reason: "give exactly one of: `path` with `line`, `symbol`, or `snippet`"
                            .into(),
                    }
                    .into());
                }
            };
            let project = registry.open(&req.root, false)?;
            project.similar(
                &reference,
                &SearchParams {
                    query: String::new(),
                    limit: if req.limit == 0 {
                        DEFAULT_LIMIT
                    } else {
                        req.limit as usize
                    },
                    offset: 0,
                    path_glob: req.path_glob,
                    within: None,
                    language: req.language,
                    mode,
                },
            )
        })
        .await;
        log_call(&call, started, outcome.as_ref().map(|o| o.hits.len()));
        Ok(Response::new(search_reply(outcome?, Vec::new())))
    }

    async fn reindex(
        &self,
        request: Request<pb::ReindexRequest>,
    ) -> Result<Response<pb::ProjectStatus>, Status> {
        let req = request.into_inner();
        let registry = self.registry.clone();
        let started = Instant::now();
        let call = format!("reindex path={:?}", req.path);
        let status = blocking(move || {
            let project = registry.open(&req.root, false)?;
            match req.path.as_deref().filter(|p| !p.is_empty()) {
                Some(path) => project.reindex_path(path)?,
                None => project.start_reread(),
            }
            Ok(project.status())
        })
        .await;
        log_call(&call, started, status.as_ref().map(|_| 1));
        Ok(Response::new(project_status_to_pb(status?)))
    }

    async fn list_files(
        &self,
        request: Request<pb::ListFilesRequest>,
    ) -> Result<Response<pb::ListFilesReply>, Status> {
        let req = request.into_inner();
        let registry = self.registry.clone();
        let limit = if req.limit == 0 {
            500
        } else {
            req.limit.min(5000) as usize
        };
        let (files, total) = blocking(move || {
            registry
                .open(&req.root, false)?
                .list_files(req.offset as usize, limit)
        })
        .await?;
        Ok(Response::new(pb::ListFilesReply {
            files: files
                .into_iter()
                .map(|(path, record)| pb::IndexedFile {
                    path,
                    language: record.language,
                    size: record.size,
                })
                .collect(),
            total,
        }))
    }

    async fn shutdown(
        &self,
        _request: Request<pb::ShutdownRequest>,
    ) -> Result<Response<pb::ShutdownReply>, Status> {
        tracing::info!("shutdown requested over RPC");
        // Stop once this reply is on its way, not under it.
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            shutdown.notify_one();
        });
        Ok(Response::new(pb::ShutdownReply {}))
    }

    async fn projects(
        &self,
        _request: Request<pb::ProjectsRequest>,
    ) -> Result<Response<pb::ProjectsReply>, Status> {
        let registry = self.registry.clone();
        let indexed = blocking(move || Ok(registry.indexed())).await?;
        Ok(Response::new(pb::ProjectsReply {
            projects: indexed
                .into_iter()
                .map(|project| pb::IndexedProject {
                    root_exists: project.root.is_dir(),
                    root: project.root.to_string_lossy().to_string(),
                    bytes: project.bytes,
                    loaded: project.loaded,
                    last_written_ms: project.last_written_ms(),
                })
                .collect(),
        }))
    }

    async fn forget(
        &self,
        request: Request<pb::ForgetRequest>,
    ) -> Result<Response<pb::ForgetReply>, Status> {
        let req = request.into_inner();
        let registry = self.registry.clone();
        let started = Instant::now();
        let call = format!("forget roots={:?} missing={}", req.roots, req.missing);
        let outcome = blocking(move || {
            let mut roots: Vec<std::path::PathBuf> = req
                .roots
                .iter()
                .map(|r| crate::index::named_root(r))
                .collect();
            if req.missing {
                roots.extend(
                    crate::index::indexed_roots(registry.data_dir())
                        .into_iter()
                        .filter(|root| !root.is_dir()),
                );
            }
            roots.sort();
            roots.dedup();
            let mut freed = 0;
            let mut forgotten = Vec::new();
            for root in roots {
                freed += registry.forget(&root)?;
                forgotten.push(root.to_string_lossy().to_string());
            }
            Ok((forgotten, freed))
        })
        .await;
        log_call(&call, started, outcome.as_ref().map(|(f, _)| f.len()));
        let (forgotten, bytes_freed) = outcome?;
        Ok(Response::new(pb::ForgetReply {
            forgotten,
            bytes_freed,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_error_messages_are_cut_at_a_character_boundary() {
        assert_eq!(clip("short".into()), "short");
        let long = "é".repeat(MAX_STATUS_MESSAGE);
        let cut = clip(long);
        assert!(
            cut.len() <= MAX_STATUS_MESSAGE + "… (cut)".len(),
            "{}",
            cut.len()
        );
        assert!(cut.ends_with("… (cut)"));
    }
}
