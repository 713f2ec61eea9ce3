//! Vector candidates: the chunks nearest to a query vector in the ANN graph, within the request's
//! path and language filters.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Filters, Searcher};
use crate::embed::{EmbedError, Embedding};
use crate::error::IndexError;

impl Searcher<'_> {
    /// Chunk ids nearest to the query vector, best first, within the filters; and the share
    /// of the project's chunks that have their vector (1: every one). `Err` says why vectors
    /// cannot be used.
    pub(super) fn semantic_ranking(
        &self,
        query_vector: impl FnOnce(&Embedding) -> Result<Arc<Vec<f32>>, EmbedError>,
        depth: usize,
        filters: &Filters,
    ) -> Result<(Vec<(u64, f32)>, f32), String> {
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
        let pending = self.index.progress.pending.load(Ordering::Relaxed);
        let chunks = self.index.progress.chunks.load(Ordering::Relaxed);
        // 1 exactly when nothing is pending (callers read `seen >= 1` as complete).
        let seen = if pending == 0 || chunks == 0 {
            1.0
        } else {
            (chunks.saturating_sub(pending) as f32 / chunks as f32).min(1.0 - f32::EPSILON)
        };
        // Cosine distances to similarities: larger is nearer, as fusion expects.
        let ranking = found
            .into_iter()
            .map(|(id, distance)| (id, 1.0 - distance))
            .collect();
        Ok((ranking, seen))
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
