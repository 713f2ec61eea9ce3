//! Helpers for the end-to-end tests: build and locate the real binaries, give each test its
//! own HOME, XDG directories, socket and data directory ([`TestEnv`]), speak raw MCP to a
//! shim ([`Shim`]), run the official SDK clients, and stand in for an embedding server
//! ([`FakeEmbedServer`], the only stand-in allowed).

mod fake_embed;
mod http;
mod shim;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use fake_embed::{FAKE_DIMS, FakeEmbedServer, FakeEmbedState, fake_embedding};
pub use http::{HttpReply, free_loopback_addr, http_request};
pub use shim::Shim;

/// Directory holding the built binaries: `$AMANMCP_BIN_DIR`, else the directory of this
/// executable (the bench: `target/<profile>/`), or its parent for a test binary
/// (`target/<profile>/deps/`).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AMANMCP_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("executable in a directory");
    if is_test_binary() {
        dir.parent().unwrap_or(dir).to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// Whether this process is a cargo test binary (it lives in `target/<profile>/deps`).
fn is_test_binary() -> bool {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.ends_with("deps")))
        .unwrap_or(false)
}

/// Build the daemon's and the shim's binaries once per test process, in this test binary's
/// profile, so `cargo test` alone never runs stale or missing binaries (cargo builds only
/// the test crate's own dependencies). Skipped when `$AMANMCP_BIN_DIR` names prebuilt ones,
/// and outside tests (the bench is built with the binaries beside it).
fn build_binaries() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        if std::env::var_os("AMANMCP_BIN_DIR").is_some() || !is_test_binary() {
            return;
        }
        let profile = match bin_dir().file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(other) => other.to_string(),
        };
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
        let out = Command::new(cargo)
            .args(["build", "--bins", "-p", "amanmcpd", "--profile"])
            .arg(&profile)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("run cargo build");
        assert!(
            out.status.success(),
            "cargo build of the binaries failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// Path of a built binary (built first if needed).
pub fn bin(name: &str) -> PathBuf {
    build_binaries();
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} not found after building",
        path.display()
    );
    path
}

/// One test's private world: HOME, XDG dirs, socket and data dir under a temp dir.
pub struct TestEnv {
    dir: tempfile::TempDir,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    /// A fresh environment (under /tmp, so socket paths stay short).
    pub fn new() -> TestEnv {
        let dir = tempfile::Builder::new()
            .prefix("amanmcp-e2e-")
            .tempdir_in("/tmp")
            .expect("temp dir");
        for sub in ["home", "run", "data", "projects"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        TestEnv { dir }
    }

    /// Root of the environment.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The socket path the daemon uses.
    pub fn socket(&self) -> PathBuf {
        self.path().join("run/amanmcp/amanmcpd.sock")
    }

    /// The daemon's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.path().join("data/amanmcp")
    }

    /// Create a project directory with `files` (relative path, content).
    pub fn project<P: AsRef<str>, C: AsRef<[u8]>>(&self, name: &str, files: &[(P, C)]) -> PathBuf {
        let root = self.path().join("projects").join(name);
        for (rel, content) in files {
            let path = root.join(rel.as_ref());
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        std::fs::create_dir_all(&root).unwrap();
        root.canonicalize().unwrap()
    }

    /// Apply this environment to `command`.
    pub fn apply(&self, command: &mut Command) {
        command
            .env("HOME", self.path().join("home"))
            .env("XDG_RUNTIME_DIR", self.path().join("run"))
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env("XDG_CONFIG_HOME", self.path().join("home/.config"))
            .env("XDG_CACHE_HOME", self.path().join("home/.cache"))
            .env("AMANMCP_SOCKET", self.socket())
            .env("AMANMCP_DATA_DIR", self.data_dir())
            .env("AMANMCP_DAEMON_BIN", bin("amanmcpd"))
            .env("AMANMCP_LOG", "info")
            // Test daemons stay quiet when idle: the word table has its own tests.
            .env("AMANMCP_WORD_TABLE", "off");
    }

    /// A command for one of the binaries, in this environment.
    pub fn command(&self, name: &str) -> Command {
        let mut command = Command::new(bin(name));
        self.apply(&mut command);
        command
    }

    /// `amanctl status --json`, parsed, with its exit status.
    pub fn status(&self) -> (bool, Value) {
        let out = self
            .command("amanctl")
            .args(["status", "--json"])
            .output()
            .expect("run amanctl");
        let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "amanctl status --json printed invalid JSON ({e}): {}\nstderr: {}\nexit: {:?}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                out.status
            )
        });
        (out.status.success(), value)
    }

    /// The roots of the projects the daemon has loaded, from `amanctl status`.
    pub fn project_roots(&self) -> Vec<String> {
        let (_, status) = self.status();
        status["projects"]
            .as_array()
            .map(|projects| {
                projects
                    .iter()
                    .filter_map(|p| p["root"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The running daemon's pid, from `amanctl status`.
    pub fn daemon_pid(&self) -> Option<i32> {
        let (ok, status) = self.status();
        ok.then(|| status["pid"].as_i64().expect("pid") as i32)
    }

    /// Wait until `f` holds, or panic after `timeout` with `what`.
    pub fn wait_for(&self, timeout: Duration, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + timeout;
        while !f() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait until every loaded project is `ready`: indexed and every chunk embedded.
    pub fn wait_ready(&self) {
        self.wait_for(
            Duration::from_secs(120),
            "every project to be ready",
            || {
                let (running, status) = self.status();
                running
                    && status["projects"]
                        .as_array()
                        .is_some_and(|p| !p.is_empty() && p.iter().all(|p| p["state"] == "ready"))
            },
        );
    }

    /// Start `amanmcpd` directly (not through a shim) and wait until it answers.
    pub fn start_daemon(&self) -> Child {
        self.start_daemon_with(&[])
    }

    /// Like [`TestEnv::start_daemon`], with extra environment variables.
    pub fn start_daemon_with(&self, vars: &[(&str, &str)]) -> Child {
        self.start_daemon_full(&[], vars, Stdio::null())
    }

    /// Like [`TestEnv::start_daemon`], its log appended to the file [`TestEnv::daemon_log`]
    /// reads (where a daemon the shim starts writes it).
    pub fn start_daemon_logged(&self) -> Child {
        // Private, as the daemon requires of its data directory (the shim makes it so too).
        amanmcp_proto::endpoint::create_private_dir(&self.data_dir())
            .expect("the daemon's data directory");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data_dir().join("amanmcpd.log"))
            .expect("the daemon's log file");
        self.start_daemon_full(&[], &[], log.into())
    }

    /// Like [`TestEnv::start_daemon`], with extra arguments.
    pub fn start_daemon_args(&self, args: &[&str]) -> Child {
        self.start_daemon_full(args, &[], Stdio::null())
    }

    fn start_daemon_full(&self, args: &[&str], vars: &[(&str, &str)], stderr: Stdio) -> Child {
        let child = self
            .command("amanmcpd")
            .args(args)
            .envs(vars.iter().copied())
            .stderr(stderr)
            .spawn()
            .expect("start amanmcpd");
        self.wait_for(Duration::from_secs(20), "the daemon to listen", || {
            self.daemon_pid() == Some(child.id() as i32)
        });
        child
    }

    /// `amanctl stop`, then wait until the daemon is gone.
    pub fn stop_daemon(&self) {
        let out = self.command("amanctl").arg("stop").output().unwrap();
        assert!(
            out.status.success(),
            "amanctl stop failed: {}{}\ndaemon log:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.daemon_log()
        );
        self.wait_for(Duration::from_secs(10), "the daemon to stop", || {
            self.daemon_pid().is_none()
        });
    }

    /// Run an official-SDK client script as `INTERPRETER SCRIPT <amanmcp> ROOT EXTRA...` in this
    /// environment (from `cwd` if given). Panics with its output and the daemon log unless it
    /// exits 0 after printing `OK`.
    pub fn run_client(
        &self,
        interpreter: &Path,
        script: &str,
        root: &Path,
        extra: &[&str],
        cwd: Option<&Path>,
    ) {
        self.run_client_env(interpreter, script, root, extra, cwd, &[]);
    }

    /// [`TestEnv::run_client`] with extra environment variables for the script.
    pub fn run_client_env(
        &self,
        interpreter: &Path,
        script: &str,
        root: &Path,
        extra: &[&str],
        cwd: Option<&Path>,
        vars: &[(&str, String)],
    ) {
        let mut command = Command::new(interpreter);
        self.apply(&mut command);
        command.envs(vars.iter().map(|(k, v)| (*k, v.as_str())));
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        let out = command
            .arg(client_script(script))
            .arg(bin("amanmcp"))
            .arg(root)
            .args(extra)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.lines().any(|line| line == "OK"),
            "{script} failed:\n{stdout}\n{}\ndaemon log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.daemon_log()
        );
    }

    /// Run `amanctl ARGS`.
    pub fn amanctl(&self, args: &[&str]) -> Ran {
        Ran::from(
            self.command("amanctl")
                .args(args)
                .output()
                .expect("run amanctl"),
        )
    }

    /// Run `amanctl ARGS ROOT` (the commands that take a project).
    pub fn amanctl_on(&self, root: &Path, args: &[&str]) -> Ran {
        Ran::from(
            self.command("amanctl")
                .args(args)
                .arg(root)
                .output()
                .expect("run amanctl"),
        )
    }

    /// `amanctl verify ROOT` must say `ok` (`when` names the moment, for the failure).
    pub fn verify_ok(&self, root: &Path, when: &str) {
        let ran = self.amanctl_on(root, &["verify"]);
        assert!(
            ran.ok() && ran.stdout.starts_with("ok:"),
            "verify {when}:\n{}\ndaemon log:\n{}",
            ran.text(),
            self.daemon_log()
        );
    }

    /// The status of the daemon's first project (panics if the daemon is down).
    pub fn project_status(&self) -> Value {
        let (running, status) = self.status();
        assert!(running, "{status}");
        status["projects"][0].clone()
    }

    /// The index directory of the project at `root` under the data directory.
    pub fn index_dir(&self, root: &Path) -> PathBuf {
        std::fs::read_dir(self.data_dir().join("projects"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|dir| {
                std::fs::read_to_string(dir.join("root")).is_ok_and(|r| Path::new(&r) == root)
            })
            .unwrap_or_else(|| panic!("no index directory for {}", root.display()))
    }

    /// The daemon log, for failure messages.
    pub fn daemon_log(&self) -> String {
        std::fs::read_to_string(self.data_dir().join("amanmcpd.log")).unwrap_or_default()
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // Stop whatever daemon this test started (it is detached from the test process). A
        // daemon still starting (shims race to start one) takes the lock once the holder is
        // gone, so look again after each kill.
        let lock = amanmcp_proto::endpoint::socket_lock_path(&self.socket());
        for _ in 0..10 {
            let Some(pid) = std::fs::read_to_string(&lock)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            else {
                break;
            };
            // SAFETY: kill has no memory-safety preconditions.
            if unsafe { libc::kill(pid, libc::SIGKILL) } != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // And any daemon a shim was still starting when the test ended: it has this
        // environment's socket in its environment.
        for pid in processes_with_env("AMANMCP_SOCKET", &self.socket()) {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The processes (Linux `/proc`) whose environment sets `name` to `value`.
fn processes_with_env(name: &str, value: &Path) -> Vec<i32> {
    let wanted = format!("{name}={}", value.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != std::process::id() as i32)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == wanted.as_bytes()))
        })
        .collect()
}

/// `child`'s exit status once it ends, or `None` if it still runs after `timeout` (it is then
/// left running: the caller's failure, and `TestEnv`'s drop, end it).
pub fn exit_within(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("wait for a child") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A small deterministic generator (no test may depend on wall-clock randomness).
pub struct Lcg(pub u64);

impl Lcg {
    /// The next 31 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// What a command printed and how it ended.
pub struct Ran {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl From<std::process::Output> for Ran {
    fn from(out: std::process::Output) -> Ran {
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Ran {
    /// Exited 0.
    pub fn ok(&self) -> bool {
        self.code == 0
    }

    /// Both streams, for assertions and failure messages.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// A made-up word for `n`, distinct for each `n` (syllables, so a tokenizer keeps it whole):
/// generated code whose every chunk's text is new.
pub fn made_up_word(mut n: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "va", "zu", "be", "do", "fi", "gu", "ho",
        "ja",
    ];
    let mut out = String::new();
    loop {
        out.push_str(SYLLABLES[n % 16]);
        n /= 16;
        if n == 0 {
            return out;
        }
    }
}

/// Write `text` to `rel` under `root`, making its directories.
pub fn write_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The result paths of a successful `search` reply, in order (panics on an error reply).
pub fn result_paths(reply: &Value) -> Vec<String> {
    assert_ne!(reply["result"]["isError"], json!(true), "{reply}");
    reply["result"]["structuredContent"]["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results in {reply}"))
        .iter()
        .map(|h| h["path"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The Python interpreter with the official MCP SDK: `$AMANMCP_TEST_PYTHON`, else the
/// workspace's `.venv-test` that `.ci/run` creates.
pub fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("AMANMCP_TEST_PYTHON") {
        return PathBuf::from(python);
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv-test/bin/python");
    assert!(
        path.is_file(),
        "{} not found: create it with `python3 -m venv .venv-test && .venv-test/bin/pip install -r tests/clients/requirements.txt` (bash .ci/run does this)",
        path.display()
    );
    path
}

/// `node`, checked to have the TypeScript SDK installed beside the client scripts
/// (`npm ci` in `tests/clients`, which `.ci/run` does).
pub fn node() -> PathBuf {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("clients/node_modules/@modelcontextprotocol/sdk/package.json");
    assert!(
        sdk.is_file(),
        "{} not found: run `npm ci` in tests/clients (bash .ci/run does this)",
        sdk.display()
    );
    PathBuf::from(std::env::var_os("AMANMCP_TEST_NODE").unwrap_or_else(|| "node".into()))
}

/// Path of a client script under `tests/clients`.
pub fn client_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("clients")
        .join(name)
}
