//! Status is exactly true: asking about a ready, unchanged project (a search, `index-status`)
//! never reports it as still being built, and a change is reported until it is indexed.

use std::time::Duration;

use amanmcp_tests::{Shim, TestEnv};
use serde_json::json;

#[test]
fn a_ready_unchanged_project_is_reported_ready_however_often_it_is_asked() {
    let env = TestEnv::new();
    let mut files: Vec<(String, Vec<u8>)> = (0..40)
        .map(|i| {
            (
                format!("src/part{i}.py"),
                format!("def steady_part_{i}():\n    return {i}\n").into_bytes(),
            )
        })
        .collect();
    // A file the pass checks and skips: the pass counts more files than the index holds.
    files.push(("blob.py".into(), vec![0u8; 64]));
    let root = env.project("steady", &files);
    let mut daemon = env.start_daemon();
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.wait_ready();

    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    env.wait_ready();
    for round in 0..10 {
        let ran = env.amanctl_on(&root, &["search", "steady_part_7"]);
        assert!(ran.ok(), "{}", ran.text());
        assert!(
            !ran.stderr.contains("still being built"),
            "round {round}: a search of a ready project said: {}",
            ran.stderr
        );
        let reply = shim.call_tool("index-status", json!({}));
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(
            text.contains("State: ready"),
            "round {round}: index-status of a ready project said:\n{text}"
        );
        let status = &reply["result"]["structuredContent"];
        assert_eq!(status["files"], 40, "{status}");
    }

    // A change is reported while it is indexed, and searchable once ready again.
    std::fs::write(root.join("src/new.py"), "def fresh_part():\n    return 0\n").unwrap();
    shim.search_until("fresh_part", "src/new.py");
    env.wait_for(Duration::from_secs(30), "ready again", || {
        let reply = shim.call_tool("index-status", json!({}));
        reply["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("State: ready"))
    });
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}

#[test]
fn the_first_pass_after_a_restart_says_the_last_runs_index_is_whole_not_still_being_built() {
    let env = TestEnv::new();
    let files: Vec<(String, String)> = (0..30)
        .map(|i| {
            let text = format!("def resumed_part_{i}():\n    return {i}\n");
            (format!("src/part{i}.py"), text)
        })
        .collect();
    let root = env.project("resumed", &files);
    let mut daemon = env.start_daemon();
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.stop_daemon();
    daemon.wait().unwrap();

    // The restarted daemon's indexer holds once its first pass has listed the files: the
    // pass has yet to look at any of them.
    let mut held = env.start_daemon_with(&[("AMANMCP_HOLD_AT", "pass_scanned")]);
    let ran = env.amanctl_on(&root, &["search", "resumed_part_7"]);
    assert!(ran.ok(), "{}", ran.text());
    assert!(ran.stdout.contains("src/part7.py"), "{}", ran.text());
    assert!(
        ran.stderr.contains("searchable in full") && !ran.stderr.contains("still being built"),
        "{}",
        ran.stderr
    );
    let status = env.project_status();
    assert_eq!(status["state"], "indexing", "{status}");
    assert_eq!(status["resuming"], true, "{status}");
    let listed = env.amanctl(&["status"]).text();
    assert!(
        listed.contains("checking for changes since the last run"),
        "{listed}"
    );

    // An index that never had a pass end (this one's first pass holds too) is still being
    // built, and says so.
    let fresh = env.project("fresh", &[("a.py", "def fresh_only():\n    return 1\n")]);
    let ran = env.amanctl_on(&fresh, &["search", "fresh_only"]);
    assert!(ran.stderr.contains("still being built"), "{}", ran.text());
    let (_, all) = env.status();
    let fresh_status = all["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["root"].as_str().is_some_and(|r| r.ends_with("fresh")))
        .cloned()
        .unwrap_or_default();
    assert_eq!(fresh_status["resuming"], false, "{all}");
    held.kill().unwrap();
    held.wait().unwrap();
}
