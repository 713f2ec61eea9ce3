//! Query analysis for the lexical ranker: which words of a query are code.
//!
//! Agents paste issue text: prose around identifiers (`parse_config`, `Session.request`,
//! `HTTPServer`), paths (`src/auth/login.py`), calls (`render(`) and error names
//! (`ValueError`). Those words name the code; the prose mostly does not. Their terms are
//! weighted [`CODE_WEIGHT`] times a prose word's, and kept first when a long query is cut.

use crate::index::{lexical::is_stopword, tokenizer};

/// Weight of a term that came from a code-like word.
pub const CODE_WEIGHT: f32 = 2.5;

/// Whether `word` (a run of word characters and `_ . : / -`) looks like code.
fn is_code_word(word: &str, followed_by_paren: bool) -> bool {
    let inner = word.trim_matches(|c: char| !c.is_alphanumeric());
    if inner.is_empty() {
        return false;
    }
    if followed_by_paren {
        return true;
    }
    let chars: Vec<char> = inner.chars().collect();
    let joined = chars.windows(3).any(|w| {
        w[0].is_alphanumeric() && matches!(w[1], '_' | '.' | ':' | '/') && w[2].is_alphanumeric()
    }) || inner.contains("::");
    let camel = chars
        .windows(2)
        .any(|w| w[0].is_lowercase() && w[1].is_uppercase())
        || (chars.len() > 2
            && chars[0].is_uppercase()
            && chars[1..].iter().any(|c| c.is_uppercase())
            && chars.iter().any(|c| c.is_lowercase()));
    joined || camel
}

/// The runs of `text` whose characters pass `is_part`, in order, each with whether a `(`
/// follows it directly (a call).
fn words(text: &str, is_part: impl Fn(char) -> bool) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (is_part(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((&text[s..i], c == '('));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((&text[s..], false));
    }
    out
}

/// The words of `text` that look like code (identifiers, qualified names, calls), as typed,
/// in order, without duplicates.
pub fn code_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let is_part = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '$' | '#');
    for (word, paren) in words(text, is_part) {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
        if !word.is_empty() && is_code_word(word, paren) && !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    }
    out
}

/// A code word's own name: the last part of a qualified one (`xr.where(` -> `where`,
/// `Runtime::block_on` -> `block_on`, `Foo#bar` -> `bar`).
pub fn own_name(word: &str) -> &str {
    word.trim_end_matches("()")
        .rsplit(['.', ':', '#'])
        .find(|p| !p.is_empty())
        .unwrap_or(word)
}

/// The query's distinct terms (lowercase tokens, as indexed), each with its weight, in order
/// of first appearance; code-derived terms carry [`CODE_WEIGHT`].
pub fn weighted_terms(text: &str) -> Vec<(String, f32)> {
    let is_part = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-');
    let mut code_terms = std::collections::HashSet::new();
    for (word, paren) in words(text, is_part) {
        if is_code_word(word, paren) {
            code_terms.extend(tokenizer::tokens(word));
        }
    }
    // A stop word is no term (`where is the retry budget parsed`), but a code word's own
    // name of two letters or more is one however common in English (`xr.where(`,
    // `Query.from`).
    let names: std::collections::HashSet<String> = code_words(text)
        .iter()
        .map(|w| own_name(w))
        .filter(|n| n.len() > 1)
        .map(str::to_lowercase)
        .collect();
    let mut seen = std::collections::HashSet::new();
    let terms: Vec<(String, f32)> = tokenizer::tokens(text)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .map(|t| {
            let weight = if code_terms.contains(&t) {
                CODE_WEIGHT
            } else {
                1.0
            };
            (t, weight)
        })
        .collect();
    // A query of stop words alone keeps them.
    if terms.iter().all(|(t, _)| is_stopword(t)) {
        return terms;
    }
    (terms.into_iter())
        .filter(|(t, _)| !is_stopword(t) || names.contains(t))
        .collect()
}

/// Programming languages a query may name as its answer's language ("how to sort a dict in
/// python"), as the index records them. Not data formats (`json`, `yaml`: content) nor names
/// that are also common words or letters (`go`, `c`, `r`).
const LANGUAGE_WORDS: &[&str] = &[
    "rust",
    "python",
    "javascript",
    "typescript",
    "java",
    "cpp",
    "csharp",
    "ruby",
    "php",
    "bash",
    "kotlin",
    "swift",
    "scala",
    "dart",
    "haskell",
    "elixir",
    "erlang",
    "ocaml",
    "lua",
    "julia",
    "zig",
];

/// The query's terms naming the language most of the project is written in (more than half
/// its chunks, `language_share`): there they name every file, so they tell none apart, yet
/// BM25 weighs them as rare (few chunks spell the language's name) and the vectors drift to
/// those few too. Empty when nothing else is asked.
pub fn project_language_terms(
    terms: &[(String, f32)],
    language_share: impl Fn(&str) -> f32,
) -> Vec<String> {
    let named: Vec<String> = terms
        .iter()
        .map(|(term, _)| term)
        .filter(|term| LANGUAGE_WORDS.contains(&term.as_str()) && language_share(term) > 0.5)
        .cloned()
        .collect();
    if named.len() == terms.len() {
        return Vec::new();
    }
    named
}

/// `text` without the whole words in `words` (lowercase), any case.
pub fn without_words(text: &str, words: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_alphanumeric()) {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(rest.len());
        let word = &rest[..end];
        if !words.iter().any(|w| w.eq_ignore_ascii_case(word)) {
            out.push_str(word);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Weight of a pasted issue's title terms relative to its body's.
pub const TITLE_WEIGHT: f32 = 3.0;

/// The terms of `text`'s first non-blank line ([`title`]).
pub fn title_terms(text: &str) -> std::collections::HashSet<String> {
    tokenizer::tokens(title(text)).into_iter().collect()
}

/// Scale by [`TITLE_WEIGHT`] the terms among `title_terms` (a pasted issue's title's: its
/// one-line summary, while the body adds logs, versions and reproduction steps).
pub fn weight_title(terms: &mut [(String, f32)], title_terms: &std::collections::HashSet<String>) {
    for (term, weight) in terms.iter_mut() {
        if title_terms.contains(term.as_str()) {
            *weight *= TITLE_WEIGHT;
        }
    }
}

/// A text's first non-blank line: a pasted issue's title.
pub fn title(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// How code abbreviates English words: each word starting with the first (`configured`,
/// `configuration`) may be spelled as the others in code (`config`, `cfg`).
const ABBREVIATIONS: &[(&str, &[&str])] = &[
    ("utilit", &["util", "utils"]),
    ("configur", &["config", "conf", "cfg"]),
    ("initializ", &["init"]),
    ("initialis", &["init"]),
    ("authenticat", &["auth", "authn"]),
    ("authoriz", &["auth", "authz"]),
    ("directory", &["dir"]),
    ("directories", &["dir", "dirs"]),
    ("connection", &["conn"]),
    ("message", &["msg"]),
    ("context", &["ctx"]),
    ("argument", &["arg", "args"]),
    ("parameter", &["param", "params"]),
    ("attribute", &["attr", "attrs"]),
    ("environment", &["env"]),
    ("database", &["db"]),
    ("buffer", &["buf"]),
    ("synchronous", &["sync"]),
    ("asynchronous", &["async"]),
    ("temporar", &["tmp", "temp"]),
    ("information", &["info"]),
    ("allocat", &["alloc"]),
    ("reference", &["ref"]),
    ("specification", &["spec"]),
    ("description", &["desc"]),
    ("repositor", &["repo"]),
    ("command", &["cmd"]),
    ("expression", &["expr"]),
    ("manager", &["mgr"]),
    ("destination", &["dst", "dest"]),
    ("statistic", &["stats"]),
    ("pointer", &["ptr"]),
    ("iterat", &["iter"]),
    ("options", &["opts"]),
    ("execut", &["exec"]),
    ("implementation", &["impl"]),
    ("previous", &["prev"]),
];

/// The abbreviations code may spell `word` with ([`ABBREVIATIONS`]).
fn abbreviations(word: &str) -> impl Iterator<Item = &'static str> + '_ {
    ABBREVIATIONS
        .iter()
        .filter(move |(full, _)| word.starts_with(full))
        .flat_map(|(_, short)| short.iter().copied())
}

/// Other forms of an English word that code spells differently: `threads` -> `thread`,
/// `entries` -> `entry`, `scheduled` -> `schedule`, `schedul`, `spawned` -> `spawn`,
/// `running` -> `run`, the agent noun of each base (`schedule` -> `scheduler`), and the
/// abbreviations code uses (`utility` -> `util`, `configured` -> `config`,
/// [`ABBREVIATIONS`]). Candidates only: the caller keeps those the index holds.
pub fn variants(word: &str) -> Vec<String> {
    let mut bases: Vec<String> = Vec::new();
    let n = word.len();
    if n < 4 || !word.chars().all(|c| c.is_ascii_lowercase()) {
        return Vec::new();
    }
    if let Some(stem) = word.strip_suffix("ies") {
        bases.push(format!("{stem}y"));
    } else if let Some(stem) = word
        .strip_suffix("es")
        .filter(|s| s.ends_with('s') || s.ends_with('x') || s.ends_with("ch") || s.ends_with("sh"))
    {
        bases.push(stem.to_string());
    } else if let Some(stem) = word.strip_suffix('s').filter(|s| !s.ends_with('s')) {
        bases.push(stem.to_string());
    }
    for suffix in ["ed", "ing"] {
        if let Some(stem) = word.strip_suffix(suffix).filter(|s| s.len() >= 3) {
            bases.push(stem.to_string());
            bases.push(format!("{stem}e"));
            let b = stem.as_bytes();
            if b.len() >= 2 && b[b.len() - 1] == b[b.len() - 2] {
                bases.push(stem[..stem.len() - 1].to_string());
            }
        }
    }
    if bases.is_empty() {
        bases.push(word.to_string());
    }
    let mut out: Vec<String> = abbreviations(word).map(String::from).collect();
    for base in bases {
        let agent = if base.ends_with('e') {
            format!("{base}r")
        } else {
            format!("{base}er")
        };
        for form in [base, agent] {
            if form != word && form.len() >= 3 && !out.contains(&form) {
                out.push(form);
            }
        }
    }
    out
}

/// Weight of a variant relative to the word it comes from.
pub const VARIANT_WEIGHT: f32 = 0.8;

/// Add to `terms` the [`variants`] of each term `of` picks that the index holds (`exists`),
/// weighted [`VARIANT_WEIGHT`] times their word's.
pub fn add_variants(
    terms: &mut Vec<(String, f32)>,
    of: impl Fn(&str) -> bool,
    exists: impl Fn(&str) -> bool,
) {
    let mut extra: Vec<(String, f32)> = Vec::new();
    for (term, weight) in terms.iter().filter(|(t, _)| of(t)) {
        for form in variants(term) {
            let known = terms.iter().chain(extra.iter()).any(|(t, _)| *t == form);
            if !known && exists(&form) {
                extra.push((form, weight * VARIANT_WEIGHT));
            }
        }
    }
    terms.extend(extra);
}

/// Source file extensions that make a word a file name (`login.py`, `lib.rs`).
const FILE_EXTENSIONS: &[&str] = &[
    "py", "rs", "js", "jsx", "ts", "tsx", "go", "java", "kt", "c", "h", "cc", "cpp", "hpp", "cs",
    "rb", "php", "sh", "md", "rst", "toml", "yaml", "yml", "json", "cfg", "ini", "txt",
];

/// Words of the query that name a file: paths (`src/auth/login.py`, `./lib.rs:42`) and file
/// names with a known extension, cleaned of quotes, `./` and `:line` suffixes.
pub fn path_mentions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in text.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '<' | '>' | ','
            )
    }) {
        let mut word = raw.trim_end_matches(['.', ':', ';', '!', '?']);
        // `file.py:42` or `file.py:42:7`
        while let Some((head, tail)) = word.rsplit_once(':') {
            if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit()) {
                word = head;
            } else {
                break;
            }
        }
        let word = word.trim_start_matches("./").trim_start_matches('/');
        let Some((_, ext)) = word.rsplit_once('.') else {
            continue;
        };
        let plausible = word
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
        if plausible && FILE_EXTENSIONS.contains(&ext) && !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_issue_title_is_its_first_non_blank_line() {
        assert_eq!(
            super::title("\n  \nParser drops unicode keys\n\nSteps: ..."),
            "Parser drops unicode keys"
        );
        assert_eq!(super::title(""), "");
    }

    use super::*;

    fn code(text: &str) -> Vec<String> {
        weighted_terms(text)
            .into_iter()
            .filter(|(_, w)| *w > 1.0)
            .map(|(t, _)| t)
            .collect()
    }

    #[test]
    fn identifiers_paths_calls_and_errors_are_code() {
        assert_eq!(
            code("Calling Session.request() raises ValueError in src/auth/login.py"),
            [
                "session",
                "request",
                "valueerror",
                "value",
                "error",
                "src",
                "auth",
                "login",
                "py"
            ]
        );
        assert_eq!(
            code("the parse_config helper"),
            ["parse_config", "parse", "config"]
        );
        assert_eq!(code("use block_on( here"), ["block_on", "block"]);
        assert_eq!(
            code("HTTPServer and Runtime::block_on"),
            [
                "httpserver",
                "http",
                "server",
                "runtime",
                "block_on",
                "block"
            ]
        );
        assert_eq!(code("render(x)"), ["render"]);
    }

    #[test]
    fn a_stop_word_is_a_term_only_as_a_code_word_s_own_name() {
        let terms =
            |text| -> Vec<String> { weighted_terms(text).into_iter().map(|(t, _)| t).collect() };
        assert_eq!(
            terms("where is the retry budget parsed"),
            ["retry", "budget", "parsed"]
        );
        // `xr.where(` is a call of `where`; `is_empty` is no call of `is`.
        assert_eq!(
            terms("xr.where(cond) keeps attrs"),
            ["xr", "where", "cond", "keeps", "attrs"]
        );
        assert_eq!(terms("is_empty here"), ["is_empty", "empty", "here"]);
        // A one-letter name is no name to search for (`mod.A`, `self.a`).
        assert_eq!(terms("mod.A and self.a"), ["mod", "self"]);
        // A query of stop words alone is still asked.
        assert_eq!(terms("what is it"), ["what", "is", "it"]);
    }

    #[test]
    fn prose_is_not_code() {
        assert!(code("Where is the retry budget parsed? It fails.").is_empty());
        assert!(code("I think A B test").is_empty());
    }

    #[test]
    fn paths_and_file_names_are_found() {
        assert_eq!(
            path_mentions(
                "File \"/usr/lib/python3/site-packages/sympy/core/basic.py\", line 12, in foo"
            ),
            ["usr/lib/python3/site-packages/sympy/core/basic.py"]
        );
        assert_eq!(
            path_mentions("see ./src/lib.rs:42:7 and `login.py`. Also e.g. v1.2"),
            ["src/lib.rs", "login.py"]
        );
        assert!(path_mentions("version 1.2.3 of numpy.linalg").is_empty());
    }

    #[test]
    fn a_pasted_issue_s_title_terms_weigh_more() {
        let text = "\n  Linkcheck reports anchors\nThe server said 404 for the anchor.\n";
        let mut terms = weighted_terms(text);
        weight_title(&mut terms, &title_terms(text));
        let weight = |t: &str| terms.iter().find(|(x, _)| x == t).map(|(_, w)| *w);
        assert_eq!(weight("linkcheck"), Some(TITLE_WEIGHT));
        assert_eq!(weight("anchors"), Some(TITLE_WEIGHT));
        assert_eq!(weight("server"), Some(1.0));
        assert_eq!(weight("404"), Some(1.0));
    }

    #[test]
    fn prose_words_get_the_forms_code_uses() {
        let v = |w: &str| variants(w);
        assert!(v("threads").contains(&"thread".to_string()));
        assert!(v("entries").contains(&"entry".to_string()));
        assert!(v("matches").contains(&"match".to_string()));
        assert!(v("scheduled").contains(&"schedule".to_string()));
        assert!(v("scheduled").contains(&"scheduler".to_string()));
        assert!(v("spawned").contains(&"spawn".to_string()));
        assert!(v("running").contains(&"run".to_string()));
        assert!(v("parse").contains(&"parser".to_string()));
        assert!(v("class").iter().all(|f| f != "clas"));
        assert!(v("io").is_empty());
        assert!(v("parse_config").is_empty());
        assert!(v("utility").contains(&"utils".to_string()));
        assert!(v("configured").contains(&"config".to_string()));
        assert!(v("configuration").contains(&"cfg".to_string()));
        assert!(v("optional").iter().all(|f| f != "opts"));

        let mut terms = vec![("threads".to_string(), 1.0), ("thread".to_string(), 1.0)];
        add_variants(
            &mut terms,
            |_| true,
            |form| form == "thread" || form == "threader",
        );
        // `thread` was there already; only forms the index holds are added.
        assert_eq!(terms.len(), 3);
        assert_eq!(terms[2].0, "threader");
        assert!((terms[2].1 - VARIANT_WEIGHT).abs() < 1e-6);
        // Only the terms picked (a pasted issue's title's) get forms.
        let mut terms = vec![("mocked".to_string(), 3.0), ("scheduled".to_string(), 1.0)];
        add_variants(&mut terms, |t| t == "mocked", |_| true);
        let added: Vec<&str> = terms[2..].iter().map(|(t, _)| t.as_str()).collect();
        assert!(added.contains(&"mock"), "{added:?}");
        assert!(!added.contains(&"schedule"), "{added:?}");
    }

    #[test]
    fn the_project_s_own_language_is_no_search_term() {
        let terms = weighted_terms("how to sort a dict in Python, not Rust");
        let python_project = |language: &str| if language == "python" { 0.9 } else { 0.05 };
        assert_eq!(project_language_terms(&terms, python_project), ["python"]);
        // A language only some files are in names those files.
        assert!(project_language_terms(&terms, |_| 0.3).is_empty());
        // Asked alone, the word is the question.
        assert!(project_language_terms(&weighted_terms("python"), python_project).is_empty());
        // Data formats and short common words are content.
        assert!(project_language_terms(&weighted_terms("parse json and go"), |_| 0.9).is_empty());
        // Each is a name the index records, which `language_share` looks up.
        for word in LANGUAGE_WORDS {
            assert_eq!(
                crate::files::lang::resolve_language(word),
                Some(*word),
                "{word}"
            );
        }
        assert_eq!(
            without_words("how to sort a dict in Python?", &["python".into()]),
            "how to sort a dict in ?"
        );
        assert_eq!(
            without_words("pythonic python3", &["python".into()]),
            "pythonic python3"
        );
    }

    #[test]
    fn terms_are_distinct_in_order() {
        let terms: Vec<String> = weighted_terms("foo bar foo_baz foo")
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert_eq!(terms, ["foo", "bar", "foo_baz", "baz"]);
    }
}
