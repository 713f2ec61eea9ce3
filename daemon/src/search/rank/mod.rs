//! The ranking stage: re-orders the candidates retrieval hands it (BM25 alone, or BM25 and
//! vectors fused by RRF) using what a code index knows and a bag of words does not.
//!
//! Each candidate starts from its retrieval score, scaled so the best is 1 (in a hybrid
//! search where no candidate's file or directory is named, at least its semantic mode
//! score: [`rank`]), and is multiplied by evidence, one factor per rule, each named
//! after what it rewards:
//! - *definitions*: the chunk defines a name the query asks for (the whole query as an
//!   identifier, or a CamelCase / snake_case word inside a sentence);
//! - *file names*: query words naming the file (`broadcast` -> `sync/broadcast.rs`, plurals
//!   and prefixes) or its directory; a name of several words the query spells in a row
//!   (`syslog handler` -> `SyslogHandler.php`) more so;
//! - *path priors*: tests, examples, docs (and a project's notes: `CHANGES`, `LICENSE`),
//!   benchmarks, vendored and generated code rank lower
//!   unless the query asks for them (a pasted issue never does: it names its failing test
//!   as context). A re-export file (`__init__.py`, `index.ts`, `mod.rs` holding only
//!   imports) is not ranked down: a hub answers questions about what it gathers;
//! - *file evidence*: a file with several matching chunks is likely the place: part of its
//!   other chunks' scores flows to each of its chunks;
//! - *coverage*: a file whose candidate chunks and path hold more of the query's words
//!   (weighted by rarity) is likelier the answer than one repeating a few of them;
//! - *diversity*: the n-th chunk of a file already listed is damped, so a page shows several
//!   files before it shows one file ten times.
//!
//! The stage never drops a candidate; it only reorders them. Every factor is one constant
//! below; each has a unit test pinning its behaviour.

use std::collections::HashMap;

use super::query;
use crate::index::lexical::LexicalHit;
use evidence::Evidence;
use paths::{names_file, path_parts, singular, stem_words};

/// A chunk defining the exact identifier the query is.
const DEFINES_IDENTIFIER: f32 = 3.0;
/// More for an identifier query's definition spelled as typed (`Router` the module before
/// `router` the function).
const DEFINES_AS_TYPED: f32 = 1.5;
/// A chunk defining a code word used inside a sentence.
const DEFINES_MENTIONED: f32 = 1.6;
/// A chunk defining a name spelled out by two adjacent query words (`type adapter` ->
/// `TypeAdapter`, `join sets` -> `JoinSet`).
const DEFINES_WORDS: f32 = 1.25;
/// A file whose stem is a query word (or its plural/singular, or a prefix of it), or the
/// initials of three (`server-sent events` -> `SSE.kt`); scaled down as the word gets
/// common (see [`NAMING_SHARE`]).
const FILE_NAMED: f32 = 1.6;
/// A word found in more than this share of the project's chunks names no file (the
/// project's own name: `curl` -> `curl_share.c`; `request` in an HTTP client); below it, a
/// file name it matches counts in proportion to its rarity.
const NAMING_SHARE: f32 = 0.5;
/// A file whose name of several words is spelled by as many query words in a row, per word
/// after the first.
const FILE_SPELLED: f32 = 1.2;
/// A file whose directory is a query word; scaled down as the word gets common, like
/// [`FILE_NAMED`] (a word in half the project's chunks names no directory).
const DIRECTORY_NAMED: f32 = 1.3;
/// Tests, examples, docs, benchmarks, fixtures, vendored or generated code.
const SECONDARY_PATH: f32 = 0.3;
/// A version directory beside a newer one (`v3/` next to `v4/`), or a legacy copy of a file
/// beside the current one (`v1/fields.py`, `deprecated/fields.py` next to `fields.py`), unless
/// the query names it.
const OLD_VERSION: f32 = 0.5;
/// Share of a file's other chunks' scores added to each of its chunks (the best other chunk
/// counts fully, the next half, then a quarter, ...).
const FILE_EVIDENCE: f32 = 0.5;
/// How strongly a file's coverage of the query's words (0 to 1) scales its chunks.
const COVERAGE_POWER: f32 = 0.4;
/// The least coverage counted: a chunk found by meaning alone, sharing no word with the
/// query, keeps a fair chance.
const COVERAGE_FLOOR: f32 = 0.25;
/// Damping of each further chunk of a file already ranked above.
const REPEAT_DAMPING: f32 = 0.6;

/// A constant of this stage as the environment overrides it (`AMANMCP_RANK_<NAME>`, read
/// once), so `amanmcp-bench cv` can sweep any of them and fit it by leave-one-repository-out
/// cross-validation (`bench/cv-sweep.sh`). `PRIOR` is the exponent on the product of the
/// rule factors (1: as the constants say; 0: retrieval order). Unset, every constant is as
/// written here.
pub(crate) fn tuned(name: &str, default: f32) -> f32 {
    static TUNED: std::sync::OnceLock<HashMap<String, f32>> = std::sync::OnceLock::new();
    let overrides = TUNED.get_or_init(|| {
        std::env::vars()
            .filter_map(|(key, value)| {
                let name = key.strip_prefix("AMANMCP_RANK_")?.to_string();
                let value = value.trim().parse::<f32>().ok()?;
                (value.is_finite() && (0.0..=10.0).contains(&value)).then_some((name, value))
            })
            .collect()
    });
    if overrides.is_empty() {
        // As built: no lookup on the ranking's hot path.
        return default;
    }
    overrides.get(name).copied().unwrap_or(default)
}

/// What kind of question a query is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// One identifier, bare or qualified: `JoinSet`, `Session.request`, `parse_config`.
    Identifier,
    /// A natural-language question, possibly naming code.
    Prose,
    /// A long text (a pasted issue or traceback).
    Issue,
}

/// A query, analysed once for the ranking stage.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The query as asked.
    pub text: String,
    /// Its kind.
    pub kind: QueryKind,
    /// Names it asks for, lowercase, bare (`request` of `Session.request`).
    pub names: Vec<String>,
    /// `names` as typed (`Router`).
    pub typed: Vec<String>,
    /// Those of `names` made of several words (`ClientResponse`, `parse_config`): a file
    /// named by a part of one (`client.py`) is not named by it.
    pub compounds: Vec<String>,
    /// Its content words, lowercase (stop words removed).
    pub words: Vec<String>,
    /// Names its words spell: each pair of adjacent words joined (the second singular).
    pub spelled: Vec<String>,
    /// Initials of each three adjacent words (`server-sent events` -> `sse`).
    pub acronyms: Vec<String>,
    /// Whether it asks for tests, examples, docs or benchmarks.
    pub wants_secondary: bool,
}

/// A query word may name this many candidate files (or a quarter of them) and still count
/// as naming one.
const MIN_NAMED_FILES: usize = 3;

/// Why a hybrid candidate's score is its semantic one ([`rank`]).
const NEAR_FLOOR_WHY: &str =
    "as near as the vectors put it (no file or directory named by the query)";

/// Words longer than this many characters count as a pasted issue.
const ISSUE_WORDS: usize = 40;

const SECONDARY_WORDS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "spec",
    "specs",
    "example",
    "examples",
    "doc",
    "docs",
    "documentation",
    "benchmark",
    "benchmarks",
    "bench",
    "fixture",
    "fixtures",
    "mock",
    "mocks",
    "demo",
    "sample",
    "samples",
    "vendor",
    "generated",
    "legacy",
    "compat",
    "changelog",
    "license",
    "licence",
];

impl Profile {
    /// Analyse `text`.
    pub fn new(text: &str) -> Profile {
        let trimmed = text.trim();
        let n_words = trimmed.split_whitespace().count();
        let single = n_words == 1
            && trimmed
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '$' | '#'));
        let kind = if single {
            QueryKind::Identifier
        } else if n_words > ISSUE_WORDS {
            QueryKind::Issue
        } else {
            QueryKind::Prose
        };
        let mut originals: Vec<String> = if single {
            vec![query::own_name(trimmed).to_string()]
        } else {
            (query::code_words(trimmed).iter())
                .map(|w| query::own_name(w).to_string())
                .collect()
        };
        originals.retain(|n| n.len() > 1);
        originals.dedup();
        let names: Vec<String> = originals.iter().map(|n| n.to_lowercase()).collect();
        let compounds: Vec<String> = originals
            .iter()
            .filter(|n| stem_words(n).len() > 1)
            .map(|n| n.to_lowercase())
            .collect();
        let typed = originals;
        let words: Vec<String> = trimmed
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| w.len() > 1)
            .map(str::to_lowercase)
            .filter(|w| !is_stopword(w))
            .collect();
        // Only pairs: a single common word (`read`, `list`) names too many small functions.
        let spelled: Vec<String> = words
            .windows(2)
            .map(|pair| format!("{}{}", pair[0], singular(&pair[1])))
            .collect();
        let acronyms: Vec<String> = words
            .windows(3)
            .map(|three| three.iter().filter_map(|w| w.chars().next()).collect())
            .collect();
        // A pasted issue names tests and docs as context (the failing test, the page that
        // shows the bug); what it asks to change is code.
        let wants_secondary =
            kind != QueryKind::Issue && words.iter().any(|w| SECONDARY_WORDS.contains(&w.as_str()));
        Profile {
            text: trimmed.to_string(),
            kind,
            names,
            typed,
            compounds,
            words,
            spelled,
            acronyms,
            wants_secondary,
        }
    }

    /// Whether query word `word` may name a file by a prefix (`serialize` / `serializer`):
    /// not when it is a compound identifier (`ClientResponse` is not `client.py`).
    fn names_by_prefix(&self, word: &str) -> bool {
        !self.compounds.iter().any(|c| c == word)
    }
}

/// What the stage reads from the index beyond the hits: the names a chunk defines, how
/// common a word is, which directories exist.
pub trait IndexView {
    /// Names (as written) of the symbols whose definition starts inside `hit`'s lines.
    fn defined_in(&self, hit: &LexicalHit) -> Vec<String>;
    /// The share of the project's chunks whose text holds `word`, 0 to 1.
    fn doc_share(&self, word: &str) -> f32;
    /// Whether the project has files under directory `dir`.
    fn has_directory(&self, dir: &str) -> bool;
    /// Whether the project has the file `path`.
    fn has_file(&self, path: &str) -> bool;
}

/// Reorder `hits` (best first, scores from retrieval) for `profile`. For a hybrid search,
/// `near` holds each vector candidate's score in semantic mode
/// ([`super::fusion::Fusion::nearness`]). When no candidate's file or
/// directory is named by the query, both legs judged the same thing, the chunks' text, and
/// the vectors judge meaning better than shared words do: each candidate's score is then at
/// least its score in semantic mode, so fusion never ranks a chunk the vectors find near
/// below where semantic mode would. Where a name is read, the names decide and RRF stands.
pub fn rank(
    profile: &Profile,
    hits: Vec<LexicalHit>,
    view: &dyn IndexView,
    near: Option<&HashMap<u64, f32>>,
) -> Vec<LexicalHit> {
    if hits.is_empty() {
        return hits;
    }
    let best = hits
        .iter()
        .map(|h| h.score)
        .fold(f32::MIN, f32::max)
        .max(f32::EPSILON);
    // How common each query word is in the project, read once for the rules below.
    let shares: Vec<f32> = profile.words.iter().map(|w| view.doc_share(w)).collect();
    let file_words = naming_words(profile, &shares, &hits);
    // How specific each query word is in this project, 0 (in half the chunks or more) to 1.
    let rarity: Vec<f32> = shares.iter().map(|share| rarity(*share).max(0.0)).collect();
    let tracing = trace::enabled();
    let mut traced = Vec::new();
    let mut of_path = rustc_hash::FxHashMap::default();
    let evidence: Vec<Evidence> = (hits.iter())
        .map(|hit| Evidence::read(profile, &file_words, &rarity, hit, view, &mut of_path))
        .collect();
    let near = near.filter(|_| !evidence.iter().any(Evidence::names_the_path));
    let mut scored: Vec<(f32, LexicalHit)> = hits
        .into_iter()
        .zip(evidence)
        .map(|(mut hit, evidence)| {
            let mut base = (hit.score / best).max(0.0);
            if let Some(&floor) = near.and_then(|near| near.get(&hit.chunk_id))
                && floor > base
            {
                base = floor;
                hit.why.push(NEAR_FLOOR_WHY.to_string());
            }
            let (factor, why) = evidence.factor();
            if tracing {
                // Which of the query's words (by stem) the chunk's text and its path hold.
                let (body, path) = (hit.body.to_lowercase(), hit.path.to_lowercase());
                let holds = |text: &str| -> Vec<bool> {
                    let stems = profile.words.iter().map(|w| paths::stem_of(w));
                    stems.map(|stem| text.contains(stem)).collect()
                };
                traced.push(serde_json::json!({
                    "id": hit.chunk_id, "path": hit.path, "start": hit.start_line,
                    "end": hit.end_line, "base": base, "retrieval": hit.why.first(),
                    "evidence": evidence, "holds": holds(&body), "path_holds": holds(&path),
                }));
            }
            // Retrieval's account (fusion's ranks) first, then the priors.
            hit.why.extend(why);
            (base * factor.powf(tuned("PRIOR", 1.0)), hit)
        })
        .collect();
    // File evidence: each chunk gains a share of its file's other chunks' scores, with
    // diminishing returns so a long file does not win by length alone.
    let mut per_file: HashMap<String, Vec<f32>> = HashMap::new();
    for (score, hit) in &scored {
        per_file.entry(hit.path.clone()).or_default().push(*score);
    }
    for scores in per_file.values_mut() {
        scores.sort_by(|a, b| b.total_cmp(a));
    }
    for (score, hit) in &mut scored {
        let mut weight = 1.0;
        let mut others = 0.0;
        let mut skipped_self = false;
        for other in &per_file[&hit.path] {
            if !skipped_self && *other == *score {
                skipped_self = true;
                continue;
            }
            others += weight * other;
            weight *= 0.5;
        }
        *score += tuned("FILE_EVIDENCE", FILE_EVIDENCE) * others;
    }
    // Coverage: a file holding every concept of the question beats one that repeats a few.
    let covered = coverage(profile, &shares, &scored);
    if tracing {
        trace::write(&serde_json::json!({
            "query": profile.text, "kind": format!("{:?}", profile.kind),
            "words": profile.words, "shares": shares,
            "candidates": traced, "coverage": covered,
        }));
    }
    for (score, hit) in &mut scored {
        if let Some(share) = covered.get(&hit.path) {
            *score *= share
                .max(tuned("COVERAGE_FLOOR", COVERAGE_FLOOR))
                .powf(tuned("COVERAGE_POWER", COVERAGE_POWER));
        }
    }
    sort(&mut scored);
    // Diversity: damp further chunks of a file already above, then order again.
    let mut seen: HashMap<String, i32> = HashMap::new();
    for (score, hit) in &mut scored {
        let n = seen.entry(hit.path.clone()).or_default();
        *score *= tuned("REPEAT_DAMPING", REPEAT_DAMPING).powi(*n);
        *n += 1;
    }
    sort(&mut scored);
    scored
        .into_iter()
        .map(|(score, mut hit)| {
            hit.score = score;
            hit
        })
        .collect()
}

/// For each candidate file, the share of the query's words its candidate chunks and path
/// hold (by stem: `scheduled` counts in `scheduler`), each word weighted by its rarity in
/// the project. Empty for a query of fewer than two words.
fn coverage(
    profile: &Profile,
    shares: &[f32],
    scored: &[(f32, LexicalHit)],
) -> HashMap<String, f32> {
    let mut out = HashMap::new();
    if profile.words.len() < 2 {
        return out;
    }
    let stems: Vec<(&str, f32)> = profile
        .words
        .iter()
        .zip(shares)
        .map(|(w, share)| (paths::stem_of(w), (1.0 / share.max(1e-4)).ln().max(0.1)))
        .collect();
    let total: f32 = stems.iter().map(|(_, weight)| weight).sum();
    let mut present: HashMap<&str, Vec<bool>> = HashMap::new();
    for (_, hit) in scored {
        let found = present.entry(hit.path.as_str()).or_insert_with(|| {
            let path = hit.path.to_lowercase();
            stems.iter().map(|(stem, _)| path.contains(stem)).collect()
        });
        if found.iter().all(|f| *f) {
            continue;
        }
        let body = hit.body.to_lowercase();
        for (f, (stem, _)) in found.iter_mut().zip(&stems) {
            *f = *f || body.contains(stem);
        }
    }
    for (path, found) in present {
        let held: f32 = found
            .iter()
            .zip(&stems)
            .filter(|(f, _)| **f)
            .map(|(_, (_, weight))| weight)
            .sum();
        out.insert(path.to_string(), held / total);
    }
    out
}

/// Best first; equal scores by path and line, so the order never depends on where the
/// chunks sit in the index.
fn sort(scored: &mut [(f32, LexicalHit)]) {
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.path.cmp(&b.1.path))
            .then_with(|| a.1.start_line.cmp(&b.1.start_line))
    });
}

/// How specific a word found in `share` of the project's chunks is: 1 when in none, 0 at
/// [`NAMING_SHARE`], below 0 past it.
fn rarity(share: f32) -> f32 {
    1.0 - share / tuned("NAMING_SHARE", NAMING_SHARE)
}

/// The query words that tell files apart by name, each with its weight: those naming at
/// most a quarter of the candidates' files (at least [`MIN_NAMED_FILES`]) and found in at
/// most [`NAMING_SHARE`] of the project's chunks, weighted by their rarity. A word naming
/// most files (`http` among `Http*.kt`) says nothing about which one is meant.
fn naming_words<'p>(
    profile: &'p Profile,
    shares: &[f32],
    hits: &[LexicalHit],
) -> Vec<(&'p str, f32)> {
    let mut files: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    files.sort_unstable();
    files.dedup();
    let parts: Vec<(String, Vec<String>)> = files
        .iter()
        .map(|f| {
            let (_, stem) = path_parts(f);
            (stem, stem_words(f))
        })
        .collect();
    let most = (files.len() / 4).max(MIN_NAMED_FILES);
    profile
        .words
        .iter()
        .zip(shares)
        .filter_map(|(w, share)| {
            let named = parts
                .iter()
                .filter(|(stem, words)| names_file(w, stem, words, profile.names_by_prefix(w)))
                .count();
            (named <= most && *share <= tuned("NAMING_SHARE", NAMING_SHARE))
                .then(|| (w.as_str(), rarity(*share)))
        })
        .collect()
}

/// Words that carry no signal for ranking: English stop words, and words every code question
/// uses (`function`, `implementation`, ...).
fn is_stopword(word: &str) -> bool {
    crate::index::lexical::is_stopword(word)
        || matches!(
            word,
            "code"
                | "function"
                | "method"
                | "class"
                | "implementation"
                | "implemented"
                | "handle"
                | "handled"
                | "handles"
                | "logic"
                | "works"
        )
}

mod evidence;
mod paths;
#[cfg(test)]
mod tests;
mod text;
pub mod trace;
