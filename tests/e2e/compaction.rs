//! Giving space back when a project's store opens, with the daemon killed at each step:
//! compacting its LMDB file (when it is mostly free pages) and dropping cached vectors of
//! text no chunk has any more. No vector is lost, none is left dangling.

use std::time::Duration;

use amanmcp_tests::{FakeEmbedServer, TestEnv, exit_within};

const STARTED: &str = "compacting the index's LMDB file";
const FINISHED: &str = "compacted the index's LMDB file";
/// `AMANMCP_COMPACT_MIN_MB` that never compacts.
const NEVER: &str = "1000000";

#[derive(Debug, Clone, Copy)]
enum End {
    Kill,
    CrashAt(&'static str),
    Finish,
}

fn module(i: usize, version: usize) -> String {
    let mut text = format!("\"\"\"Module {i}, version {version}.\"\"\"\n\n");
    for f in 0..6 {
        text.push_str(&format!(
            "def handler_{i}_{f}_v{version}(request):\n    value = request.get('k{f}') or {i}\n    return value * {version} + {f}\n\n\n"
        ));
    }
    text
}

/// A loopback embedding server and a test environment with one project of 120 modules;
/// the server's URL, for the daemon's settings.
fn project_of_modules() -> (FakeEmbedServer, TestEnv, std::path::PathBuf, &'static str) {
    let server = FakeEmbedServer::start(&["model-a"]);
    let env = TestEnv::new();
    let files: Vec<(String, String)> = (0..120)
        .map(|i| (format!("pkg/m{i}.py"), module(i, 0)))
        .collect();
    let root = env.project("proj", &files);
    let url: &'static str = server.url().leak();
    (server, env, root, url)
}

/// Index `root` with a daemon started with `vars`, wait until every chunk has its vector,
/// and stop it.
fn index_and_stop(env: &TestEnv, root: &std::path::Path, vars: &[(&str, &str)]) {
    let mut daemon = env.start_daemon_with(vars);
    assert!(env.amanctl_on(root, &["index", "--no-wait"]).ok());
    env.wait_ready();
    env.stop_daemon();
    let _ = daemon.wait();
}

/// The running daemon's project has every chunk's vector, and none was embedded again
/// (the embedder saw `embedded_before` documents in all) or taken from the shared cache.
fn assert_every_vector_kept(
    env: &TestEnv,
    server: &FakeEmbedServer,
    embedded_before: usize,
    when: &str,
) {
    env.wait_ready();
    let status = env.project_status();
    assert_eq!(
        status["embedding"]["embedded"], status["chunks"],
        "{when}: {status}"
    );
    assert_eq!(status["embedding"]["pending"], 0, "{when}: {status}");
    assert_eq!(
        status["embedding"]["from_shared_cache"], 0,
        "{when}: {status}"
    );
    assert_eq!(server.documents(), embedded_before, "{when}: re-embedded");
}

/// Start the daemon with `vars` (each a set of settings), its log in `log`.
fn daemon_logging_to(
    env: &TestEnv,
    log: &std::path::Path,
    vars: &[&[(&str, &str)]],
) -> std::process::Child {
    let mut command = env.command("amanmcpd");
    for set in vars {
        command.envs(set.iter().copied());
    }
    let daemon = command
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let pid = daemon.id() as i32;
    env.wait_for(Duration::from_secs(20), "the daemon to listen", || {
        env.daemon_pid() == Some(pid)
    });
    daemon
}

/// Stop the daemon amanctl may have started after a crash.
fn stop_any_daemon(env: &TestEnv) {
    if env.daemon_pid().is_some() {
        env.stop_daemon();
    }
}

/// Files left behind by a compaction under the data directory.
fn leftovers(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            leftovers(&path, out);
        } else if path.to_string_lossy().ends_with(".compacting") {
            out.push(path);
        }
    }
}

#[test]
fn a_daemon_killed_while_compacting_loses_no_vector() {
    let (server, env, root, url) = project_of_modules();
    let vars = |min_mb: &'static str| {
        [
            ("AMANMCP_EMBEDDER", "ollama"),
            ("AMANMCP_EMBED_URL", url),
            ("AMANMCP_EMBED_MODEL", "model-a"),
            // Many small vector commits: each rewrites graph nodes, leaving free pages.
            ("AMANMCP_EMBED_BATCH", "4"),
            ("AMANMCP_COMPACT_MIN_MB", min_mb),
            ("AMANMCP_WATCH", "0"),
        ]
    };
    // How the compacting daemon ends: SIGKILL as soon as compaction starts; aborted with the
    // copy made and synced but not yet renamed over the original; aborted with it renamed
    // but not reopened; or not at all (it finishes and is stopped).
    let ends = [
        End::Kill,
        End::CrashAt("compact_copied"),
        End::CrashAt("compact_renamed"),
        End::Finish,
    ];
    for (round, end) in ends.into_iter().enumerate() {
        // Index (the first round) or re-index edited files with compaction off, leaving free
        // pages behind.
        if round > 0 {
            for i in (round..120).step_by(3) {
                std::fs::write(root.join(format!("pkg/m{i}.py")), module(i, round)).unwrap();
            }
        }
        index_and_stop(&env, &root, &vars(NEVER));
        let embedded_before = server.documents();

        // Reopen with compaction on: the project's first use opens its store.
        let log_path = env.path().join(format!("compact{round}.log"));
        let crash_at = match end {
            End::CrashAt(point) => point,
            _ => "",
        };
        let mut daemon = daemon_logging_to(
            &env,
            &log_path,
            &[&vars("0"), &[("AMANMCP_CRASH_AT", crash_at)]],
        );
        // With the daemon's settings: when the daemon dies under it, amanctl starts another,
        // which must be the same daemon.
        let mut opener = env
            .command("amanctl")
            .envs(vars("0"))
            .env("AMANMCP_CRASH_AT", crash_at)
            .args(["index", "--no-wait"])
            .arg(&root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
        env.wait_for(Duration::from_secs(20), "compaction to start", || {
            log().contains(STARTED)
        });
        match end {
            End::Kill => daemon.kill().unwrap(),
            End::CrashAt(_) => {
                let status = exit_within(&mut daemon, Duration::from_secs(20));
                assert!(
                    status.is_some_and(|s| !s.success()),
                    "the crash point must abort the daemon: {status:?}\n{}",
                    log()
                );
                assert!(!log().contains(FINISHED), "{}", log());
            }
            End::Finish => {
                env.wait_for(Duration::from_secs(20), "compaction to finish", || {
                    log().contains(FINISHED)
                });
                env.stop_daemon();
            }
        }
        let _ = daemon.wait();
        let _ = opener.wait();
        stop_any_daemon(&env);

        // Whatever point it died at, the index opens whole, every chunk has its vector, and
        // none had to be embedded or taken from the shared cache again.
        let mut daemon = env.start_daemon_with(&vars(NEVER));
        let when = format!("after round {round} ({end:?})");
        env.verify_ok(&root, &when);
        assert_every_vector_kept(&env, &server, embedded_before, &when);
        let mut left = Vec::new();
        leftovers(&env.data_dir(), &mut left);
        assert!(left.is_empty(), "{when}: {left:?}");
        env.stop_daemon();
        let _ = daemon.wait();
    }
}

#[test]
fn stale_cached_vectors_are_dropped_at_open_and_a_crash_meanwhile_loses_nothing() {
    let (server, env, root, url) = project_of_modules();
    let vars = [
        ("AMANMCP_EMBEDDER", "ollama"),
        ("AMANMCP_EMBED_URL", url),
        ("AMANMCP_EMBED_MODEL", "model-a"),
        ("AMANMCP_COMPACT_MIN_MB", NEVER),
        ("AMANMCP_WATCH", "0"),
    ];
    // Four versions of every file: the earlier versions' vectors stay in the project's cache
    // (three stale ones for each live one, past the few hundred the store tolerates).
    for version in 0..4 {
        if version > 0 {
            for i in 0..120 {
                std::fs::write(root.join(format!("pkg/m{i}.py")), module(i, version)).unwrap();
            }
        }
        index_and_stop(&env, &root, &vars);
    }
    let embedded_before = server.documents();
    // Dropping them, the daemon dies just before the transaction commits. amanctl gets the
    // same settings: when the daemon dies under it, it starts another, which must be the
    // same daemon (and dies at the same point).
    let crash = [("AMANMCP_CRASH_AT", "stale_vectors_dropped")];
    let log_path = env.path().join("collect-crash.log");
    let mut daemon = daemon_logging_to(&env, &log_path, &[&vars, &crash]);
    let opened = env
        .command("amanctl")
        .envs(vars)
        .envs(crash)
        .args(["index", "--no-wait"])
        .arg(&root)
        .output()
        .unwrap();
    drop(opened);
    let status = exit_within(&mut daemon, Duration::from_secs(20));
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(status.is_some_and(|s| !s.success()), "{status:?}\n{log}");
    assert!(log.contains("stale_vectors_dropped"), "{log}");
    stop_any_daemon(&env);

    // The next start drops them for good; the index is whole, every chunk has its vector
    // and none was embedded again or taken from the shared cache.
    let log_path = env.path().join("collect.log");
    let mut daemon = daemon_logging_to(&env, &log_path, &[&vars]);
    env.verify_ok(&root, "after the stale vectors were dropped");
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(log.contains("dropped stale cached vectors"), "{log}");
    assert_every_vector_kept(&env, &server, embedded_before, "after the drop");
    env.stop_daemon();
    let _ = daemon.wait();
    // Nothing stale is left to drop.
    let log_path = env.path().join("collect-again.log");
    let mut daemon = daemon_logging_to(&env, &log_path, &[&vars]);
    env.verify_ok(&root, "after a restart");
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(!log.contains("dropped stale cached vectors"), "{log}");
    env.stop_daemon();
    let _ = daemon.wait();
}
