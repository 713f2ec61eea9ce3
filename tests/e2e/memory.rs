//! The memory budget (`AMANMCP_MEMORY_MB`): a project is indexed and embedded while the
//! daemon's own memory stays within it, with vectors wide enough (16,384 dimensions, 64 KB
//! each) that the vectors on their way to the writer would pass it unless bounded in bytes
//! (the writer's queue holds 256 operations: 256 batches of 64 such vectors are 1 GB). Seen
//! with that bound lifted: 263 MB; with it: 118 MB.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use amanmcp_tests::{FakeEmbedServer, TestEnv, made_up_word};

/// The budget under test, in MB: a debug build's daemon, whose fixed costs (parsers, the
/// runtime, its threads) are about 80 MB during a pass.
const BUDGET_MB: u64 = 160;

/// Files and functions per file of the generated project.
const FILES: usize = 2000;
const FUNCTIONS: usize = 12;

/// The stand-in's vectors: as wide as the widest models' (a batch of 64 is 4 MB).
const DIMS: usize = 16_384;

fn module(i: usize) -> String {
    let mut text = String::new();
    for f in 0..FUNCTIONS {
        let n = i * FUNCTIONS + f;
        let (a, b) = (made_up_word(n), made_up_word(n * 7 + 3));
        text.push_str(&format!(
            "def {a}_{b}(value, {b}_count):\n    \"\"\"Turn the {a} into a {b} for step {n}.\"\"\"\n    total = value * {n} + {b}_count\n    for item in range({f} + 3):\n        total += item * {i}\n    return {a}_helper(total, \"{b}\")\n\n\n"
        ));
    }
    text
}

/// The daemon's own memory now, in kB (`RssAnon`: its heaps, not the files it maps).
fn own_kb(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The one project's LMDB file under the daemon's data directory.
fn projects_lmdb(data_dir: &std::path::Path) -> std::path::PathBuf {
    let projects: Vec<_> = std::fs::read_dir(data_dir.join("projects"))
        .expect("projects directory")
        .flatten()
        .map(|entry| entry.path().join("lmdb").join("data.mdb"))
        .filter(|file| file.exists())
        .collect();
    assert_eq!(projects.len(), 1, "{projects:?}");
    projects[0].canonicalize().unwrap()
}

/// kB resident in the process's mappings of the files `wanted` names (`/proc/PID/smaps`).
fn resident_kb(pid: i32, wanted: impl Fn(&std::path::Path) -> bool) -> u64 {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut ours = false;
    let mut kb = 0;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            // A mapping's header: its path is the rest of the line from the first slash.
            ours = line
                .find('/')
                .is_some_and(|at| wanted(std::path::Path::new(&line[at..])));
        } else if ours && first == "Rss:" {
            kb += line
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    kb
}

#[test]
fn a_project_is_indexed_and_embedded_within_the_memory_budget() {
    let server = FakeEmbedServer::start(&["fake-embed"]);
    server.set_dims(DIMS);
    let env = TestEnv::new();
    let files: Vec<(String, String)> = (0..FILES)
        .map(|i| (format!("pkg{}/m{i}.py", i % 40), module(i)))
        .collect();
    let root = env.project("big", &files);
    let url = server.url();
    let budget = BUDGET_MB.to_string();
    let mut daemon = env.start_daemon_with(&[
        ("AMANMCP_MEMORY_MB", budget.as_str()),
        ("AMANMCP_EMBEDDER", "ollama"),
        ("AMANMCP_EMBED_URL", url.as_str()),
        ("AMANMCP_EMBED_MODEL", "fake-embed"),
        ("AMANMCP_EMBED_BATCH", "64"),
    ]);
    let pid = env.daemon_pid().expect("daemon running");

    // Sample the daemon's own memory from its start to the last vector.
    let peak = Arc::new(AtomicU64::new(own_kb(pid).expect("RssAnon")));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(kb) = own_kb(pid) {
                    peak.fetch_max(kb, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.wait_for(Duration::from_secs(600), "every chunk embedded", || {
        let status = env.project_status();
        status["state"] == "ready" && status["embedding"]["embedded"] == status["chunks"]
    });
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();

    let status = env.project_status();
    let chunks = status["chunks"].as_u64().unwrap();
    let index_mb = status["index_bytes"].as_u64().unwrap() / 1_000_000;
    let peak_mb = peak.load(Ordering::Relaxed) / 1024;
    eprintln!("{chunks} chunks, index {index_mb} MB, the daemon's own memory at most {peak_mb} MB");
    assert!(chunks >= 2 * FILES as u64, "only {chunks} chunks: {status}");
    assert!(
        peak_mb <= BUDGET_MB,
        "the daemon's own memory reached {peak_mb} MB, over its budget of {BUDGET_MB} MB\n{}",
        env.daemon_log()
    );
    // Every vector in, the pages of the project's LMDB map that the pass, the vector commits
    // and the graph's build read are given back: the daemon's resident memory does not keep
    // its index's size (a release daemon indexing 20,000 files kept 244 MB of its map
    // resident while idle before they were).
    let file = projects_lmdb(&env.data_dir());
    let in_lmdb = |path: &std::path::Path| path == file;
    // The lexical index's segment files, beside the LMDB directory.
    let segments = file.parent().unwrap().with_file_name("tantivy");
    let in_tantivy = |path: &std::path::Path| path.starts_with(&segments);
    let size_kb = std::fs::metadata(&file).unwrap().len() / 1024;
    let resident_at_first = resident_kb(pid, in_lmdb);
    env.wait_for(
        Duration::from_secs(60),
        "the LMDB map's pages given back",
        || resident_kb(pid, in_lmdb) * 10 <= size_kb,
    );
    eprintln!(
        "LMDB file {size_kb} kB; resident when the last vector was counted {resident_at_first} kB, then {} kB",
        resident_kb(pid, in_lmdb)
    );
    // The index is whole: every chunk in LMDB and tantivy, with its vector.
    env.verify_ok(&root, "after embedding within the budget");
    let ran = env.amanctl_on(
        &root,
        &["search", "--mode", "semantic", "--json", "turn the value"],
    );
    assert!(ran.ok() && ran.stdout.contains(".py"), "{}", ran.text());
    // Pages searches read are given back too, once nobody has used the project for a
    // while, though no commit follows them (the writer gives its own back as it commits):
    // the LMDB map's and the lexical segment files'.
    for query in ["turn the value", "module helper", "compute total"] {
        for mode in ["lexical", "hybrid"] {
            let ran = env.amanctl_on(&root, &["search", "--mode", mode, "--json", query]);
            assert!(ran.ok(), "{}", ran.text());
        }
    }
    let searched = resident_kb(pid, in_lmdb);
    assert!(searched > 0, "the searches read no page of the map");
    let searched_segments = resident_kb(pid, in_tantivy);
    assert!(
        searched_segments > 0,
        "the searches read no page of {segments:?}"
    );
    env.wait_for(
        Duration::from_secs(120),
        "the pages searches read given back",
        || {
            resident_kb(pid, in_lmdb) * 2 < searched
                && resident_kb(pid, in_tantivy) * 2 < searched_segments
        },
    );
    env.stop_daemon();
    daemon.wait().unwrap();
}
