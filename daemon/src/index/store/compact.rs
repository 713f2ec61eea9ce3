//! Giving back the disk LMDB keeps. LMDB never shrinks its file: the pages freed when each
//! vector commit rewrites the ANN graph's nodes stay in it as free pages (a third of a freshly
//! embedded sympy index). When a project's environment is opened and its file holds much
//! more than its live pages, it is rewritten compacted before anything uses it (the
//! registry also reopens a project for this once its vectors are complete and nobody is
//! using it): a
//! consistent copy beside it, synced, then renamed over the original, so a crash at any
//! point leaves either the old file or the new one, never a mix.

use heed::CompactionOption;

use super::{Fail, Store};
use crate::error::IndexError;

/// Files smaller than this many MiB are left alone, unless `AMANMCP_COMPACT_MIN_MB` says
/// otherwise.
const MIN_MB: u64 = 16;
/// Compact when the file exceeds the live pages by this factor, plus a quarter of the
/// smallest file compacted.
const SLACK: f64 = 1.1;

/// The smallest file compacted, in bytes.
fn min_bytes() -> u64 {
    static MIN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MIN.get_or_init(|| {
        std::env::var("AMANMCP_COMPACT_MIN_MB")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(MIN_MB)
            << 20
    })
}
/// The copy being made; a leftover from a crash is replaced.
const COPY: &str = "data.mdb.compacting";

impl Store {
    /// Bytes in the pages every database uses (branch, leaf and overflow pages).
    pub(super) fn live_bytes(&self) -> Result<u64, IndexError> {
        self.read(|rtxn| {
            let stats = [
                self.meta.stat(rtxn)?,
                self.files.stat(rtxn)?,
                self.chunks.stat(rtxn)?,
                self.dirty.stat(rtxn)?,
                self.file_symbols.stat(rtxn)?,
                self.file_refs.stat(rtxn)?,
                self.symbol_index.stat(rtxn)?,
                self.vectors.stat(rtxn)?,
                self.embed_cache.stat(rtxn)?,
                self.embed_pending.stat(rtxn)?,
                self.vector_deletes.stat(rtxn)?,
                self.long_keys.0.stat(rtxn)?,
            ];
            Ok::<_, Fail>(
                stats
                    .iter()
                    .map(|s| {
                        (s.branch_pages + s.leaf_pages + s.overflow_pages) as u64
                            * u64::from(s.page_size)
                    })
                    .sum(),
            )
        })
    }
}

impl Store {
    /// Whether the file is mostly free pages: reopening the store would compact it.
    pub fn worth_compacting(&self) -> bool {
        let size = std::fs::metadata(self.path.join("data.mdb")).map_or(0, |m| m.len());
        // A file just compacted is compacted again only once it has grown: were the live
        // pages ever undercounted, the registry would otherwise copy it at every idle tick.
        let grown = self
            .compacted_to
            .get()
            .is_none_or(|&compacted| size as f64 >= compacted as f64 * SLACK);
        size >= min_bytes()
            && grown
            && self.live_bytes().is_ok_and(|live| {
                size > live && size as f64 >= live as f64 * SLACK + (min_bytes() / 4) as f64
            })
    }
}

/// `store`, or, when its file is mostly free pages, the same environment compacted and
/// reopened.
pub(super) fn compacted(store: Store) -> Result<Store, IndexError> {
    let dir = store.path.clone();
    // A copy left by a crash mid-compaction is never used: the original is whole.
    let copy = dir.join(COPY);
    let _ = std::fs::remove_file(&copy);
    if !store.worth_compacting() {
        return Ok(store);
    }
    let data = dir.join("data.mdb");
    let size = std::fs::metadata(&data).map_or(0, |m| m.len());
    tracing::info!(dir = %dir.display(), size, "compacting the index's LMDB file");
    let file = store
        .env
        .copy_to_path(&copy, CompactionOption::Enabled)
        .map_err(|e| IndexError::lmdb(&copy, e))?;
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(|e| IndexError::io(&copy, e))?;
    file.sync_all().map_err(|e| IndexError::io(&copy, e))?;
    drop(file);
    crate::crash::point("compact_copied");
    let env = store.env.clone();
    drop(store);
    env.prepare_for_closing().wait();
    std::fs::rename(&copy, &data).map_err(|e| IndexError::io(&data, e))?;
    if let Ok(dir_file) = std::fs::File::open(&dir) {
        let _ = dir_file.sync_all();
    }
    crate::crash::point("compact_renamed");
    let after = std::fs::metadata(&data).map_or(0, |m| m.len());
    tracing::info!(dir = %dir.display(), before = size, after, "compacted the index's LMDB file");
    let store = Store::open_env(&dir)?;
    let _ = store.compacted_to.set(after);
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn file_size(dir: &Path) -> u64 {
        std::fs::metadata(dir.join("data.mdb")).unwrap().len()
    }

    #[test]
    fn a_file_of_mostly_free_pages_is_compacted_on_open_and_keeps_its_data() {
        let key = |i: u64| format!("blob{i:05}");
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("lmdb");
        let blob = vec![7u8; 3000];
        {
            let store = Store::open(&dir).unwrap();
            let mut wtxn = store.env.write_txn().unwrap();
            // (In `meta`: blobs in `embed_cache` that no chunk has would be dropped at open.)
            for i in 0..12_000u64 {
                store.meta.put(&mut wtxn, &key(i), &blob).unwrap();
            }
            wtxn.commit().unwrap();
            // Most of it goes: the file keeps its size, as LMDB files do.
            let mut wtxn = store.env.write_txn().unwrap();
            for i in 1_000..12_000u64 {
                store.meta.delete(&mut wtxn, &key(i)).unwrap();
            }
            wtxn.commit().unwrap();
        }
        // A leftover copy from a crash mid-compaction is simply replaced.
        std::fs::write(dir.join(COPY), b"half a copy").unwrap();
        let before = file_size(&dir);
        assert!(before > 30 << 20, "{before}");
        let store = Store::open(&dir).unwrap();
        let after = file_size(&dir);
        assert!(after < before / 4, "{before} -> {after}");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir.join("data.mdb"))
                .unwrap()
                .permissions(),
        );
        assert_eq!(
            mode & 0o077,
            0,
            "the compacted file is the owner's only: {mode:o}"
        );
        assert!(!dir.join(COPY).exists());
        let rtxn = store.env.read_txn().unwrap();
        let kept = store.meta.prefix_iter(&rtxn, "blob").unwrap().count();
        assert_eq!(kept, 1_000);
        assert_eq!(store.meta.get(&rtxn, &key(999)).unwrap(), Some(&blob[..]));
        drop(rtxn);
        drop(store);
        // Nothing more to give back: the next open leaves the file as it is.
        let store = Store::open(&dir).unwrap();
        assert_eq!(file_size(&dir), after);
        drop(store);
    }

    #[test]
    fn every_database_counts_as_live_so_a_full_file_is_not_compacted() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("lmdb");
        let blob = vec![7u8; 3000];
        {
            let store = Store::open(&dir).unwrap();
            // The code graph's references: 36 MB live, no free page. Uncounted, the
            // registry reopened such a project to compact it at every idle tick (55,000
            // files: a 462 MB copy every 35 s, each giving nothing back).
            let refs = store.file_refs.remap_data_type::<heed::types::Bytes>();
            let mut wtxn = store.env.write_txn().unwrap();
            for i in 0..12_000u64 {
                refs.put(&mut wtxn, &format!("src/file{i:05}.py"), &blob)
                    .unwrap();
            }
            wtxn.commit().unwrap();
        }
        let before = file_size(&dir);
        assert!(before > 30 << 20, "{before}");
        let store = Store::open(&dir).unwrap();
        assert!(!store.worth_compacting());
        assert_eq!(file_size(&dir), before, "not copied");
    }
}
