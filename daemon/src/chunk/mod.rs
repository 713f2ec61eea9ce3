//! Splitting a file's text into chunks: line windows with overlap, bounded in bytes.
//!
//! Invariant (tested): chunks are ordered by start line and together cover every non-blank
//! line of the file; no chunk starts or ends on a blank line.

/// Bump when chunking or symbols change, or what redaction blanks (the text chunked is the
/// redacted text): indexes made by another version read and chunk every file again on their
/// next full pass (vectors of unchanged chunk texts are reused from the embedding cache).
/// 7: the secret rule set. 8: references and imports for the code graph. 9: declared types.
/// 10: Rust macro invocations apart from calls (and the calls in their arguments), Rust
/// locals without a written type. 11: type names with leading underscores (`_Table(...)`)
/// type the bindings given them; a call's receiver in a Rust macro's arguments is the
/// whole chain before it (`Foo::new().f(..)`: `Foo::new()`). 12: a field's written
/// declaration marked apart from the values given it (`self.x: Base` then `self.x = Sub()`),
/// Python's quoted annotations (`app: "Application"`) read. 14: definitions nested in a
/// function (Rust, Python, JavaScript, TypeScript) are symbols. 15: a Python base written
/// `Mapping[str, Resource]` is `Mapping` alone. 16: a `for` loop's element bound to its
/// collection's type (Python, Rust). 17: a Rust local bound to a call's value (`let x =
/// self.get()?;`) is typed by what the callee is written to return. 18: Python's `with X()
/// as x` and `except E as e` bind their alias. 19: a type name may start with `$`
/// (TypeScript's `$ZodRegistry`). 20: a TypeScript local bound to a call's value (`const c =
/// this.make()`) is typed by what the callee is written to return. 21: a JS/TS object
/// literal held by a declaration or a property (`const h = { parse() {..}, run: () => .. }`)
/// is a symbol, its methods and function-valued properties its members; definitions in the
/// functions passed to a call written as a statement (`describe("..", () => {..})`) are.
/// 22: a TypeScript interface's `extends` names its bases. 23: a JS/TS function assigned to a
/// property (`app.use = function use() {..}`, `Foo.prototype.bar = ...`) is a definition, an
/// object literal so assigned a symbol holding its methods.
pub const CHUNKER_VERSION: u64 = 23;

pub mod syntax;

/// A chunk of a file: 1-based inclusive line range and its text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunk {
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, 1-based, inclusive.
    pub end_line: u32,
    /// The lines' text, joined with '\n'.
    pub text: String,
    /// The main symbol of the chunk (qualified, e.g. `Session.request`), if any.
    pub symbol: Option<String>,
    /// Its kind (`function`, `method`, `class`, ...).
    pub kind: Option<&'static str>,
    /// Every symbol name defined in the chunk (weighted in BM25).
    pub names: Vec<String>,
}

/// Lines per window.
pub const WINDOW_LINES: usize = 40;
/// Lines shared by consecutive windows.
pub const OVERLAP_LINES: usize = 8;
/// A window is cut short once its text passes this many bytes (syntax chunks have their
/// own, smaller limit: `syntax::MAX_CHUNK_BYTES`).
pub const MAX_WINDOW_BYTES: usize = 8 * 1024;

/// Split `text` into line windows.
pub fn line_windows(text: &str) -> Vec<Chunk> {
    let lines: Vec<&str> = text.lines().collect();
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < lines.len() {
        // Skip blank lines at the window start.
        while start < lines.len() && lines[start].trim().is_empty() {
            start += 1;
        }
        if start == lines.len() {
            break;
        }
        let mut end = start; // exclusive
        let mut bytes = 0;
        while end < lines.len() && end - start < WINDOW_LINES {
            bytes += lines[end].len() + 1;
            end += 1;
            if bytes >= MAX_WINDOW_BYTES {
                break;
            }
        }
        let mut last = end - 1;
        while lines[last].trim().is_empty() {
            last -= 1;
        }
        chunks.push(Chunk {
            start_line: (start + 1) as u32,
            end_line: (last + 1) as u32,
            text: lines[start..=last].join("\n"),
            ..Chunk::default()
        });
        if end == lines.len() {
            break;
        }
        let window = end - start;
        let overlap = if window > OVERLAP_LINES * 2 {
            OVERLAP_LINES
        } else {
            0
        };
        start = end - overlap;
    }
    chunks
}

/// Assert the chunk invariants for `text`; used by tests.
pub fn check_chunk_invariants(text: &str, chunks: &[Chunk]) {
    let lines: Vec<&str> = text.lines().collect();
    let mut covered = vec![false; lines.len()];
    let mut prev_start = 0;
    for chunk in chunks {
        assert!(
            chunk.start_line >= 1 && chunk.start_line <= chunk.end_line,
            "{chunk:?}"
        );
        assert!(
            chunk.start_line > prev_start,
            "chunks out of order at {chunk:?}"
        );
        prev_start = chunk.start_line;
        let (s, e) = (chunk.start_line as usize - 1, chunk.end_line as usize - 1);
        assert!(!lines[s].trim().is_empty() && !lines[e].trim().is_empty());
        assert_eq!(chunk.text, lines[s..=e].join("\n"));
        covered[s..=e].iter_mut().for_each(|c| *c = true);
    }
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.trim().is_empty() || covered[i],
            "line {} not covered",
            i + 1
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_every_non_blank_line() {
        let mut text = String::new();
        for i in 0..237 {
            if i % 7 == 0 {
                text.push_str("\n\n");
            }
            text.push_str(&format!("line {i}\n"));
        }
        for sample in [
            text.as_str(),
            "",
            "\n\n\n",
            "one",
            "a\n\n\nb\n",
            &"x".repeat(20_000),
            &"long line here\n".repeat(2000),
        ] {
            let chunks = line_windows(sample);
            check_chunk_invariants(sample, &chunks);
        }
    }

    #[test]
    fn windows_are_bounded() {
        let text = format!("{}\n", "y".repeat(300)).repeat(100);
        for chunk in line_windows(&text) {
            assert!(chunk.text.len() < MAX_WINDOW_BYTES + 400);
            assert!(chunk.end_line - chunk.start_line < WINDOW_LINES as u32);
        }
    }
}
