//! The word table: the words the model runs for. The tokenizer's whole words and the words
//! code uses most (`code-words.txt`, made by `bench/words/make-code-words.py` from code that
//! is no benchmark's) each get the model's vector of the word alone; every other word is
//! composed of its wordpieces' vectors ([`compose`]), the tokenizer's `##` continuations
//! being in the table too. Before: the model ran once for every distinct word a project
//! had, half of them seen once (sympy: 48,718 words, 30 s of two cores).
//!
//! The table's vectors are computed once per machine into the shared cache while the
//! daemon has nothing else to embed, so a new project runs the model for none of its
//! words; until then a project's words of the table are computed as it meets them. Either
//! way a word gets the same vector: none depends on whether the table was filled.
//!
//! `AMANMCP_WORD_TABLE=off` leaves the table alone (tests do, so their daemons stay quiet).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use half::f16;

use amanmcp_encoder::DIMENSIONS;

use super::cache::SharedCache;
use super::terms::words;
use super::words::{WordModel, put_words, word_hash};

const CODE_WORDS: &str = include_str!("code-words.txt");

/// Bump when the list changes: the mark of a finished table names it.
const TABLE_VERSION: u32 = 2;

/// Words run through the model together (~30 ms on one core).
const PASS: usize = 64;

/// How long the embedder must have been idle before the table takes a pass.
const QUIET: Duration = Duration::from_secs(1);

/// Whether projects are embedding: the table waits for them.
#[derive(Default)]
pub(super) struct Activity {
    running: AtomicUsize,
    last: Mutex<Option<Instant>>,
}

/// Held while a project's batch embeds.
pub(super) struct Busy<'a>(&'a Activity);

impl Activity {
    pub(super) fn begin(&self) -> Busy<'_> {
        self.running.fetch_add(1, Ordering::SeqCst);
        Busy(self)
    }

    fn quiet(&self) -> bool {
        self.quiet_for(QUIET)
    }

    /// No batch runs, and none ended within `span`.
    pub(super) fn quiet_for(&self, span: Duration) -> bool {
        let last = *self.last.lock().unwrap_or_else(|e| e.into_inner());
        self.running.load(Ordering::SeqCst) == 0 && last.is_none_or(|t| t.elapsed() >= span)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        *self.0.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The table's words: the tokenizer's whole words and the code words, as [`words`] keeps
/// them (no stopwords, 2 to 24 letters), and the tokenizer's `##` continuations (pieces of
/// the words outside it), sorted.
pub(super) fn table_words(vocabulary: Vec<String>, continuations: Vec<String>) -> Vec<String> {
    let mut all: Vec<String> = vocabulary
        .into_iter()
        .chain(CODE_WORDS.lines().map(str::to_string))
        .filter(|w| words(w).get(w.as_str()) == Some(&1))
        .chain(continuations)
        .collect();
    all.sort();
    all.dedup();
    all
}

/// The compiled-in model's table, made once per process.
pub(super) fn model_table(encoder: &amanmcp_encoder::Encoder) -> &'static [String] {
    static TABLE: OnceLock<Vec<String>> = OnceLock::new();
    TABLE.get_or_init(|| table_words(encoder.vocabulary(), encoder.continuations()))
}

/// Whether `word` is one of `table`'s (sorted) words.
pub(super) fn holds(table: &[String], word: &str) -> bool {
    table.binary_search_by(|t| t.as_str().cmp(word)).is_ok()
}

/// The vector of a word outside the table, from its pieces' vectors (each the model's for
/// that piece alone, as static word embeddings are distilled): the direction of their sum,
/// at their mean length, so a word of many pieces weighs what one word does. `None`
/// without any piece. On semble and CoSQA this scores as the model's own vector of the
/// whole word did (bench/README.md, "Vectors without the model").
pub(super) fn compose<'a>(pieces: impl Iterator<Item = &'a Box<[f16]>>) -> Option<Box<[f16]>> {
    let mut sum = vec![0f32; DIMENSIONS];
    let mut lengths = 0f32;
    let mut n = 0usize;
    for piece in pieces {
        let mut length = 0f32;
        for (s, v) in sum.iter_mut().zip(piece.iter()) {
            let v = v.to_f32();
            *s += v;
            length += v * v;
        }
        lengths += length.sqrt();
        n += 1;
    }
    let length = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
    let scale = if length > 0.0 {
        lengths / n as f32 / length
    } else {
        0.0
    };
    (n > 0).then(|| sum.iter().map(|s| f16::from_f32(s * scale)).collect())
}

/// Whether the daemon fills the table (`AMANMCP_WORD_TABLE`, on unless `off`, `0` or `no`).
pub(super) fn enabled() -> bool {
    !matches!(
        std::env::var("AMANMCP_WORD_TABLE")
            .as_deref()
            .map(str::trim),
        Ok("off" | "0" | "no" | "false")
    )
}

/// Fill the table in the background, one pass at a time while the embedder is quiet.
pub(super) fn start(
    model: WordModel,
    cache: Arc<SharedCache>,
    key: u64,
    table: &'static [String],
    activity: Arc<Activity>,
) {
    let spawned = std::thread::Builder::new()
        .name("amanmcp-word-table".into())
        .spawn(move || {
            // Behind everything else, project embedding included.
            crate::nice::step_back(crate::nice::WORD_TABLE);
            let started = Instant::now();
            match fill(&model, &cache, key, table, || {
                while !activity.quiet() {
                    std::thread::sleep(QUIET / 4);
                }
            }) {
                Ok(0) => {}
                Ok(computed) => tracing::info!(
                    words = table.len(),
                    computed,
                    seconds = started.elapsed().as_secs_f64(),
                    "word table filled"
                ),
                Err(e) => tracing::warn!(error = %e, "word table left unfinished"),
            }
            // What the fill read and wrote of the cache need not stay resident.
            cache.release_mapped_pages();
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the word table's thread");
    }
}

/// Compute the vectors of `table`'s words the cache lacks and put them there, calling `wait`
/// before each pass; then mark the table done. Returns how many words were computed (0 when
/// the mark was there already).
pub(super) fn fill(
    model: &WordModel,
    cache: &SharedCache,
    key: u64,
    table: &[String],
    mut wait: impl FnMut(),
) -> Result<usize, super::EmbedError> {
    let mark = word_hash(&format!("\0word-table-v{TABLE_VERSION}:{}", table.len()));
    if !cache.get(key, &[mark]).is_empty() {
        return Ok(0);
    }
    let mut computed = 0;
    for pass in table.chunks(PASS) {
        let hashes: Vec<u64> = pass.iter().map(|w| word_hash(w)).collect();
        let cached = cache.get(key, &hashes);
        let missing: Vec<&str> = pass
            .iter()
            .zip(&hashes)
            .filter(|(_, h)| !cached.contains_key(h))
            .map(|(w, _)| w.as_str())
            .collect();
        if missing.is_empty() {
            continue;
        }
        wait();
        let vectors = model.vectors(&missing)?;
        put_words(
            cache,
            key,
            missing
                .iter()
                .copied()
                .zip(vectors.iter().map(|v| v.as_ref())),
        );
        computed += missing.len();
    }
    cache.put(key, &[(mark, &[1.0])]);
    Ok(computed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::words::{Words, words_key};
    use crate::embed::{Embedder, Purpose};

    #[test]
    fn the_table_holds_vocabulary_and_code_words_as_texts_split_them() {
        let table = table_words(
            vec!["parse".into(), "the".into(), "x".into()],
            vec!["##ify".into()],
        );
        assert!(table.iter().any(|w| w == "parse"));
        assert!(holds(&table, "##ify"), "a continuation");
        assert!(!holds(&table, "zorblax"));
        assert!(table.iter().any(|w| w == "tokenizer"), "a code word");
        assert!(
            !table.iter().any(|w| w == "the" || w == "x"),
            "stopwords and letters"
        );
        assert!(table.len() > 30_000);
        assert!(table.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
    }

    #[test]
    fn a_filled_table_spares_the_model_and_is_filled_once() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(SharedCache::open(dir.path(), Some(64)).unwrap());
        let model = WordModel::new().unwrap();
        let table: Vec<String> = ["schedule", "worker", "queue", "tokenizer"]
            .map(String::from)
            .to_vec();
        let key = words_key();
        let mut waits = 0;
        assert_eq!(fill(&model, &cache, key, &table, || waits += 1).unwrap(), 4);
        assert_eq!(waits, 1, "one pass, after waiting for quiet");
        assert_eq!(fill(&model, &cache, key, &table, || waits += 1).unwrap(), 0);
        let hashes: Vec<u64> = table.iter().map(|w| word_hash(w)).collect();
        assert_eq!(cache.get(key, &hashes).len(), 4);

        // A daemon whose cache holds the table runs the model for none of its words, and
        // gets the vectors it would have computed.
        let words = Words::new(None).unwrap();
        let text = vec!["fn schedule(worker: Worker) -> Queue; tokenizer".to_string()];
        let fresh = Words::new(None)
            .unwrap()
            .embed(&text, Purpose::Query)
            .unwrap();
        words.attach_cache(cache);
        let from_table = words.embed(&text, Purpose::Query).unwrap();
        assert_eq!(words.model_runs(), 0);
        let drift = fresh[0]
            .iter()
            .zip(&from_table[0])
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(drift < 1e-3, "{drift}");
    }
}

#[cfg(test)]
mod quiet {
    use super::*;

    #[test]
    fn the_table_waits_while_documents_embed_and_a_moment_after() {
        let activity = Activity::default();
        assert!(activity.quiet(), "a new daemon is quiet");
        let busy = activity.begin();
        assert!(!activity.quiet());
        drop(busy);
        assert!(!activity.quiet(), "just after a batch");
        std::thread::sleep(QUIET + Duration::from_millis(50));
        assert!(activity.quiet());
    }
}
