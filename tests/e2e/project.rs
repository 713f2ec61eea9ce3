//! One idea of "the project" for every entry point: run from a subdirectory of a repository,
//! `amanctl` uses the repository (as the shim does) and says so; run from the home directory
//! (no repository around it), it refuses instead of indexing and watching it.

use amanmcp_tests::{Ran, TestEnv};

fn amanctl_in(env: &TestEnv, dir: &std::path::Path, args: &[&str]) -> Ran {
    Ran::from(
        env.command("amanctl")
            .current_dir(dir)
            .args(args)
            .output()
            .expect("run amanctl"),
    )
}

/// The environment's home directory (no repository around it), holding a source file.
fn home_with_notes(env: &TestEnv) -> std::path::PathBuf {
    let home = env.path().join("home").canonicalize().unwrap();
    std::fs::write(home.join("notes.py"), "def personal_notes():\n    pass\n").unwrap();
    home
}

#[test]
fn amanctl_in_a_subdirectory_uses_the_repository_and_says_so() {
    let env = TestEnv::new();
    let repo = env.project(
        "repo",
        &[
            ("src/engine.py", "def ignite_enginepart():\n    pass\n"),
            (
                "docs/guide.md",
                "# Guide\n\nCall ignite_enginepart to start.\n",
            ),
        ],
    );
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let docs = repo.join("docs");
    let mut daemon = env.start_daemon();

    let ran = amanctl_in(&env, &docs, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    let ran = amanctl_in(&env, &docs, &["search", "ignite_enginepart"]);
    assert!(ran.ok(), "{}", ran.text());
    assert!(
        ran.stderr.contains(&format!("project {}", repo.display()))
            && ran.stderr.contains("git repository"),
        "amanctl says which project it used: {}",
        ran.stderr
    );
    assert!(ran.stdout.contains("src/engine.py"), "{}", ran.text());
    // One project indexed: the repository, not `docs`.
    assert_eq!(
        env.project_roots(),
        [repo.to_string_lossy().to_string()],
        "{}",
        env.daemon_log()
    );

    // `setup` writes where a client started at the repository root looks.
    let ran = amanctl_in(&env, &docs, &["setup", "claude"]);
    assert!(ran.ok(), "{}", ran.text());
    assert!(repo.join(".mcp.json").is_file(), "{}", ran.text());
    assert!(!docs.join(".mcp.json").exists());
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}

#[test]
fn amanctl_in_the_home_directory_refuses_instead_of_indexing_it() {
    let env = TestEnv::new();
    let home = home_with_notes(&env);
    let mut daemon = env.start_daemon();
    for args in [&["search", "personal_notes"][..], &["index"][..]] {
        let ran = amanctl_in(&env, &home, args);
        assert!(!ran.ok(), "{args:?}: {}", ran.text());
        assert!(
            ran.stderr.contains("home directory") && ran.stderr.contains("PATH"),
            "{args:?}: {}",
            ran.stderr
        );
    }
    assert!(env.project_roots().is_empty(), "{:?}", env.project_roots());
    // Named, it is used.
    let ran = amanctl_in(&env, &home, &["index", "."]);
    assert!(ran.ok(), "{}", ran.text());
    assert_eq!(env.project_roots(), [home.to_string_lossy().to_string()]);
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}

#[test]
fn a_shim_started_in_the_home_directory_indexes_nothing_and_says_how_to_name_a_project() {
    let env = TestEnv::new();
    let home = home_with_notes(&env);
    let mut daemon = env.start_daemon();
    let mut command = env.command("amanmcp");
    command.current_dir(&home).arg("serve");
    let mut shim = amanmcp_tests::Shim::spawn(command);
    shim.initialize();
    let reply = shim.call_tool("search", serde_json::json!({"query": "personal_notes"}));
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(
        text.contains("no project") && text.contains("--project"),
        "{text}"
    );
    assert!(env.project_roots().is_empty(), "{:?}", env.project_roots());
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}
