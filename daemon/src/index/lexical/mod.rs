//! The project's tantivy index: BM25 over chunk bodies, symbols and paths.
//!
//! Symbols and paths are separate fields weighted above body text. `path_key` holds the raw
//! path, for deleting a file's documents and for path filters.

use std::path::{Path, PathBuf};

use tantivy::collector::{Count, TopDocs};
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery, TermSetQuery,
};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::{
    DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Score, SegmentReader, TantivyDocument,
    Term,
};

use crate::error::IndexError;

mod fresh;
mod mapped;
mod stored;
mod words;

pub use fresh::OnSegmentsMoved;
use mapped::Mapped;

use crate::index::tokenizer::{self, CODE_TOKENIZER, CodeTokenizer};

/// Weight of a match in the symbol field relative to the body.
const SYMBOL_BOOST: f32 = 3.0;
/// Weight of a match in the path relative to the body.
const PATH_BOOST: f32 = 2.0;
/// At most this many distinct query terms are used (long issue texts).
const MAX_QUERY_TERMS: usize = 128;

/// The schema's fields.
#[derive(Clone, Copy)]
pub struct Fields {
    chunk_id: Field,
    path: Field,
    path_key: Field,
    language: Field,
    symbol: Field,
    names: Field,
    kind: Field,
    body: Field,
    start_line: Field,
    end_line: Field,
    /// [`tie_key`] of the chunk: equal scores are ordered by it.
    tie: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let code_text = |stored: bool| {
        let options = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(CODE_TOKENIZER)
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        if stored {
            options.set_stored()
        } else {
            options
        }
    };
    let fields = Fields {
        chunk_id: builder.add_u64_field("chunk_id", INDEXED | STORED | FAST),
        path: builder.add_text_field("path", code_text(false)),
        path_key: builder.add_text_field("path_key", STRING | STORED),
        language: builder.add_text_field("language", STRING | STORED),
        symbol: builder.add_text_field("symbol", STORED),
        names: builder.add_text_field("names", code_text(true)),
        kind: builder.add_text_field("kind", STRING | STORED),
        body: builder.add_text_field("body", code_text(true)),
        start_line: builder.add_u64_field("start_line", STORED),
        end_line: builder.add_u64_field("end_line", STORED),
        tie: builder.add_u64_field("tie", FAST),
    };
    (builder.build(), fields)
}

/// One chunk as a tantivy document.
pub struct ChunkDoc<'a> {
    /// LMDB chunk id.
    pub chunk_id: u64,
    /// Relative path.
    pub path: &'a str,
    /// Language name.
    pub language: &'a str,
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (1-based, inclusive).
    pub end_line: u32,
    /// Symbol name, if known.
    pub symbol: Option<&'a str>,
    /// Symbol kind, if known.
    pub kind: Option<&'a str>,
    /// Every symbol name defined in the chunk.
    pub names: &'a [String],
    /// The chunk's text.
    pub body: &'a str,
}

/// A search request against the lexical index.
pub struct LexicalQuery<'a> {
    /// Free text (read for its distinctive terms in "more like this" queries).
    pub text: &'a str,
    /// The query's terms with their weights (`search::query::weighted_terms`), computed once
    /// by the caller.
    pub terms: &'a [(String, f32)],
    /// Only these paths (already expanded from a glob), if set.
    pub paths: Option<&'a [String]>,
    /// Only this language, if set.
    pub language: Option<&'a str>,
    /// Results to skip.
    pub offset: usize,
    /// Results to return.
    pub limit: usize,
    /// Treat `text` as a reference document: query only its most distinctive terms.
    pub more_like_this: bool,
    /// Files the query names: their chunks are retrieved even without a term in common,
    /// and their scores multiplied by [`MENTIONED_FILE_FACTOR`].
    pub mentioned: &'a [String],
    /// Only these chunks, if set: each one's score for the query, for candidates another
    /// ranking found.
    pub chunks: Option<&'a [u64]>,
}

/// Score factor of chunks in files the query names.
const MENTIONED_FILE_FACTOR: f32 = 2.0;
/// Candidates re-ranked when the query names files.
const MENTION_DEPTH: usize = 200;

/// Terms kept from a reference document in a "more like this" query.
const MORE_LIKE_THIS_TERMS: usize = 40;

/// A scored chunk.
#[derive(Debug, Clone, Default)]
pub struct LexicalHit {
    /// LMDB chunk id.
    pub chunk_id: u64,
    /// Relative path.
    pub path: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
    /// Language.
    pub language: String,
    /// Symbol, if known.
    pub symbol: Option<String>,
    /// Kind, if known.
    pub kind: Option<String>,
    /// BM25 score.
    pub score: f32,
    /// The chunk text.
    pub body: String,
    /// What the ranking stage saw in this chunk (empty before it runs).
    pub why: Vec<String>,
    /// Other symbols defined in the chunk (set by `search::label`).
    pub defines: Vec<String>,
}

/// The tantivy index of one project.
pub struct Lexical {
    dir: PathBuf,
    directory: Mapped,
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

impl Lexical {
    /// Open the index in `dir`, creating it if absent.
    pub fn open(dir: &Path) -> Result<Lexical, IndexError> {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
        let (schema, fields) = schema();
        let directory = Mapped::open(dir).map_err(|e| IndexError::tantivy(dir, e.into()))?;
        let index = Index::open_or_create(directory.clone(), schema)
            .map_err(|e| IndexError::tantivy(dir, e))?;
        index
            .tokenizers()
            .register(CODE_TOKENIZER, CodeTokenizer::default());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| IndexError::tantivy(dir, e))?;
        Ok(Lexical {
            dir: dir.to_path_buf(),
            directory,
            index,
            reader,
            fields,
        })
    }

    /// Check the index in `dir` without creating or changing anything: `None` when there is
    /// none (no `meta.json`), else its live document count once every file's checksum held.
    pub fn check_files(dir: &Path) -> Result<Option<u64>, IndexError> {
        if !dir.join("meta.json").exists() {
            return Ok(None);
        }
        let err = |e| IndexError::tantivy(dir, e);
        let directory = tantivy::directory::MmapDirectory::open(dir).map_err(|e| err(e.into()))?;
        let index = Index::open(directory).map_err(err)?;
        let bad = index.validate_checksum().map_err(err)?;
        if let Some(file) = bad.iter().next() {
            return Err(IndexError::Damaged {
                path: dir.to_path_buf(),
                reason: format!("{} fails its checksum", file.display()),
            });
        }
        let reader = index.reader().map_err(err)?;
        Ok(Some(reader.searcher().num_docs()))
    }

    /// The index's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn err(&self, e: tantivy::TantivyError) -> IndexError {
        IndexError::tantivy(&self.dir, e)
    }

    /// A writer; only the project's writer thread holds one. `moved` is called whenever a
    /// merge may have changed the segments (see [`fresh::OnSegmentsMoved`]).
    pub fn writer(&self, moved: Option<OnSegmentsMoved>) -> Result<IndexWriter, IndexError> {
        // One per core, up to 4. In a quick pass tantivy's indexing is most of the work
        // (20,000 files on 2 cores: keyword search over all of them after 18.4-20.2 s with
        // two threads, 21.6-25.7 s with one); in a parsing pass they wait on the parse
        // threads. The heap is the same, shared among them.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4));
        let writer = self
            .index
            .writer_with_num_threads(threads, crate::memory::budget().writer_heap_bytes(threads))
            .map_err(|e| self.err(e))?;
        writer.set_merge_policy(Box::new(fresh::LiveSegmentsOnly::new(moved)));
        // A daemon killed mid-commit leaves files that no commit references (a `.del` file
        // of a delete that never committed). The next commit at the same opstamp would
        // collide with them (`FileAlreadyExists`), so drop them before any write.
        writer
            .garbage_collect_files()
            .wait()
            .map_err(|e| self.err(e))?;
        Ok(writer)
    }

    /// Queue deletion of every document of `path`.
    pub fn delete_path(&self, writer: &IndexWriter, path: &str) {
        writer.delete_term(Term::from_field_text(self.fields.path_key, path));
    }

    /// Queue a chunk document.
    pub fn add_chunk(&self, writer: &IndexWriter, chunk: &ChunkDoc<'_>) -> Result<(), IndexError> {
        let f = &self.fields;
        let mut doc = TantivyDocument::default();
        doc.add_u64(f.chunk_id, chunk.chunk_id);
        doc.add_text(f.path_key, chunk.path);
        doc.add_text(f.language, chunk.language);
        if let Some(symbol) = chunk.symbol {
            doc.add_text(f.symbol, symbol);
        }
        if !chunk.names.is_empty() || chunk.symbol.is_some() {
            let mut names = chunk.names.join(" ");
            if let Some(symbol) = chunk.symbol {
                names.push(' ');
                names.push_str(symbol);
            }
            doc.add_text(f.names, &names);
        }
        if let Some(kind) = chunk.kind {
            doc.add_text(f.kind, kind);
        }
        doc.add_text(f.body, chunk.body);
        doc.add_u64(f.start_line, u64::from(chunk.start_line));
        doc.add_u64(f.end_line, u64::from(chunk.end_line));
        self.add_unstored(&mut doc, chunk.path, chunk.start_line);
        writer.add_document(doc).map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Commit the writer's pending changes and make them visible to searches.
    pub fn commit(&self, writer: &mut IndexWriter) -> Result<(), IndexError> {
        let started = std::time::Instant::now();
        writer.commit().map_err(|e| self.err(e))?;
        let committed = started.elapsed();
        self.reader.reload().map_err(|e| self.err(e))?;
        tracing::debug!(
            commit_ms = committed.as_secs_f64() * 1e3,
            reload_ms = (started.elapsed() - committed).as_secs_f64() * 1e3,
            segments = self.reader.searcher().segment_readers().len(),
            "tantivy committed"
        );
        Ok(())
    }

    /// Reload the reader if the index's segments are not those it reads (a merge landed
    /// since the last commit); whether it did.
    pub fn refresh_if_stale(&self) -> Result<bool, IndexError> {
        let mut on_disk = self
            .index
            .searchable_segment_ids()
            .map_err(|e| self.err(e))?;
        let mut read: Vec<_> = (self.reader.searcher().segment_readers().iter())
            .map(|s| s.segment_id())
            .collect();
        on_disk.sort();
        read.sort();
        if on_disk == read {
            return Ok(false);
        }
        self.reader.reload().map_err(|e| self.err(e))?;
        Ok(true)
    }

    /// The chunk id of every live document (duplicates included).
    pub fn all_chunk_ids(&self) -> Result<Vec<u64>, IndexError> {
        let searcher = self.reader.searcher();
        let mut out = Vec::new();
        for segment in searcher.segment_readers() {
            let column = segment
                .fast_fields()
                .u64("chunk_id")
                .map_err(|e| self.err(e))?;
            for doc in segment.doc_ids_alive() {
                if let Some(id) = column.first(doc) {
                    out.push(id);
                }
            }
        }
        Ok(out)
    }

    /// Number of live documents visible to searches.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// The share of chunks whose text holds `word` (one token, lowercase), 0 to 1.
    pub fn doc_share(&self, word: &str) -> f32 {
        let searcher = self.reader.searcher();
        let n_docs = searcher.num_docs().max(1) as f32;
        let df = searcher
            .doc_freq(&Term::from_field_text(self.fields.body, word))
            .unwrap_or(0) as f32;
        df / n_docs
    }

    /// Share of the live documents in `language` (as recorded, e.g. `python`).
    pub fn language_share(&self, language: &str) -> f32 {
        let searcher = self.reader.searcher();
        let term = Term::from_field_text(self.fields.language, language);
        searcher.doc_freq(&term).unwrap_or(0) as f32 / searcher.num_docs().max(1) as f32
    }

    /// Bytes used on disk.
    pub fn disk_size(&self) -> u64 {
        dir_size(&self.dir)
    }

    /// Give back the resident pages of the segment files' maps (`mapped`).
    pub fn release_mapped_pages(&self) {
        self.directory.release_pages();
    }

    /// BM25 search. Returns the page of hits and the total number of matches.
    pub fn search(&self, q: &LexicalQuery<'_>) -> Result<(Vec<LexicalHit>, usize), IndexError> {
        let f = &self.fields;
        let mut terms: Vec<(String, f32)> = q.terms.to_vec();
        if q.more_like_this {
            let distinct = terms.into_iter().map(|(t, _)| t).collect();
            terms = self
                .distinctive_terms(q.text, distinct)
                .into_iter()
                .map(|t| (t, 1.0))
                .collect();
        }
        // A long query is cut keeping code terms first (stable: in order of appearance).
        if terms.len() > MAX_QUERY_TERMS {
            terms.sort_by(|a, b| b.1.total_cmp(&a.1));
            terms.truncate(MAX_QUERY_TERMS);
        }
        if terms.is_empty() {
            return Ok((Vec::new(), 0));
        }
        let mut text_clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for (term, weight) in &terms {
            for (field, boost) in [(f.body, 1.0), (f.names, SYMBOL_BOOST), (f.path, PATH_BOOST)] {
                let query = TermQuery::new(
                    Term::from_field_text(field, term),
                    IndexRecordOption::WithFreqs,
                );
                text_clauses.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(Box::new(query), boost * weight)),
                ));
            }
        }
        if !q.mentioned.is_empty() {
            let terms = q
                .mentioned
                .iter()
                .map(|p| Term::from_field_text(f.path_key, p));
            text_clauses.push((
                Occur::Should,
                Box::new(ConstScoreQuery::new(
                    Box::new(TermSetQuery::new(terms)),
                    0.1,
                )),
            ));
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, Box::new(BooleanQuery::new(text_clauses)))];
        if let Some(language) = q.language {
            clauses.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.language, language),
                    IndexRecordOption::Basic,
                )),
            ));
        }
        if let Some(paths) = q.paths {
            if paths.is_empty() {
                return Ok((Vec::new(), 0));
            }
            let terms = paths.iter().map(|p| Term::from_field_text(f.path_key, p));
            clauses.push((Occur::Must, Box::new(TermSetQuery::new(terms))));
        }
        if let Some(ids) = q.chunks {
            if ids.is_empty() {
                return Ok((Vec::new(), 0));
            }
            // A filter: it adds nothing to a chunk's score.
            let terms = ids.iter().map(|id| Term::from_field_u64(f.chunk_id, *id));
            clauses.push((
                Occur::Must,
                Box::new(ConstScoreQuery::new(
                    Box::new(TermSetQuery::new(terms)),
                    0.0,
                )),
            ));
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        // Named files re-rank a deeper candidate list, then the page is cut from it.
        let (offset, limit) = if q.mentioned.is_empty() {
            (q.offset, q.limit.max(1))
        } else {
            (0, (q.offset + q.limit).max(MENTION_DEPTH))
        };
        // Equal scores are ordered by the chunk's tie key, never by document address.
        let collector = (
            TopDocs::with_limit(limit)
                .and_offset(offset)
                .tweak_score(|segment: &SegmentReader| {
                    let ties = segment
                        .fast_fields()
                        .u64("tie")
                        .ok()
                        .map(|column| column.first_or_default_col(0));
                    move |doc: DocId, score: Score| {
                        (score, ties.as_ref().map_or(0, |column| column.get_val(doc)))
                    }
                }),
            Count,
        );
        let (top, total) = searcher
            .search(&query, &collector)
            .map_err(|e| self.err(e))?;
        let mut hits = Vec::with_capacity(top.len());
        for ((score, _), address) in top {
            hits.push(self.hit(&searcher, address, score)?);
        }
        if !q.mentioned.is_empty() {
            for hit in &mut hits {
                if q.mentioned.contains(&hit.path) {
                    hit.score *= MENTIONED_FILE_FACTOR;
                }
            }
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            hits = hits.into_iter().skip(q.offset).take(q.limit).collect();
        }
        Ok((hits, total))
    }
}

impl Lexical {
    /// The reference's terms ranked by tf·idf in the body field; the top ones.
    fn distinctive_terms(&self, text: &str, distinct: Vec<String>) -> Vec<String> {
        let searcher = self.reader.searcher();
        let n_docs = searcher.num_docs().max(1) as f32;
        let mut counts: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        for token in tokenizer::tokens(text) {
            *counts.entry(token).or_default() += 1;
        }
        let mut scored: Vec<(f32, String)> = distinct
            .into_iter()
            .filter(|t| t.len() > 1 && !t.chars().all(|c| c.is_ascii_digit()))
            .map(|term| {
                let df = searcher
                    .doc_freq(&Term::from_field_text(self.fields.body, &term))
                    .unwrap_or(0) as f32;
                let idf = ((n_docs - df + 0.5) / (df + 0.5) + 1.0).ln();
                let tf = counts.get(&term).copied().unwrap_or(1) as f32;
                ((1.0 + tf.ln()) * idf, term)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored
            .into_iter()
            .take(MORE_LIKE_THIS_TERMS)
            .map(|(_, t)| t)
            .collect()
    }
}

/// English words that carry no signal in a code query.
pub fn is_stopword(term: &str) -> bool {
    matches!(
        term,
        "a" | "an"
            | "and"
            | "are"
            | "as"
            | "at"
            | "be"
            | "by"
            | "do"
            | "does"
            | "for"
            | "from"
            | "how"
            | "i"
            | "in"
            | "is"
            | "it"
            | "of"
            | "on"
            | "or"
            | "that"
            | "the"
            | "this"
            | "to"
            | "was"
            | "what"
            | "when"
            | "where"
            | "which"
            | "who"
            | "why"
            | "with"
    )
}

/// Total size of the files under `dir`.
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => dir_size(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests;
