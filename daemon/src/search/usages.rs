//! `usages`: where a name is defined and used, line by line.
//!
//! The chunks holding the name as a whole word come from tantivy (the code tokenizer keeps
//! every identifier whole); each of their lines is checked for the name as written, case
//! and word boundaries included (`Config` is not found in `ConfigLoader` or `config`). The
//! project's symbol table says which occurrences are definitions (the name on its own
//! declaration's lines) and which symbol encloses each use. Definitions come first, then
//! uses grouped by file in path order.

use std::collections::BTreeMap;

use super::Searcher;
use crate::error::{Error, UserError};
use crate::index::store::SymbolRecord;

/// Chunks read for one name at most; a name in more chunks than this is reported from
/// these only (`complete: false`).
const MAX_CHUNKS: usize = 20_000;
/// Largest page of occurrences.
pub const MAX_USAGES_LIMIT: usize = 1000;
/// A line is shown up to this many bytes.
const MAX_LINE_BYTES: usize = 240;

/// The lines of one file holding the name: line -> (column, text).
type Lines = BTreeMap<u32, (u32, String)>;

/// A usages request.
#[derive(Debug, Clone)]
pub struct UsagesParams {
    /// The name, bare (`JoinSet`) or qualified (`tokio::task::JoinSet`, `Session.request`):
    /// its last segment is searched.
    pub name: String,
    /// Only paths matching this glob.
    pub path_glob: Option<String>,
    /// Only this file, or the files under this directory.
    pub within: Option<String>,
    /// Page size.
    pub limit: usize,
    /// Occurrences to skip.
    pub offset: usize,
}

/// One occurrence of the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    /// Relative path.
    pub path: String,
    /// Line (1-based).
    pub line: u32,
    /// Column of the name's first byte (1-based, in bytes).
    pub column: u32,
    /// The line, trimmed and cut to [`MAX_LINE_BYTES`].
    pub text: String,
    /// Qualified name of the innermost symbol around the occurrence (for a definition: the
    /// one around the definition).
    pub enclosing: Option<String>,
    /// Whether this occurrence defines the name.
    pub definition: bool,
    /// The file's language.
    pub language: String,
}

/// A page of occurrences.
#[derive(Debug, Clone)]
pub struct UsagesFound {
    /// The searched (bare) name.
    pub name: String,
    /// Occurrences, definitions first.
    pub usages: Vec<Usage>,
    /// Occurrences in all.
    pub total: usize,
    /// Files with an occurrence.
    pub files: usize,
    /// Definitions in all.
    pub definitions: usize,
    /// Whether every chunk holding the name was read.
    pub complete: bool,
}

/// The last segment of a bare or qualified name, checked to be one identifier.
fn bare_name(name: &str) -> Result<&str, Error> {
    let bare = name
        .trim()
        .rsplit(['.', ':', '#', '\\', '/'])
        .next()
        .unwrap_or_default()
        .rsplit("->")
        .next()
        .unwrap_or_default();
    if bare.is_empty() || !bare.chars().all(is_identifier_char) {
        return Err(UserError::InvalidArgument {
            name: "name",
            reason: format!(
                "{name:?} is not an identifier (e.g. `JoinSet`, `parse_config`, `Session.request`)"
            ),
        }
        .into());
    }
    Ok(bare)
}

fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Byte offsets in `line` where `name` occurs as a whole word.
fn occurrences(line: &str, name: &str) -> Vec<usize> {
    line.match_indices(name)
        .map(|(at, _)| at)
        .filter(|&at| {
            let before = line[..at].chars().next_back();
            let after = line[at + name.len()..].chars().next();
            !before.is_some_and(is_identifier_char) && !after.is_some_and(is_identifier_char)
        })
        .collect()
}

/// Whether the occurrence on `line` (whose text is `text`) is `symbol`'s own name on its
/// declaration: inside the symbol, on the line its signature starts with. An `impl` block
/// names a type without defining it.
fn declares(symbol: &SymbolRecord, name: &str, line: u32, text: &str) -> bool {
    if symbol.name != name
        || symbol.kind == "impl"
        || line < symbol.start_line
        || line > symbol.end_line
    {
        return false;
    }
    let text = text.trim();
    let first = symbol.signature.lines().next().unwrap_or_default().trim();
    !text.is_empty() && !first.is_empty() && (text.starts_with(first) || first.starts_with(text))
}

/// The innermost symbol around `line`, other than `except`.
fn enclosing<'a>(
    symbols: &'a [SymbolRecord],
    line: u32,
    except: Option<&SymbolRecord>,
) -> Option<&'a SymbolRecord> {
    symbols
        .iter()
        .filter(|s| s.start_line <= line && line <= s.end_line)
        .filter(|s| except.is_none_or(|e| *s != e))
        .min_by_key(|s| (s.end_line - s.start_line, std::cmp::Reverse(s.start_line)))
}

fn cut_line(line: &str) -> String {
    let line = line.trim();
    if line.len() <= MAX_LINE_BYTES {
        return line.to_string();
    }
    let mut cut = MAX_LINE_BYTES;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &line[..cut])
}

impl Searcher<'_> {
    /// Where `params.name` is defined and used (see the module docs).
    pub fn usages(&self, params: &UsagesParams) -> Result<UsagesFound, Error> {
        let name = bare_name(&params.name)?;
        let paths = self.scope(params.path_glob.as_deref(), params.within.as_deref())?;
        // The index keeps words without their outer underscores (`_private`, `__init__`).
        let hits = self.index.lexical.chunks_with_word(
            &name.trim_matches(['_', '-', '$']).to_lowercase(),
            paths.as_deref(),
            MAX_CHUNKS,
        )?;
        let complete = hits.len() < MAX_CHUNKS;
        // Lines holding the name, per file (chunks may overlap: each line once).
        let mut by_file: BTreeMap<String, (String, Lines)> = BTreeMap::new();
        for hit in &hits {
            let (_, lines) = by_file
                .entry(hit.path.clone())
                .or_insert_with(|| (hit.language.clone(), BTreeMap::new()));
            for (i, text) in hit.body.lines().enumerate() {
                let line = hit.start_line + i as u32;
                if lines.contains_key(&line) {
                    continue;
                }
                if let Some(&at) = occurrences(text, name).first() {
                    lines.insert(line, (at as u32 + 1, cut_line(text)));
                }
            }
        }
        let mut definitions = Vec::new();
        let mut uses = Vec::new();
        let mut files = 0;
        for (path, (language, lines)) in by_file {
            if lines.is_empty() {
                continue;
            }
            files += 1;
            let symbols = self.index.store.symbols_of(&path)?;
            for (line, (column, text)) in lines {
                let defined = symbols.iter().find(|s| declares(s, name, line, &text));
                let around = enclosing(&symbols, line, defined);
                let usage = Usage {
                    path: path.clone(),
                    line,
                    column,
                    text,
                    enclosing: around.map(|s| s.qualified.clone()),
                    definition: defined.is_some(),
                    language: language.clone(),
                };
                if usage.definition {
                    definitions.push(usage);
                } else {
                    uses.push(usage);
                }
            }
        }
        let total = definitions.len() + uses.len();
        let n_definitions = definitions.len();
        let usages = definitions
            .into_iter()
            .chain(uses)
            .skip(params.offset)
            .take(params.limit)
            .collect();
        Ok(UsagesFound {
            name: name.to_string(),
            usages,
            total,
            files,
            definitions: n_definitions,
            complete,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_whole_and_as_written() {
        assert_eq!(
            occurrences(
                "let c: Config = Config::new(); // ConfigLoader, config",
                "Config"
            ),
            [7, 16]
        );
        assert_eq!(
            occurrences("$config->load()", "config"),
            Vec::<usize>::new()
        );
        assert_eq!(bare_name("tokio::task::JoinSet").unwrap(), "JoinSet");
        assert_eq!(bare_name("Session.request").unwrap(), "request");
        assert_eq!(bare_name("$this->load").unwrap(), "load");
        assert!(bare_name("two words").is_err());
        assert!(bare_name("  ").is_err());
    }

    #[test]
    fn a_definition_is_the_name_on_its_declaration() {
        let symbol = |name: &str, start, end, signature: &str| SymbolRecord {
            name: name.into(),
            qualified: format!("m.{name}"),
            kind: "function".into(),
            start_line: start,
            end_line: end,
            signature: signature.into(),
            parent: None,
        };
        let outer = symbol("outer", 1, 20, "def outer():");
        // Its doc comment starts the symbol; the declaration is on line 6.
        let load = symbol("load", 5, 9, "def load(path):");
        assert!(declares(&load, "load", 6, "    def load(path):"));
        assert!(!declares(&load, "load", 5, "# load is called by outer"));
        assert!(!declares(&load, "load", 8, "return load(path.parent)"));
        let mut block = symbol("Config", 30, 40, "impl Config");
        block.kind = "impl".into();
        assert!(!declares(&block, "Config", 30, "impl Config {"));
        let symbols = [outer.clone(), load.clone()];
        assert_eq!(enclosing(&symbols, 7, None), Some(&load));
        assert_eq!(enclosing(&symbols, 5, Some(&load)), Some(&outer));
        assert_eq!(enclosing(&symbols, 25, None), None);
    }
}
