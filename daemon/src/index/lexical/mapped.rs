//! The tantivy directory the lexical index reads through: tantivy's own `MmapDirectory`, which
//! also notes every file handle it gives out, so that [`Mapped::release_pages`] can give back
//! the pages searches left resident in the segment files' maps. tantivy maps each segment file
//! whole and read-only; what a search reads stays counted in the daemon's resident memory for
//! as long as the segment lives (about 290 MB of an idle 55,000-file project). The handles
//! name each map's address: a handle still alive holds its map, so no range given back can
//! have been unmapped and reused meanwhile, as one read from `/proc/self/maps` alone could be
//! by a merge's end.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

/// Handles noted before the list is pruned of those no longer alive.
const PRUNE_AT: usize = 256;

/// A file handle given out, with its file's full path.
type Noted = (PathBuf, Weak<dyn FileHandle>);

/// `MmapDirectory`, noting the file handles it gives out.
#[derive(Clone, Debug)]
pub struct Mapped {
    inner: MmapDirectory,
    /// The directory's canonical path, as `/proc/self/maps` names its files.
    root: Arc<PathBuf>,
    /// The handles given out, with each file's full path.
    handles: Arc<Mutex<Vec<Noted>>>,
}

impl Mapped {
    /// The directory `dir`, read through maps.
    pub fn open(dir: &Path) -> Result<Mapped, OpenDirectoryError> {
        let root = std::fs::canonicalize(dir)
            .map_err(|e| OpenDirectoryError::wrap_io_error(e, dir.to_path_buf()))?;
        Ok(Mapped {
            inner: MmapDirectory::open(&root)?,
            root: Arc::new(root),
            handles: Arc::default(),
        })
    }

    /// Give back the resident pages of every segment file's map that some reader still holds
    /// (`memory::release_file_ranges`). Pages read again fault back in from the page cache.
    pub fn release_pages(&self) {
        let live: Vec<(PathBuf, Arc<dyn FileHandle>)> = {
            let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
            handles.retain(|(_, handle)| handle.strong_count() > 0);
            (handles.iter())
                .filter_map(|(path, handle)| Some((path.clone(), handle.upgrade()?)))
                .collect()
        };
        let mut ranges = Vec::with_capacity(live.len());
        for (path, handle) in &live {
            // Slicing a mapped file reads none of its pages.
            let Ok(bytes) = handle.read_bytes(0..handle.len()) else {
                continue;
            };
            if !bytes.is_empty() {
                ranges.push((path.as_path(), bytes.as_ptr() as usize, bytes.len()));
            }
        }
        ranges.sort_unstable_by_key(|&(_, start, _)| start);
        ranges.dedup_by_key(|&mut (_, start, _)| start);
        // `live` holds every map named in `ranges` until this returns.
        crate::memory::release_file_ranges(&ranges);
    }

    fn note(&self, path: &Path, handle: &Arc<dyn FileHandle>) {
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        if handles.len() >= PRUNE_AT && handles.len().is_power_of_two() {
            handles.retain(|(_, handle)| handle.strong_count() > 0);
        }
        handles.push((path.to_path_buf(), Arc::downgrade(handle)));
    }
}

impl Directory for Mapped {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        let handle = self.inner.get_file_handle(path)?;
        self.note(&self.root.join(path), &handle);
        Ok(handle)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}
