//! The shim's connection to `amanmcpd`: dial the socket, start the daemon (detached) when
//! none answers, and redial/restart once when a call fails because the daemon went away.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use amanmcp_proto::endpoint;
use amanmcp_proto::{DaemonClient, pb};
use tokio::sync::Mutex;
use tonic::transport::Channel;
use tonic::{Code, Status};

/// How long to wait for a freshly started daemon to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long after a start lost the lock to another daemon a new start is tried, while that
/// daemon does not answer (it may have died before listening).
const RESTART_PAUSE: Duration = Duration::from_millis(500);
/// Tries of one call when the daemon is unreachable (each after reconnecting or starting it).
const CALL_ATTEMPTS: u32 = 3;
/// Environment variable naming the daemon binary to start.
pub const DAEMON_BIN_ENV: &str = "AMANMCP_DAEMON_BIN";

/// Why a daemon call failed.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The daemon could not be reached or started.
    #[error("amanmcpd is not reachable: {0}")]
    Unreachable(String),
    /// The daemon rejected the request (the caller's fault).
    #[error("{0}")]
    Rejected(String),
    /// The daemon failed internally.
    #[error("amanmcpd failed: {0}")]
    Daemon(String),
}

impl From<Status> for LinkError {
    fn from(status: Status) -> Self {
        match status.code() {
            Code::InvalidArgument | Code::NotFound | Code::FailedPrecondition => {
                LinkError::Rejected(status.message().to_string())
            }
            Code::Unavailable | Code::Unknown | Code::Cancelled => {
                // tonic says only "transport error" when the connection drops.
                let message = status.message();
                LinkError::Unreachable(if message.contains("transport error") {
                    "the connection closed (it stopped or crashed; `amanctl logs` shows why)"
                        .to_string()
                } else {
                    message.to_string()
                })
            }
            _ => LinkError::Daemon(status.message().to_string()),
        }
    }
}

/// A lazily connected, self-healing handle to the daemon.
pub struct DaemonLink {
    socket: PathBuf,
    client: Mutex<Option<DaemonClient<Channel>>>,
    /// Start a daemon when none answers (false inside the daemon itself).
    may_start: bool,
    /// Whether the running daemon's version was compared with ours yet.
    version_checked: std::sync::atomic::AtomicBool,
}

impl DaemonLink {
    /// A link to the daemon on `socket`. Connects on first use.
    pub fn new(socket: PathBuf) -> Self {
        DaemonLink {
            socket,
            client: Mutex::new(None),
            may_start: true,
            version_checked: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// A link from inside the daemon to its own socket (the HTTP endpoint): it redials but
    /// never starts another daemon.
    pub fn within_daemon(socket: PathBuf) -> Self {
        DaemonLink {
            may_start: false,
            ..DaemonLink::new(socket)
        }
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Run `call` against the daemon; if the daemon is gone, start it and try again (a few
    /// times: a daemon killed while starting, or while the call was on its way, is started
    /// again rather than reported).
    pub async fn call<T, F, Fut>(&self, call: F) -> Result<T, LinkError>
    where
        F: Fn(DaemonClient<Channel>) -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        let mut client = self.client(false).await?;
        let mut attempt = 1;
        loop {
            match call(client).await.map_err(LinkError::from) {
                Err(LinkError::Unreachable(error)) if attempt < CALL_ATTEMPTS => {
                    tracing::info!(%error, attempt, "daemon unreachable; reconnecting");
                    if attempt > 1 {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    client = self.client(true).await?;
                    attempt += 1;
                }
                outcome => return outcome,
            }
        }
    }

    async fn client(&self, reconnect: bool) -> Result<DaemonClient<Channel>, LinkError> {
        let mut guard = self.client.lock().await;
        if reconnect {
            *guard = None;
        }
        if let Some(client) = guard.as_ref() {
            return Ok(client.clone());
        }
        let client = match endpoint::connect(&self.socket).await {
            Ok(client)
                if self.may_start
                    && !self
                        .version_checked
                        .swap(true, std::sync::atomic::Ordering::Relaxed) =>
            {
                self.replace_if_older(client).await?
            }
            Ok(client) => client,
            Err(e) if !self.may_start => return Err(LinkError::Unreachable(e.to_string())),
            Err(_) => {
                let started = start_daemon(&self.socket)
                    .map_err(|e| LinkError::Unreachable(e.to_string()))?;
                self.wait_for_daemon(started).await?
            }
        };
        *guard = Some(client.clone());
        Ok(client)
    }

    /// The version handshake: a daemon older than this shim (an upgrade installed new
    /// binaries while the old daemon ran) is asked to stop, which it does cleanly (writers
    /// joined, indexes kept), and a new one is started in its place. A daemon that does not
    /// say its version, or is as new, is kept.
    async fn replace_if_older(
        &self,
        mut client: DaemonClient<Channel>,
    ) -> Result<DaemonClient<Channel>, LinkError> {
        let status =
            tokio::time::timeout(Duration::from_secs(5), client.status(pb::StatusRequest {})).await;
        let Ok(Ok(reply)) = status else {
            return Ok(client);
        };
        let reply = reply.into_inner();
        if !older(&reply.version, env!("CARGO_PKG_VERSION")) {
            return Ok(client);
        }
        tracing::warn!(
            daemon = %reply.version,
            shim = env!("CARGO_PKG_VERSION"),
            "the running amanmcpd is older than this shim; restarting it"
        );
        let _ = client.shutdown(pb::ShutdownRequest {}).await;
        drop(client);
        // Its locks go with the process: wait for it to end before starting the new one.
        let deadline = Instant::now() + START_TIMEOUT;
        // SAFETY: kill with signal 0 only checks that the process exists.
        while unsafe { libc::kill(reply.pid as i32, 0) } == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let started =
            start_daemon(&self.socket).map_err(|e| LinkError::Unreachable(e.to_string()))?;
        self.wait_for_daemon(started).await
    }

    /// Wait for the daemon just started to answer. If it exits first with an error, say
    /// why, from its log. If it exits because another daemon held the lock, that one may
    /// have died since (killed while starting, before it listened); if it was killed by a
    /// signal, nothing stands against another try: in both cases another start is tried
    /// after a moment, and it either takes the lock or finds a live daemon that will answer.
    async fn wait_for_daemon(
        &self,
        mut started: Started,
    ) -> Result<DaemonClient<Channel>, LinkError> {
        let deadline = Instant::now() + START_TIMEOUT;
        let mut last_start = Instant::now();
        loop {
            match endpoint::connect(&self.socket).await {
                Ok(client) => return Ok(client),
                Err(e) if Instant::now() >= deadline => {
                    return Err(LinkError::Unreachable(format!(
                        "started amanmcpd but it did not answer within {}s: {e}{}",
                        START_TIMEOUT.as_secs(),
                        started.log_tail()
                    )));
                }
                Err(_) => {
                    // Killed by a signal (no exit code) says nothing against starting it
                    // again; an exit code other than "already running" is its own refusal.
                    match started.exited() {
                        Some(Some(code)) if code != ALREADY_RUNNING_EXIT => {
                            return Err(LinkError::Unreachable(format!(
                                "amanmcpd exited at start (code {code}){}",
                                started.log_tail()
                            )));
                        }
                        Some(_) if last_start.elapsed() > RESTART_PAUSE => {
                            started = start_daemon(&self.socket)
                                .map_err(|e| LinkError::Unreachable(e.to_string()))?;
                            last_start = Instant::now();
                        }
                        _ => {}
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
            }
        }
    }
}

impl DaemonLink {
    /// A full pass of `root` that reads every file and compares its content (loading the
    /// project first if needed); returns the status as it starts.
    pub async fn reread_project(&self, root: &str) -> Result<pb::ProjectStatus, LinkError> {
        self.call(|mut client| {
            let root = root.to_string();
            async move {
                client
                    .reindex(pb::ReindexRequest { root, path: None })
                    .await
                    .map(|r| r.into_inner())
            }
        })
        .await
    }

    /// Load `root` in the daemon (starting a reconcile pass there) and return its status.
    pub async fn open_project(&self, root: &str) -> Result<pb::ProjectStatus, LinkError> {
        self.opened(root, false).await
    }

    /// The status of `root`, loading it if needed, without checking a loaded project
    /// against the disk again (asking must not change the answer).
    pub async fn project_status(&self, root: &str) -> Result<pb::ProjectStatus, LinkError> {
        self.opened(root, true).await
    }

    async fn opened(&self, root: &str, status_only: bool) -> Result<pb::ProjectStatus, LinkError> {
        self.call(|mut client| {
            let root = root.to_string();
            async move {
                client
                    .open_project(pb::OpenProjectRequest { root, status_only })
                    .await
                    .map(|r| r.into_inner())
            }
        })
        .await
    }
}

/// Whether version `a` is older than `b` (dotted numbers compared in order; anything after
/// a `-` or `+` ignored; a part that is not a number counts as 0).
pub fn older(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> {
        v.split(['-', '+'])
            .next()
            .unwrap_or("")
            .split('.')
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    parts(a) < parts(b)
}

/// The wire index state as a word: `indexing`, `ready` or `error`.
pub fn state_name(state: i32) -> &'static str {
    match pb::IndexState::try_from(state) {
        Ok(pb::IndexState::Ready) => "ready",
        Ok(pb::IndexState::Error) => "error",
        _ => "indexing",
    }
}

/// The binary `name` installed beside this executable (amanmcp's binaries are installed
/// together), if it is there.
pub fn installed_beside(name: &str) -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(name)))
        .filter(|p| p.is_file())
}

/// The daemon binary: `$AMANMCP_DAEMON_BIN`, else beside this executable, else from PATH.
pub fn daemon_binary() -> PathBuf {
    if let Some(path) = std::env::var_os(DAEMON_BIN_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    installed_beside("amanmcpd").unwrap_or_else(|| PathBuf::from("amanmcpd"))
}

/// Start `amanmcpd` detached (own process group, no stdin/stdout, stderr to its log).
/// A second daemon racing for the same socket exits on its own; that is fine.
pub fn start_daemon(socket: &Path) -> std::io::Result<Started> {
    let binary = daemon_binary();
    let data_dir = endpoint::data_dir().map_err(std::io::Error::other)?;
    endpoint::create_private_dir(&data_dir)?;
    let log_path = data_dir.join("amanmcpd.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)?;
    let log_start = log.metadata().map_or(0, |m| m.len());
    tracing::info!(binary = %binary.display(), socket = %socket.display(), "starting amanmcpd");
    let mut command = tokio::process::Command::new(&binary);
    command
        .arg("--socket")
        .arg(socket)
        .arg("--data-dir")
        .arg(&data_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .process_group(0)
        .kill_on_drop(false);
    let child = command.spawn().map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot start {}: {e}", binary.display()))
    })?;
    Ok(Started {
        child,
        log: log_path,
        log_start,
    })
}

/// `amanmcpd`'s exit code when another daemon already serves the socket.
const ALREADY_RUNNING_EXIT: i32 = 3;

/// A daemon this shim started, and where its log begins.
pub struct Started {
    child: tokio::process::Child,
    log: PathBuf,
    log_start: u64,
}

impl Started {
    /// `Some(exit code)` once the process has ended.
    fn exited(&mut self) -> Option<Option<i32>> {
        self.child
            .try_wait()
            .ok()
            .flatten()
            .map(|status| status.code())
    }

    /// The last lines this daemon wrote to its log, as `: line; line`, or "".
    fn log_tail(&self) -> String {
        let Ok(text) = std::fs::read(&self.log) else {
            return String::new();
        };
        let start = (self.log_start as usize).min(text.len());
        let text = String::from_utf8_lossy(&text[start..]);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail: Vec<String> = lines[lines.len().saturating_sub(2)..]
            .iter()
            .map(|l| l.chars().take(300).collect())
            .collect();
        if tail.is_empty() {
            String::new()
        } else {
            format!(" (its log {}: {})", self.log.display(), tail.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{LinkError, older};

    #[test]
    fn a_dropped_connection_is_told_in_words_not_as_a_transport_error() {
        let error = LinkError::from(tonic::Status::unavailable("transport error"));
        let text = error.to_string();
        assert!(!text.contains("transport error"), "{text}");
        assert!(
            text.contains("connection closed") && text.contains("amanctl logs"),
            "{text}"
        );
    }

    #[test]
    fn versions_compare_part_by_part() {
        assert!(older("0.1.0", "0.2.0"));
        assert!(older("0.9.9", "0.10.0"));
        assert!(older("0.1.0", "0.1.0.1"));
        assert!(!older("0.1.0", "0.1.0"));
        assert!(!older("1.0.0", "0.9.0"));
        assert!(!older("0.1.0-dev", "0.1.0"));
        assert!(older("", "0.1.0"));
    }
}
