//! Query analysis for the lexical ranker: which words of a query are code.
//!
//! Agents paste issue text: prose around identifiers (`parse_config`, `Session.request`,
//! `HTTPServer`), paths (`src/auth/login.py`), calls (`render(`) and error names
//! (`ValueError`). Those words name the code; the prose mostly does not. Their terms are
//! weighted [`CODE_WEIGHT`] times a prose word's, and kept first when a long query is cut.

use crate::tokenizer;

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

/// The query's distinct terms (lowercase tokens, as indexed), each with its weight, in order
/// of first appearance; code-derived terms carry [`CODE_WEIGHT`].
pub fn weighted_terms(text: &str) -> Vec<(String, f32)> {
    let mut code_terms = std::collections::HashSet::new();
    let mut start = None;
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    let is_part = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-');
    for (idx, &(i, c)) in bytes.iter().enumerate() {
        let inside = is_part(c);
        if inside && start.is_none() {
            start = Some(i);
        }
        let last = idx + 1 == bytes.len();
        if let Some(s) = start
            && (!inside || last)
        {
            let end = if inside && last { text.len() } else { i };
            let word = &text[s..end];
            let paren = !inside && c == '(';
            if is_code_word(word, paren) {
                code_terms.extend(tokenizer::tokens(word));
            }
            start = None;
        }
    }
    let mut seen = std::collections::HashSet::new();
    tokenizer::tokens(text)
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
        .collect()
}

#[cfg(test)]
mod tests {
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
        assert_eq!(code("use block_on( here"), ["block_on", "block", "on"]);
        assert_eq!(
            code("HTTPServer and Runtime::block_on"),
            [
                "httpserver",
                "http",
                "server",
                "runtime",
                "block_on",
                "block",
                "on"
            ]
        );
        assert_eq!(code("render(x)"), ["render"]);
    }

    #[test]
    fn prose_is_not_code() {
        assert!(code("Where is the retry budget parsed? It fails.").is_empty());
        assert!(code("I think A B test").is_empty());
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
