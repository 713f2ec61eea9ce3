//! Plain HTTP/1.1 for the tests of the daemon's HTTP endpoint: a free loopback port, a daemon
//! serving HTTP on it, and raw requests whose every header the test chooses (the SDK clients
//! cannot send a wrong `Host` or `Origin`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Child;
use std::time::Duration;

use crate::TestEnv;

/// A loopback address with a port nothing listens on now.
pub fn free_loopback_addr() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().unwrap()
}

/// A reply: status, headers (names lower-cased) and body.
#[derive(Debug)]
pub struct HttpReply {
    /// The status code.
    pub status: u16,
    /// `(name, value)` pairs, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body as text (an SSE stream as it arrived).
    pub body: String,
}

impl HttpReply {
    /// The first header called `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Send `method path` to `addr` with `headers` (a `Host` is added unless given) and `body`;
/// read the reply until the server closes or 5 s pass without data.
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> HttpReply {
    let mut stream = TcpStream::connect(addr).expect("connect to the HTTP endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    HttpReply {
        status,
        headers,
        body: body.to_string(),
    }
}

impl TestEnv {
    /// Start `amanmcpd --http ADDR` on a free loopback port; returns it and the token.
    pub fn start_http_daemon(&self) -> (Child, SocketAddr, String) {
        let addr = free_loopback_addr();
        let child = self.start_daemon_args(&["--http", &addr.to_string()]);
        let token = self.amanctl(&["http", "token"]);
        assert!(token.ok(), "amanctl http token: {}", token.text());
        (child, addr, token.stdout.trim().to_string())
    }

    /// Start a daemon serving HTTP and run an official-SDK client script against it (as
    /// [`TestEnv::run_client`] does over stdio); returns the daemon, still running.
    pub fn run_client_over_http(&self, interpreter: &Path, script: &str, root: &Path) -> Child {
        let (daemon, addr, token) = self.start_http_daemon();
        let vars = [
            ("AMANMCP_TEST_HTTP_URL", format!("http://{addr}/mcp")),
            ("AMANMCP_TEST_HTTP_TOKEN", token),
        ];
        self.run_client_env(interpreter, script, root, &[], None, &vars);
        daemon
    }
}
