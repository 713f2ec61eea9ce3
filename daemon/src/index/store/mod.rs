//! The project's LMDB environment (heed): file and chunk metadata, and the vectors (hannoy's graph, `ann`).
//!
//! Every database is named once in [`db_name`]. Only the project's writer thread opens a
//! write transaction (see `writer.rs`); readers use short read transactions.
//!
//! Vectors: every chunk either has a vector in the ANN graph (item id = chunk id) or is listed in
//! `embed_pending`; both change in the same write transaction as the chunk records, so a
//! deleted chunk never leaves a vector behind. `embed_cache` maps a chunk text hash to its
//! vector (int8 with a scale), so re-indexing, renames and branch switches re-embed only new text. The model id
//! and dimensions are recorded in `meta`; vectors of two models are never mixed.

mod ann;
mod check;
mod codec;
mod compact;
mod exact;
mod keys;
mod quantized;
mod records;
pub mod resident;
mod stored_refs;
mod symbols;
mod vectors;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use heed::types::{Bytes, Str, U64, Unit};
use heed::{CommitOrAbort, Database, Env, EnvOpenOptions, RoTxn, RwTxn};

pub use crate::chunk::syntax::refs::FileRefs;
use crate::error::IndexError;
pub use ann::Error as AnnError;
pub use check::Tally;
use codec::{ChunkCodec, FileCodec, RefsCodec, SymbolNamesCodec, SymbolsCodec};
pub(crate) use quantized::{bytes_vector, vector_bytes};
pub use records::{ChunkRecord, EmbeddedChunk, FileRecord, SymbolNames, SymbolRecord, VectorState};
pub use stored_refs::{RefView, StoredRefs};

/// Bump when the on-disk layout of LMDB or tantivy changes: older indexes are rebuilt.
pub const FORMAT_VERSION: u64 = 7;

/// Names of the LMDB databases.
pub mod db_name {
    /// Key/value settings: format version, root, next chunk id.
    pub const META: &str = "meta";
    /// Relative path -> [`super::FileRecord`].
    pub const FILES: &str = "files";
    /// Chunk id (big-endian u64) -> [`super::ChunkRecord`].
    pub const CHUNKS: &str = "chunks";
    /// Paths whose tantivy documents may be ahead of LMDB (write-ahead intent).
    pub const DIRTY: &str = "dirty";
    /// Relative path -> the file's symbols.
    pub const FILE_SYMBOLS: &str = "file_symbols";
    /// Relative path -> what the file refers to (calls, bases, imports).
    pub const FILE_REFS: &str = "file_refs";
    /// `lowercase name \0 path` -> (): which files define a name.
    pub const SYMBOL_INDEX: &str = "symbol_index";
    /// hannoy's database: chunk vectors (item id = chunk id), cosine distance.
    pub const VECTORS: &str = "vectors";
    /// Chunk text hash -> vector (little-endian f32s) of the current model.
    pub const EMBED_CACHE: &str = "embed_cache";
    /// Chunk id -> chunk text hash: chunks still waiting for a vector.
    pub const EMBED_PENDING: &str = "embed_pending";
    /// Chunk id -> (): vectors of removed chunks, dropped by the next vector commit.
    pub const VECTOR_DELETES: &str = "vector_deletes";
    /// A cut key -> the whole path or symbol key it stands for (see `keys`).
    pub const LONG_KEYS: &str = "long_keys";
}

mod meta_key {
    pub const FORMAT_VERSION: &str = "format_version";
    pub const ROOT: &str = "root";
    pub const NEXT_CHUNK_ID: &str = "next_chunk_id";
    pub const EMBED_MODEL: &str = "embed_model";
    pub const EMBED_DIMS: &str = "embed_dims";
    pub const CHUNKER_VERSION: &str = "chunker_version";
}

fn symbol_index_key(name: &str, path: &str) -> String {
    format!("{}\0{path}", name.to_lowercase())
}

/// A failure inside the store, before the environment's directory is attached to it.
#[derive(Debug)]
enum Fail {
    Lmdb(heed::Error),
    Vectors(ann::Error),
}

impl From<heed::Error> for Fail {
    fn from(e: heed::Error) -> Self {
        Fail::Lmdb(e)
    }
}

impl From<ann::Error> for Fail {
    fn from(e: ann::Error) -> Self {
        Fail::Vectors(e)
    }
}

type BeU64 = U64<heed::byteorder::BigEndian>;

/// The project's LMDB environment and its typed databases.
#[derive(Clone)]
pub struct Store {
    env: Env,
    path: PathBuf,
    meta: Database<'static, Str, Bytes>,
    files: Database<'static, Str, FileCodec>,
    chunks: Database<'static, BeU64, ChunkCodec>,
    dirty: Database<'static, Str, Unit>,
    file_symbols: Database<'static, Str, SymbolsCodec>,
    file_refs: Database<'static, Str, RefsCodec>,
    symbol_index: Database<'static, Str, Unit>,
    vectors: ann::Database,
    embed_cache: Database<'static, BeU64, Bytes>,
    embed_pending: Database<'static, BeU64, BeU64>,
    vector_deletes: Database<'static, BeU64, Unit>,
    long_keys: keys::LongKeys,
    /// Recently read files' decoded references (`symbols::RefsCache`).
    refs_cache: symbols::RefsCache,
    /// Recently read files' decoded symbols (`symbols::SymbolsCache`).
    symbols_cache: symbols::SymbolsCache,
    /// Recently read files' symbol names (`symbols::NamesCache`).
    names_cache: symbols::NamesCache,
    /// Committed chunks' files, as the graph asked (`symbols::ChunkPaths`).
    chunk_paths: symbols::ChunkPaths,
    /// Every vector in memory, for a small project's exact search (`exact`).
    exact: exact::ExactCache,
    /// The file's size when this environment was opened on a file just compacted.
    compacted_to: std::sync::OnceLock<u64>,
}

impl Store {
    /// Open (creating if needed) the environment in `dir`, dropping cached vectors of text no
    /// chunk has any more, then compacting its file when it is mostly free pages (see
    /// `compact`). Both run before the project's writer exists.
    pub fn open(dir: &Path) -> Result<Store, IndexError> {
        let store = Store::open_env(dir)?;
        store.collect_stale_vectors()?;
        compact::compacted(store)
    }

    fn open_env(dir: &Path) -> Result<Store, IndexError> {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
        // SAFETY: the directory is private to this daemon, which holds the per-user lock, so
        // no other process maps the same file; we never open the same env twice (registry).
        let env = unsafe {
            EnvOpenOptions::new()
                .map_size(64 << 30)
                .max_dbs(16)
                .open(dir)
        }
        .map_err(|e| IndexError::lmdb(dir, e))?;
        let wtxn = env.write_txn().map_err(|e| IndexError::lmdb(dir, e))?;
        let (
            meta,
            files,
            chunks,
            dirty,
            file_symbols,
            file_refs,
            symbol_index,
            vectors,
            cache,
            pending,
            deletes,
            long_keys,
        ) = env
            .create_databases_and_commit(wtxn, |opener, wtxn| -> heed::Result<_> {
                let meta = opener.create_database::<Str, Bytes>(wtxn, Some(db_name::META))?;
                let files = opener.create_database::<Str, FileCodec>(wtxn, Some(db_name::FILES))?;
                let chunks =
                    opener.create_database::<BeU64, ChunkCodec>(wtxn, Some(db_name::CHUNKS))?;
                let dirty = opener.create_database::<Str, Unit>(wtxn, Some(db_name::DIRTY))?;
                let file_symbols = opener
                    .create_database::<Str, SymbolsCodec>(wtxn, Some(db_name::FILE_SYMBOLS))?;
                let file_refs =
                    opener.create_database::<Str, RefsCodec>(wtxn, Some(db_name::FILE_REFS))?;
                let symbol_index =
                    opener.create_database::<Str, Unit>(wtxn, Some(db_name::SYMBOL_INDEX))?;
                let vectors = opener.create_database::<ann::KeyCodec, ann::NodeCodec>(
                    wtxn,
                    Some(db_name::VECTORS),
                )?;
                let cache =
                    opener.create_database::<BeU64, Bytes>(wtxn, Some(db_name::EMBED_CACHE))?;
                let pending =
                    opener.create_database::<BeU64, BeU64>(wtxn, Some(db_name::EMBED_PENDING))?;
                let deletes =
                    opener.create_database::<BeU64, Unit>(wtxn, Some(db_name::VECTOR_DELETES))?;
                let long_keys =
                    opener.create_database::<Str, Str>(wtxn, Some(db_name::LONG_KEYS))?;
                Ok(CommitOrAbort::<_, ()>::Commit((
                    meta,
                    files,
                    chunks,
                    dirty,
                    file_symbols,
                    file_refs,
                    symbol_index,
                    vectors,
                    cache,
                    pending,
                    deletes,
                    long_keys,
                )))
            })
            .map_err(|e| IndexError::lmdb(dir, e))?
            .unwrap_commit();
        Ok(Store {
            env,
            path: dir.to_path_buf(),
            meta,
            files,
            chunks,
            dirty,
            file_symbols,
            file_refs,
            symbol_index,
            vectors,
            embed_cache: cache,
            embed_pending: pending,
            vector_deletes: deletes,
            long_keys: keys::LongKeys(long_keys),
            refs_cache: symbols::RefsCache::default(),
            symbols_cache: symbols::SymbolsCache::default(),
            names_cache: symbols::NamesCache::default(),
            chunk_paths: symbols::ChunkPaths::default(),
            exact: exact::ExactCache::default(),
            compacted_to: std::sync::OnceLock::new(),
        })
    }

    /// Attach the environment's directory to a failure.
    fn ctx<T>(&self, result: Result<T, Fail>) -> Result<T, IndexError> {
        result.map_err(|fail| match fail {
            Fail::Lmdb(e) => IndexError::lmdb(&self.path, e),
            Fail::Vectors(e) => IndexError::vectors(&self.path, e),
        })
    }

    /// Run `f` in a fresh read transaction.
    fn read<T>(&self, f: impl FnOnce(&RoTxn) -> Result<T, Fail>) -> Result<T, IndexError> {
        self.ctx(
            self.env
                .read_txn()
                .map_err(Fail::from)
                .and_then(|rtxn| f(&rtxn)),
        )
    }

    /// The format version recorded, if any.
    pub fn format_version(&self) -> Result<Option<u64>, IndexError> {
        self.meta_u64(meta_key::FORMAT_VERSION)
    }

    /// The chunker version the indexed files were chunked with, if recorded.
    pub fn chunker_version(&self) -> Result<Option<u64>, IndexError> {
        self.meta_u64(meta_key::CHUNKER_VERSION)
    }

    fn meta_u64(&self, key: &str) -> Result<Option<u64>, IndexError> {
        self.read(|rtxn| {
            Ok(self
                .meta
                .get(rtxn, key)?
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes))
        })
    }

    /// Record the format version and root of a fresh store.
    pub fn initialise(&self, root: &Path) -> Result<(), IndexError> {
        self.ctx((|| {
            let mut wtxn = self.env.write_txn()?;
            let version = FORMAT_VERSION.to_le_bytes();
            self.meta
                .put(&mut wtxn, meta_key::FORMAT_VERSION, &version)?;
            let root = root.to_string_lossy();
            self.meta.put(&mut wtxn, meta_key::ROOT, root.as_bytes())?;
            Ok(wtxn.commit()?)
        })())
    }

    /// Every indexed file with its record.
    pub fn all_files(&self) -> Result<HashMap<String, FileRecord>, IndexError> {
        self.read(|rtxn| {
            let mut out = HashMap::new();
            for item in self.files.iter(rtxn)? {
                let (key, record) = item?;
                out.insert(self.long_keys.full(rtxn, key)?.into_owned(), record);
            }
            Ok(out)
        })
    }

    /// Every indexed path, in order.
    pub fn all_paths(&self) -> Result<Vec<String>, IndexError> {
        self.read(|rtxn| {
            let mut out = Vec::new();
            let paths = self.files.remap_data_type::<heed::types::DecodeIgnore>();
            for item in paths.iter(rtxn)? {
                out.push(self.long_keys.full(rtxn, item?.0)?.into_owned());
            }
            // Cut keys sort by their first bytes only.
            out.sort_unstable();
            Ok(out)
        })
    }

    /// Indexed files under directory `dir` ("" for the root): all descendants, or only direct
    /// children.
    pub fn files_under(
        &self,
        dir: &str,
        recursive: bool,
    ) -> Result<HashMap<String, FileRecord>, IndexError> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        self.read(|rtxn| {
            let mut out = HashMap::new();
            // LMDB refuses an empty key, so the root's files are a plain iteration.
            type Items<'t> = Box<dyn Iterator<Item = heed::Result<(&'t str, FileRecord)>> + 't>;
            let items: Items<'_> = if prefix.is_empty() {
                Box::new(self.files.iter(rtxn)?)
            } else {
                Box::new(self.files.prefix_iter(rtxn, keys::scan_prefix(&prefix))?)
            };
            for item in items {
                let (key, record) = item?;
                let path = self.long_keys.full(rtxn, key)?;
                let Some(rest) = path.strip_prefix(prefix.as_str()) else {
                    continue;
                };
                if recursive || !rest.contains('/') {
                    out.insert(path.into_owned(), record);
                }
            }
            Ok(out)
        })
    }

    /// A page of indexed files in path order, and the total number of files.
    pub fn files_page(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<(String, FileRecord)>, u64), IndexError> {
        self.read(|rtxn| {
            let total = self.files.len(rtxn)?;
            let mut out = Vec::with_capacity(limit.min(1024));
            for item in self.files.iter(rtxn)?.skip(offset).take(limit) {
                let (key, record) = item?;
                out.push((self.long_keys.full(rtxn, key)?.into_owned(), record));
            }
            Ok((out, total))
        })
    }

    /// Number of indexed files and chunks.
    pub fn counts(&self) -> Result<(u64, u64), IndexError> {
        self.read(|rtxn| Ok((self.files.len(rtxn)?, self.chunks.len(rtxn)?)))
    }

    /// Paths marked dirty by an interrupted commit.
    pub fn dirty_paths(&self) -> Result<Vec<String>, IndexError> {
        self.read(|rtxn| {
            let mut out = Vec::new();
            for item in self.dirty.iter(rtxn)? {
                out.push(self.long_keys.full(rtxn, item?.0)?.into_owned());
            }
            Ok(out)
        })
    }

    /// Every chunk id with the path it records.
    pub fn all_chunks(&self) -> Result<Vec<(u64, String)>, IndexError> {
        self.read(|rtxn| {
            let mut out = Vec::new();
            for item in self.chunks.iter(rtxn)? {
                let (id, chunk) = item?;
                out.push((id, chunk.path));
            }
            Ok(out)
        })
    }

    /// Whether `path` is indexed.
    pub fn has_file(&self, path: &str) -> Result<bool, IndexError> {
        self.read(|rtxn| {
            let paths = self.files.remap_data_type::<heed::types::DecodeIgnore>();
            Ok(paths.get(rtxn, &keys::key(path))?.is_some())
        })
    }

    /// Whether any indexed file lies under directory `dir` (not the root).
    pub fn has_directory(&self, dir: &str) -> Result<bool, IndexError> {
        let prefix = format!("{dir}/");
        self.read(|rtxn| {
            let paths = self.files.remap_data_type::<heed::types::DecodeIgnore>();
            for item in paths.prefix_iter(rtxn, keys::scan_prefix(&prefix))? {
                if self.long_keys.full(rtxn, item?.0)?.starts_with(&prefix) {
                    return Ok(true);
                }
            }
            Ok(false)
        })
    }

    /// The line ranges of `path`'s chunks.
    pub fn chunks_of(&self, path: &str) -> Result<Vec<(u32, u32)>, IndexError> {
        self.read(|rtxn| {
            let Some(record) = self.files.get(rtxn, &keys::key(path))? else {
                return Ok(Vec::new());
            };
            let mut out = Vec::with_capacity(record.chunk_ids.len());
            for id in record.chunk_ids {
                if let Some(chunk) = self.chunks.get(rtxn, &id)? {
                    out.push((chunk.start_line, chunk.end_line));
                }
            }
            Ok(out)
        })
    }

    /// Bytes used on disk by the environment.
    pub fn disk_size(&self) -> u64 {
        self.env.real_disk_size().unwrap_or(0)
    }

    /// Start the writer's transaction. Only the writer thread calls this.
    pub fn write_txn(&self) -> Result<StoreTxn<'_>, IndexError> {
        let wtxn = self.ctx(self.env.write_txn().map_err(Fail::from))?;
        Ok(StoreTxn {
            store: self,
            wtxn,
            vectors_added: 0,
        })
    }

    /// The next unused chunk id.
    pub fn next_chunk_id(&self) -> Result<u64, IndexError> {
        Ok(self.meta_u64(meta_key::NEXT_CHUNK_ID)?.unwrap_or(1))
    }
}

/// The writer's open LMDB transaction.
pub struct StoreTxn<'s> {
    store: &'s Store,
    wtxn: RwTxn<'s>,
    /// Vectors stored by this transaction (`put_vectors`), for `build_vectors`.
    vectors_added: u64,
}

impl<'s> StoreTxn<'s> {
    /// Run `f` on the store and this transaction.
    fn write<T>(
        &mut self,
        f: impl FnOnce(&'s Store, &mut RwTxn<'s>) -> Result<T, Fail>,
    ) -> Result<T, IndexError> {
        let store = self.store;
        store.ctx(f(store, &mut self.wtxn))
    }

    /// Mark `path` dirty (its tantivy documents are about to change).
    pub fn mark_dirty(&mut self, path: &str) -> Result<(), IndexError> {
        self.write(|store, wtxn| {
            let key = store.long_keys.put(wtxn, path)?;
            Ok(store.dirty.put(wtxn, &key, &())?)
        })
    }

    /// Clear every dirty mark.
    pub fn clear_dirty(&mut self) -> Result<(), IndexError> {
        self.write(|store, wtxn| {
            // A cut path no file keeps any more is forgotten with its mark.
            let mut gone = Vec::new();
            for item in store.dirty.iter(wtxn)? {
                let key = item?.0;
                if keys::is_cut(key) && store.files.get(wtxn, key)?.is_none() {
                    gone.push(key.to_string());
                }
            }
            for key in gone {
                store.long_keys.0.delete(wtxn, &key)?;
            }
            Ok(store.dirty.clear(wtxn)?)
        })
    }

    /// The record of `path`, if indexed.
    pub fn file(&self, path: &str) -> Result<Option<FileRecord>, IndexError> {
        let key = keys::key(path);
        self.store
            .ctx(self.store.files.get(&self.wtxn, &key).map_err(Fail::from))
    }

    /// Remove `path`, its chunks and its symbols.
    pub fn remove_file(&mut self, path: &str) -> Result<(), IndexError> {
        self.write(|store, wtxn| {
            let key = keys::key(path);
            if let Some(symbols) = store.file_symbols.get(wtxn, &key)? {
                for symbol in &symbols {
                    let symbol_key = symbol_index_key(&symbol.name, path);
                    store.symbol_index.delete(wtxn, &keys::key(&symbol_key))?;
                    store.long_keys.delete(wtxn, &symbol_key)?;
                }
                store.file_symbols.delete(wtxn, &key)?;
            }
            store.file_refs.delete(wtxn, &key)?;
            let Some(old) = store.files.get(wtxn, &key)? else {
                return Ok(());
            };
            for id in old.chunk_ids {
                store.chunks.delete(wtxn, &id)?;
                // A chunk still pending has no vector; one with a vector has it dropped by
                // the next vector commit (searches skip ids without a chunk meanwhile).
                if !store.embed_pending.delete(wtxn, &id)? {
                    store.vector_deletes.put(wtxn, &id, &())?;
                }
            }
            store.files.delete(wtxn, &key)?;
            // The dirty mark, if any, still names the path until the commit clears it.
            if store.dirty.get(wtxn, &key)?.is_none() {
                store.long_keys.delete(wtxn, path)?;
            }
            Ok(())
        })
    }

    /// Store `path`'s record, chunks and symbols (replacing any previous ones first).
    pub fn put_file(
        &mut self,
        path: &str,
        record: &FileRecord,
        chunks: &[(u64, ChunkRecord)],
        symbols: &[SymbolRecord],
        refs: &FileRefs,
    ) -> Result<(), IndexError> {
        self.remove_file(path)?;
        self.write(|store, wtxn| {
            let key = store.long_keys.put(wtxn, path)?;
            if !symbols.is_empty() {
                for symbol in symbols {
                    let symbol_key = symbol_index_key(&symbol.name, path);
                    let symbol_key = store.long_keys.put(wtxn, &symbol_key)?;
                    store.symbol_index.put(wtxn, &symbol_key, &())?;
                }
                store.file_symbols.put(wtxn, &key, symbols)?;
            }
            if !refs.refs.is_empty() || !refs.imports.is_empty() {
                store.file_refs.put(wtxn, &key, refs)?;
            }
            // No vector is written here: the ANN graph is rebuilt by vector commits only, so
            // a saved file stays cheap to commit. The worker serves cached text without
            // embedding.
            for (id, chunk) in chunks {
                store.chunks.put(wtxn, id, chunk)?;
                store.embed_pending.put(wtxn, id, &chunk.hash)?;
            }
            Ok(store.files.put(wtxn, &key, record)?)
        })
    }

    /// Update only the size and mtime of an indexed file whose content is unchanged.
    pub fn touch_file(&mut self, path: &str, size: u64, mtime_ns: u64) -> Result<(), IndexError> {
        self.write(|store, wtxn| {
            let key = keys::key(path);
            if let Some(mut record) = store.files.get(wtxn, &key)? {
                record.size = size;
                record.mtime_ns = mtime_ns;
                store.files.put(wtxn, &key, &record)?;
            }
            Ok(())
        })
    }

    /// Record the chunker version every indexed file is now chunked with.
    pub fn set_chunker_version(&mut self, version: u64) -> Result<(), IndexError> {
        let version = version.to_le_bytes();
        self.write(|store, wtxn| Ok(store.meta.put(wtxn, meta_key::CHUNKER_VERSION, &version)?))
    }

    /// Commit, persisting the chunk id counter.
    pub fn commit(mut self, next_chunk_id: u64) -> Result<(), IndexError> {
        let next = next_chunk_id.to_le_bytes();
        self.write(|store, wtxn| Ok(store.meta.put(wtxn, meta_key::NEXT_CHUNK_ID, &next)?))?;
        let store = self.store;
        store.ctx(self.wtxn.commit().map_err(Fail::from))?;
        store.exact_after_commit();
        Ok(())
    }
}
