//! The vector side of the store: the ANN graph of chunk vectors (`ann`), the embedding cache and
//! the queue of chunks waiting for a vector. Reads for search and the embedding worker;
//! writes only through the writer's [`StoreTxn`].

use std::collections::{HashMap, HashSet};

use heed::types::Bytes;
use heed::{RoTxn, RwTxn};
use roaring::RoaringBitmap;

use super::ann::{self, AnnReader, AnnWriter};
use super::exact;
use super::quantized::{Probe, dequantized_vector, quantized_bytes};
use super::{EmbeddedChunk, Fail, Store, StoreTxn, VectorState, meta_key};
use crate::error::IndexError;

/// Stale cached vectors (text no chunk has any more) are dropped at open once there are more
/// than this many and more than a quarter of the live ones.
const MIN_STALE: u64 = 256;

/// Candidates the sign-bit graph returns per result asked for, re-scored exactly. Two
/// saved sympy's hybrid queries 1.1 ms but cost semble's curl .028 NDCG@10 (bench/README).
const RESCORE_FACTOR: usize = 3;

impl Store {
    /// Drop the cached vectors of text no chunk has any more (left by edits: the cache is
    /// keyed by text, so every edit leaves one behind), once they are many. One write
    /// transaction: a crash leaves the cache as it was. Called at open, before the project's
    /// writer exists. Returns how many were dropped.
    pub(super) fn collect_stale_vectors(&self) -> Result<u64, IndexError> {
        let Some((live, cached)) = self.read(|rtxn| {
            // A cache this small cannot hold enough stale vectors: no scan at start-up.
            let cached = self.embed_cache.len(rtxn)?;
            if cached <= MIN_STALE {
                return Ok(None);
            }
            let mut live = HashSet::new();
            for item in self.chunks.remap_data_type::<Bytes>().iter(rtxn)? {
                if let Some(hash) = super::codec::chunk_hash(item?.1) {
                    live.insert(hash);
                }
            }
            Ok(Some((live, cached)))
        })?
        else {
            return Ok(0);
        };
        let stale = cached.saturating_sub(live.len() as u64);
        if stale <= MIN_STALE || stale <= live.len() as u64 / 4 {
            return Ok(0);
        }
        let dropped = self.ctx((|| {
            let mut wtxn = self.env.write_txn()?;
            let mut gone = Vec::new();
            for item in self.embed_cache.iter(&wtxn)? {
                let (hash, _) = item?;
                if !live.contains(&hash) {
                    gone.push(hash);
                }
            }
            for hash in &gone {
                self.embed_cache.delete(&mut wtxn, hash)?;
            }
            crate::crash::point("stale_vectors_dropped");
            wtxn.commit()?;
            Ok::<_, Fail>(gone.len() as u64)
        })())?;
        tracing::info!(dir = %self.path.display(), dropped, kept = live.len(), "dropped stale cached vectors");
        Ok(dropped)
    }

    /// The model whose vectors this index holds, if recorded.
    pub fn vector_model(&self) -> Result<Option<String>, IndexError> {
        self.read(|rtxn| {
            let model = self.meta.get(rtxn, meta_key::EMBED_MODEL)?;
            Ok(model.map(|b| String::from_utf8_lossy(b).into_owned()))
        })
    }

    /// The ANN graph's reader, or `None` while nothing has been embedded yet.
    fn vector_reader<'t>(&self, rtxn: &'t RoTxn) -> Result<Option<AnnReader<'t>>, Fail> {
        Ok(AnnReader::open(rtxn, self.vectors, self.meta)?)
    }

    /// Up to `limit` chunks waiting for a vector, `(chunk id, text hash)`, lowest ids first,
    /// leaving out `skip` (those already being embedded).
    pub fn pending_chunks(
        &self,
        limit: usize,
        skip: &HashSet<u64>,
    ) -> Result<Vec<(u64, u64)>, IndexError> {
        self.read(|rtxn| {
            let mut out = Vec::with_capacity(limit.min(4096));
            for item in self.embed_pending.iter(rtxn)? {
                let (id, hash) = item?;
                if !skip.contains(&id) {
                    out.push((id, hash));
                    if out.len() >= limit {
                        break;
                    }
                }
            }
            Ok(out)
        })
    }

    /// Chunk ids with a vector, chunk ids waiting for one, and removed chunk ids whose vector
    /// is still to be dropped, read in one transaction.
    pub fn vector_state(&self) -> Result<VectorState, IndexError> {
        self.read(|rtxn| {
            let pending = self.pending_ids(rtxn)?;
            let vectors = match self.vector_reader(rtxn)? {
                Some(reader) => reader.item_ids(),
                None => self.graphless_items(rtxn, &pending)?,
            };
            let mut deletes = HashSet::new();
            for item in self.vector_deletes.iter(rtxn)? {
                deletes.insert(item?.0);
            }
            Ok((vectors, pending, deletes))
        })
    }

    /// Chunk ids waiting for a vector.
    fn pending_ids(&self, rtxn: &RoTxn) -> Result<HashSet<u64>, Fail> {
        let mut pending = HashSet::new();
        for item in self.embed_pending.iter(rtxn)? {
            pending.insert(item?.0);
        }
        Ok(pending)
    }

    /// Without a graph, the chunks with a vector: those not `pending` whose text's vector
    /// is cached, each with that vector as stored.
    fn graphless_vectors<'t>(
        &self,
        rtxn: &'t RoTxn,
        pending: &HashSet<u64>,
    ) -> Result<Vec<(u32, &'t [u8])>, Fail> {
        let mut out = Vec::new();
        for item in self.chunks.remap_data_type::<Bytes>().iter(rtxn)? {
            let (id, record) = item?;
            let (Some(hash), Ok(item)) = (super::codec::chunk_hash(record), u32::try_from(id))
            else {
                continue;
            };
            if !pending.contains(&id)
                && let Some(bytes) = self.embed_cache.get(rtxn, &hash)?
            {
                out.push((item, bytes));
            }
        }
        Ok(out)
    }

    /// [`Store::graphless_vectors`]' chunk ids.
    fn graphless_items(&self, rtxn: &RoTxn, pending: &HashSet<u64>) -> Result<RoaringBitmap, Fail> {
        let vectors = self.graphless_vectors(rtxn, pending)?;
        Ok(vectors.into_iter().map(|(item, _)| item).collect())
    }

    /// Every stored vector, by chunk id (benchmarks: exact search to measure ANN recall).
    pub fn all_vectors(&self) -> Result<Vec<(u64, Vec<f32>)>, IndexError> {
        self.read(|rtxn| {
            let items = match self.vector_reader(rtxn)? {
                Some(reader) => reader.item_ids(),
                None => self.graphless_items(rtxn, &self.pending_ids(rtxn)?)?,
            };
            let mut out = Vec::new();
            for id in &items {
                if let Some(vector) = self.exact_vector(rtxn, u64::from(id))? {
                    out.push((u64::from(id), vector));
                }
            }
            Ok(out)
        })
    }

    /// The cosine distance from the probe's query to a chunk's cached (int8) vector, without
    /// decoding its record or the vector: `None` when either is missing.
    fn cached_distance(
        &self,
        rtxn: &RoTxn,
        chunk_id: u64,
        probe: &Probe,
    ) -> Result<Option<f32>, Fail> {
        let Some(record) = self
            .chunks
            .remap_data_type::<Bytes>()
            .get(rtxn, &chunk_id)?
        else {
            return Ok(None);
        };
        let Some(hash) = super::codec::chunk_hash(record) else {
            return Ok(None);
        };
        Ok(self
            .embed_cache
            .get(rtxn, &hash)?
            .and_then(|bytes| probe.distance(bytes)))
    }

    /// The exact vector of a chunk: its text's entry in `embed_cache`.
    fn exact_vector(&self, rtxn: &RoTxn, chunk_id: u64) -> Result<Option<Vec<f32>>, Fail> {
        let Some(record) = self.chunks.get(rtxn, &chunk_id)? else {
            return Ok(None);
        };
        Ok(self
            .embed_cache
            .get(rtxn, &record.hash)?
            .map(dequantized_vector))
    }

    /// Whether `chunk_id` still waits for a vector.
    pub fn is_pending(&self, chunk_id: u64) -> Result<bool, IndexError> {
        self.read(|rtxn| Ok(self.embed_pending.get(rtxn, &chunk_id)?.is_some()))
    }

    /// Cached vectors of the given chunk text hashes (those the cache has).
    pub fn cached_vectors(&self, hashes: &[u64]) -> Result<HashMap<u64, Vec<f32>>, IndexError> {
        self.read(|rtxn| {
            let mut out = HashMap::new();
            for hash in hashes {
                if let Some(bytes) = self.embed_cache.get(rtxn, hash)? {
                    out.insert(*hash, dequantized_vector(bytes));
                }
            }
            Ok(out)
        })
    }

    /// Whether a vector commit is due with no vector to add: vectors of removed chunks wait
    /// to be dropped (those of the recent graph at once, a large graph's once they are
    /// many: searches skip them), or a project without a graph no longer fits exact search
    /// alone (a smaller memory budget since its vectors were stored).
    pub fn vector_commit_due(&self) -> Result<bool, IndexError> {
        self.read(|rtxn| {
            if let Some(dims) = vector_dims(self, rtxn)?
                && !ann::holds_vectors(rtxn, self.vectors)?
                && !self.embed_cache.is_empty(rtxn)?
                && !exact::fits_without_graph(self.chunks.len(rtxn)?, dims)
            {
                return Ok(true);
            }
            let waiting = self.vector_deletes.len(rtxn)?;
            if waiting == 0 {
                return Ok(false);
            }
            let mut deferred = Vec::new();
            for item in self.vector_deletes.iter(rtxn)? {
                deferred.extend(u32::try_from(item?.0).ok());
            }
            Ok(self
                .vector_reader(rtxn)?
                .is_none_or(|reader| reader.drops_due(&deferred)))
        })
    }

    /// When the project opens: a project searched through its in-memory copy alone (it has
    /// no graph) whose vectors are all in has the copy built on its own thread, so its first
    /// search does not make it (174,000 vectors: 172 ms).
    pub fn prepare_exact_copy(&self) {
        let due = self.read(|rtxn| {
            Ok(match vector_dims(self, rtxn)? {
                Some(dims)
                    if !ann::holds_vectors(rtxn, self.vectors)?
                        && self.embed_pending.is_empty(rtxn)? =>
                {
                    Some(dims)
                }
                _ => None,
            })
        });
        if let Ok(Some(dims)) = due {
            self.exact_stale(dims);
        }
    }

    /// Chunks waiting for a vector.
    pub fn pending_count(&self) -> Result<u64, IndexError> {
        self.read(|rtxn| Ok(self.embed_pending.len(rtxn)?))
    }

    /// The `limit` chunks nearest to `query` (cosine distance, smaller is nearer), among
    /// `candidates` if given. `effort` trades speed for recall (the graph search's candidate
    /// list; the default when 0).
    pub fn nearest(
        &self,
        query: &[f32],
        limit: usize,
        candidates: Option<&RoaringBitmap>,
        effort: usize,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        // Read before the transaction begins: a copy made in it is at least this new.
        let generation = self.exact_generation();
        let fresh = self.exact_fresh(query, limit, candidates);
        self.read(|rtxn| {
            if let Some(scan) = fresh {
                return self.scanned(rtxn, query, limit, scan);
            }
            let Some(reader) = self.vector_reader(rtxn)? else {
                // No graph: a project this small is searched by its copy alone.
                return self.exact_now(rtxn, generation, query, limit, candidates);
            };
            self.exact_stale(query.len());
            if reader.dimensions() != query.len() {
                return Ok(Vec::new());
            }
            let found = reader.nearest(
                rtxn,
                query,
                limit.max(1) * RESCORE_FACTOR,
                effort,
                candidates,
            )?;
            let found = found
                .into_iter()
                .map(|(id, approximate)| (u64::from(id), Some(approximate)));
            self.rescored(rtxn, &Probe::new(query), limit, found)
        })
    }

    /// Candidates (a graph's, or a sign scan's) re-scored with the cached (int8) vectors,
    /// the `limit` nearest first. A candidate whose vector is not cached keeps its
    /// approximate distance if it has one and its chunk is there; the vector of a removed
    /// chunk (waiting in a large graph to be dropped, or in an older sign copy) is skipped.
    pub(super) fn rescored(
        &self,
        rtxn: &RoTxn,
        probe: &Probe,
        limit: usize,
        found: impl Iterator<Item = (u64, Option<f32>)>,
    ) -> Result<Vec<(u64, f32)>, Fail> {
        let mut scored = Vec::new();
        for (id, approximate) in found {
            match self.cached_distance(rtxn, id, probe)? {
                Some(distance) => scored.push((id, distance)),
                None => {
                    if let Some(approximate) = approximate
                        && self
                            .chunks
                            .remap_data_type::<Bytes>()
                            .get(rtxn, &id)?
                            .is_some()
                    {
                        scored.push((id, approximate));
                    }
                }
            }
        }
        scored.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        scored.dedup_by_key(|(id, _)| *id);
        scored.truncate(limit.max(1));
        Ok(scored)
    }
}

impl Store {
    /// Drop the vectors of removed chunks that cost nothing to drop now: the recent
    /// graph's, and those no graph holds (every one while the project has no vectors,
    /// `ann` `None`). Returns the ids a large graph holds, which wait for it to be linked
    /// again ([`AnnWriter::build`]).
    fn drop_removed_vectors(
        &self,
        wtxn: &mut RwTxn,
        ann: Option<&AnnWriter>,
    ) -> Result<Vec<u32>, Fail> {
        let mut removed = Vec::new();
        for item in self.vector_deletes.iter(wtxn)? {
            removed.push(item?.0);
        }
        let mut waiting = Vec::new();
        for id in removed {
            let item = u32::try_from(id).ok();
            let dropped = match (ann, item) {
                (Some(ann), Some(item)) => ann.delete_now(wtxn, item)?,
                _ => true,
            };
            if dropped {
                self.vector_deletes.delete(wtxn, &id)?;
            } else {
                waiting.extend(item);
            }
        }
        Ok(waiting)
    }

    /// Add every vector the project has (those of chunks not waiting for one) to the
    /// graph: a project without one has outgrown exact search alone. Returns how many.
    fn graph_every_vector(&self, wtxn: &mut RwTxn, ann: &AnnWriter) -> Result<usize, Fail> {
        let pending = self.pending_ids(wtxn)?;
        let held: Vec<(u32, Vec<f32>)> = self
            .graphless_vectors(wtxn, &pending)?
            .into_iter()
            .map(|(item, bytes)| (item, dequantized_vector(bytes)))
            .collect();
        let added = held.len();
        for (item, vector) in held {
            ann.add(wtxn, item, &vector)?;
        }
        tracing::info!(
            vectors = added,
            "the project outgrew exact search: graph built"
        );
        Ok(added)
    }
}

/// The recorded vector dimensions, if any.
pub(super) fn vector_dims(store: &Store, rtxn: &RoTxn) -> Result<Option<usize>, Fail> {
    let value = store.meta.get(rtxn, meta_key::EMBED_DIMS)?;
    Ok(value
        .and_then(|b| b.try_into().ok())
        .map(|b| u64::from_le_bytes(b) as usize))
}

impl StoreTxn<'_> {
    /// Drop every vector and cached embedding, record `model` as the index's model, and
    /// queue every chunk for embedding. Used when the model changes.
    pub fn reset_vectors(&mut self, model: &str) -> Result<u64, IndexError> {
        self.write(|store, wtxn| {
            store.vectors.clear(wtxn)?;
            store.embed_cache.clear(wtxn)?;
            store.embed_pending.clear(wtxn)?;
            store.vector_deletes.clear(wtxn)?;
            store.meta.delete(wtxn, meta_key::EMBED_DIMS)?;
            store
                .meta
                .put(wtxn, meta_key::EMBED_MODEL, model.as_bytes())?;
            let mut chunks = Vec::new();
            for item in store.chunks.iter(wtxn)? {
                let (id, record) = item?;
                chunks.push((id, record.hash));
            }
            for (id, hash) in &chunks {
                store.embed_pending.put(wtxn, id, hash)?;
            }
            Ok(chunks.len() as u64)
        })
    }

    /// Store vectors computed by the embedding worker for chunks that still exist (a chunk
    /// deleted meanwhile is skipped). Returns how many were stored.
    pub fn put_vectors(&mut self, items: &[EmbeddedChunk]) -> Result<usize, IndexError> {
        let (stored, regraphed) = self.write(|store, wtxn| {
            // First the vectors of removed chunks that are cheap to drop now (those of a
            // large graph wait for it to be linked again, `build_vectors`).
            if !store.vector_deletes.is_empty(wtxn)? {
                let ann = vector_dims(store, wtxn)?
                    .map(|dims| AnnWriter::new(wtxn, store.vectors, store.meta, dims))
                    .transpose()?;
                store.drop_removed_vectors(wtxn, ann.as_ref())?;
            }
            let dims = match (vector_dims(store, wtxn)?, items.first()) {
                (Some(dims), _) => dims,
                (None, None) => return Ok((0, 0)),
                (None, Some(first)) => {
                    let dims = first.vector.len();
                    store
                        .meta
                        .put(wtxn, meta_key::EMBED_DIMS, &(dims as u64).to_le_bytes())?;
                    dims
                }
            };
            let ann = AnnWriter::new(wtxn, store.vectors, store.meta, dims)?;
            let mut stored = 0;
            // A project small enough for exact search alone has no graph; one that outgrows
            // it gets one now, of every vector it has.
            let mut regraphed = 0;
            let graph = if ann::holds_vectors(wtxn, store.vectors)? {
                true
            } else if exact::fits_without_graph(store.chunks.len(wtxn)?, dims) {
                false
            } else {
                regraphed = store.graph_every_vector(wtxn, &ann)?;
                true
            };
            for item in items {
                let Ok(item_id) = u32::try_from(item.chunk_id) else {
                    continue;
                };
                if item.vector.len() != dims {
                    tracing::warn!(
                        got = item.vector.len(),
                        dims,
                        "embedding with unexpected dimensions dropped"
                    );
                    continue;
                }
                if store.embed_pending.get(wtxn, &item.chunk_id)? != Some(item.hash) {
                    continue;
                }
                if graph {
                    ann.add(wtxn, item_id, &item.vector)?;
                }
                store
                    .embed_cache
                    .put(wtxn, &item.hash, &quantized_bytes(&item.vector))?;
                store.embed_pending.delete(wtxn, &item.chunk_id)?;
                stored += 1;
            }
            Ok((stored, regraphed))
        })?;
        self.vectors_added += (stored + regraphed) as u64;
        Ok(stored)
    }

    /// Link the vectors changed in this transaction into the ANN graph (required before
    /// readers can search them).
    pub fn build_vectors(&mut self, seed: u64) -> Result<(), IndexError> {
        let added = self.vectors_added;
        self.write(|store, wtxn| {
            let Some(dims) = vector_dims(store, wtxn)? else {
                return Ok(());
            };
            let mut ann = AnnWriter::new(wtxn, store.vectors, store.meta, dims)?;
            // Vectors of removed chunks the recent graph holds (or none does) go now; only
            // a large graph's wait. Counted as waiting, the recent graph's made every
            // commit merge it into the open large graph and link that again: a file saved
            // twice in a row (its first vectors still recent) cost ~200 ms of linking an
            // 84,000-vector graph per save at 480,000 chunks.
            let deferred = store.drop_removed_vectors(wtxn, Some(&ann))?;
            for id in ann.build(wtxn, seed, added, &deferred)?.unwrap_or_default() {
                store.vector_deletes.delete(wtxn, &u64::from(id))?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::quantized::cosine_distance;
    use super::*;

    #[test]
    fn nearest_ranks_by_the_exact_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut next = super::super::ann::tests::values(7);
        let dims = 64;
        let n = 300u64;
        let vectors: Vec<Vec<f32>> = (0..n)
            .map(|_| (0..dims).map(|_| next()).collect())
            .collect();
        super::super::ann::tests::add_file_with(&store, "a.rs", 0..n, |id| {
            vectors[id as usize].clone()
        });

        // The cache gives back each vector within int8's precision (1/254 of the largest
        // component, here under 1).
        let cached = store.cached_vectors(&[1_000_000]).unwrap();
        let back = &cached[&1_000_000];
        assert!(
            back.iter()
                .zip(&vectors[0])
                .all(|(a, b)| (a - b).abs() < 1.0 / 250.0)
        );

        let query: Vec<f32> = (0..dims).map(|_| next()).collect();
        // As search asks: 100 neighbours.
        let found = store.nearest(&query, 100, None, 0).unwrap();
        assert_eq!(found.len(), 100);
        // Distances are the exact cosine distances, in order.
        for (id, distance) in &found {
            let exact = cosine_distance(&query, &vectors[*id as usize]);
            assert!(
                (distance - exact).abs() < 1e-2,
                "{id}: {distance} vs {exact}"
            );
        }
        assert!(found.windows(2).all(|w| w[0].1 <= w[1].1));
        // And the first ten are (nearly) the true nearest ten: sign bits only pick the
        // candidates.
        let mut exact: Vec<(u64, f32)> = (0..n)
            .map(|id| (id, cosine_distance(&query, &vectors[id as usize])))
            .collect();
        exact.sort_by(|a, b| a.1.total_cmp(&b.1));
        let truth: Vec<u64> = exact.iter().take(10).map(|(id, _)| *id).collect();
        let hits = found
            .iter()
            .take(10)
            .filter(|(id, _)| truth.contains(id))
            .count();
        assert!(hits >= 9, "{hits} of the true 10");
    }
}
