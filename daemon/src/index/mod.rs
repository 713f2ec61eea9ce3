//! One project's storage and what fills it: LMDB metadata and vectors ([`store`], record
//! encodings in `store::codec`), the tantivy BM25 index ([`lexical`], [`tokenizer`]), the single
//! writer thread ([`writer`]), the indexing pass ([`pipeline`]), live counters
//! ([`progress`]), the files each commit changed ([`changes`]), the consistency check
//! ([`verify`]) and the check that an index is safe to open at all ([`health`]).

pub mod changes;
pub mod health;
pub mod lexical;
pub mod pipeline;
pub mod progress;
pub mod startup;
pub mod store;
pub mod tokenizer;
pub mod verify;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::error::IndexError;
use lexical::Lexical;
use progress::{EmbedProgress, Progress, Wake};
use store::{FORMAT_VERSION, Store};

/// The storage of a project: shared by its writer thread and its readers.
pub struct ProjectIndex {
    /// LMDB metadata.
    pub store: Store,
    /// tantivy BM25 index.
    pub lexical: Lexical,
    /// Live counters.
    pub progress: Progress,
    /// Rung by the writer after each commit, for the embedding worker.
    pub embed_wake: Wake,
    /// The embedding worker's rate and errors.
    pub embed_progress: EmbedProgress,
    /// The files each commit changed, for what is kept above the index.
    pub changes: changes::Changes,
}

impl ProjectIndex {
    /// Re-read file and chunk counts and the size on disk after a commit.
    pub fn refresh_counts(&self) {
        if let Ok((files, chunks)) = self.store.counts() {
            self.progress.files.store(files, Ordering::Relaxed);
            self.progress.chunks.store(chunks, Ordering::Relaxed);
        }
        if let Ok(pending) = self.store.pending_count() {
            self.progress.pending.store(pending, Ordering::Relaxed);
        }
        let bytes = self.store.disk_size() + self.lexical.disk_size();
        self.progress.index_bytes.store(bytes, Ordering::Relaxed);
    }
}

/// Open the index in `dir` (creating it; an unreadable or outdated one is an error the
/// caller answers by rebuilding).
pub fn open_index(dir: &Path, root: &Path) -> Result<ProjectIndex, IndexError> {
    let store = Store::open(&dir.join("lmdb"))?;
    match store.format_version()? {
        Some(FORMAT_VERSION) => {}
        Some(other) => {
            return Err(IndexError::io(
                dir,
                std::io::Error::other(format!(
                    "index format {other} is not the current format {FORMAT_VERSION}"
                )),
            ));
        }
        None => {
            // A fresh store: any tantivy data beside it is orphaned.
            let _ = std::fs::remove_dir_all(dir.join("tantivy"));
            store.initialise(root)?;
        }
    }
    // ANN item ids are 32-bit: an index whose chunk ids ran past that is rebuilt.
    if store.next_chunk_id()? > u64::from(u32::MAX) {
        return Err(IndexError::io(
            dir,
            std::io::Error::other("chunk ids exhausted"),
        ));
    }
    store.prepare_exact_copy();
    let lexical = Lexical::open(&dir.join("tantivy"))?;
    let progress = Progress::default();
    // The chunker's version is recorded after a pass has indexed every file with it.
    if store.chunker_version()? == Some(crate::chunk::CHUNKER_VERSION) {
        progress.loaded_complete();
    }
    Ok(ProjectIndex {
        store,
        lexical,
        progress,
        embed_wake: Wake::default(),
        embed_progress: EmbedProgress::default(),
        changes: changes::Changes::default(),
    })
}

/// The file in a project's directory naming its root (so the daemon can list the projects
/// it has indexed without opening them).
pub const ROOT_FILE: &str = "root";

/// Record `root` in its project directory's [`ROOT_FILE`] (written whole, then renamed).
pub fn record_root(dir: &Path, root: &Path) -> std::io::Result<()> {
    let path = dir.join(ROOT_FILE);
    let text = root.to_string_lossy();
    if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
        return Ok(());
    }
    let partial = dir.join(format!("{ROOT_FILE}.partial"));
    std::fs::write(&partial, text.as_bytes())?;
    std::fs::rename(partial, path)
}

/// A project root as a request names it: canonical when it exists, else as given (a
/// deleted checkout is still named by the path it had).
pub fn named_root(name: &str) -> PathBuf {
    let path = Path::new(name);
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// The roots of every project with an index under `data_dir`, sorted.
pub fn indexed_roots(data_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(data_dir.join("projects")) else {
        return Vec::new();
    };
    let mut roots: Vec<PathBuf> = entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join(ROOT_FILE)).ok())
        .map(PathBuf::from)
        .collect();
    roots.sort();
    roots.dedup();
    roots
}

/// When anything under `dir` (an index) was last written: the newest modification time of
/// its files.
pub fn last_written(dir: &Path) -> Option<std::time::SystemTime> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => last_written(&entry.path()),
            Ok(_) => entry.metadata().and_then(|m| m.modified()).ok(),
            Err(_) => None,
        })
        .max()
}

/// `data_dir/projects/<name>-<hash of root>`: never inside the user's tree.
pub fn project_dir(data_dir: &Path, root: &Path) -> PathBuf {
    let hash = xxhash_rust::xxh3::xxh3_64(root.as_os_str().as_encoded_bytes());
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    data_dir
        .join("projects")
        .join(format!("{name}-{hash:016x}"))
}

/// Give back to the system the free memory of the C allocator's heaps: tree-sitter's parsers
/// and LMDB's dirty pages are allocated by glibc's `malloc`, not the daemon's allocator, and
/// its heaps keep what a pass or a run of vector commits freed (a cold sympy pass: 66 MB
/// held, the daemon's own memory 148 -> 74 MB once given back). Called when a full pass
/// ends and when the embedding queue empties.
pub fn release_c_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of glibc's arenas to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}
