//! The approximate-nearest-neighbour index over chunk vectors: hannoy's HNSW graphs of
//! sign-bit vectors, in their own database of the project's LMDB environment. This is the only
//! module that names the ANN crate; the store asks it for candidates and re-scores them with
//! the exact (int8) vectors of `embed_cache` (see `vectors.rs`).
//!
//! Two graphs: new vectors join a small recent one, merged into the main one when it has grown
//! (see [`MAIN`]), so linking a saved file's vectors costs the recent graph's size, not the
//! project's. A search asks both.
//!
//! hannoy replaced arroy here: at a million vectors arroy's random-projection trees over
//! sign bits found .61 of the true ten at 40 ms a query (bench/README.md, "ANN at scale").

use heed::{RoTxn, RwTxn};
use roaring::RoaringBitmap;

/// Cosine over sign bits: 48 bytes a vector for 384 dimensions.
type Distance = hannoy::distances::BinaryQuantizedCosine;

/// The database type (`KeyCodec` keys, hannoy's nodes).
pub(super) type Database = hannoy::Database<'static, Distance>;

/// The key codec and node codec the database is created with.
pub(super) use hannoy::internals::KeyCodec;
pub(super) type NodeCodec = hannoy::internals::NodeCodec<Distance>;

/// The ANN crate's error.
pub type Error = hannoy::Error;

/// The two graphs (hannoy indexes within the database). A few new vectors join the small
/// recent graph, merged into the main one once it is large ([`MERGE_MIN`]). hannoy links new
/// items and then writes again every link of the graph it builds, so a build costs the size
/// of the graph whatever was added: one saved file's vector took 330-390 ms to link into
/// 84,000 (issue 30), holding the writer's transaction and every saved file behind it. The
/// recent graph keeps that cost to its own size.
const MAIN: u16 = 0;
const RECENT: u16 = 1;
/// The recent graph is merged into the main one once it holds more than this many vectors
/// and more than the main graph's size over [`MERGE_SHARE`] (so each vector is rewritten a
/// bounded number of times as the main graph grows); removed vectors wait in the main graph
/// until they are more than its size over [`MERGE_SHARE`].
const MERGE_MIN: u64 = 4096;
const MERGE_SHARE: u64 = 8;
/// A transaction adding at least this many vectors (a first pass, a checkout's cache hits)
/// adds them to the main graph directly: linked twice, a first pass's vectors took 40% longer
/// (20,000 files: 65 -> 91 s), and its commits are few and large.
const BULK: u64 = MERGE_MIN / 4;
/// Graph links per node above layer 0, and on layer 0.
const M: usize = 16;
const M0: usize = 32;
/// Candidates kept while linking a new node. 64 instead of 128 halved the graph build a
/// second checkout waits for (sympy: 15.8 -> 9.7 s) at the same recall (.985).
const EF_CONSTRUCTION: usize = 64;
/// Candidates kept while searching, at least (the `effort` of a search raises it).
const EF_SEARCH: usize = 200;

/// A read view of the graphs.
pub(super) struct AnnReader<'t>(Vec<hannoy::Reader<'t, Distance>>);

impl<'t> AnnReader<'t> {
    /// The graphs as of `rtxn`, or `None` while nothing has been embedded yet.
    pub(super) fn open(rtxn: &'t RoTxn, database: Database) -> Result<Option<Self>, Error> {
        let mut graphs = Vec::with_capacity(2);
        for index in [MAIN, RECENT] {
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

    /// Whether a vector commit would drop any of `deferred` (vectors of removed chunks,
    /// `waiting` in all) now: one the main graph does not hold (the recent graph drops its
    /// own at once), or more of them than the main graph lets wait (see
    /// [`AnnWriter::build`]).
    pub(super) fn drops_due(&self, deferred: &[u32], waiting: u64) -> bool {
        let main = self.0.iter().find(|graph| graph.index() == MAIN);
        let main_size = main.map_or(0, |graph| graph.n_items());
        waiting > deletes_bound(main_size)
            || deferred
                .iter()
                .any(|id| !main.is_some_and(|graph| graph.item_ids().contains(*id)))
    }

    /// The item ids of the main graph, and of the recent one.
    #[cfg(test)]
    pub(super) fn graph_items(&self) -> (RoaringBitmap, RoaringBitmap) {
        let mut out = (RoaringBitmap::new(), RoaringBitmap::new());
        for graph in &self.0 {
            match graph.index() {
                MAIN => out.0 = graph.item_ids().clone(),
                _ => out.1 = graph.item_ids().clone(),
            }
        }
        out
    }

    pub(super) fn dimensions(&self) -> usize {
        self.0[0].dimensions()
    }

    /// The items nearest to `query` by sign-bit cosine, among `candidates` if given: at
    /// least `count` from each graph, and the whole candidate list of each search (HNSW's
    /// `ef`: `effort`, or the default when 0), for the caller to re-score.
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
        Ok(found)
    }
}

/// Writes to the graphs, inside the writer's transaction.
pub(super) struct AnnWriter {
    main: hannoy::Writer<'static, Distance>,
    recent: hannoy::Writer<'static, Distance>,
    database: Database,
}

impl AnnWriter {
    pub(super) fn new(database: Database, dims: usize) -> Self {
        AnnWriter {
            main: hannoy::Writer::new(database, MAIN, dims),
            recent: hannoy::Writer::new(database, RECENT, dims),
            database,
        }
    }

    /// Add (or replace) an item's vector: it joins the recent graph.
    pub(super) fn add(&self, wtxn: &mut RwTxn, item: u32, vector: &[f32]) -> Result<(), Error> {
        if self.main.contains_item(wtxn, item)? {
            // A vector replaced in place would leave the old one in the main graph.
            self.main.del_item(wtxn, item)?;
        }
        self.recent.add_item(wtxn, item, vector)
    }

    /// Drop an item's vector if that is cheap now: `false` if the main graph holds it, to be
    /// dropped by [`AnnWriter::build`] at the next merge (searches skip it meanwhile).
    pub(super) fn delete_now(&self, wtxn: &mut RwTxn, item: u32) -> Result<bool, Error> {
        Ok(self.recent.del_item(wtxn, item)? || !self.main.contains_item(wtxn, item)?)
    }

    /// Link the items added or deleted in this transaction into the recent graph (required
    /// before readers can search them), and merge it into the main graph once it is large or
    /// this transaction added [`BULK`] vectors, dropping `deferred` (vectors of removed
    /// chunks the main graph holds) then. Returns whether it merged. Deterministic for a
    /// given `seed`.
    pub(super) fn build(
        &self,
        wtxn: &mut RwTxn,
        seed: u64,
        added: u64,
        deferred: &[u32],
    ) -> Result<bool, Error> {
        if added >= BULK {
            self.merge(wtxn, seed, deferred)?;
            return Ok(true);
        }
        if self.recent.need_build(wtxn)? {
            if self.recent.is_empty(wtxn)? {
                // No vector left (or none yet): no graph.
                self.recent.clear(wtxn)?;
            } else {
                link(&self.recent, wtxn, seed)?;
            }
        }
        let main = size(wtxn, self.database, MAIN)?;
        let recent = size(wtxn, self.database, RECENT)?.unwrap_or(0);
        let main_size = main.unwrap_or(0);
        // `None`: the main graph needs linking (a vector replaced in it).
        if main.is_some()
            && recent <= merge_bound(main_size)
            && deferred.len() as u64 <= deletes_bound(main_size)
        {
            return Ok(false);
        }
        self.merge(wtxn, seed, deferred)?;
        Ok(true)
    }

    /// Move the recent graph's vectors into the main graph, drop `deferred` from it, link it.
    fn merge(&self, wtxn: &mut RwTxn, seed: u64, deferred: &[u32]) -> Result<(), Error> {
        let mut moved = Vec::new();
        for item in self.recent.iter(wtxn)? {
            moved.push(item?);
        }
        self.recent.clear(wtxn)?;
        for (id, vector) in &moved {
            self.main.add_item(wtxn, *id, vector)?;
        }
        for item in deferred {
            self.main.del_item(wtxn, *item)?;
        }
        if self.main.is_empty(wtxn)? {
            self.main.clear(wtxn)?;
        } else if self.main.need_build(wtxn)? {
            link(&self.main, wtxn, seed)?;
        }
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

/// The size above which the recent graph is merged into a main graph of `main` vectors.
fn merge_bound(main: u64) -> u64 {
    MERGE_MIN.max(main / MERGE_SHARE)
}

/// How many removed vectors may wait in a main graph of `main` vectors: a search's
/// candidates must stay mostly live ones.
fn deletes_bound(main: u64) -> u64 {
    main / MERGE_SHARE
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
pub(super) mod tests {
    use super::*;
    use crate::index::store::{ChunkRecord, EmbeddedChunk, FileRecord, Store};

    const DIMS: usize = 16;

    /// A deterministic unit-ish vector for chunk `id`.
    fn vector(id: u64) -> Vec<f32> {
        let mut state = id.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..DIMS)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// Index file `path` with chunks `ids` and give them their vectors, in one commit.
    fn add_file(store: &Store, path: &str, ids: std::ops::Range<u64>) {
        add_file_with(store, path, ids, vector);
    }

    /// Index file `path` with chunks `ids` (chunk `id`'s text hash `1_000_000 + id`) and give
    /// them the vectors `vector` makes, in one commit.
    pub(in crate::index::store) fn add_file_with(
        store: &Store,
        path: &str,
        ids: std::ops::Range<u64>,
        vector: impl Fn(u64) -> Vec<f32>,
    ) {
        let chunks: Vec<(u64, ChunkRecord)> = ids
            .clone()
            .map(|id| {
                let record = ChunkRecord {
                    path: path.into(),
                    start_line: 1,
                    end_line: 1,
                    symbol: None,
                    kind: None,
                    hash: 1_000_000 + id,
                };
                (id, record)
            })
            .collect();
        let file = FileRecord {
            size: 1,
            mtime_ns: 1,
            hash: 1,
            language: "rust".into(),
            chunk_ids: ids.clone().collect(),
        };
        let items: Vec<EmbeddedChunk> = ids
            .clone()
            .map(|id| EmbeddedChunk {
                chunk_id: id,
                hash: 1_000_000 + id,
                vector: vector(id),
            })
            .collect();
        let mut txn = store.write_txn().unwrap();
        txn.put_file(path, &file, &chunks, &[], &Default::default())
            .unwrap();
        assert_eq!(txn.put_vectors(&items).unwrap(), items.len());
        txn.build_vectors(ids.end).unwrap();
        txn.commit(ids.end).unwrap();
    }

    /// Remove `path`, then run a vector commit (as the embedding worker's empty one).
    fn remove_file(store: &Store, path: &str) {
        let mut txn = store.write_txn().unwrap();
        txn.remove_file(path).unwrap();
        txn.put_vectors(&[]).unwrap();
        txn.build_vectors(7).unwrap();
        txn.commit(1 << 20).unwrap();
    }

    /// (main graph size, recent graph size).
    fn sizes(store: &Store) -> (u64, u64) {
        store
            .read(|rtxn| {
                let reader = AnnReader::open(rtxn, store.vectors)?.expect("vectors");
                let (main, recent) = reader.graph_items();
                Ok((main.len(), recent.len()))
            })
            .unwrap()
    }

    /// The chunk nearest to chunk `id`'s own vector.
    fn nearest_to(store: &Store, id: u64) -> u64 {
        store.nearest(&vector(id), 10, None, 0).unwrap()[0].0
    }

    #[test]
    fn few_new_vectors_join_a_small_graph_many_the_main_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // A first pass's commit (BULK or more vectors) links into the main graph.
        add_file(&store, "a.rs", 0..4400);
        assert_eq!(sizes(&store), (4400, 0));
        // A saved file's few join the recent graph.
        add_file(&store, "b.rs", 4400..4500);
        assert_eq!(sizes(&store), (4400, 100));
        // A search finds vectors of either graph.
        for id in [3, 2999, 4450, 4499] {
            assert_eq!(nearest_to(&store, id), id);
        }
        // A removed file's vectors in the recent graph are dropped at once.
        remove_file(&store, "b.rs");
        assert_eq!(sizes(&store), (4400, 0));
        assert!(!store.vector_deletes_due().unwrap());
        // The recent graph is merged once it holds more than MERGE_MIN.
        for (n, start) in (4500..8700).step_by(600).enumerate() {
            add_file(&store, &format!("c{n}.rs"), start..start + 600);
        }
        assert_eq!(sizes(&store), (8600, 0));
        for id in [3, 4500, 8699] {
            assert_eq!(nearest_to(&store, id), id);
        }
    }

    #[test]
    fn removed_vectors_of_the_main_graph_wait_for_a_merge_unseen_by_searches() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let waiting = |store: &Store| {
            store
                .read(|rtxn| Ok(store.vector_deletes.len(rtxn)?))
                .unwrap()
        };
        add_file(&store, "a.rs", 0..8000);
        add_file(&store, "b.rs", 8000..9100);
        assert_eq!(sizes(&store), (9100, 0));
        remove_file(&store, "b.rs");
        // Still in the main graph, queued, not due (no more than an eighth of it), never
        // found.
        assert_eq!(sizes(&store), (9100, 0));
        assert_eq!(waiting(&store), 1100);
        assert!(!store.vector_deletes_due().unwrap());
        let found = store.nearest(&vector(8100), 50, None, 0).unwrap();
        assert!(found.iter().all(|(id, _)| *id < 8000), "{found:?}");
        // The next merge drops them.
        add_file(&store, "c.rs", 9100..10200);
        assert_eq!(sizes(&store), (9100, 0));
        assert_eq!(waiting(&store), 0);
        assert_eq!(nearest_to(&store, 10000), 10000);
        assert_eq!(nearest_to(&store, 10), 10);
        // Many removed at once are due: dropped by the next vector commit, empty or not.
        remove_file(&store, "a.rs");
        assert_eq!((sizes(&store), waiting(&store)), ((1100, 0), 0));
    }
}
