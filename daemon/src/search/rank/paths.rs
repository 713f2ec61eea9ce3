//! What a file's path says: its name's words, whether a query word names it, and the priors
//! on tests, docs, generated code and superseded versions.

use super::IndexView;

/// Lowercase directory names and the file stem (`Sync/Broadcast.rs` -> ([sync], broadcast)).
pub(super) fn path_parts(path: &str) -> (Vec<String>, String) {
    let lower = path.to_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let file = parts.pop().unwrap_or("");
    let stem = file.split('.').next().unwrap_or(file);
    // `__diagnostics.lua`, `_internal.py`: the underscores mark privacy, not the name.
    let stem = stem.trim_matches('_').to_string();
    (parts.into_iter().map(String::from).collect(), stem)
}

pub(super) fn singular(word: &str) -> &str {
    word.strip_suffix("es")
        .filter(|w| w.ends_with('s') || w.ends_with('x') || w.ends_with("ch"))
        .or_else(|| word.strip_suffix('s').filter(|w| w.len() > 2))
        .unwrap_or(word)
}

/// The words of a file's name, lowercase: split at `_`, `-` and CamelCase humps
/// (`HttpCallValidator.kt` -> [http, call, validator], `multi_thread.rs` -> [multi, thread]).
pub(super) fn stem_words(path: &str) -> Vec<String> {
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

/// `word` without a plural or verb ending (`threads` -> `thread`, `scheduled` -> `schedul`).
pub(super) fn stem_of(word: &str) -> &str {
    ungerund(singular(word))
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
pub(super) fn names_file(word: &str, stem: &str, stem_words: &[String], prefixes: bool) -> bool {
    if stem.is_empty() || word.len() < 3 {
        return false;
    }
    let w = stem_of(word);
    let s = singular(stem);
    w == s
        || (prefixes && w.len() >= 4 && s.len() >= 4 && (s.starts_with(w) || w.starts_with(s)))
        || (stem_words.len() > 1
            && stem_words
                .iter()
                .any(|p| p.len() >= 3 && (singular(p) == w || singular(p) == singular(word))))
}

/// Whether a file name of several words (`stem_words`: [syslog, handler]) is spelled by as
/// many query words in a row (`syslog handler`, `handlers`, `streaming reader` for
/// `StreamReader`).
pub(super) fn spelled_by(query_words: &[String], stem_words: &[String]) -> bool {
    stem_words.len() >= 2
        && query_words.windows(stem_words.len()).any(|run| {
            run.iter().zip(stem_words).all(|(q, w)| {
                let w = singular(w);
                singular(q) == w || stem_of(q) == w
            })
        })
}

/// The directory a module file would gather (`lib/command.rb` -> `lib/command`).
pub(super) fn module_directory(path: &str) -> &str {
    let file_start = path.rfind('/').map_or(0, |i| i + 1);
    match path[file_start..].find('.') {
        Some(dot) if dot > 0 => &path[..file_start + dot],
        _ => path,
    }
}

/// Whether `path` is an older copy the query does not name: in a version directory (`v3/`)
/// beside a newer one (`v4/`), or in a version or legacy directory (`v1/`, `legacy/`,
/// `deprecated/`) whose parent holds the current file of the same name
/// (`pydantic/v1/fields.py` beside `pydantic/fields.py`).
pub(super) fn superseded(path: &str, query_words: &[String], view: &dyn IndexView) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    for (i, part) in parts.iter().enumerate().take(parts.len().saturating_sub(1)) {
        let lower = part.to_lowercase();
        let version = lower.strip_prefix('v').and_then(|d| d.parse::<u32>().ok());
        let legacy = matches!(lower.as_str(), "legacy" | "deprecated");
        if (version.is_none() && !legacy) || query_words.contains(&lower) {
            continue;
        }
        let parent = parts[..i].join("/");
        let within = |name: String| {
            if parent.is_empty() {
                name
            } else {
                format!("{parent}/{name}")
            }
        };
        let newer = version
            .is_some_and(|n| (n + 1..=n + 3).any(|m| view.has_directory(&within(format!("v{m}")))));
        if newer || view.has_file(&within(parts[i + 1..].join("/"))) {
            return true;
        }
    }
    false
}

/// Tests, examples, docs, benchmarks, fixtures, vendored or generated code, by path.
pub(super) fn is_secondary_path(path: &str) -> bool {
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
        || versioned(file)
        || file.ends_with(".md")
        || file.ends_with(".rst")
        || file.ends_with(".txt");
    dir_hit || file_hit || project_notes(original)
}

/// The project's notes about itself (`LICENSE`, `CHANGES`, `CHANGES.old`, `AUTHORS`,
/// `Changes`): prose like `.md` docs under another spelling, named by convention without
/// a code extension or in capitals. `history.py` or `news.rs` is code and not one.
fn project_notes(file: &str) -> bool {
    let (stem, extension) = file.split_once('.').unwrap_or((file, ""));
    let conventional = extension.is_empty()
        || stem
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_' || c == '-');
    conventional
        && matches!(
            stem.to_ascii_lowercase().as_str(),
            "license"
                | "licence"
                | "copying"
                | "notice"
                | "authors"
                | "contributors"
                | "maintainers"
                | "changes"
                | "changelog"
                | "history"
                | "news"
                | "releases"
                | "release_notes"
                | "code_of_conduct"
                | "contributing"
                | "readme"
                | "security"
        )
}

/// A file name carrying a release number (`jquery-3.5.1.js`, `d3-7.8.min.js`): a copy of a
/// library, not the project's code.
fn versioned(file: &str) -> bool {
    file.match_indices(['-', '_']).any(|(at, _)| {
        let rest = &file[at + 1..];
        let major = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        major > 0
            && rest[major..].starts_with('.')
            && rest[major + 1..].starts_with(|c: char| c.is_ascii_digit())
    })
}
