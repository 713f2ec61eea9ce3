//! amanmcp's own MCP client (`amanmcp::mcp_client`, `amanctl mcp`) against amanmcp itself and
//! a second server written with the official Python SDK.

use std::path::Path;
use std::time::Duration;

use amanmcp::mcp_client::{ClientError, Manager, ServerSpec};
use amanmcp_tests::{TestEnv, bin, client_script, python};
use serde_json::json;

const AUTH_PY: &str =
    "def verify_password(user, candidate):\n    return candidate == user.secret\n";

fn write_configs(env: &TestEnv, root: &Path) {
    let mcp = json!({"mcpServers": {
        "amanmcp": {"command": bin("amanmcp"), "args": ["serve"]},
        "echo": {"command": python(), "args": [client_script("echo_server.py")]},
    }});
    std::fs::write(
        root.join(".mcp.json"),
        serde_json::to_string_pretty(&mcp).unwrap(),
    )
    .unwrap();
    let _ = env;
}

fn amanctl_parts(env: &TestEnv, args: &[&str]) -> (i32, String, String) {
    let ran = env.amanctl(args);
    (ran.code, ran.stdout, ran.stderr)
}

#[test]
fn amanctl_mcp_check_and_call_use_the_projects_configured_servers() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    write_configs(&env, &root);
    let root_arg = root.to_str().unwrap();

    let (code, out, err) = amanctl_parts(&env, &["mcp", "check", root_arg]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(".mcp.json: 2 servers"), "{out}");
    assert!(
        out.contains("ok   amanmcp (amanmcp 0.1.0)")
            && out.contains("search, similar, lookup, usages, callers, callees, impact, trace, reindex, index-status"),
        "{out}"
    );
    assert!(
        out.contains("ok   echo (echo-server") && out.contains("echo, fail"),
        "{out}"
    );

    let (code, out, err) = amanctl_parts(
        &env,
        &[
            "mcp",
            "call",
            "echo",
            "echo",
            r#"{"text": "hello there"}"#,
            "--project",
            root_arg,
        ],
    );
    assert_eq!((code, out.trim()), (0, "hello there"), "{err}");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (code, out, err) = amanctl_parts(
            &env,
            &[
                "mcp",
                "call",
                "amanmcp",
                "search",
                r#"{"query": "verify_password"}"#,
                "--project",
                root_arg,
            ],
        );
        assert_eq!(code, 0, "{out}{err}");
        if out.contains("auth.py:1-2") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{out}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, _, err) = amanctl_parts(
        &env,
        &["mcp", "call", "echo", "fail", "{}", "--project", root_arg],
    );
    assert_eq!(code, 1);
    assert!(err.contains("tool `fail` on `echo` failed"), "{err}");
    let (code, _, err) = amanctl_parts(
        &env,
        &["mcp", "call", "nobody", "echo", "{}", "--project", root_arg],
    );
    assert_eq!(code, 1);
    assert!(err.contains("no server named `nobody`"), "{err}");
    let (code, _, err) = amanctl_parts(
        &env,
        &["mcp", "call", "echo", "echo", "[1]", "--project", root_arg],
    );
    assert_eq!(code, 1);
    assert!(err.contains("JSON object"), "{err}");

    // Cursor's config too; remote servers are skipped, broken ones fail the check.
    std::fs::create_dir_all(root.join(".cursor")).unwrap();
    std::fs::write(
        root.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"remote": {"url": "http://127.0.0.1:9/mcp"}, "missing": {"command": "/no/such/server"}}}"#,
    )
    .unwrap();
    let (code, out, _) = amanctl_parts(&env, &["mcp", "check", root_arg]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(".cursor/mcp.json: 2 servers"), "{out}");
    assert!(out.contains("SKIP remote: remote server"), "{out}");
    assert!(
        out.contains("FAIL missing: cannot start `/no/such/server`"),
        "{out}"
    );
    let empty = env.project("empty", &[("a.py", "x = 1\n")]);
    let (code, out, _) = amanctl_parts(&env, &["mcp", "check", empty.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("no MCP configuration"), "{out}");
}

#[test]
fn the_manager_aggregates_tools_with_deny_lists_and_routes_calls() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("auth.py", AUTH_PY)]);
    let mut vars = std::process::Command::new("true");
    env.apply(&mut vars);
    let env_vars = vars
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v?.to_str()?.to_string())))
        .collect();
    let amanmcp = ServerSpec {
        command: bin("amanmcp").to_string_lossy().into_owned(),
        args: vec![
            "serve".into(),
            "--project".into(),
            root.to_string_lossy().into_owned(),
        ],
        env: env_vars,
        cwd: None,
    };
    let echo = ServerSpec {
        command: python().to_string_lossy().into_owned(),
        args: vec![
            client_script("echo_server.py")
                .to_string_lossy()
                .into_owned(),
        ],
        ..ServerSpec::default()
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let timeout = Duration::from_secs(30);
        let mut manager = Manager::new();
        manager.add("amanmcp", &amanmcp, timeout).await.unwrap();
        manager.add("echo", &echo, timeout).await.unwrap();
        manager.deny("echo", "fail");
        manager.deny("amanmcp", "reindex");
        let tools: Vec<(String, String)> = manager
            .tools()
            .await
            .unwrap()
            .into_iter()
            .map(|(server, tool)| (server, tool.name.to_string()))
            .collect();
        let expect = |s: &str, t: &str| (s.to_string(), t.to_string());
        assert!(tools.contains(&expect("amanmcp", "search")), "{tools:?}");
        assert!(tools.contains(&expect("echo", "echo")), "{tools:?}");
        assert!(!tools.contains(&expect("echo", "fail")), "denied: {tools:?}");
        assert!(!tools.contains(&expect("amanmcp", "reindex")), "denied: {tools:?}");
        assert_eq!(manager.find("lookup").await.unwrap().as_deref(), Some("amanmcp"));
        assert_eq!(manager.find("echo").await.unwrap().as_deref(), Some("echo"));

        let args = json!({"text": "routed"}).as_object().unwrap().clone();
        let result = manager.call(None, "echo", args).await.unwrap();
        assert_eq!(amanmcp::mcp_client::result_text(&result), "routed");
        let denied = manager.call(None, "fail", Default::default()).await;
        assert!(matches!(denied, Err(ClientError::UnknownTool(_))), "{denied:?}");
        let bad = manager
            .call(Some("amanmcp"), "search", json!({"query": 5}).as_object().unwrap().clone())
            .await;
        assert!(
            matches!(&bad, Err(ClientError::Tool { tool, message, .. }) if tool == "search" && message.contains("query")),
            "{bad:?}"
        );
        let unknown = manager.call(Some("amanmcp"), "nope", Default::default()).await;
        assert!(matches!(&unknown, Err(ClientError::Rpc { message, .. }) if message.contains("nope")), "{unknown:?}");
        manager.close_all().await;
    });
}

#[test]
fn amanctl_setup_registers_amanmcp_beside_other_servers_and_the_result_works() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("a.py", "def setupmarker():\n    pass\n")]);
    let root_arg = root.to_str().unwrap();
    let config = root.join(".mcp.json");
    std::fs::write(
        &config,
        r#"{"mcpServers": {"other": {"command": "/bin/true"}}, "keep": 1}"#,
    )
    .unwrap();

    let ran = env.amanctl(&["setup", "claude", root_arg]);
    assert!(ran.ok(), "{}", ran.text());
    assert!(ran.stdout.contains("registered"), "{}", ran.text());
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(merged["mcpServers"]["other"]["command"], "/bin/true");
    assert_eq!(merged["keep"], 1);
    let command = merged["mcpServers"]["amanmcp"]["command"].as_str().unwrap();
    assert!(std::path::Path::new(command).is_file(), "{command}");
    // A second run changes nothing.
    let ran = env.amanctl(&["setup", "claude", root_arg]);
    assert!(ran.stdout.contains("already registers"), "{}", ran.text());

    // --print writes nothing; a broken file is refused and left alone.
    let ran = env.amanctl(&["setup", "cursor", root_arg, "--print"]);
    assert!(
        ran.ok() && ran.stdout.contains("would set mcpServers.amanmcp"),
        "{}",
        ran.text()
    );
    assert!(!root.join(".cursor/mcp.json").exists());
    std::fs::create_dir_all(root.join(".vscode")).unwrap();
    std::fs::write(root.join(".vscode/mcp.json"), "{ nope").unwrap();
    let ran = env.amanctl(&["setup", "vscode", root_arg]);
    assert!(
        !ran.ok() && ran.stderr.contains("cannot be edited"),
        "{}",
        ran.text()
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".vscode/mcp.json")).unwrap(),
        "{ nope"
    );

    // The written configuration starts a working server (amanctl's own MCP client).
    let ran = env.amanctl(&[
        "mcp",
        "call",
        "amanmcp",
        "search",
        r#"{"query": "setupmarker"}"#,
        "--project",
        root_arg,
    ]);
    assert!(ran.ok(), "{}", ran.text());
}
