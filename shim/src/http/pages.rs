//! What the HTTP endpoint shows people and monitoring: `/status` (a page that follows every
//! loaded project live), `/status.json` (what the page reads) and `/metrics` (Prometheus'
//! text format, from the daemon's `Metrics` RPC). All behind the same [`super::guard`].

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

/// `/status.json`: the daemon and every loaded project.
pub async fn status_json(State(link): State<Arc<DaemonLink>>) -> Response {
    let reply = link
        .call(|mut client| async move { client.status(pb::StatusRequest {}).await })
        .await;
    match reply {
        Ok(reply) => {
            let reply = reply.into_inner();
            let projects: Vec<_> = reply.projects.iter().map(status::project_json).collect();
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
