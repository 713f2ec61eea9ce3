//! Making the in-memory copy: every live chunk's cached vector, read from the store in two
//! sequential scans (the chunks by id, then the cache by text hash) and joined. What the
//! scans read of the store's map is given back as they go: at 518,706 chunks the copy's
//! build read the whole cache and every chunk record, and those pages, resident at once
//! beside the searches' and the writer's, were the daemon's peak.

use heed::RoTxn;
use heed::types::Bytes;

use super::super::quantized::{int8_norm, int8_values, sign_words};
use super::super::{Fail, Store};
use super::{Bounds, ExactVectors, Kind, Rows};

/// The scans give the map's pages back every this many records: about 6 MB of chunk
/// records, or 25 MB of 384-dimension cache rows.
const RELEASE_EVERY: usize = 1 << 16;

impl Store {
    /// Every live chunk's cached vector, read at `generation`, as int8 rows or sign rows
    /// (whichever `bounds` lets it be); `None` when they would take more than both, or when
    /// some chunk's vector is in the graph but not in the cache (a scan would miss it).
    pub(super) fn exact_vectors(
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
        for (n, item) in self
            .chunks
            .remap_data_type::<Bytes>()
            .iter(rtxn)?
            .enumerate()
        {
            self.release_every(n);
            let (id, record) = item?;
            if let Some(hash) = super::super::codec::chunk_hash(record) {
                by_hash.push((hash, id));
            }
        }
        by_hash.sort_unstable();
        self.release_mapped_pages();
        // Each cached vector is copied once, as the copy holds it; its chunks point to it.
        let mut distinct = Rows::empty(kind, dims);
        let mut found: Vec<(u64, usize)> = Vec::with_capacity(chunks);
        let mut next = 0;
        for (n, item) in self.embed_cache.iter(rtxn)?.enumerate() {
            self.release_every(n);
            let (hash, bytes) = item?;
            while next < by_hash.len() && by_hash[next].0 < hash {
                next += 1;
            }
            if bytes.len() != width {
                continue;
            }
            let mut slot = None;
            while next < by_hash.len() && by_hash[next].0 == hash {
                let slot = *slot.get_or_insert_with(|| distinct.push(bytes));
                found.push((by_hash[next].1, slot));
                next += 1;
            }
        }
        self.release_mapped_pages();
        drop(by_hash);
        let waiting = self.embed_pending.len(rtxn)? as usize;
        if found.len() + waiting < chunks {
            return Ok(None);
        }
        found.sort_unstable_by_key(|(id, _)| *id);
        let rows = distinct.gathered(width, found.iter().map(|(_, slot)| *slot));
        Ok(Some(ExactVectors {
            generation,
            built: std::time::Instant::now(),
            dims,
            ids: found.into_iter().map(|(id, _)| id).collect(),
            rows,
        }))
    }

    /// Give the map's pages back after every [`RELEASE_EVERY`] records a scan reads.
    fn release_every(&self, records: usize) {
        if records > 0 && records.is_multiple_of(RELEASE_EVERY) {
            self.release_mapped_pages();
        }
    }
}

impl Rows {
    /// No rows yet, of `kind`, for `dims`-dimension vectors.
    fn empty(kind: Kind, dims: usize) -> Rows {
        match kind {
            Kind::Int8 => Rows::Int8 {
                rows: Vec::new(),
                norms: Vec::new(),
            },
            Kind::Signs => Rows::Signs {
                words: dims.div_ceil(64),
                rows: Vec::new(),
            },
        }
    }

    /// Add a cached vector (`bytes`: a scale, then its int8 values) as a row; returns its
    /// place.
    fn push(&mut self, bytes: &[u8]) -> usize {
        match self {
            Rows::Int8 { rows, norms } => {
                rows.extend_from_slice(bytes);
                norms.push(int8_norm(int8_values(bytes)));
                norms.len() - 1
            }
            Rows::Signs { words, rows } => {
                rows.extend(sign_words(int8_values(bytes)));
                rows.len() / *words - 1
            }
        }
    }

    /// The rows at `slots`, in that order (an int8 row is `width` bytes).
    fn gathered(&self, width: usize, slots: impl Iterator<Item = usize>) -> Rows {
        match self {
            Rows::Int8 { rows, norms } => {
                let (mut to_rows, mut to_norms) = (Vec::new(), Vec::new());
                for slot in slots {
                    to_rows.extend_from_slice(&rows[slot * width..(slot + 1) * width]);
                    to_norms.push(norms[slot]);
                }
                Rows::Int8 {
                    rows: to_rows,
                    norms: to_norms,
                }
            }
            Rows::Signs { words, rows } => Rows::Signs {
                words: *words,
                rows: slots
                    .flat_map(|slot| &rows[slot * words..(slot + 1) * words])
                    .copied()
                    .collect(),
            },
        }
    }
}
