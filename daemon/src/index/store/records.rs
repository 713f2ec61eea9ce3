//! The records kept in LMDB, as plain types (their encodings are in `codec`).

use roaring::RoaringBitmap;

/// What LMDB knows of an indexed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// Size in bytes when indexed.
    pub size: u64,
    /// Modification time (ns since epoch) when indexed.
    pub mtime_ns: u64,
    /// xxh3-64 of the content, or [`FileRecord::PROVISIONAL`].
    pub hash: u64,
    /// Detected language.
    pub language: String,
    /// Ids of the file's chunks, in order.
    pub chunk_ids: Vec<u64>,
}

impl FileRecord {
    /// The hash of a file indexed provisionally: chunked by line windows, without symbols or
    /// references, by a large first pass that makes every file searchable before it parses
    /// any. Such a record vouches for no content, so the next pass reads and chunks the file
    /// again whatever its size and mtime say.
    pub const PROVISIONAL: u64 = 0;

    /// Whether the file waits to be chunked by syntax.
    pub fn is_provisional(&self) -> bool {
        self.hash == Self::PROVISIONAL
    }
}

/// What LMDB knows of a chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRecord {
    /// Relative path of the file.
    pub path: String,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, 1-based inclusive.
    pub end_line: u32,
    /// Symbol name, when known.
    pub symbol: Option<String>,
    /// Symbol kind, when known.
    pub kind: Option<String>,
    /// xxh3-64 of the chunk text.
    pub hash: u64,
}

/// What LMDB knows of a symbol (see `syntax::Symbol`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolRecord {
    /// Bare name.
    pub name: String,
    /// Qualified name.
    pub qualified: String,
    /// Kind.
    pub kind: String,
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (1-based, inclusive).
    pub end_line: u32,
    /// Declaration text.
    pub signature: String,
    /// Enclosing symbol's qualified name.
    pub parent: Option<String>,
}

impl From<&crate::chunk::syntax::Symbol> for SymbolRecord {
    fn from(s: &crate::chunk::syntax::Symbol) -> Self {
        SymbolRecord {
            name: s.name.clone(),
            qualified: s.qualified.clone(),
            kind: s.kind.to_string(),
            start_line: s.start_line,
            end_line: s.end_line,
            signature: s.signature.clone(),
            parent: s.parent.clone(),
        }
    }
}

/// A chunk's new vector, from the embedding worker.
#[derive(Debug, Clone)]
pub struct EmbeddedChunk {
    /// Chunk id.
    pub chunk_id: u64,
    /// Hash of the chunk text the vector was computed from.
    pub hash: u64,
    /// Unit vector.
    pub vector: Vec<f32>,
}

/// Vector ids, pending chunk ids, and ids whose vectors are to be dropped.
pub type VectorState = (
    RoaringBitmap,
    std::collections::HashSet<u64>,
    std::collections::HashSet<u64>,
);

/// A file's symbols' bare names and first lines, in one buffer: what the ranking stage reads
/// of every candidate file (the rest of [`SymbolRecord`] is decoded only for the page shown).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolNames {
    text: String,
    /// (first line, start and end of the name in `text`), by first line.
    entries: Vec<(u32, u32, u32)>,
}

impl SymbolNames {
    /// Add a symbol (kept in the order added until [`SymbolNames::sort`]).
    pub(super) fn push(&mut self, start_line: u32, name: &str) {
        let start = self.text.len() as u32;
        self.text.push_str(name);
        self.entries
            .push((start_line, start, self.text.len() as u32));
    }

    /// Order the symbols by first line.
    pub(super) fn sort(&mut self) {
        self.entries.sort_by_key(|(line, _, _)| *line);
    }

    /// Roughly the heap it holds.
    pub(super) fn heap_size(&self) -> usize {
        64 + self.text.len() + 12 * self.entries.len()
    }

    /// The names of the symbols whose first line is within `start..=end`, in order.
    pub fn starting_within(&self, start: u32, end: u32) -> impl Iterator<Item = &str> {
        let from = self.entries.partition_point(|(line, _, _)| *line < start);
        self.entries[from..]
            .iter()
            .take_while(move |(line, _, _)| *line <= end)
            .map(|(_, a, b)| &self.text[*a as usize..*b as usize])
    }
}
