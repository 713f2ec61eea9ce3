//! Where the daemon listens and keeps its data, and how clients dial it.
//!
//! Socket: `$AMANMCP_SOCKET`, else `<runtime dir>/amanmcp/amanmcpd.sock` (XDG_RUNTIME_DIR on
//! Linux), else `<tmp>/amanmcp-<uid>/amanmcpd.sock`. The socket's directory must be 0700 and
//! owned by the user. Data: `$AMANMCP_DATA_DIR`, else the per-user data directory.
//! Settings: `$AMANMCP_CONFIG_DIR`, else the per-user configuration directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

use crate::DaemonClient;

/// Environment variable that overrides the socket path.
pub const SOCKET_ENV: &str = "AMANMCP_SOCKET";
/// Environment variable that overrides the data directory.
pub const DATA_DIR_ENV: &str = "AMANMCP_DATA_DIR";
/// Environment variable that overrides the configuration directory.
pub const CONFIG_DIR_ENV: &str = "AMANMCP_CONFIG_DIR";

/// Errors locating or dialling the daemon.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// No home directory could be found to derive default paths from.
    #[error("cannot determine a per-user directory (no HOME?); set {0}")]
    NoUserDir(&'static str),
    /// The daemon is not reachable on the socket.
    #[error("cannot connect to amanmcpd at {path}: {source}")]
    Connect {
        /// The socket path dialled.
        path: PathBuf,
        /// The transport error.
        #[source]
        source: tonic::transport::Error,
    },
}

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "amanmcp")
}

/// The path of the daemon's Unix socket.
///
/// MCP clients often start servers with a reduced environment (no `XDG_RUNTIME_DIR`), so
/// without it we fall back to `/run/user/<uid>` when that exists: a shim and a daemon started
/// by systemd must agree on the socket whatever their environments.
pub fn socket_path() -> Result<PathBuf, EndpointError> {
    if let Some(path) = std::env::var_os(SOCKET_ENV).filter(|p| !p.is_empty()) {
        return Ok(absolute(PathBuf::from(path)));
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            let run_user = PathBuf::from(format!("/run/user/{uid}"));
            run_user.is_dir().then_some(run_user)
        });
    Ok(match runtime {
        Some(dir) => dir.join("amanmcp").join("amanmcpd.sock"),
        None => std::env::temp_dir()
            .join(format!("amanmcp-{uid}"))
            .join("amanmcpd.sock"),
    })
}

/// Create `dir` readable by its owner only (0700; missing parents as usual). An existing
/// directory is left as it is: the daemon checks, and refuses, a shared one.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// The single-instance lock beside `socket`: its file name with `.lock` appended (never a
/// sibling that merely shares its stem), holding the daemon's pid.
pub fn socket_lock_path(socket: &Path) -> PathBuf {
    let mut name = socket.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    socket.with_file_name(name)
}

/// The per-user directory holding every project's index and the daemon log.
pub fn data_dir() -> Result<PathBuf, EndpointError> {
    user_dir(DATA_DIR_ENV, directories::ProjectDirs::data_dir)
}

/// The per-user configuration directory: settings (`amanmcp.toml`) and the HTTP endpoint's
/// token. `$AMANMCP_CONFIG_DIR`, else the platform's (`~/.config/amanmcp` on Linux).
pub fn config_dir() -> Result<PathBuf, EndpointError> {
    user_dir(CONFIG_DIR_ENV, directories::ProjectDirs::config_dir)
}

/// `$env` when set, else the platform's directory `pick` chooses.
fn user_dir(
    env: &'static str,
    pick: fn(&directories::ProjectDirs) -> &Path,
) -> Result<PathBuf, EndpointError> {
    if let Some(path) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return Ok(absolute(PathBuf::from(path)));
    }
    project_dirs()
        .map(|d| pick(&d).to_path_buf())
        .ok_or(EndpointError::NoUserDir(env))
}

fn absolute(path: PathBuf) -> PathBuf {
    std::path::absolute(&path).unwrap_or(path)
}

/// Dial the daemon on `socket`. Fails fast when nothing listens there.
pub async fn connect(socket: &Path) -> Result<DaemonClient<Channel>, EndpointError> {
    let uri = format!("unix://{}", socket.display());
    let connect_err = |source| EndpointError::Connect {
        path: socket.to_path_buf(),
        source,
    };
    let channel = Endpoint::try_from(uri)
        .map_err(connect_err)?
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .map_err(connect_err)?;
    Ok(DaemonClient::new(channel)
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20))
}
