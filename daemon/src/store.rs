//! The project's LMDB environment (heed): file and chunk metadata.
//!
//! Every database is named once in [`db_name`]. Only the project's writer thread opens a
//! write transaction (see `writer.rs`); readers use short read transactions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use heed::types::{Bytes, Str, U64, Unit};
use heed::{CommitOrAbort, Database, Env, EnvOpenOptions, RwTxn};

use crate::codec::{ChunkCodec, FileCodec, SymbolsCodec};
use crate::error::IndexError;

/// Bump when the on-disk layout of LMDB or tantivy changes: older indexes are rebuilt.
pub const FORMAT_VERSION: u64 = 2;

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
    /// `lowercase name \0 path` -> (): which files define a name.
    pub const SYMBOL_INDEX: &str = "symbol_index";
}

mod meta_key {
    pub const FORMAT_VERSION: &str = "format_version";
    pub const ROOT: &str = "root";
    pub const NEXT_CHUNK_ID: &str = "next_chunk_id";
}

/// What LMDB knows of an indexed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// Size in bytes when indexed.
    pub size: u64,
    /// Modification time (ns since epoch) when indexed.
    pub mtime_ns: u64,
    /// xxh3-64 of the content.
    pub hash: u64,
    /// Detected language.
    pub language: String,
    /// Ids of the file's chunks, in order.
    pub chunk_ids: Vec<u64>,
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

impl From<&crate::syntax::Symbol> for SymbolRecord {
    fn from(s: &crate::syntax::Symbol) -> Self {
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

fn symbol_index_key(name: &str, path: &str) -> String {
    format!("{}\0{path}", name.to_lowercase())
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
    symbol_index: Database<'static, Str, Unit>,
}

impl Store {
    /// Open (creating if needed) the environment in `dir`.
    pub fn open(dir: &Path) -> Result<Store, IndexError> {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
        // SAFETY: the directory is private to this daemon, which holds the per-user lock, so
        // no other process maps the same file; we never open the same env twice (registry).
        let env = unsafe {
            EnvOpenOptions::new()
                .map_size(64 << 30)
                .max_dbs(8)
                .open(dir)
        }
        .map_err(|e| IndexError::lmdb(dir, e))?;
        let wtxn = env.write_txn().map_err(|e| IndexError::lmdb(dir, e))?;
        let (meta, files, chunks, dirty, file_symbols, symbol_index) = env
            .create_databases_and_commit(wtxn, |opener, wtxn| -> heed::Result<_> {
                let meta = opener.create_database::<Str, Bytes>(wtxn, Some(db_name::META))?;
                let files = opener.create_database::<Str, FileCodec>(wtxn, Some(db_name::FILES))?;
                let chunks =
                    opener.create_database::<BeU64, ChunkCodec>(wtxn, Some(db_name::CHUNKS))?;
                let dirty = opener.create_database::<Str, Unit>(wtxn, Some(db_name::DIRTY))?;
                let file_symbols = opener
                    .create_database::<Str, SymbolsCodec>(wtxn, Some(db_name::FILE_SYMBOLS))?;
                let symbol_index =
                    opener.create_database::<Str, Unit>(wtxn, Some(db_name::SYMBOL_INDEX))?;
                Ok(CommitOrAbort::<_, ()>::Commit((
                    meta,
                    files,
                    chunks,
                    dirty,
                    file_symbols,
                    symbol_index,
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
            symbol_index,
        })
    }

    fn err(&self, e: heed::Error) -> IndexError {
        IndexError::lmdb(&self.path, e)
    }

    /// The format version recorded, if any.
    pub fn format_version(&self) -> Result<Option<u64>, IndexError> {
        self.meta_u64(meta_key::FORMAT_VERSION)
    }

    fn meta_u64(&self, key: &str) -> Result<Option<u64>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let value = self.meta.get(&rtxn, key).map_err(|e| self.err(e))?;
        Ok(value
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes))
    }

    /// Record the format version and root of a fresh store.
    pub fn initialise(&self, root: &Path) -> Result<(), IndexError> {
        let mut wtxn = self.env.write_txn().map_err(|e| self.err(e))?;
        self.meta
            .put(
                &mut wtxn,
                meta_key::FORMAT_VERSION,
                &FORMAT_VERSION.to_le_bytes(),
            )
            .map_err(|e| self.err(e))?;
        self.meta
            .put(&mut wtxn, meta_key::ROOT, root.to_string_lossy().as_bytes())
            .map_err(|e| self.err(e))?;
        wtxn.commit().map_err(|e| self.err(e))
    }

    /// Every indexed file with its record.
    pub fn all_files(&self) -> Result<HashMap<String, FileRecord>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let mut out = HashMap::new();
        for item in self.files.iter(&rtxn).map_err(|e| self.err(e))? {
            let (path, record) = item.map_err(|e| self.err(e))?;
            out.insert(path.to_string(), record);
        }
        Ok(out)
    }

    /// Indexed files under directory `dir` ("" for the root): all descendants, or only direct
    /// children.
    pub fn files_under(
        &self,
        dir: &str,
        recursive: bool,
    ) -> Result<HashMap<String, FileRecord>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut out = HashMap::new();
        // LMDB refuses an empty key, so the root's files are a plain iteration.
        type Items<'t> = Box<dyn Iterator<Item = heed::Result<(&'t str, FileRecord)>> + 't>;
        let items: Items<'_> = if prefix.is_empty() {
            Box::new(self.files.iter(&rtxn).map_err(|e| self.err(e))?)
        } else {
            Box::new(
                self.files
                    .prefix_iter(&rtxn, &prefix)
                    .map_err(|e| self.err(e))?,
            )
        };
        for item in items {
            let (path, record) = item.map_err(|e| self.err(e))?;
            if recursive || !path[prefix.len()..].contains('/') {
                out.insert(path.to_string(), record);
            }
        }
        Ok(out)
    }

    /// A page of indexed files in path order, and the total number of files.
    pub fn files_page(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<(String, FileRecord)>, u64), IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let total = self.files.len(&rtxn).map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(limit.min(1024));
        for item in self
            .files
            .iter(&rtxn)
            .map_err(|e| self.err(e))?
            .skip(offset)
            .take(limit)
        {
            let (path, record) = item.map_err(|e| self.err(e))?;
            out.push((path.to_string(), record));
        }
        Ok((out, total))
    }

    /// Number of indexed files and chunks.
    pub fn counts(&self) -> Result<(u64, u64), IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let files = self.files.len(&rtxn).map_err(|e| self.err(e))?;
        let chunks = self.chunks.len(&rtxn).map_err(|e| self.err(e))?;
        Ok((files, chunks))
    }

    /// Paths marked dirty by an interrupted commit.
    pub fn dirty_paths(&self) -> Result<Vec<String>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for item in self.dirty.iter(&rtxn).map_err(|e| self.err(e))? {
            out.push(item.map_err(|e| self.err(e))?.0.to_string());
        }
        Ok(out)
    }

    /// Every chunk id with the path it records.
    pub fn all_chunks(&self) -> Result<Vec<(u64, String)>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for item in self.chunks.iter(&rtxn).map_err(|e| self.err(e))? {
            let (id, chunk) = item.map_err(|e| self.err(e))?;
            out.push((id, chunk.path));
        }
        Ok(out)
    }

    /// The line ranges of `path`'s chunks.
    pub fn chunks_of(&self, path: &str) -> Result<Vec<(u32, u32)>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let Some(record) = self.files.get(&rtxn, path).map_err(|e| self.err(e))? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(record.chunk_ids.len());
        for id in record.chunk_ids {
            if let Some(chunk) = self.chunks.get(&rtxn, &id).map_err(|e| self.err(e))? {
                out.push((chunk.start_line, chunk.end_line));
            }
        }
        Ok(out)
    }

    /// The symbols of `path`.
    pub fn symbols_of(&self, path: &str) -> Result<Vec<SymbolRecord>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        Ok(self
            .file_symbols
            .get(&rtxn, path)
            .map_err(|e| self.err(e))?
            .unwrap_or_default())
    }

    /// Every (path, symbol) whose bare name equals `name`, ignoring case.
    pub fn symbols_named(&self, name: &str) -> Result<Vec<(String, SymbolRecord)>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let prefix = format!("{}\0", name.to_lowercase());
        let mut paths = Vec::new();
        for item in self
            .symbol_index
            .prefix_iter(&rtxn, &prefix)
            .map_err(|e| self.err(e))?
        {
            let (key, ()) = item.map_err(|e| self.err(e))?;
            paths.push(key[prefix.len()..].to_string());
        }
        let mut out = Vec::new();
        for path in paths {
            let symbols = self
                .file_symbols
                .get(&rtxn, &path)
                .map_err(|e| self.err(e))?
                .unwrap_or_default();
            for symbol in symbols {
                if symbol.name.to_lowercase() == name.to_lowercase() {
                    out.push((path.clone(), symbol));
                }
            }
        }
        Ok(out)
    }

    /// Bytes used on disk by the environment.
    pub fn disk_size(&self) -> u64 {
        self.env.real_disk_size().unwrap_or(0)
    }

    /// Start the writer's transaction. Only the writer thread calls this.
    pub fn write_txn(&self) -> Result<StoreTxn<'_>, IndexError> {
        let wtxn = self.env.write_txn().map_err(|e| self.err(e))?;
        Ok(StoreTxn { store: self, wtxn })
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
}

impl StoreTxn<'_> {
    /// Mark `path` dirty (its tantivy documents are about to change).
    pub fn mark_dirty(&mut self, path: &str) -> Result<(), IndexError> {
        self.store
            .dirty
            .put(&mut self.wtxn, path, &())
            .map_err(|e| self.store.err(e))
    }

    /// Clear every dirty mark.
    pub fn clear_dirty(&mut self) -> Result<(), IndexError> {
        self.store
            .dirty
            .clear(&mut self.wtxn)
            .map_err(|e| self.store.err(e))
    }

    /// The record of `path`, if indexed.
    pub fn file(&self, path: &str) -> Result<Option<FileRecord>, IndexError> {
        self.store
            .files
            .get(&self.wtxn, path)
            .map_err(|e| self.store.err(e))
    }

    /// Remove `path`, its chunks and its symbols.
    pub fn remove_file(&mut self, path: &str) -> Result<(), IndexError> {
        let symbols = self
            .store
            .file_symbols
            .get(&self.wtxn, path)
            .map_err(|e| self.store.err(e))?;
        if let Some(symbols) = symbols {
            for symbol in &symbols {
                self.store
                    .symbol_index
                    .delete(&mut self.wtxn, &symbol_index_key(&symbol.name, path))
                    .map_err(|e| self.store.err(e))?;
            }
            self.store
                .file_symbols
                .delete(&mut self.wtxn, path)
                .map_err(|e| self.store.err(e))?;
        }
        if let Some(old) = self.file(path)? {
            for id in old.chunk_ids {
                self.store
                    .chunks
                    .delete(&mut self.wtxn, &id)
                    .map_err(|e| self.store.err(e))?;
            }
            self.store
                .files
                .delete(&mut self.wtxn, path)
                .map_err(|e| self.store.err(e))?;
        }
        Ok(())
    }

    /// Store `path`'s record, chunks and symbols (replacing any previous ones first).
    pub fn put_file(
        &mut self,
        path: &str,
        record: &FileRecord,
        chunks: &[(u64, ChunkRecord)],
        symbols: &[SymbolRecord],
    ) -> Result<(), IndexError> {
        self.remove_file(path)?;
        if !symbols.is_empty() {
            for symbol in symbols {
                self.store
                    .symbol_index
                    .put(&mut self.wtxn, &symbol_index_key(&symbol.name, path), &())
                    .map_err(|e| self.store.err(e))?;
            }
            self.store
                .file_symbols
                .put(&mut self.wtxn, path, symbols)
                .map_err(|e| self.store.err(e))?;
        }
        for (id, chunk) in chunks {
            self.store
                .chunks
                .put(&mut self.wtxn, id, chunk)
                .map_err(|e| self.store.err(e))?;
        }
        self.store
            .files
            .put(&mut self.wtxn, path, record)
            .map_err(|e| self.store.err(e))
    }

    /// Update only the size and mtime of an indexed file whose content is unchanged.
    pub fn touch_file(&mut self, path: &str, size: u64, mtime_ns: u64) -> Result<(), IndexError> {
        if let Some(mut record) = self.file(path)? {
            record.size = size;
            record.mtime_ns = mtime_ns;
            self.store
                .files
                .put(&mut self.wtxn, path, &record)
                .map_err(|e| self.store.err(e))?;
        }
        Ok(())
    }

    /// Commit, persisting the chunk id counter.
    pub fn commit(mut self, next_chunk_id: u64) -> Result<(), IndexError> {
        self.store
            .meta
            .put(
                &mut self.wtxn,
                meta_key::NEXT_CHUNK_ID,
                &next_chunk_id.to_le_bytes(),
            )
            .map_err(|e| self.store.err(e))?;
        self.wtxn.commit().map_err(|e| self.store.err(e))
    }
}
