//! Chunks holding one word, for `usages` and the code graph: their documents, or only
//! their chunk ids (from the fast field, no document loaded).

use tantivy::collector::{Collector, SegmentCollector, TopDocs};
use tantivy::columnar::Column;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery, TermSetQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader, Term};

use super::{Lexical, LexicalHit};
use crate::error::IndexError;

impl Lexical {
    /// `word` (one indexed token: lowercase, outer underscores trimmed) in a chunk's body
    /// or names.
    fn word_query(&self, word: &str) -> BooleanQuery {
        let f = &self.fields;
        BooleanQuery::new(
            [f.body, f.names]
                .into_iter()
                .map(|field| {
                    let query = TermQuery::new(
                        Term::from_field_text(field, word),
                        IndexRecordOption::Basic,
                    );
                    (Occur::Should, Box::new(query) as Box<dyn Query>)
                })
                .collect(),
        )
    }

    /// Chunks whose text or names hold `word` whole, within `paths` if given; at most
    /// `limit`, in index order.
    pub fn chunks_with_word(
        &self,
        word: &str,
        paths: Option<&[String]>,
        limit: usize,
    ) -> Result<Vec<LexicalHit>, IndexError> {
        let f = &self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, Box::new(self.word_query(word)))];
        if let Some(paths) = paths {
            let terms = paths.iter().map(|p| Term::from_field_text(f.path_key, p));
            clauses.push((Occur::Must, Box::new(TermSetQuery::new(terms))));
        }
        let searcher = self.reader.searcher();
        let found = searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(limit.max(1)).order_by_score(),
            )
            .map_err(|e| self.err(e))?;
        let mut hits = Vec::with_capacity(found.len());
        for (_, address) in found {
            hits.push(self.hit(&searcher, address, 0.0)?);
        }
        Ok(hits)
    }

    /// The chunk ids of every live document holding `word` in its body or names.
    pub fn chunk_ids_with_word(&self, word: &str) -> Result<Vec<u64>, IndexError> {
        self.reader
            .searcher()
            .search(&self.word_query(word), &ChunkIds)
            .map_err(|e| self.err(e))
    }
}

/// The chunk id of every matching live document, read from the fast field as each is
/// found (no set of addresses built, no score computed).
struct ChunkIds;

struct SegmentChunkIds {
    column: Column<u64>,
    ids: Vec<u64>,
}

impl Collector for ChunkIds {
    type Fruit = Vec<u64>;
    type Child = SegmentChunkIds;

    fn for_segment(
        &self,
        _segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentChunkIds> {
        Ok(SegmentChunkIds {
            column: reader.fast_fields().u64("chunk_id")?,
            ids: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Vec<u64>>) -> tantivy::Result<Vec<u64>> {
        Ok(fruits.concat())
    }
}

impl SegmentCollector for SegmentChunkIds {
    type Fruit = Vec<u64>;

    fn collect(&mut self, doc: DocId, _score: Score) {
        if let Some(id) = self.column.first(doc) {
            self.ids.push(id);
        }
    }

    fn harvest(self) -> Vec<u64> {
        self.ids
    }
}
