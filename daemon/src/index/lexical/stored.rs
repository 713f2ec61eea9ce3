//! Stored documents read back as search hits: by address, or by chunk id.

use tantivy::schema::document::{DeserializeError, DocumentDeserialize, DocumentDeserializer};
use tantivy::schema::{Field, IndexRecordOption, OwnedValue};
use tantivy::{DocAddress, DocSet, TERMINATED, Term};

use super::{Lexical, LexicalHit};
use crate::error::IndexError;

/// A stored document as its fields' values in order, each read once into its own value
/// (a `TantivyDocument` packs them into one buffer, from which a hit copied them again).
struct Stored(Vec<(Field, OwnedValue)>);

impl DocumentDeserialize for Stored {
    fn deserialize<'de, D: DocumentDeserializer<'de>>(
        mut deserializer: D,
    ) -> Result<Self, DeserializeError> {
        let mut values = Vec::with_capacity(deserializer.size_hint());
        while let Some(entry) = deserializer.next_field::<OwnedValue>()? {
            values.push(entry);
        }
        Ok(Stored(values))
    }
}

impl Lexical {
    /// The live documents of the given chunks, by chunk id (missing ones left out).
    pub fn chunks_by_id(
        &self,
        ids: &[u64],
    ) -> Result<std::collections::HashMap<u64, LexicalHit>, IndexError> {
        let mut out = std::collections::HashMap::with_capacity(ids.len());
        if ids.is_empty() {
            return Ok(out);
        }
        // Each id's posting read directly, segment by segment: a term-set query would build
        // an FST of the ids on every call (most of this function's time, measured).
        let f = &self.fields;
        let searcher = self.reader.searcher();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let postings_of = segment
                .inverted_index(f.chunk_id)
                .map_err(|e| self.err(e))?;
            for id in ids {
                if out.contains_key(id) {
                    continue;
                }
                let term = Term::from_field_u64(f.chunk_id, *id);
                let Some(mut postings) = postings_of
                    .read_postings(&term, IndexRecordOption::Basic)
                    .map_err(|e| self.err(e.into()))?
                else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if segment
                        .alive_bitset()
                        .is_none_or(|alive| alive.is_alive(doc))
                    {
                        let address = DocAddress::new(ord as u32, doc);
                        let hit = self.hit(&searcher, address, 0.0)?;
                        out.insert(hit.chunk_id, hit);
                        break;
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(out)
    }

    /// The hit of a stored document at `address`, its values moved out as read.
    pub(super) fn hit(
        &self,
        searcher: &tantivy::Searcher,
        address: DocAddress,
        score: f32,
    ) -> Result<LexicalHit, IndexError> {
        let Stored(values) = searcher.doc(address).map_err(|e| self.err(e))?;
        let f = &self.fields;
        let mut hit = LexicalHit {
            score,
            ..LexicalHit::default()
        };
        for (field, value) in values {
            match value {
                OwnedValue::U64(n) if field == f.chunk_id => hit.chunk_id = n,
                OwnedValue::U64(n) if field == f.start_line => hit.start_line = n as u32,
                OwnedValue::U64(n) if field == f.end_line => hit.end_line = n as u32,
                OwnedValue::Str(text) if field == f.path_key => hit.path = text,
                OwnedValue::Str(text) if field == f.language => hit.language = text,
                OwnedValue::Str(text) if field == f.symbol => hit.symbol = Some(text),
                OwnedValue::Str(text) if field == f.kind => hit.kind = Some(text),
                OwnedValue::Str(text) if field == f.body => hit.body = text,
                _ => {}
            }
        }
        Ok(hit)
    }
}
