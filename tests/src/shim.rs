//! A shim process spoken to in raw JSON-RPC lines (for what the SDK clients cannot send:
//! malformed input, exact framing, timing).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::TestEnv;

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
        command
            .envs(vars.iter().copied())
            .arg("serve")
            .arg("--project")
            .arg(root)
            .stderr(Stdio::inherit());
        Shim::spawn(command)
    }

    /// Spawn `command` (an `amanmcp serve ...`) with piped stdin and stdout.
    pub fn spawn(mut command: Command) -> Shim {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
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

    /// The shim's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The result paths of a lexical search for `query` (limit 50), in order.
    pub fn lexical_paths(&mut self, query: &str) -> Vec<String> {
        let reply = self.call_tool(
            "search",
            json!({"query": query, "limit": 50, "mode": "lexical"}),
        );
        crate::result_paths(&reply)
    }

    /// Write one raw line.
    pub fn send_raw(&mut self, line: &str) {
        self.send_bytes(line.as_bytes());
    }

    /// Write one raw line of bytes (which need not be UTF-8).
    pub fn send_bytes(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Next message from the shim, within `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Value {
        let line = self.recv_line(timeout);
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("shim wrote invalid JSON {line:?}: {e}"))
    }

    /// Next line from the shim as written, within `timeout`.
    pub fn recv_line(&mut self, timeout: Duration) -> String {
        self.lines
            .recv_timeout(timeout)
            .unwrap_or_else(|e| panic!("no message from the shim within {timeout:?}: {e}"))
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
        crate::exit_within(&mut self.child, timeout)
            .unwrap_or_else(|| panic!("shim did not exit within {timeout:?} of stdin EOF"))
    }
}

impl Drop for Shim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
