//! Reads of the per-file symbol lists, the name index and the per-file references.

use std::collections::BTreeSet;

use super::{FileRefs, IndexError, Store, SymbolRecord, keys};

/// Marks a name-index key as a reference's (`\x01 name \0 path`), apart from the
/// definitions' (`lowercase name \0 path`, which never start with it).
const REFERRED: char = '\u{1}';

/// The name-index keys of the names `refs` calls or imports (each once), in `path`.
pub(super) fn referred_keys(refs: &FileRefs, path: &str) -> Vec<String> {
    let names: BTreeSet<&str> = refs
        .refs
        .iter()
        .map(|r| r.name.as_str())
        .chain(refs.imports.iter().filter_map(|i| i.name.as_deref()))
        .filter(|n| *n != "*")
        .collect();
    names
        .into_iter()
        .map(|name| format!("{REFERRED}{name}\0{path}"))
        .collect()
}

impl Store {
    /// What `path` refers to.
    pub fn refs_of(&self, path: &str) -> Result<FileRefs, IndexError> {
        self.read(|rtxn| {
            Ok(self
                .file_refs
                .get(rtxn, &keys::key(path))?
                .unwrap_or_default())
        })
    }

    /// The symbols of `path`.
    pub fn symbols_of(&self, path: &str) -> Result<Vec<SymbolRecord>, IndexError> {
        self.read(|rtxn| {
            Ok(self
                .file_symbols
                .get(rtxn, &keys::key(path))?
                .unwrap_or_default())
        })
    }

    /// Every (path, symbol) whose bare name equals `name`, ignoring case.
    pub fn symbols_named(&self, name: &str) -> Result<Vec<(String, SymbolRecord)>, IndexError> {
        let name = name.to_lowercase();
        let prefix = format!("{name}\0");
        self.read(|rtxn| {
            let mut paths = Vec::new();
            for item in self
                .symbol_index
                .prefix_iter(rtxn, keys::scan_prefix(&prefix))?
            {
                let (key, ()) = item?;
                if let Some(path) = self.long_keys.full(rtxn, key)?.strip_prefix(&prefix) {
                    paths.push(path.to_string());
                }
            }
            let mut out = Vec::new();
            for path in paths {
                let symbols = self.file_symbols.get(rtxn, &keys::key(&path))?;
                for symbol in symbols.unwrap_or_default() {
                    if symbol.name.to_lowercase() == name {
                        out.push((path.clone(), symbol));
                    }
                }
            }
            Ok(out)
        })
    }

    /// The language recorded for an indexed file.
    pub fn language_of(&self, path: &str) -> Result<Option<String>, IndexError> {
        self.read(|rtxn| Ok(self.files.get(rtxn, &keys::key(path))?.map(|f| f.language)))
    }

    /// The files that call or import `name` (exactly as written), in path order.
    pub fn files_referring(&self, name: &str, limit: usize) -> Result<Vec<String>, IndexError> {
        let prefix = format!("{REFERRED}{name}\0");
        self.read(|rtxn| {
            let mut paths = Vec::new();
            for item in self
                .symbol_index
                .prefix_iter(rtxn, keys::scan_prefix(&prefix))?
            {
                let (key, ()) = item?;
                if let Some(path) = self.long_keys.full(rtxn, key)?.strip_prefix(&prefix) {
                    paths.push(path.to_string());
                    if paths.len() >= limit {
                        break;
                    }
                }
            }
            Ok(paths)
        })
    }
}
