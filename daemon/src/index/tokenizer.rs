//! A tantivy tokenizer for source code.
//!
//! Words are runs of letters, digits and `_`, optionally joined by single `-` between
//! alphanumerics (`kebab-case`). Each word is emitted whole, lowercased, so a full identifier
//! stays searchable; words made of several parts (`camelCase`, `snake_case`, `kebab-case`,
//! `HTTPServer`) also emit each part. Paths split naturally on `/` and `.`.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Name under which the tokenizer is registered with tantivy.
pub const CODE_TOKENIZER: &str = "code";

/// Tokens longer than this many bytes (minified blobs, base64) are dropped.
const MAX_TOKEN_BYTES: usize = 64;

/// The code tokenizer. Stateless and cheap to clone.
#[derive(Clone, Default)]
pub struct CodeTokenizer {
    tokens: Vec<Token>,
}

/// Token stream over the precomputed tokens of one text.
pub struct CodeTokenStream<'a> {
    tokens: &'a mut [Token],
    next: usize,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.tokens.clear();
        let mut position = 0;
        for_each_token(text, |from, to, word| {
            self.tokens.push(Token {
                offset_from: from,
                offset_to: to,
                position,
                text: word,
                position_length: 1,
            });
            position += 1;
        });
        CodeTokenStream {
            tokens: &mut self.tokens,
            next: 0,
        }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

/// Split `text` into lowercase tokens, calling `emit(offset_from, offset_to, token)`.
pub fn for_each_token(text: &str, mut emit: impl FnMut(usize, usize, String)) {
    let bytes = text.as_bytes();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if !is_word_char(c) {
            chars.next();
            continue;
        }
        // Extend the word over word chars and single '-' between alphanumerics.
        let mut end = start;
        while let Some(&(i, c)) = chars.peek() {
            if is_word_char(c) {
                end = i + c.len_utf8();
                chars.next();
            } else if c == '-' && end == i && i > start {
                let next_is_alnum = text[i + 1..]
                    .chars()
                    .next()
                    .is_some_and(char::is_alphanumeric);
                if next_is_alnum && bytes[i - 1] != b'_' {
                    chars.next();
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        emit_word(&text[start..end], start, &mut emit);
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn emit_word(word: &str, offset: usize, emit: &mut impl FnMut(usize, usize, String)) {
    let trimmed = word.trim_matches(|c| c == '_' || c == '-');
    if trimmed.is_empty() || trimmed.len() > MAX_TOKEN_BYTES {
        return;
    }
    let offset = offset + (word.len() - word.trim_start_matches(['_', '-']).len());
    let whole = trimmed.to_lowercase();
    let parts = split_parts(trimmed);
    emit(offset, offset + trimmed.len(), whole.clone());
    if parts.len() > 1 {
        for (from, to) in parts {
            let part = trimmed[from..to].to_lowercase();
            if part != whole {
                emit(offset + from, offset + to, part);
            }
        }
    }
}

/// Byte ranges of the parts of an identifier: split on `_`/`-` and on case changes
/// (`fooBar` -> foo|Bar, `HTTPServer` -> HTTP|Server). Digits stay with what precedes them.
fn split_parts(word: &str) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut start: Option<usize> = None;
    for (idx, &(i, c)) in chars.iter().enumerate() {
        if c == '_' || c == '-' {
            if let Some(s) = start.take() {
                parts.push((s, i));
            }
            continue;
        }
        match start {
            None => start = Some(i),
            Some(s) => {
                let prev = chars[idx - 1].1;
                let next = chars.get(idx + 1).map(|&(_, c)| c);
                let boundary = c.is_uppercase()
                    && (prev.is_lowercase()
                        || prev.is_ascii_digit()
                        || (prev.is_uppercase() && next.is_some_and(char::is_lowercase)));
                if boundary {
                    parts.push((s, i));
                    start = Some(i);
                }
            }
        }
    }
    if let Some(s) = start {
        parts.push((s, word.len()));
    }
    parts
}

/// All tokens of `text`, in order (for building queries).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |_, _, t| out.push(t));
    out
}

#[cfg(test)]
mod tests {
    use super::tokens;

    fn check(input: &str, expected: &[&str]) {
        assert_eq!(tokens(input), expected, "tokens of {input:?}");
    }

    #[test]
    fn splits_identifiers_and_keeps_whole() {
        check("getUserName", &["getusername", "get", "user", "name"]);
        check(
            "snake_case_name",
            &["snake_case_name", "snake", "case", "name"],
        );
        check("kebab-case", &["kebab-case", "kebab", "case"]);
        check("HTTPServer", &["httpserver", "http", "server"]);
        check(
            "parse_v2Config",
            &["parse_v2config", "parse", "v2", "config"],
        );
        check("__init__", &["init"]);
        check("plain", &["plain"]);
    }

    #[test]
    fn splits_paths_and_code() {
        check(
            "src/auth/login_handler.rs",
            &["src", "auth", "login_handler", "login", "handler", "rs"],
        );
        check("a - b", &["a", "b"]);
        check("x->y(z)", &["x", "y", "z"]);
        check("Über_größe", &["über_größe", "über", "größe"]);
    }

    #[test]
    fn drops_giant_tokens() {
        let blob = "a".repeat(100);
        check(&format!("ok {blob} fine"), &["ok", "fine"]);
    }
}
