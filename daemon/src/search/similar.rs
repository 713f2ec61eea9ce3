//! `similar`: code like a reference (a location, a symbol or a snippet), the reference
//! itself left out: its distinctive terms (BM25 "more like this") fused with its vector's
//! nearest chunks.

use std::sync::Arc;

use super::fusion::SearchMode;
use super::lookup::{self, Reference};
use super::{FUSION_DEPTH, Found, SearchParams, Searcher, Semantic, query};
use crate::embed::EmbedError;
use crate::error::Error;
use crate::index::lexical::{LexicalHit, LexicalQuery};

impl Searcher<'_> {
    /// Code similar to `reference` (see [`lookup::reference`]), the reference excluded.
    pub fn similar(&self, reference: &Reference, params: &SearchParams) -> Result<Found, Error> {
        let filters = self.filters(params)?;
        let found = lookup::reference(self.root, &self.index.store, reference)?;
        let overlaps = |hit: &LexicalHit| {
            found.location.as_ref().is_some_and(|(path, start, end)| {
                &hit.path == path && hit.start_line <= *end && *start <= hit.end_line
            })
        };
        // Fetch more than asked: hits overlapping the reference are dropped.
        let depth = (params.limit + 8).max(FUSION_DEPTH);
        let (lexical_hits, lexical_total) = match params.mode {
            SearchMode::Semantic => (Vec::new(), 0),
            _ => self.index.lexical.search(&LexicalQuery {
                text: &found.text,
                terms: &query::weighted_terms(&found.text),
                paths: filters.paths.as_deref(),
                language: filters.language.as_deref(),
                offset: 0,
                limit: depth,
                more_like_this: true,
                mentioned: &[],
                chunks: None,
            })?,
        };
        let (ranking, seen, semantic) = match params.mode {
            SearchMode::Lexical => (Vec::new(), 1.0, Semantic::NotUsed),
            _ => {
                let text = crate::embed::worker::document_text(
                    found
                        .location
                        .as_ref()
                        .map_or("", |(path, _, _)| path.as_str()),
                    None,
                    &found.text,
                );
                match self.semantic_ranking(
                    |embedding| {
                        embedding
                            .embed_documents(std::slice::from_ref(&text))?
                            .pop()
                            .map(Arc::new)
                            .ok_or_else(|| EmbedError::Model("no vector returned".into()))
                    },
                    depth,
                    &filters,
                ) {
                    Ok((ranking, embedded)) => (ranking, embedded.share(), embedded.used()),
                    Err(reason) => (Vec::new(), 1.0, Semantic::Unavailable(reason)),
                }
            }
        };
        let excluded = |hit: &LexicalHit| overlaps(hit);
        let (hits, total) = self.fused(
            lexical_hits,
            lexical_total as u64,
            &ranking,
            &self.config.fusion.seen(seen),
            Some(&excluded),
        )?;
        let hits: Vec<LexicalHit> = hits.into_iter().take(params.limit).collect();
        Ok(Found::page(hits, total, 0, semantic))
    }
}
