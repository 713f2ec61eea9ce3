//! A large first index is searchable before it is parsed: a quick pass chunks new files by
//! line windows, the pass after it parses them. Both through the real daemon, with the
//! threshold lowered (`AMANMCP_QUICK_PASS_FILES`) so a small tree takes that path.

use std::path::Path;
use std::time::Duration;

use amanmcp_tests::{Shim, TestEnv, write_file};
use serde_json::{Value, json};

const FILES: usize = 120;

fn tree(env: &TestEnv, name: &str) -> std::path::PathBuf {
    let root = env.project::<&str, &str>(name, &[]);
    for id in 0..FILES {
        write_file(
            &root,
            &format!("pkg{}/mod{id}.py", id % 6),
            &format!(
                "import os\n\n\nclass Store{id}:\n    def fetch_{id}(self, key):\n        return load_{id}(key)\n\n\ndef load_{id}(key):\n    \"\"\"Read record {id}.\"\"\"\n    return os.path.join(key, \"{id}\")\n"
            ),
        );
    }
    root
}

fn project(env: &TestEnv, root: &Path) -> Value {
    let (running, status) = env.status();
    assert!(running, "{status}");
    status["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["root"] == root.to_string_lossy().as_ref())
        .cloned()
        .unwrap_or(Value::Null)
}

/// Through the shim: `lookup` finds the method by its qualified name, and a search hit names
/// its symbol (syntax chunks, not windows).
fn parsed(env: &TestEnv, root: &Path) {
    let mut shim = Shim::start(env, root);
    shim.initialize();
    let reply = shim.call_tool("lookup", json!({"symbol": "Store7.fetch_7"}));
    assert_ne!(reply["result"]["isError"], json!(true), "{reply}");
    let found = reply["result"]["structuredContent"]["matches"]
        .as_array()
        .unwrap();
    assert_eq!(found.len(), 1, "{reply}");
    assert_eq!(found[0]["path"], "pkg1/mod7.py", "{reply}");
    let hit = shim.search_until("load_42", "pkg0/mod42.py");
    let first = &hit["structuredContent"]["results"][0];
    assert_eq!(first["path"], "pkg0/mod42.py", "{hit}");
    assert!(
        first["symbol"].is_string(),
        "a syntax chunk names its symbol: {hit}"
    );
}

#[test]
fn a_quick_first_pass_is_parsed_by_the_pass_after_it() {
    let env = TestEnv::new();
    let root = tree(&env, "quick");
    let mut daemon = env.start_daemon_with(&[("AMANMCP_QUICK_PASS_FILES", "50")]);
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.wait_for(
        Duration::from_secs(120),
        "every file parsed and embedded",
        || {
            let p = project(&env, &root);
            p["state"] == "ready" && p["provisional_files"] == 0
        },
    );
    let status = project(&env, &root);
    // The first pass chunked every file by lines; the second chunked each again by syntax.
    assert_eq!(status["passes"], 2, "{status}");
    assert_eq!(status["last_pass_changed"], FILES as u64, "{status}");
    assert_eq!(status["files"], FILES as u64, "{status}");
    parsed(&env, &root);
    env.verify_ok(&root, "after the second pass");

    // Below the threshold, one pass parses everything.
    let small = env.project("small", &[("a.py", "def small_one():\n    return 1\n")]);
    let ran = env.amanctl_on(&small, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.wait_for(Duration::from_secs(60), "the small project ready", || {
        project(&env, &small)["state"] == "ready"
    });
    assert_eq!(project(&env, &small)["passes"], 1);
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}

#[test]
fn provisional_files_are_searchable_say_what_they_lack_and_survive_a_kill() {
    let env = TestEnv::new();
    let root = tree(&env, "held");
    // The indexer held right after the quick pass: every file chunked by lines, none parsed.
    let mut held = env.start_daemon_with(&[
        ("AMANMCP_QUICK_PASS_FILES", "50"),
        ("AMANMCP_HOLD_AT", "after_quick_pass"),
    ]);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    env.wait_for(Duration::from_secs(60), "the quick pass", || {
        project(&env, &root)["provisional_files"] == FILES as u64
    });
    // Searchable by its words already.
    let found = shim.search_until("load_42", "pkg0/mod42.py");
    assert_eq!(
        found["structuredContent"]["results"][0]["path"],
        "pkg0/mod42.py"
    );
    // Answers that read definitions say what they lack instead of a bare "none".
    let reply = shim.call_tool("lookup", json!({"symbol": "Store7.fetch_7"}));
    let lookup = &reply["result"]["structuredContent"];
    assert_eq!(lookup["total"], 0, "{reply}");
    assert!(
        lookup["notice"]
            .as_str()
            .is_some_and(|n| n.contains("120 files")),
        "{reply}"
    );
    // No definition is known yet: the error says why, not only that there is none.
    let reply = shim.call_tool("callers", json!({"symbol": "load_7"}));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let said = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(said.contains("120 files are not parsed yet"), "{reply}");
    let text = env.amanctl(&["status"]).text();
    assert!(text.contains("parsing, 120 files to go"), "{text}");
    drop(shim);
    held.kill().unwrap();
    held.wait().unwrap();

    // Unchanged on disk (same size and mtime), the provisional files are read and parsed
    // again all the same by the pass a session's start runs (not a full re-read).
    let mut daemon = env.start_daemon();
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    env.wait_for(Duration::from_secs(120), "the project ready", || {
        project(&env, &root)["state"] == "ready"
    });
    let status = project(&env, &root);
    assert_eq!(status["provisional_files"], 0, "{status}");
    assert_eq!(status["last_pass_changed"], FILES as u64, "{status}");
    parsed(&env, &root);
    env.verify_ok(&root, "after the restart");
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}
