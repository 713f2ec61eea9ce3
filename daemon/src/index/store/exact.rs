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
use heed::types::Bytes;
use roaring::RoaringBitmap;

use super::quantized::{
    Int8Probe, Probe, SignDot, int8_norm, int8_values, query_sign_words, sign_distance, sign_words,
};
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
    /// When the copy held was built.
    built: Mutex<Option<Instant>>,
    /// Bounds set by a test (else the memory budget's).
    #[cfg(test)]
    bounds: Mutex<Option<Bounds>>,
}

/// Every chunk's vector (int8 rows or sign rows), in chunk id order.
struct ExactVectors {
    generation: u64,
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
                let kept = limit * SIGN_KEPT + MARGIN;
                let best = sign_scan(&self.ids, rows, &bits, kept, candidates);
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

/// The `kept` rows nearest to the query's sign `bits` (fewest bits differing) among those
/// whose id is in `candidates`, in no order. With the CPU's population count where it has
/// one (the portable build counts bits in several steps).
fn sign_scan(
    ids: &[u64],
    rows: &[u64],
    bits: &[u64],
    kept: usize,
    candidates: Option<&RoaringBitmap>,
) -> Vec<usize> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has POPCNT, checked just above.
        return unsafe { sign_scan_popcnt(ids, rows, bits, kept, candidates) };
    }
    sign_scan_portable(ids, rows, bits, kept, candidates)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn sign_scan_popcnt(
    ids: &[u64],
    rows: &[u64],
    bits: &[u64],
    kept: usize,
    candidates: Option<&RoaringBitmap>,
) -> Vec<usize> {
    sign_scan_portable(ids, rows, bits, kept, candidates)
}

/// [`sign_scan`]'s loop, written out so that it compiles with the caller's features.
#[inline(always)]
fn sign_scan_portable(
    ids: &[u64],
    rows: &[u64],
    bits: &[u64],
    kept: usize,
    candidates: Option<&RoaringBitmap>,
) -> Vec<usize> {
    let words = bits.len().max(1);
    // The best so far, the worst on top.
    let mut best: BinaryHeap<(u32, usize)> = BinaryHeap::with_capacity(kept + 1);
    let mut worst = u32::MAX;
    for (i, row) in rows.chunks_exact(words).enumerate() {
        let distance = sign_distance(bits, row);
        if best.len() >= kept && distance >= worst {
            continue;
        }
        if candidates.is_some_and(|c| !u32::try_from(ids[i]).is_ok_and(|id| c.contains(id))) {
            continue;
        }
        best.push((distance, i));
        if best.len() > kept {
            best.pop();
        }
        if best.len() >= kept {
            worst = best.peek().map_or(u32::MAX, |w| w.0);
        }
    }
    best.into_iter().map(|(_, i)| i).collect()
}

impl ExactCache {
    /// Called after each commit: the copy no longer stands for the store.
    fn committed(&self) {
        self.0.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Hold `copy` from now on (`None`: none).
    fn put(&self, copy: Option<ExactVectors>) {
        if copy.is_some() {
            *self.0.built.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        }
        *self.0.current.lock().unwrap_or_else(|e| e.into_inner()) = copy.map(Arc::new);
    }

    /// Whether a copy is held that was built less than [`REBUILD_WHILE_EMBEDDING`] ago.
    fn built_lately(&self) -> bool {
        let held = self
            .0
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        let built = *self.0.built.lock().unwrap_or_else(|e| e.into_inner());
        held && built.is_some_and(|at| at.elapsed() < REBUILD_WHILE_EMBEDDING)
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
                store.release_mapped_pages();
                store.exact.0.building.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.exact.0.building.store(false, Ordering::Release);
        }
    }

    /// Every live chunk's cached vector, read at `generation`, as int8 rows or sign rows
    /// (whichever `bounds` lets it be); `None` when they would take more than both, or when
    /// some chunk's vector is in the graph but not in the cache (a scan would miss it).
    fn exact_vectors(
        &self,
        rtxn: &RoTxn,
        generation: u64,
        dims: usize,
        bounds: Bounds,
    ) -> Result<Option<ExactVectors>, Fail> {
        let width = dims + 4;
        let chunks = self.chunks.len(rtxn)? as usize;
        let Some(kind) = bounds.kind(chunks, dims) else {
            return Ok(None);
        };
        // Chunk ids by text hash, then the cache (in hash order) joined to them: both are
        // sequential scans, and a pair is 16 bytes a chunk.
        let mut by_hash: Vec<(u64, u64)> = Vec::with_capacity(chunks);
        for item in self.chunks.remap_data_type::<Bytes>().iter(rtxn)? {
            let (id, record) = item?;
            if let Some(hash) = super::codec::chunk_hash(record) {
                by_hash.push((hash, id));
            }
        }
        by_hash.sort_unstable();
        // What the scan read of the map need not stay resident while the cache is read.
        self.release_mapped_pages();
        let mut found: Vec<(u64, &[u8])> = Vec::with_capacity(chunks);
        let mut next = 0;
        for item in self.embed_cache.iter(rtxn)? {
            let (hash, bytes) = item?;
            while next < by_hash.len() && by_hash[next].0 < hash {
                next += 1;
            }
            if bytes.len() != width {
                continue;
            }
            while next < by_hash.len() && by_hash[next].0 == hash {
                found.push((by_hash[next].1, bytes));
                next += 1;
            }
        }
        drop(by_hash);
        let waiting = self.embed_pending.len(rtxn)? as usize;
        if found.len() + waiting < chunks {
            return Ok(None);
        }
        found.sort_unstable_by_key(|(id, _)| *id);
        let rows = match kind {
            Kind::Int8 => {
                let mut rows = Vec::with_capacity(found.len() * width);
                for (_, bytes) in &found {
                    rows.extend_from_slice(bytes);
                }
                Rows::Int8 {
                    rows,
                    norms: found
                        .iter()
                        .map(|(_, b)| int8_norm(int8_values(b)))
                        .collect(),
                }
            }
            Kind::Signs => {
                let words = dims.div_ceil(64);
                let mut rows = Vec::with_capacity(found.len() * words);
                for (_, bytes) in &found {
                    rows.extend(sign_words(int8_values(bytes)));
                }
                Rows::Signs { words, rows }
            }
        };
        Ok(Some(ExactVectors {
            generation,
            dims,
            ids: found.into_iter().map(|(id, _)| id).collect(),
            rows,
        }))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::ann::tests::{add_file_with, remove_file, values};
    use super::super::quantized::quantized_bytes;
    use super::*;

    /// Wait (bounded) until `ready` holds.
    fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !ready() {
            assert!(std::time::Instant::now() < deadline, "{what}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// `store`'s exact answer, once its copy is built.
    fn exact_answer(
        store: &Store,
        query: &[f32],
        limit: usize,
        only: Option<&RoaringBitmap>,
    ) -> Vec<(u64, f32)> {
        let mut found = None;
        wait_until("no exact copy was built", || {
            found = store.exact_nearest(query, limit, only);
            found.is_some()
        });
        found.unwrap_or_default()
    }

    #[test]
    fn a_small_project_s_nearest_are_the_true_nearest_and_follow_each_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut next = super::super::ann::tests::values(3);
        let dims = 48;
        let vectors: Vec<Vec<f32>> = (0..400)
            .map(|_| (0..dims).map(|_| next()).collect())
            .collect();
        add_file_with(&store, "a.rs", 0..300, |id| vectors[id as usize].clone());
        let query: Vec<f32> = (0..dims).map(|_| next()).collect();
        // The truth: every stored vector's distance, nearest first.
        let probe = Probe::new(&query);
        let truth = |ids: &mut dyn Iterator<Item = u64>| -> Vec<u64> {
            let mut all: Vec<(u64, f32)> = ids
                .map(|id| {
                    (
                        id,
                        probe
                            .distance(&quantized_bytes(&vectors[id as usize]))
                            .unwrap(),
                    )
                })
                .collect();
            all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            all.into_iter().map(|(id, _)| id).collect()
        };
        let ids = |found: &[(u64, f32)]| found.iter().map(|(id, _)| *id).collect::<Vec<_>>();

        let found = exact_answer(&store, &query, 50, None);
        assert_eq!(
            ids(&found),
            truth(&mut (0..300))
                .into_iter()
                .take(50)
                .collect::<Vec<_>>()
        );
        // Within a filter, the filter's nearest.
        let even: RoaringBitmap = (0..300).step_by(2).collect();
        let found = exact_answer(&store, &query, 20, Some(&even));
        let even_truth: Vec<u64> = truth(&mut (0..300).step_by(2))
            .into_iter()
            .take(20)
            .collect();
        assert_eq!(ids(&found), even_truth);

        // A commit makes the copy stale; as the index has settled (no chunk waits for a
        // vector), a new one is built at once, with no search asking, and holds the new
        // vectors.
        add_file_with(&store, "b.rs", 300..400, |id| vectors[id as usize].clone());
        wait_until("not rebuilt after the commit", || {
            store.exact.fresh(dims).is_some()
        });
        let found = exact_answer(&store, &query, 400, None);
        assert_eq!(ids(&found), truth(&mut (0..400)));
        // Search asks through `nearest`, which answers from the copy.
        let asked = store.nearest(&query, 10, None, 0).unwrap();
        assert_eq!(
            ids(&asked),
            truth(&mut (0..400))
                .into_iter()
                .take(10)
                .collect::<Vec<_>>()
        );
        // A query of other dimensions has no copy to use.
        assert!(store.exact_nearest(&query[..8], 5, None).is_none());
    }

    thread_local! {
        /// [`fits_without_graph`]'s bound in tests: 0, every project has a graph.
        pub(super) static GRAPHLESS_BYTES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Let projects of up to `bytes` of vectors go without a graph, on this thread.
    pub(in crate::index::store) fn without_graph_up_to(bytes: usize) {
        GRAPHLESS_BYTES.with(|b| b.set(bytes));
    }

    #[test]
    fn vectors_too_many_for_memory_or_not_all_cached_are_not_copied() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        add_file_with(&store, "a.rs", 0..60, |id| vec![id as f32 + 1.0; 16]);
        let copy = |dims, int8, signs| {
            store
                .read(|rtxn| store.exact_vectors(rtxn, 0, dims, Bounds { int8, signs }))
                .unwrap()
        };
        let kind = |c: &ExactVectors| match c.rows {
            Rows::Int8 { .. } => Kind::Int8,
            Rows::Signs { .. } => Kind::Signs,
        };
        let int8 = copy(16, 60 * 20, 0).unwrap();
        assert_eq!((int8.ids.len(), kind(&int8)), (60, Kind::Int8));
        // One byte short of int8 rows: sign rows (one word and an id a chunk), if they fit.
        let signs = copy(16, 60 * 20 - 1, 60 * 16).unwrap();
        assert_eq!((signs.ids.len(), kind(&signs)), (60, Kind::Signs));
        assert!(copy(16, 60 * 20 - 1, 60 * 16 - 1).is_none());
        // Vectors of other dimensions: a scan would miss the chunks the graph has.
        assert!(copy(8, usize::MAX, usize::MAX).is_none());
    }

    #[test]
    fn a_project_too_large_for_int8_rows_is_searched_by_sign_bits_without_a_graph() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        *store.exact.0.bounds.lock().unwrap() = Some(Bounds {
            int8: 0,
            signs: usize::MAX,
        });
        without_graph_up_to(usize::MAX);
        let dims = 96;
        let mut next = values(11);
        let vectors: Vec<Vec<f32>> = (0..2_000)
            .map(|_| (0..dims).map(|_| next()).collect())
            .collect();
        add_file_with(&store, "a.rs", 0..2_000, |id| vectors[id as usize].clone());
        let graph = store.read(|rtxn| Ok(super::super::ann::holds_vectors(rtxn, store.vectors)?));
        assert!(!graph.unwrap(), "no graph");
        let probe_of = |query: &[f32]| {
            let probe = Probe::new(query);
            let mut all: Vec<(u64, f32)> = (0..2_000)
                .map(|id| {
                    let bytes = quantized_bytes(&vectors[id as usize]);
                    (id, probe.distance(&bytes).unwrap())
                })
                .collect();
            all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            all
        };
        // Over many queries, the sign scan's answers carry exact distances, and find more of
        // the true ten than the graph's way did: three times as many candidates by sign bits
        // alone, re-scored. Uniform random vectors, with no clusters, are the hard case for
        // sign bits (real code's vectors are measured by `amanmcp-bench ann`).
        let mut hits = 0;
        let mut three_times = 0;
        for _ in 0..20 {
            let query: Vec<f32> = (0..dims).map(|_| next()).collect();
            let truth = probe_of(&query);
            let found = store.nearest(&query, 10, None, 0).unwrap();
            assert_eq!(found.len(), 10);
            for (id, distance) in &found {
                let exact = truth.iter().find(|(t, _)| t == id).unwrap().1;
                assert!((exact - distance).abs() < 1e-6);
            }
            assert!(found.windows(2).all(|w| w[0].1 <= w[1].1));
            let true_ten = &truth[..10];
            hits += true_ten
                .iter()
                .filter(|(id, _)| found.iter().any(|(f, _)| f == id))
                .count();
            let bits = query_sign_words(&query);
            let mut by_signs: Vec<(u32, u64)> = (0..2_000u64)
                .map(|id| {
                    let bytes = quantized_bytes(&vectors[id as usize]);
                    let row: Vec<u64> = sign_words(int8_values(&bytes)).collect();
                    (sign_distance(&bits, &row), id)
                })
                .collect();
            by_signs.sort_unstable();
            let mut graph_way: Vec<(f32, u64)> = by_signs[..30]
                .iter()
                .map(|(_, id)| (truth.iter().find(|(t, _)| t == id).unwrap().1, *id))
                .collect();
            graph_way.sort_by(|a, b| a.0.total_cmp(&b.0));
            three_times += true_ten
                .iter()
                .filter(|(id, _)| graph_way[..10].iter().any(|(_, g)| g == id))
                .count();
        }
        assert!(
            hits >= 150 && hits > three_times + 30,
            "recall@10 {hits}/200 against {three_times}"
        );
        let copy = store
            .exact
            .fresh(dims)
            .expect("the copy made by the first search");
        assert!(matches!(copy.rows, Rows::Signs { words: 2, .. }));

        // A chunk added later is found once its commit's copy is built; until then an older
        // copy answers (re-scored against the store, a removed chunk left out).
        let query: Vec<f32> = (0..dims).map(|_| next()).collect();
        let before = store.nearest(&query, 5, None, 0).unwrap();
        add_file_with(&store, "b.rs", 2_000..2_001, |_| query.clone());
        wait_until("no copy after the commit", || {
            store.exact.fresh(dims).is_some()
        });
        let found = store.nearest(&query, 5, None, 0).unwrap();
        assert_eq!(found[0].0, 2_000);
        assert!(found[0].1 < 1e-3);
        assert_eq!(&found[1..], &before[..4]);
        // Stale (a commit without a rebuild yet): the older copy answers at once.
        store.exact.committed();
        let removed = store.nearest(&query, 5, None, 0).unwrap();
        assert_eq!(removed, found);
        wait_until("no copy after the search", || {
            store.exact.fresh(dims).is_some()
        });
        remove_file(&store, "b.rs");
        store.exact.committed();
        let after = store.nearest(&query, 5, None, 0).unwrap();
        assert_eq!(after, before);
    }
}
