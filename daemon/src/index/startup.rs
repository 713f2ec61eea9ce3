//! What runs on a project's index before its writer starts: undoing a commit a crash
//! interrupted (the writer's write-ahead intent, see [`super::writer`]) and adopting the
//! embedding model the daemon runs.

use crate::error::IndexError;
use crate::index::ProjectIndex;

/// Make the index's vectors those of `model`: an index holding another model's vectors (or
/// none recorded) has them dropped and every chunk queued for embedding. Runs before the
/// writer starts. Returns the chunks queued.
pub fn adopt_model(index: &ProjectIndex, model: &str) -> Result<Option<u64>, IndexError> {
    let current = index.store.vector_model()?;
    if current.as_deref() == Some(model) {
        return Ok(None);
    }
    let next_chunk_id = index.store.next_chunk_id()?;
    let mut txn = index.store.write_txn()?;
    let queued = txn.reset_vectors(model)?;
    txn.commit(next_chunk_id)?;
    Ok(Some(queued))
}

/// Undo a commit interrupted by a crash: drop every dirty path from tantivy and LMDB, so the
/// next reconcile re-indexes those files from disk. Runs before the writer starts.
pub fn recover(index: &ProjectIndex) -> Result<usize, IndexError> {
    let dirty = index.store.dirty_paths()?;
    if dirty.is_empty() {
        return Ok(0);
    }
    let mut writer = index.lexical.writer(None)?;
    for path in &dirty {
        index.lexical.delete_path(&writer, path);
    }
    index.lexical.commit(&mut writer)?;
    drop(writer);
    let next_chunk_id = index.store.next_chunk_id()?;
    let mut txn = index.store.write_txn()?;
    for path in &dirty {
        txn.remove_file(path)?;
    }
    txn.clear_dirty()?;
    txn.commit(next_chunk_id)?;
    Ok(dirty.len())
}
