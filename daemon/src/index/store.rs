//! The project's LMDB environment (heed): file and chunk metadata, and the vectors (arroy).
//!
//! Every database is named once in [`db_name`]. Only the project's writer thread opens a
//! write transaction (see `writer.rs`); readers use short read transactions.
//!
//! Vectors: every chunk either has a vector in arroy (item id = chunk id) or is listed in
//! `embed_pending`; both change in the same write transaction as the chunk records, so a
//! deleted chunk never leaves a vector behind. `embed_cache` maps a chunk text hash to its
//! vector, so re-indexing, renames and branch switches re-embed only new text. The model id
//! and dimensions are recorded in `meta`; vectors of two models are never mixed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arroy::distances::Cosine;
use arroy::internals::{KeyCodec, NodeCodec};
use heed::types::{Bytes, Str, U64, Unit};
use heed::{CommitOrAbort, Database, Env, EnvOpenOptions, RwTxn};
use roaring::RoaringBitmap;

use crate::error::IndexError;
use crate::index::codec::{ChunkCodec, FileCodec, SymbolsCodec};

/// Bump when the on-disk layout of LMDB or tantivy changes: older indexes are rebuilt.
pub const FORMAT_VERSION: u64 = 3;

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
    /// arroy's database: chunk vectors (item id = chunk id), cosine distance.
    pub const VECTORS: &str = "vectors";
    /// Chunk text hash -> vector (little-endian f32s) of the current model.
    pub const EMBED_CACHE: &str = "embed_cache";
    /// Chunk id -> chunk text hash: chunks still waiting for a vector.
    pub const EMBED_PENDING: &str = "embed_pending";
    /// Chunk id -> (): vectors of removed chunks, dropped by the next vector commit.
    pub const VECTOR_DELETES: &str = "vector_deletes";
}

mod meta_key {
    pub const FORMAT_VERSION: &str = "format_version";
    pub const ROOT: &str = "root";
    pub const NEXT_CHUNK_ID: &str = "next_chunk_id";
    pub const EMBED_MODEL: &str = "embed_model";
    pub const EMBED_DIMS: &str = "embed_dims";
}

/// The arroy index (within the vectors database) holding the chunk vectors.
const ARROY_INDEX: u16 = 0;

/// Vector ids, pending chunk ids, and ids whose vectors are to be dropped.
pub type VectorState = (
    RoaringBitmap,
    std::collections::HashSet<u64>,
    std::collections::HashSet<u64>,
);

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

fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn bytes_vector(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
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
    vectors: arroy::Database<'static, Cosine>,
    embed_cache: Database<'static, BeU64, Bytes>,
    embed_pending: Database<'static, BeU64, BeU64>,
    vector_deletes: Database<'static, BeU64, Unit>,
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
            symbol_index,
            vectors,
            cache,
            pending,
            deletes,
        ) = env
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
                let vectors = opener
                    .create_database::<KeyCodec, NodeCodec<Cosine>>(wtxn, Some(db_name::VECTORS))?;
                let cache =
                    opener.create_database::<BeU64, Bytes>(wtxn, Some(db_name::EMBED_CACHE))?;
                let pending =
                    opener.create_database::<BeU64, BeU64>(wtxn, Some(db_name::EMBED_PENDING))?;
                let deletes =
                    opener.create_database::<BeU64, Unit>(wtxn, Some(db_name::VECTOR_DELETES))?;
                Ok(CommitOrAbort::<_, ()>::Commit((
                    meta,
                    files,
                    chunks,
                    dirty,
                    file_symbols,
                    symbol_index,
                    vectors,
                    cache,
                    pending,
                    deletes,
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
            vectors,
            embed_cache: cache,
            embed_pending: pending,
            vector_deletes: deletes,
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

    /// Every indexed path, in order.
    pub fn all_paths(&self) -> Result<Vec<String>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for item in self
            .files
            .remap_data_type::<heed::types::DecodeIgnore>()
            .iter(&rtxn)
            .map_err(|e| self.err(e))?
        {
            out.push(item.map_err(|e| self.err(e))?.0.to_string());
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

    /// Whether `path` is indexed.
    pub fn has_file(&self, path: &str) -> Result<bool, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        Ok(self
            .files
            .remap_data_type::<heed::types::DecodeIgnore>()
            .get(&rtxn, path)
            .map_err(|e| self.err(e))?
            .is_some())
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

    /// The model whose vectors this index holds, if recorded.
    pub fn vector_model(&self) -> Result<Option<String>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        Ok(self
            .meta
            .get(&rtxn, meta_key::EMBED_MODEL)
            .map_err(|e| self.err(e))?
            .map(|b| String::from_utf8_lossy(b).into_owned()))
    }

    /// arroy's reader, or `None` while nothing has been embedded yet.
    fn vector_reader<'t>(
        &self,
        rtxn: &'t heed::RoTxn,
    ) -> Result<Option<arroy::Reader<'t, Cosine>>, IndexError> {
        match arroy::Reader::<Cosine>::open(rtxn, ARROY_INDEX, self.vectors) {
            Ok(reader) => Ok(Some(reader)),
            Err(arroy::Error::MissingMetadata(_)) => Ok(None),
            Err(e) => Err(IndexError::vectors(&self.path, e)),
        }
    }

    /// Up to `limit` chunks waiting for a vector, `(chunk id, text hash)`, lowest ids first,
    /// leaving out `skip` (those already being embedded).
    pub fn pending_chunks(
        &self,
        limit: usize,
        skip: &std::collections::HashSet<u64>,
    ) -> Result<Vec<(u64, u64)>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(limit.min(4096));
        for item in self.embed_pending.iter(&rtxn).map_err(|e| self.err(e))? {
            let (id, hash) = item.map_err(|e| self.err(e))?;
            if !skip.contains(&id) {
                out.push((id, hash));
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Chunk ids with a vector, chunk ids waiting for one, and removed chunk ids whose vector
    /// is still to be dropped, read in one transaction.
    pub fn vector_state(&self) -> Result<VectorState, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let vectors = self
            .vector_reader(&rtxn)?
            .map_or_else(RoaringBitmap::new, |reader| reader.item_ids().clone());
        let mut pending = std::collections::HashSet::new();
        for item in self.embed_pending.iter(&rtxn).map_err(|e| self.err(e))? {
            pending.insert(item.map_err(|e| self.err(e))?.0);
        }
        let mut deletes = std::collections::HashSet::new();
        for item in self.vector_deletes.iter(&rtxn).map_err(|e| self.err(e))? {
            deletes.insert(item.map_err(|e| self.err(e))?.0);
        }
        Ok((vectors, pending, deletes))
    }

    /// Every stored vector, by chunk id (benchmarks: exact search to measure ANN recall).
    pub fn all_vectors(&self) -> Result<Vec<(u64, Vec<f32>)>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let Some(reader) = self.vector_reader(&rtxn)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for item in reader
            .iter(&rtxn)
            .map_err(|e| IndexError::vectors(&self.path, e))?
        {
            let (id, vector) = item.map_err(|e| IndexError::vectors(&self.path, e))?;
            out.push((u64::from(id), vector));
        }
        Ok(out)
    }

    /// Whether `chunk_id` still waits for a vector.
    pub fn is_pending(&self, chunk_id: u64) -> Result<bool, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        Ok(self
            .embed_pending
            .get(&rtxn, &chunk_id)
            .map_err(|e| self.err(e))?
            .is_some())
    }

    /// Cached vectors of the given chunk text hashes (those the cache has).
    pub fn cached_vectors(&self, hashes: &[u64]) -> Result<HashMap<u64, Vec<f32>>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let mut out = HashMap::new();
        for hash in hashes {
            if let Some(bytes) = self.embed_cache.get(&rtxn, hash).map_err(|e| self.err(e))? {
                out.insert(*hash, bytes_vector(bytes));
            }
        }
        Ok(out)
    }

    /// Vectors of removed chunks not yet dropped.
    pub fn vector_deletes_count(&self) -> Result<u64, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        self.vector_deletes.len(&rtxn).map_err(|e| self.err(e))
    }

    /// Chunks waiting for a vector.
    pub fn pending_count(&self) -> Result<u64, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        self.embed_pending.len(&rtxn).map_err(|e| self.err(e))
    }

    /// The `limit` chunks nearest to `query` (cosine distance, smaller is nearer), among
    /// `candidates` if given. `search_k` trades speed for recall (arroy's default when 0).
    pub fn nearest(
        &self,
        query: &[f32],
        limit: usize,
        candidates: Option<&RoaringBitmap>,
        search_k: usize,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let rtxn = self.env.read_txn().map_err(|e| self.err(e))?;
        let Some(reader) = self.vector_reader(&rtxn)? else {
            return Ok(Vec::new());
        };
        if reader.dimensions() != query.len() {
            return Ok(Vec::new());
        }
        let mut builder = reader.nns(limit.max(1));
        if let Some(k) = std::num::NonZeroUsize::new(search_k) {
            builder.search_k(k);
        }
        if let Some(candidates) = candidates {
            builder.candidates(candidates);
        }
        let found = builder
            .by_vector(&rtxn, query)
            .map_err(|e| IndexError::vectors(&self.path, e))?;
        Ok(found
            .into_iter()
            .map(|(id, distance)| (u64::from(id), distance))
            .collect())
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
                // A chunk still pending has no vector; one with a vector has it dropped by
                // the next vector commit (searches skip ids without a chunk meanwhile).
                let was_pending = self
                    .store
                    .embed_pending
                    .delete(&mut self.wtxn, &id)
                    .map_err(|e| self.store.err(e))?;
                if !was_pending {
                    self.store
                        .vector_deletes
                        .put(&mut self.wtxn, &id, &())
                        .map_err(|e| self.store.err(e))?;
                }
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
        // No vector is written here: arroy's trees are rebuilt by vector commits only, so a
        // saved file stays cheap to commit. The worker serves cached text without embedding.
        for (id, chunk) in chunks {
            self.store
                .chunks
                .put(&mut self.wtxn, id, chunk)
                .map_err(|e| self.store.err(e))?;
            self.store
                .embed_pending
                .put(&mut self.wtxn, id, &chunk.hash)
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

    /// The recorded vector dimensions, if any.
    fn vector_dims(&self) -> Result<Option<usize>, IndexError> {
        let value = self
            .store
            .meta
            .get(&self.wtxn, meta_key::EMBED_DIMS)
            .map_err(|e| self.store.err(e))?;
        Ok(value
            .and_then(|b| b.try_into().ok())
            .map(|b| u64::from_le_bytes(b) as usize))
    }

    fn arroy(&self) -> Result<Option<arroy::Writer<Cosine>>, IndexError> {
        Ok(self
            .vector_dims()?
            .map(|dims| arroy::Writer::new(self.store.vectors, ARROY_INDEX, dims)))
    }

    fn vectors_err(&self, e: arroy::Error) -> IndexError {
        IndexError::vectors(&self.store.path, e)
    }

    /// Drop every vector and cached embedding, record `model` as the index's model, and
    /// queue every chunk for embedding. Used when the model changes.
    pub fn reset_vectors(&mut self, model: &str) -> Result<u64, IndexError> {
        let store = self.store;
        store
            .vectors
            .clear(&mut self.wtxn)
            .map_err(|e| store.err(e))?;
        store
            .embed_cache
            .clear(&mut self.wtxn)
            .map_err(|e| store.err(e))?;
        store
            .embed_pending
            .clear(&mut self.wtxn)
            .map_err(|e| store.err(e))?;
        store
            .vector_deletes
            .clear(&mut self.wtxn)
            .map_err(|e| store.err(e))?;
        store
            .meta
            .delete(&mut self.wtxn, meta_key::EMBED_DIMS)
            .map_err(|e| store.err(e))?;
        store
            .meta
            .put(&mut self.wtxn, meta_key::EMBED_MODEL, model.as_bytes())
            .map_err(|e| store.err(e))?;
        let mut chunks = Vec::new();
        for item in store.chunks.iter(&self.wtxn).map_err(|e| store.err(e))? {
            let (id, record) = item.map_err(|e| store.err(e))?;
            chunks.push((id, record.hash));
        }
        for (id, hash) in &chunks {
            store
                .embed_pending
                .put(&mut self.wtxn, id, hash)
                .map_err(|e| store.err(e))?;
        }
        Ok(chunks.len() as u64)
    }

    /// Store vectors computed by the embedding worker for chunks that still exist (a chunk
    /// deleted meanwhile is skipped). Returns how many were stored.
    pub fn put_vectors(&mut self, items: &[EmbeddedChunk]) -> Result<usize, IndexError> {
        let store = self.store;
        // First the vectors of removed chunks.
        let mut deletes = Vec::new();
        for item in store
            .vector_deletes
            .iter(&self.wtxn)
            .map_err(|e| store.err(e))?
        {
            deletes.push(item.map_err(|e| store.err(e))?.0);
        }
        if !deletes.is_empty() {
            if let Some(arroy) = self.arroy()? {
                for id in &deletes {
                    if let Ok(item) = u32::try_from(*id) {
                        arroy
                            .del_item(&mut self.wtxn, item)
                            .map_err(|e| self.vectors_err(e))?;
                    }
                }
            }
            store
                .vector_deletes
                .clear(&mut self.wtxn)
                .map_err(|e| store.err(e))?;
        }
        let Some(first) = items.first() else {
            return Ok(0);
        };
        let dims = match self.vector_dims()? {
            Some(dims) => dims,
            None => {
                store
                    .meta
                    .put(
                        &mut self.wtxn,
                        meta_key::EMBED_DIMS,
                        &(first.vector.len() as u64).to_le_bytes(),
                    )
                    .map_err(|e| store.err(e))?;
                first.vector.len()
            }
        };
        let arroy = arroy::Writer::<Cosine>::new(store.vectors, ARROY_INDEX, dims);
        let mut stored = 0;
        for item in items {
            let Ok(item_id) = u32::try_from(item.chunk_id) else {
                continue;
            };
            if item.vector.len() != dims {
                tracing::warn!(
                    got = item.vector.len(),
                    dims,
                    "embedding with unexpected dimensions dropped"
                );
                continue;
            }
            let pending = store
                .embed_pending
                .get(&self.wtxn, &item.chunk_id)
                .map_err(|e| store.err(e))?;
            if pending != Some(item.hash) {
                continue;
            }
            arroy
                .add_item(&mut self.wtxn, item_id, &item.vector)
                .map_err(|e| self.vectors_err(e))?;
            store
                .embed_cache
                .put(&mut self.wtxn, &item.hash, &vector_bytes(&item.vector))
                .map_err(|e| store.err(e))?;
            store
                .embed_pending
                .delete(&mut self.wtxn, &item.chunk_id)
                .map_err(|e| store.err(e))?;
            stored += 1;
        }
        Ok(stored)
    }

    /// Rebuild arroy's trees for the vectors changed in this transaction (required before
    /// readers can search them).
    pub fn build_vectors(&mut self, seed: u64) -> Result<(), IndexError> {
        use rand::SeedableRng;
        let Some(arroy) = self.arroy()? else {
            return Ok(());
        };
        let need = arroy
            .need_build(&self.wtxn)
            .map_err(|e| self.vectors_err(e))?;
        if need {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            arroy
                .builder(&mut rng)
                .build(&mut self.wtxn)
                .map_err(|e| self.vectors_err(e))?;
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
