//! The approximate-nearest-neighbour index over chunk vectors: hannoy's HNSW graphs of
//! sign-bit vectors, in their own database of the project's LMDB environment. This is the only
//! module that names the ANN crate; the store asks it for candidates and re-scores them with
//! the exact (int8) vectors of `embed_cache` (see `vectors.rs`).
//!
//! New vectors join a small recent graph, merged into the open large graph when it has grown
//! (see [`RECENT`]), so linking a saved file's vectors costs the recent graph's size, not the
//! project's. A large graph holds at most [`seal`] vectors; past it the next one opens, so no
//! build ever links, or holds in memory, more than that, however large the project. A search
//! asks every graph.
//!
//! hannoy replaced arroy here: at a million vectors arroy's random-projection trees over
//! sign bits found .61 of the true ten at 40 ms a query (bench/README.md, "ANN at scale").

use heed::types::{Bytes, Str};
use heed::{RoTxn, RwTxn};
use roaring::RoaringBitmap;

/// Cosine over sign bits: 48 bytes a vector for 384 dimensions.
type Distance = hannoy::distances::BinaryQuantizedCosine;

/// The database type (`KeyCodec` keys, hannoy's nodes).
pub(super) type Database = hannoy::Database<'static, Distance>;

/// The store's metadata database, where the number of large graphs is kept.
pub(super) type Meta = heed::Database<'static, Str, Bytes>;

/// The key codec and node codec the database is created with.
pub(super) use hannoy::internals::KeyCodec;
pub(super) type NodeCodec = hannoy::internals::NodeCodec<Distance>;

/// The ANN crate's error.
pub type Error = hannoy::Error;

/// The graphs (hannoy indexes within the database): the first large graph (0, so indexes
/// made before graphs were sealed open unchanged), the small recent graph (1), then the
/// further large graphs (2, 3, ...). hannoy links new items and then writes again every link
/// of the graph it builds, so a build costs the size of the graph whatever was added: one
/// saved file's vector took 330-390 ms to link into 84,000 (issue 30), holding the writer's
/// transaction and every saved file behind it. The recent graph keeps that cost to its own
/// size; sealing large graphs at [`seal`] keeps a merge's, and its memory, bounded.
const MAIN: u16 = 0;
const RECENT: u16 = 1;
/// The most vectors one large graph takes (the memory budget's share, 131,072 by default);
/// the next vectors open a new one. A build holds
/// the graph's links in memory and dirties every page of it in the writer's transaction:
/// with one unbounded graph a first pass's commits each rewrote the whole project's graph,
/// so memory grew with the vectors embedded and the embedding rate collapsed (a 55,690-file
/// monorepo: ~950 chunks/s at first, 10-20 around 235,000 vectors).
fn seal() -> u64 {
    if cfg!(test) {
        10_000
    } else {
        crate::memory::budget().graph_vectors()
    }
}
/// Metadata key: how many large graphs have been opened (absent: one).
const GRAPHS_KEY: &str = "ann_graphs";
/// The recent graph is merged into the open large graph once it holds more than this many
/// vectors and more than that graph's size over [`MERGE_SHARE`] (so each vector is rewritten
/// a bounded number of times as the graph grows); removed vectors wait in a large graph
/// until they are more than its size over [`MERGE_SHARE`].
const MERGE_MIN: u64 = 4096;
const MERGE_SHARE: u64 = 8;
/// A transaction adding at least this many vectors (a first pass, a checkout's cache hits)
/// adds them to the open large graph directly: linked twice, a first pass's vectors took 40%
/// longer (20,000 files: 65 -> 91 s), and its commits are few and large.
const BULK: u64 = MERGE_MIN / 4;
/// Graph links per node above layer 0, and on layer 0.
const M: usize = 16;
const M0: usize = 32;
/// Candidates kept while linking a new node. 64 instead of 128 halved the graph build a
/// second checkout waits for (sympy: 15.8 -> 9.7 s) at the same recall (.985).
const EF_CONSTRUCTION: usize = 64;
/// Candidates kept while searching, at least (the `effort` of a search raises it).
const EF_SEARCH: usize = 200;

/// The hannoy index of the `n`th large graph.
fn large_index(n: u16) -> u16 {
    if n == 0 { MAIN } else { n + 1 }
}

/// How many large graphs have been opened (some may be empty since).
fn large_graphs(rtxn: &RoTxn, meta: Meta) -> Result<u16, Error> {
    let count = meta
        .get(rtxn, GRAPHS_KEY)?
        .and_then(|b| b.try_into().ok())
        .map_or(1, u16::from_le_bytes);
    Ok(count.max(1))
}

/// Whether any graph holds a vector (linked or not).
pub(super) fn holds_vectors(rtxn: &RoTxn, database: Database) -> Result<bool, Error> {
    Ok(!database.is_empty(rtxn)?)
}

/// A read view of the graphs.
pub(super) struct AnnReader<'t>(Vec<hannoy::Reader<'t, Distance>>);

impl<'t> AnnReader<'t> {
    /// The graphs as of `rtxn`, or `None` while nothing has been embedded yet.
    pub(super) fn open(
        rtxn: &'t RoTxn,
        database: Database,
        meta: Meta,
    ) -> Result<Option<Self>, Error> {
        let large = large_graphs(rtxn, meta)?;
        let mut graphs = Vec::with_capacity(usize::from(large) + 1);
        for index in std::iter::once(RECENT).chain((0..large).map(large_index)) {
            match hannoy::Reader::open(rtxn, index, database) {
                Ok(reader) => graphs.push(reader),
                Err(hannoy::Error::MissingMetadata(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((!graphs.is_empty()).then_some(AnnReader(graphs)))
    }

    /// Ids of the items (chunk ids) with a vector.
    pub(super) fn item_ids(&self) -> RoaringBitmap {
        self.0
            .iter()
            .map(|graph| graph.item_ids())
            .fold(RoaringBitmap::new(), |mut all, ids| {
                all |= ids;
                all
            })
    }

    /// Whether a vector commit would drop any of `deferred` (vectors of removed chunks) now:
    /// one no large graph holds (the recent graph drops its own at once), or more of them in
    /// one large graph than it lets wait (see [`AnnWriter::build`]).
    pub(super) fn drops_due(&self, deferred: &[u32]) -> bool {
        let large: Vec<_> = self.0.iter().filter(|g| g.index() != RECENT).collect();
        let mut waiting = vec![0u64; large.len()];
        for id in deferred {
            match large.iter().position(|g| g.item_ids().contains(*id)) {
                Some(k) => waiting[k] += 1,
                None => return true,
            }
        }
        large
            .iter()
            .zip(waiting)
            .any(|(graph, waiting)| waiting > deletes_bound(graph.n_items()))
    }

    /// The item ids of the large graphs, in order, and of the recent one.
    #[cfg(test)]
    pub(super) fn graph_items(&self) -> (Vec<RoaringBitmap>, RoaringBitmap) {
        let mut out = (Vec::new(), RoaringBitmap::new());
        for graph in &self.0 {
            match graph.index() {
                RECENT => out.1 = graph.item_ids().clone(),
                _ => out.0.push(graph.item_ids().clone()),
            }
        }
        out
    }

    /// The vectors graph `index` holds: 0 without that graph.
    fn len_of(&self, index: u16) -> u64 {
        self.0
            .iter()
            .find(|graph| graph.index() == index)
            .map_or(0, |graph| graph.n_items())
    }

    pub(super) fn dimensions(&self) -> usize {
        self.0[0].dimensions()
    }

    /// The items nearest to `query` by sign-bit cosine, among `candidates` if given: at
    /// least `count` from each graph, and the whole candidate list of each search (HNSW's
    /// `ef`: `effort`, or the default when 0), for the caller to re-score. Past two graphs,
    /// only the nearest of them all by sign-bit cosine, as many as two graphs give, so the
    /// re-scoring's cost stays that of a project of one large graph.
    pub(super) fn nearest(
        &self,
        rtxn: &RoTxn,
        query: &[f32],
        count: usize,
        effort: usize,
        candidates: Option<&RoaringBitmap>,
    ) -> Result<Vec<(u32, f32)>, Error> {
        let ef = if effort == 0 { EF_SEARCH } else { effort };
        let mut found = Vec::new();
        for graph in &self.0 {
            let mut builder = graph.nns(count.max(ef));
            builder.ef_search(ef);
            if let Some(candidates) = candidates {
                builder.candidates(candidates);
            }
            found.extend(builder.by_vector(rtxn, query)?.into_nns());
        }
        if self.0.len() > 2 {
            found.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            found.truncate(2 * count.max(ef));
        }
        Ok(found)
    }
}

/// Writes to the graphs, inside the writer's transaction.
pub(super) struct AnnWriter {
    recent: hannoy::Writer<'static, Distance>,
    /// The large graphs opened so far, the last one open to new vectors.
    large: Vec<hannoy::Writer<'static, Distance>>,
    database: Database,
    meta: Meta,
    dims: usize,
}

impl AnnWriter {
    pub(super) fn new(
        wtxn: &RwTxn,
        database: Database,
        meta: Meta,
        dims: usize,
    ) -> Result<Self, Error> {
        let large = (0..large_graphs(wtxn, meta)?)
            .map(|n| hannoy::Writer::new(database, large_index(n), dims))
            .collect();
        Ok(AnnWriter {
            recent: hannoy::Writer::new(database, RECENT, dims),
            large,
            database,
            meta,
            dims,
        })
    }

    /// Add (or replace) an item's vector: it joins the recent graph.
    pub(super) fn add(&self, wtxn: &mut RwTxn, item: u32, vector: &[f32]) -> Result<(), Error> {
        for graph in &self.large {
            // A vector replaced in place would leave the old one in a large graph.
            graph.del_item(wtxn, item)?;
        }
        self.recent.add_item(wtxn, item, vector)
    }

    /// Drop an item's vector if that is cheap now: `false` if a large graph holds it, to be
    /// dropped by [`AnnWriter::build`] later (searches skip it meanwhile).
    pub(super) fn delete_now(&self, wtxn: &mut RwTxn, item: u32) -> Result<bool, Error> {
        if self.recent.del_item(wtxn, item)? {
            return Ok(true);
        }
        for graph in &self.large {
            if graph.contains_item(wtxn, item)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Link the items added or deleted in this transaction into the recent graph (required
    /// before readers can search them), and merge it into the open large graph once it is
    /// large or this transaction added [`BULK`] vectors, dropping then those of `deferred`
    /// (vectors of removed chunks a large graph holds) whose graph is linked anyway or holds
    /// too many of them. Returns `None` without a merge, else the ids no graph holds any
    /// more. Deterministic for a given `seed`.
    pub(super) fn build(
        &mut self,
        wtxn: &mut RwTxn,
        seed: u64,
        added: u64,
        deferred: &[u32],
    ) -> Result<Option<Vec<u32>>, Error> {
        if added >= BULK {
            return self.merge(wtxn, seed, deferred).map(Some);
        }
        if self.recent.need_build(wtxn)? {
            if self.recent.is_empty(wtxn)? {
                // No vector left (or none yet): no graph.
                self.recent.clear(wtxn)?;
            } else {
                link(&self.recent, wtxn, seed)?;
            }
        }
        for graph in &self.large {
            // A vector replaced in it: it needs linking.
            if graph.need_build(wtxn)? {
                return self.merge(wtxn, seed, deferred).map(Some);
            }
        }
        // Every graph is linked now: one read view gives their sizes and what is due.
        let Some(reader) = AnnReader::open(wtxn, self.database, self.meta)? else {
            return Ok(None);
        };
        let open = large_index(self.large.len() as u16 - 1);
        if reader.len_of(RECENT) <= merge_bound(reader.len_of(open)) && !reader.drops_due(deferred)
        {
            return Ok(None);
        }
        self.merge(wtxn, seed, deferred).map(Some)
    }

    /// Move the recent graph's vectors into the open large graph (opening the next one at
    /// [`seal`]), drop the `deferred` vectors held by a graph that is linked anyway or holds
    /// more of them than it lets wait, and link every large graph that changed. Returns the
    /// deferred ids no graph holds any more.
    fn merge(&mut self, wtxn: &mut RwTxn, seed: u64, deferred: &[u32]) -> Result<Vec<u32>, Error> {
        let mut moved = Vec::new();
        for item in self.recent.iter(wtxn)? {
            moved.push(item?);
        }
        self.recent.clear(wtxn)?;
        let mut open_size = self.open_size(wtxn)?;
        for (id, vector) in &moved {
            if open_size >= seal() {
                self.open_next(wtxn)?;
                open_size = 0;
            }
            self.large
                .last()
                .expect("one large graph")
                .add_item(wtxn, *id, vector)?;
            open_size += 1;
        }
        let mut dropped = Vec::new();
        let mut held = vec![Vec::new(); self.large.len()];
        'items: for &id in deferred {
            for (n, graph) in self.large.iter().enumerate() {
                if graph.contains_item(wtxn, id)? {
                    held[n].push(id);
                    continue 'items;
                }
            }
            dropped.push(id);
        }
        for (n, (graph, held)) in self.large.iter().zip(held).enumerate() {
            let relinked = graph.need_build(wtxn)?;
            if relinked || held.len() as u64 > deletes_bound(self.linked_size(wtxn, n)?) {
                for id in &held {
                    graph.del_item(wtxn, *id)?;
                }
                dropped.extend(held);
            }
        }
        for (seed, graph) in (seed..).zip(&self.large) {
            if graph.need_build(wtxn)? {
                if graph.is_empty(wtxn)? {
                    graph.clear(wtxn)?;
                } else {
                    link(graph, wtxn, seed)?;
                }
            }
        }
        Ok(dropped)
    }

    /// Vectors in the open large graph, linked or not.
    fn open_size(&self, wtxn: &RwTxn) -> Result<u64, Error> {
        let open = self.large.len() - 1;
        match size(wtxn, self.database, large_index(open as u16))? {
            Some(size) => Ok(size),
            None => Ok(self.large[open].iter(wtxn)?.count() as u64),
        }
    }

    /// Vectors in the `n`th large graph, which needs no linking.
    fn linked_size(&self, wtxn: &RwTxn, n: usize) -> Result<u64, Error> {
        Ok(size(wtxn, self.database, large_index(n as u16))?.unwrap_or(0))
    }

    /// Seal the open large graph: new vectors go to a new one.
    fn open_next(&mut self, wtxn: &mut RwTxn) -> Result<(), Error> {
        let n = u16::try_from(self.large.len()).expect("fewer than 65,535 graphs");
        self.meta.put(wtxn, GRAPHS_KEY, &(n + 1).to_le_bytes())?;
        let graph = hannoy::Writer::new(self.database, large_index(n), self.dims);
        graph.clear(wtxn)?;
        self.large.push(graph);
        Ok(())
    }
}

/// The vectors a graph holds, as last linked: 0 without a graph, `None` while it needs
/// linking.
fn size(rtxn: &RoTxn, database: Database, index: u16) -> Result<Option<u64>, Error> {
    match hannoy::Reader::open(rtxn, index, database) {
        Ok(reader) => Ok(Some(reader.n_items())),
        Err(hannoy::Error::MissingMetadata(_)) => Ok(Some(0)),
        Err(hannoy::Error::NeedBuild(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The size above which the recent graph is merged into an open graph of `open` vectors.
fn merge_bound(open: u64) -> u64 {
    MERGE_MIN.max(open / MERGE_SHARE)
}

/// How many removed vectors may wait in a large graph of `size` vectors: a search's
/// candidates must stay mostly live ones.
fn deletes_bound(size: u64) -> u64 {
    size / MERGE_SHARE
}

/// Link a graph's added and removed items (deterministic for a given `seed`).
fn link(
    graph: &hannoy::Writer<'static, Distance>,
    wtxn: &mut RwTxn,
    seed: u64,
) -> Result<(), Error> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    graph
        .builder(&mut rng)
        .ef_construction(EF_CONSTRUCTION)
        .build::<M, M0>(wtxn)
}

#[cfg(test)]
pub(super) mod tests;
