//! `amanctl setup` as a user meets it: files edited in place (comments, order and
//! formatting kept), a portable command in committed files, only the change printed, and
//! the clients installed on the machine found and offered.

use std::path::{Path, PathBuf};

use amanmcp_tests::{Ran, TestEnv, bin};

/// Run `amanctl setup ARGS` in `dir` with `PATH` holding only `bin_dir` and the system's
/// directories (so no client installed on the test machine is found by its command).
fn setup_in(env: &TestEnv, dir: &Path, bin_dir: &Path, args: &[&str]) -> Ran {
    let mut command = env.command("amanctl");
    command
        .current_dir(dir)
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
        .arg("setup")
        .args(args);
    Ran::from(command.output().expect("run amanctl"))
}

/// A directory holding `amanmcp` (a link to the built shim), as an installed one on PATH.
fn installed_bin(env: &TestEnv) -> PathBuf {
    let dir = env.path().join("installed-bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(bin("amanmcp"), dir.join("amanmcp")).unwrap();
    dir
}

#[test]
fn setup_edits_files_in_place_and_commits_a_portable_command() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("a.py", "def f():\n    pass\n")]);
    let installed = installed_bin(&env);
    let empty = env.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();

    // VS Code's file with comments and a trailing comma (as VS Code accepts it).
    std::fs::create_dir_all(root.join(".vscode")).unwrap();
    let vscode = "{\n  // team servers\n  \"servers\": {\n    \"zeta\": {\"type\": \"stdio\", \"command\": \"z\"},\n    \"alpha\": {\"type\": \"stdio\", \"command\": \"a\"},\n  },\n  \"inputs\": [],\n}\n";
    std::fs::write(root.join(".vscode/mcp.json"), vscode).unwrap();
    let ran = setup_in(&env, &root, &installed, &["vscode"]);
    assert!(ran.ok(), "{}", ran.text());
    let written = std::fs::read_to_string(root.join(".vscode/mcp.json")).unwrap();
    // Everything that was there, byte for byte, in its order; then our entry, naming the
    // command on PATH (the file is meant to be committed).
    let kept = "{\n  // team servers\n  \"servers\": {\n    \"zeta\": {\"type\": \"stdio\", \"command\": \"z\"},\n    \"alpha\": {\"type\": \"stdio\", \"command\": \"a\"},\n";
    assert!(written.starts_with(kept), "{written}");
    assert!(written.contains("\"command\": \"amanmcp\""), "{written}");
    assert!(
        written.trim_end().ends_with("\"inputs\": [],\n}"),
        "{written}"
    );
    // Run again: the file is not touched.
    let ran = setup_in(&env, &root, &installed, &["vscode"]);
    assert!(ran.stdout.contains("already registers"), "{}", ran.text());
    assert_eq!(
        std::fs::read_to_string(root.join(".vscode/mcp.json")).unwrap(),
        written
    );

    // Without amanmcp on PATH the file names the installed shim, and says why.
    let ran = setup_in(&env, &root, &empty, &["cursor"]);
    assert!(ran.ok(), "{}", ran.text());
    assert!(ran.stderr.contains("not on PATH"), "{}", ran.text());

    // The user's ~/.claude.json: --dry-run prints only the change, never the file's other
    // content, and writes nothing.
    let home = env.path().join("home");
    // As Claude Code writes it: two-space indents, its own key order.
    let claude = "{\n  \"numStartups\": 3,\n  \"machineID\": \"secret-machine-id\",\n  \"projects\": {}\n}\n";
    std::fs::write(home.join(".claude.json"), claude).unwrap();
    let ran = setup_in(
        &env,
        &root,
        &installed,
        &["claude", "--global", "--dry-run"],
    );
    assert!(ran.ok(), "{}", ran.text());
    assert!(
        ran.stdout.contains("would set mcpServers.amanmcp"),
        "{}",
        ran.text()
    );
    assert!(!ran.stdout.contains("secret-machine-id"), "{}", ran.text());
    assert_eq!(
        std::fs::read_to_string(home.join(".claude.json")).unwrap(),
        claude
    );
    let ran = setup_in(&env, &root, &installed, &["claude", "--global"]);
    assert!(ran.ok(), "{}", ran.text());
    let after = std::fs::read_to_string(home.join(".claude.json")).unwrap();
    assert!(
        after.starts_with("{\n  \"numStartups\": 3,\n  \"machineID\": \"secret-machine-id\",\n  \"projects\": {},\n  \"mcpServers\""),
        "{after}"
    );
    let parsed: serde_json::Value = serde_json::from_str(&after).unwrap();
    // A user's file names the installed binary itself (desktop apps start without the
    // shell's PATH).
    let command = parsed["mcpServers"]["amanmcp"]["command"].as_str().unwrap();
    assert!(Path::new(command).is_absolute(), "{command}");
}

#[test]
fn setup_without_a_client_finds_the_installed_ones_and_all_registers_each() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("a.py", "def f():\n    pass\n")]);
    let installed = installed_bin(&env);
    let ran = setup_in(&env, &root, &installed, &[]);
    assert!(ran.ok(), "{}", ran.text());
    assert!(ran.stdout.contains("No AI clients found"), "{}", ran.text());

    // Codex, Zed and Gemini CLI have left their settings directories.
    let home = env.path().join("home");
    for dir in [".codex", ".config/zed", ".gemini"] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    let ran = setup_in(&env, &root, &installed, &[]);
    assert!(ran.ok(), "{}", ran.text());
    for name in ["codex", "zed", "gemini"] {
        assert!(ran.stdout.contains(name), "{name}: {}", ran.text());
    }
    assert!(!ran.stdout.contains("cursor"), "{}", ran.text());
    assert!(ran.stdout.contains("amanctl setup --all"), "{}", ran.text());
    // Listing and --dry-run write nothing.
    let ran = setup_in(&env, &root, &installed, &["--all", "--dry-run"]);
    assert!(
        ran.ok() && ran.stdout.matches("would set").count() == 3,
        "{}",
        ran.text()
    );
    assert!(!home.join(".codex/config.toml").exists());

    let ran = setup_in(&env, &root, &installed, &["--all"]);
    assert!(ran.ok(), "{}", ran.text());
    let codex = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(codex.contains("[mcp_servers.amanmcp]"), "{codex}");
    let zed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".zed/settings.json")).unwrap())
            .unwrap();
    assert_eq!(zed["context_servers"]["amanmcp"]["command"], "amanmcp");
    let gemini: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".gemini/settings.json")).unwrap())
            .unwrap();
    assert_eq!(gemini["mcpServers"]["amanmcp"]["args"][0], "serve");
    let ran = setup_in(&env, &root, &installed, &["--json"]);
    let listed: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 3, "{listed}");
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["unchanged"] == true),
        "{listed}"
    );
}
