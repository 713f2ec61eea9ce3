//! Live counters of a project, shared by its writer, its indexing passes, its embedding
//! worker and its readers: state, counts, pass statistics, skip reasons, errors, and the
//! signal that wakes the embedding worker.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::files::scan::SkipReason;

/// Where a project's index stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexState {
    /// A pass is running; search answers from what is indexed so far.
    Indexing,
    /// The index matches the files on disk as of the last pass.
    Ready,
    /// The last pass or commit failed (see `last_error`).
    Error,
}

pub(crate) const SKIP_REASONS: [SkipReason; 6] = [
    SkipReason::TooLarge,
    SkipReason::Binary,
    SkipReason::NotUtf8,
    SkipReason::LongLines,
    SkipReason::Secret,
    SkipReason::Unreadable,
];

/// Live counters of a project, shared by the writer, the indexer and readers.
#[derive(Default)]
pub struct Progress {
    pub(crate) state: AtomicU8,
    pub(crate) files: AtomicU64,
    pub(crate) chunks: AtomicU64,
    /// Chunks waiting for a vector.
    pub(crate) pending: AtomicU64,
    pub(crate) index_bytes: AtomicU64,
    pub(crate) files_done: AtomicU64,
    pub(crate) files_total: AtomicU64,
    pub(crate) source_bytes: AtomicU64,
    pub(crate) last_pass_ms: AtomicU64,
    pub(crate) passes: AtomicU64,
    pub(crate) last_pass_changed: AtomicU64,
    pub(crate) last_pass_removed: AtomicU64,
    pub(crate) notice: Mutex<Option<String>>,
    pub(crate) skipped: [AtomicU64; 6],
    pub(crate) last_error: Mutex<Option<String>>,
    /// Commits that failed and dropped what they held (a full disk), counted so the
    /// embedding worker re-sends the vectors it thought were on their way.
    pub(crate) commit_failures: AtomicU64,
    /// Files indexed provisionally (line windows, no symbols): a large first pass's, until
    /// the pass after it chunks them by syntax.
    pub(crate) provisional: AtomicU64,
    /// A pass has ended well since the project was loaded: the index matched the disk.
    matched_once: AtomicBool,
    /// The index was complete when loaded (a pass over every file had ended well in an
    /// earlier run).
    complete_when_loaded: AtomicBool,
}

impl Progress {
    /// Current state.
    pub fn state(&self) -> IndexState {
        match self.state.load(Ordering::Acquire) {
            0 => IndexState::Indexing,
            1 => IndexState::Ready,
            _ => IndexState::Error,
        }
    }

    /// Set the state.
    pub fn set_state(&self, state: IndexState) {
        let v = match state {
            IndexState::Indexing => 0,
            IndexState::Ready => 1,
            IndexState::Error => 2,
        };
        self.state.store(v, Ordering::Release);
    }

    /// A pass starts. Until one has ended well since loading, or after a failure, the index
    /// is `indexing`; a pass over an index that matched the disk stays `ready` unless it finds
    /// something to change ([`Progress::changing`]): results are complete meanwhile.
    pub fn pass_starting(&self) {
        if !self.matched_once.load(Ordering::Acquire) || self.state() == IndexState::Error {
            self.set_state(IndexState::Indexing);
        }
    }

    /// The pass found a file to index again or to drop: results are incomplete until it ends.
    pub fn changing(&self) {
        if self.state() == IndexState::Ready {
            self.set_state(IndexState::Indexing);
        }
    }

    /// A pass ended well: the index matches the disk.
    pub fn matched(&self) {
        self.matched_once.store(true, Ordering::Release);
        self.set_state(IndexState::Ready);
    }

    /// The index was complete when loaded: every file indexed then is searchable.
    pub fn loaded_complete(&self) {
        self.complete_when_loaded.store(true, Ordering::Release);
    }

    /// The index was complete when loaded and no pass has ended since: what is searchable
    /// is whole as of the last run, and the running pass looks for what changed meanwhile.
    pub fn resuming(&self) -> bool {
        self.complete_when_loaded.load(Ordering::Acquire)
            && !self.matched_once.load(Ordering::Acquire)
    }

    /// Record an error and enter the error state.
    pub fn set_error(&self, message: String) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
        self.set_state(IndexState::Error);
    }

    /// Files indexed provisionally, waiting to be chunked by syntax.
    pub fn provisional(&self) -> u64 {
        self.provisional.load(Ordering::Relaxed)
    }

    /// Start a pass over `total` files.
    pub fn begin_pass(&self, total: u64) {
        self.files_total.store(total, Ordering::Relaxed);
        self.files_done.store(0, Ordering::Relaxed);
        for counter in &self.skipped {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// `n` more files of the pass are done.
    pub fn add_done(&self, n: u64) {
        self.files_done.fetch_add(n, Ordering::Relaxed);
    }

    /// A file was skipped.
    pub fn add_skipped(&self, reason: SkipReason) {
        let idx = SKIP_REASONS
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(SKIP_REASONS.len() - 1);
        self.skipped[idx].fetch_add(1, Ordering::Relaxed);
    }

    /// End a pass that re-chunked `changed` files and removed `removed`.
    pub fn end_pass(&self, source_bytes: u64, elapsed_ms: u64, changed: u64, removed: u64) {
        self.last_pass_changed.store(changed, Ordering::Relaxed);
        self.last_pass_removed.store(removed, Ordering::Relaxed);
        self.source_bytes.store(source_bytes, Ordering::Relaxed);
        self.last_pass_ms.store(elapsed_ms, Ordering::Relaxed);
    }

    /// Count a finished pass (successful or not).
    pub(crate) fn pass_finished(&self) {
        self.passes.fetch_add(1, Ordering::Release);
    }
}

/// A wake-up signal: the writer rings it after each commit (new chunks may be pending),
/// the project when it stops.
#[derive(Default)]
pub struct Wake {
    rung: Mutex<bool>,
    cond: Condvar,
}

impl Wake {
    /// Wake the waiter.
    pub fn notify(&self) {
        *self.rung.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cond.notify_all();
    }

    /// Wait until rung or `timeout` passes; clears the signal.
    pub fn wait(&self, timeout: Duration) {
        let guard = self.rung.lock().unwrap_or_else(|e| e.into_inner());
        let (mut guard, _) = self
            .cond
            .wait_timeout_while(guard, timeout, |rung| !*rung)
            .unwrap_or_else(|e| e.into_inner());
        *guard = false;
    }
}

/// Embedding progress of a project, for status.
#[derive(Default)]
pub struct EmbedProgress {
    /// Chunks embedded per second, recently (f64 bits).
    pub(crate) rate_bits: AtomicU64,
    /// The last embedder error, cleared by the next success.
    last_error: Mutex<Option<String>>,
    /// Vectors taken from the daemon's shared cache since the project was loaded.
    pub(crate) shared_hits: AtomicU64,
}

impl EmbedProgress {
    /// Recent chunks per second.
    pub fn rate(&self) -> f64 {
        f64::from_bits(self.rate_bits.load(Ordering::Relaxed))
    }

    /// Vectors taken from the daemon's shared cache since the project was loaded.
    pub fn shared_hits(&self) -> u64 {
        self.shared_hits.load(Ordering::Relaxed)
    }

    /// The last embedder error, if the last attempt failed.
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn set_error(&self, error: Option<String>) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = error;
    }
}
