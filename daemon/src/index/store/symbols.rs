//! Reads of the per-file symbol lists, the name index and the per-file references.

use std::collections::BTreeSet;

use super::{FileRefs, IndexError, Store, SymbolRecord, keys};

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

    /// The files of these chunks, each once, in path order.
    pub fn paths_of_chunks(&self, ids: &[u64]) -> Result<Vec<String>, IndexError> {
        self.read(|rtxn| {
            let mut paths = BTreeSet::new();
            for id in ids {
                if let Some(chunk) = self.chunks.get(rtxn, id)? {
                    paths.insert(chunk.path);
                }
            }
            Ok(paths.into_iter().collect())
        })
    }
}
