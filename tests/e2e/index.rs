//! Indexing over the real daemon: incremental updates, crashes, hostile trees, rebuilds.

use std::collections::BTreeMap;
use std::time::Duration;

use amanmcp_tests::{Lcg, Shim, TestEnv};
use serde_json::json;

#[test]
fn incremental_updates_touch_only_what_changed_and_leave_no_trace() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("keep.py", "def kept_function():\n    return 'keep'\n"),
            (
                "edit.py",
                "def edited_function():\n    return 'alphatoken'\n",
            ),
            (
                "gone.py",
                "def deletedfunction():\n    return 'gonetoken'\n",
            ),
            (
                "old/name.py",
                "def renamed_function():\n    return 'movedtoken'\n",
            ),
        ],
    );
    // This test is about reconcile passes: no file watcher may apply the edits first.
    let mut daemon = env.start_daemon_with(&[("AMANMCP_WATCH", "0")]);
    let (ok, text) = {
        let ran = env.amanctl_on(&root, &["index"]);
        (ran.ok(), ran.text())
    };
    assert!(ok, "{text}");
    assert_eq!(env.project_status()["last_pass_changed"], 4);

    std::fs::write(
        root.join("edit.py"),
        "def edited_function():\n    return 'betatoken'\n",
    )
    .unwrap();
    std::fs::remove_file(root.join("gone.py")).unwrap();
    std::fs::create_dir_all(root.join("new")).unwrap();
    std::fs::rename(root.join("old/name.py"), root.join("new/name.py")).unwrap();
    std::fs::write(
        root.join("added.py"),
        "def added_function():\n    return 'freshtoken'\n",
    )
    .unwrap();
    let (ok, text) = {
        let ran = env.amanctl_on(&root, &["index"]);
        (ran.ok(), ran.text())
    };
    assert!(ok, "{text}");
    let status = env.project_status();
    assert_eq!(
        status["last_pass_changed"], 3,
        "edit, rename target, add: {status}"
    );
    assert_eq!(
        status["last_pass_removed"], 2,
        "delete, rename source: {status}"
    );
    assert_eq!(status["files"], 4);
    env.verify_ok(&root, "after updates");

    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    assert_eq!(shim.lexical_paths("betatoken"), ["edit.py"]);
    assert!(shim.lexical_paths("alphatoken").is_empty());
    assert!(shim.lexical_paths("gonetoken").is_empty());
    assert!(shim.lexical_paths("deletedfunction").is_empty());
    assert_eq!(shim.lexical_paths("movedtoken"), ["new/name.py"]);
    assert_eq!(shim.lexical_paths("freshtoken"), ["added.py"]);
    let reply = shim.call_tool("lookup", json!({"symbol": "renamed_function"}));
    let matches = reply["result"]["structuredContent"]["matches"]
        .as_array()
        .unwrap();
    assert_eq!(matches.len(), 1, "{reply}");
    assert_eq!(matches[0]["path"], "new/name.py");

    // A touch without a content change re-reads but does not re-chunk; no change at all
    // reads nothing.
    let content = std::fs::read(root.join("keep.py")).unwrap();
    std::fs::write(root.join("keep.py"), content).unwrap();
    let (ok, _) = {
        let ran = env.amanctl_on(&root, &["index"]);
        (ran.ok(), ran.text())
    };
    assert!(ok);
    let status = env.project_status();
    assert_eq!(
        (
            status["last_pass_changed"].as_u64(),
            status["last_pass_removed"].as_u64()
        ),
        (Some(0), Some(0))
    );
    env.verify_ok(&root, "after a touch");
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}

fn python_module(i: usize, version: usize) -> String {
    let mut text = format!(
        "\"\"\"Module {i}.\"\"\"\n\n\ndef func_{i}():\n    return \"zq{i}zv{version}\"\n\n\nclass Holder{i}:\n"
    );
    for m in 0..8 {
        text.push_str(&format!(
            "    def method_{m}(self, x):\n        y = x * {m} + {i}\n        return y\n\n"
        ));
    }
    text
}

#[test]
fn the_index_survives_sigkill_at_random_points_during_indexing_and_updates() {
    let env = TestEnv::new();
    let root = env.project::<&str, &str>("big", &[]);
    let mut files: BTreeMap<String, (usize, usize)> = BTreeMap::new(); // path -> (id, version)
    let write = |path: &str, id: usize, version: usize| {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, python_module(id, version)).unwrap();
    };
    for i in 0..1200 {
        let path = format!("pkg{}/mod{i}.py", i % 24);
        write(&path, i, 0);
        files.insert(path, (i, 0));
    }
    let mut next_id = 1200;
    let mut rng = Lcg(0x5eed_cafe);
    let mut removed_tokens = Vec::new();
    for round in 0..12 {
        if round > 0 {
            // Updates: edit, delete, add and rename files while the daemon is down.
            let paths: Vec<String> = files.keys().cloned().collect();
            for _ in 0..30 {
                let path = &paths[rng.below(paths.len() as u64) as usize];
                let (id, version) = files[path];
                removed_tokens.push(format!("zq{id}zv{version}"));
                write(path, id, version + 1);
                files.insert(path.clone(), (id, version + 1));
            }
            for _ in 0..10 {
                let paths: Vec<String> = files.keys().cloned().collect();
                let path = &paths[rng.below(paths.len() as u64) as usize];
                let (id, version) = files.remove(path).unwrap();
                std::fs::remove_file(root.join(path)).unwrap();
                removed_tokens.push(format!("zq{id}zv{version}"));
            }
            for _ in 0..10 {
                let path = format!("added/r{round}/mod{next_id}.py");
                write(&path, next_id, 0);
                files.insert(path, (next_id, 0));
                next_id += 1;
            }
            for k in 0..5 {
                let paths: Vec<String> = files.keys().cloned().collect();
                let from = paths[rng.below(paths.len() as u64) as usize].clone();
                let to = format!("moved/r{round}/{k}_{}", from.replace('/', "_"));
                std::fs::create_dir_all(root.join(&to).parent().unwrap()).unwrap();
                std::fs::rename(root.join(&from), root.join(&to)).unwrap();
                let entry = files.remove(&from).unwrap();
                files.insert(to, entry);
            }
        }
        let mut daemon = env.start_daemon();
        let (ok, text) = {
            let ran = env.amanctl_on(&root, &["index", "--no-wait"]);
            (ran.ok(), ran.text())
        };
        assert!(ok, "{text}");
        std::thread::sleep(Duration::from_millis(rng.below(1500)));
        daemon.kill().unwrap();
        daemon.wait().unwrap();
        if round % 4 == 3 {
            // After a crash the index opens, reconciles and is consistent.
            let mut daemon = env.start_daemon();
            env.verify_ok(&root, &format!("after crash round {round}"));
            daemon.kill().unwrap();
            daemon.wait().unwrap();
        }
    }
    // Exactly between the tantivy and the LMDB halves of a commit: tantivy is ahead, and
    // the dirty marks must let the next start undo and redo that batch.
    std::fs::write(root.join("late.py"), python_module(99_999, 0)).unwrap();
    files.insert("late.py".into(), (99_999, 0));
    let log = std::fs::File::create(env.path().join("crash.log")).unwrap();
    let mut crashing = env
        .command("amanmcpd")
        .env("AMANMCP_CRASH_AT", "after_lexical_commit")
        .stderr(log)
        .spawn()
        .unwrap();
    env.wait_for(Duration::from_secs(20), "the daemon to listen", || {
        env.daemon_pid().is_some()
    });
    let _ = {
        let ran = env.amanctl_on(&root, &["index", "--no-wait"]);
        (ran.ok(), ran.text())
    };
    let status = crashing.wait().unwrap();
    assert!(!status.success(), "the crash point must abort the daemon");
    let log = std::fs::File::create(env.path().join("recover.log")).unwrap();
    let mut daemon = env.command("amanmcpd").stderr(log).spawn().unwrap();
    env.wait_for(Duration::from_secs(20), "the daemon to listen", || {
        env.daemon_pid().is_some()
    });
    env.verify_ok(&root, "at the end");
    let recover_log = std::fs::read_to_string(env.path().join("recover.log")).unwrap();
    assert!(
        recover_log.contains("recovered an interrupted commit"),
        "{recover_log}"
    );
    let status = env.project_status();
    assert_eq!(status["files"], files.len() as u64, "{status}");

    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    let mut sample = Lcg(7);
    let paths: Vec<(&String, &(usize, usize))> = files.iter().collect();
    for _ in 0..25 {
        let (path, (id, version)) = paths[sample.below(paths.len() as u64) as usize];
        assert_eq!(
            shim.lexical_paths(&format!("zq{id}zv{version}")),
            std::slice::from_ref(path)
        );
    }
    for token in removed_tokens.iter().step_by(7) {
        assert!(shim.lexical_paths(token).is_empty(), "{token} is stale");
    }
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}

#[test]
fn hostile_trees_are_indexed_without_hanging_or_panicking() {
    let env = TestEnv::new();
    let root = env.project(
        "hostile",
        &[
            ("ok.py", "def findablemarker():\n    pass\n"),
            ("app.min.js", "var minifiedmarker=1;"),
            (".env", "envmarker=secret\n"),
            ("keys/server.pem", "pemmarker\n"),
        ],
    );
    std::fs::write(root.join("blob.bin"), b"blobmarker\x00\x01\x02\xff").unwrap();
    std::fs::write(
        root.join("latin1.py"),
        b"# caf\xe9 cr\xe8me\ndef latinmarker():\n    pass\n",
    )
    .unwrap();
    std::fs::write(
        root.join("long_line.js"),
        format!("var longmarker = '{}';", "x".repeat(100_000)),
    )
    .unwrap();
    let huge = std::fs::File::create(root.join("huge.txt")).unwrap();
    huge.set_len(100 << 20).unwrap(); // 100 MB, sparse: skipped by size, never read
    let mut deep = root.clone();
    for i in 0..60 {
        deep.push(format!("d{i}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("deep.py"), "def deepmarker():\n    pass\n").unwrap();
    std::fs::write(
        root.join("nested.json"),
        format!("{}1{}", "[".repeat(20_000), "]".repeat(20_000)),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("loop")).unwrap();
    std::os::unix::fs::symlink("..", root.join("loop/parent")).unwrap();
    std::os::unix::fs::symlink("b", root.join("a")).unwrap();
    std::os::unix::fs::symlink("a", root.join("b")).unwrap();
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("secret.py"),
        "def outsidemarker():\n    pass\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.join("secret.py"), root.join("outside_link.py")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("outside_dir")).unwrap();
    let fifo = std::ffi::CString::new(root.join("pipe.py").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let locked = root.join("locked.py");
    std::fs::write(&locked, "def lockedmarker(): pass\n").unwrap();
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    {
        use std::os::unix::ffi::OsStrExt;
        let bad_name = std::ffi::OsStr::from_bytes(b"bad_\xff_name.py");
        std::fs::write(root.join(bad_name), "def badnamemarker(): pass\n").unwrap();
    }
    for i in 0..300 {
        std::fs::create_dir_all(root.join("tmp")).unwrap();
        std::fs::write(root.join(format!("tmp/vanish_{i}.py")), python_module(i, 0)).unwrap();
    }
    // Files vanish while the first pass runs.
    let vanish_root = root.clone();
    let vanisher = std::thread::spawn(move || {
        for i in (0..300).step_by(2) {
            let _ = std::fs::remove_file(vanish_root.join(format!("tmp/vanish_{i}.py")));
        }
    });
    let (ok, text) = {
        let ran = env.amanctl_on(&root, &["index"]);
        (ran.ok(), ran.text())
    };
    vanisher.join().unwrap();
    assert!(ok, "{text}\n{}", env.daemon_log());
    // Reconcile what vanished, then everything must be consistent.
    let (ok, text) = {
        let ran = env.amanctl_on(&root, &["index"]);
        (ran.ok(), ran.text())
    };
    assert!(ok, "{text}");
    env.verify_ok(&root, "hostile tree");

    let status = env.project_status();
    let skipped = &status["skipped"];
    for reason in ["too_large", "binary", "long_lines", "secret"] {
        assert!(
            skipped[reason].as_u64().unwrap_or(0) >= 1,
            "{reason} not counted: {status}"
        );
    }
    env.wait_ready();
    assert_eq!(env.project_status()["state"], "ready");

    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    assert_eq!(shim.lexical_paths("findablemarker"), ["ok.py"]);
    assert_eq!(shim.lexical_paths("latinmarker"), ["latin1.py"]);
    assert_eq!(shim.lexical_paths("deepmarker").len(), 1);
    for absent in [
        "outsidemarker",
        "envmarker",
        "pemmarker",
        "blobmarker",
        "minifiedmarker",
        "longmarker",
    ] {
        assert!(
            shim.lexical_paths(absent).is_empty(),
            "{absent} must not be indexed"
        );
    }
    let reply = shim.call_tool("index-status", json!({}));
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Skipped:") && text.contains("too_large"),
        "{text}"
    );
}

#[test]
fn an_unreadable_index_is_rebuilt_automatically_and_says_so() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("a.py", "def rebuiltmarker():\n    pass\n")]);
    let (ok, text) = {
        let ran = env.amanctl_on(&root, &["index"]);
        (ran.ok(), ran.text())
    };
    assert!(ok, "{text}");
    env.stop_daemon();
    // Corrupt both stores the way an older or damaged format would look.
    let projects = env.data_dir().join("projects");
    let dir = std::fs::read_dir(&projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(dir.join("tantivy/meta.json"), b"{ not tantivy").unwrap();
    let (ok, text) = {
        let ran = env.amanctl_on(&root, &["index"]);
        (ran.ok(), ran.text())
    };
    assert!(ok, "{text}\n{}", env.daemon_log());
    let status = env.project_status();
    assert!(
        status["notice"].as_str().unwrap_or("").contains("rebuilt"),
        "{status}"
    );
    env.verify_ok(&root, "after rebuild");

    env.stop_daemon();
    std::fs::write(dir.join("lmdb/data.mdb"), vec![0xAB; 64 * 1024]).unwrap();
    let (ok, text) = {
        let ran = env.amanctl_on(&root, &["index"]);
        (ran.ok(), ran.text())
    };
    assert!(ok, "{text}\n{}", env.daemon_log());
    assert!(
        env.project_status()["notice"]
            .as_str()
            .unwrap_or("")
            .contains("rebuilt")
    );
    env.verify_ok(&root, "after LMDB rebuild");
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    assert_eq!(shim.lexical_paths("rebuiltmarker"), ["a.py"]);
}

#[test]
fn write_failures_are_reported_with_their_cause_and_repaired_once_it_clears() {
    let env = TestEnv::new();
    let flag = env.path().join("writes-fail");
    let root = env.project("proj", &[("a.py", "def firstmarker():\n    pass\n")]);
    // The shim starts the daemon (its log then goes to the data directory) with the hook.
    let mut shim = Shim::start_with(
        &env,
        &root,
        &[("AMANMCP_FAIL_WRITES_WHILE", flag.as_os_str())],
    );
    shim.initialize();
    shim.search_until("firstmarker", "a.py");
    let mut version = 0;
    for (cause, hint) in [
        ("ENOSPC", "disk full"),
        ("EROFS", "not writable"),
        ("EMFILE", "file descriptors"),
    ] {
        // Every commit now fails; edits keep coming.
        std::fs::write(&flag, cause).unwrap();
        version += 1;
        std::fs::write(
            root.join("a.py"),
            format!("def edit{version}marker():\n    pass\n"),
        )
        .unwrap();
        std::fs::write(
            root.join(format!("new{version}.py")),
            format!("def new{version}marker():\n    pass\n"),
        )
        .unwrap();
        env.wait_for(Duration::from_secs(30), "the failure in the status", || {
            env.project_status()["last_error"]
                .as_str()
                .is_some_and(|e| e.contains(hint))
        });
        let status = env.project_status();
        assert_ne!(status["state"], "ready", "{cause}: {status}");

        // The cause clears: the daemon repairs on its own, and only then says ready.
        std::fs::remove_file(&flag).unwrap();
        env.wait_for(Duration::from_secs(60), "the repair", || {
            let status = env.project_status();
            status["state"] == "ready" && status["last_error"].is_null()
        });
        env.verify_ok(&root, &format!("after {cause} cleared"));
        assert_eq!(
            shim.lexical_paths(&format!("edit{version}marker")),
            ["a.py"]
        );
        assert_eq!(
            shim.lexical_paths(&format!("new{version}marker")),
            [format!("new{version}.py")]
        );
    }
    assert!(shim.lexical_paths("firstmarker").is_empty());
    // One log line per cause, not one per failed commit.
    let log = env.daemon_log();
    let lines = log.matches("index commit failed").count();
    assert!((3..=9).contains(&lines), "{lines} failure lines:\n{log}");
}
