//! The daemon as a service: the units `amanctl service` writes, socket activation, the
//! version handshake on upgrades, and `amanctl doctor`.

use std::time::Duration;

use amanmcp_tests::{Ran, TestEnv};

#[test]
fn amanctl_doctor_reports_what_it_checks_and_fails_on_a_shared_socket_directory() {
    let env = TestEnv::new();
    // No daemon yet: a warning, not a failure (a shim starts it on demand).
    let ran = env.amanctl(&["doctor"]);
    assert!(ran.ok(), "{}", ran.text());
    assert!(ran.stdout.contains("not running"), "{}", ran.text());
    assert!(ran.stdout.contains("ok   shim"), "{}", ran.text());

    let root = env.project("proj", &[("a.py", "def doctormarker():\n    pass\n")]);
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    let ran = env.amanctl(&["doctor", "--json"]);
    assert!(ran.ok(), "{}", ran.text());
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    let checks: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    for check in [
        "shim",
        "socket directory",
        "daemon",
        "open files",
        "file watches",
        "embedder",
        "disk",
    ] {
        assert!(checks.contains(&check), "{check} missing from {report}");
    }

    // A socket in a directory others can read is a failure, with what to do.
    let shared = env.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let ran = Ran::from(
        env.command("amanctl")
            .arg("doctor")
            .env("AMANMCP_SOCKET", shared.join("amanmcpd.sock"))
            .output()
            .unwrap(),
    );
    assert!(!ran.ok(), "{}", ran.text());
    assert!(
        ran.stdout.contains("must be yours and 0700"),
        "{}",
        ran.text()
    );
}

#[test]
fn amanctl_service_writes_a_unit_that_runs_the_installed_daemon() {
    let env = TestEnv::new();
    let daemon = amanmcp_tests::bin("amanmcpd");
    let ran = env.amanctl(&["service", "install", "--dry-run"]);
    assert!(ran.ok(), "{}", ran.text());
    assert!(
        ran.stdout
            .contains(&format!("ExecStart={}", daemon.display())),
        "{}",
        ran.text()
    );
    // Socket activation: the daemon starts on the first connection, not at login.
    assert!(
        !ran.stdout.contains("enable --now amanmcpd.service")
            && !ran.stdout.contains("WantedBy=default.target"),
        "{}",
        ran.text()
    );
    for expected in [
        "ListenStream=%t/amanmcp/amanmcpd.sock",
        "SocketMode=0600",
        "Requires=amanmcpd.socket",
        "$ systemctl --user enable --now amanmcpd.socket",
    ] {
        assert!(ran.stdout.contains(expected), "{expected}: {}", ran.text());
    }
    // Units go where XDG_CONFIG_HOME says.
    let elsewhere = env.path().join("elsewhere-config");
    let out = env
        .command("amanctl")
        .env("XDG_CONFIG_HOME", &elsewhere)
        .args(["service", "install", "--dry-run"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&format!(
            "# {}/systemd/user/amanmcpd.service",
            elsewhere.display()
        )),
        "{shown}"
    );
    let unit = env
        .path()
        .join("home/.config/systemd/user/amanmcpd.service");
    let socket_unit = unit.with_extension("socket");
    assert!(!unit.exists(), "a dry run wrote {}", unit.display());

    // For real: the unit is written even where no user service manager runs (as here), and
    // the error says so.
    let ran = env.amanctl(&["service", "install"]);
    assert!(unit.is_file() && socket_unit.is_file(), "{}", ran.text());
    if !ran.ok() {
        assert!(
            ran.stderr.contains("the unit is written at"),
            "{}",
            ran.text()
        );
    }
    if let Ok(out) = std::process::Command::new("systemd-analyze")
        .args(["verify", "--user"])
        .arg(&unit)
        .arg(&socket_unit)
        .env("XDG_RUNTIME_DIR", env.path().join("run"))
        .output()
    {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let ran = env.amanctl(&["service", "status", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(report["installed"], true, "{report}");
    env.amanctl(&["service", "uninstall"]);
    assert!(!unit.exists() && !socket_unit.exists());
}

#[test]
fn the_daemon_serves_the_socket_systemd_passes_and_leaves_it_behind() {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let env = TestEnv::new();
    let dir = env.socket().parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // What systemd does for amanmcpd.socket: it listens, and passes the socket as
    // descriptor 3 with LISTEN_FDS=1 and LISTEN_PID naming the daemon.
    let listener = std::os::unix::net::UnixListener::bind(env.socket()).unwrap();
    let fd = listener.as_raw_fd();
    for round in 0..2 {
        let mut command = std::process::Command::new("/bin/sh");
        env.apply(&mut command);
        command
            .args(["-c", "export LISTEN_PID=$$ LISTEN_FDS=1; exec \"$0\""])
            .arg(amanmcp_tests::bin("amanmcpd"))
            .stderr(std::process::Stdio::piped());
        // SAFETY: dup2 and fcntl are async-signal-safe; they only touch descriptors.
        unsafe {
            command.pre_exec(move || {
                if fd == 3 {
                    libc::fcntl(3, libc::F_SETFD, 0);
                } else if libc::dup2(fd, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let daemon = command.spawn().unwrap();
        env.wait_for(
            Duration::from_secs(20),
            "the activated daemon to answer",
            || env.daemon_pid() == Some(daemon.id() as i32),
        );
        // Not `stop_daemon`: once this daemon is gone, connections wait in our backlog.
        let stopped = env.amanctl(&["stop"]);
        assert!(stopped.ok(), "{}", stopped.text());
        let out = daemon.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("socket activation"),
            "round {round}: {stderr}"
        );
        // The socket is systemd's: it stays, still listening, for the next activation.
        assert!(
            env.socket().exists(),
            "round {round}: the daemon removed the socket"
        );
    }
    drop(listener);
}

#[test]
fn a_shim_newer_than_the_running_daemon_restarts_it_and_keeps_the_index() {
    let env = TestEnv::new();
    let root = env.project(
        "upgrade",
        &[("a.py", "def alpha_upgrade():\n    return 1\n")],
    );
    // The running daemon says it is older than the binaries now installed.
    let mut old = env.start_daemon_with(&[("AMANMCP_TEST_REPORT_VERSION", "0.0.1")]);
    let indexed = env.amanctl_on(&root, &["index"]);
    assert!(indexed.ok(), "{}", indexed.text());
    let old_pid = old.id() as i32;

    let mut shim = amanmcp_tests::Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("alpha_upgrade", "a.py");
    let exit = old.wait().unwrap();
    assert!(exit.success(), "the old daemon stops cleanly: {exit:?}");
    let new_pid = env.daemon_pid().expect("a new daemon runs");
    assert_ne!(new_pid, old_pid);
    let (_, status) = env.status();
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"), "{status}");
    // The index was kept: the new daemon's first pass re-chunked no file.
    env.verify_ok(&root, "after the restart");
    let project = env.project_status();
    assert!(project["passes"].as_u64() >= Some(1), "{project}");
    assert_eq!(project["last_pass_changed"], 0, "{project}");
    shim.close(Duration::from_secs(10));
    env.stop_daemon();
}

/// `amanctl doctor --json`: whether it passed, and the finding of `check` (level, detail).
fn doctor_finding(env: &TestEnv, check: &str) -> (bool, String, String) {
    let ran = env.amanctl(&["doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == check)
        .unwrap_or_else(|| panic!("no {check} finding in {report}"));
    (
        ran.ok(),
        finding["level"].as_str().unwrap().to_string(),
        finding["detail"].as_str().unwrap().to_string(),
    )
}

#[test]
fn amanctl_doctor_finds_each_planted_problem_and_says_what_to_do() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("a/one.py", "def one():\n    return 1\n"),
            ("b/two.py", "def two():\n    return 2\n"),
            ("c/three.py", "def three():\n    return 3\n"),
        ],
    );

    // The daemon is older than amanctl.
    let mut daemon = env.start_daemon_with(&[("AMANMCP_TEST_REPORT_VERSION", "0.0.1")]);
    let (ok, level, detail) = doctor_finding(&env, "daemon version");
    assert!(!ok && level == "fail", "{level}: {detail}");
    assert!(
        detail.contains("0.0.1") && detail.contains("amanctl stop"),
        "{detail}"
    );
    env.stop_daemon();
    daemon.wait().unwrap();

    // Too few file watches: the project falls back to polling.
    let mut daemon = env.start_daemon_with(&[("AMANMCP_MAX_WATCHES", "1")]);
    assert!(env.amanctl_on(&root, &["index"]).ok());
    let (_, level, detail) = doctor_finding(&env, "file watches");
    assert_eq!(level, "warn", "{detail}");
    assert!(
        detail.contains("polling") && detail.contains("max_user_watches"),
        "{detail}"
    );
    env.stop_daemon();
    daemon.wait().unwrap();

    // The embedding server is down.
    let nowhere = format!("http://{}", amanmcp_tests::free_loopback_addr());
    let mut daemon = env.start_daemon_with(&[
        ("AMANMCP_EMBEDDER", "ollama"),
        ("AMANMCP_EMBED_URL", &nowhere),
        ("AMANMCP_EMBED_MODEL", "absent"),
    ]);
    env.amanctl_on(&root, &["index"]);
    let (ok, level, detail) = doctor_finding(&env, "embedder");
    assert!(!ok && level == "fail", "{level}: {detail}");
    assert!(detail.contains("error"), "{detail}");
    env.stop_daemon();
    daemon.wait().unwrap();

    // Down: a warning that says how it starts.
    let (ok, level, detail) = doctor_finding(&env, "daemon");
    assert!(ok && level == "warn", "{level}: {detail}");
    assert!(detail.contains("not running"), "{detail}");
}
