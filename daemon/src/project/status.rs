//! A project's status: a snapshot assembled from its live counters, its watcher and its
//! embedder, for `amanctl status`, `index-status` and every search answer.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use super::Project;
use crate::index::progress::{IndexState, SKIP_REASONS};
use crate::watch::WatchMode;

/// A snapshot of a project's status.
#[derive(Debug, Clone)]
pub struct ProjectStatus {
    /// Canonical root.
    pub root: PathBuf,
    /// State.
    pub state: IndexState,
    /// Files searchable now.
    pub files: u64,
    /// Chunks searchable now.
    pub chunks: u64,
    /// Files done in the current/last pass.
    pub files_done: u64,
    /// Files in the current/last pass.
    pub files_total: u64,
    /// Bytes of the on-disk index.
    pub index_bytes: u64,
    /// Bytes of source indexed.
    pub source_bytes: u64,
    /// Files skipped in the last pass, by reason (non-zero only).
    pub skipped: Vec<(&'static str, u64)>,
    /// Last error, if any.
    pub last_error: Option<String>,
    /// Duration of the last pass.
    pub last_pass_ms: u64,
    /// Passes finished since the project was loaded.
    pub passes: u64,
    /// Files re-chunked by the last pass.
    pub last_pass_changed: u64,
    /// Files removed by the last pass.
    pub last_pass_removed: u64,
    /// Why the index was rebuilt, if it was.
    pub notice: Option<String>,
    /// How changes are noticed.
    pub watch: String,
    /// Directories watched for changes (0 when polling or off).
    pub watched_dirs: u64,
    /// Semantic search, when an embedder is configured.
    pub vectors: Option<VectorStatus>,
    /// Files chunked by lines for now, waiting for the syntax pass.
    pub provisional_files: u64,
    /// The first pass since an index that was complete was loaded is under way: every file
    /// indexed in the last run is searchable, and the pass looks for files changed since.
    pub resuming: bool,
}

/// Where a project's vectors stand.
#[derive(Debug, Clone)]
pub struct VectorStatus {
    /// The embedder's model id.
    pub model: String,
    /// The embedder, in words (backend, URL).
    pub embedder: String,
    /// Chunks with a vector.
    pub embedded: u64,
    /// Chunks waiting for one.
    pub pending: u64,
    /// Chunks embedded per second recently (0 when idle).
    pub rate: f64,
    /// `ok`, `unknown` or `error: ...`.
    pub health: String,
    /// Vectors taken from the daemon's shared cache since the project was loaded.
    pub from_shared_cache: u64,
}

impl Project {
    /// A snapshot of the project's status.
    pub fn status(&self) -> ProjectStatus {
        let p = &self.index.progress;
        let skipped = SKIP_REASONS
            .iter()
            .zip(&p.skipped)
            .map(|(reason, n)| (reason.label(), n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect();
        let pending = p.pending.load(Ordering::Relaxed);
        let chunks = p.chunks.load(Ordering::Relaxed);
        let vectors = self.search.embedding.as_ref().map(|embedding| {
            let health = match self.index.embed_progress.last_error() {
                Some(error) => format!("error: {error}"),
                None => embedding.health.summary(),
            };
            VectorStatus {
                model: embedding.embedder.model_id(),
                embedder: embedding.embedder.describe(),
                embedded: chunks.saturating_sub(pending),
                pending,
                rate: self.index.embed_progress.rate(),
                health,
                from_shared_cache: self.index.embed_progress.shared_hits(),
            }
        });
        // Ready means searchable in full: the lexical index, every file's symbols and the
        // vectors.
        let provisional_files = p.provisional();
        let state = match p.state() {
            IndexState::Ready
                if provisional_files > 0 || vectors.as_ref().is_some_and(|v| v.pending > 0) =>
            {
                IndexState::Indexing
            }
            state => state,
        };
        ProjectStatus {
            root: self.root.clone(),
            state,
            files: p.files.load(Ordering::Relaxed),
            chunks,
            files_done: p.files_done.load(Ordering::Relaxed),
            files_total: p.files_total.load(Ordering::Relaxed),
            index_bytes: p.index_bytes.load(Ordering::Relaxed),
            source_bytes: p.source_bytes.load(Ordering::Relaxed),
            skipped,
            last_error: p
                .last_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            last_pass_ms: p.last_pass_ms.load(Ordering::Relaxed),
            passes: p.passes.load(Ordering::Acquire),
            last_pass_changed: p.last_pass_changed.load(Ordering::Relaxed),
            last_pass_removed: p.last_pass_removed.load(Ordering::Relaxed),
            notice: p.notice.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            watch: match self.watch.mode() {
                WatchMode::Events => format!("events ({} directories)", self.watch.watched()),
                WatchMode::Polling(why) => format!("polling: {why}"),
                WatchMode::Off => "off".into(),
            },
            watched_dirs: match self.watch.mode() {
                WatchMode::Events => self.watch.watched() as u64,
                _ => 0,
            },
            vectors,
            provisional_files,
            resuming: p.resuming(),
        }
    }
}
