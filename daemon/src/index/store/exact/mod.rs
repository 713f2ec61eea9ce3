//! Nearest vectors without a graph, for a project whose vectors fit in memory: every
//! chunk's vector held in memory and scanned in full. A small project's copy holds the int8
//! vectors as `embed_cache` keeps them and finds the true nearest (one pass costs less than
//! the graph's walk and the two reads per candidate its re-scoring needs). A larger one's
//! holds only their sign bits (an eighth of a byte a dimension): the scan orders every
//! chunk by them, and the best few are re-scored from the store, as the graph's candidates
//! are. Linking a graph costs the writer about a millisecond of CPU a vector (20,000 files:
//! 174,000 vectors, 100 s of both cores), where a scan of the sign bits of 480,000 chunks
//! costs a few milliseconds a search; only projects too large for either keep a graph.
//!
//! The copy is tied to a generation the store bumps on every commit: an int8 copy from an
//! older generation is not used. It is rebuilt off the search's path; meanwhile a search uses
//! the graph, or an older sign copy (re-scored against the store as it is now, it misses only
//! the vectors added since), so a large project's search never waits for its copy.

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use heed::RoTxn;
use roaring::RoaringBitmap;

use super::quantized::{Int8Probe, Probe, SignDot, int8_values, query_sign_words, sign_distance};
use super::{Fail, Store};

/// What the in-memory copy may hold: int8 rows up to `int8` bytes, else sign rows (and their
/// chunk ids) up to `signs` bytes; past both, no copy.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bounds {
    pub int8: usize,
    pub signs: usize,
}

impl Bounds {
    /// The memory budget's shares ([`crate::memory::Budget::exact_vector_bytes`], 16 MB by
    /// default, and [`crate::memory::Budget::exact_sign_bytes`], 32 MB).
    fn of_budget() -> Bounds {
        let budget = crate::memory::budget();
        Bounds {
            int8: budget.exact_vector_bytes(),
            signs: budget.exact_sign_bytes(),
        }
    }

    /// The copy `chunks` vectors of `dims` dimensions would be, if any.
    fn kind(self, chunks: usize, dims: usize) -> Option<Kind> {
        if chunks.saturating_mul(dims + 4) <= self.int8 {
            Some(Kind::Int8)
        } else if chunks.saturating_mul(sign_row_bytes(dims)) <= self.signs {
            Some(Kind::Signs)
        } else {
            None
        }
    }
}

/// Bytes a chunk takes in a sign copy: its sign words and its id.
fn sign_row_bytes(dims: usize) -> usize {
    dims.div_ceil(64) * 8 + 8
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int8,
    Signs,
}

/// Whether a project of `chunks` chunks of `dims` dimensions is searched by the in-memory
/// copy alone, with no graph: its vectors fit a copy's budget. Tests keep graphs unless they
/// ask ([`tests::without_graph_up_to`], in bytes of int8 rows).
pub(super) fn fits_without_graph(chunks: u64, dims: usize) -> bool {
    let Ok(chunks) = usize::try_from(chunks) else {
        return false;
    };
    #[cfg(test)]
    return chunks.saturating_mul(dims + 4) <= tests::GRAPHLESS_BYTES.with(std::cell::Cell::get);
    #[cfg(not(test))]
    Bounds::of_budget().kind(chunks, dims).is_some()
}

/// Rows the integer pass keeps beyond twice those asked for, re-scored by the query's floats.
const MARGIN: usize = 32;

/// A sign scan keeps this many rows per result asked for by the sign bits alone, then
/// [`SIGN_RESCORED`] per result by the query's dot product with the signs, which the store
/// re-scores exactly.
const SIGN_KEPT: usize = 10;
const SIGN_RESCORED: usize = 3;

/// While chunks wait for vectors, the copy is rebuilt after a commit at most this often.
const REBUILD_WHILE_EMBEDDING: Duration = Duration::from_secs(5);

/// The store's in-memory copy of its vectors, shared by its clones.
#[derive(Clone, Default)]
pub(super) struct ExactCache(Arc<Inner>);

#[derive(Default)]
struct Inner {
    /// Bumped after every commit.
    generation: AtomicU64,
    current: Mutex<Option<Arc<ExactVectors>>>,
    /// A rebuild is running.
    building: AtomicBool,
    /// One more than the generation found too large to copy (0: none), so searches do not
    /// ask again until the next commit.
    refused: AtomicU64,
    /// Bounds set by a test (else the memory budget's).
    #[cfg(test)]
    bounds: Mutex<Option<Bounds>>,
}

/// Every chunk's vector (int8 rows or sign rows), in chunk id order.
struct ExactVectors {
    generation: u64,
    /// When it was made.
    built: Instant,
    dims: usize,
    ids: Vec<u64>,
    rows: Rows,
}

enum Rows {
    /// `ids.len()` rows of `4 + dims` bytes as stored (a scale, then the int8 values), and
    /// each row's [`int8_norm`].
    Int8 { rows: Vec<u8>, norms: Vec<f32> },
    /// `ids.len()` rows of `words` words of sign bits ([`sign_words`]).
    Signs { words: usize, rows: Vec<u64> },
}

/// What a scan found.
pub(super) enum Scan {
    /// The nearest, with their distances, nearest first (an int8 copy's).
    Nearest(Vec<(u64, f32)>),
    /// Candidates for the store to re-score (a sign copy's).
    Candidates(Vec<u64>),
}

impl ExactVectors {
    /// The `limit` rows nearest to `query` within `candidates`: nearest first from an int8
    /// copy, or a sign copy's candidates.
    fn scan(&self, query: &[f32], limit: usize, candidates: Option<&RoaringBitmap>) -> Scan {
        let limit = limit.max(1);
        let allowed =
            |id: u64| candidates.is_none_or(|c| u32::try_from(id).is_ok_and(|id| c.contains(id)));
        match &self.rows {
            Rows::Int8 { rows, norms } => {
                let width = self.dims + 4;
                let row = |i: usize| &rows[i * width..(i + 1) * width];
                // First in integers, every row; then the best few (with a margin for int8's
                // error) by the query's own floats, as the graph's candidates are re-scored.
                let first = Int8Probe::new(query);
                let kept = limit * 2 + MARGIN;
                let best = best_rows(self.ids.len(), kept, |i| {
                    allowed(self.ids[i]).then(|| {
                        first
                            .distance(int8_values(row(i)), norms[i])
                            .max(0.0)
                            .to_bits()
                    })
                });
                let probe = Probe::new(query);
                let mut found: Vec<(u64, f32)> = best
                    .into_iter()
                    .filter_map(|i| probe.distance(row(i)).map(|d| (self.ids[i], d)))
                    .collect();
                found.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
                found.truncate(limit);
                Scan::Nearest(found)
            }
            Rows::Signs { words, rows } => {
                let row = |i: usize| &rows[i * words..(i + 1) * words];
                let bits = query_sign_words(query);
                let best = SignScan {
                    ids: &self.ids,
                    rows,
                    bits: &bits,
                    kept: limit * SIGN_KEPT + MARGIN,
                    candidates,
                }
                .run();
                // Then by the query's magnitudes against the signs: larger is nearer.
                let dot = SignDot::new(query);
                let mut finer: Vec<(f32, usize)> =
                    best.into_iter().map(|i| (-dot.dot(row(i)), i)).collect();
                finer.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                finer.truncate(limit * SIGN_RESCORED + MARGIN);
                Scan::Candidates(finer.into_iter().map(|(_, i)| self.ids[i]).collect())
            }
        }
    }
}

/// The `kept` rows of `0..rows` with the smallest keys (`None`: left out), in no order.
#[inline(always)]
fn best_rows<K: Ord + Copy>(
    rows: usize,
    kept: usize,
    mut key: impl FnMut(usize) -> Option<K>,
) -> Vec<usize> {
    // The best so far, the worst on top.
    let mut best: BinaryHeap<(K, usize)> = BinaryHeap::with_capacity(kept + 1);
    for i in 0..rows {
        let Some(k) = key(i) else { continue };
        if best.len() < kept {
            best.push((k, i));
        } else if best.peek().is_some_and(|worst| k < worst.0) {
            best.pop();
            best.push((k, i));
        }
    }
    best.into_iter().map(|(_, i)| i).collect()
}

/// A scan of sign rows: the `kept` rows nearest to the query's sign `bits` (fewest bits
/// differing) among those whose id is in `candidates`.
struct SignScan<'a> {
    ids: &'a [u64],
    rows: &'a [u64],
    bits: &'a [u64],
    kept: usize,
    candidates: Option<&'a RoaringBitmap>,
}

impl SignScan<'_> {
    /// The rows found, in no order. With the CPU's population count where it has one (the
    /// portable build counts bits in several steps).
    fn run(&self) -> Vec<usize> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has POPCNT, checked just above.
            return unsafe { self.run_popcnt() };
        }
        self.run_portable()
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn run_popcnt(&self) -> Vec<usize> {
        self.run_portable()
    }

    /// [`SignScan::run`]'s loop, written out (no closure) so that it compiles with the
    /// caller's features.
    #[inline(always)]
    fn run_portable(&self) -> Vec<usize> {
        let words = self.bits.len().max(1);
        // The best so far, the worst on top.
        let mut best: BinaryHeap<(u32, usize)> = BinaryHeap::with_capacity(self.kept + 1);
        let mut worst = u32::MAX;
        for (i, row) in self.rows.chunks_exact(words).enumerate() {
            let distance = sign_distance(self.bits, row);
            if best.len() >= self.kept && distance >= worst {
                continue;
            }
            if self
                .candidates
                .is_some_and(|c| !u32::try_from(self.ids[i]).is_ok_and(|id| c.contains(id)))
            {
                continue;
            }
            best.push((distance, i));
            if best.len() > self.kept {
                best.pop();
            }
            if best.len() >= self.kept {
                worst = best.peek().map_or(u32::MAX, |w| w.0);
            }
        }
        best.into_iter().map(|(_, i)| i).collect()
    }
}

impl ExactCache {
    /// Called after each commit: the copy no longer stands for the store.
    fn committed(&self) {
        self.0.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Hold `copy` from now on (`None`: none).
    fn put(&self, copy: Option<ExactVectors>) {
        *self.0.current.lock().unwrap_or_else(|e| e.into_inner()) = copy.map(Arc::new);
    }

    /// Whether a copy is held that was built less than [`REBUILD_WHILE_EMBEDDING`] ago.
    fn built_lately(&self) -> bool {
        let current = self.0.current.lock().unwrap_or_else(|e| e.into_inner());
        current
            .as_ref()
            .is_some_and(|c| c.built.elapsed() < REBUILD_WHILE_EMBEDDING)
    }

    /// The copy, if it stands for the store as committed and holds `dims`-dimension vectors.
    fn fresh(&self, dims: usize) -> Option<Arc<ExactVectors>> {
        let generation = self.0.generation.load(Ordering::Acquire);
        let current = self.0.current.lock().unwrap_or_else(|e| e.into_inner());
        current
            .as_ref()
            .filter(|c| c.generation == generation && c.dims == dims)
            .cloned()
    }

    /// A sign copy of `dims`-dimension vectors, however old: its candidates are re-scored
    /// against the store as it is, so it misses only the vectors added since.
    fn older_signs(&self, dims: usize) -> Option<Arc<ExactVectors>> {
        let current = self.0.current.lock().unwrap_or_else(|e| e.into_inner());
        current
            .as_ref()
            .filter(|c| c.dims == dims && matches!(c.rows, Rows::Signs { .. }))
            .cloned()
    }

    /// What the copy may hold.
    fn bounds(&self) -> Bounds {
        #[cfg(test)]
        if let Some(bounds) = *self.0.bounds.lock().unwrap_or_else(|e| e.into_inner()) {
            return bounds;
        }
        Bounds::of_budget()
    }
}

impl Store {
    /// The `limit` chunks nearest to `query` by a scan of the in-memory copy, within
    /// `candidates`; `None` when there is no current copy (the caller uses the graph). A
    /// missing or stale copy is rebuilt on another thread when the vectors are few enough.
    #[cfg(test)]
    pub(super) fn exact_nearest(
        &self,
        query: &[f32],
        limit: usize,
        candidates: Option<&RoaringBitmap>,
    ) -> Option<Vec<(u64, f32)>> {
        let found = match self.exact_fresh(query, limit, candidates) {
            Some(scan) => Some(
                self.read(|rtxn| self.scanned(rtxn, query, limit, scan))
                    .ok()?,
            ),
            None => None,
        };
        if found.is_none() {
            self.exact_stale(query.len());
        }
        found
    }

    /// What a scan of the current copy finds; `None` when there is no current copy.
    pub(super) fn exact_fresh(
        &self,
        query: &[f32],
        limit: usize,
        candidates: Option<&RoaringBitmap>,
    ) -> Option<Scan> {
        let copy = self.exact.fresh(query.len())?;
        Some(copy.scan(query, limit, candidates))
    }

    /// A scan's nearest, nearest first: a sign copy's candidates re-scored with the cached
    /// (int8) vectors as `rtxn` sees them (a chunk removed since the copy was made is left out).
    pub(super) fn scanned(
        &self,
        rtxn: &RoTxn,
        query: &[f32],
        limit: usize,
        scan: Scan,
    ) -> Result<Vec<(u64, f32)>, Fail> {
        match scan {
            Scan::Nearest(found) => Ok(found),
            Scan::Candidates(ids) => self.rescored(
                rtxn,
                &Probe::new(query),
                limit,
                ids.into_iter().map(|id| (id, None)),
            ),
        }
    }

    /// The copy of `dims`-dimension vectors is stale: rebuild it on another thread unless
    /// it was found too large since the last commit.
    pub(super) fn exact_stale(&self, dims: usize) {
        let generation = self.exact.0.generation.load(Ordering::Acquire);
        if self.exact.0.refused.load(Ordering::Acquire) != generation + 1 {
            self.start_exact_rebuild(Some(dims), false);
        }
    }

    /// The nearest by a scan of the vectors, for a project without a graph
    /// ([`fits_without_graph`]) whose copy is stale. An older sign copy answers at once (a
    /// new one is built meanwhile); else the copy is made now from what `rtxn` sees, and kept
    /// for the searches after this one if no commit came since `generation` (read before
    /// `rtxn` began).
    pub(super) fn exact_now(
        &self,
        rtxn: &RoTxn,
        generation: u64,
        query: &[f32],
        limit: usize,
        candidates: Option<&RoaringBitmap>,
    ) -> Result<Vec<(u64, f32)>, Fail> {
        if let Some(older) = self.exact.older_signs(query.len()) {
            self.exact_stale(query.len());
            let scan = older.scan(query, limit, candidates);
            return self.scanned(rtxn, query, limit, scan);
        }
        // A project grown past the bound since its last vectors has no graph yet either:
        // nothing until its next vector commit makes one.
        let Some(copy) = self.exact_vectors(rtxn, generation, query.len(), self.exact.bounds())?
        else {
            return Ok(Vec::new());
        };
        let scan = copy.scan(query, limit, candidates);
        if self.exact.0.generation.load(Ordering::Acquire) == generation {
            self.exact.put(Some(copy));
        }
        self.scanned(rtxn, query, limit, scan)
    }

    /// The commit generation the exact copy follows.
    pub(super) fn exact_generation(&self) -> u64 {
        self.exact.0.generation.load(Ordering::Acquire)
    }

    /// After a commit: the copy is rebuilt at once when no chunk waits for a vector (the
    /// index has settled), so the next search finds it ready; while vectors are still coming,
    /// at most every [`REBUILD_WHILE_EMBEDDING`], so that when the last one comes a search
    /// has an older sign copy to answer from instead of making one (480,000 chunks: 0.5 s).
    pub(super) fn exact_after_commit(&self) {
        self.exact.committed();
        self.start_exact_rebuild(None, true);
    }

    /// Rebuild the in-memory copy of `dims`-dimension vectors (`None`: the store's) on a
    /// thread of its own, unless one is being built, the vectors would not fit the copy's
    /// [`Bounds`], or (`after_commit`) chunks wait for vectors and a copy was built less than
    /// [`REBUILD_WHILE_EMBEDDING`] ago. What the build read of the store's map is given back.
    fn start_exact_rebuild(&self, dims: Option<usize>, after_commit: bool) {
        if self.exact.0.building.swap(true, Ordering::AcqRel) {
            return;
        }
        let store = self.clone();
        let spawned = std::thread::Builder::new()
            .name("exact-vectors".into())
            .spawn(move || {
                crate::nice::step_back(crate::nice::INDEXING);
                let generation = store.exact.0.generation.load(Ordering::Acquire);
                let built = store.read(|rtxn| {
                    let Some(dims) = dims.or(super::vectors::vector_dims(&store, rtxn)?) else {
                        return Ok(None);
                    };
                    if after_commit
                        && !store.embed_pending.is_empty(rtxn)?
                        && store.exact.built_lately()
                    {
                        return Ok(None);
                    }
                    store
                        .exact_vectors(rtxn, generation, dims, store.exact.bounds())
                        .map(Some)
                });
                store.release_mapped_pages();
                match built {
                    Ok(None) => {}
                    Ok(Some(None)) => {
                        // Too large, or not all cached: not again until the next commit.
                        store
                            .exact
                            .0
                            .refused
                            .store(generation + 1, Ordering::Release);
                        store.exact.put(None);
                    }
                    Ok(Some(copy)) => store.exact.put(copy),
                    Err(e) => {
                        tracing::warn!(error = %e, "could not copy the vectors for exact search")
                    }
                }
                store.exact.0.building.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.exact.0.building.store(false, Ordering::Release);
        }
    }
}

mod build;
#[cfg(test)]
pub(super) mod tests;
