//! `amanmcp-bench ann`: approximate nearest neighbours at scale, on real vectors.
//!
//! Cuts the text files under the given directories into windows of lines (as many as
//! `--vectors` asks), embeds them with the configured embedder (the built-in one by
//! default), stores them in a fresh project store exactly as the daemon does (chunk records,
//! then vectors, then the ANN graph), and measures recall@10 against exact search and query
//! time, as `index` does for one project. When the files hold fewer windows than asked,
//! `--mix` fills the rest with windows of real lines drawn at random from the same files
//! (deterministically): vectors with the structure of real code's, in any number.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

use amanmcpd::embed::Purpose;
use amanmcpd::index::store::{ChunkRecord, EmbeddedChunk, FileRecord, Store};
use anyhow::Context;

/// Lines per window.
const WINDOW_LINES: usize = 15;
/// Chunks per stored file record and per write transaction.
const PER_FILE: usize = 1000;
/// Files larger than this are skipped (generated or data).
const MAX_FILE_BYTES: u64 = 512 * 1024;

/// Options of `amanmcp-bench ann`.
#[derive(clap::Args)]
pub struct Options {
    /// Directories whose text files give the windows.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// How many vectors to store.
    #[arg(long, default_value_t = 200_000)]
    vectors: usize,
    /// Stored vectors sampled as probes (besides the bench's queries).
    #[arg(long, default_value_t = 200)]
    probes: usize,
    /// Fill up to `--vectors` with windows of real lines drawn at random.
    #[arg(long)]
    mix: bool,
    /// Keep the store in this directory; when it already holds one, measure that one
    /// instead of embedding and building again (to compare search settings).
    #[arg(long)]
    keep: Option<PathBuf>,
}

/// Run the benchmark.
pub fn run(options: Options) -> anyhow::Result<()> {
    let queries: Vec<String> = crate::index::QUERIES
        .iter()
        .map(|q| q.to_string())
        .collect();
    if let Some(keep) = &options.keep
        && keep.join("data.mdb").exists()
    {
        let store = Store::open(keep)?;
        println!("ann: the store kept in {}", keep.display());
        return crate::index::store_recall(&store, &queries, options.probes);
    }
    let mut texts = windows(&options.dirs, options.vectors)?;
    let real = texts.len();
    if options.mix && real < options.vectors {
        mix(&mut texts, options.vectors);
        println!(
            "ann: {real} windows from the files, {} mixed from their lines",
            texts.len() - real
        );
    }
    anyhow::ensure!(
        !texts.is_empty(),
        "no text files under the given directories"
    );
    let embedder = amanmcpd::embed::EmbedConfig::from_env()?
        .build()?
        .context("AMANMCP_EMBEDDER=off: nothing to measure")?;
    let started = Instant::now();
    let mut vectors = Vec::with_capacity(texts.len());
    for batch in texts.chunks(embedder.batch_size().max(1)) {
        vectors.extend(embedder.embed(batch, Purpose::Document)?);
    }
    let embed_secs = started.elapsed().as_secs_f64();
    println!(
        "ann: {} windows of {WINDOW_LINES} lines embedded in {embed_secs:.1} s ({:.0}/s; {})",
        texts.len(),
        texts.len() as f64 / embed_secs,
        embedder.describe()
    );

    let temp = tempfile::tempdir()?;
    let dir = options
        .keep
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    let store = Store::open(&dir)?;
    let started = Instant::now();
    for (n, group) in texts.chunks(PER_FILE).enumerate() {
        let first = (n * PER_FILE) as u64 + 1;
        let path = format!("f{n}.txt");
        let chunks: Vec<(u64, ChunkRecord)> = group
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let record = ChunkRecord {
                    path: path.clone(),
                    start_line: i as u32 + 1,
                    end_line: i as u32 + 1,
                    symbol: None,
                    kind: None,
                    hash: text_hash(text),
                };
                (first + i as u64, record)
            })
            .collect();
        let file = FileRecord {
            size: 1,
            mtime_ns: 1,
            hash: n as u64,
            language: "text".into(),
            chunk_ids: chunks.iter().map(|(id, _)| *id).collect(),
        };
        let items: Vec<EmbeddedChunk> = chunks
            .iter()
            .map(|(id, record)| EmbeddedChunk {
                chunk_id: *id,
                hash: record.hash,
                vector: vectors[(*id - 1) as usize].clone(),
            })
            .collect();
        let mut txn = store.write_txn()?;
        txn.put_file(&path, &file, &chunks, &[], &Default::default())?;
        txn.put_vectors(&items)?;
        txn.commit(first + group.len() as u64)?;
    }
    let stored_secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut txn = store.write_txn()?;
    txn.build_vectors(42)?;
    txn.commit(texts.len() as u64 + 1)?;
    println!(
        "ann: stored in {stored_secs:.1} s; the ANN graph built in {:.1} s; LMDB {:.1} MB",
        started.elapsed().as_secs_f64(),
        amanmcpd::index::lexical::dir_size(&dir) as f64 / 1e6
    );
    crate::index::store_recall(&store, &queries, options.probes)
}

/// Add windows of `WINDOW_LINES` lines drawn at random (a fixed-seed generator) from the
/// lines of `texts` until there are `limit`.
fn mix(texts: &mut Vec<String>, limit: usize) {
    let lines: Vec<String> = texts
        .iter()
        .flat_map(|t| t.lines())
        .filter(|l| l.trim().len() >= 8)
        .map(str::to_string)
        .collect();
    if lines.is_empty() {
        return;
    }
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    while texts.len() < limit {
        let window: Vec<&str> = (0..WINDOW_LINES)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                lines[(state >> 33) as usize % lines.len()].as_str()
            })
            .collect();
        texts.push(window.join("\n"));
    }
}

fn text_hash(text: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Up to `limit` windows of text from the files under `dirs`, in a stable order.
fn windows(dirs: &[PathBuf], limit: usize) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    for dir in dirs {
        collect_files(dir, &mut files)?;
    }
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        for window in lines.chunks(WINDOW_LINES) {
            let window = window.join("\n");
            if window.trim().len() < 40 {
                continue;
            }
            out.push(window);
            if out.len() == limit {
                return Ok(out);
            }
        }
    }
    Ok(out)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if kind.is_dir() {
            collect_files(&entry.path(), out)?;
        } else if kind.is_file() && entry.metadata()?.len() <= MAX_FILE_BYTES {
            out.push(entry.path());
        }
    }
    Ok(())
}
