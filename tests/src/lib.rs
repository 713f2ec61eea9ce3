//! Helpers for the end-to-end tests: locate the real binaries, give each test its own HOME,
//! XDG directories, socket and data directory, and speak raw MCP to a shim.
//!
//! The binaries must be built first (`cargo build --workspace`); the tests never stand in for
//! them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Directory holding the built binaries: `$AMANMCP_BIN_DIR`, else the cargo target directory
/// this test binary lives in.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AMANMCP_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/e2e-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary inside target/<profile>/deps")
        .to_path_buf()
}

/// Path of a built binary; panics with instructions if it is missing.
pub fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} not found: run `cargo build --workspace` before the tests",
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
    pub fn project(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let root = self.path().join("projects").join(name);
        for (rel, content) in files {
            let path = root.join(rel);
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
            .env("AMANMCP_LOG", "info");
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
                "amanctl status --json printed invalid JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
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
        let child = self
            .command("amanmcpd")
            .envs(vars.iter().copied())
            .stderr(Stdio::null())
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
        let mut command = Command::new(interpreter);
        self.apply(&mut command);
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

    /// The daemon log, for failure messages.
    pub fn daemon_log(&self) -> String {
        std::fs::read_to_string(self.data_dir().join("amanmcpd.log")).unwrap_or_default()
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // Stop whatever daemon this test started (it is detached from the test process).
        let lock = amanmcp_proto::endpoint::socket_lock_path(&self.socket());
        if let Some(pid) = std::fs::read_to_string(lock)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
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

/// A shim process spoken to in raw JSON-RPC lines.
pub struct Shim {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Shim {
    /// Start `amanmcp serve --project <root>` in `env`.
    pub fn start(env: &TestEnv, root: &Path) -> Shim {
        Shim::start_with(env, root, &[])
    }

    /// Like [`Shim::start`], with extra environment variables.
    pub fn start_with(env: &TestEnv, root: &Path, vars: &[(&str, &std::ffi::OsStr)]) -> Shim {
        let mut command = env.command("amanmcp");
        command.envs(vars.iter().copied());
        let mut child = command
            .arg("serve")
            .arg("--project")
            .arg(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn amanmcp");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Shim {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 1,
        }
    }

    /// Write one raw line.
    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Next message from the shim, within `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(timeout)
            .unwrap_or_else(|e| panic!("no message from the shim within {timeout:?}: {e}"));
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("shim wrote invalid JSON {line:?}: {e}"))
    }

    /// Send a request and wait for its response (skipping notifications).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send_raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.recv(left);
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// The MCP handshake.
    pub fn initialize(&mut self) -> Value {
        let reply = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "amanmcp-e2e", "version": "0"}
            }),
        );
        self.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        reply
    }

    /// `tools/call`; returns the JSON-RPC response.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Search until a result in `path` appears (the first index may still be running).
    pub fn search_until(&mut self, query: &str, path: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let reply = self.call_tool("search", json!({"query": query}));
            let result = &reply["result"];
            assert_ne!(result["isError"], json!(true), "search failed: {reply}");
            let found = result["structuredContent"]["results"]
                .as_array()
                .is_some_and(|hits| hits.iter().any(|h| h["path"] == path));
            if found {
                return result.clone();
            }
            assert!(
                Instant::now() < deadline,
                "search for {query:?} never returned {path}: {reply}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Close stdin and wait for the process to exit, within `timeout`.
    pub fn close(mut self, timeout: Duration) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "shim did not exit within {timeout:?} of stdin EOF"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Shim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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

/// A loopback HTTP server speaking Ollama's `POST /api/embed` and the OpenAI-compatible
/// `POST /v1/embeddings`: the stand-in for a real embedding server, which cannot be
/// installed here. Vectors are bags of hashed words (so texts sharing words are near).
/// Records every request; knows only the models it was given.
pub struct FakeEmbedServer {
    addr: std::net::SocketAddr,
    state: std::sync::Arc<FakeEmbedState>,
}

/// What a [`FakeEmbedServer`] saw and how it behaves.
#[derive(Default)]
pub struct FakeEmbedState {
    /// Texts per request, in arrival order.
    pub batches: std::sync::Mutex<Vec<usize>>,
    /// Models asked for, in arrival order.
    pub models: std::sync::Mutex<Vec<String>>,
    /// Authorization headers seen.
    pub auth: std::sync::Mutex<Vec<String>>,
    /// Every text embedded, in arrival order.
    pub texts: std::sync::Mutex<Vec<String>>,
    /// Models the server has.
    known: std::sync::Mutex<Vec<String>>,
    /// Delay before each answer.
    delay_ms: std::sync::atomic::AtomicU64,
    stop: std::sync::atomic::AtomicBool,
}

/// Dimensions of the fake vectors.
pub const FAKE_DIMS: usize = 64;

/// The fake embedding of `text`.
pub fn fake_embedding(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; FAKE_DIMS];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let mut h: u64 = 0xcbf29ce484222325;
        for b in word.to_lowercase().bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
        }
        v[(h % FAKE_DIMS as u64) as usize] += 1.0;
    }
    v[0] += 0.01;
    v
}

impl FakeEmbedServer {
    /// Start on 127.0.0.1 (a free port), knowing `models`.
    pub fn start(models: &[&str]) -> FakeEmbedServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().unwrap();
        let state = std::sync::Arc::new(FakeEmbedState::default());
        *state.known.lock().unwrap() = models.iter().map(|m| m.to_string()).collect();
        let served = state.clone();
        std::thread::spawn(move || {
            while !served.stop.load(std::sync::atomic::Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let state = served.clone();
                        std::thread::spawn(move || {
                            let _ = serve_embed(stream, &state);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeEmbedServer { addr, state }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What the server saw.
    pub fn state(&self) -> &FakeEmbedState {
        &self.state
    }

    /// Texts embedded so far.
    pub fn texts(&self) -> usize {
        self.state.batches.lock().unwrap().iter().sum()
    }

    /// Documents (chunks) embedded so far: texts of more than one line (queries are one).
    pub fn documents(&self) -> usize {
        self.state
            .texts
            .lock()
            .unwrap()
            .iter()
            .filter(|t| t.contains('\n'))
            .count()
    }

    /// Wait this long before each answer.
    pub fn set_delay(&self, ms: u64) {
        self.state
            .delay_ms
            .store(ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for FakeEmbedServer {
    fn drop(&mut self) {
        self.state
            .stop
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn serve_embed(stream: std::net::TcpStream, state: &FakeEmbedState) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut content_length = 0usize;
    let mut auth = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            content_length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("authorization:") {
            auth = line["authorization:".len()..].trim().to_string();
        }
    }
    let mut body = vec![0u8; content_length];
    std::io::Read::read_exact(&mut reader, &mut body)?;
    state.auth.lock().unwrap().push(auth);
    let delay = state.delay_ms.load(std::sync::atomic::Ordering::SeqCst);
    if delay > 0 {
        std::thread::sleep(Duration::from_millis(delay));
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("");
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = request["model"].as_str().unwrap_or("").to_string();
    let texts: Vec<String> = request["input"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let (status, answer) = if path != "/api/embed" && path != "/v1/embeddings" {
        ("404 Not Found", json!({"error": "no such endpoint"}))
    } else if !state.known.lock().unwrap().contains(&model) {
        (
            "404 Not Found",
            json!({"error": format!("model \"{model}\" not found, try pulling it first")}),
        )
    } else {
        state.models.lock().unwrap().push(model.clone());
        state.batches.lock().unwrap().push(texts.len());
        state.texts.lock().unwrap().extend(texts.iter().cloned());
        let vectors: Vec<Vec<f32>> = texts.iter().map(|t| fake_embedding(t)).collect();
        let answer = if path == "/api/embed" {
            json!({"model": model, "embeddings": vectors})
        } else {
            let data: Vec<Value> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
                .collect();
            json!({"object": "list", "model": model, "data": data})
        };
        ("200 OK", answer)
    };
    let payload = answer.to_string();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{payload}",
        payload.len()
    )?;
    stream.flush()
}
