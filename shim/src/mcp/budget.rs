//! Answers that fit the client's context window. A tool result over the client's limit is a
//! failed call (Claude Code caps one at ~25,000 tokens), so every `search`, `similar` and
//! `lookup` answer is kept within `max_tokens` (default [`DEFAULT_MAX_TOKENS`]), estimated
//! as bytes / 4 (code averages 3-4 bytes per token in common tokenizers). Cuts fall at line
//! ends, never mid-line, and the answer says what was left out and how to get it.
//! `format: "compact"` gives place and first line only, for agents that read with their
//! own tools.

use amanmcp_proto::pb;
use rmcp::model::JsonObject;
use serde_json::Value;

use super::args::{ToolError, optional_integer, optional_string};

/// Tokens an answer may take when the call does not say.
pub const DEFAULT_MAX_TOKENS: u64 = 8_000;
/// The smallest budget accepted.
pub const MIN_MAX_TOKENS: u64 = 100;
/// The largest budget accepted.
pub const MAX_MAX_TOKENS: u64 = 100_000;

/// The estimate: bytes / 4, rounded up.
pub fn tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// How an answer is to be shaped.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Tokens the answer may take.
    pub max_tokens: usize,
    /// Place and first line only.
    pub compact: bool,
}

impl Shape {
    /// `max_tokens` and `format` from a call's arguments.
    pub fn from_args(args: &JsonObject) -> Result<Shape, ToolError> {
        let max_tokens = optional_integer(args, "max_tokens", MIN_MAX_TOKENS, MAX_MAX_TOKENS)?
            .unwrap_or(DEFAULT_MAX_TOKENS) as usize;
        let compact = match optional_string(args, "format")?.as_deref() {
            None | Some("full") => false,
            Some("compact") => true,
            Some(other) => {
                return Err(ToolError::Argument(format!(
                    "argument `format` must be `full` or `compact` (got {other:?})"
                )));
            }
        };
        Ok(Shape {
            max_tokens,
            compact,
        })
    }
}

/// The first lines of `text` that fit in `max_tokens`, and how many lines were kept.
pub fn cut_at_lines(text: &str, max_tokens: usize) -> (&str, usize) {
    let max_bytes = max_tokens * 4;
    if text.len() <= max_bytes {
        return (text, text.lines().count());
    }
    let mut end = 0;
    let mut lines = 0;
    for line in text.split_inclusive('\n') {
        if end + line.len() > max_bytes {
            break;
        }
        end += line.len();
        lines += 1;
    }
    (&text[..end], lines)
}

/// The first non-blank line of `code`, cut to 200 bytes: the compact form's preview.
pub fn first_line(code: &str) -> String {
    let line = code
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut end = line.len().min(200);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_string()
}

/// What fitting a search-shaped reply into its budget kept.
pub struct Fitted {
    /// The hits kept, snippets cut where needed.
    pub hits: Vec<pb::SearchHit>,
    /// Whether the last hit kept had its snippet cut.
    pub cut: bool,
    /// Hits of this page left out.
    pub omitted: usize,
}

/// Keep hits in order while they fit `shape.max_tokens`; cut the snippet of the first hit
/// that does not fit (when enough of it fits to be useful), leave out the rest.
pub fn fit_hits(hits: &[pb::SearchHit], shape: Shape) -> Fitted {
    let mut left = shape.max_tokens.saturating_sub(60);
    let mut kept = Vec::new();
    let mut cut = false;
    for hit in hits {
        let header = tokens(&hit.path) + 12 + hit.symbol.as_deref().map_or(0, tokens);
        let body = if shape.compact {
            tokens(&first_line(&hit.snippet))
        } else {
            tokens(&hit.snippet)
        };
        if header + body <= left {
            left -= header + body;
            kept.push(hit.clone());
            continue;
        }
        // Cut this one at a line end if a useful part fits; then stop.
        if !shape.compact && left > header + 40 {
            let (part, lines) = cut_at_lines(&hit.snippet, left - header);
            if lines > 0 {
                let mut hit = hit.clone();
                hit.end_line = hit.start_line + crate::preview::covered(part) - 1;
                hit.snippet = part.to_string();
                kept.push(hit);
                cut = true;
            }
        }
        break;
    }
    Fitted {
        omitted: hits.len() - kept.len(),
        hits: kept,
        cut,
    }
}

/// The sentence telling what a budget left out, and how to get it.
pub fn omitted_note(omitted: usize, cut: bool, shape: Shape, next_offset: Option<u64>) -> String {
    let mut parts = Vec::new();
    if cut {
        parts.push("the last result's code was cut at a line end".to_string());
    }
    if omitted > 0 {
        parts.push(format!("{omitted} more results of this page were left out"));
    }
    let mut how = vec![format!("a larger `max_tokens` (now {})", shape.max_tokens)];
    if let Some(offset) = next_offset {
        how.push(format!("`offset: {offset}`"));
    }
    if !shape.compact {
        how.push("`format: \"compact\"`".into());
    }
    how.push("a narrower `path`".into());
    format!(
        "({} to stay within the token budget; ask with {})",
        parts.join(" and "),
        how.join(", ")
    )
}

/// Set `key` on a JSON object, for the structured side of a fitted answer.
pub fn mark(value: &mut Value, key: &str, to: Value) {
    if let Value::Object(map) = value {
        map.insert(key.to_string(), to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_at_line_ends() {
        let text = "alpha\nbeta\ngamma\n";
        assert_eq!(cut_at_lines(text, 100), (text, 3));
        assert_eq!(cut_at_lines(text, 3), ("alpha\nbeta\n", 2));
        assert_eq!(cut_at_lines(text, 2), ("alpha\n", 1));
        assert_eq!(cut_at_lines(text, 1), ("", 0));
    }

    #[test]
    fn hits_are_kept_in_order_until_the_budget_and_the_next_is_cut() {
        let hit = |i: u32, lines: usize| pb::SearchHit {
            path: format!("f{i}.rs"),
            start_line: 1,
            end_line: lines as u32,
            snippet: "let x = 1; // some code here\n".repeat(lines),
            ..Default::default()
        };
        let hits: Vec<_> = (0..10).map(|i| hit(i, 40)).collect();
        let shape = Shape {
            max_tokens: 1_000,
            compact: false,
        };
        let fitted = fit_hits(&hits, shape);
        assert!(fitted.hits.len() >= 2 && fitted.hits.len() < 10);
        assert_eq!(fitted.omitted, 10 - fitted.hits.len());
        let used: usize = fitted.hits.iter().map(|h| tokens(&h.snippet) + 20).sum();
        assert!(used <= 1_000, "{used}");
        for hit in &fitted.hits {
            assert!(hit.snippet.ends_with('\n'));
            assert_eq!(
                hit.snippet.lines().count() as u32,
                hit.end_line - hit.start_line + 1
            );
        }
        let compact = fit_hits(
            &hits,
            Shape {
                max_tokens: 1_000,
                compact: true,
            },
        );
        assert_eq!(compact.hits.len(), 10);
    }
}
