//! Reading every record of the environment, as the index check does before a project's
//! index is opened for use (see `index::health`): every page every database reaches is
//! touched (a value's bytes are hashed, so overflow pages are read too), the records of this
//! store's own databases are decoded (the ANN graph's, in several encodings, are read as
//! bytes), and the records that point at each other are counted against each other. LMDB
//! keeps no checksums: this finds what a reader would trip on (damaged pages, records that
//! do not decode, files and chunks that disagree), not every flipped bit.

use heed::types::Bytes;

use super::{Fail, Store};
use crate::error::IndexError;

/// What the environment holds, as read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// File records.
    pub files: u64,
    /// Chunk records.
    pub chunks: u64,
    /// Paths marked dirty by an interrupted commit.
    pub dirty: u64,
}

impl Store {
    /// Open the environment to check it: its databases, nothing dropped or compacted.
    pub fn open_to_check(dir: &std::path::Path) -> Result<Store, IndexError> {
        Store::open_env(dir)
    }

    /// Read and decode every record (see the module doc). An error names the first damage.
    pub fn read_everything(&self) -> Result<Tally, IndexError> {
        let damaged = |reason: String| IndexError::Damaged {
            path: self.path.clone(),
            reason,
        };
        let mut tally = Tally::default();
        let mut referenced = 0u64;
        self.read(|rtxn| {
            for item in self.files.iter(rtxn)? {
                let (_, record) = item?;
                tally.files += 1;
                referenced += record.chunk_ids.len() as u64;
            }
            for item in self.chunks.iter(rtxn)? {
                item?;
                tally.chunks += 1;
            }
            for item in self.file_symbols.iter(rtxn)? {
                item?;
            }
            for item in self.file_refs.iter(rtxn)? {
                item?;
            }
            for item in self.dirty.iter(rtxn)? {
                item?;
                tally.dirty += 1;
            }
            for item in self.symbol_index.iter(rtxn)? {
                item?;
            }
            for item in self.embed_pending.iter(rtxn)? {
                item?;
            }
            for item in self.vector_deletes.iter(rtxn)? {
                item?;
            }
            for item in self.long_keys.0.iter(rtxn)? {
                item?;
            }
            for item in self.meta.iter(rtxn)? {
                touch(item?.1);
            }
            for item in self.embed_cache.iter(rtxn)? {
                touch(item?.1);
            }
            let raw = self.vectors.remap_types::<Bytes, Bytes>();
            for item in raw.iter(rtxn)? {
                let (key, value) = item?;
                touch(key);
                touch(value);
            }
            Ok::<_, Fail>(())
        })?;
        if referenced != tally.chunks {
            return Err(damaged(format!(
                "{} file records name {referenced} chunks, but {} chunk records exist",
                tally.files, tally.chunks
            )));
        }
        Ok(tally)
    }
}

/// Read every byte of `bytes` (so a page past the file's end is reached here, in the
/// checking process, rather than in the daemon).
fn touch(bytes: &[u8]) {
    std::hint::black_box(xxhash_rust::xxh3::xxh3_64(bytes));
}
