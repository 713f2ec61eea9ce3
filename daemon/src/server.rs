//! The daemon's front door: the private socket directory, the single-instance lock, the Unix
//! socket that serves only its owner (bound here, or passed by systemd's socket activation),
//! and the gRPC server's lifetime.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use amanmcp_proto::DaemonServer;
use tokio::net::UnixListener;
use tokio::sync::Notify;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::UnixListenerStream;

use crate::files::scan::Limits;
use crate::registry::Registry;
use crate::rpc::RpcService;

/// How the daemon is set up.
#[derive(Debug, Clone)]
pub struct Config {
    /// Path of the Unix socket.
    pub socket_path: PathBuf,
    /// Directory holding project indexes.
    pub data_dir: PathBuf,
    /// Indexing limits.
    pub limits: Limits,
    /// File watching.
    pub watch: crate::watch::WatchConfig,
    /// Unload projects idle this long (`None`: never).
    pub idle_unload: Option<std::time::Duration>,
    /// The embedder and fusion settings.
    pub search: crate::search::SearchConfig,
}

/// Why the daemon could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Another daemon holds the lock.
    #[error("amanmcpd is already running (pid {pid}; lock {lock})")]
    AlreadyRunning {
        /// The other daemon's pid, as recorded in the lock file.
        pid: String,
        /// The lock it holds.
        lock: PathBuf,
    },
    /// A private directory (socket or data) belongs to someone else or is shared.
    #[error(
        "directory {0} must be owned by this user and not accessible to others \
         (amanmcpd never changes an existing directory's permissions: chmod 700 it, or \
         choose another path with AMANMCP_SOCKET / AMANMCP_DATA_DIR)"
    )]
    UnsafeDir(PathBuf),
    /// Something that is not a directory is where a private directory should be.
    #[error(
        "{0} exists and is not a directory (choose another path with AMANMCP_SOCKET / AMANMCP_DATA_DIR)"
    )]
    NotADirectory(PathBuf),
    /// Something that is not a socket is where the socket should go.
    #[error("{0} exists and is not a socket; refusing to replace it (set AMANMCP_SOCKET)")]
    NotASocket(PathBuf),
    /// I/O failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A front end started beside the socket (the HTTP endpoint) could not start.
    #[error("{0}")]
    Front(String),
    /// The gRPC server failed.
    #[error("gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ServerError {
    let path = path.to_path_buf();
    move |source| ServerError::Io { what, path, source }
}

/// Create `dir` as 0700 (its parents as usual), or check that an existing one is ours and
/// private. The permissions of a directory that already exists are never changed: a shared
/// one (`/tmp`, a 1777 or group-writable folder) is refused, not taken over.
pub fn prepare_private_dir(dir: &Path) -> Result<(), ServerError> {
    amanmcp_proto::endpoint::create_private_dir(dir).map_err(io_err("cannot create", dir))?;
    let meta = std::fs::metadata(dir).map_err(io_err("cannot stat", dir))?;
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    if !meta.is_dir() {
        return Err(ServerError::NotADirectory(dir.to_path_buf()));
    }
    if meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(ServerError::UnsafeDir(dir.to_path_buf()));
    }
    Ok(())
}

/// Refuse a socket path where something other than a socket (or nothing) is: a stale socket
/// may be replaced, a user's file never.
fn check_socket_path(socket: &Path) -> Result<(), ServerError> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if !meta.file_type().is_socket() => {
            Err(ServerError::NotASocket(socket.to_path_buf()))
        }
        _ => Ok(()),
    }
}

/// The lock that keeps one daemon (and so one writer per index) on a data directory: beside
/// it, not in it (`~/.local/share/.amanmcp.lock`), so deleting the directory under a running
/// daemon does not let a second one start on its new copy. Inside it only when its parent
/// cannot take a file.
fn data_lock_path(data_dir: &Path) -> PathBuf {
    let beside = data_dir
        .parent()
        .zip(data_dir.file_name())
        .map(|(parent, name)| parent.join(format!(".{}.lock", name.to_string_lossy())));
    match beside {
        Some(path)
            if OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .is_ok() =>
        {
            path
        }
        _ => data_dir.join("amanmcpd.lock"),
    }
}

/// Take a single-instance lock at `lock_path`; held for the daemon's life. One lock sits
/// beside the socket (one daemon per socket), one beside the data directory (one daemon,
/// and so one writer, per index: [`data_lock_path`]).
fn take_lock(lock_path: &Path) -> Result<File, ServerError> {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(lock_path)
        .map_err(io_err("cannot open lock", lock_path))?;
    if file.try_lock().is_err() {
        let pid = std::fs::read_to_string(lock_path).unwrap_or_default();
        return Err(ServerError::AlreadyRunning {
            pid: pid.trim().to_string(),
            lock: lock_path.to_path_buf(),
        });
    }
    file.set_len(0)
        .map_err(io_err("cannot write lock", lock_path))?;
    write!(file, "{}", std::process::id()).map_err(io_err("cannot write lock", lock_path))?;
    Ok(file)
}

/// Run the daemon until SIGTERM/SIGINT or a Shutdown RPC.
pub async fn run(config: Config) -> Result<(), ServerError> {
    run_with(config, || Ok(None::<std::future::Ready<()>>)).await
}

/// [`run`], with a front end started once the daemon holds its locks and listens: `front`
/// binds (its error stops the daemon at start) and returns what serves it, which runs until
/// the daemon stops. The daemon knows nothing of what it serves (the binary passes the
/// HTTP endpoint).
pub async fn run_with<F, Fut>(config: Config, front: F) -> Result<(), ServerError>
where
    F: FnOnce() -> Result<Option<Fut>, String>,
    Fut: Future<Output = ()> + Send + 'static,
{
    let socket_dir = config
        .socket_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    prepare_private_dir(&socket_dir)?;
    check_socket_path(&config.socket_path)?;
    let socket_lock = take_lock(&amanmcp_proto::endpoint::socket_lock_path(
        &config.socket_path,
    ))?;
    prepare_private_dir(&config.data_dir)?;
    let _data_lock = take_lock(&data_lock_path(&config.data_dir))?;
    // Vectors shared by every project: a second checkout or worktree embeds only what the
    // first did not. Without it (an unwritable directory), each project embeds alone.
    if let Some(embedding) = &config.search.embedding {
        let dir = config.data_dir.join("embed-cache");
        match crate::embed::cache::SharedCache::open(&dir, None) {
            Ok(cache) => embedding.attach_shared_cache(cache),
            Err(e) => tracing::warn!(error = %e, "no shared embedding cache"),
        }
    }

    let (listener, own_socket) = match activated_listener(&config.socket_path)? {
        Some(listener) => (listener, false),
        None => {
            // We hold the lock, so any socket file left here is stale.
            let _ = std::fs::remove_file(&config.socket_path);
            let listener = UnixListener::bind(&config.socket_path)
                .map_err(io_err("cannot bind", &config.socket_path))?;
            std::fs::set_permissions(&config.socket_path, std::fs::Permissions::from_mode(0o600))
                .map_err(io_err("cannot chmod", &config.socket_path))?;
            (listener, true)
        }
    };

    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let incoming = UnixListenerStream::new(listener).filter(move |conn| match conn {
        Ok(stream) => {
            let ok = stream.peer_cred().is_ok_and(|cred| cred.uid() == uid);
            if !ok {
                tracing::warn!("refused a connection from another user");
            }
            ok
        }
        Err(_) => true,
    });

    let registry = Registry::new(
        config.data_dir.clone(),
        config.limits,
        config.watch,
        config.idle_unload,
        config.search,
    );
    let shutdown = Arc::new(Notify::new());
    let metrics = Arc::new(crate::metrics::Metrics::default());
    let service = RpcService::new(
        registry.clone(),
        metrics.clone(),
        config.socket_path.to_string_lossy().into_owned(),
        shutdown.clone(),
    );
    tracing::info!(socket = %config.socket_path.display(), pid = std::process::id(), "amanmcpd listening");
    let front = match front() {
        Ok(front) => front.map(tokio::spawn),
        Err(message) => {
            if own_socket {
                let _ = std::fs::remove_file(&config.socket_path);
            }
            return Err(ServerError::Front(message));
        }
    };
    let result = tonic::transport::Server::builder()
        .layer(crate::metrics::RpcMetricsLayer(metrics))
        .add_service(
            DaemonServer::new(service)
                .max_decoding_message_size(64 << 20)
                .max_encoding_message_size(64 << 20),
        )
        .serve_with_incoming_shutdown(incoming, shutdown_signal(shutdown))
        .await;
    if let Some(front) = front {
        front.abort();
    }
    // An activated socket belongs to the service manager, which keeps listening on it.
    if own_socket {
        let _ = std::fs::remove_file(&config.socket_path);
    }
    registry.close_unused();
    tracing::info!("amanmcpd stopped");
    // The socket's lock goes with the process: `amanctl stop` waits for it, so it returns
    // once the daemon has exited, not while its runtime's threads still wind down.
    std::mem::forget(socket_lock);
    result.map_err(ServerError::from)
}

/// The listening socket the service manager passed (systemd socket activation: one file
/// descriptor, 3, with `LISTEN_FDS=1` and `LISTEN_PID` naming this process), if any.
fn activated_listener(socket: &Path) -> Result<Option<UnixListener>, ServerError> {
    use std::os::fd::FromRawFd;
    const FIRST_FD: i32 = 3;
    let var = |name| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    if var("LISTEN_FDS") != Some(1) || var("LISTEN_PID") != Some(std::process::id()) {
        return Ok(None);
    }
    // SAFETY: the service manager hands this process descriptor 3 (LISTEN_PID names it), and
    // nothing else in the daemon opens or owns it; fstat only reads into the struct given.
    let is_socket = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(FIRST_FD, &mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFSOCK
    };
    if !is_socket {
        tracing::warn!("LISTEN_FDS set but descriptor 3 is not a socket; binding our own");
        return Ok(None);
    }
    // SAFETY: as above; from here the listener owns descriptor 3.
    let listener = unsafe { std::os::unix::net::UnixListener::from_raw_fd(FIRST_FD) };
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(FIRST_FD, libc::F_SETFD, libc::FD_CLOEXEC) };
    listener
        .set_nonblocking(true)
        .map_err(io_err("cannot use the activated socket", socket))?;
    let listener = UnixListener::from_std(listener)
        .map_err(io_err("cannot use the activated socket", socket))?;
    tracing::info!("listening on the socket the service manager passed (socket activation)");
    Ok(Some(listener))
}

async fn shutdown_signal(shutdown: Arc<Notify>) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let term = async {
        match term.as_mut() {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = term => tracing::info!("SIGTERM"),
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT"),
        _ = shutdown.notified() => {},
    }
}
