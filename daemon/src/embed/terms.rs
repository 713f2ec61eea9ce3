//! A text's words as the built-in embedder reads them ([`super::words`]): split as code
//! spells them apart (`parseHTTPResponse` -> `parse`, `http`, `response`), lowercased, common
//! and encoded words left out, each weighed by how often it occurs and where (a chunk's
//! first line, its path and symbol, counts more).

use std::collections::HashMap;
use std::sync::OnceLock;

/// Words too common in prose or code to say what a text is about.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "for", "from", "has", "have", "how",
    "if", "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "what",
    "when", "where", "which", "with", "self", "let", "var", "const", "def", "fn", "return", "end",
    "else", "then", "new", "null", "nil", "none", "true", "false", "int", "str", "void",
];

/// Longer words are left out: identifiers spell their words apart, so these are mostly
/// encoded data.
const MAX_WORD_CHARS: usize = 24;

/// How many times a document's first line counts: [`super::worker::document_text`] puts the
/// chunk's path and symbol there, and what a chunk is named says as much about what it is
/// for as a long body does (semble: semantic NDCG@10 .864 -> .875, hybrid .901 -> .904;
/// CoSQA semantic MRR .320 -> .339; 5 gains more on semble but puts CoSQA's hybrid below
/// its semantic; see bench/README.md).
const TITLE_WEIGHT: u32 = 3;

/// The words of `text`, split as code spells them apart, lowercased, with their counts.
/// Stopwords, numbers, one-letter and very long words are left out.
pub(crate) fn words(text: &str) -> HashMap<String, u32> {
    let mut out: HashMap<String, u32> = HashMap::new();
    for token in text.split(|c: char| !c.is_alphanumeric()) {
        // Digits split words too: `utf8` -> `utf`, and the letters of hashes and encoded
        // blobs fall apart into short pieces instead of thousands of one-off words.
        let parts = split_identifier(token)
            .into_iter()
            .flat_map(|part| part.split(|c: char| c.is_ascii_digit()));
        for part in parts {
            let letters = part.chars().count();
            if !(2..=MAX_WORD_CHARS).contains(&letters) {
                continue;
            }
            let lower = part.to_lowercase();
            if STOPWORDS.contains(&lower.as_str()) {
                continue;
            }
            *out.entry(lower).or_default() += 1;
        }
    }
    out
}

/// How much a word occurring `count` times in a text weighs in its vector: the square root
/// of its count, so a name repeated twenty times in a long body does not drown the rest
/// (semble, hybrid NDCG@10 .886 -> .891, leave-one-repository-out CV the same; on the nine
/// repositories never tuned on .839 -> .846; see bench/README.md). `AMANMCP_WORDS_TF`
/// (`raw`, `log`), read once, is for the benchmark's sweeps.
pub(super) fn term_weight(count: u32) -> f32 {
    let n = count as f32;
    match tf_variant() {
        "raw" => n,
        "log" => 1.0 + n.ln(),
        _ => n.sqrt(),
    }
}

fn tf_variant() -> &'static str {
    static TF: OnceLock<String> = OnceLock::new();
    TF.get_or_init(|| std::env::var("AMANMCP_WORDS_TF").unwrap_or_default())
}

/// The weighting's name in the model id: empty as built, so only a sweep's variants differ.
pub(super) fn weighting_id() -> String {
    match tf_variant() {
        variant @ ("raw" | "log") => format!("-tf{variant}"),
        _ => String::new(),
    }
}

/// A query's words, each weighed by [`term_weight`].
pub(super) fn query_weights(text: &str) -> HashMap<String, f32> {
    words(text)
        .into_iter()
        .map(|(w, n)| (w, term_weight(n)))
        .collect()
}

/// The [`words`] of a document, each weighed by [`term_weight`], those of its first line
/// (its title: path and symbol) counted [`TITLE_WEIGHT`] times more.
pub(super) fn document_weights(text: &str) -> HashMap<String, f32> {
    let (title, body) = text.split_once('\n').unwrap_or((text, ""));
    let mut out = query_weights(body);
    for (word, n) in words(title) {
        *out.entry(word).or_default() += term_weight(n) * TITLE_WEIGHT as f32;
    }
    out
}

/// `parseHTTPResponse2` -> `parse`, `HTTP`, `Response2`.
fn split_identifier(token: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = token.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary = (prev.is_lowercase() && c.is_uppercase())
            || (prev.is_uppercase() && c.is_uppercase() && next_lower);
        if boundary {
            parts.push(&token[start..at]);
            start = at;
        }
    }
    if start < token.len() {
        parts.push(&token[start..]);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_documents_first_line_counts_more() {
        let counts = document_weights("src/sync/broadcast.rs Sender\nfn send() { broadcast() }");
        let title = TITLE_WEIGHT as f32;
        assert_eq!(counts["broadcast"], title + 1.0);
        assert_eq!(counts["sender"], title);
        assert_eq!(counts["send"], 1.0);
        assert!(counts["sender"] > counts["send"]);
        assert_eq!(document_weights("one line only")["line"], title);
    }

    #[test]
    fn a_repeated_word_weighs_the_root_of_its_count() {
        let weights = document_weights("src/retry.rs\nretry retry retry retry backoff");
        assert_eq!(weights["backoff"], 1.0);
        // Four times in the body: twice the weight of once, not four times.
        assert_eq!(weights["retry"], 2.0 + TITLE_WEIGHT as f32);
    }

    #[test]
    fn identifiers_split_as_code_spells_them() {
        assert_eq!(
            split_identifier("parseHTTPResponse2"),
            ["parse", "HTTP", "Response2"]
        );
        let counts = words("fn join_set(set: JoinSet) -> usize { self.len() } // 42 x utf8");
        let mut found: Vec<(&str, u32)> = counts.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        found.sort();
        assert_eq!(
            found,
            [
                ("join", 2),
                ("len", 1),
                ("set", 3),
                ("usize", 1),
                ("utf", 1)
            ]
        );
    }
}
