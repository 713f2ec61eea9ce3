//! Every HTTP request passes here before it reaches MCP, the status page or the metrics, in
//! this order: a loopback `Host` (DNS-rebinding defence), an `Origin`, when a browser sends
//! one, that is this server's own, and the bearer token. Each refusal is a 4xx whose body
//! says what was wrong and how to get it right.

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The cookie the status page's own requests carry the token in (set when the page is
/// opened with `?token=`).
pub const TOKEN_COOKIE: &str = "amanmcp_token";

/// What a request is checked against.
pub struct Guard {
    /// The bearer token.
    pub token: String,
    /// Where the token is kept (named in refusals).
    pub token_path: PathBuf,
    /// Accept any `Host` (the user bound a non-loopback address on purpose).
    pub any_host: bool,
    /// The port the endpoint listens on: a `Host` naming another one is refused.
    pub port: u16,
}

/// A refused request: the status and the reason.
#[derive(Debug)]
pub struct Refusal(pub StatusCode, pub String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = (self.0, format!("{}\n", self.1)).into_response();
        if self.0 == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"amanmcp\""),
            );
        }
        response
    }
}

/// The axum middleware: judge the request, pass it on or refuse it. The status page opened
/// with the right `?token=` gets the token in a cookie, spelled here from the token itself
/// and fixed attributes (nothing of the request's is echoed).
pub async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    match guard.judge(request.headers(), request.uri()) {
        Ok(()) => {
            let keep_token = status_page_token(request.uri())
                .is_some_and(|given| same_secret(given.as_bytes(), guard.token.as_bytes()));
            let mut response = next.run(request).await;
            let cookie = format!(
                "{TOKEN_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
                guard.token
            );
            if let (true, Ok(cookie)) = (keep_token, HeaderValue::from_str(&cookie)) {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            response
        }
        Err(refusal) => {
            tracing::info!(status = refusal.0.as_u16(), reason = %refusal.1, uri = %request.uri(), "http request refused");
            refusal.into_response()
        }
    }
}

/// An authority as `Host` spells it: `host` or `host:port`, an IPv6 address in brackets.
/// `None` unless the whole text is exactly that (no user part, no path, a port of digits).
fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (v6, after) = rest.split_once(']')?;
            v6.parse::<std::net::Ipv6Addr>().ok()?;
            match after {
                "" => (v6, None),
                _ => (v6, Some(after.strip_prefix(':')?)),
            }
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse().ok()?)
        }
        Some(_) => return None,
    };
    Some((host, port))
}

/// `localhost`, a loopback IPv4 address or `[::1]`, with or without a port, and nothing
/// else (`localhost.evil.example`, `localhost:1.evil.example`, `[::1].evil.example` are not).
pub fn is_loopback_authority(authority: &str) -> bool {
    let Some((host, _)) = split_authority(authority) else {
        return false;
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The value of the request's only `name` header; `Err` when it is sent more than once.
fn single(headers: &HeaderMap, name: header::HeaderName) -> Result<Option<&str>, Refusal> {
    let mut values = headers.get_all(&name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(Refusal(
            StatusCode::BAD_REQUEST,
            format!("more than one `{name}` header: send it once"),
        ));
    }
    match first.map(|v| v.to_str()) {
        Some(Ok(value)) => Ok(Some(value)),
        Some(Err(_)) => Err(Refusal(
            StatusCode::BAD_REQUEST,
            format!("the `{name}` header is not visible ASCII"),
        )),
        None => Ok(None),
    }
}

impl Guard {
    /// Check one request's headers (and, for the status page's token, its query).
    pub fn judge(&self, headers: &HeaderMap, uri: &axum::http::Uri) -> Result<(), Refusal> {
        let forbidden = |message: String| Err(Refusal(StatusCode::FORBIDDEN, message));
        let host = single(headers, header::HOST)?
            .or_else(|| uri.authority().map(|a| a.as_str()))
            .unwrap_or("");
        let other_port = split_authority(host)
            .and_then(|(_, port)| port)
            .is_some_and(|port| port != self.port);
        if !self.any_host && (!is_loopback_authority(host) || other_port) {
            return forbidden(format!(
                "Host `{host}` refused: this endpoint answers only localhost, 127.0.0.1 and [::1] \
                 on port {} (a defence against DNS rebinding)",
                self.port
            ));
        }
        if let Some(origin) = single(headers, header::ORIGIN)? {
            let own = origin
                .strip_prefix("http://")
                .is_some_and(|rest| rest.eq_ignore_ascii_case(host));
            if !own {
                return forbidden(format!(
                    "Origin `{origin}` refused: only pages served by this endpoint (http://{host}) may call it"
                ));
            }
        }
        let presented = bearer(headers)
            .or_else(|| cookie(headers, TOKEN_COOKIE))
            .or_else(|| status_page_token(uri));
        match presented {
            None => Err(Refusal(
                StatusCode::UNAUTHORIZED,
                format!(
                    "missing token: send `Authorization: Bearer <token>`; the token is in {} \
                     (`amanctl http token` prints it)",
                    self.token_path.display()
                ),
            )),
            Some(given) if !same_secret(given.as_bytes(), self.token.as_bytes()) => Err(Refusal(
                StatusCode::UNAUTHORIZED,
                format!(
                    "wrong token: the token is in {} (`amanctl http token` prints it)",
                    self.token_path.display()
                ),
            )),
            Some(_) => Ok(()),
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_string())
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then(|| value.to_string())
        })
}

/// The decoded value of `key` in the request's query, if it has one.
pub(super) fn query_value(uri: &axum::http::Uri, key: &str) -> Option<String> {
    form_urlencoded::parse(uri.query()?.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// `?token=` is accepted only by the status page itself (a browser cannot send a header
/// when the user opens a link); the page then keeps it in a same-site cookie.
fn status_page_token(uri: &axum::http::Uri) -> Option<String> {
    (uri.path() == "/status")
        .then(|| query_value(uri, "token"))
        .flatten()
}

/// Compare secrets in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard {
            token: "secret".into(),
            token_path: PathBuf::from("/cfg/http-token"),
            any_host: false,
            port: 8765,
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn status(pairs: &[(&'static str, &str)], uri: &str) -> u16 {
        match guard().judge(&headers(pairs), &uri.parse().unwrap()) {
            Ok(()) => 200,
            Err(Refusal(code, _)) => code.as_u16(),
        }
    }

    #[test]
    fn loopback_hosts_only() {
        for host in [
            "localhost:8765",
            "127.0.0.1:1",
            "[::1]:9",
            "[::1]",
            "LOCALHOST",
        ] {
            assert!(is_loopback_authority(host), "{host}");
        }
        for host in [
            "evil.example:8765",
            "10.0.0.1",
            "localhost.evil.example",
            "127.evil.example",
            "localhost:8765.evil.com",
            "127.0.0.1:8765.evil.com",
            "[::1].evil.com:8765",
            "localhost:evil.com",
            "localhost:",
            "user@localhost:8765",
            "localhost:8765/x",
            "localhost:99999",
            "",
        ] {
            assert!(!is_loopback_authority(host), "{host}");
        }
    }

    #[test]
    fn each_check_refuses_with_its_own_status() {
        let auth = ("authorization", "Bearer secret");
        assert_eq!(status(&[("host", "127.0.0.1:8765"), auth], "/mcp"), 200);
        assert_eq!(
            status(&[("host", "attacker.example:8765"), auth], "/mcp"),
            403
        );
        let cross = ("origin", "http://attacker.example");
        assert_eq!(
            status(&[("host", "127.0.0.1:8765"), cross, auth], "/mcp"),
            403
        );
        let own = ("origin", "http://127.0.0.1:8765");
        assert_eq!(
            status(&[("host", "127.0.0.1:8765"), own, auth], "/mcp"),
            200
        );
        assert_eq!(status(&[("host", "127.0.0.1:8765")], "/mcp"), 401);
        let wrong = ("authorization", "Bearer secreT");
        assert_eq!(status(&[("host", "127.0.0.1:8765"), wrong], "/mcp"), 401);
        // Another port is another server (a rebinding page reaching this one through it).
        assert_eq!(status(&[("host", "127.0.0.1:8766"), auth], "/mcp"), 403);
        // Sent twice, a header is refused whatever its first value says.
        let twice = [("host", "127.0.0.1:8765"), ("host", "evil.example"), auth];
        assert_eq!(status(&twice, "/mcp"), 400);
        let host = ("host", "127.0.0.1:8765");
        let origins = [host, own, ("origin", "http://attacker.example"), auth];
        assert_eq!(status(&origins, "/mcp"), 400);
    }

    #[test]
    fn the_query_token_opens_the_status_page_only() {
        let host = ("host", "localhost:8765");
        assert_eq!(status(&[host], "/status?token=secret"), 200);
        assert_eq!(status(&[host], "/mcp?token=secret"), 401);
        assert_eq!(
            status(&[host, ("cookie", "a=b; amanmcp_token=secret")], "/metrics"),
            200
        );
    }
}
