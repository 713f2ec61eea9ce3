//! `amanmcp-bench`: indexing and search figures for a directory, through the real daemon.
//!
//! Starts its own `amanmcpd` (temp socket and data dir, never the user's), then prints:
//! cold index time, files/s, MB/s, chunks, index bytes (and ratio to source), no-change
//! re-index time, search latency p50/p99 over a fixed query list through gRPC directly and
//! through the real `amanmcp` shim (MCP over stdio), and the shim's spawn -> initialize time.
//!
//!     cargo build --release --workspace
//!     target/release/amanmcp-bench index /path/to/repo [--rounds 5]

mod localize;
mod semble;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use amanmcp_proto::{DaemonClient, endpoint, pb};
use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use tonic::transport::Channel;

/// Benchmarks for amanmcp.
#[derive(Parser)]
#[command(name = "amanmcp-bench")]
struct Args {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Cold index, re-index and search latency on DIR.
    Index {
        /// The directory to index.
        dir: PathBuf,
        /// Rounds over the query list for latency figures.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Extra queries, one per line (added to the built-in list).
        #[arg(long)]
        queries: Option<PathBuf>,
        /// Index DIR itself instead of a temporary copy (skips the file-change figure).
        #[arg(long)]
        in_place: bool,
    },
    /// CoSQA retrieval quality: 500 web queries over 6,267 Python functions (one file each),
    /// through the real daemon. Prints MRR and Recall@1/5/10; fails below `--min-mrr`.
    Cosqa {
        /// The `cosqa` folder of the shared eval data.
        #[arg(long, default_value = "../shared/eval/cosqa")]
        eval: PathBuf,
        /// Exit non-zero if lexical MRR falls below this (a regression guard).
        #[arg(long)]
        min_mrr: Option<f64>,
        /// Exit non-zero if semantic MRR falls below this.
        #[arg(long)]
        min_mrr_semantic: Option<f64>,
        /// Exit non-zero if hybrid MRR falls below this.
        #[arg(long)]
        min_mrr_hybrid: Option<f64>,
        /// Write each query's ranked files per mode to this JSON-lines file (for studying
        /// fusion offline).
        #[arg(long)]
        dump: Option<PathBuf>,
    },
    /// Issue -> code localization (SWE-bench Lite/Verified or the Rust set): for each
    /// issue, the target repository at its base commit (checked out from a bare git
    /// directory, incrementally), indexed by the real daemon; both query forms in every
    /// mode; file Recall@1/5/10, MRR and chunk hit@1/5/10.
    Localize {
        /// The `visible.jsonl` of a set.
        #[arg(long, default_value = "../shared/eval/swebench_loc/visible.jsonl")]
        data: PathBuf,
        /// Where the bare repositories are: `DIR/OWNER+NAME/repo`.
        #[arg(long, default_value = "/work/.mirror")]
        mirrors: PathBuf,
        /// Only issues of repositories whose name contains this.
        #[arg(long)]
        repo: Option<String>,
        /// Per repository, only the N issues whose base commits are closest together.
        #[arg(long)]
        per_repo: Option<usize>,
        /// Modes to run, comma-separated.
        #[arg(long, default_value = "lexical,semantic,hybrid")]
        modes: String,
        /// Score only gold files with this extension (the Rust set: `rs`).
        #[arg(long)]
        only_ext: Option<String>,
        /// Where to check the repositories out (default: a temporary directory).
        #[arg(long)]
        workdir: Option<PathBuf>,
    },
    /// The semble code-search benchmark (`../shared/eval/semble`): NDCG@10 per repository,
    /// category and language in every mode, beside the peers' published figures, through
    /// the real daemon and shim. Materialize the checkouts first with its `materialize.sh`.
    Semble {
        /// The `semble` folder of the shared eval data.
        #[arg(long, default_value = "../shared/eval/semble")]
        eval: PathBuf,
        /// Where `materialize.sh` put the checkouts (its default).
        #[arg(long)]
        checkouts: Option<PathBuf>,
        /// Only these repositories, comma-separated.
        #[arg(long, value_delimiter = ',')]
        repos: Vec<String>,
        /// Modes to run, comma-separated.
        #[arg(long, default_value = "lexical,semantic,hybrid", value_delimiter = ',')]
        modes: Vec<String>,
        /// Results asked of each search.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Write every query's top files per mode to this JSON-lines file.
        #[arg(long)]
        dump: Option<PathBuf>,
        /// Fail when a mode's mean falls below a floor: `hybrid=0.8` (repeatable).
        #[arg(long = "floor", value_parser = parse_floor)]
        floors: Vec<(String, f64)>,
    },
    /// Freshness through the file watcher on a copy of DIR: a saved file until searchable
    /// (p50/p95 over many edits), and a 2,000-file storm until settled.
    Freshness {
        /// The directory to copy and watch.
        dir: PathBuf,
        /// Number of single-file edits to time.
        #[arg(long, default_value_t = 40)]
        edits: usize,
    },
}

/// Queries typical of an agent looking around an unfamiliar repository.
const QUERIES: &[&str] = &[
    "error handling",
    "parse configuration file",
    "read file contents",
    "http request timeout",
    "thread pool spawn",
    "unit test fixture",
    "cache invalidation",
    "serialize to json",
    "command line arguments",
    "logging setup",
    "matrix determinant",
    "simplify expression",
    "async runtime block_on",
    "retry with backoff",
    "permission denied",
    "TODO",
    "__init__",
    "fn main",
    "def test_",
    "where is authentication handled",
];

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    match args.command {
        BenchCommand::Index {
            dir,
            rounds,
            queries,
            in_place,
        } => {
            let mut list: Vec<String> = QUERIES.iter().map(|q| q.to_string()).collect();
            if let Some(path) = queries {
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))?;
                list.extend(
                    text.lines()
                        .filter(|l| !l.trim().is_empty())
                        .map(String::from),
                );
            }
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(bench_index(&dir, rounds, &list, in_place))
        }
        BenchCommand::Cosqa {
            eval,
            min_mrr,
            min_mrr_semantic,
            min_mrr_hybrid,
            dump,
        } => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(bench_cosqa(
                &eval,
                [min_mrr, min_mrr_semantic, min_mrr_hybrid],
                dump.as_deref(),
            ))
        }
        BenchCommand::Localize {
            data,
            mirrors,
            repo,
            per_repo,
            modes,
            only_ext,
            workdir,
        } => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(localize::run(localize::Options {
                data,
                mirrors,
                repo,
                per_repo,
                modes: modes.split(',').map(|m| m.trim().to_string()).collect(),
                only_ext,
                workdir,
            }))
        }
        BenchCommand::Semble {
            eval,
            checkouts,
            repos,
            modes,
            limit,
            dump,
            floors,
        } => {
            let checkouts = match checkouts {
                Some(dir) => dir,
                None => PathBuf::from(std::env::var("HOME").context("HOME")?)
                    .join(".cache/amanmcp-semble"),
            };
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(semble::run(semble::Options {
                eval,
                checkouts,
                repos,
                modes,
                limit,
                dump,
                floors,
            }))
        }
        BenchCommand::Freshness { dir, edits } => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(bench_freshness(&dir, edits))
        }
    }
}

/// `mode=value` of `--floor`.
fn parse_floor(text: &str) -> Result<(String, f64), String> {
    let (mode, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected MODE=VALUE, got {text:?}"))?;
    let value: f64 = value
        .parse()
        .map_err(|e| format!("bad floor {value:?}: {e}"))?;
    Ok((mode.to_string(), value))
}

fn bin(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe.parent().context("exe dir")?.join(name);
    if !path.is_file() {
        bail!("{} not found: build the workspace first", path.display());
    }
    Ok(path)
}

struct Daemon {
    child: Child,
    socket: PathBuf,
    dir: Option<tempfile::TempDir>,
}

impl Daemon {
    /// Stop the daemon, keeping its data directory (for reading the index afterwards).
    fn stop_keeping_data(mut self) -> Option<tempfile::TempDir> {
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

async fn start_daemon() -> anyhow::Result<(Daemon, DaemonClient<Channel>)> {
    start_daemon_with(&[]).await
}

/// Start a private daemon with extra environment variables. Its data directory is a fresh
/// temporary one, or `$AMANMCP_BENCH_DATA_DIR` when set (kept between runs, so repeated
/// quality runs reuse their indexes and vectors).
async fn start_daemon_with(
    vars: &[(&str, &str)],
) -> anyhow::Result<(Daemon, DaemonClient<Channel>)> {
    let dir = tempfile::Builder::new()
        .prefix("amanmcp-bench-")
        .tempdir_in("/tmp")?;
    let socket = dir.path().join("run/amanmcpd.sock");
    let child = Command::new(bin("amanmcpd")?)
        .arg("--socket")
        .arg(&socket)
        .arg("--data-dir")
        .arg(
            std::env::var_os("AMANMCP_BENCH_DATA_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| dir.path().join("data")),
        )
        .env(
            "AMANMCP_LOG",
            std::env::var("AMANMCP_LOG").unwrap_or_else(|_| "warn".into()),
        )
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

async fn project_status(
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

/// Wait until `passes` passes have finished.
async fn wait_for_pass(
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

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn summary(mut samples: Vec<f64>) -> String {
    samples.sort_by(f64::total_cmp);
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (n={})",
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples.last().copied().unwrap_or(f64::NAN),
        samples.len()
    )
}

/// A file to edit for the single-file change figure: the first `.py`/`.rs` file found.
fn first_source_file(dir: &Path) -> Option<PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir).ok()?.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "py" || e == "rs") {
                return Some(path);
            }
        }
    }
    None
}

/// Copy `from` into `to` (regular files and directories only).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
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

async fn bench_index(
    dir: &Path,
    rounds: usize,
    queries: &[String],
    in_place: bool,
) -> anyhow::Result<()> {
    // Work on a private copy unless told otherwise, so the change figures never touch the
    // user's tree.
    let copy = if in_place {
        None
    } else {
        let copy = tempfile::Builder::new()
            .prefix("amanmcp-bench-tree-")
            .tempdir_in("/tmp")?;
        copy_tree(dir, copy.path()).with_context(|| format!("copying {}", dir.display()))?;
        Some(copy)
    };
    let dir = copy.as_ref().map_or(dir, |c| c.path());
    let root = dir
        .canonicalize()
        .with_context(|| format!("{}", dir.display()))?;
    let root_str = root.to_string_lossy().into_owned();
    let (daemon, mut client) = start_daemon().await?;
    println!("amanmcp-bench index {root_str}");

    // Cold index.
    let started = Instant::now();
    client
        .open_project(pb::OpenProjectRequest {
            root: root_str.clone(),
        })
        .await?;
    let mut first_searchable = None;
    let status = loop {
        let status = project_status(&mut client, &root_str).await?;
        if first_searchable.is_none() && status.chunks > 0 {
            first_searchable = Some(started.elapsed());
        }
        if status.passes >= 1 {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let cold = started.elapsed().as_secs_f64();
    let mb = status.source_bytes as f64 / 1e6;
    println!(
        "cold index:        {cold:.2} s wall ({} ms in the daemon's pass)",
        status.last_pass_ms
    );
    if let Some(t) = first_searchable {
        println!("first searchable:  {:.2} s", t.as_secs_f64());
    }
    println!(
        "files:             {} indexed, {} skipped",
        status.files, status.skipped_files
    );
    println!("chunks:            {}", status.chunks);
    println!("source:            {mb:.2} MB");
    println!(
        "throughput:        {:.0} files/s, {:.2} MB/s",
        status.files as f64 / cold,
        mb / cold
    );
    println!(
        "index size:        {:.2} MB ({:.2}x source)",
        status.index_bytes as f64 / 1e6,
        status.index_bytes as f64 / status.source_bytes.max(1) as f64
    );
    if let Some(error) = &status.last_error {
        println!("last error:        {error}");
    }

    // Vectors, computed in the background after the lexical pass.
    let embed_started = Instant::now();
    let with_vectors = wait_for_vectors(&mut client, &root_str, Duration::from_secs(7200)).await?;
    if let Some(v) = &with_vectors.vectors {
        let s = embed_started.elapsed().as_secs_f64();
        println!(
            "vectors:           {} chunks embedded {s:.1} s after the lexical pass ({:.1} chunks/s; {})",
            v.embedded,
            v.embedded as f64 / s.max(1e-3),
            v.embedder
        );
        println!(
            "index size:        {:.2} MB with vectors ({:.2}x source)",
            with_vectors.index_bytes as f64 / 1e6,
            with_vectors.index_bytes as f64 / with_vectors.source_bytes.max(1) as f64
        );
    }

    // No-change re-index.
    let started = Instant::now();
    client
        .open_project(pb::OpenProjectRequest {
            root: root_str.clone(),
        })
        .await?;
    let again = wait_for_pass(&mut client, &root_str, status.passes + 1).await?;
    println!(
        "no-change reindex: {:.3} s wall ({} ms in the daemon's pass)",
        started.elapsed().as_secs_f64(),
        again.last_pass_ms
    );

    // Single-file change: append a new identifier to one file (of a private copy) and time
    // until a search finds it.
    if let Some(copy) = &copy {
        let target = first_source_file(copy.path()).context("no file to change")?;
        let mut samples = Vec::new();
        for round in 0..5 {
            let marker = format!("amanmcpbenchmarker{round}");
            let mut text = std::fs::read_to_string(&target)?;
            text.push_str(&format!("\n# {marker}\n"));
            let passes = project_status(&mut client, &root_str).await?.passes;
            let started = Instant::now();
            std::fs::write(&target, text)?;
            client
                .open_project(pb::OpenProjectRequest {
                    root: root_str.clone(),
                })
                .await?;
            wait_for_pass(&mut client, &root_str, passes + 1).await?;
            let reply = client
                .search(pb::SearchRequest {
                    root: root_str.clone(),
                    query: marker.clone(),
                    limit: 1,
                    mode: "lexical".into(),
                    ..Default::default()
                })
                .await?
                .into_inner();
            if reply.results.is_empty() {
                bail!("{marker} not searchable after the pass");
            }
            samples.push(started.elapsed().as_secs_f64() * 1e3);
        }
        println!("single-file change -> searchable: {}", summary(samples));
    }

    // Search latency over gRPC, per mode. The first round embeds each query (the daemon
    // keeps recent query vectors), so it is reported apart.
    let mut hits = 0usize;
    let modes: &[&str] = if with_vectors.vectors.is_some() {
        &["lexical", "semantic", "hybrid"]
    } else {
        &["lexical"]
    };
    for (mode_idx, mode) in modes.iter().enumerate() {
        let mut first = Vec::new();
        let mut again = Vec::new();
        for round in 0..rounds.max(2) {
            for query in queries {
                // Trailing spaces change nothing but the query-vector cache key: each mode
                // meets each query new in round 0, then repeated.
                let query = format!("{query}{}", " ".repeat(mode_idx));
                let t = Instant::now();
                let reply = client
                    .search(pb::SearchRequest {
                        root: root_str.clone(),
                        query,
                        limit: 10,
                        mode: mode.to_string(),
                        ..Default::default()
                    })
                    .await?
                    .into_inner();
                let ms = t.elapsed().as_secs_f64() * 1e3;
                if round == 0 {
                    first.push(ms);
                } else {
                    again.push(ms);
                }
                hits += reply.results.len();
            }
        }
        println!("search via gRPC, {mode:<8} new query: {}", summary(first));
        println!("search via gRPC, {mode:<8} repeated:  {}", summary(again));
    }

    // Search latency through the real shim (MCP over stdio).
    let (spawn_to_init, shim) = shim_latencies(&daemon.socket, &root, rounds, queries)?;
    println!("search via shim:   {}", summary(shim));
    println!("shim spawn->initialize: {}", summary(spawn_to_init));
    println!(
        "(mean results per query: {:.1})",
        hits as f64 / (rounds.max(2) * queries.len() * modes.len()).max(1) as f64
    );
    let kept = daemon.stop_keeping_data();
    if let (Some(kept), Some(_)) = (&kept, &with_vectors.vectors) {
        ann_recall(&kept.path().join("data"), &root, queries)?;
    }
    Ok(())
}

/// arroy's recall@10 against exact search over the project's real vectors, asking for 100
/// neighbours as search does, at arroy's default search effort and larger ones; queries are
/// the bench queries (embedded by the built-in model) and a sample of chunk vectors.
fn ann_recall(data_dir: &Path, root: &Path, queries: &[String]) -> anyhow::Result<()> {
    let dir = amanmcpd::index::project_dir(data_dir, root).join("lmdb");
    let store = amanmcpd::index::store::Store::open(&dir)?;
    let vectors = store.all_vectors()?;
    if vectors.len() < 20 {
        return Ok(());
    }
    let embedder = amanmcpd::embed::Builtin::new(None, None)?;
    let mut probes: Vec<Vec<f32>> =
        amanmcpd::embed::Embedder::embed(&embedder, queries, amanmcpd::embed::Purpose::Query)?;
    if probes
        .first()
        .is_some_and(|p| p.len() != vectors[0].1.len())
    {
        probes.clear();
    }
    let stride = (vectors.len() / 200).max(1);
    probes.extend(
        vectors
            .iter()
            .step_by(stride)
            .take(200)
            .map(|(_, v)| v.clone()),
    );
    let exact = |probe: &[f32]| -> Vec<u64> {
        let mut scored: Vec<(f32, u64)> = vectors
            .iter()
            .map(|(id, v)| (v.iter().zip(probe).map(|(a, b)| a * b).sum::<f32>(), *id))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().take(10).map(|(_, id)| id).collect()
    };
    let truth: Vec<Vec<u64>> = probes.iter().map(|p| exact(p)).collect();
    for search_k in [0usize, 2000, 10_000] {
        let mut found = 0usize;
        let mut latencies = Vec::new();
        for (probe, truth) in probes.iter().zip(&truth) {
            let t = Instant::now();
            // As search asks: 100 neighbours (arroy's default effort grows with the count).
            let ann = store.nearest(probe, 100, None, search_k)?;
            latencies.push(t.elapsed().as_secs_f64() * 1e3);
            found += ann
                .iter()
                .take(10)
                .filter(|(id, _)| truth.contains(id))
                .count();
        }
        println!(
            "ANN recall@10 (arroy, search_k {}): {:.3} over {} probes, {} vectors; query {}",
            if search_k == 0 {
                "default".to_string()
            } else {
                search_k.to_string()
            },
            found as f64 / (10 * probes.len()) as f64,
            probes.len(),
            vectors.len(),
            summary(latencies)
        );
    }
    Ok(())
}

/// Wait until every chunk has its vector (or fail after `limit`); returns the status.
async fn wait_for_vectors(
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

const MODES: [&str; 3] = ["lexical", "semantic", "hybrid"];

async fn bench_cosqa(
    eval: &Path,
    floors: [Option<f64>; 3],
    dump: Option<&Path>,
) -> anyhow::Result<()> {
    let mut rankings: Vec<serde_json::Map<String, Value>> = Vec::new();
    let map_text = std::fs::read_to_string(eval.join("code_idx_map.txt"))
        .with_context(|| format!("reading {}", eval.join("code_idx_map.txt").display()))?;
    let code_map: serde_json::Map<String, Value> = serde_json::from_str(&map_text)?;
    let queries: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(
        eval.join("cosqa-retrieval-dev-500.json"),
    )?)?;
    let corpus = tempfile::Builder::new()
        .prefix("amanmcp-cosqa-")
        .tempdir_in("/tmp")?;
    for (code, idx) in &code_map {
        let idx = idx.as_u64().context("code index")?;
        std::fs::write(corpus.path().join(format!("f{idx:05}.py")), code)?;
    }
    let root = corpus.path().canonicalize()?.to_string_lossy().into_owned();
    let (daemon, mut client) = start_daemon().await?;
    let started = Instant::now();
    client
        .open_project(pb::OpenProjectRequest { root: root.clone() })
        .await?;
    let status = wait_for_pass(&mut client, &root, 1).await?;
    let lexical_s = started.elapsed().as_secs_f64();
    println!(
        "cosqa: {} functions indexed ({} chunks) in {lexical_s:.1} s; {} queries",
        status.files,
        status.chunks,
        queries.len()
    );
    let status = wait_for_vectors(&mut client, &root, Duration::from_secs(1800)).await?;
    if let Some(v) = &status.vectors {
        let embed_s = started.elapsed().as_secs_f64() - lexical_s;
        println!(
            "cosqa: {} chunks embedded {embed_s:.1} s after the lexical pass ({:.1} chunks/s); model {}",
            v.embedded,
            v.embedded as f64 / embed_s.max(1e-3),
            v.model
        );
    }
    let mut failures = Vec::new();
    for (mode, floor) in MODES.iter().zip(floors) {
        if *mode != "lexical" && status.vectors.is_none() {
            println!("cosqa {mode}: skipped (no embedder)");
            continue;
        }
        let (mut rr, mut r1, mut r5, mut r10) = (0.0, 0.0, 0.0, 0.0);
        let mut latencies = Vec::new();
        for (query_idx, query) in queries.iter().enumerate() {
            let text = query["doc"].as_str().context("doc")?;
            let want = query["retrieval_idx"].as_u64().context("retrieval_idx")?;
            let want_path = format!("f{want:05}.py");
            let t = Instant::now();
            let reply = client
                .search(pb::SearchRequest {
                    root: root.clone(),
                    query: text.to_string(),
                    limit: 100,
                    mode: mode.to_string(),
                    ..Default::default()
                })
                .await?
                .into_inner();
            latencies.push(t.elapsed().as_secs_f64() * 1e3);
            let mut files: Vec<&str> = Vec::new();
            for hit in &reply.results {
                if !files.contains(&hit.path.as_str()) {
                    files.push(&hit.path);
                }
            }
            if let Some(rank) = files.iter().position(|p| *p == want_path) {
                rr += 1.0 / (rank + 1) as f64;
                r1 += f64::from(rank < 1);
                r5 += f64::from(rank < 5);
                r10 += f64::from(rank < 10);
            }
            if dump.is_some() {
                if rankings.len() <= query_idx {
                    rankings.push(serde_json::Map::new());
                }
                let entry = &mut rankings[query_idx];
                entry.insert("query".into(), json!(text));
                entry.insert("want".into(), json!(want_path));
                entry.insert((*mode).into(), json!(files));
            }
        }
        let n = queries.len().max(1) as f64;
        let mrr = rr / n;
        println!(
            "cosqa {mode}: MRR {mrr:.3}  R@1 {:.3}  R@5 {:.3}  R@10 {:.3}  (search {})",
            r1 / n,
            r5 / n,
            r10 / n,
            summary(latencies)
        );
        if let Some(floor) = floor
            && mrr < floor
        {
            failures.push(format!("{mode} MRR {mrr:.3} is below the floor {floor:.3}"));
        }
    }
    drop(daemon);
    if let Some(path) = dump {
        let lines: Vec<String> = rankings
            .into_iter()
            .map(|r| Value::Object(r).to_string())
            .collect();
        std::fs::write(path, lines.join("\n") + "\n")?;
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(())
}

/// Poll `query` until a hit in `path` appears; returns the elapsed time since `since`.
async fn until_found(
    client: &mut DaemonClient<Channel>,
    root: &str,
    query: &str,
    path: &str,
    since: Instant,
) -> anyhow::Result<f64> {
    let deadline = since + Duration::from_secs(60);
    loop {
        let reply = client
            .search(pb::SearchRequest {
                root: root.to_string(),
                query: query.to_string(),
                limit: 5,
                ..Default::default()
            })
            .await?
            .into_inner();
        if reply.results.iter().any(|h| h.path == path) {
            return Ok(since.elapsed().as_secs_f64() * 1e3);
        }
        if Instant::now() > deadline {
            bail!("{query} never became searchable in {path}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn bench_freshness(dir: &Path, edits: usize) -> anyhow::Result<()> {
    let copy = tempfile::Builder::new()
        .prefix("amanmcp-bench-tree-")
        .tempdir_in("/tmp")?;
    copy_tree(dir, copy.path()).with_context(|| format!("copying {}", dir.display()))?;
    let root = copy.path().canonicalize()?;
    let root_str = root.to_string_lossy().into_owned();
    let (daemon, mut client) = start_daemon().await?;
    println!(
        "amanmcp-bench freshness {} (copy of {})",
        root_str,
        dir.display()
    );
    client
        .open_project(pb::OpenProjectRequest {
            root: root_str.clone(),
        })
        .await?;
    let status = wait_for_pass(&mut client, &root_str, 1).await?;
    println!("indexed {} files; watch: {}", status.files, status.watch);

    // Saved files: append a fresh identifier to an existing file, time until searchable.
    let target = first_source_file(&root).context("no file to edit")?;
    let rel = target.strip_prefix(&root)?.to_string_lossy().into_owned();
    let mut samples = Vec::new();
    for i in 0..edits {
        let marker = format!("amanmcpfreshmarker{i}");
        let mut text = std::fs::read_to_string(&target)?;
        text.push_str(&format!("\n# {marker}\n"));
        let started = Instant::now();
        std::fs::write(&target, text)?;
        samples.push(until_found(&mut client, &root_str, &marker, &rel, started).await?);
    }
    println!(
        "saved file -> searchable (lexical): {}",
        summary_p95(samples)
    );

    // A storm: 2,000 new files at once (like a branch switch), until all are searchable.
    let before = project_status(&mut client, &root_str).await?.files;
    let started = Instant::now();
    for i in 0..2000 {
        let dir = root.join(format!("amanmcp_storm/d{}", i % 50));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join(format!("f{i}.py")),
            format!("def storm_{i}():\n    return 'stormmarker{i}'\n"),
        )?;
    }
    let written = started.elapsed().as_secs_f64() * 1e3;
    let last = until_found(
        &mut client,
        &root_str,
        "stormmarker1999",
        "amanmcp_storm/d49/f1999.py",
        started,
    )
    .await?;
    loop {
        let status = project_status(&mut client, &root_str).await?;
        if status.files >= before + 2000 {
            break;
        }
        if started.elapsed() > Duration::from_secs(120) {
            bail!("storm never settled: {} files", status.files);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!(
        "2,000-file storm: written in {written:.0} ms, last file searchable after {last:.0} ms, all {} files indexed after {:.0} ms",
        before + 2000,
        started.elapsed().as_secs_f64() * 1e3
    );
    drop(daemon);
    Ok(())
}

fn summary_p95(mut samples: Vec<f64>) -> String {
    samples.sort_by(f64::total_cmp);
    format!(
        "p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms (n={})",
        percentile(&samples, 0.5),
        percentile(&samples, 0.95),
        samples.last().copied().unwrap_or(f64::NAN),
        samples.len()
    )
}

struct ShimProcess {
    child: Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl ShimProcess {
    fn spawn(socket: &Path, root: &Path) -> anyhow::Result<ShimProcess> {
        let mut child = Command::new(bin("amanmcp")?)
            .args(["serve", "--project"])
            .arg(root)
            .env(endpoint::SOCKET_ENV, socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().context("stdout")?;
        Ok(ShimProcess {
            child,
            lines: BufReader::new(stdout).lines(),
        })
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> anyhow::Result<Value> {
        let stdin = self.child.stdin.as_mut().context("stdin")?;
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )?;
        stdin.flush()?;
        loop {
            let line = self.lines.next().context("shim closed stdout")??;
            let message: Value = serde_json::from_str(&line)?;
            if message["id"] == json!(id) {
                return Ok(message);
            }
        }
    }

    fn initialize(&mut self) -> anyhow::Result<()> {
        self.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        )?;
        let stdin = self.child.stdin.as_mut().context("stdin")?;
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )?;
        Ok(())
    }
}

impl Drop for ShimProcess {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Peak resident memory of a process in MB (Linux `VmHWM`).
fn peak_rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn shim_latencies(
    socket: &Path,
    root: &Path,
    rounds: usize,
    queries: &[String],
) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let mut spawn_to_init = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let mut shim = ShimProcess::spawn(socket, root)?;
        shim.initialize()?;
        spawn_to_init.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut shim = ShimProcess::spawn(socket, root)?;
    shim.initialize()?;
    let after_init = peak_rss_mb(shim.child.id());
    let mut samples = Vec::new();
    let mut id = 1;
    for _ in 0..rounds {
        for query in queries {
            let t = Instant::now();
            let reply = shim.request(
                id,
                "tools/call",
                json!({"name": "search", "arguments": {"query": query, "limit": 10}}),
            )?;
            samples.push(t.elapsed().as_secs_f64() * 1e3);
            if reply["result"]["isError"] == json!(true) {
                bail!("search {query:?} failed: {reply}");
            }
            id += 1;
        }
    }
    if let (Some(init), Some(end)) = (after_init, peak_rss_mb(shim.child.id())) {
        println!(
            "shim peak RSS:     {init:.1} MB after initialize, {end:.1} MB after the searches"
        );
    }
    Ok((spawn_to_init, samples))
}
