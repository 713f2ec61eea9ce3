//! Background work yields the CPU to searches: the daemon's indexing threads (the pass's
//! parsers, the writer and the tantivy threads it makes, the janitor) and its embedding
//! threads run stepped back (`nice`, per thread on Linux); the threads that answer requests
//! do not.

#![cfg(target_os = "linux")]

use amanmcp_tests::TestEnv;

/// Each thread of process `pid`: its id, name (as the kernel keeps it, 15 bytes) and nice
/// value.
fn threads(pid: u32) -> Vec<(u32, String, i32)> {
    let mut found = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let task = task.unwrap();
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue; // the thread ended meanwhile
        };
        let (open, close) = (stat.find('(').unwrap(), stat.rfind(')').unwrap());
        // After the name: state is field 3, nice field 19.
        let nice = stat[close + 1..].split_whitespace().nth(16).unwrap();
        let tid = task.file_name().to_string_lossy().parse().unwrap();
        found.push((
            tid,
            stat[open + 1..close].to_string(),
            nice.parse().unwrap(),
        ));
    }
    found
}

#[test]
fn indexing_and_embedding_threads_yield_to_the_threads_that_answer() {
    let env = TestEnv::new();
    let files: Vec<(String, String)> = (0..30)
        .map(|i| {
            let text = format!("def yielding_part_{i}():\n    return {i}\n");
            (format!("src/part{i}.py"), text)
        })
        .collect();
    let root = env.project("yielding", &files);
    let mut daemon = env.start_daemon();
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.wait_ready();
    let ran = env.amanctl_on(&root, &["search", "yielding part seven"]);
    assert!(ran.ok(), "{}", ran.text());

    let threads = threads(daemon.id());
    let base = threads.iter().find(|t| t.0 == daemon.id()).unwrap().2; // the main thread
    let nices = |prefix: &str| -> Vec<i32> {
        let of: Vec<i32> = threads
            .iter()
            .filter(|(_, name, _)| name.starts_with(prefix))
            .map(|(_, _, nice)| *nice)
            .collect();
        assert!(!of.is_empty(), "no {prefix} thread among {threads:?}");
        of
    };
    for (prefix, steps) in [
        ("amanmcp-writer", 5),
        ("amanmcp-parse-", 5),
        ("amanmcp-janitor", 5),
        ("thrd-tantivy-in", 5),
        ("merge_thread_", 5),
        ("segment_updater", 5),
        ("amanmcp-embed-", 10),
    ] {
        let want = (base + steps).min(19);
        assert!(
            nices(prefix).iter().all(|&nice| nice >= want),
            "{prefix} threads should be at nice {want} or behind: {threads:?}"
        );
    }
    for prefix in ["tokio-rt-worker", "amanmcp-query-", "amanmcp-search-"] {
        assert!(
            nices(prefix).iter().all(|&nice| nice == base),
            "{prefix} threads answer requests, at nice {base}: {threads:?}"
        );
    }
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}
