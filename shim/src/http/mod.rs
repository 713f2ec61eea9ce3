//! The daemon's HTTP endpoint, off unless the user turns it on (`amanmcpd --http ADDR`, or
//! `amanctl http enable`, which writes [`settings`]). It serves MCP over Streamable HTTP at
//! `/mcp?project=PATH` with the very server the stdio shim runs ([`crate::mcp::AmanServer`],
//! one per `Mcp-Session-Id`), which reaches the daemon through its own socket, so stdio and
//! HTTP answer alike; and [`pages`]: `/status` (a live page), `/status.json`, `/metrics`.
//!
//! Security, as the MCP transport spec asks: loopback addresses only unless the user says
//! otherwise, and every request through [`guard`] (loopback `Host`, own `Origin`, bearer
//! token).

pub mod guard;
mod pages;
pub mod settings;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::link::DaemonLink;
use crate::mcp::{AmanServer, RequestProject};
use guard::{Guard, Refusal};

/// How the endpoint is set up.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Accept a non-loopback address (and any `Host`); the token is still required.
    pub allow_remote: bool,
    /// The daemon's socket, which the MCP sessions call.
    pub socket: PathBuf,
    /// The configuration directory holding the token.
    pub config_dir: PathBuf,
}

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A non-loopback address without `allow_remote`.
    #[error(
        "refusing to serve HTTP on {0}: not a loopback address (use 127.0.0.1 or [::1], or \
         pass --http-allow-remote to let other machines connect)"
    )]
    NotLoopback(SocketAddr),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The token could not be read or made.
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
}

/// Bind the endpoint now (so a taken port fails the daemon's start) and return the future
/// that serves it. Call from inside a tokio runtime.
pub fn bind(options: &HttpOptions) -> Result<impl Future<Output = ()> + Send + 'static, HttpError> {
    if !options.listen.ip().is_loopback() && !options.allow_remote {
        return Err(HttpError::NotLoopback(options.listen));
    }
    let bind_err = |source| HttpError::Bind {
        addr: options.listen,
        source,
    };
    let listener = std::net::TcpListener::bind(options.listen).map_err(bind_err)?;
    let port = listener.local_addr().map_err(bind_err)?.port();
    listener.set_nonblocking(true).map_err(bind_err)?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(bind_err)?;
    let guard = Arc::new(Guard {
        token: settings::token(&options.config_dir)?,
        token_path: options.config_dir.join(settings::TOKEN_FILE),
        any_host: options.allow_remote,
        port,
    });
    let app = router(options, guard);
    tracing::info!(listen = %options.listen, "HTTP endpoint listening (MCP at /mcp, /status, /metrics)");
    Ok(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "HTTP endpoint stopped");
        }
    })
}

fn router(options: &HttpOptions, guard: Arc<Guard>) -> Router {
    let link = Arc::new(DaemonLink::within_daemon(options.socket.clone()));
    let mut config = StreamableHttpServerConfig::default();
    if options.allow_remote {
        config = config.disable_allowed_hosts();
    }
    let session_link = link.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(AmanServer::new(session_link.clone(), PathBuf::new(), false)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let pages = Router::new()
        .route("/status", get(pages::page))
        .route("/status.json", get(pages::status_json))
        .route("/metrics", get(pages::metrics))
        .with_state(link);
    Router::new()
        .nest_service("/mcp", mcp)
        .merge(pages)
        .layer(middleware::from_fn(name_project))
        .layer(middleware::from_fn_with_state(guard, guard::check))
}

/// `?project=PATH` on `/mcp`: an existing directory, absolute, made canonical and handed to
/// the MCP session in the request's extensions.
async fn name_project(mut request: Request, next: Next) -> Response {
    if request.uri().path() == "/mcp" {
        match project_from_query(guard::query_value(request.uri(), "project")) {
            Ok(Some(path)) => {
                request.extensions_mut().insert(RequestProject(path));
            }
            Ok(None) => {}
            Err(message) => return Refusal(StatusCode::BAD_REQUEST, message).into_response(),
        }
    }
    next.run(request).await
}

/// The project a query's decoded `project` value names, if it names one.
fn project_from_query(value: Option<String>) -> Result<Option<PathBuf>, String> {
    let Some(text) = value else {
        return Ok(None);
    };
    // Decoding replaces bytes that are not UTF-8: such a path cannot be named.
    if text.contains(char::REPLACEMENT_CHARACTER) {
        return Err("project: not valid percent-encoded UTF-8".into());
    }
    let path = Path::new(&text);
    if !path.is_absolute() {
        return Err(format!("project `{text}`: give an absolute path"));
    }
    match path.canonicalize() {
        Ok(path) if path.is_dir() => Ok(Some(path)),
        _ => Err(format!("project `{text}`: no such directory")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_paths_are_decoded_absolute_and_existing() {
        let dir = tempfile::tempdir().unwrap();
        let spaced = dir.path().join("my project");
        std::fs::create_dir(&spaced).unwrap();
        let encoded = spaced.to_str().unwrap().replace(' ', "%20");
        let project = |query: &str| {
            let uri: axum::http::Uri = format!("/mcp?{query}").parse().unwrap();
            project_from_query(guard::query_value(&uri, "project"))
        };
        let found = project(&format!("a=b&project={encoded}")).unwrap();
        assert_eq!(found, Some(spaced.canonicalize().unwrap()));
        assert_eq!(project("other=1").unwrap(), None);
        assert!(project("project=relative/dir").is_err());
        assert!(project("project=/no/such/dir/here").is_err());
        assert!(project("project=%zz").is_err());
        assert!(project("project=%ff").is_err());
    }
}
