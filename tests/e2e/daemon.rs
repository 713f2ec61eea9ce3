//! The daemon and amanctl on their own.

use std::time::Duration;

use amanmcp_tests::TestEnv;

#[test]
fn amanctl_status_exits_non_zero_when_the_daemon_is_down() {
    let env = TestEnv::new();
    let (running, status) = env.status();
    assert!(!running);
    assert_eq!(status["running"], false, "{status}");
    let out = env.command("amanctl").arg("status").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("not running"));
}

#[test]
fn a_second_daemon_is_refused_cleanly() {
    let env = TestEnv::new();
    let mut first = env.start_daemon();
    let second = env.command("amanmcpd").output().unwrap();
    assert_eq!(second.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("already running"), "{stderr}");
    // The first one is unharmed.
    assert_eq!(env.daemon_pid(), Some(first.id() as i32));
    let stop = env.command("amanctl").arg("stop").output().unwrap();
    assert!(stop.status.success());
    let status = first.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(!env.socket().exists(), "socket removed on shutdown");
}

#[test]
fn amanctl_status_reports_projects_in_text_and_json() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("a.py", "def alpha():\n    return 1\n"),
            ("b.rs", "fn beta() {}\n"),
        ],
    );
    let mut daemon = env.start_daemon();
    let mut shim = amanmcp_tests::Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("alpha", "a.py");
    env.wait_ready();
    let (running, status) = env.status();
    assert!(running);
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(status["pid"], daemon.id());
    let project = &status["projects"][0];
    assert_eq!(project["root"], root.to_str().unwrap());
    assert_eq!(project["state"], "ready", "{status}");
    assert_eq!(project["files"], 2);
    assert!(project["chunks"].as_u64().unwrap() >= 2);
    assert!(project["index_bytes"].as_u64().unwrap() > 0);
    // One line per project: state, root, size; the header says the rest in two.
    let text = env.command("amanctl").arg("status").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].contains("running") && lines[0].contains("pid") && lines[0].contains("uptime"),
        "{text}"
    );
    assert!(lines[1].contains("socket"), "{text}");
    assert_eq!(lines[2], "1 project:", "{text}");
    assert!(lines[3].trim_start().starts_with("ready"), "{text}");
    assert!(
        lines[3].contains(root.to_str().unwrap()) && lines[3].contains("2 files"),
        "{text}"
    );
    // `-v`: each project in full.
    let verbose = env
        .command("amanctl")
        .args(["status", "-v"])
        .output()
        .unwrap();
    let verbose = String::from_utf8_lossy(&verbose.stdout);
    for needle in [
        root.to_str().unwrap(),
        "Last error: none",
        "Watching:",
        "Semantic:",
    ] {
        assert!(
            verbose.contains(needle),
            "{needle:?} missing from:\n{verbose}"
        );
    }
    // `index` and `verify` speak JSON for scripts: stdout is one JSON value.
    let ran = env.amanctl(&["index", root.to_str().unwrap(), "--json"]);
    assert!(ran.ok(), "{}", ran.text());
    let indexed: serde_json::Value = serde_json::from_str(&ran.stdout).expect(&ran.stdout);
    assert_eq!(indexed["state"], "ready", "{indexed}");
    assert_eq!(indexed["files"], 2, "{indexed}");
    let ran = env.amanctl(&["verify", root.to_str().unwrap(), "--json"]);
    assert!(ran.ok(), "{}", ran.text());
    let verified: serde_json::Value = serde_json::from_str(&ran.stdout).expect(&ran.stdout);
    assert_eq!(verified["ok"], true, "{verified}");
    assert_eq!(verified["files"], 2, "{verified}");
    drop(shim);
    let _ = daemon.kill();
    let _ = daemon.wait();
}

#[test]
fn amanctl_index_starts_the_daemon_and_waits_until_ready() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("a.py", "def alpha():\n    return 1\n")]);
    let out = env
        .command("amanctl")
        .arg("index")
        .arg(&root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ready: 1 file,"), "{stdout}");
    let (running, status) = env.status();
    assert!(running);
    assert_eq!(status["projects"][0]["state"], "ready");
    assert_eq!(status["projects"][0]["files"], 1);
}

#[test]
fn a_daemon_on_another_socket_cannot_share_the_data_directory() {
    let env = TestEnv::new();
    let mut first = env.start_daemon();
    let other_socket = env.path().join("run/other/amanmcpd.sock");
    let second = env
        .command("amanmcpd")
        .arg("--socket")
        .arg(&other_socket)
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(3), "{second:?}");
    assert!(String::from_utf8_lossy(&second.stderr).contains("already running"));
    // Nor once the data directory was deleted under the first (its lock lived inside).
    std::fs::remove_dir_all(env.data_dir()).unwrap();
    let mut third = env
        .command("amanmcpd")
        .arg("--socket")
        .arg(&other_socket)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = amanmcp_tests::exit_within(&mut third, Duration::from_secs(20));
    if status.is_none() {
        let _ = third.kill();
    }
    let out = third.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "a second daemon started: {out:?}"
    );
    let _ = first.kill();
    let _ = first.wait();
}

#[test]
fn a_shared_socket_directory_or_a_file_in_the_sockets_place_is_refused_untouched() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    // A world-writable sticky directory (like /tmp): refused, its mode unchanged.
    let shared = env.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let out = env
        .command("amanmcpd")
        .env("AMANMCP_SOCKET", shared.join("amanmcpd.sock"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not accessible to others"), "{stderr}");
    let mode = std::fs::metadata(&shared).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o1777, "the shared directory's mode was changed");
    assert!(!shared.join("amanmcpd.sock").exists());

    // A regular file where the socket should be, and a sibling sharing its stem: both intact.
    let private = env.path().join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(private.join("notes.txt"), "my notes\n").unwrap();
    std::fs::write(private.join("notes.lock"), "keep me\n").unwrap();
    let out = env
        .command("amanmcpd")
        .env("AMANMCP_SOCKET", private.join("notes.txt"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not a socket"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(private.join("notes.txt")).unwrap(),
        "my notes\n"
    );
    assert_eq!(
        std::fs::read_to_string(private.join("notes.lock")).unwrap(),
        "keep me\n"
    );
}

#[test]
fn amanctl_ends_quietly_when_its_reader_goes_away() {
    let env = TestEnv::new();
    let amanctl = amanmcp_tests::bin("amanctl");
    for _ in 0..5 {
        // `true` exits before amanctl writes: every write meets a closed pipe.
        let mut command = std::process::Command::new("sh");
        command
            .arg("-c")
            .arg(format!("'{}' status --json | true", amanctl.display()));
        env.apply(&mut command);
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{stderr}"
        );
    }
}

#[test]
fn the_daemon_raises_its_own_open_files_limit() {
    use std::os::unix::process::CommandExt;
    let env = TestEnv::new();
    let mut command = env.command("amanmcpd");
    command.stderr(std::process::Stdio::null());
    // SAFETY: only async-signal-safe calls (getrlimit/setrlimit) between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            limit.rlim_cur = 64;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    env.wait_for(Duration::from_secs(20), "the daemon to listen", || {
        env.daemon_pid() == Some(child.id() as i32)
    });
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let soft: u64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
    let hard: u64 = line
        .split_whitespace()
        .nth(4)
        .and_then(|h| h.parse().ok())
        .unwrap_or(u64::MAX);
    // Raised to the hard limit (or the kernel's cap when the hard limit is unlimited).
    assert!(soft > 64 && soft <= hard, "{line}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_daemon_out_of_file_descriptors_answers_errors_never_silent_empty_results() {
    use std::os::unix::process::CommandExt;
    let env = TestEnv::new();
    let files: Vec<(String, String)> = (0..40)
        .map(|i| {
            (
                format!("m{i}.py"),
                format!("def fdmarker{i}():\n    return 'fdmarker'\n"),
            )
        })
        .collect();
    let root = env.project("proj", &files);
    let mut command = env.command("amanmcpd");
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(env.data_dir())
            .unwrap();
    }
    let log = std::fs::File::create(env.data_dir().join("amanmcpd.log")).unwrap();
    command.stderr(log);
    // SAFETY: only async-signal-safe calls (setrlimit) between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 64,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            Ok(())
        });
    }
    let mut daemon = command.spawn().unwrap();
    env.wait_for(Duration::from_secs(20), "the daemon to listen", || {
        env.daemon_pid() == Some(daemon.id() as i32)
    });
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());

    // 60 shims at once, each searching: more connections than descriptors.
    let threads: Vec<_> = (0..60)
        .map(|_| {
            let env_socket = env.socket();
            let home = env.path().to_path_buf();
            let root = root.clone();
            std::thread::spawn(move || {
                let mut outcomes = Vec::new();
                let mut command = std::process::Command::new(amanmcp_tests::bin("amanmcp"));
                command
                    .args(["serve", "--project"])
                    .arg(&root)
                    .env("AMANMCP_SOCKET", &env_socket)
                    .env("HOME", &home)
                    .env("AMANMCP_DAEMON_BIN", "/nonexistent/amanmcpd")
                    .stderr(std::process::Stdio::null());
                let mut shim = amanmcp_tests::Shim::spawn(command);
                shim.initialize();
                for _ in 0..10 {
                    let reply = shim.call_tool(
                        "search",
                        serde_json::json!({"query": "fdmarker", "mode": "lexical"}),
                    );
                    outcomes.push(reply);
                }
                outcomes
            })
        })
        .collect();
    let (mut answered, mut errors, mut silent) = (0, 0, Vec::new());
    for thread in threads {
        for reply in thread.join().unwrap() {
            let error = reply.get("error").is_some() || reply["result"]["isError"] == true;
            let results = reply["result"]["structuredContent"]["results"]
                .as_array()
                .map_or(0, Vec::len);
            match (error, results) {
                (true, _) => errors += 1,
                (false, 0) => silent.push(reply),
                (false, _) => answered += 1,
            }
        }
    }
    assert!(
        silent.is_empty(),
        "{} searches came back empty without an error ({answered} answered, {errors} errors), e.g. {}",
        silent.len(),
        silent[0]
    );
    assert!(answered > 0, "no search succeeded ({errors} errors)");
    println!("fd-limited daemon: {answered} searches answered, {errors} errors, 0 silent");
    // The index is whole afterwards.
    env.verify_ok(&root, "after the load");
    let _ = daemon.kill();
    let _ = daemon.wait();
}

#[test]
fn amanctl_logs_prints_the_end_of_the_daemon_log() {
    let env = TestEnv::new();
    // No daemon has run yet: no log, and the answer says where else to look.
    let none = env.amanctl(&["logs"]);
    assert_eq!(none.code, 1, "{}", none.text());
    assert!(none.stderr.contains("journalctl"), "{}", none.stderr);

    let root = env.project("proj", &[("a.py", "def alpha():\n    return 1\n")]);
    let indexed = env.amanctl(&["index", root.to_str().unwrap()]);
    assert!(indexed.ok(), "{}", indexed.text());
    let log = env.daemon_log();
    let last: Vec<&str> = log.lines().rev().take(2).collect();
    assert!(!last.is_empty(), "empty daemon log");
    let ran = env.amanctl(&["logs", "-n", "2"]);
    assert!(ran.ok(), "{}", ran.text());
    let printed: Vec<&str> = ran.stdout.lines().collect();
    assert!(printed.len() <= 2, "{}", ran.stdout);
    // The lines printed are the log's last ones (more may have been written since).
    assert!(
        printed
            .iter()
            .all(|line| log.contains(line) || env.daemon_log().contains(line))
    );
    let all = env.amanctl(&["logs", "-n", "1000"]);
    assert!(all.stdout.contains("listening"), "{}", all.stdout);
    // It still reads the log once the daemon is gone.
    env.stop_daemon();
    let after = env.amanctl(&["logs", "-n", "5"]);
    assert!(after.ok(), "{}", after.text());
    assert!(!after.stdout.trim().is_empty());
}

#[test]
fn amanctl_has_the_manners_of_the_cli_tools_people_know() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[
            ("src/app.py", "def manners_word():\n    return 1\n"),
            ("src/lib.rs", "fn manners_word() {}\n"),
        ],
    );
    let mut daemon = env.start_daemon();
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    // A bad mode is a usage error (exit 2) naming the choices; help shows no empty default.
    let ran = env.amanctl_on(&root, &["search", "--mode", "fuzzy", "manners_word"]);
    assert_eq!(ran.code, 2, "{}", ran.text());
    assert!(ran.stderr.contains("lexical"), "{}", ran.stderr);
    let help = env.amanctl(&["search", "--help"]);
    assert!(!help.stdout.contains("[default: ]"), "{}", help.stdout);
    // ripgrep's short flags: -g glob, -t type (language), -C context.
    let ran = env.amanctl_on(
        &root,
        &[
            "search",
            "-g",
            "src/*.py",
            "-t",
            "python",
            "-C",
            "1",
            "manners_word",
        ],
    );
    assert!(ran.ok(), "{}", ran.text());
    assert!(
        ran.stdout.contains("src/app.py") && !ran.stdout.contains("src/lib.rs"),
        "{}",
        ran.stdout
    );
    // A path that does not exist is named in the error.
    let ran = env.amanctl(&["index", "/nonexistent/amanmcp-project"]);
    assert!(!ran.ok());
    assert!(
        ran.stderr.contains("/nonexistent/amanmcp-project"),
        "{}",
        ran.stderr
    );
    // `stop` returns once the daemon has ended; a second `stop` has nothing to do.
    let ran = env.amanctl(&["stop"]);
    assert!(ran.ok() && ran.stdout.contains("stopped"), "{}", ran.text());
    assert!(
        daemon.try_wait().unwrap().is_some(),
        "the daemon still runs after stop"
    );
    let ran = env.amanctl(&["stop"]);
    assert!(
        ran.ok() && ran.stdout.contains("not running"),
        "{}",
        ran.text()
    );
}

#[test]
fn ctrl_c_during_amanctl_index_stops_the_waiting_and_says_indexing_goes_on() {
    let env = TestEnv::new();
    let files: Vec<(String, String)> = (0..800)
        .map(|i| {
            (
                format!("pkg{}/mod{i}.py", i % 20),
                format!(
                    "def waiting_word_{i}(x):\n    return x * {i}\n\n\nclass Holder{i}:\n    pass\n"
                ),
            )
        })
        .collect();
    let root = env.project("big", &files);
    // Vectors that take seconds (a slow embedding server on loopback): the built-in
    // embedder is done with 800 small files before amanctl could be interrupted.
    let server = amanmcp_tests::FakeEmbedServer::start(&["fake-embed"]);
    server.set_delay(150);
    let url = server.url();
    let mut daemon = env.start_daemon_with(&[
        ("AMANMCP_EMBEDDER", "ollama"),
        ("AMANMCP_EMBED_URL", url.as_str()),
        ("AMANMCP_EMBED_MODEL", "fake-embed"),
        ("AMANMCP_EMBED_BATCH", "32"),
    ]);
    let child = env
        .command("amanctl")
        .args(["index"])
        .arg(&root)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("indexing goes on in the daemon"),
        "{stderr}"
    );
    env.wait_ready();
    assert_eq!(env.project_status()["files"], 800);
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}
