//! Exact nearest vectors for a project whose vectors fit in a few MB: every chunk's int8
//! vector (as `embed_cache` keeps it) held in memory and scanned in full. One pass over
//! them costs less than the graph's walk and the two reads per candidate its re-scoring
//! needs, and it finds the true nearest. Larger projects keep using the graph.
//!
//! The copy is tied to a generation the store bumps on every commit: a copy from an older
//! generation is not used. It is rebuilt off the search's path (that search uses the
//! graph), so a search never waits for it.

use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use heed::RoTxn;
use heed::types::Bytes;
use roaring::RoaringBitmap;

use super::quantized::{Int8Probe, Probe, int8_norm, int8_values};
use super::{Fail, Store};

/// Vectors (their int8 bytes and scale) held for exact search at most: the memory budget's
/// share ([`crate::memory::Budget::exact_vector_bytes`], 16 MB by default; 20,000 chunks of
/// 384 dimensions are 7.8 MB).
fn exact_max_bytes() -> usize {
    crate::memory::budget().exact_vector_bytes()
}

/// Whether a project of `chunks` chunks of `dims` dimensions is searched by the exact copy
/// alone, with no graph: its vectors fit the copy's budget. A graph costs the writer about
/// half a millisecond a vector to link (sympy: 13 s of 20,180 vectors, where computing them
/// takes 2); a project this small never needs it. Tests keep graphs unless they ask
/// ([`tests::without_graph_up_to`]).
pub(super) fn fits_without_graph(chunks: u64, dims: usize) -> bool {
    #[cfg(test)]
    let max = tests::GRAPHLESS_BYTES.with(std::cell::Cell::get);
    #[cfg(not(test))]
    let max = exact_max_bytes();
    usize::try_from(chunks).is_ok_and(|chunks| chunks.saturating_mul(dims + 4) <= max)
}

/// Rows the integer pass keeps beyond twice those asked for, re-scored by the query's floats.
const MARGIN: usize = 32;

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
}

/// Every chunk's vector as stored (a scale, then one byte a dimension), in chunk id order.
struct ExactVectors {
    generation: u64,
    dims: usize,
    ids: Vec<u64>,
    /// `ids.len()` rows of `4 + dims` bytes.
    rows: Vec<u8>,
    /// Each row's [`int8_norm`].
    norms: Vec<f32>,
}

impl ExactVectors {
    /// Row `i` as stored: the scale, then the int8 values.
    fn row(&self, i: usize) -> &[u8] {
        let width = self.dims + 4;
        &self.rows[i * width..(i + 1) * width]
    }

    /// The `limit` rows nearest to `query`, nearest first, within `candidates`.
    fn scan(
        &self,
        query: &[f32],
        limit: usize,
        candidates: Option<&RoaringBitmap>,
    ) -> Vec<(u64, f32)> {
        // First in integers, every row; then the best few (with a margin for int8's error)
        // by the query's own floats, as the graph's candidates are re-scored.
        let first = Int8Probe::new(query);
        let limit = limit.max(1);
        let kept = limit * 2 + MARGIN;
        // The best `kept` rows so far, the worst on top (distances are at least 0, where
        // their bits order as the numbers do).
        let mut best: BinaryHeap<(u32, usize)> = BinaryHeap::with_capacity(kept + 1);
        for (i, id) in self.ids.iter().enumerate() {
            if candidates.is_some_and(|c| !u32::try_from(*id).is_ok_and(|id| c.contains(id))) {
                continue;
            }
            let values = int8_values(self.row(i));
            let key = first.distance(values, self.norms[i]).max(0.0).to_bits();
            if best.len() < kept {
                best.push((key, i));
            } else if best.peek().is_some_and(|worst| key < worst.0) {
                best.pop();
                best.push((key, i));
            }
        }
        let probe = Probe::new(query);
        let mut found: Vec<(u64, f32)> = best
            .into_iter()
            .filter_map(|(_, i)| probe.distance(self.row(i)).map(|d| (self.ids[i], d)))
            .collect();
        found.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        found.truncate(limit);
        found
    }
}

impl ExactCache {
    /// Called after each commit: the copy no longer stands for the store. Returns the
    /// dimensions of the copy there was, if any.
    fn committed(&self) -> Option<usize> {
        self.0.generation.fetch_add(1, Ordering::AcqRel);
        let current = self.0.current.lock().unwrap_or_else(|e| e.into_inner());
        current.as_ref().map(|c| c.dims)
    }

    /// Hold `copy` from now on (`None`: none).
    fn put(&self, copy: Option<ExactVectors>) {
        *self.0.current.lock().unwrap_or_else(|e| e.into_inner()) = copy.map(Arc::new);
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
}

impl Store {
    /// The `limit` chunks nearest to `query` by an exact scan, nearest first, within
    /// `candidates`; `None` when there is no current in-memory copy (the caller uses the
    /// graph). A missing or stale copy is rebuilt on another thread when the vectors are
    /// few enough.
    #[cfg(test)]
    pub(super) fn exact_nearest(
        &self,
        query: &[f32],
        limit: usize,
        candidates: Option<&RoaringBitmap>,
    ) -> Option<Vec<(u64, f32)>> {
        let found = self.exact_fresh(query, limit, candidates);
        if found.is_none() {
            self.exact_stale(query.len());
        }
        found
    }

    /// [`Store::exact_nearest`] without the rebuild of a stale copy.
    pub(super) fn exact_fresh(
        &self,
        query: &[f32],
        limit: usize,
        candidates: Option<&RoaringBitmap>,
    ) -> Option<Vec<(u64, f32)>> {
        let copy = self.exact.fresh(query.len())?;
        Some(copy.scan(query, limit, candidates))
    }

    /// The copy of `dims`-dimension vectors is stale: rebuild it on another thread unless
    /// it was found too large since the last commit.
    pub(super) fn exact_stale(&self, dims: usize) {
        let generation = self.exact.0.generation.load(Ordering::Acquire);
        if self.exact.0.refused.load(Ordering::Acquire) != generation + 1 {
            self.start_exact_rebuild(dims, false);
        }
    }

    /// The nearest by an exact scan of the vectors as `rtxn` sees them, for a project
    /// without a graph ([`fits_without_graph`]) whose copy is stale: the copy is made now,
    /// kept for the searches after this one if no commit came since `generation` (read
    /// before `rtxn` began).
    pub(super) fn exact_now(
        &self,
        rtxn: &RoTxn,
        generation: u64,
        query: &[f32],
        limit: usize,
        candidates: Option<&RoaringBitmap>,
    ) -> Result<Vec<(u64, f32)>, Fail> {
        // A project grown past the bound since its last vectors has no graph yet either:
        // nothing until its next vector commit makes one.
        let Some(copy) = self.exact_vectors(rtxn, generation, query.len(), exact_max_bytes())?
        else {
            return Ok(Vec::new());
        };
        let found = copy.scan(query, limit, candidates);
        if self.exact.0.generation.load(Ordering::Acquire) == generation {
            self.exact.put(Some(copy));
        }
        Ok(found)
    }

    /// The commit generation the exact copy follows.
    pub(super) fn exact_generation(&self) -> u64 {
        self.exact.0.generation.load(Ordering::Acquire)
    }

    /// After a commit: a project searched through its copy has it rebuilt at once when no
    /// chunk waits for a vector (the index has settled), so the next search finds it ready.
    pub(super) fn exact_after_commit(&self) {
        if let Some(dims) = self.exact.committed() {
            self.start_exact_rebuild(dims, true);
        }
    }

    /// Rebuild the in-memory copy on a thread of its own, unless one is being built, the
    /// vectors would not fit [`exact_max_bytes`], or (`when_settled`) chunks wait for vectors.
    fn start_exact_rebuild(&self, dims: usize, when_settled: bool) {
        if self.exact.0.building.swap(true, Ordering::AcqRel) {
            return;
        }
        let store = self.clone();
        let spawned = std::thread::Builder::new()
            .name("exact-vectors".into())
            .spawn(move || {
                let generation = store.exact.0.generation.load(Ordering::Acquire);
                let built = store.read(|rtxn| {
                    if when_settled && !store.embed_pending.is_empty(rtxn)? {
                        return Ok(None);
                    }
                    store
                        .exact_vectors(rtxn, generation, dims, exact_max_bytes())
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
                store.exact.0.building.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.exact.0.building.store(false, Ordering::Release);
        }
    }

    /// Every live chunk's cached vector, read at `generation`; `None` when they would take
    /// more than `max_bytes`, or when some chunk's vector is in the graph but not in the
    /// cache (an exact scan would miss it).
    fn exact_vectors(
        &self,
        rtxn: &RoTxn,
        generation: u64,
        dims: usize,
        max_bytes: usize,
    ) -> Result<Option<ExactVectors>, Fail> {
        let width = dims + 4;
        let chunks = self.chunks.len(rtxn)? as usize;
        if chunks.saturating_mul(width) > max_bytes {
            return Ok(None);
        }
        // Chunk ids by text, then the cache read in its own order (both are sequential scans).
        let mut by_hash: HashMap<u64, Vec<u64>> = HashMap::with_capacity(chunks);
        for item in self.chunks.remap_data_type::<Bytes>().iter(rtxn)? {
            let (id, record) = item?;
            if let Some(hash) = super::codec::chunk_hash(record) {
                by_hash.entry(hash).or_default().push(id);
            }
        }
        let mut found: Vec<(u64, &[u8])> = Vec::with_capacity(chunks);
        for item in self.embed_cache.iter(rtxn)? {
            let (hash, bytes) = item?;
            if bytes.len() != width {
                continue;
            }
            if let Some(ids) = by_hash.get(&hash) {
                found.extend(ids.iter().map(|id| (*id, bytes)));
            }
        }
        let waiting = self.embed_pending.len(rtxn)? as usize;
        if found.len() + waiting < chunks {
            return Ok(None);
        }
        found.sort_unstable_by_key(|(id, _)| *id);
        let mut rows = Vec::with_capacity(found.len() * width);
        for (_, bytes) in &found {
            rows.extend_from_slice(bytes);
        }
        Ok(Some(ExactVectors {
            generation,
            dims,
            norms: found
                .iter()
                .map(|(_, b)| int8_norm(int8_values(b)))
                .collect(),
            ids: found.into_iter().map(|(id, _)| id).collect(),
            rows,
        }))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::ann::tests::add_file_with;
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
        let copy = |dims, max_bytes| {
            store
                .read(|rtxn| store.exact_vectors(rtxn, 0, dims, max_bytes))
                .unwrap()
        };
        assert!(copy(16, 60 * 20).is_some_and(|c| c.ids.len() == 60));
        // One byte short.
        assert!(copy(16, 60 * 20 - 1).is_none());
        // Vectors of other dimensions: a scan would miss the chunks the graph has.
        assert!(copy(8, usize::MAX).is_none());
    }
}
