//! The ranking stage's view of one project's index ([`rank::IndexView`]), read lazily and
//! once per file through one search.

use std::collections::HashMap;
use std::sync::Arc;

use super::rank;
use crate::index::ProjectIndex;
use crate::index::lexical::LexicalHit;
use crate::index::store::{SymbolNames, SymbolRecord};

/// The ranking stage's view of the project's index: the names each candidate defines (from
/// the per-file symbol lists, read once per file), word frequencies from tantivy, directories
/// from LMDB.
pub(super) struct StoreView<'a> {
    index: &'a ProjectIndex,
    /// Each file's symbols (read for the page shown; shared with the store's cache).
    symbols: std::cell::RefCell<HashMap<String, Arc<Vec<SymbolRecord>>>>,
    /// Each file's symbols' names, by first line (read for every candidate).
    names: std::cell::RefCell<HashMap<String, Arc<SymbolNames>>>,
}

impl<'a> StoreView<'a> {
    pub(super) fn new(index: &'a ProjectIndex) -> StoreView<'a> {
        StoreView {
            index,
            symbols: std::cell::RefCell::new(HashMap::new()),
            names: std::cell::RefCell::new(HashMap::new()),
        }
    }

    /// The symbols whose definitions start inside `hit`'s lines, in order.
    pub(super) fn defined(&self, hit: &LexicalHit) -> Vec<SymbolRecord> {
        let mut cache = self.symbols.borrow_mut();
        let symbols = cache.entry(hit.path.clone()).or_insert_with(|| {
            self.index
                .store
                .shared_symbols_of(&hit.path)
                .unwrap_or_default()
        });
        let mut defined: Vec<SymbolRecord> = symbols
            .iter()
            .filter(|s| hit.start_line <= s.start_line && s.start_line <= hit.end_line)
            .cloned()
            .collect();
        // Stable: symbols on one line keep their stored order.
        defined.sort_by_key(|s| s.start_line);
        defined
    }
}

impl rank::IndexView for StoreView<'_> {
    fn defined_in(&self, hit: &LexicalHit) -> Vec<String> {
        let mut names = self.names.borrow_mut();
        let names = names.entry(hit.path.clone()).or_insert_with(|| {
            self.index
                .store
                .symbol_names_of(&hit.path)
                .unwrap_or_default()
        });
        let mut out: Vec<String> = names
            .starting_within(hit.start_line, hit.end_line)
            .map(str::to_string)
            .collect();
        if let Some(symbol) = &hit.symbol {
            let bare = symbol.rsplit(['.', ':']).next().unwrap_or(symbol);
            out.push(bare.to_string());
        }
        out
    }

    fn doc_share(&self, word: &str) -> f32 {
        self.index.lexical.doc_share(word)
    }

    fn has_directory(&self, dir: &str) -> bool {
        self.index.store.has_directory(dir).unwrap_or(false)
    }

    fn has_file(&self, path: &str) -> bool {
        self.index.store.has_file(path).unwrap_or(false)
    }
}
