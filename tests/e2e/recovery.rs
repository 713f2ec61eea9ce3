//! A recovered index answers exactly as a fresh one: after a series of kills during passes,
//! edits between them and a crash between the two halves of a commit, keyword rankings
//! (order, lines and scores) equal those of a clean index of the same files.

use std::path::Path;
use std::time::Duration;

use amanmcp_tests::{Lcg, TestEnv, write_file};
use serde_json::Value;

/// A module of `id` at `version`: words shared by many files (so scores tie across files)
/// and a few of its own.
fn module(id: usize, version: usize) -> String {
    let mut text = String::new();
    // Every tenth file is the same handler: its chunks tie on every query that finds them.
    if id.is_multiple_of(10) {
        text.push_str("def handle(request):\n    return respond(request, status=200)\n\n\n");
    }
    text.push_str(&format!(
        "def load_{id}(path):\n    \"\"\"Load record {id} (version {version}).\"\"\"\n    return read_record(path, {version})\n\n\n"
    ));
    for m in 0..(id % 4 + 1) {
        text.push_str(&format!(
            "class Cache{id}x{m}:\n    def lookup(self, key):\n        return self.store.get(key, {m})\n\n\n"
        ));
    }
    text
}

/// Every ranked hit of a lexical search, as (path, first line, last line, score, why).
fn ranking(env: &TestEnv, root: &Path, query: &str) -> Vec<String> {
    let ran = env.amanctl_on(
        root,
        &["search", "--json", "--mode", "lexical", "-n", "40", query],
    );
    assert!(ran.ok(), "search {query}: {}", ran.text());
    let out: Value = serde_json::from_str(&ran.stdout).expect("JSON");
    out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}:{}-{} {} {}",
                r["path"].as_str().unwrap(),
                r["start_line"],
                r["end_line"],
                r["score"],
                r["why"]
            )
        })
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn a_recovered_index_ranks_exactly_as_a_fresh_one() {
    let env = TestEnv::new();
    let root = env.project::<&str, &str>("kept", &[]);
    let mut versions: Vec<usize> = vec![0; 600];
    let rel = |id: usize| format!("pkg{}/mod{id}.py", id % 12);
    for (id, version) in versions.iter().enumerate() {
        write_file(&root, &rel(id), &module(id, *version));
    }
    let mut rng = Lcg(0x0dd_ba11);
    for round in 0..6 {
        if round > 0 {
            // Edits while the daemon is down: the next pass replaces those files' chunks.
            for _ in 0..40 {
                let id = rng.below(versions.len() as u64) as usize;
                versions[id] += 1;
                write_file(&root, &rel(id), &module(id, versions[id]));
            }
        }
        let mut daemon = env.start_daemon();
        let ran = env.amanctl_on(&root, &["index", "--no-wait"]);
        assert!(ran.ok(), "{}", ran.text());
        std::thread::sleep(Duration::from_millis(rng.below(1200)));
        daemon.kill().unwrap();
        daemon.wait().unwrap();
    }
    // A crash between tantivy's half of a commit and LMDB's: the next start redoes the batch.
    for (id, version) in versions.iter_mut().enumerate().take(30) {
        *version += 1;
        write_file(&root, &rel(id), &module(id, *version));
    }
    let mut crashing = env
        .command("amanmcpd")
        .env("AMANMCP_CRASH_AT", "after_lexical_commit")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    env.wait_for(Duration::from_secs(20), "the daemon to listen", || {
        env.daemon_pid().is_some()
    });
    let _ = env.amanctl_on(&root, &["index", "--no-wait"]);
    assert!(
        !crashing.wait().unwrap().success(),
        "the crash point aborts"
    );

    let fresh = env.project::<&str, &str>("fresh", &[]);
    copy_tree(&root, &fresh);
    let mut daemon = env.start_daemon();
    for project in [&root, &fresh] {
        let ran = env.amanctl_on(project, &["index"]);
        assert!(ran.ok(), "{}", ran.text());
    }
    env.verify_ok(&root, "after recovery");
    for query in [
        "handle request",
        "respond status",
        "lookup key",
        "cache store get",
        "load record path",
        "read_record",
        "Cache7x2",
        "version",
    ] {
        let recovered = ranking(&env, &root, query);
        assert!(!recovered.is_empty(), "{query}");
        assert_eq!(
            recovered,
            ranking(&env, &fresh, query),
            "`{query}`: the recovered index ranks differently from a fresh one"
        );
    }
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}

/// The lines of the daemon's log (across its restarts) saying an index was opened as it was
/// closed whole, without the reading process.
fn opened_as_closed(env: &TestEnv) -> usize {
    env.daemon_log().matches("not read again").count()
}

#[test]
fn an_index_closed_whole_opens_unread_and_one_open_when_its_daemon_died_is_read_again() {
    let env = TestEnv::new();
    let files: Vec<(String, String)> = (0..30)
        .map(|i| (format!("pkg/mod{i}.py"), module(i, 0)))
        .collect();
    let root = env.project("closed", &files);
    let search = |query: &str| {
        let ran = env.amanctl_on(&root, &["search", "--mode", "lexical", query]);
        assert!(ran.ok(), "{}", ran.text());
        ran.stdout
    };
    let daemon = env.start_daemon_logged();
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.wait_ready();
    env.stop_daemon();
    drop(daemon);
    let mark = env.index_dir(&root).join("closed-whole");
    assert!(
        mark.exists(),
        "a daemon that stops marks the index it closed whole"
    );

    let mut daemon = env.start_daemon_logged();
    let first = search("load_7");
    assert!(first.contains("pkg/mod7.py"), "{first}");
    assert_eq!(opened_as_closed(&env), 1, "{}", env.daemon_log());
    assert!(!mark.exists(), "the open that trusts the mark takes it");
    // Killed while the project is open: no mark, so the next open reads the index again.
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    assert!(!mark.exists());
    let daemon = env.start_daemon_logged();
    assert_eq!(search("load_7"), first);
    assert_eq!(opened_as_closed(&env), 1, "{}", env.daemon_log());
    env.verify_ok(&root, "after reopening");
    env.stop_daemon();
    drop(daemon);
}
