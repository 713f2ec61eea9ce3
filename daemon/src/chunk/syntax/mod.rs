//! Syntax-aware chunking: tree-sitter for the languages in [`languages`], headings for
//! Markdown, line windows for everything else.
//!
//! The walk partitions a file's lines into ordered segments (gaps between items, items,
//! container headers), so chunks cover every non-blank line by construction. Containers
//! (classes, impls, modules, namespaces) that are too large are split into a header and their
//! members; items that are too large are split into line windows labelled with the item; small
//! neighbours are merged. Every item found is also returned as a [`Symbol`] for `lookup`.

mod bindings;
mod builder;
mod components;
mod kinds;
mod languages;
mod naming;
pub mod refs;
mod walker;

pub(crate) use bindings::{DECLARED, capitalised};

use crate::chunk::{self, Chunk};
use builder::Builder;
use languages::spec;

/// A definition found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The bare name (`request`).
    pub name: String,
    /// The name qualified by its parents (`Session.request`, `Runtime::block_on`).
    pub qualified: String,
    /// `function`, `method`, `class`, `struct`, `impl`, ...
    pub kind: &'static str,
    /// First line (1-based), including leading doc comments and attributes.
    pub start_line: u32,
    /// Last line (1-based, inclusive).
    pub end_line: u32,
    /// The declaration up to its body, whitespace collapsed.
    pub signature: String,
    /// The qualified name of the enclosing symbol, if any.
    pub parent: Option<String>,
}

/// The chunks and symbols of a file.
#[derive(Debug, Default)]
pub struct Chunked {
    /// Ordered chunks covering every non-blank line.
    pub chunks: Vec<Chunk>,
    /// Every definition found.
    pub symbols: Vec<Symbol>,
    /// What the file refers to (calls, bases, imports).
    pub refs: refs::FileRefs,
}

/// Items longer than this are split (containers into members, others into windows).
pub const MAX_CHUNK_LINES: usize = 60;
/// Segments longer than this in bytes are split by lines.
pub const MAX_CHUNK_BYTES: usize = 6 * 1024;
/// Segments this short may be merged with a neighbour.
const SMALL_LINES: usize = 12;
/// Groups this short join the group after them when they could not join the one before.
const TINY_LINES: usize = 4;
/// Merged groups stay within this many lines.
const MERGE_LINES: usize = 40;
/// Containers nest at most this deep before their members stop being split out.
const MAX_DEPTH: usize = 8;
/// Larger files are chunked by line windows without parsing.
const MAX_PARSE_BYTES: usize = 1 << 20;
/// Signatures are cut at this many bytes.
const MAX_SIGNATURE_BYTES: usize = 300;

/// Languages chunked by syntax (tree-sitter), plus `markdown` (by headings) and the
/// single-file components (`vue`, `svelte`: their scripts by syntax).
pub fn syntax_languages() -> impl Iterator<Item = &'static str> {
    languages::all()
        .map(|spec| spec.name)
        .chain(["markdown", "vue", "svelte"])
}

/// Chunk `text` of the given language.
pub fn chunk_file(language: &str, text: &str) -> Chunked {
    if matches!(language, "vue" | "svelte") && text.len() <= MAX_PARSE_BYTES {
        return components::chunk_component(text);
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut builder = Builder {
        lines: &lines,
        segs: Vec::new(),
        symbols: Vec::new(),
        refs: Default::default(),
    };
    let parsed = if language == "markdown" {
        builder.markdown();
        true
    } else {
        match spec(language) {
            Some(spec) if text.len() <= MAX_PARSE_BYTES => builder.parse(spec, text),
            _ => false,
        }
    };
    if !parsed {
        return Chunked {
            chunks: chunk::line_windows(text),
            ..Default::default()
        };
    }
    builder.finish()
}

#[cfg(test)]
mod tests;
