//! The benchmark's world: a private daemon (its own socket and data directory), a shim
//! spoken to over stdio, waiting for passes and vectors, copies of trees, and the summary
//! statistics every figure is printed with.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use amanmcp_proto::{DaemonClient, endpoint, pb};
pub use amanmcp_tests::{Shim, bin};
use anyhow::{Context, bail};
use tonic::transport::Channel;

pub struct Daemon {
    pub child: Child,
    pub socket: PathBuf,
    dir: Option<tempfile::TempDir>,
}

impl Daemon {
    /// Stop the daemon, keeping its data directory (for reading the index afterwards).
    pub fn stop_keeping_data(mut self) -> Option<tempfile::TempDir> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.dir.take()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn start_daemon() -> anyhow::Result<(Daemon, DaemonClient<Channel>)> {
    start_daemon_with(&[]).await
}

/// Start a private daemon with extra environment variables. Its data directory is a fresh
/// temporary one, or `$AMANMCP_BENCH_DATA_DIR` when set (kept between runs, so repeated
/// quality runs reuse their indexes and vectors).
pub async fn start_daemon_with(
    vars: &[(&str, &str)],
) -> anyhow::Result<(Daemon, DaemonClient<Channel>)> {
    start_daemon_on(None, vars).await
}

/// Start a private daemon on `data_dir` (default: as [`start_daemon_with`]).
pub async fn start_daemon_on(
    data_dir: Option<&Path>,
    vars: &[(&str, &str)],
) -> anyhow::Result<(Daemon, DaemonClient<Channel>)> {
    let dir = tempfile::Builder::new()
        .prefix("amanmcp-bench-")
        .tempdir_in("/tmp")?;
    let socket = dir.path().join("run/amanmcpd.sock");
    let data_dir = match data_dir {
        Some(dir) => dir.to_path_buf(),
        None => std::env::var_os("AMANMCP_BENCH_DATA_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| dir.path().join("data")),
    };
    let child = Command::new(bin("amanmcpd"))
        .arg("--socket")
        .arg(&socket)
        .arg("--data-dir")
        .arg(data_dir)
        .env(
            "AMANMCP_LOG",
            std::env::var("AMANMCP_LOG").unwrap_or_else(|_| "warn".into()),
        )
        // The word table would take a core whenever the daemon is idle, between the timed
        // steps; `index --word-table` fills it before the daemon starts instead.
        .env("AMANMCP_WORD_TABLE", "off")
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()?;
    let daemon = Daemon {
        child,
        socket: socket.clone(),
        dir: Some(dir),
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match endpoint::connect(&socket).await {
            Ok(client) => return Ok((daemon, client)),
            Err(e) if Instant::now() > deadline => return Err(e.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

pub async fn project_status(
    client: &mut DaemonClient<Channel>,
    root: &str,
) -> anyhow::Result<pb::ProjectStatus> {
    let reply = client.status(pb::StatusRequest {}).await?.into_inner();
    reply
        .projects
        .into_iter()
        .find(|p| p.root == root)
        .context("project not loaded")
}

/// Ask the daemon to open (and index) the project at `root`.
pub async fn open_project(client: &mut DaemonClient<Channel>, root: &str) -> anyhow::Result<()> {
    client
        .open_project(pb::OpenProjectRequest {
            root: root.to_string(),
            ..Default::default()
        })
        .await?;
    Ok(())
}

/// Wait until `passes` passes have finished.
pub async fn wait_for_pass(
    client: &mut DaemonClient<Channel>,
    root: &str,
    passes: u64,
) -> anyhow::Result<pb::ProjectStatus> {
    loop {
        let status = project_status(client, root).await?;
        if status.passes >= passes {
            return Ok(status);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

pub fn summary(mut samples: Vec<f64>) -> String {
    samples.sort_by(f64::total_cmp);
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (n={})",
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples.last().copied().unwrap_or(f64::NAN),
        samples.len()
    )
}

/// Source files under `dir` (hidden entries skipped), in walk order: directories are
/// visited last-pushed first, entries sorted by name.
pub fn source_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                [
                    "py", "rs", "go", "js", "ts", "java", "c", "cpp", "rb", "php", "kt", "cs",
                ]
                .contains(&e)
            }) {
                out.push(path);
            }
        }
    }
    out
}

/// A file to edit for the single-file change figure: the first source file found.
pub fn first_source_file(dir: &Path) -> Option<PathBuf> {
    source_files(dir).into_iter().next()
}

/// Copy `from` into `to` (regular files and directories only).
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Wait until every chunk has its vector (or fail after `limit`); returns the status.
pub async fn wait_for_vectors(
    client: &mut DaemonClient<Channel>,
    root: &str,
    limit: Duration,
) -> anyhow::Result<pb::ProjectStatus> {
    let started = Instant::now();
    loop {
        let status = project_status(client, root).await?;
        match &status.vectors {
            None => return Ok(status),
            Some(v) if v.pending == 0 && status.passes > 0 => return Ok(status),
            Some(v) if started.elapsed() > limit => {
                bail!(
                    "vectors incomplete after {limit:?}: {} pending ({})",
                    v.pending,
                    v.health
                )
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

pub fn summary_p95(mut samples: Vec<f64>) -> String {
    samples.sort_by(f64::total_cmp);
    format!(
        "p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms (n={})",
        percentile(&samples, 0.5),
        percentile(&samples, 0.95),
        samples.last().copied().unwrap_or(f64::NAN),
        samples.len()
    )
}

/// A shim on the daemon at `socket`, serving the project at `root` (the shared test client,
/// so the bench and the end-to-end tests speak MCP the same way).
pub fn spawn_shim(socket: &Path, root: &Path) -> Shim {
    let mut command = Command::new(bin("amanmcp"));
    command
        .args(["serve", "--project"])
        .arg(root)
        .env(endpoint::SOCKET_ENV, socket)
        .stderr(Stdio::null());
    Shim::spawn(command)
}

/// Peak resident memory of a process in MB (Linux `VmHWM`).
pub fn peak_rss_mb(pid: u32) -> Option<f64> {
    status_mb(pid, "VmHWM:")
}

/// Resident memory of a process now, in MB (Linux `VmRSS`): its own memory and the pages
/// of the files it maps (LMDB, tantivy), which the kernel reclaims when it needs them.
pub fn rss_mb(pid: u32) -> Option<f64> {
    status_mb(pid, "VmRSS:")
}

/// The process's own resident memory in MB (Linux `RssAnon`: heaps, not mapped files).
pub fn anon_rss_mb(pid: u32) -> Option<f64> {
    status_mb(pid, "RssAnon:")
}

fn status_mb(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// A temporary directory under /tmp only its owner can read: the daemon refuses a data
/// directory others can read.
pub fn private_dir(prefix: &str) -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix(prefix).tempdir_in("/tmp")?;
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )?;
    Ok(dir)
}

/// A private data directory for a fresh daemon; with `word_table`, its shared cache holds
/// the built-in embedder's word table already (what a daemon fills once per machine).
/// Returns it and how many words the table took (0 without it).
pub fn private_data_dir(word_table: bool) -> anyhow::Result<(tempfile::TempDir, usize)> {
    let data = private_dir("amanmcp-bench-data-")?;
    let mut computed = 0;
    if word_table {
        let words = amanmcpd::embed::words::Words::new(None)?;
        let cache =
            amanmcpd::embed::cache::SharedCache::open(&data.path().join("embed-cache"), None)?;
        computed = words.fill_table(&cache)?;
    }
    Ok((data, computed))
}
