//! `amanmcp-bench`: indexing and search figures for a directory, through the real daemon.
//!
//! Starts its own `amanmcpd` (temp socket and data dir, never the user's), then prints:
//! cold index time, files/s, MB/s, chunks, index bytes (and ratio to source), no-change
//! re-index time, search latency p50/p99 over a fixed query list through gRPC directly and
//! through the real `amanmcp` shim (MCP over stdio), and the shim's spawn -> initialize time.
//!
//!     cargo build --release --workspace
//!     target/release/amanmcp-bench index /path/to/repo [--rounds 5]

mod ann;
mod cosqa;
mod cv;
mod freshness;
mod graph;
mod index;
mod localize;
mod scale;
mod semble;
mod stress;
mod tokens;
mod worktrees;
mod world;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

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
        /// Fill the built-in embedder's word table first (what a daemon does once per
        /// machine while idle), so the vectors figure is that of a machine that has it.
        #[arg(long)]
        word_table: bool,
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
    Localize(localize::Options),
    /// The semble code-search benchmark (`../shared/eval/semble`): NDCG@10 per repository,
    /// category and language in every mode, beside the peers' published figures, through
    /// the real daemon and shim. Materialize the checkouts first with its `materialize.sh`.
    Semble(semble::Options),
    /// The code graph's callers against compiler-grade gold edges (`bench/graph/gold`):
    /// precision, recall, ambiguous share, false-safe rate and latency per repository.
    Graph(graph::Options),
    /// Leave-one-repository-out cross-validation over `semble --dump` runs, one per setting
    /// of the ranking's parameters: the CV figure beside the in-sample one.
    Cv(cv::Options),
    /// Approximate nearest neighbours at scale: windows of the text files under DIRS,
    /// embedded and stored as the daemon does; recall@10 against exact search and query time.
    Ann(ann::Options),
    /// Many shims at once on one daemon, every answer checked; then `kill -9` rounds during
    /// updates and embedding, every restart verified.
    Stress(stress::Options),
    /// Two copies of DIR in one daemon, one after the other (two checkouts or worktrees of a
    /// repository): lexical time, time to complete vectors, and the share of the second's
    /// vectors taken from the daemon's shared embedding cache.
    Worktrees {
        /// The directory to copy twice.
        dir: PathBuf,
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
    /// Growth with size: a monorepo built from the given checkouts (source files taken in
    /// turn from each, then copies), indexed at each size by a fresh daemon: lexical ready,
    /// vectors complete, peak/steady/idle RSS, index size, query latency, saved-file
    /// freshness.
    Scale {
        /// Checkouts to take source files from.
        #[arg(required = true)]
        sources: Vec<PathBuf>,
        /// Monorepo sizes, in files.
        #[arg(long, value_delimiter = ',', default_values_t = [2000, 5000, 10000, 20000])]
        sizes: Vec<usize>,
        /// Fill the built-in embedder's word table before each daemon starts.
        #[arg(long)]
        word_table: bool,
    },
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    match args.command {
        BenchCommand::Index {
            dir,
            rounds,
            queries,
            in_place,
            word_table,
        } => {
            let mut list: Vec<String> = index::QUERIES.iter().map(|q| q.to_string()).collect();
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
            runtime.block_on(index::bench_index(
                &dir, rounds, &list, in_place, word_table,
            ))
        }
        BenchCommand::Cosqa {
            eval,
            min_mrr,
            min_mrr_semantic,
            min_mrr_hybrid,
            dump,
        } => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(cosqa::bench_cosqa(
                &eval,
                [min_mrr, min_mrr_semantic, min_mrr_hybrid],
                dump.as_deref(),
            ))
        }
        BenchCommand::Ann(options) => ann::run(options),
        BenchCommand::Localize(options) => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(localize::run(options))
        }
        BenchCommand::Semble(options) => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(semble::run(options))
        }
        BenchCommand::Cv(options) => cv::run(options),
        BenchCommand::Graph(options) => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(graph::run(options))
        }
        BenchCommand::Stress(options) => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(stress::run(options))
        }
        BenchCommand::Worktrees { dir } => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(worktrees::bench_worktrees(&dir))
        }
        BenchCommand::Freshness { dir, edits } => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(freshness::bench_freshness(&dir, edits))
        }
        BenchCommand::Scale {
            sources,
            sizes,
            word_table,
        } => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(scale::bench_scale(&sources, &sizes, word_table))
        }
    }
}
