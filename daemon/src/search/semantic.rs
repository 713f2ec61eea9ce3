//! Vector candidates: the chunks nearest to a query vector in the ANN graph, within the request's
//! path and language filters.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Filters, Searcher, Semantic};
use crate::embed::{EmbedError, Embedding};
use crate::error::IndexError;

/// How many of the project's chunks had their vector when a search ran.
#[derive(Debug, Clone, Copy)]
pub(super) struct Embedded {
    chunks: u64,
    pending: u64,
}

impl Embedded {
    /// The share of the project's chunks with their vector, 0 to 1 (1 when none is pending).
    pub(super) fn share(self) -> f32 {
        if self.pending == 0 || self.chunks == 0 {
            1.0
        } else {
            self.chunks.saturating_sub(self.pending) as f32 / self.chunks as f32
        }
    }

    /// What the search tells of the vectors it used.
    pub(super) fn used(self) -> Semantic {
        Semantic::Used {
            complete: self.pending == 0,
        }
    }
}

impl Searcher<'_> {
    /// Chunk ids nearest to the query vector, best first, within the filters; and how many
    /// of the project's chunks had their vector. `Err` says why vectors cannot be used.
    pub(super) fn semantic_ranking(
        &self,
        query_vector: impl FnOnce(&Embedding) -> Result<Arc<Vec<f32>>, EmbedError>,
        depth: usize,
        filters: &Filters,
    ) -> Result<(Vec<(u64, f32)>, Embedded), String> {
        let Some(embedding) = &self.config.embedding else {
            return Err("semantic search is off (AMANMCP_EMBEDDER=off)".into());
        };
        let vector = query_vector(embedding).map_err(|e| e.to_string())?;
        let candidates = match (&filters.paths, &filters.language) {
            (None, None) => None,
            _ => Some(self.chunk_filter(filters).map_err(|e| e.to_string())?),
        };
        let found = self
            .index
            .store
            .nearest(&vector, depth, candidates.as_ref(), self.config.ann_effort)
            .map_err(|e| e.to_string())?;
        let embedded = Embedded {
            chunks: self.index.progress.chunks.load(Ordering::Relaxed),
            pending: self.index.progress.pending.load(Ordering::Relaxed),
        };
        // Cosine distances to similarities: larger is nearer, as fusion expects.
        let ranking = found
            .into_iter()
            .map(|(id, distance)| (id, 1.0 - distance))
            .collect();
        Ok((ranking, embedded))
    }

    /// Chunk ids of the files passing the path and language filters.
    fn chunk_filter(&self, filters: &Filters) -> Result<roaring::RoaringBitmap, IndexError> {
        let files = self.index.store.all_files()?;
        let wanted: Option<HashSet<&str>> = filters
            .paths
            .as_ref()
            .map(|p| p.iter().map(String::as_str).collect());
        let mut out = roaring::RoaringBitmap::new();
        for (path, record) in &files {
            if wanted.as_ref().is_some_and(|w| !w.contains(path.as_str())) {
                continue;
            }
            if filters
                .language
                .as_deref()
                .is_some_and(|l| record.language != l)
            {
                continue;
            }
            out.extend(
                record
                    .chunk_ids
                    .iter()
                    .filter_map(|id| u32::try_from(*id).ok()),
            );
        }
        Ok(out)
    }
}
