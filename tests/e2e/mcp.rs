//! The shim as MCP clients see it.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use amanmcp_tests::{Shim, TestEnv, node, python};
use serde_json::json;

pub(crate) const AUTH_PY: &str = r#"import hashlib


def verify_password(user, candidate):
    """Check a login attempt against the stored hash."""
    digest = hashlib.pbkdf2_hmac("sha256", candidate, user.salt, 100_000)
    return digest == user.password_digest
"#;

/// Calls `verify_password` (the graph tools' fixture in the SDK scripts).
pub(crate) const LOGIN_PY: &str = "from app.auth import verify_password


def login(user, attempt):
    return verify_password(user, attempt)
";

const LIB_RS: &str = r#"/// Parses the retry budget from the environment.
pub fn parseRetryBudget(raw: &str) -> Option<u32> {
    raw.trim().parse().ok()
}
"#;

#[test]
fn python_sdk_client_finds_a_function_by_a_word_from_its_body() {
    let env = TestEnv::new();
    let root = env.project(
        "pyproj",
        &[
            ("app/auth.py", AUTH_PY),
            ("src/lib.rs", LIB_RS),
            ("README.md", "# demo\n"),
        ],
    );
    env.run_client(
        &python(),
        "py_search.py",
        &root,
        &["pbkdf2_hmac", "app/auth.py", "6"],
        None,
    );
    // amanctl shows the project the client used.
    let (running, status) = env.status();
    assert!(running, "{status}");
    assert_eq!(env.project_roots(), [root.to_str().unwrap()], "{status}");
}

/// The project the surface scripts drive: enough files for resources to take several pages,
/// a secret that must not be served, and a file outside the project.
pub(crate) fn surface_project(env: &TestEnv) -> std::path::PathBuf {
    let mut files: Vec<(String, String)> = vec![
        ("app/auth.py".into(), AUTH_PY.into()),
        ("app/login.py".into(), LOGIN_PY.into()),
        (".env".into(), "KEY=1\n".into()),
    ];
    for i in 0..230 {
        files.push((
            format!("pkg/m{i}.py"),
            format!("def f{i}():\n    return {i}\n"),
        ));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let root = env.project("surface", &files);
    std::fs::write(env.path().join("projects/outside.txt"), "not yours").unwrap();
    root
}

/// The project the TypeScript surface script drives.
pub(crate) fn ts_project(env: &TestEnv) -> std::path::PathBuf {
    env.project(
        "tsproj",
        &[
            ("app/auth.py", AUTH_PY),
            ("app/login.py", LOGIN_PY),
            ("src/lib.rs", LIB_RS),
        ],
    )
}

#[test]
fn python_sdk_client_uses_resources_prompts_logging_and_reindex() {
    let env = TestEnv::new();
    let root = surface_project(&env);
    env.run_client(&python(), "py_surface.py", &root, &[], None);
}

#[test]
fn typescript_sdk_client_drives_every_tool_resource_and_prompt() {
    let env = TestEnv::new();
    let root = ts_project(&env);
    env.run_client(&node(), "ts_surface.mjs", &root, &[], None);
}

#[test]
fn without_a_project_flag_the_clients_roots_choose_the_project() {
    let env = TestEnv::new();
    let root = env.project("rooted", &[("app/auth.py", AUTH_PY)]);
    let elsewhere = env.path().join("home");
    env.run_client(&python(), "py_roots.py", &root, &[], Some(&elsewhere));
    // The working directory was never indexed.
    assert_eq!(env.project_roots(), [root.to_str().unwrap()]);
}

#[test]
fn protocol_versions_are_negotiated() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let mut shim = Shim::start(&env, &root);
        let reply = shim.request(
            "initialize",
            json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        );
        let version = reply["result"]["protocolVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if asked == "1999-01-01" {
            assert!(
                version.as_str() >= answered,
                "unknown version {asked} -> {reply}"
            );
        } else {
            assert_eq!(version, answered, "{reply}");
        }
        let caps = &reply["result"]["capabilities"];
        for cap in ["tools", "resources", "prompts", "logging"] {
            assert!(caps[cap].is_object(), "{cap} must be an object: {reply}");
        }
    }
}

#[test]
fn unknown_methods_and_resources_get_their_json_rpc_errors() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    let reply = shim.request("no/such/method", json!({}));
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    // `server/discover` (probed by newer clients) is answered at once, never left hanging.
    let started = Instant::now();
    let reply = shim.request("server/discover", json!({}));
    assert!(
        reply.get("error").is_some() || reply.get("result").is_some(),
        "{reply}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let reply = shim.request("resources/read", json!({"uri": "file:///etc/passwd"}));
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    let reply = shim.request("prompts/get", json!({"name": "no-such-prompt"}));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    // Optional fields are omitted, never null.
    let reply = shim.request("tools/list", json!({}));
    assert!(!reply.to_string().contains("null"), "{reply}");
    let reply = shim.call_tool("search", json!({"query": "verify_password"}));
    assert!(!reply.to_string().contains(":null"), "{reply}");
}

#[test]
fn two_shims_on_two_projects_share_one_daemon() {
    let env = TestEnv::new();
    let a = env.project("alpha", &[("auth.py", AUTH_PY)]);
    let b = env.project("beta", &[("src/lib.rs", LIB_RS)]);
    let mut shim_a = Shim::start(&env, &a);
    let mut shim_b = Shim::start(&env, &b);
    shim_a.initialize();
    shim_b.initialize();
    shim_a.search_until("verify_password", "auth.py");
    let result = shim_b.search_until("retry budget", "src/lib.rs");
    // Each shim sees only its own project.
    let hits = result["structuredContent"]["results"].as_array().unwrap();
    assert!(hits.iter().all(|h| h["path"] == "src/lib.rs"), "{result}");
    // Beta's function is no word of alpha's; once alpha's one chunk has its vector, default
    // mode offers it as the nearest (no threshold), but never a file of beta's.
    let reply = shim_a.call_tool(
        "search",
        json!({"query": "parseRetryBudget", "mode": "lexical"}),
    );
    assert_eq!(reply["result"]["structuredContent"]["total"], 0, "{reply}");
    let reply = shim_a.call_tool("search", json!({"query": "parseRetryBudget"}));
    let hits = reply["result"]["structuredContent"]["results"]
        .as_array()
        .unwrap();
    assert!(hits.iter().all(|h| h["path"] == "auth.py"), "{reply}");

    let (running, status) = env.status();
    assert!(running);
    let mut roots = env.project_roots();
    roots.sort();
    assert_eq!(
        roots,
        [a.to_str().unwrap(), b.to_str().unwrap()],
        "{status}"
    );
    // One daemon: exactly one process holds the per-user lock, and it is the one answering.
    let lock_pid =
        std::fs::read_to_string(amanmcp_proto::endpoint::socket_lock_path(&env.socket())).unwrap();
    assert_eq!(lock_pid.trim(), status["pid"].to_string());
}

#[test]
fn killing_the_daemon_mid_session_is_survived() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("pbkdf2_hmac", "auth.py");
    let first = env.daemon_pid().expect("daemon running");
    // SAFETY: kill has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(first, libc::SIGKILL) }, 0);
    env.wait_for(Duration::from_secs(10), "the daemon to die", || {
        // SAFETY: signal 0 only checks for existence.
        unsafe { libc::kill(first, 0) != 0 }
    });
    // The next call restarts the daemon and answers from the index on disk.
    let result = shim.search_until("pbkdf2_hmac", "auth.py");
    assert_eq!(result["isError"], json!(false));
    let second = env.daemon_pid().expect("daemon restarted");
    assert_ne!(first, second);
    assert_eq!(shim.close(Duration::from_secs(5)).code(), Some(0));
}

#[test]
fn malformed_json_gets_a_parse_error_and_the_shim_stays_alive() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    for bad in ["{not json", "[1, 2", "}}}", "\u{1}\u{2}"] {
        shim.send_raw(bad);
        let reply = shim.recv(Duration::from_secs(5));
        assert_eq!(reply["error"]["code"], -32700, "reply to {bad:?}: {reply}");
        assert_eq!(reply["id"], json!(null));
    }
    // Valid JSON that is not a JSON-RPC message is an invalid request.
    shim.send_raw(r#"{"hello": "world"}"#);
    let reply = shim.recv(Duration::from_secs(5));
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    // Still serving.
    let reply = shim.request("ping", json!({}));
    assert_eq!(reply["result"], json!({}), "{reply}");
    shim.search_until("verify_password", "auth.py");
}

#[test]
fn every_hostile_message_gets_an_answer_with_its_id_and_the_session_survives() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    let mut shim = Shim::start(&env, &root);
    // Before initialize: a notification is ignored (it used to end the session), a request
    // is refused with its id, ping is answered.
    shim.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    shim.send_raw(r#"{"jsonrpc":"2.0","id":"early","method":"tools/list"}"#);
    let reply = shim.recv(Duration::from_secs(5));
    assert_eq!(reply["id"], "early", "{reply}");
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    let reply = shim.request("ping", json!({}));
    assert_eq!(reply["result"], json!({}), "{reply}");
    shim.initialize();

    let mut bad_utf8 = br#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"search","arguments":{"query":""#.to_vec();
    bad_utf8.extend_from_slice(&[0xC3, 0x28, 0xFF]);
    bad_utf8.extend_from_slice(br#""}}}"#);
    shim.send_bytes(&bad_utf8);
    let reply = shim.recv(Duration::from_secs(5));
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (json!(11), json!(-32700)),
        "{reply}"
    );

    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{{"name":"search","arguments":{{"query":{}1{}}}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let cases = [
        (deep, json!(12), -32700),
        (
            r#"{"jsonrpc":"2.0","id":13,"method":"tools/list","params":[1,2]}"#.to_string(),
            json!(13),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"search","arguments":"x"}}"#.to_string(),
            json!(14),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":42}}"#.to_string(),
            json!(15),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":16,"method":"resources/read","params":{"uri":{"a":1}}}"#.to_string(),
            json!(16),
            -32602,
        ),
        (r#"[{"jsonrpc":"2.0","id":17,"method":"ping"}]"#.to_string(), json!(null), -32600),
    ];
    for (line, id, code) in cases {
        shim.send_raw(&line);
        let reply = shim.recv(Duration::from_secs(5));
        assert_eq!(reply["id"], id, "{line}: {reply}");
        assert_eq!(reply["error"]["code"], code, "{line}: {reply}");
    }
    // A fractional id is refused with the id exactly as sent.
    shim.send_raw(r#"{"jsonrpc":"2.0","id":-0.0,"method":"ping"}"#);
    let reply = shim.recv(Duration::from_secs(5));
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(reply["id"].to_string(), "-0.0", "{reply}");
    // A message over the size limit is read and thrown away, not held.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":18,"method":"ping","params":{{"x":"{}"}}}}"#,
        "a".repeat(5 << 20)
    );
    shim.send_raw(&huge);
    let reply = shim.recv(Duration::from_secs(10));
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    // Still serving.
    let reply = shim.request("ping", json!({}));
    assert_eq!(reply["result"], json!({}), "{reply}");
    shim.search_until("verify_password", "auth.py");
}

#[test]
fn tool_errors_name_the_parameter() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    for (args, needle) in [
        (json!({}), "query"),
        (json!({"query": 5}), "query"),
        (json!({"query": "   "}), "query"),
        (json!({"query": "x", "limit": 0}), "limit"),
        (json!({"query": "x", "limit": 101}), "limit"),
        (json!({"query": "x", "limit": "ten"}), "limit"),
        (json!({"query": "x", "path": 3}), "path"),
        (json!({"query": "x", "path": "src/[oops"}), "path"),
        (json!({"query": "x", "language": ["rust"]}), "language"),
        // Size limits, checked before anything reaches the daemon.
        (
            json!({"query": "q".repeat(9000)}),
            "argument `query` is 9000 bytes",
        ),
        (
            json!({"query": "x", "path": "p/".repeat(3000)}),
            "argument `path` is 6000 bytes",
        ),
        // An unknown language is an error listing the known ones, not an empty answer.
        (
            json!({"query": "x", "language": "klingon"}),
            "unknown language \"klingon\"; one of: rust, python",
        ),
    ] {
        let reply = shim.call_tool("search", args.clone());
        let result = &reply["result"];
        assert_eq!(result["isError"], json!(true), "{args} -> {reply}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(needle), "{args} -> {text}");
    }
    // `reindex` of a path that is nowhere, or outside the project, is an error, not
    // "Re-indexed in 0 ms".
    for (path, needle) in [
        ("no/such/file.py", "no such file or directory"),
        ("../outside.py", "leaves the project"),
        ("/etc", "outside the project"),
    ] {
        let reply = shim.call_tool("reindex", json!({"path": path}));
        let result = &reply["result"];
        assert_eq!(result["isError"], json!(true), "{path} -> {reply}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(needle), "{path} -> {text}");
    }
    // A file that exists is re-checked.
    let reply = shim.call_tool("reindex", json!({"path": "./auth.py"}));
    assert_ne!(reply["result"]["isError"], json!(true), "{reply}");
    let reply = shim.call_tool("no-such-tool", json!({}));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}

#[test]
fn search_filters_by_path_glob_and_language() {
    // `path` is a file or directory and `in_path` a glob, in search as in every tool.
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("app/auth.py", AUTH_PY),
            ("docs/auth.md", "# Auth\nWe verify_password with pbkdf2.\n"),
            ("src/lib.rs", "// verify_password lives in app/auth.py\n"),
        ],
    );
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("verify_password", "src/lib.rs");
    let paths = |reply: &serde_json::Value| -> Vec<String> {
        let mut paths: Vec<String> = reply["result"]["structuredContent"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["path"].as_str().unwrap().to_string())
            .collect();
        paths.sort();
        paths
    };
    let all = shim.call_tool("search", json!({"query": "verify_password"}));
    assert_eq!(
        paths(&all),
        ["app/auth.py", "docs/auth.md", "src/lib.rs"],
        "{all}"
    );
    let py = shim.call_tool(
        "search",
        json!({"query": "verify_password", "language": "python"}),
    );
    assert_eq!(paths(&py), ["app/auth.py"]);
    let by_extension = shim.call_tool(
        "search",
        json!({"query": "verify_password", "language": "PY"}),
    );
    assert_eq!(paths(&by_extension), ["app/auth.py"], "{by_extension}");
    for (scope, expected) in [
        (json!({"in_path": "docs/"}), "docs/auth.md"),
        (json!({"in_path": "*.rs"}), "src/lib.rs"),
        (json!({"path": "docs"}), "docs/auth.md"),
        (json!({"path": "./app/"}), "app/auth.py"),
        (json!({"path": "src/lib.rs"}), "src/lib.rs"),
        (json!({"path": "app", "in_path": "**/*.py"}), "app/auth.py"),
    ] {
        let mut args = json!({"query": "verify_password"});
        args.as_object_mut()
            .unwrap()
            .extend(scope.as_object().unwrap().clone());
        let reply = shim.call_tool("search", args);
        assert_eq!(paths(&reply), [expected], "{scope}: {reply}");
    }
    // A directory is not a prefix of names (`ap` is not `app/`); nothing is outside.
    let none = shim.call_tool("search", json!({"query": "verify_password", "path": "ap"}));
    assert_eq!(paths(&none), Vec::<String>::new(), "{none}");
    for (args, says) in [
        (
            json!({"query": "verify_password", "path": "*.rs"}),
            "use `in_path`",
        ),
        (
            json!({"query": "verify_password", "path": "../elsewhere"}),
            "leaves the project",
        ),
        (
            json!({"query": "verify_password", "path": "/etc"}),
            "outside the project root",
        ),
    ] {
        let reply = shim.call_tool("search", args.clone());
        assert_eq!(reply["result"]["isError"], true, "{args}: {reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(says), "{args}: {text}");
    }
    let one = shim.call_tool("search", json!({"query": "verify_password", "limit": 1}));
    let content = &one["result"]["structuredContent"];
    assert_eq!(content["results"].as_array().unwrap().len(), 1);
    assert_eq!(content["total"], 3);
    assert_eq!(content["truncated"], true);
}

#[test]
fn initialize_is_answered_at_once_even_when_the_daemon_cannot_start() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    let broken = env.path().join("no-such-daemon");
    let mut shim = Shim::start_with(&env, &root, &[("AMANMCP_DAEMON_BIN", broken.as_os_str())]);
    let started = Instant::now();
    let reply = shim.initialize();
    assert_eq!(reply["result"]["serverInfo"]["name"], "amanmcp", "{reply}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let reply = shim.call_tool("search", json!({"query": "verify_password"}));
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("not reachable"), "{text}");
}

#[test]
fn a_daemon_that_cannot_start_is_reported_at_once_with_its_reason() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    // The socket's directory cannot be made: its parent is a regular file.
    let file = env.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let socket = file.join("amanmcpd.sock");
    let mut shim = Shim::start_with(&env, &root, &[("AMANMCP_SOCKET", socket.as_os_str())]);
    shim.initialize();
    let started = Instant::now();
    let reply = shim.call_tool("search", json!({"query": "verify_password"}));
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    // The daemon's own reason, not a timeout.
    assert!(text.contains("exited at start"), "{text}");
    assert!(text.to_lowercase().contains("not a directory"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn the_shim_exits_promptly_on_stdin_eof() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    // Before initialize.
    let shim = Shim::start(&env, &root);
    assert_eq!(shim.close(Duration::from_secs(5)).code(), Some(0));
    // After a session.
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("verify_password", "auth.py");
    assert_eq!(shim.close(Duration::from_secs(5)).code(), Some(0));
}

#[test]
fn the_index_lives_outside_the_project_and_the_socket_is_private() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("verify_password", "auth.py");
    let entries: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        entries,
        ["auth.py"],
        "nothing may be written into the project"
    );
    assert!(env.data_dir().join("projects").is_dir());
    let dir_mode = std::fs::metadata(env.socket().parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    let sock_mode = std::fs::metadata(env.socket())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(sock_mode & 0o077, 0, "socket mode {sock_mode:o}");
}
