//! Which lines of a result an answer shows: a chunk short enough is shown whole; a longer one
//! as its first line (the signature) and the window of lines that best match the query, as
//! ripgrep shows the matching line, with the lines left out named by number. An agent reads
//! the rest with `lookup` or the file resource; the answer stays a few hundred tokens.

/// Lines shown of a chunk in an answer, the first line included.
pub const PREVIEW_LINES: usize = 12;

/// Lines of context kept above the best-matching line.
const ABOVE: usize = 2;

/// One line of a preview, or a run of lines left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part<'a> {
    /// A line shown: its number in the file and its text.
    Line(u32, &'a str),
    /// Lines `first..=last` left out.
    Gap(u32, u32),
}

/// The query's words a line can match: lowercase, at least three characters, with the
/// parts of identifiers (`parse_config`, `parseConfig` -> `parse`, `config`) and without
/// the words every question uses.
fn query_words(query: &str) -> Vec<String> {
    let mut words = Vec::new();
    for token in query.split(|c: char| !c.is_alphanumeric() && c != '_') {
        let mut parts = vec![token.to_string()];
        let mut part = String::new();
        let mut previous_lower = false;
        for c in token.chars() {
            if c == '_' || (c.is_uppercase() && previous_lower) {
                parts.push(std::mem::take(&mut part));
            }
            if c != '_' {
                part.push(c);
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
        }
        parts.push(part);
        for word in parts {
            let word = word.to_lowercase();
            if word.chars().count() >= 3
                && !COMMON.contains(&word.as_str())
                && !words.contains(&word)
            {
                words.push(word);
            }
        }
    }
    words
}

const COMMON: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "how",
    "what",
    "where",
    "which",
    "does",
    "are",
    "this",
    "that",
    "from",
    "into",
    "when",
    "why",
    "who",
    "can",
    "use",
    "used",
    "using",
    "find",
    "code",
    "function",
    "method",
    "class",
    "implementation",
    "implemented",
    "handled",
];

/// A query, read once for the previews of all its results.
pub struct Matcher {
    words: Vec<String>,
}

impl Matcher {
    /// The words of `query` a line can match.
    pub fn new(query: &str) -> Matcher {
        Matcher {
            words: query_words(query),
        }
    }

    /// The preview of `snippet` (whose first line is line `start_line` of its file), at most
    /// `max_lines` lines shown.
    pub fn preview<'a>(
        &self,
        snippet: &'a str,
        start_line: u32,
        max_lines: usize,
    ) -> Vec<Part<'a>> {
        preview(snippet, start_line, &self.words, max_lines)
    }
}

fn preview<'a>(
    snippet: &'a str,
    start_line: u32,
    words: &[String],
    max_lines: usize,
) -> Vec<Part<'a>> {
    let lines: Vec<&str> = snippet.lines().collect();
    let number = |i: usize| start_line + i as u32;
    let all = |range: std::ops::Range<usize>| range.map(|i| Part::Line(number(i), lines[i]));
    if lines.len() <= max_lines {
        return all(0..lines.len()).collect();
    }
    if max_lines < 2 {
        let mut parts: Vec<Part<'a>> = all(0..max_lines).collect();
        parts.push(Part::Gap(number(max_lines), number(lines.len() - 1)));
        return parts;
    }
    // Each line lowered into one buffer (an ASCII line byte by byte, without allocating).
    let mut lowered = String::new();
    let mut score = |line: &str| -> usize {
        lowered.clear();
        if line.is_ascii() {
            lowered.extend(line.chars().map(|c| c.to_ascii_lowercase()));
        } else {
            lowered.push_str(&line.to_lowercase());
        }
        words
            .iter()
            .filter(|w| lowered.contains(w.as_str()))
            .map(|w| w.len())
            .sum()
    };
    // The best line after the first (shown anyway); the earliest of equals.
    let best = (1..lines.len())
        .map(|i| (score(lines[i]), i))
        .fold(
            (0, 0),
            |best, (s, i)| if s > best.0 { (s, i) } else { best },
        )
        .1;
    let body = max_lines - 1;
    let from = best.saturating_sub(ABOVE).max(1).min(lines.len() - body);
    let to = from + body;
    let mut parts = vec![Part::Line(number(0), lines[0])];
    if from > 1 {
        parts.push(Part::Gap(number(1), number(from - 1)));
    }
    parts.extend(all(from..to));
    if to < lines.len() {
        parts.push(Part::Gap(number(to), number(lines.len() - 1)));
    }
    parts
}

/// A preview as text: the lines shown, and each gap as `⋮ lines A-B not shown`.
pub fn text(parts: &[Part<'_>]) -> String {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Line(_, line) => out.push_str(line),
            Part::Gap(first, last) if first == last => {
                out.push_str(&format!("⋮ line {first} not shown"))
            }
            Part::Gap(first, last) => out.push_str(&format!("⋮ lines {first}-{last} not shown")),
        }
        out.push('\n');
    }
    out
}

/// How many lines of the file a preview's text covers: each line shown, and each gap by
/// the lines it names.
pub fn covered(text: &str) -> u32 {
    text.lines()
        .map(|line| {
            let gap = line
                .strip_prefix("⋮ line")
                .and_then(|rest| rest.strip_suffix(" not shown"))
                .map(|rest| rest.trim_start_matches('s').trim());
            match gap.map(|g| g.split_once('-').unwrap_or((g, g))) {
                Some((first, last)) => match (first.parse::<u32>(), last.parse::<u32>()) {
                    (Ok(first), Ok(last)) if last >= first => last - first + 1,
                    _ => 1,
                },
                None => 1,
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn a_short_chunk_is_shown_whole() {
        let snippet = numbered(5);
        let parts = Matcher::new("anything").preview(&snippet, 10, 12);
        assert_eq!(parts.len(), 5);
        assert_eq!(parts[0], Part::Line(10, "line 1"));
        assert_eq!(text(&parts), snippet);
    }

    #[test]
    fn a_long_chunk_shows_its_first_line_and_the_lines_that_match() {
        let mut snippet = String::from("fn retry_policy(attempts: u32) {\n");
        for i in 0..30 {
            snippet.push_str(&format!("    step_{i}();\n"));
        }
        snippet.push_str("    let delay = backoff.next_delay();\n");
        for i in 30..40 {
            snippet.push_str(&format!("    step_{i}();\n"));
        }
        snippet.push_str("}\n");
        let parts = Matcher::new("exponential backoff delay").preview(&snippet, 100, 6);
        assert_eq!(
            parts[0],
            Part::Line(100, "fn retry_policy(attempts: u32) {")
        );
        assert_eq!(parts[1], Part::Gap(101, 128));
        assert!(parts.contains(&Part::Line(131, "    let delay = backoff.next_delay();")));
        assert_eq!(parts.last(), Some(&Part::Gap(134, 142)));
        assert_eq!(
            parts.iter().filter(|p| matches!(p, Part::Line(..))).count(),
            6
        );
        assert!(text(&parts).contains("⋮ lines 101-128 not shown"));
        assert_eq!(covered(&text(&parts)), 43);
        assert_eq!(covered(&text(&parts[..3])), 30);
    }

    #[test]
    fn with_no_line_matching_the_head_is_shown() {
        let snippet = numbered(30);
        let parts = Matcher::new("nothing here").preview(&snippet, 1, 4);
        assert_eq!(
            parts,
            [
                Part::Line(1, "line 1"),
                Part::Line(2, "line 2"),
                Part::Line(3, "line 3"),
                Part::Line(4, "line 4"),
                Part::Gap(5, 30)
            ]
        );
    }

    #[test]
    fn identifiers_match_by_their_parts() {
        assert_eq!(
            query_words("where is parseConfig and read_file_text used"),
            [
                "parseconfig",
                "parse",
                "config",
                "read_file_text",
                "read",
                "file",
                "text"
            ]
        );
    }
}
