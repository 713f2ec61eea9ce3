//! The daemon's Streamable HTTP endpoint: the official SDKs' HTTP clients over the same
//! surface as stdio, every refusal the MCP transport spec asks for, and `amanctl http`.

use std::time::Duration;

use amanmcp_tests::{
    HttpReply, TestEnv, exit_within, free_loopback_addr, http_request, node, python,
};
use serde_json::json;

use crate::mcp::{AUTH_PY, surface_project, ts_project};

const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");

/// A project and a daemon serving HTTP: the environment, the daemon, its address, the
/// `Bearer` authorization value and the project's `/mcp?project=` path.
fn web_endpoint() -> (
    TestEnv,
    std::process::Child,
    std::net::SocketAddr,
    String,
    String,
) {
    let env = TestEnv::new();
    let root = env.project("web", &[("app.py", "def handler():\n    return 1\n")]);
    let (daemon, addr, token) = env.start_http_daemon();
    let project = format!("/mcp?project={}", root.display());
    (env, daemon, addr, format!("Bearer {token}"), project)
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw-http-test", "version": "0"}}})
    .to_string()
}

#[test]
fn python_sdk_streamable_http_client_drives_the_same_surface_as_stdio() {
    let env = TestEnv::new();
    let root = surface_project(&env);
    let mut daemon = env.run_client_over_http(&python(), "py_surface.py", &root);
    env.stop_daemon();
    daemon.wait().unwrap();
}

#[test]
fn typescript_sdk_streamable_http_client_drives_the_same_surface_as_stdio() {
    let env = TestEnv::new();
    let root = ts_project(&env);
    let mut daemon = env.run_client_over_http(&node(), "ts_surface.mjs", &root);
    env.stop_daemon();
    daemon.wait().unwrap();
}

#[test]
fn over_http_without_a_project_the_clients_roots_choose_it() {
    let env = TestEnv::new();
    let root = env.project("rooted", &[("app/auth.py", AUTH_PY)]);
    let mut daemon = env.run_client_over_http(&python(), "py_roots.py", &root);
    assert_eq!(env.project_roots(), [root.to_str().unwrap()]);
    env.stop_daemon();
    daemon.wait().unwrap();
}

#[test]
fn the_http_endpoint_refuses_what_it_must_and_says_why() {
    let (env, mut daemon, addr, bearer, project) = web_endpoint();
    let auth = ("Authorization", bearer.as_str());
    let post = |path: &str, headers: &[(&str, &str)], body: &str| -> HttpReply {
        http_request(addr, "POST", path, headers, body)
    };
    let body = initialize_body();

    let reply = post(&project, &[ACCEPT, JSON], &body);
    assert_eq!(reply.status, 401, "{reply:?}");
    assert!(
        reply
            .header("www-authenticate")
            .is_some_and(|v| v.starts_with("Bearer"))
    );
    assert!(reply.body.contains("amanctl http token"), "{reply:?}");

    let reply = post(
        &project,
        &[ACCEPT, JSON, ("Authorization", "Bearer nope")],
        &body,
    );
    assert_eq!(reply.status, 401, "{reply:?}");
    assert!(reply.body.contains("wrong token"), "{reply:?}");

    let evil_origin = ("Origin", "http://attacker.example");
    let reply = post(&project, &[ACCEPT, JSON, auth, evil_origin], &body);
    assert_eq!(reply.status, 403, "{reply:?}");
    assert!(reply.body.contains("Origin"), "{reply:?}");

    // DNS rebinding: the attacker's name resolves to 127.0.0.1, the browser sends it as Host.
    let evil_host = format!("attacker.example:{}", addr.port());
    let reply = post(&project, &[ACCEPT, JSON, auth, ("Host", &evil_host)], &body);
    assert_eq!(reply.status, 403, "{reply:?}");
    assert!(reply.body.contains("Host"), "{reply:?}");

    for bad in [
        "/mcp?project=relative/dir",
        "/mcp?project=/no/such/dir/anywhere",
    ] {
        let reply = post(bad, &[ACCEPT, JSON, auth], &body);
        assert_eq!(reply.status, 400, "{bad}: {reply:?}");
        assert!(reply.body.contains("project"), "{reply:?}");
    }

    // A page served by this endpoint may call it.
    let own_origin = format!("http://{addr}");
    let reply = post(
        &project,
        &[ACCEPT, JSON, auth, ("Origin", &own_origin)],
        &body,
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.body.contains("\"serverInfo\""), "{reply:?}");
    assert!(reply.header("mcp-session-id").is_some(), "{reply:?}");

    // An unknown session is 404, as the spec says.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let stale = ("Mcp-Session-Id", "no-such-session");
    let reply = post("/mcp", &[ACCEPT, JSON, auth, stale], &call);
    assert_eq!(reply.status, 404, "{reply:?}");

    // A session that names no project (and declares no roots) is told how to name one.
    let reply = post("/mcp", &[ACCEPT, JSON, auth], &body);
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply
        .header("mcp-session-id")
        .expect("session id")
        .to_string();
    let session = ("Mcp-Session-Id", session.as_str());
    let version = ("MCP-Protocol-Version", "2025-11-25");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let reply = post(
        "/mcp",
        &[ACCEPT, JSON, auth, session, version],
        &initialized,
    );
    assert_eq!(reply.status, 202, "{reply:?}");
    let search = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                        "params": {"name": "search", "arguments": {"query": "handler"}}})
    .to_string();
    let reply = post("/mcp", &[ACCEPT, JSON, auth, session, version], &search);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.body.contains("has no project"), "{reply:?}");
    assert!(reply.body.contains("\"isError\":true"), "{reply:?}");
    env.stop_daemon();
    daemon.wait().unwrap();
}

#[test]
fn the_daemon_listens_on_loopback_only_and_fails_clearly_when_it_cannot() {
    let env = TestEnv::new();
    let port = free_loopback_addr().port();
    let wide = format!("0.0.0.0:{port}");
    let child = env
        .command("amanmcpd")
        .args(["--http", &wide])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a loopback address"), "{stderr}");

    // A taken port stops the daemon at start, and says which.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap().to_string();
    let mut child = env
        .command("amanmcpd")
        .args(["--http", &taken_addr])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = exit_within(&mut child, Duration::from_secs(20));
    let status = status.expect("the daemon should exit when its port is taken");
    assert!(!status.success());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        stderr.contains(&format!("cannot listen on {taken_addr}")),
        "{stderr}"
    );
    assert!(env.daemon_pid().is_none(), "no daemon stays behind");
    drop(taken);
}

#[test]
fn amanctl_http_enable_serves_http_from_the_next_daemon_start() {
    let env = TestEnv::new();
    let port = free_loopback_addr().port();
    let enabled = env.amanctl(&["http", "enable", "--port", &port.to_string(), "--json"]);
    assert!(enabled.ok(), "{}", enabled.text());
    let enabled: serde_json::Value = serde_json::from_str(&enabled.stdout).unwrap();
    assert_eq!(enabled["listen"], format!("127.0.0.1:{port}"));
    let refused = env.amanctl(&["http", "enable", "--address", "192.0.2.1"]);
    assert!(
        !refused.ok() && refused.text().contains("not a loopback"),
        "{}",
        refused.text()
    );

    let mut daemon = env.start_daemon();
    let status = env.amanctl(&["http", "status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(status["enabled"], true, "{status}");
    assert_eq!(status["serving"], true, "{status}");
    let token = env.amanctl(&["http", "token"]).stdout.trim().to_string();
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let bearer = format!("Bearer {token}");
    let reply = http_request(
        addr,
        "POST",
        "/mcp",
        &[ACCEPT, JSON, ("Authorization", &bearer)],
        &initialize_body(),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    env.stop_daemon();
    daemon.wait().unwrap();

    let disabled = env.amanctl(&["http", "disable"]);
    assert!(disabled.ok(), "{}", disabled.text());
    let mut daemon = env.start_daemon();
    let status = env.amanctl(&["http", "status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(status["enabled"], false, "{status}");
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "nothing listens after disable"
    );
    env.stop_daemon();
    daemon.wait().unwrap();
}

#[test]
fn the_status_page_follows_a_project_live_in_headless_chromium() {
    let env = TestEnv::new();
    let root = env.project("watched", &[("app.py", "def handler():\n    return 1\n")]);
    // A project indexed by an earlier daemon: on disk, not loaded by this one.
    let other = env.project("earlier", &[("old.py", "def old():\n    return 0\n")]);
    let mut first = env.start_daemon();
    assert!(env.amanctl_on(&other, &["index"]).ok());
    env.stop_daemon();
    first.wait().unwrap();
    let (mut daemon, addr, token) = env.start_http_daemon();
    let indexed = env.amanctl_on(&root, &["index"]);
    assert!(indexed.ok(), "{}", indexed.text());

    // Without the token neither the page's data nor the metrics are served.
    for path in ["/status", "/status.json", "/metrics"] {
        let reply = http_request(addr, "GET", path, &[], "");
        assert_eq!(reply.status, 401, "{path}: {reply:?}");
    }

    let artifacts = amanmcp_tests::bin_dir().join("test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("status-page.png");
    let _ = std::fs::remove_file(&shot);
    let url = format!("http://{addr}/status?token={token}");
    let args = [
        url.as_str(),
        shot.to_str().unwrap(),
        other.to_str().unwrap(),
    ];
    env.run_client(&node(), "browser_status.mjs", &root, &args, None);
    let png = std::fs::read(&shot).expect("the screenshot is kept");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 5_000,
        "{} bytes",
        png.len()
    );

    // The metrics count what the page and amanctl asked, and show the project, ready once
    // the file the page saw arrive has its vector too.
    env.wait_ready();
    let bearer = format!("Bearer {token}");
    let reply = http_request(addr, "GET", "/metrics", &[("Authorization", &bearer)], "");
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(
        reply
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/plain"))
    );
    let root_label = root.to_str().unwrap();
    for expected in [
        "amanmcp_rpc_requests_total{method=\"Status\",outcome=\"ok\"}".to_string(),
        "amanmcp_rpc_duration_seconds_bucket{method=\"Reindex\",le=\"+Inf\"}".to_string(),
        format!("amanmcp_project_files{{project=\"{root_label}\"}} 2"),
        format!("amanmcp_project_ready{{project=\"{root_label}\"}} 1"),
        "# TYPE amanmcp_daemon_resident_bytes gauge".to_string(),
    ] {
        assert!(
            reply.body.contains(&expected),
            "{expected} missing:\n{}",
            reply.body
        );
    }
    env.stop_daemon();
    daemon.wait().unwrap();
}

#[test]
fn the_http_front_door_parses_host_origin_and_cookie_strictly() {
    let (env, mut daemon, addr, bearer, project) = web_endpoint();
    let token = bearer.trim_start_matches("Bearer ").to_string();
    let auth = ("Authorization", bearer.as_str());
    let body = initialize_body();
    let port = addr.port();
    let post = |headers: &[(&str, &str)]| http_request(addr, "POST", &project, headers, &body);

    // Hosts that merely start like a loopback name are other names (DNS rebinding).
    for host in [
        format!("localhost:{port}.evil.com"),
        format!("127.0.0.1:{port}.evil.com"),
        format!("[::1].evil.com:{port}"),
        "localhost:evil.com".to_string(),
        format!("localhost:{}", port.wrapping_add(1)),
    ] {
        let reply = post(&[ACCEPT, JSON, auth, ("Host", &host)]);
        assert_eq!(reply.status, 403, "Host {host}: {reply:?}");
    }
    // Sent twice, `Host` or `Origin` is refused even when the first is right.
    let own = format!("127.0.0.1:{port}");
    let own_origin = format!("http://{own}");
    let reply = post(&[ACCEPT, JSON, auth, ("Host", &own), ("Host", "evil.example")]);
    assert_eq!(reply.status, 400, "{reply:?}");
    let evil_origin = ("Origin", "http://evil.example");
    let reply = post(&[ACCEPT, JSON, auth, ("Origin", &own_origin), evil_origin]);
    assert_eq!(reply.status, 400, "{reply:?}");
    // The exact authority is served.
    let reply = post(&[ACCEPT, JSON, auth, ("Host", &own), ("Origin", &own_origin)]);
    assert_eq!(reply.status, 200, "{reply:?}");

    // The status page's cookie is spelled from the token and fixed attributes, never from
    // the query.
    let reflected = format!("/status?token={token}%3B%20Domain%3Devil.example");
    let reply = http_request(addr, "GET", &reflected, &[auth], "");
    assert!(
        reply
            .header("set-cookie")
            .is_none_or(|c| !c.contains("evil")),
        "{reply:?}"
    );
    let reply = http_request(addr, "GET", &format!("/status?token={token}"), &[], "");
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(
        reply.header("set-cookie"),
        Some(format!("amanmcp_token={token}; HttpOnly; SameSite=Strict; Path=/").as_str())
    );
    env.stop_daemon();
    daemon.wait().unwrap();

    // A token file others can read is replaced before the endpoint uses it.
    let token_file = env.path().join("home/.config/amanmcp/http-token");
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut daemon = env.start_daemon_args(&["--http", &addr.to_string()]);
    let reply = post(&[ACCEPT, JSON, auth]);
    assert_eq!(
        reply.status, 401,
        "the leaked token no longer opens it: {reply:?}"
    );
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "token file mode {mode:o}");
    env.stop_daemon();
    daemon.wait().unwrap();
}
