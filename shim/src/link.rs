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
                LinkError::Unreachable(status.message().to_string())
            }
            _ => LinkError::Daemon(status.message().to_string()),
        }
    }
}

/// A lazily connected, self-healing handle to the daemon.
pub struct DaemonLink {
    socket: PathBuf,
    client: Mutex<Option<DaemonClient<Channel>>>,
}

impl DaemonLink {
    /// A link to the daemon on `socket`. Connects on first use.
    pub fn new(socket: PathBuf) -> Self {
        DaemonLink {
            socket,
            client: Mutex::new(None),
        }
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Run `call` against the daemon; if the daemon is gone, start it and try once more.
    pub async fn call<T, F, Fut>(&self, call: F) -> Result<T, LinkError>
    where
        F: Fn(DaemonClient<Channel>) -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        let client = self.client(false).await?;
        match call(client).await {
            Ok(value) => Ok(value),
            Err(status) => match LinkError::from(status) {
                LinkError::Unreachable(first) => {
                    tracing::info!(error = %first, "daemon unreachable; reconnecting");
                    let client = self.client(true).await?;
                    call(client).await.map_err(LinkError::from)
                }
                other => Err(other),
            },
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
            Ok(client) => client,
            Err(_) => {
                start_daemon(&self.socket).map_err(|e| LinkError::Unreachable(e.to_string()))?;
                self.wait_for_daemon().await?
            }
        };
        *guard = Some(client.clone());
        Ok(client)
    }

    async fn wait_for_daemon(&self) -> Result<DaemonClient<Channel>, LinkError> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match endpoint::connect(&self.socket).await {
                Ok(client) => return Ok(client),
                Err(e) if Instant::now() >= deadline => {
                    return Err(LinkError::Unreachable(format!(
                        "started amanmcpd but it did not answer within {}s: {e}",
                        START_TIMEOUT.as_secs()
                    )));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }
}

impl DaemonLink {
    /// Load `root` in the daemon (starting a reconcile pass there) and return its status.
    pub async fn open_project(&self, root: &str) -> Result<pb::ProjectStatus, LinkError> {
        self.call(|mut client| {
            let root = root.to_string();
            async move {
                client
                    .open_project(pb::OpenProjectRequest { root })
                    .await
                    .map(|r| r.into_inner())
            }
        })
        .await
    }
}

/// The wire index state as a word: `indexing`, `ready` or `error`.
pub fn state_name(state: i32) -> &'static str {
    match pb::IndexState::try_from(state) {
        Ok(pb::IndexState::Ready) => "ready",
        Ok(pb::IndexState::Error) => "error",
        _ => "indexing",
    }
}

/// The daemon binary: `$AMANMCP_DAEMON_BIN`, else beside this executable, else from PATH.
pub fn daemon_binary() -> PathBuf {
    if let Some(path) = std::env::var_os(DAEMON_BIN_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    if let Some(beside) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("amanmcpd")))
        .filter(|p| p.is_file())
    {
        return beside;
    }
    PathBuf::from("amanmcpd")
}

/// Start `amanmcpd` detached (own process group, no stdin/stdout, stderr to its log).
/// A second daemon racing for the same socket exits on its own; that is fine.
pub fn start_daemon(socket: &Path) -> std::io::Result<()> {
    let binary = daemon_binary();
    let data_dir = endpoint::data_dir().map_err(std::io::Error::other)?;
    endpoint::create_private_dir(&data_dir)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(data_dir.join("amanmcpd.log"))?;
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
    command.spawn().map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot start {}: {e}", binary.display()))
    })?;
    Ok(())
}
