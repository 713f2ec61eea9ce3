//! Reads of the per-file symbol lists, the name index and the per-file references.

use std::sync::{Arc, Mutex};

use lru::LruCache;
use rustc_hash::FxHashMap;

use heed::types::Bytes;

use super::codec::FileHashCodec;
use super::{
    IndexError, Store, StoredRefs, SymbolNames, SymbolNamesCodec, SymbolRecord, codec, keys,
};

/// Files' references kept across requests, by estimated size at most: reading them was
/// most of a code-graph request's time (`impact` of a wide change reads most files).
const REFS_CACHE_BYTES: usize = 32 << 20;

/// Decoded symbol lists kept across requests, by estimated size at most: after references,
/// the graph's largest read (every file a walk passes through).
const SYMBOLS_CACHE_BYTES: usize = 16 << 20;

/// Symbol names and first lines kept across requests: the ranking stage reads them for each
/// of a search's candidate files, and decoding them was a tenth of a small project's search.
const NAMES_CACHE_BYTES: usize = 4 << 20;

/// Recently read files' references.
pub(super) type RefsCache = ContentCache<StoredRefs, REFS_CACHE_BYTES>;
/// Recently read files' decoded symbols.
pub(super) type SymbolsCache = ContentCache<Vec<SymbolRecord>, SYMBOLS_CACHE_BYTES>;
/// Recently read files' symbol names.
pub(super) type NamesCache = ContentCache<SymbolNames, NAMES_CACHE_BYTES>;

/// Chunk paths kept at most (about 32 bytes each, the paths shared).
const CHUNK_PATHS_KEPT: usize = 1 << 18;

/// The file of each committed chunk the code graph has asked about, kept for the store's
/// life: a committed chunk id never names another chunk (ids only grow, and the next id is
/// committed with the chunks), so an entry is right while the chunk lives. (A removed
/// chunk's id can come from the lexical index until it reloads, as before: its file is
/// then read as it is now.) Emptied when full.
#[derive(Clone, Default)]
pub(super) struct ChunkPaths(Arc<Mutex<FxHashMap<u64, Arc<str>>>>);

/// Values decoded from recently read files, each with the content hash of the file it was
/// read from: an entry is used only while the file's record holds that hash, so it is right
/// by construction, whatever was written since, and needs no invalidation. At most `BYTES`
/// of estimated heap; shared by the store's clones, like the environment.
pub(super) struct ContentCache<T, const BYTES: usize>(Arc<Mutex<Cached<T>>>);

impl<T, const BYTES: usize> Clone for ContentCache<T, BYTES> {
    fn clone(&self) -> Self {
        ContentCache(self.0.clone())
    }
}

impl<T, const BYTES: usize> Default for ContentCache<T, BYTES> {
    fn default() -> Self {
        ContentCache(Arc::new(Mutex::new(Cached {
            entries: LruCache::unbounded(),
            bytes: 0,
        })))
    }
}

struct Cached<T> {
    entries: LruCache<String, (u64, Arc<T>, usize)>,
    bytes: usize,
}

impl<T, const BYTES: usize> ContentCache<T, BYTES> {
    fn get(&self, path: &str, hash: u64) -> Option<Arc<T>> {
        let mut cached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match cached.entries.get(path) {
            Some((h, value, _)) if *h == hash => Some(value.clone()),
            _ => None,
        }
    }

    /// The value of `path` as read from content `hash`: the kept one, else `read()`, kept
    /// with its estimated `size`.
    fn get_or_read(
        &self,
        path: &str,
        hash: u64,
        read: impl FnOnce() -> Result<T, heed::Error>,
        size: impl FnOnce(&T) -> usize,
    ) -> Result<Arc<T>, heed::Error> {
        if let Some(value) = self.get(path, hash) {
            return Ok(value);
        }
        let value = Arc::new(read()?);
        self.put(path, hash, value.clone(), size(&value));
        Ok(value)
    }

    /// Keep `value`, of about `size` bytes (none over a quarter of the budget).
    fn put(&self, path: &str, hash: u64, value: Arc<T>, size: usize) {
        if size > BYTES / 4 {
            return;
        }
        let mut cached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, old)) = cached.entries.put(path.to_string(), (hash, value, size)) {
            cached.bytes -= old;
        }
        cached.bytes += size;
        while cached.bytes > BYTES {
            let Some((_, (_, _, old))) = cached.entries.pop_lru() else {
                break;
            };
            cached.bytes -= old;
        }
    }
}

/// Roughly the heap a decoded symbol list holds.
fn symbols_size(symbols: &[SymbolRecord]) -> usize {
    symbols
        .iter()
        .map(|s| {
            120 + s.name.len()
                + s.qualified.len()
                + s.kind.len()
                + s.signature.len()
                + s.parent.as_ref().map_or(0, String::len)
        })
        .sum()
}

impl Store {
    /// The content hash `key`'s file was indexed from, if indexed, read without decoding its
    /// record's chunk ids.
    fn content_hash(&self, rtxn: &heed::RoTxn, key: &str) -> Result<Option<u64>, heed::Error> {
        self.files.remap_data_type::<FileHashCodec>().get(rtxn, key)
    }

    /// `path`'s value kept in `cache`, or read (`read`, from the file's key) when the kept one
    /// is missing or was read from other content; empty for a file not indexed.
    fn cached<T: Default, const BYTES: usize>(
        &self,
        path: &str,
        cache: &ContentCache<T, BYTES>,
        read: impl FnOnce(&heed::RoTxn, &str) -> Result<Option<T>, heed::Error>,
        size: impl FnOnce(&T) -> usize,
    ) -> Result<Arc<T>, IndexError> {
        self.read(|rtxn| {
            let key = keys::key(path);
            let Some(hash) = self.content_hash(rtxn, &key)? else {
                return Ok(Arc::default());
            };
            Ok(cache.get_or_read(
                path,
                hash,
                || Ok(read(rtxn, &key)?.unwrap_or_default()),
                size,
            )?)
        })
    }

    /// What `path` refers to (shared: decoded once while the file is unchanged).
    pub fn refs_of(&self, path: &str) -> Result<Arc<StoredRefs>, IndexError> {
        let read = |rtxn: &heed::RoTxn, key: &str| self.file_refs.get(rtxn, key);
        self.cached(path, &self.refs_cache, read, StoredRefs::heap_size)
    }

    /// The bare names and first lines of `path`'s symbols (cheaper than [`Store::symbols_of`]:
    /// the ranking stage reads them for every candidate file), shared: decoded once while
    /// the file is unchanged.
    pub fn symbol_names_of(&self, path: &str) -> Result<Arc<SymbolNames>, IndexError> {
        let names = self.file_symbols.remap_data_type::<SymbolNamesCodec>();
        let read = |rtxn: &heed::RoTxn, key: &str| names.get(rtxn, key);
        self.cached(path, &self.names_cache, read, SymbolNames::heap_size)
    }

    /// The symbols of `path`, shared: decoded once while the file is unchanged (the code
    /// graph reads every file a walk passes through).
    pub fn shared_symbols_of(&self, path: &str) -> Result<Arc<Vec<SymbolRecord>>, IndexError> {
        let read = |rtxn: &heed::RoTxn, key: &str| self.file_symbols.get(rtxn, key);
        self.cached(path, &self.symbols_cache, read, |symbols| {
            symbols_size(symbols)
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
            let raw = self.file_symbols.remap_data_type::<Bytes>();
            for path in paths {
                let Some(bytes) = raw.get(rtxn, &keys::key(&path))? else {
                    continue;
                };
                let symbols =
                    codec::symbols_named_in(bytes, &name).map_err(heed::Error::Decoding)?;
                out.extend(symbols.into_iter().map(|symbol| (path.clone(), symbol)));
            }
            Ok(out)
        })
    }

    /// The language recorded for an indexed file.
    pub fn language_of(&self, path: &str) -> Result<Option<String>, IndexError> {
        self.read(|rtxn| Ok(self.files.get(rtxn, &keys::key(path))?.map(|f| f.language)))
    }

    /// The files of these chunks, each once, in path order (each chunk's read once per
    /// store: [`ChunkPaths`]).
    pub fn paths_of_chunks(&self, ids: &[u64]) -> Result<Vec<String>, IndexError> {
        // Each file once, told apart by its one allocation; sorted at the end.
        let mut paths: Vec<Arc<str>> = Vec::new();
        let mut seen: rustc_hash::FxHashSet<*const u8> = Default::default();
        let mut add = |path: &Arc<str>| {
            if seen.insert(path.as_ptr()) {
                paths.push(path.clone());
            }
        };
        let mut missing = Vec::new();
        {
            let known = self.chunk_paths.0.lock().unwrap_or_else(|e| e.into_inner());
            for id in ids {
                match known.get(id) {
                    Some(path) => add(path),
                    None => missing.push(*id),
                }
            }
        }
        if !missing.is_empty() {
            let read = self.read(|rtxn| {
                let raw = self.chunks.remap_data_type::<Bytes>();
                let mut read: Vec<(u64, Arc<str>)> = Vec::with_capacity(missing.len());
                let mut by_text: rustc_hash::FxHashMap<&str, Arc<str>> = Default::default();
                for id in missing {
                    if let Some(bytes) = raw.get(rtxn, &id)? {
                        let path = codec::chunk_path(bytes).map_err(heed::Error::Decoding)?;
                        // One allocation per file, however many of its chunks.
                        let path = by_text
                            .entry(path)
                            .or_insert_with(|| Arc::<str>::from(path))
                            .clone();
                        read.push((id, path));
                    }
                }
                Ok(read)
            })?;
            let mut known = self.chunk_paths.0.lock().unwrap_or_else(|e| e.into_inner());
            if known.len() + read.len() > CHUNK_PATHS_KEPT {
                known.clear();
            }
            for (id, path) in read {
                add(&path);
                known.insert(id, path);
            }
        }
        // A file read now and known before has two allocations: told apart here.
        paths.sort_unstable();
        paths.dedup();
        Ok(paths.iter().map(|p| p.to_string()).collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::chunk::syntax::refs::{FileRefs, RefKind, Reference};
    use crate::index::store::{ChunkRecord, FileRecord, Store, SymbolRecord};

    /// `path` indexed with one call of `called` and one definition of it, the file's content
    /// hash `hash`.
    fn put(store: &Store, path: &str, hash: u64, called: &str) {
        let file = FileRecord {
            size: 1,
            mtime_ns: 1,
            hash,
            language: "rust".into(),
            chunk_ids: Vec::new(),
        };
        let refs = FileRefs {
            refs: vec![Reference {
                name: called.into(),
                line: 1,
                kind: RefKind::Call,
                receiver: None,
            }],
            ..Default::default()
        };
        let symbol = SymbolRecord {
            name: called.into(),
            qualified: called.into(),
            kind: "function".into(),
            start_line: 1,
            end_line: 2,
            signature: String::new(),
            parent: None,
        };
        let mut txn = store.write_txn().unwrap();
        txn.put_file(path, &file, &[], &[symbol], &refs).unwrap();
        txn.commit(0).unwrap();
    }

    #[test]
    fn chunk_paths_are_read_once_each_file_once_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let chunk = |path: &str, line: u32| ChunkRecord {
            path: path.into(),
            start_line: line,
            end_line: line,
            symbol: None,
            kind: None,
            hash: u64::from(line),
        };
        let file = FileRecord {
            size: 1,
            mtime_ns: 1,
            hash: 1,
            language: "rust".into(),
            chunk_ids: Vec::new(),
        };
        let mut txn = store.write_txn().unwrap();
        let refs = FileRefs::default();
        txn.put_file(
            "b.rs",
            &file,
            &[(1, chunk("b.rs", 1)), (2, chunk("b.rs", 9))],
            &[],
            &refs,
        )
        .unwrap();
        txn.put_file("a.rs", &file, &[(3, chunk("a.rs", 1))], &[], &refs)
            .unwrap();
        txn.commit(4).unwrap();
        // An id with no chunk (never committed) has no file; asked twice, the second answer
        // comes from what the first kept, and equals it.
        for _ in 0..2 {
            assert_eq!(
                store.paths_of_chunks(&[2, 9, 3, 1]).unwrap(),
                ["a.rs", "b.rs"]
            );
        }
        assert_eq!(store.chunk_paths.0.lock().unwrap().len(), 3);
        assert_eq!(store.paths_of_chunks(&[2]).unwrap(), ["b.rs"]);
        assert!(store.paths_of_chunks(&[]).unwrap().is_empty());
    }

    #[test]
    fn cached_references_and_symbols_follow_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        put(&store, "a.rs", 1, "first");
        assert_eq!(
            store.refs_of("a.rs").unwrap().refs().next().unwrap().name,
            "first"
        );
        assert_eq!(store.shared_symbols_of("a.rs").unwrap()[0].name, "first");
        // Cached now; a new content (another hash) is read anew, through a clone too.
        put(&store, "a.rs", 2, "second");
        assert_eq!(
            store
                .clone()
                .refs_of("a.rs")
                .unwrap()
                .refs()
                .next()
                .unwrap()
                .name,
            "second"
        );
        assert_eq!(
            store.clone().shared_symbols_of("a.rs").unwrap()[0].name,
            "second"
        );
        // A removed file has none, whatever was cached.
        let mut txn = store.write_txn().unwrap();
        txn.remove_file("a.rs").unwrap();
        txn.commit(0).unwrap();
        assert!(store.refs_of("a.rs").unwrap().is_empty());
        assert!(store.shared_symbols_of("a.rs").unwrap().is_empty());
    }
}
