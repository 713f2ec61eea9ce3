//! What the HTTP endpoint shows people and monitoring: `/status` (a page that follows every
//! indexed project live: progress bars while indexing and embedding, embedder, last
//! activity), `/status.json` (what the page reads) and `/metrics` (Prometheus' text format,
//! from the daemon's `Metrics` RPC). All behind the same [`super::guard`].

use std::sync::Arc;

use amanmcp_proto::pb;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde_json::json;

use crate::link::{DaemonLink, LinkError};
use crate::status;

/// The status page: static HTML whose script polls `/status.json`.
const STATUS_HTML: &str = include_str!("status.html");

fn unavailable(e: LinkError) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")).into_response()
}

/// `/status`. Opened with `?token=` (a link a person can click), it gets the token in a
/// same-site, script-proof cookie from the guard, so the page's own requests carry it.
pub async fn page() -> Response {
    let mut response = Html(STATUS_HTML).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `/status.json`: the daemon, every loaded project in full, and every other project it has
/// indexed (`state: "not loaded"`), each with when its index was last written.
pub async fn status_json(State(link): State<Arc<DaemonLink>>) -> Response {
    let reply = link
        .call(|mut client| async move {
            let status = client.status(pb::StatusRequest {}).await?.into_inner();
            let indexed = client.projects(pb::ProjectsRequest {}).await?.into_inner();
            Ok((status, indexed))
        })
        .await;
    match reply {
        Ok((reply, indexed)) => {
            let mut projects: Vec<_> = reply.projects.iter().map(status::project_json).collect();
            for project in &indexed.projects {
                let written = (project.last_written_ms > 0).then_some(project.last_written_ms);
                match projects
                    .iter_mut()
                    .find(|p| p["root"] == project.root.as_str())
                {
                    Some(loaded) => loaded["last_written_ms"] = json!(written),
                    None => projects.push(json!({
                        "root": project.root, "state": "not loaded",
                        "index_bytes": project.bytes, "root_exists": project.root_exists,
                        "last_written_ms": written,
                    })),
                }
            }
            let body = json!({
                "version": reply.version,
                "pid": reply.pid,
                "uptime_ms": reply.uptime_ms,
                "rss_bytes": reply.rss_bytes,
                "data_dir": reply.data_dir,
                "projects": projects,
            });
            (
                [
                    (header::CONTENT_TYPE, "application/json"),
                    (header::CACHE_CONTROL, "no-store"),
                ],
                body.to_string(),
            )
                .into_response()
        }
        Err(e) => unavailable(e),
    }
}

/// `/metrics`.
pub async fn metrics(State(link): State<Arc<DaemonLink>>) -> Response {
    let reply = link
        .call(|mut client| async move { client.metrics(pb::MetricsRequest {}).await })
        .await;
    match reply {
        Ok(reply) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            reply.into_inner().text,
        )
            .into_response(),
        Err(e) => unavailable(e),
    }
}
