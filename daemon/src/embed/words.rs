//! The default built-in embedder: word vectors of the compiled-in MiniLM, summed.
//!
//! A text is split into words as code spells them apart (`parseHTTPResponse` -> `parse`,
//! `http`, `response`). A word of the word table (the tokenizer's whole words and the
//! 40,000 words code uses most, `table`) is run through the model once, alone, and its
//! vector kept; any other word gets its vector from its wordpieces' (each piece run alone,
//! once), as static embeddings are distilled, so the model never runs for more words than
//! the table holds, whatever a project's vocabulary. The direction every common word
//! shares (the mean of a fixed list of common words) is taken out of each vector, so
//! generic words weigh little. A text's vector is the sum of its words' vectors, each
//! weighed by the square root of how often it occurs, normalized. A chunk costs a few
//! lookups once the table's vectors are known, and a query a few model runs at most.
//!
//! Deterministic: the same text gives the same vector in every process, so vectors can be
//! cached by text and shared between projects.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use half::f16;
use rayon::prelude::*;

use amanmcp_encoder::{DIMENSIONS, Encoder};

use super::cache::{SharedCache, model_key};
use super::table::{self, Activity};
use super::terms::{document_weights, query_weights, weighting_id};
use super::{EmbedError, Embedder, Purpose, normalize};

/// Words of every kind of text; their mean vector is the direction removed from each word.
const COMMON: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "for", "on", "with", "get", "set", "value", "data",
    "name", "type", "list", "string", "object", "function", "file", "error", "result", "item",
    "index", "key", "size", "count", "number", "add", "make", "create", "update", "run", "call",
    "use", "test", "check", "init", "default", "config", "options", "args", "return", "self",
];

/// What one word held costs: its f16 vector (768 bytes), its text and the map's entry.
const BYTES_PER_KNOWN_WORD: usize = 900;

/// Word vectors kept before the table is emptied (`AMANMCP_WORD_MEMORY_MB`).
fn max_known_words() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| {
        // Past it the table is emptied and refilled from the shared cache (a few
        // microseconds a word), so it bounds the daemon's memory whatever the projects'
        // vocabulary: the memory budget's share, unless set on its own.
        let bytes = std::env::var("AMANMCP_WORD_MEMORY_MB")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map_or_else(
                || crate::memory::budget().word_bytes(),
                |mb| mb.max(8) * 1_000_000,
            );
        bytes / BYTES_PER_KNOWN_WORD
    })
}

/// Bump when the splitting, weighting, centring or the table changes: it is part of the
/// model id.
const VERSION: u32 = 5;

/// Bump when the splitting or centring changes, not the weighting: the key of the word
/// vectors kept in the shared cache, so a new weighting re-embeds texts without running the
/// model over every word again.
const WORD_VERSION: u32 = 2;

/// New words run through the model together: each weight matrix is read once for all of
/// them (~0.55 ms a word at 64 on one core, ~4.7 ms alone).
const WORDS_PER_PASS: usize = 64;

/// A word and its vector, common direction removed, in f16.
type WordVector = (String, Box<[f16]>);

/// Word vectors held in memory, by word.
type KnownWords = HashMap<String, Box<[f16]>>;

/// How long no document is embedded before the words held in memory are let go
/// ([`release_known`]).
const RELEASE_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

fn model(e: amanmcp_encoder::Error) -> EmbedError {
    EmbedError::Model(e.to_string())
}

/// The model as a word-vector table: a word's vector, common direction removed. Cheap to
/// clone (the word table's filler holds one).
#[derive(Clone)]
pub(super) struct WordModel {
    encoder: &'static Encoder,
    /// The unit mean of [`COMMON`]'s vectors.
    common: Arc<[f32]>,
}

impl WordModel {
    pub(super) fn new() -> Result<WordModel, EmbedError> {
        let encoder = Encoder::shared().map_err(model)?;
        let mut common = vec![0f32; DIMENSIONS];
        for vector in encoder.embed(COMMON).map_err(model)? {
            for (sum, v) in common.iter_mut().zip(vector) {
                *sum += v;
            }
        }
        let common = normalize(common)
            .ok_or_else(|| EmbedError::Model("the common words have no direction".into()))?;
        Ok(WordModel {
            encoder,
            common: common.into(),
        })
    }

    /// The words' vectors, in one forward pass on this thread, without their component
    /// along the common direction.
    pub(super) fn vectors(&self, words: &[&str]) -> Result<Vec<Box<[f16]>>, EmbedError> {
        let tokens = words
            .iter()
            .map(|w| self.encoder.piece_tokens(w))
            .collect::<Result<Vec<_>, _>>()
            .map_err(model)?;
        let sequences: Vec<&[u32]> = tokens.iter().map(Vec::as_slice).collect();
        let vectors = self.encoder.embed_tokens(&sequences);
        Ok(vectors
            .into_iter()
            .map(|vector| {
                let along: f32 = vector
                    .iter()
                    .zip(self.common.iter())
                    .map(|(a, b)| a * b)
                    .sum();
                vector
                    .iter()
                    .zip(self.common.iter())
                    .map(|(v, c)| f16::from_f32(v - along * c))
                    .collect()
            })
            .collect())
    }

    /// The wordpieces of `word` (see [`table::compose`]).
    fn pieces(&self, word: &str) -> Result<Vec<String>, EmbedError> {
        self.encoder.pieces(word).map_err(model)
    }
}

/// Word vectors of the compiled-in MiniLM, summed per text.
pub struct Words {
    model: WordModel,
    /// The words (and pieces) the model runs for: the word table's (sorted).
    table: &'static [String],
    model_id: String,
    /// Each word's vector, common direction removed, in f16: at most `max_known` words.
    known: Arc<RwLock<KnownWords>>,
    max_known: usize,
    /// New words of document batches are run here, apart from queries' words.
    documents: rayon::ThreadPool,
    /// New words of queries.
    queries: rayon::ThreadPool,
    batch_size: usize,
    /// The daemon's shared cache, where word vectors outlive the process, and the key of
    /// this model's words in it.
    shared: OnceLock<(Arc<SharedCache>, u64)>,
    /// Words run through the model (for tests and figures).
    model_runs: AtomicUsize,
    /// Whether documents are being embedded (the word table waits for them).
    activity: Arc<Activity>,
}

/// `builtin:words-v{version}:` and the compiled-in model's id and revision.
fn versioned_id(version: u32) -> String {
    let info = amanmcp_encoder::model_info();
    format!("builtin:words-v{version}:{}@{}", info.id, info.revision)
}

pub(super) fn word_hash(word: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(word.as_bytes())
}

/// Keep words' vectors in the shared cache under `key`, by [`word_hash`].
pub(super) fn put_words<'a>(
    cache: &SharedCache,
    key: u64,
    words: impl Iterator<Item = (&'a str, &'a [f16])>,
) {
    let vectors: Vec<(u64, Vec<f32>)> = words
        .map(|(word, v)| (word_hash(word), v.iter().map(|x| x.to_f32()).collect()))
        .collect();
    let items: Vec<(u64, &[f32])> = vectors.iter().map(|(h, v)| (*h, v.as_slice())).collect();
    cache.put(key, &items);
}

/// The key of the word vectors in the shared cache, apart from the texts' vectors of the
/// same model.
pub(super) fn words_key() -> u64 {
    model_key(&format!("{}#words", versioned_id(WORD_VERSION)))
}

impl Words {
    /// Fill the word table into `cache` now, on this thread (what the daemon does in the
    /// background); returns how many words the model ran for.
    pub fn fill_table(&self, cache: &SharedCache) -> Result<usize, EmbedError> {
        table::fill(&self.model, cache, words_key(), self.table, || {})
    }

    /// Words run through the model so far.
    #[cfg(test)]
    pub(super) fn model_runs(&self) -> usize {
        self.model_runs.load(Ordering::Relaxed)
    }

    /// Load the compiled-in weights (once per process). `batch_size`: texts per call
    /// (default 256).
    pub fn new(batch_size: Option<usize>) -> Result<Words, EmbedError> {
        let pool = |name: &'static str, nice: i32| {
            rayon::ThreadPoolBuilder::new()
                .thread_name(move |i| format!("amanmcp-{name}-{i}"))
                .start_handler(move |_| crate::nice::step_back(nice))
                .build()
                .map_err(|e| EmbedError::Model(format!("cannot start the embedding threads: {e}")))
        };
        let model = WordModel::new()?;
        Ok(Words {
            model_id: versioned_id(VERSION) + &weighting_id(),
            table: table::model_table(model.encoder),
            model,
            known: Arc::default(),
            max_known: max_known_words(),
            documents: pool("embed", crate::nice::EMBEDDING)?,
            queries: pool("query", 0)?,
            batch_size: batch_size.unwrap_or(256),
            shared: OnceLock::new(),
            model_runs: AtomicUsize::new(0),
            activity: Arc::default(),
        })
    }

    /// The vector of every word of `texts`. Known ones come from memory; a word of the
    /// table (or a piece) from the shared cache if it has it, else from the model (then
    /// offered to the cache); any other word is composed of its pieces' vectors
    /// ([`table::compose`]), so the model never runs for more than the table's words, whatever a
    /// project's vocabulary. New ones are kept in memory while it has room
    /// ([`Words::max_known`]; past it the memory is emptied first), but the batch is served
    /// from what this call gathered, so a bound smaller than a batch's vocabulary costs
    /// look-ups, never a second run.
    fn batch_vectors(
        &self,
        texts: &[HashMap<String, f32>],
        pool: &rayon::ThreadPool,
    ) -> Result<HashMap<String, Box<[f16]>>, EmbedError> {
        let mut batch: HashMap<String, Box<[f16]>> = HashMap::new();
        let missing = self.held_in_memory(texts.iter().flat_map(HashMap::keys), &mut batch);
        if missing.is_empty() {
            return Ok(batch);
        }
        let (direct, rare): (Vec<&String>, Vec<&String>) = missing
            .into_iter()
            .partition(|word| table::holds(self.table, word));
        let pieces_of = rare
            .into_iter()
            .map(|word| Ok((word, self.model.pieces(word)?)))
            .collect::<Result<Vec<_>, EmbedError>>()?;
        let pieces =
            self.held_in_memory(pieces_of.iter().flat_map(|(_, pieces)| pieces), &mut batch);
        let mut names: Vec<String> = direct.into_iter().chain(pieces).cloned().collect();
        names.sort();
        names.dedup();
        let mut learned = self.learn(names, pool)?;
        batch.extend(learned.iter().cloned());
        for (word, pieces) in &pieces_of {
            if let Some(vector) = table::compose(pieces.iter().filter_map(|p| batch.get(p))) {
                learned.push(((*word).clone(), vector));
            }
        }
        {
            let mut known = self.known.write().unwrap_or_else(|e| e.into_inner());
            if known.len() + learned.len() > self.max_known {
                *known = HashMap::new();
            }
            if learned.len() <= self.max_known {
                known.extend(learned.iter().map(|(w, v)| (w.clone(), v.clone())));
            }
        }
        batch.extend(learned);
        Ok(batch)
    }

    /// Put the vectors memory holds of `names` into `batch` (those not there already);
    /// returns the others, sorted, once each.
    fn held_in_memory<'a>(
        &self,
        names: impl Iterator<Item = &'a String>,
        batch: &mut HashMap<String, Box<[f16]>>,
    ) -> Vec<&'a String> {
        let mut missing = Vec::new();
        let known = self.known.read().unwrap_or_else(|e| e.into_inner());
        for name in names {
            if batch.contains_key(name) {
                continue;
            }
            match known.get(name) {
                Some(vector) => {
                    batch.insert(name.clone(), vector.clone());
                }
                None => missing.push(name),
            }
        }
        missing.sort();
        missing.dedup();
        missing
    }

    /// The vectors of `names` (table words and pieces): from the shared cache if it has
    /// them, else from the model, in passes spread over `pool` (then offered to the cache).
    fn learn(
        &self,
        mut names: Vec<String>,
        pool: &rayon::ThreadPool,
    ) -> Result<Vec<WordVector>, EmbedError> {
        // Words another run of the daemon learned are in the shared cache.
        let mut learned: Vec<WordVector> = Vec::new();
        if let Some((cache, model)) = self.shared.get() {
            let hashes: Vec<u64> = names.iter().map(|w| word_hash(w)).collect();
            let cached = cache.get(*model, &hashes);
            names.retain(|word| match cached.get(&word_hash(word)) {
                Some(vector) if vector.len() == DIMENSIONS => {
                    let vector = vector.iter().map(|v| f16::from_f32(*v)).collect();
                    learned.push((word.clone(), vector));
                    false
                }
                _ => true,
            });
        }
        let names: Vec<&String> = names.iter().collect();
        let computed: Vec<WordVector> = pool
            .install(|| {
                names
                    .par_chunks(WORDS_PER_PASS)
                    .map(|words| self.word_vectors(words))
                    .collect::<Result<Vec<_>, EmbedError>>()
            })?
            .into_iter()
            .flatten()
            .collect();
        if let Some((cache, model)) = self.shared.get() {
            put_words(
                cache,
                *model,
                computed.iter().map(|(w, v)| (w.as_str(), v.as_ref())),
            );
        }
        learned.extend(computed);
        Ok(learned)
    }

    /// The words' vectors from the model, in one forward pass.
    fn word_vectors(&self, words: &[&String]) -> Result<Vec<WordVector>, EmbedError> {
        self.model_runs.fetch_add(words.len(), Ordering::Relaxed);
        let texts: Vec<&str> = words.iter().map(|w| w.as_str()).collect();
        let vectors = self.model.vectors(&texts)?;
        Ok(words.iter().map(|w| (*w).clone()).zip(vectors).collect())
    }

    /// The normalized sum of the text's word vectors (from `vectors`, which holds every one
    /// of them), each with its weight ([`term_weight`]).
    fn text_vector(
        &self,
        weights: &HashMap<String, f32>,
        vectors: &HashMap<&str, Vec<f32>>,
    ) -> Vec<f32> {
        let mut sum = vec![0f32; DIMENSIONS];
        // A fixed order, so float sums are the same in every process.
        let mut entries: Vec<(&String, &f32)> = weights.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        for (word, &weight) in entries {
            let Some(vector) = vectors.get(word.as_str()) else {
                continue;
            };
            for (s, v) in sum.iter_mut().zip(vector) {
                *s += weight * v;
            }
        }
        // A text with no words (only numbers or punctuation) still gets a unit vector.
        normalize(sum).unwrap_or_else(|| self.model.common.to_vec())
    }
}

/// Let go of the words held in memory once no document has been embedded for
/// [`RELEASE_AFTER`] (they stay in the shared cache, a few microseconds a word away), so what
/// an idle daemon holds does not grow with the vocabulary it has seen.
fn release_known(known: Arc<RwLock<KnownWords>>, activity: Arc<table::Activity>) {
    let spawned = std::thread::Builder::new()
        .name("amanmcp-words-release".into())
        .spawn(move || {
            loop {
                std::thread::sleep(RELEASE_AFTER);
                if activity.quiet_for(RELEASE_AFTER) {
                    let mut known = known.write().unwrap_or_else(|e| e.into_inner());
                    if !known.is_empty() {
                        tracing::debug!(words = known.len(), "word vectors let go while idle");
                        *known = HashMap::new();
                    }
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the thread letting go of idle word vectors");
    }
}

impl Embedder for Words {
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
        let _busy = (purpose == Purpose::Document).then(|| self.activity.begin());
        let pool = match purpose {
            Purpose::Document => &self.documents,
            Purpose::Query => &self.queries,
        };
        // Reading the texts and summing their vectors spread over the pool too: with the
        // model run for table words only, they are most of the work.
        let weights: Vec<HashMap<String, f32>> = pool.install(|| {
            texts
                .par_iter()
                .map(|t| match purpose {
                    Purpose::Document => document_weights(t),
                    Purpose::Query => query_weights(t),
                })
                .collect()
        });
        let vectors = self.batch_vectors(&weights, pool)?;
        // Each word's coordinates in f32 once, not once for every text holding it (the same
        // values: f16 converts exactly).
        let vectors: HashMap<&str, Vec<f32>> = vectors
            .iter()
            .map(|(w, v)| (w.as_str(), v.iter().map(|x| x.to_f32()).collect()))
            .collect();
        Ok(pool.install(|| {
            weights
                .par_iter()
                .map(|w| self.text_vector(w, &vectors))
                .collect()
        }))
    }

    fn describe(&self) -> String {
        "builtin (paraphrase-MiniLM-L3-v2 word vectors, offline)".into()
    }

    fn attach_cache(&self, cache: Arc<SharedCache>) {
        // The words' own key, apart from the texts' vectors of the same model.
        let _ = self.shared.set((cache, words_key()));
    }

    fn start_idle_work(&self) {
        if self.shared.get().is_some() {
            release_known(self.known.clone(), self.activity.clone());
        }
        if let Some((cache, key)) = self.shared.get()
            && table::enabled()
        {
            table::start(
                self.model.clone(),
                cache.clone(),
                *key,
                self.table,
                self.activity.clone(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::embed::terms::words;

    #[test]
    fn a_vocabulary_larger_than_the_memory_bound_embeds_each_word_once_within_it() {
        // 150 distinct words in batches of 10 texts, the bound 20 words (issue 30: a bound
        // smaller than a batch's vocabulary had batches run again and again).
        let vocabulary: Vec<&str> = include_str!("code-words.txt")
            .lines()
            .filter(|w| words(w).contains_key(*w))
            .take(150)
            .collect();
        assert_eq!(vocabulary.len(), 150);
        let texts: Vec<String> = vocabulary.chunks(15).map(|c| c.join(" ")).collect();
        let mut bounded = Words::new(None).unwrap();
        bounded.max_known = 20;
        let free = Words::new(None).unwrap();
        let expected = free.embed(&texts, Purpose::Document).unwrap();
        for batch in [&texts[..3], &texts[3..]] {
            let offset = if batch.len() == 3 { 0 } else { 3 };
            let got = bounded.embed(batch, Purpose::Document).unwrap();
            assert_eq!(got, expected[offset..offset + batch.len()]);
            assert!(bounded.known.read().unwrap().len() <= 20);
        }
        assert_eq!(bounded.model_runs(), 150);
        assert_eq!(free.model_runs(), 150);
        assert_eq!(free.known.read().unwrap().len(), 150);
    }

    #[test]
    fn a_word_outside_the_table_runs_the_model_for_its_pieces_only() {
        let words = Words::new(None).unwrap();
        let pieces =
            |w: &str| -> HashSet<String> { words.model.pieces(w).unwrap().into_iter().collect() };
        let (first, second) = (pieces("zorblax"), pieces("zorblaxing"));
        assert!(!table::holds(words.table, "zorblax") && first.len() > 1);
        let a = words.embed(&["zorblax".into()], Purpose::Query).unwrap();
        assert_eq!(words.model_runs(), first.len(), "{first:?}");
        words.embed(&["zorblaxing".into()], Purpose::Query).unwrap();
        assert_eq!(
            words.model_runs(),
            first.union(&second).count(),
            "known pieces are not run again: {second:?}"
        );
        // The same vector in another process, and one of unit length.
        let again = Words::new(None).unwrap();
        assert_eq!(again.embed(&["zorblax".into()], Purpose::Query).unwrap(), a);
        let norm: f32 = a[0].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }

    #[test]
    fn vectors_are_unit_deterministic_and_closer_for_shared_words() {
        let words = Words::new(None).unwrap();
        let texts: Vec<String> = [
            "fn send_email(to: Address, body: &str)",
            "deliver a mail message to an address",
            "fn parse_toml(input: &str) -> Table",
            "42",
        ]
        .map(String::from)
        .to_vec();
        let first = words.embed(&texts, Purpose::Document).unwrap();
        let again = Words::new(None)
            .unwrap()
            .embed(&texts, Purpose::Document)
            .unwrap();
        assert_eq!(first, again);
        for v in &first {
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "{norm}");
        }
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!(cos(&first[0], &first[1]) > cos(&first[2], &first[1]));
    }

    #[test]
    fn word_vectors_outlive_the_process_in_the_shared_cache() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(SharedCache::open(dir.path(), Some(64)).unwrap());
        let texts = vec!["fn schedule_task(worker: &Worker) -> Queue".to_string()];
        let first = Words::new(None).unwrap();
        first.attach_cache(cache.clone());
        let vectors = first.embed(&texts, Purpose::Document).unwrap();
        let runs = first.model_runs.load(Ordering::Relaxed);
        assert_eq!(runs, words(&texts[0]).len());
        // A new embedder (a restarted daemon) takes every word from the cache.
        let second = Words::new(None).unwrap();
        second.attach_cache(cache);
        assert_eq!(second.embed(&texts, Purpose::Document).unwrap(), vectors);
        assert_eq!(second.model_runs.load(Ordering::Relaxed), 0);
    }
}
