//! The ranking stage: re-orders the candidates retrieval hands it (BM25 alone, or BM25 and
//! vectors fused by RRF) using what a code index knows and a bag of words does not.
//!
//! Each candidate starts from its retrieval score, scaled so the best is 1, and is
//! multiplied by evidence, one factor per rule, each named after what it rewards:
//! - *definitions*: the chunk defines a name the query asks for (the whole query as an
//!   identifier, or a CamelCase / snake_case word inside a sentence);
//! - *file names*: query words naming the file (`broadcast` -> `sync/broadcast.rs`, plurals
//!   and prefixes) or its directory;
//! - *path priors*: tests, examples, docs, benchmarks, vendored and generated code rank lower
//!   unless the query asks for them; re-export files (`__init__.py`, `index.ts`, `mod.rs`
//!   holding only imports) too;
//! - *file evidence*: a file with several matching chunks is likely the place: part of its
//!   other chunks' scores flows to each of its chunks;
//! - *diversity*: the n-th chunk of a file already listed is damped, so a page shows several
//!   files before it shows one file ten times.
//!
//! The stage never drops a candidate; it only reorders them. Every factor is one constant
//! below; each has a unit test pinning its behaviour.

use std::collections::HashMap;

use super::query;
use crate::index::lexical::LexicalHit;

/// A chunk defining the exact identifier the query is.
const DEFINES_IDENTIFIER: f32 = 3.0;
/// A chunk defining a code word used inside a sentence.
const DEFINES_MENTIONED: f32 = 1.6;
/// A chunk defining a name spelled out by two adjacent query words (`type adapter` ->
/// `TypeAdapter`, `join sets` -> `JoinSet`).
const DEFINES_WORDS: f32 = 1.25;
/// A file whose stem is a query word (or its plural/singular, or a prefix of it).
const FILE_NAMED: f32 = 1.3;
/// A file whose directory is a query word.
const DIRECTORY_NAMED: f32 = 1.15;
/// Tests, examples, docs, benchmarks, fixtures, vendored or generated code.
const SECONDARY_PATH: f32 = 0.3;
/// A chunk that only re-exports or imports.
const REEXPORT: f32 = 0.6;
/// Share of a file's other chunks' scores added to each of its chunks (the best other chunk
/// counts fully, the next half, then a quarter, ...).
const FILE_EVIDENCE: f32 = 0.5;
/// Damping of each further chunk of a file already ranked above.
const REPEAT_DAMPING: f32 = 0.6;

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
    /// Its kind.
    pub kind: QueryKind,
    /// Names it asks for, lowercase, bare (`request` of `Session.request`).
    pub names: Vec<String>,
    /// Its content words, lowercase (stop words removed).
    pub words: Vec<String>,
    /// Names its words spell: each pair of adjacent words joined (the second singular).
    pub spelled: Vec<String>,
    /// Whether it asks for tests, examples, docs or benchmarks.
    pub wants_secondary: bool,
}

/// A query word may name this many candidate files (or a quarter of them) and still count
/// as naming one.
const MIN_NAMED_FILES: usize = 3;

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
        let bare = |word: &str| {
            word.trim_end_matches("()")
                .rsplit(['.', ':', '#'])
                .find(|p| !p.is_empty())
                .unwrap_or(word)
                .to_lowercase()
        };
        let mut names: Vec<String> = if single {
            vec![bare(trimmed)]
        } else {
            query::code_words(trimmed).iter().map(|w| bare(w)).collect()
        };
        names.retain(|n| n.len() > 1);
        names.dedup();
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
        let wants_secondary = words.iter().any(|w| SECONDARY_WORDS.contains(&w.as_str()));
        Profile {
            kind,
            names,
            words,
            spelled,
            wants_secondary,
        }
    }
}

/// What the stage reads about a candidate beyond its hit: the names its chunk defines.
pub trait Definitions {
    /// Lowercase names of the symbols whose definition starts inside `hit`'s lines.
    fn defined_in(&self, hit: &LexicalHit) -> Vec<String>;
}

/// Reorder `hits` (best first, scores from retrieval) for `profile`.
pub fn rank(
    profile: &Profile,
    hits: Vec<LexicalHit>,
    definitions: &dyn Definitions,
) -> Vec<LexicalHit> {
    if hits.is_empty() {
        return hits;
    }
    let best = hits
        .iter()
        .map(|h| h.score)
        .fold(f32::MIN, f32::max)
        .max(f32::EPSILON);
    let file_words = naming_words(profile, &hits);
    let mut scored: Vec<(f32, LexicalHit)> = hits
        .into_iter()
        .map(|mut hit| {
            let base = (hit.score / best).max(0.0);
            let (factor, why) = evidence(profile, &file_words, &hit, definitions);
            hit.why = why;
            (base * factor, hit)
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
        *score += FILE_EVIDENCE * others;
    }
    sort(&mut scored);
    // Diversity: damp further chunks of a file already above, then order again.
    let mut seen: HashMap<String, i32> = HashMap::new();
    for (score, hit) in &mut scored {
        let n = seen.entry(hit.path.clone()).or_default();
        *score *= REPEAT_DAMPING.powi(*n);
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

fn sort(scored: &mut [(f32, LexicalHit)]) {
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
}

/// The query words that tell files apart by name: those naming at most a quarter of the
/// candidates' files (at least [`MIN_NAMED_FILES`]). A word naming most files (`http` among
/// `Http*.kt`) says nothing about which one is meant.
fn naming_words<'p>(profile: &'p Profile, hits: &[LexicalHit]) -> Vec<&'p str> {
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
        .filter(|w| {
            let named = parts
                .iter()
                .filter(|(stem, words)| names_file(w, stem, words))
                .count();
            named <= most
        })
        .map(String::as_str)
        .collect()
}

/// The product of the factors that apply to `hit`, and each rule that applied, in words.
fn evidence(
    profile: &Profile,
    file_words: &[&str],
    hit: &LexicalHit,
    definitions: &dyn Definitions,
) -> (f32, Vec<String>) {
    let mut factor = 1.0;
    let mut why = Vec::new();
    // The index is read only when a rule below can use what it says.
    let defined = if !profile.names.is_empty() || profile.kind == QueryKind::Prose {
        definitions.defined_in(hit)
    } else {
        Vec::new()
    };
    if !profile.names.is_empty()
        && (defined.iter().any(|d| profile.names.contains(d))
            || profile.names.iter().any(|n| defines_in_text(&hit.body, n)))
    {
        factor *= match profile.kind {
            QueryKind::Identifier => DEFINES_IDENTIFIER,
            _ => DEFINES_MENTIONED,
        };
        why.push("defines a name the query asks for".to_string());
    } else if profile.kind == QueryKind::Prose
        && defined
            .iter()
            .any(|d| profile.spelled.iter().any(|s| singular(d) == s))
    {
        factor *= DEFINES_WORDS;
        why.push("defines a name the query's words spell".to_string());
    }
    let (dirs, stem) = path_parts(&hit.path);
    let words = stem_words(&hit.path);
    if let Some(word) = file_words.iter().find(|w| names_file(w, &stem, &words)) {
        factor *= FILE_NAMED;
        why.push(format!("file named by `{word}`"));
    } else if let Some(word) = profile
        .words
        .iter()
        .find(|w| dirs.iter().any(|d| d == *w || singular(d) == singular(w)))
    {
        factor *= DIRECTORY_NAMED;
        why.push(format!("directory named by `{word}`"));
    }
    if !profile.wants_secondary && is_secondary_path(&hit.path) {
        factor *= SECONDARY_PATH;
        why.push("test, doc, example or generated path (lower)".to_string());
    }
    if is_reexport(&hit.body) {
        factor *= REEXPORT;
        why.push("re-exports only (lower)".to_string());
    }
    (factor, why)
}

/// Words that introduce a definition in the languages the index reads (and those it only
/// reads as text: Lua, Haskell, Kotlin, Swift, Elixir, Zig, ...).
const DEFINITION_KEYWORDS: &[&str] = &[
    "fn",
    "def",
    "defp",
    "defmodule",
    "defmacro",
    "func",
    "function",
    "class",
    "struct",
    "trait",
    "interface",
    "enum",
    "type",
    "typealias",
    "union",
    "module",
    "object",
    "protocol",
    "extension",
    "record",
    "impl",
    "val",
    "var",
    "let",
    "const",
    "local",
    "data",
    "newtype",
    "macro_rules!",
    "sub",
    "proc",
    "fun",
];

/// Whether `body` defines `name` (lowercase) by its text: a definition keyword right before
/// it (`local function pick`, `data StackSet`, `pub const Parser`), or a line starting with
/// it followed by `=`, `::` or `:` (`withDisplay ::`, `TelescopeGlobalState = {}`). The
/// fallback for languages without syntax chunking, and for definitions the syntax walk
/// does not name.
fn defines_in_text(body: &str, name: &str) -> bool {
    if name.len() < 3 {
        return false;
    }
    body.lines().any(|line| {
        let lower = line.trim_start().to_lowercase();
        let Some(at) = find_word(&lower, name) else {
            return false;
        };
        let before: Vec<&str> = lower[..at].split_whitespace().collect();
        let after = lower[at + name.len()..].trim_start();
        match before.last() {
            Some(word) => DEFINITION_KEYWORDS.contains(&word.trim_start_matches("pub(crate)")),
            None => {
                after.starts_with("::")
                    || (after.starts_with('=') && !after.starts_with("=="))
                    || (after.starts_with(':') && !after.starts_with(":="))
            }
        }
    })
}

/// The byte offset of `word` in `text` as a whole word.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(pos) = text[from..].find(word) {
        let at = from + pos;
        let end = at + word.len();
        let ok_before = text[..at].chars().next_back().is_none_or(|c| !is_word(c));
        let ok_after = text[end..].chars().next().is_none_or(|c| !is_word(c));
        if ok_before && ok_after {
            return Some(at);
        }
        from = at + word.len().max(1);
    }
    None
}

/// Lowercase directory names and the file stem (`Sync/Broadcast.rs` -> ([sync], broadcast)).
fn path_parts(path: &str) -> (Vec<String>, String) {
    let lower = path.to_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let file = parts.pop().unwrap_or("");
    let stem = file.split('.').next().unwrap_or(file).to_string();
    (parts.into_iter().map(String::from).collect(), stem)
}

fn singular(word: &str) -> &str {
    word.strip_suffix("es")
        .filter(|w| w.ends_with('s') || w.ends_with('x') || w.ends_with("ch"))
        .or_else(|| word.strip_suffix('s').filter(|w| w.len() > 2))
        .unwrap_or(word)
}

/// The words of a file's name, lowercase: split at `_`, `-` and CamelCase humps
/// (`HttpCallValidator.kt` -> [http, call, validator], `multi_thread.rs` -> [multi, thread]).
fn stem_words(path: &str) -> Vec<String> {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    let mut out = Vec::new();
    for part in stem.split(['_', '-']).filter(|p| !p.is_empty()) {
        let mut word = String::new();
        let chars: Vec<char> = part.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let hump = c.is_uppercase()
                && i > 0
                && (chars[i - 1].is_lowercase()
                    || chars.get(i + 1).is_some_and(|n| n.is_lowercase())
                        && chars[i - 1].is_uppercase());
            if hump && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            word.extend(c.to_lowercase());
        }
        if !word.is_empty() {
            out.push(word);
        }
    }
    out
}

/// `word` without a verb ending, `-ing` or `-ed` (`watching` -> `watch`, `spawned` ->
/// `spawn`, `scheduled` -> `schedul`, a prefix of `schedule`), when enough is left.
fn ungerund(word: &str) -> &str {
    word.strip_suffix("ing")
        .or_else(|| word.strip_suffix("ed"))
        .filter(|w| w.len() >= 4)
        .unwrap_or(word)
}

/// Whether query word `word` names a file with stem `stem` (words `stem_words`): equal,
/// equal but for a plural or a gerund, one a prefix of the other (at least 4 letters:
/// `serialize` / `serializer`), or one of the name's several words (`multi_thread`,
/// `HttpTimeout`) is it.
fn names_file(word: &str, stem: &str, stem_words: &[String]) -> bool {
    if stem.is_empty() || word.len() < 3 {
        return false;
    }
    let w = ungerund(singular(word));
    let s = singular(stem);
    w == s
        || (w.len() >= 4 && s.len() >= 4 && (s.starts_with(w) || w.starts_with(s)))
        || (stem_words.len() > 1
            && stem_words
                .iter()
                .any(|p| p.len() >= 3 && (singular(p) == w || singular(p) == singular(word))))
}

/// Tests, examples, docs, benchmarks, fixtures, vendored or generated code, by path.
fn is_secondary_path(path: &str) -> bool {
    let lower = path.to_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let file = parts.pop().unwrap_or("");
    let dir_hit = parts.iter().any(|d| {
        matches!(
            *d,
            "test"
                | "tests"
                | "testing"
                | "__tests__"
                | "spec"
                | "specs"
                | "example"
                | "examples"
                | "doc"
                | "docs"
                | "benches"
                | "bench"
                | "benchmark"
                | "benchmarks"
                | "fixtures"
                | "testdata"
                | "vendor"
                | "third_party"
                | "node_modules"
                | "generated"
                | "mocks"
                | "demo"
                | "samples"
        )
    });
    let stem = file.split('.').next().unwrap_or(file);
    // `RouterTest.java`, `HandlerTests.cs`: CamelCase test classes, by the original case.
    let original = path.rsplit('/').next().unwrap_or(path);
    let original_stem = original.split('.').next().unwrap_or(original);
    let file_hit = stem.starts_with("test_")
        || stem == "test"
        || stem == "tests"
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("-test")
        || original_stem.ends_with("Test")
        || original_stem.ends_with("Tests")
        || stem.ends_with("_spec")
        || file.contains(".test.")
        || file.contains(".spec.")
        || stem.ends_with("_pb2")
        || file.ends_with(".pb.go")
        || file.ends_with(".generated.cs")
        || file.ends_with(".md")
        || file.ends_with(".rst")
        || file.ends_with(".txt");
    dir_hit || file_hit
}

/// A chunk whose non-blank, non-comment lines are all imports, re-exports or module
/// declarations.
fn is_reexport(body: &str) -> bool {
    let mut n = 0;
    for line in body.lines().map(str::trim) {
        if line.is_empty()
            || line.starts_with("//")
            || line.starts_with('#') && !line.starts_with("#include")
            || line.starts_with("/*")
            || line.starts_with('*')
        {
            continue;
        }
        let import = line.starts_with("import ")
            || line.starts_with("from ")
            || line.starts_with("export * ")
            || line.starts_with("export {")
            || line.starts_with("pub use ")
            || line.starts_with("use ")
            || line.starts_with("pub mod ")
            || line.starts_with("mod ")
            || line.starts_with("require")
            || line.starts_with("module.exports")
            || line.starts_with('}')
            || line.starts_with(')')
            || line.ends_with(',');
        if !import {
            return false;
        }
        n += 1;
    }
    n > 0
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
        )
}

#[cfg(test)]
mod tests;
