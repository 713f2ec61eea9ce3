//! The daemon's memory budget (`AMANMCP_MEMORY_MB`, 1,024 by default): the one setting that
//! sizes what would otherwise grow with the work, so the daemon's own memory (its heaps, not
//! the index files it maps, which the kernel takes back when it needs them) does not grow
//! with a project's size. Each share is stated here; what uses it says so. Not yet under it:
//! fixed costs (parsers, threads, the built-in model's weights, ~100 MB while indexing) and
//! the writer's queue, bounded in operations, not bytes (very wide vectors overran a 160 MB
//! budget: bench/README.md). The lowest layer: it reads the setting, nothing else.

use std::sync::OnceLock;

/// The budget when `AMANMCP_MEMORY_MB` is not set, in MB.
pub const DEFAULT_MB: usize = 1024;

/// The smallest budget honoured, in MB: below it the shares' floors (tantivy's least
/// indexing heap, the model's weights) exceed it.
pub const MIN_MB: usize = 64;

/// tantivy's least indexing heap per thread.
const TANTIVY_MIN_HEAP: usize = 15 << 20;

/// The daemon's budget (`AMANMCP_MEMORY_MB`, at least [`MIN_MB`]).
pub fn budget() -> Budget {
    static MB: OnceLock<usize> = OnceLock::new();
    Budget::of(*MB.get_or_init(|| {
        std::env::var("AMANMCP_MEMORY_MB")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(DEFAULT_MB)
    }))
}

/// A memory budget and its shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    mb: usize,
}

impl Budget {
    /// A budget of `mb` MB (at least [`MIN_MB`]).
    pub fn of(mb: usize) -> Budget {
        Budget { mb: mb.max(MIN_MB) }
    }

    /// The budget in MB.
    pub fn mb(self) -> usize {
        self.mb
    }

    /// Word vectors the built-in embedder holds: 5/32 of the budget (160 MB by default).
    pub fn word_bytes(self) -> usize {
        self.mb * 5 / 32 * 1_000_000
    }

    /// tantivy's indexing heap for a project's writer: a sixteenth of the budget (64 MB by
    /// default), at least the 15 MB per indexing thread tantivy requires.
    pub fn writer_heap_bytes(self, threads: usize) -> usize {
        ((self.mb << 20) / 16).max(TANTIVY_MIN_HEAP * threads.max(1))
    }

    /// Files a project's writer stages before it commits: 2,000 by default, in proportion
    /// to the budget, at least 100 (their chunks' text and records wait in memory until
    /// then).
    pub fn staged_files(self) -> usize {
        (self.mb * 2000 / DEFAULT_MB).max(100)
    }

    /// Bytes of vectors a project's writer stages before it commits: a thirty-second of the
    /// budget (32 MB by default; 80,000 vectors of 384 dimensions), at least 4 MB.
    pub fn staged_vector_bytes(self) -> usize {
        ((self.mb << 20) / 32).max(4 << 20)
    }

    /// Vectors one ANN graph holds before the next is opened: 128 per MB of the budget
    /// (131,072 by default), at least 4,096. A graph's build holds its links in memory and
    /// dirties every page of it in one transaction.
    pub fn graph_vectors(self) -> u64 {
        (self.mb as u64 * 128).max(4096)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_budget_gives_the_measured_defaults_and_a_small_one_less() {
        let default = Budget::of(DEFAULT_MB);
        assert_eq!(default.word_bytes(), 160_000_000);
        assert_eq!(default.writer_heap_bytes(1), 64 << 20);
        assert_eq!(default.staged_files(), 2000);
        assert_eq!(default.staged_vector_bytes(), 32 << 20);
        assert_eq!(default.graph_vectors(), 131_072);
        let small = Budget::of(128);
        assert_eq!(small.word_bytes(), 20_000_000);
        assert_eq!(small.writer_heap_bytes(1), 15 << 20);
        assert_eq!(small.writer_heap_bytes(2), 30 << 20);
        assert_eq!(small.staged_files(), 250);
        assert_eq!(small.staged_vector_bytes(), 4 << 20);
        assert_eq!(small.graph_vectors(), 16_384);
        assert_eq!(Budget::of(1), Budget::of(MIN_MB));
    }
}
