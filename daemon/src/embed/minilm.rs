//! The contextual built-in embedder (`AMANMCP_EMBEDDER=minilm`): sentence-transformers/paraphrase-MiniLM-L3-v2 (3 layers, 384
//! dimensions, Apache-2.0), its weights stored 4-bit in the `pocket-encoder` crate
//! (MIT/Apache-2.0) and compiled into the binary; run by `amanmcp-encoder`, pure Rust, CPU,
//! a few texts per forward pass. Works offline right after `cargo build`: no download, no
//! server.

use rayon::prelude::*;

use amanmcp_encoder::{DIMENSIONS, Encoder};

use super::{EmbedError, Embedder, Purpose};

/// Texts run through the model together (each up to 128 tokens).
const TEXTS_PER_PASS: usize = 8;

/// Bytes of a document the model reads by default. Its cost grows with the tokens (at most
/// 128): on 2 cores, ~57 chunks/s for whole 30-line chunks, ~98/s for their first 250
/// bytes, ~130/s for 150 (see bench/README.md for the quality side of this choice).
pub const DEFAULT_MAX_BYTES: usize = 256;
/// Queries are cut at the model's own limit only.
const MAX_QUERY_BYTES: usize = 2048;

/// The compiled-in MiniLM.
pub struct MiniLm {
    encoder: &'static Encoder,
    model_id: String,
    batch_size: usize,
    max_bytes: usize,
    /// Document batches run here, so their work (and the matrix products spread
    /// over rayon inside each text) never queues ahead of a query.
    documents: rayon::ThreadPool,
    /// Queries run here: apart from the documents, and at most one per core at a time, so
    /// fifty clients searching at once queue for a moment instead of each holding a model
    /// run's memory.
    queries: rayon::ThreadPool,
}

impl MiniLm {
    /// Load the compiled-in weights (once per process).
    pub fn new(batch_size: Option<usize>, max_bytes: Option<usize>) -> Result<MiniLm, EmbedError> {
        let encoder = Encoder::shared().map_err(|e| EmbedError::Model(e.to_string()))?;
        let info = amanmcp_encoder::model_info();
        let max_bytes = max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
        let documents = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("amanmcp-embed-{i}"))
            .start_handler(|_| crate::nice::step_back(crate::nice::EMBEDDING))
            .build()
            .map_err(|e| EmbedError::Model(format!("cannot start the embedding threads: {e}")))?;
        let queries = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("amanmcp-query-{i}"))
            .build()
            .map_err(|e| EmbedError::Model(format!("cannot start the query threads: {e}")))?;
        Ok(MiniLm {
            documents,
            queries,
            encoder,
            // The cut changes the vectors, so it is part of the identity.
            model_id: format!("builtin:{}@{}:{max_bytes}b", info.id, info.revision),
            batch_size: batch_size.unwrap_or(32),
            max_bytes,
        })
    }
}

fn prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

impl Embedder for MiniLm {
    fn model_id(&self) -> String {
        self.model_id.clone()
    }

    fn dimensions(&self) -> Option<usize> {
        Some(DIMENSIONS)
    }

    fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn embed(&self, texts: &[String], purpose: Purpose) -> Result<Vec<Vec<f32>>, EmbedError> {
        let max = match purpose {
            Purpose::Document => self.max_bytes,
            Purpose::Query => MAX_QUERY_BYTES,
        };
        let pass = |texts: &[String]| {
            let texts: Vec<&str> = texts
                .iter()
                .map(|text| {
                    let text = prefix(text, max);
                    if text.trim().is_empty() {
                        "(blank)"
                    } else {
                        text
                    }
                })
                .collect();
            self.encoder
                .embed(&texts)
                .map_err(|e| EmbedError::Model(e.to_string()))
        };
        let vectors: Vec<Vec<Vec<f32>>> = match purpose {
            Purpose::Query => self.queries.install(|| {
                texts
                    .chunks(TEXTS_PER_PASS)
                    .map(pass)
                    .collect::<Result<_, _>>()
            })?,
            // Document batches are spread over the cores.
            Purpose::Document => self.documents.install(|| {
                texts
                    .par_chunks(TEXTS_PER_PASS)
                    .map(pass)
                    .collect::<Result<_, _>>()
            })?,
        };
        Ok(vectors.into_iter().flatten().collect())
    }

    fn describe(&self) -> String {
        "minilm (paraphrase-MiniLM-L3-v2 over whole texts, 4-bit, offline)".into()
    }
}
