//! Freshness: file events reach the index without any client action.

use std::time::{Duration, Instant};

use amanmcp_tests::{Shim, TestEnv, write_file};
use serde_json::json;

/// The distinct result paths of a lexical search, sorted.
fn paths(shim: &mut Shim, query: &str) -> Vec<String> {
    let mut out = shim.lexical_paths(query);
    out.sort();
    out.dedup();
    out
}

/// Search until `query` returns exactly `expected` (sorted paths), or fail after 30 s.
fn eventually(shim: &mut Shim, env: &TestEnv, query: &str, expected: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = paths(shim, query);
        if got == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{query:?}: expected {expected:?}, still {got:?}\n{}",
            env.daemon_log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn edits_creates_deletes_and_renames_of_files_and_directories_are_seen() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("src/a.py", "def alpha():\n    return 'firsttoken'\n"),
            ("src/b.py", "def beta():\n    return 'btoken'\n"),
            ("docs/guide.md", "# Guide\nguidetoken\n"),
            (".gitignore", "build/\n"),
        ],
    );
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    eventually(&mut shim, &env, "firsttoken", &["src/a.py"]);

    // Edit.
    write_file(
        &root,
        "src/a.py",
        "def alpha():\n    return 'secondtoken'\n",
    );
    eventually(&mut shim, &env, "secondtoken", &["src/a.py"]);
    eventually(&mut shim, &env, "firsttoken", &[]);
    // Create.
    write_file(
        &root,
        "src/c.py",
        "def gamma():\n    return 'createdtoken'\n",
    );
    eventually(&mut shim, &env, "createdtoken", &["src/c.py"]);
    // Delete.
    std::fs::remove_file(root.join("src/b.py")).unwrap();
    eventually(&mut shim, &env, "btoken", &[]);
    // Rename a file.
    std::fs::rename(root.join("src/c.py"), root.join("src/renamed.py")).unwrap();
    eventually(&mut shim, &env, "createdtoken", &["src/renamed.py"]);
    // A new directory with files, then a nested one.
    write_file(&root, "pkg/mod.py", "def delta():\n    return 'pkgtoken'\n");
    write_file(
        &root,
        "pkg/sub/deep.py",
        "def eps():\n    return 'deeptoken'\n",
    );
    eventually(&mut shim, &env, "pkgtoken", &["pkg/mod.py"]);
    eventually(&mut shim, &env, "deeptoken", &["pkg/sub/deep.py"]);
    // Move a whole directory.
    std::fs::rename(root.join("pkg"), root.join("lib")).unwrap();
    eventually(&mut shim, &env, "pkgtoken", &["lib/mod.py"]);
    eventually(&mut shim, &env, "deeptoken", &["lib/sub/deep.py"]);
    // Changes under the moved directory keep being seen.
    write_file(
        &root,
        "lib/sub/deep.py",
        "def eps():\n    return 'movedtoken'\n",
    );
    eventually(&mut shim, &env, "movedtoken", &["lib/sub/deep.py"]);
    // Delete a whole directory.
    std::fs::remove_dir_all(root.join("lib")).unwrap();
    eventually(&mut shim, &env, "pkgtoken", &[]);
    eventually(&mut shim, &env, "movedtoken", &[]);
    // Ignored directories stay out.
    write_file(
        &root,
        "build/out.py",
        "def built():\n    return 'ignoredtoken'\n",
    );
    write_file(
        &root,
        "src/after.py",
        "def after():\n    return 'aftertoken'\n",
    );
    eventually(&mut shim, &env, "aftertoken", &["src/after.py"]);
    assert!(paths(&mut shim, "ignoredtoken").is_empty());
    // Changing .gitignore is re-evaluated: un-ignore build/, ignore docs/.
    std::fs::write(root.join(".gitignore"), "docs/\n").unwrap();
    eventually(&mut shim, &env, "ignoredtoken", &["build/out.py"]);
    eventually(&mut shim, &env, "guidetoken", &[]);
    env.verify_ok(&root, "after the changes");
    let (_, status) = env.status();
    let watch = status["projects"][0]["watch"].as_str().unwrap().to_string();
    assert!(watch.starts_with("events ("), "{watch}");
}

#[test]
fn a_directory_swapped_for_a_symlink_and_back_is_reconciled_like_a_delete() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("d/inner.py", "def insidemarker():\n    return 1\n"),
            ("keep.py", "def keepmarker():\n    return 2\n"),
        ],
    );
    let outside = env.project(
        "elsewhere",
        &[("out.py", "def outsidemarker():\n    return 3\n")],
    );
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("insidemarker", "d/inner.py");
    std::fs::rename(root.join("d"), root.join("d_old")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("d")).unwrap();
    // The moved files are found under their new name, nothing under the symlink, and
    // nothing from where it points.
    eventually(&mut shim, &env, "insidemarker", &["d_old/inner.py"]);
    eventually(&mut shim, &env, "outsidemarker", &[]);
    env.verify_ok(&root, "after the changes");
    // And back: the symlink replaced by a real directory again.
    std::fs::remove_file(root.join("d")).unwrap();
    write_file(&root, "d/again.py", "def againmarker():\n    return 4\n");
    eventually(&mut shim, &env, "againmarker", &["d/again.py"]);
    eventually(&mut shim, &env, "keepmarker", &["keep.py"]);
    env.verify_ok(&root, "after the changes");
}

#[test]
fn a_storm_of_two_thousand_files_ends_in_one_consistent_index() {
    let env = TestEnv::new();
    let root = env.project(
        "storm",
        &[("seed.py", "def seed():\n    return 'seedtoken'\n")],
    );
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    eventually(&mut shim, &env, "seedtoken", &["seed.py"]);
    // Like a branch switch: thousands of files appear, change and vanish at once.
    for i in 0..2000 {
        write_file(
            &root,
            &format!("m{}/f{i}.py", i % 40),
            &format!("def f{i}():\n    return 'zs{i}v0'\n"),
        );
    }
    for i in (0..2000).step_by(3) {
        write_file(
            &root,
            &format!("m{}/f{i}.py", i % 40),
            &format!("def f{i}():\n    return 'zs{i}v1'\n"),
        );
    }
    for i in (1..2000).step_by(5) {
        std::fs::remove_file(root.join(format!("m{}/f{i}.py", i % 40))).unwrap();
    }
    // Search keeps answering meanwhile, and the last write becomes visible.
    eventually(&mut shim, &env, "zs1998v1", &["m38/f1998.py"]);
    eventually(&mut shim, &env, "zs1999v0", &["m39/f1999.py"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = env
            .command("amanctl")
            .arg("verify")
            .arg(&root)
            .output()
            .unwrap();
        if out.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(paths(&mut shim, "zs3v0").is_empty(), "stale version of f3");
    assert_eq!(paths(&mut shim, "zs3v1"), ["m3/f3.py"]);
    assert!(paths(&mut shim, "zs1v0").is_empty(), "f1 was deleted");
    let (_, status) = env.status();
    let expected = 1 + 2000 - (1..2000).step_by(5).count();
    assert_eq!(status["projects"][0]["files"], expected, "{status}");
}

#[test]
fn running_out_of_watches_falls_back_to_periodic_reconcile() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("a/one.py", "def one():\n    return 'onetoken'\n"),
            ("b/two.py", "def two():\n    return 'twotoken'\n"),
        ],
    );
    let limit = std::ffi::OsStr::new("1");
    let poll = std::ffi::OsStr::new("1");
    let mut shim = Shim::start_with(
        &env,
        &root,
        &[("AMANMCP_MAX_WATCHES", limit), ("AMANMCP_POLL_SECS", poll)],
    );
    shim.initialize();
    eventually(&mut shim, &env, "onetoken", &["a/one.py"]);
    let reply = shim.call_tool("index-status", json!({}));
    let watch = reply["result"]["structuredContent"]["watch"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(watch.starts_with("polling: watch limit reached"), "{watch}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Watching: polling"), "{text}");
    // Changes are still picked up, by the periodic pass.
    write_file(&root, "b/two.py", "def two():\n    return 'polledtoken'\n");
    eventually(&mut shim, &env, "polledtoken", &["b/two.py"]);
}

#[test]
fn idle_projects_are_unloaded_and_come_back_on_next_use() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("a.py", "def a():\n    return 'idletoken'\n")]);
    let idle = std::ffi::OsStr::new("1");
    let mut shim = Shim::start_with(&env, &root, &[("AMANMCP_IDLE_UNLOAD_SECS", idle)]);
    shim.initialize();
    eventually(&mut shim, &env, "idletoken", &["a.py"]);
    env.wait_for(
        Duration::from_secs(20),
        "the project to be unloaded",
        || {
            let (_, status) = env.status();
            status["projects"].as_array().is_some_and(|p| p.is_empty())
        },
    );
    // Changed while unloaded: reconciled when used again.
    write_file(&root, "a.py", "def a():\n    return 'backtoken'\n");
    eventually(&mut shim, &env, "backtoken", &["a.py"]);
}

/// Per thread of process `pid`: its name and how often it has been switched out
/// (voluntarily: it slept or waited; or not).
#[cfg(target_os = "linux")]
fn thread_switches(pid: i32) -> std::collections::HashMap<String, (String, u64)> {
    let mut out = std::collections::HashMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the daemon's threads") {
        let task = task.unwrap().path();
        let name = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
        let switches: u64 = status
            .lines()
            .filter(|l| l.contains("ctxt_switches:"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        let id = task.file_name().unwrap().to_string_lossy().to_string();
        out.insert(id, (name.trim().to_string(), switches));
    }
    out
}

#[cfg(target_os = "linux")]
#[test]
fn an_idle_watched_project_wakes_no_thread() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("src/a.py", "def alpha():\n    return 'quiettoken'\n"),
            ("src/b.py", "def beta():\n    return 2\n"),
        ],
    );
    let mut daemon = env.start_daemon_with(&[("AMANMCP_EMBEDDER", "off")]);
    let pid = env.daemon_pid().expect("a daemon");
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.wait_ready();
    // Settled: the pass's commits and the watches are done.
    std::thread::sleep(Duration::from_secs(2));
    let before = thread_switches(pid);
    assert!(
        before.values().any(|(name, _)| name == "amanmcp-watch"),
        "the project is watched by events: {:?}",
        before.values().map(|(n, _)| n).collect::<Vec<_>>()
    );
    let window = Duration::from_secs(3);
    std::thread::sleep(window);
    let after = thread_switches(pid);
    let woke: Vec<(String, u64)> = after
        .iter()
        .filter_map(|(id, (name, n))| {
            let was = before.get(id).map_or(0, |(_, n)| *n);
            (n > &was).then(|| (name.clone(), n - was))
        })
        .collect();
    let total: u64 = woke.iter().map(|(_, n)| n).sum();
    // A timer or a poll loop wakes tens to hundreds of times a second (a polling
    // debouncer: 200); nothing happening here should wake more than a handful of times.
    assert!(
        total < 30,
        "an idle daemon's threads woke {total} times in {window:?}: {woke:?}"
    );
    // And still sees an edit.
    write_file(&root, "src/b.py", "def beta():\n    return 'awaketoken'\n");
    env.wait_for(Duration::from_secs(20), "the edit to be indexed", || {
        let ran = env.amanctl_on(&root, &["search", "awaketoken", "--json"]);
        ran.ok() && ran.text().contains("src/b.py")
    });
    env.stop_daemon();
    let _ = daemon.wait();
}
