//! `amanmcpd`: the amanmcp per-user daemon.

use std::path::PathBuf;
use std::process::ExitCode;

use amanmcpd::files::scan::Limits;
use amanmcpd::server::{self, Config, ServerError};
use clap::Parser;

/// Indexing allocates heavily from several threads at once (tree-sitter nodes, tokens);
/// glibc malloc took a fifth of the CPU of a cold index.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The amanmcp daemon: indexes projects and serves code search over a Unix socket.
#[derive(Parser)]
#[command(
    name = "amanmcpd",
    version,
    about = "amanmcpd: the per-user daemon that owns project indexes and serves search over gRPC on a Unix socket."
)]
struct Args {
    /// Unix socket path (default: $AMANMCP_SOCKET or the per-user runtime directory).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Directory for indexes (default: $AMANMCP_DATA_DIR or the per-user data directory).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Serve MCP over Streamable HTTP on this address (loopback only), e.g. 127.0.0.1:8765.
    /// Default: `[http] listen` in amanmcp.toml (`amanctl http enable`), else off.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// Do not serve HTTP, whatever the settings say.
    #[arg(long, conflicts_with = "http")]
    no_http: bool,
    /// Let the HTTP endpoint listen on a non-loopback address and answer any Host (the token
    /// is still required).
    #[arg(long)]
    http_allow_remote: bool,
    /// Check the index in this project directory and exit (the daemon runs this in a child
    /// process before opening an index, so damaged files never take the daemon down).
    #[arg(long = "check-index", value_name = "DIR", hide = true)]
    check_index: Option<PathBuf>,
}

/// mimalloc's `mi_option_purge_delay`: 15 in its `mimalloc.h`, v2 and v3 alike (the bindings
/// name it in neither).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // Freed memory goes back to the system at once, not 10 ms later: after a pass or a
    // batch of vectors the daemon stays ~50 MB smaller (a 2,000-file tree: 283 -> 233 MB
    // of its own), with no slower pass measured.
    // SAFETY: setting an option has no preconditions; mimalloc reads it on each purge.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    // Tree-sitter is C and allocates through glibc's malloc unless told otherwise: its
    // parsers and trees took 7% of a cold pass's CPU in glibc (sympy) and left tens of MB in
    // glibc's arenas after it. They go to mimalloc too.
    // SAFETY: this runs before any thread starts and before any tree-sitter object exists,
    // so nothing allocated by one allocator is ever freed by the other; mimalloc's functions
    // are thread-safe and have the C signatures tree-sitter expects.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: libmimalloc_sys::mi_malloc,
            calloc: libmimalloc_sys::mi_calloc,
            realloc: libmimalloc_sys::mi_realloc,
            free: libmimalloc_sys::mi_free,
        }))
    };
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AMANMCP_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    if let Some(dir) = &args.check_index {
        return match amanmcpd::index::health::check(dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(reason) => {
                eprintln!("{reason}");
                ExitCode::FAILURE
            }
        };
    }
    match std::env::current_exe() {
        Ok(exe) => amanmcpd::index::health::set_checker(exe),
        Err(e) => {
            tracing::warn!(error = %e, "cannot find the daemon's binary; indexes are not checked before opening")
        }
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let already = e
                .downcast_ref::<ServerError>()
                .is_some_and(|e| matches!(e, ServerError::AlreadyRunning { .. }));
            eprintln!("amanmcpd: {e:#}");
            if already {
                ExitCode::from(3)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let socket_path = match args.socket.clone() {
        Some(path) => std::path::absolute(path)?,
        None => amanmcp_proto::endpoint::socket_path()?,
    };
    let data_dir = match args.data_dir.clone() {
        Some(path) => std::path::absolute(path)?,
        None => amanmcp_proto::endpoint::data_dir()?,
    };
    let http = http_options(&args, &socket_path)?;
    raise_fd_limit();
    let idle_secs: u64 = std::env::var("AMANMCP_IDLE_UNLOAD_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30 * 60);
    // TLS for https embedding servers: ring, the provider compiled in.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let embed_config = amanmcpd::embed::EmbedConfig::from_env()?;
    let embedding = embed_config.build()?.map(|embedder| {
        tracing::info!(embedder = %embedder.describe(), model = %embedder.model_id(), "semantic search on");
        std::sync::Arc::new(amanmcpd::embed::Embedding::new(embedder))
    });
    if embedding.is_none() {
        tracing::info!("semantic search off (AMANMCP_EMBEDDER=off)");
    }
    let ann_effort = std::env::var("AMANMCP_ANN_EFFORT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let config = Config {
        socket_path,
        data_dir,
        limits: Limits::from_env(),
        watch: amanmcpd::watch::WatchConfig::from_env(),
        idle_unload: (idle_secs > 0).then(|| std::time::Duration::from_secs(idle_secs)),
        search: amanmcpd::search::SearchConfig {
            embedding,
            fusion: amanmcpd::search::fusion::Fusion::from_env(),
            ann_effort,
        },
    };
    // Requests run on blocking threads; more of them than a few per core only adds memory
    // (each thread keeps its allocator's own heap), not speed.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads((cores * 4).max(8))
        .build()?;
    runtime.block_on(server::run_with(config, || match &http {
        Some(options) => amanmcp::http::bind(options)
            .map(Some)
            .map_err(|e| e.to_string()),
        None => Ok(None),
    }))?;
    Ok(())
}

/// The HTTP endpoint's options: `--http`, else the settings file, unless `--no-http`.
fn http_options(
    args: &Args,
    socket: &std::path::Path,
) -> anyhow::Result<Option<amanmcp::http::HttpOptions>> {
    if args.no_http {
        return Ok(None);
    }
    let config_dir = amanmcp_proto::endpoint::config_dir()?;
    let listen = match args.http {
        Some(addr) => Some(addr),
        None => amanmcp::http::settings::configured_listen(&config_dir)?,
    };
    Ok(listen.map(|listen| amanmcp::http::HttpOptions {
        listen,
        allow_remote: args.http_allow_remote,
        socket: socket.to_path_buf(),
        config_dir,
    }))
}

/// Raise the soft limit on open files to the hard limit: every project holds LMDB and tantivy
/// files, and every shim a socket. Logged either way, so a low limit is visible.
fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed to them.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return;
        }
        let before = limit.rlim_cur;
        // An unlimited hard limit cannot be the soft one: the kernel caps it at nr_open.
        let most = if limit.rlim_max == libc::RLIM_INFINITY {
            std::fs::read_to_string("/proc/sys/fs/nr_open")
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(1 << 20)
        } else {
            limit.rlim_max
        };
        if limit.rlim_cur < most {
            limit.rlim_cur = most;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                limit.rlim_cur = before;
            }
        }
        tracing::info!(before, now = limit.rlim_cur, "open files limit");
    }
}
