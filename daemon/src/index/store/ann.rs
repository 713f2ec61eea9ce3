//! The approximate-nearest-neighbour index over chunk vectors: hannoy's HNSW graph of
//! sign-bit vectors, in its own database of the project's LMDB environment. This is the only
//! module that names the ANN crate; the store asks it for candidates and re-scores them with
//! the exact (int8) vectors of `embed_cache` (see `vectors.rs`).
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

/// The index (within the database) holding the chunk vectors.
const INDEX: u16 = 0;
/// Graph links per node above layer 0, and on layer 0.
const M: usize = 16;
const M0: usize = 32;
/// Candidates kept while linking a new node. 64 instead of 128 halved the graph build a
/// second checkout waits for (sympy: 15.8 -> 9.7 s) at the same recall (.985).
const EF_CONSTRUCTION: usize = 64;
/// Candidates kept while searching, at least (the `effort` of a search raises it).
const EF_SEARCH: usize = 200;

/// A read view of the graph.
pub(super) struct AnnReader<'t>(hannoy::Reader<'t, Distance>);

impl<'t> AnnReader<'t> {
    /// The graph as of `rtxn`, or `None` while nothing has been embedded yet.
    pub(super) fn open(rtxn: &'t RoTxn, database: Database) -> Result<Option<Self>, Error> {
        match hannoy::Reader::open(rtxn, INDEX, database) {
            Ok(reader) => Ok(Some(AnnReader(reader))),
            Err(hannoy::Error::MissingMetadata(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Ids of the items (chunk ids) with a vector.
    pub(super) fn item_ids(&self) -> &RoaringBitmap {
        self.0.item_ids()
    }

    pub(super) fn dimensions(&self) -> usize {
        self.0.dimensions()
    }

    /// The items nearest to `query` by sign-bit cosine, among `candidates` if given: at
    /// least `count`, and the whole candidate list of the search (HNSW's `ef`: `effort`, or
    /// the default when 0), for the caller to re-score.
    pub(super) fn nearest(
        &self,
        rtxn: &RoTxn,
        query: &[f32],
        count: usize,
        effort: usize,
        candidates: Option<&RoaringBitmap>,
    ) -> Result<Vec<(u32, f32)>, Error> {
        let ef = if effort == 0 { EF_SEARCH } else { effort };
        let mut builder = self.0.nns(count.max(ef));
        builder.ef_search(ef);
        if let Some(candidates) = candidates {
            builder.candidates(candidates);
        }
        Ok(builder.by_vector(rtxn, query)?.into_nns())
    }
}

/// Writes to the graph, inside the writer's transaction.
pub(super) struct AnnWriter(hannoy::Writer<'static, Distance>);

impl AnnWriter {
    pub(super) fn new(database: Database, dims: usize) -> Self {
        AnnWriter(hannoy::Writer::new(database, INDEX, dims))
    }

    pub(super) fn add(&self, wtxn: &mut RwTxn, item: u32, vector: &[f32]) -> Result<(), Error> {
        self.0.add_item(wtxn, item, vector)
    }

    pub(super) fn delete(&self, wtxn: &mut RwTxn, item: u32) -> Result<(), Error> {
        self.0.del_item(wtxn, item).map(drop)
    }

    /// Link the items added or deleted in this transaction into the graph (required before
    /// readers can search them). Deterministic for a given `seed`.
    pub(super) fn build(&self, wtxn: &mut RwTxn, seed: u64) -> Result<(), Error> {
        use rand::SeedableRng;
        if self.0.need_build(wtxn)? {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            self.0
                .builder(&mut rng)
                .ef_construction(EF_CONSTRUCTION)
                .build::<M, M0>(wtxn)?;
        }
        Ok(())
    }
}
