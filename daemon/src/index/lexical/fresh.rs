//! What makes the lexical index answer exactly as a fresh index of the same files would,
//! whatever it went through (edits, passes killed and redone, merges).
//!
//! Equal scores are ordered by [`tie_key`], a property of the chunk, not of its place in the
//! index.
//!
//! tantivy counts a deleted document in its statistics (documents, document frequency,
//! tokens) until its segment is rewritten, and a merge of a segment holding deleted
//! documents *estimates* the tokens left from quantised field norms. Either way an index that
//! replaced files (an edit, a pass redone after a crash) scores differently from a fresh
//! index of the same files. So segments holding deleted documents are never merged by the
//! policy ([`LiveSegmentsOnly`]); at the end of a full pass their live documents are written
//! again as new documents ([`Lexical::settle`]), which leaves every count exact.

use tantivy::indexer::{LogMergePolicy, MergeCandidate, MergePolicy};
use tantivy::schema::Value;
use tantivy::{IndexWriter, SegmentMeta, TantivyDocument, Term};

use super::Lexical;
use crate::error::IndexError;

/// The order among chunks of equal score: a hash of the chunk's path and first line, so it
/// depends on what the chunk is, never on where it sits in the index (which segment, which
/// document number). A recovered index, whose documents were added in another order and
/// merged differently, breaks ties exactly as a fresh one.
fn tie_key(path: &str, start_line: u32) -> u64 {
    let mut bytes = Vec::with_capacity(path.len() + 4);
    bytes.extend_from_slice(path.as_bytes());
    bytes.extend_from_slice(&start_line.to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// Called when tantivy's segments may have changed without a commit of ours: a merge ended.
pub type OnSegmentsMoved = std::sync::Arc<dyn Fn() + Send + Sync>;

/// tantivy's log merge policy over the segments without deleted documents. tantivy asks
/// it after every commit and after every merge ends, so it also says when a merge may have
/// landed ([`OnSegmentsMoved`]): the reader, reloaded only at commits, would otherwise keep
/// the merged-away segments until the next edit, whose commit then paid for opening the
/// merged ones (304 ms at 55,000 files).
pub(super) struct LiveSegmentsOnly {
    policy: LogMergePolicy,
    moved: Option<OnSegmentsMoved>,
}

impl LiveSegmentsOnly {
    pub(super) fn new(moved: Option<OnSegmentsMoved>) -> Self {
        LiveSegmentsOnly {
            policy: LogMergePolicy::default(),
            moved,
        }
    }
}

impl std::fmt::Debug for LiveSegmentsOnly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSegmentsOnly")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl MergePolicy for LiveSegmentsOnly {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        if let Some(moved) = &self.moved {
            moved();
        }
        let live: Vec<SegmentMeta> = segments
            .iter()
            .filter(|s| !s.has_deletes())
            .cloned()
            .collect();
        self.policy.compute_merge_candidates(&live)
    }
}

impl Lexical {
    /// Add to `doc` the fields tantivy does not store, from those it does: the path as
    /// searchable words and the [`tie_key`]. A new document and one written again by
    /// [`Lexical::settle`] both get them here.
    pub(super) fn add_unstored(&self, doc: &mut TantivyDocument, path: &str, start_line: u32) {
        doc.add_text(self.fields.path, path);
        doc.add_u64(self.fields.tie, tie_key(path, start_line));
    }

    /// Write the live documents of every segment holding deleted ones again, so tantivy
    /// drops those segments at the commit and counts live documents only. Returns the
    /// number of documents written again.
    pub fn settle(&self, writer: &mut IndexWriter) -> Result<u64, IndexError> {
        let f = &self.fields;
        let searcher = self.reader.searcher();
        let mut rewritten = 0;
        for segment in searcher.segment_readers() {
            if !segment.has_deletes() {
                continue;
            }
            let store = segment
                .get_store_reader(1)
                .map_err(|e| self.err(e.into()))?;
            for doc in store.iter::<TantivyDocument>(segment.alive_bitset()) {
                let mut doc = doc.map_err(|e| self.err(e))?;
                let number = |field| doc.get_first(field).and_then(|v| v.as_u64());
                let (chunk_id, start_line) = (number(f.chunk_id), number(f.start_line));
                let path = doc.get_first(f.path_key).and_then(|v| v.as_str());
                let (Some(chunk_id), Some(path)) = (chunk_id, path.map(str::to_string)) else {
                    continue;
                };
                self.add_unstored(&mut doc, &path, start_line.unwrap_or(0) as u32);
                writer.delete_term(Term::from_field_u64(f.chunk_id, chunk_id));
                writer.add_document(doc).map_err(|e| self.err(e))?;
                rewritten += 1;
            }
        }
        if rewritten > 0 {
            self.commit(writer)?;
        }
        Ok(rewritten)
    }
}
