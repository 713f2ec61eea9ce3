//! Hardening, round two, over the real daemon: a damaged index on disk never takes the
//! daemon (and every other project) down and is rebuilt; a path longer than LMDB's keys is
//! indexed like any other; special files swapped in for a source file never hang or flood a
//! pass.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use amanmcp_tests::{Lcg, TestEnv};
use serde_json::Value;

/// The paths `amanctl search --mode lexical` finds for `query` in `root` (empty on none).
fn found(env: &TestEnv, root: &Path, query: &str) -> Vec<String> {
    let ran = env.amanctl_on(root, &["search", "--json", "--mode", "lexical", query]);
    if ran.code == 1 && ran.stderr.contains("no results") {
        return Vec::new();
    }
    assert!(
        ran.ok(),
        "search {query}: {}\ndaemon log:\n{}",
        ran.text(),
        env.daemon_log()
    );
    let out: Value = serde_json::from_str(&ran.stdout).expect("JSON");
    out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect()
}

/// Wait until searching `root` for `query` finds `path` first.
fn wait_found(env: &TestEnv, root: &Path, query: &str, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let paths = found(env, root, query);
        if paths.first().is_some_and(|p| p == path) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "`{query}` never found {path} (last: {paths:?})\ndaemon log:\n{}",
            env.daemon_log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ways an index is damaged on disk while the daemon is stopped.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// LMDB's file cut to half its length.
    HalfLmdb,
    /// LMDB's file cut to 8 KiB (its two meta pages).
    TinyLmdb,
    /// The length of one stored path overwritten (a record that no longer decodes), and 64
    /// bytes flipped at random.
    FlippedRecord,
    /// tantivy's `meta.json` deleted.
    NoTantivyMeta,
}

fn damage(dir: &Path, how: Damage, rng: &mut Lcg) {
    let file = dir.join("lmdb/data.mdb");
    let len = std::fs::metadata(&file).unwrap().len();
    let cut = |to: u64| {
        let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        f.set_len(to).unwrap();
    };
    match how {
        Damage::HalfLmdb => cut(len / 2),
        Damage::TinyLmdb => cut(8192),
        Damage::FlippedRecord => {
            let mut bytes = std::fs::read(&file).unwrap();
            let needle = b"src/alpha_engine.rs";
            let at = bytes
                .windows(needle.len())
                .position(|w| w == needle)
                .expect("a stored path");
            // The u32 length written before the path.
            bytes[at - 4..at].copy_from_slice(&u32::MAX.to_le_bytes());
            for _ in 0..64 {
                let i = rng.below(bytes.len() as u64) as usize;
                bytes[i] ^= 0xff;
            }
            std::fs::write(&file, bytes).unwrap();
        }
        Damage::NoTantivyMeta => std::fs::remove_file(dir.join("tantivy/meta.json")).unwrap(),
    }
}

#[test]
fn a_damaged_index_is_set_aside_and_rebuilt_while_the_daemon_serves_on() {
    let env = TestEnv::new();
    let files: Vec<(String, String)> = (0..40)
        .map(|i| {
            (
                format!("src/module_{i}.rs"),
                format!("pub fn helper_{i}() -> u32 {{ {i} }}\n"),
            )
        })
        .chain([(
            "src/alpha_engine.rs".to_string(),
            "pub fn ignite_alphaengine() {}\n".to_string(),
        )])
        .collect();
    let damaged = env.project("damaged", &files);
    let healthy = env.project(
        "healthy",
        &[("lib.py", "def healthy_betaword():\n    return 1\n")],
    );
    let mut rng = Lcg(29);
    for how in [
        Damage::HalfLmdb,
        Damage::TinyLmdb,
        Damage::FlippedRecord,
        Damage::NoTantivyMeta,
    ] {
        let daemon = env.start_daemon();
        for root in [&damaged, &healthy] {
            let ran = env.amanctl_on(root, &["index"]);
            assert!(ran.ok(), "{how:?}: {}", ran.text());
        }
        env.wait_ready();
        env.stop_daemon();
        drop(daemon);
        let dir = env.index_dir(&damaged);
        damage(&dir, how, &mut rng);

        let daemon = env.start_daemon();
        let pid = daemon.id() as i32;
        // The other project first: opening it never touches the damaged one.
        assert_eq!(
            found(&env, &healthy, "healthy_betaword"),
            ["lib.py"],
            "{how:?}"
        );
        wait_found(&env, &damaged, "ignite_alphaengine", "src/alpha_engine.rs");
        wait_found(&env, &damaged, "helper_17", "src/module_17.rs");
        assert_eq!(
            found(&env, &healthy, "healthy_betaword"),
            ["lib.py"],
            "{how:?}"
        );
        assert_eq!(env.daemon_pid(), Some(pid), "{how:?}: the daemon died");
        let (_, status) = env.status();
        let project = status["projects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["root"].as_str() == damaged.to_str())
            .cloned()
            .unwrap();
        let notice = project["notice"].as_str().unwrap_or_default();
        assert!(
            notice.contains("damaged") && notice.contains("rebuilt"),
            "{how:?}: the status says what happened: {project}"
        );
        assert!(
            env.data_dir()
                .join("damaged")
                .join(dir.file_name().unwrap())
                .is_dir(),
            "{how:?}: the damaged index is kept aside"
        );
        env.wait_ready();
        env.verify_ok(&damaged, &format!("after {how:?}"));
        env.stop_daemon();
        drop(daemon);
    }
}

#[test]
fn a_path_longer_than_lmdb_keys_is_indexed_served_and_dropped() {
    let env = TestEnv::new();
    // Ten directories of 200 bytes: a 2 KB path (each component under NAME_MAX).
    let deep: String = (0..10)
        .map(|i| format!("{i}{}/", "d".repeat(199)))
        .collect::<String>()
        + "deep_module.py";
    assert!(deep.len() > 2000);
    let root = env.project(
        "proj",
        &[
            (
                deep.as_str(),
                "def deeply_nested_gammaword():\n    return 1\n",
            ),
            ("top.py", "def top_level_deltaword():\n    return 2\n"),
        ],
    );
    let mut daemon = env.start_daemon();
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    let status = env.project_status();
    assert_eq!(status["state"], "ready", "{status}");
    assert_eq!(status["files"], 2, "{status}");
    assert_eq!(
        found(&env, &root, "deeply_nested_gammaword"),
        std::slice::from_ref(&deep)
    );
    assert_eq!(found(&env, &root, "top_level_deltaword"), ["top.py"]);
    env.verify_ok(&root, "with a long path");

    // Served by lookup, through the symbol table and by path.
    let ran = env.amanctl_on(&root, &["search", "--json", "deeply_nested_gammaword"]);
    assert!(
        ran.ok() && ran.stdout.contains("deeply_nested_gammaword"),
        "{}",
        ran.text()
    );

    // Changed, then deleted: the record follows.
    std::fs::write(root.join(&deep), "def renamed_epsilonword():\n    pass\n").unwrap();
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    assert_eq!(
        found(&env, &root, "renamed_epsilonword"),
        std::slice::from_ref(&deep)
    );
    assert!(found(&env, &root, "deeply_nested_gammaword").is_empty());
    std::fs::remove_file(root.join(&deep)).unwrap();
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    assert!(found(&env, &root, "renamed_epsilonword").is_empty());
    assert_eq!(env.project_status()["files"], 1);
    env.verify_ok(&root, "after the long path went");
    env.stop_daemon();
    daemon.wait().unwrap();
}

#[test]
fn special_files_swapped_in_never_hang_or_flood_a_pass() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("src/piped.rs", "pub fn piped_file() {}\n"),
            ("src/zeroed.rs", "pub fn zeroed_file() {}\n"),
            ("src/stable.rs", "pub fn stable_file() {}\n"),
        ],
    );
    let mut daemon = env.start_daemon();
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    // A FIFO and /dev/zero mounted over two source files: the directory still lists them as
    // regular files (what a walk sees), while opening one gives the FIFO (a read waits for a
    // writer forever) or the device (a read never ends). This is the swap race made
    // deterministic.
    let fifo = env.path().join("fifo");
    mkfifo(&fifo);
    let Some(_fifo_mount) = BindMount::new(&fifo, &root.join("src/piped.rs")) else {
        eprintln!("skipped: bind mounts need root (CAP_SYS_ADMIN), as in CI");
        daemon.kill().unwrap();
        daemon.wait().unwrap();
        return;
    };
    let _zero_mount = BindMount::new(Path::new("/dev/zero"), &root.join("src/zeroed.rs"))
        .expect("a bind mount of /dev/zero");
    // An update pass of the directory (a new file), then a full pass: both end.
    std::fs::write(root.join("src/fresh.rs"), "pub fn fresh_zetaword() {}\n").unwrap();
    wait_found(&env, &root, "fresh_zetaword", "src/fresh.rs");
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    assert_eq!(found(&env, &root, "stable_file"), ["src/stable.rs"]);
    for gone in ["src/piped.rs", "src/zeroed.rs"] {
        let paths = found(&env, &root, "piped_file zeroed_file");
        assert!(
            !paths.iter().any(|p| p == gone),
            "what is no longer a file goes: {paths:?}"
        );
    }
    let rss = daemon_peak_rss(&env);
    assert!(rss < 1 << 30, "the daemon grew to {rss} bytes");
    // Unmounted, the files are read again.
    drop(_zero_mount);
    drop(_fifo_mount);
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    wait_found(&env, &root, "piped_file", "src/piped.rs");
    wait_found(&env, &root, "zeroed_file", "src/zeroed.rs");
    env.stop_daemon();
    daemon.wait().unwrap();
}

/// `source` bind-mounted over `target` until dropped.
struct BindMount(PathBuf);

impl BindMount {
    fn new(source: &Path, target: &Path) -> Option<BindMount> {
        let ok = std::process::Command::new("mount")
            .arg("--bind")
            .arg(source)
            .arg(target)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| BindMount(target.to_path_buf()))
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// The daemon's peak resident memory, from /proc.
fn daemon_peak_rss(env: &TestEnv) -> u64 {
    let pid = env.daemon_pid().expect("the daemon runs");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[test]
fn a_daemon_killed_while_starting_comes_back_when_the_next_client_needs_it() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[("app.py", "def restart_thetaword():\n    pass\n")],
    );
    let lock = amanmcp_proto::endpoint::socket_lock_path(&env.socket());
    let mut rng = Lcg(7);
    for round in 0..6 {
        // A client starts the daemon; it is killed within its first half second.
        let mut first = amanmcp_tests::Shim::start(&env, &root);
        first.send_raw(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        );
        // Even rounds kill it as soon as it holds the lock (before it listens).
        let delay = if round % 2 == 0 { 0 } else { rng.below(500) };
        let deadline = Instant::now() + Duration::from_millis(delay);
        let mut killed = None;
        while Instant::now() < deadline || killed.is_none() {
            let pid = std::fs::read_to_string(&lock)
                .ok()
                .and_then(|p| p.trim().parse::<i32>().ok());
            if let Some(pid) = pid.filter(|_| Instant::now() >= deadline) {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                killed = Some(pid);
            }
            std::thread::sleep(Duration::from_millis(5));
            assert!(
                Instant::now() < deadline + Duration::from_secs(20),
                "round {round}: no daemon started"
            );
        }
        // The client whose daemon was killed gets its answers too: the daemon it started
        // is started again.
        let answered = loop {
            let message = first.recv(Duration::from_secs(30));
            if message["id"] == 1 {
                break message;
            }
        };
        assert!(answered["result"].is_object(), "round {round}: {answered}");
        first.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        first.search_until("restart_thetaword", "app.py");
        drop(first);
        // The next client gets a daemon and its answer.
        let mut next = amanmcp_tests::Shim::start(&env, &root);
        next.initialize();
        next.search_until("restart_thetaword", "app.py");
        assert_ne!(env.daemon_pid(), killed, "round {round}");
        drop(next);
    }
}

#[test]
fn damage_a_read_finds_in_a_loaded_index_is_set_aside_and_rebuilt() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("src/alpha_engine.rs", "pub fn ignite_alphaengine() {}\n"),
            ("src/other.rs", "pub fn other_betaword() {}\n"),
        ],
    );
    let mut daemon = env.start_daemon();
    let mut shim = amanmcp_tests::Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("ignite_alphaengine", "src/alpha_engine.rs");
    env.wait_ready();
    // The file's symbol records in the loaded index stop decoding (a name's length prefix
    // is overwritten in the file the daemon has mapped): only the records' own bytes change.
    let file = env.index_dir(&root).join("lmdb/data.mdb");
    let mut bytes = std::fs::read(&file).unwrap();
    let name = b"ignite_alphaengine";
    let mut record = (name.len() as u32).to_le_bytes().to_vec();
    record.extend_from_slice(name);
    let places: Vec<usize> = bytes
        .windows(record.len())
        .enumerate()
        .filter(|(_, w)| *w == record.as_slice())
        .map(|(i, _)| i)
        .collect();
    assert!(!places.is_empty(), "the symbol record is in the file");
    {
        use std::os::unix::fs::FileExt;
        let writer = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        for at in places {
            bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            writer.write_all_at(&bytes[at..at + 4], at as u64).unwrap();
        }
    }
    // The read that trips on it fails; the project is then reopened, its index set aside
    // and rebuilt, and the same read answers.
    let lookup = |shim: &mut amanmcp_tests::Shim| {
        shim.call_tool("lookup", serde_json::json!({"path": "src/alpha_engine.rs"}))
    };
    let first = lookup(&mut shim);
    assert!(
        first["result"]["isError"] == true || first.get("error").is_some(),
        "the damaged record was read: {first}"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let reply = lookup(&mut shim);
        let ok =
            reply["result"]["isError"] != true && reply.to_string().contains("ignite_alphaengine");
        if ok {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never answered again (first: {first}); last: {reply}\n{}",
            env.daemon_log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let status = env.project_status();
    assert!(
        status["notice"]
            .as_str()
            .unwrap_or_default()
            .contains("damaged"),
        "{status}"
    );
    env.wait_ready();
    env.verify_ok(&root, "after the rebuild");
    drop(shim);
    env.stop_daemon();
    daemon.wait().unwrap();
}

#[test]
fn amanctl_index_rereads_what_verify_finds_stale() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[("src/kept.py", "def original_iotaword():\n    return 1\n")],
    );
    let mut daemon = env.start_daemon_with(&[("AMANMCP_WATCH", "0")]);
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    // New content of the same size under the same mtime: no pass that trusts size and
    // mtime reads it again.
    let file = root.join("src/kept.py");
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::fs::write(&file, "def replaced_kappawor():\n    return 2\n").unwrap();
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        "def original_iotaword():\n    return 1\n".len() as u64
    );
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let ran = env.amanctl_on(&root, &["verify"]);
    assert!(ran.text().contains("stale"), "{}", ran.text());
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.verify_ok(&root, "after amanctl index");
    assert_eq!(found(&env, &root, "replaced_kappawor"), ["src/kept.py"]);
    assert!(found(&env, &root, "original_iotaword").is_empty());
    env.stop_daemon();
    daemon.wait().unwrap();
}

#[test]
fn vectors_a_full_disk_dropped_are_written_once_space_returns() {
    let env = TestEnv::new();
    // The data directory on a small disk of its own.
    let disk = env.path().join("data");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=5M", "tmpfs"])
        .arg(&disk)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: mounting a tmpfs needs root (CAP_SYS_ADMIN), as in CI");
        return;
    }
    let _unmount = Unmount(disk.clone());
    let files: Vec<(String, String)> = (0..350)
        .map(|i| {
            let body: String = (0..10)
                .map(|f| {
                    let lines: String = (0..14)
                        .map(|l| format!("    value_{l} = request.get('field_{i}_{f}_{l}', {l})\n"))
                        .collect();
                    format!("def handler_{i}_{f}(request):\n{lines}    return value_0\n\n\n")
                })
                .collect();
            (format!("pkg/module_{i}.py"), body)
        })
        .collect();
    let root = env.project("proj", &files);
    let mut daemon = env.start_daemon();
    assert!(env.amanctl_on(&root, &["index", "--no-wait"]).ok());
    let deadline = Instant::now() + Duration::from_secs(120);
    while !env.project_status()["last_error"].is_string() {
        assert!(
            Instant::now() < deadline,
            "the disk never filled: {}\n{}",
            env.project_status(),
            String::from_utf8_lossy(
                &std::process::Command::new("df")
                    .arg(&disk)
                    .output()
                    .unwrap()
                    .stdout
            )
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let full = env.project_status();
    // Space returns: the project comes back on its own, every chunk with its vector.
    let grown = std::process::Command::new("mount")
        .args(["-o", "remount,size=256M"])
        .arg(&disk)
        .status()
        .unwrap();
    assert!(grown.success());
    env.wait_for(Duration::from_secs(180), "the repair", || {
        let status = env.project_status();
        status["state"] == "ready"
            && status["last_error"].is_null()
            && status["embedding"]["embedded"] == status["chunks"]
            && status["chunks"].as_u64() > Some(3000)
    });
    env.verify_ok(&root, &format!("after the disk filled at {full}"));
    env.stop_daemon();
    daemon.wait().unwrap();
}

/// Unmounts its path when dropped.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}
