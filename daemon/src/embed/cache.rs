//! The daemon's shared embedding cache: one LMDB environment beside the projects, keyed by
//! model and chunk text hash (vectors in f16, as in the projects' caches), so a second
//! checkout, worktree or branch of a repository takes its vectors from the first instead of
//! embedding them again.
//!
//! Best effort by design: the projects' own stores hold every vector they use, so losing
//! this cache (a crash mid-write, a full map) costs only time. Its size is bounded: when it
//! holds half its map (`AMANMCP_EMBED_CACHE_MB`, 2 GiB by default), it is emptied and starts
//! again (logged), and what the current checkouts embed next fills it anew.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use heed::types::Bytes;
use heed::{CommitOrAbort, Database, Env, EnvOpenOptions};

use crate::error::IndexError;
use crate::index::store::{bytes_vector, vector_bytes};

/// Largest size the cache may grow to, in MiB (`AMANMCP_EMBED_CACHE_MB`, default 2048).
const DEFAULT_MAX_MB: usize = 2048;

/// The shared cache.
pub struct SharedCache {
    env: Env,
    vectors: Database<'static, Bytes, Bytes>,
    path: PathBuf,
    max_bytes: usize,
}

/// The key of `hash`'s vector under model `model` (the model id's xxh3).
fn key(model: u64, hash: u64) -> [u8; 16] {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&model.to_be_bytes());
    key[8..].copy_from_slice(&hash.to_be_bytes());
    key
}

/// The key prefix of a model id.
pub fn model_key(model_id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(model_id.as_bytes())
}

impl SharedCache {
    /// Open (creating if needed) the cache in `dir`, at most `max_mb` MiB (default from the
    /// environment).
    pub fn open(dir: &Path, max_mb: Option<usize>) -> Result<SharedCache, IndexError> {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
        let max_mb = max_mb.unwrap_or_else(|| {
            std::env::var("AMANMCP_EMBED_CACHE_MB")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .filter(|mb| *mb > 0)
                .unwrap_or(DEFAULT_MAX_MB)
        });
        // SAFETY: the directory is private to this daemon, which holds the per-user lock, and
        // the daemon opens it once.
        let env = unsafe {
            EnvOpenOptions::new()
                .map_size(max_mb << 20)
                .max_dbs(1)
                .open(dir)
        }
        .map_err(|e| IndexError::lmdb(dir, e))?;
        let wtxn = env.write_txn().map_err(|e| IndexError::lmdb(dir, e))?;
        let vectors = env
            .create_databases_and_commit(wtxn, |opener, wtxn| -> heed::Result<_> {
                let vectors = opener.create_database::<Bytes, Bytes>(wtxn, Some("vectors"))?;
                Ok(CommitOrAbort::<_, ()>::Commit(vectors))
            })
            .map_err(|e| IndexError::lmdb(dir, e))?
            .unwrap_commit();
        Ok(SharedCache {
            env,
            vectors,
            path: dir.to_path_buf(),
            max_bytes: max_mb << 20,
        })
    }

    /// Give back the resident pages of this cache's map (`memory::release_mapped_pages`).
    pub fn release_mapped_pages(&self) {
        crate::memory::release_mapped_pages(&self.env);
    }

    /// The vectors the cache holds for `hashes` under `model`.
    pub fn get(&self, model: u64, hashes: &[u64]) -> HashMap<u64, Vec<f32>> {
        let mut out = HashMap::new();
        let Ok(rtxn) = self.env.read_txn() else {
            return out;
        };
        for hash in hashes {
            if let Ok(Some(bytes)) = self.vectors.get(&rtxn, &key(model, *hash)) {
                out.insert(*hash, bytes_vector(bytes));
            }
        }
        out
    }

    /// Keep `items` (text hash, vector) under `model`. A cache past half its map is emptied
    /// first (LMDB needs room to free pages, so it is never let fill up).
    pub fn put(&self, model: u64, items: &[(u64, &[f32])]) {
        if items.is_empty() {
            return;
        }
        if self.used_bytes() > self.max_bytes / 2 {
            tracing::info!(path = %self.path.display(), "shared embedding cache at its bound: emptied");
            if let Err(e) = self.clear() {
                tracing::warn!(error = %e, "shared embedding cache: cannot empty");
            }
        }
        match self.try_put(model, items) {
            Ok(()) => {}
            Err(heed::Error::Mdb(heed::MdbError::MapFull)) => {
                tracing::info!(path = %self.path.display(), "shared embedding cache full: emptied");
                if let Err(e) = self.clear().and_then(|()| self.try_put(model, items)) {
                    tracing::warn!(error = %e, "shared embedding cache: cannot write");
                }
            }
            Err(e) => tracing::warn!(error = %e, "shared embedding cache: cannot write"),
        }
    }

    /// Bytes of the map the vectors use now.
    fn used_bytes(&self) -> usize {
        let Ok(rtxn) = self.env.read_txn() else {
            return 0;
        };
        self.vectors.stat(&rtxn).map_or(0, |stat| {
            (stat.branch_pages + stat.leaf_pages + stat.overflow_pages) * stat.page_size as usize
        })
    }

    fn try_put(&self, model: u64, items: &[(u64, &[f32])]) -> Result<(), heed::Error> {
        let mut wtxn = self.env.write_txn()?;
        for (hash, vector) in items {
            self.vectors
                .put(&mut wtxn, &key(model, *hash), &vector_bytes(vector))?;
        }
        wtxn.commit()
    }

    fn clear(&self) -> Result<(), heed::Error> {
        let mut wtxn = self.env.write_txn()?;
        self.vectors.clear(&mut wtxn)?;
        wtxn.commit()
    }

    /// Vectors held, all models together.
    pub fn len(&self) -> u64 {
        self.env
            .read_txn()
            .and_then(|rtxn| self.vectors.len(&rtxn))
            .unwrap_or(0)
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_kept_per_model_and_a_full_cache_starts_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SharedCache::open(dir.path(), Some(1)).unwrap();
        let a = model_key("model-a");
        let b = model_key("model-b");
        cache.put(a, &[(7, &[1.0, 2.0][..])]);
        // f16 keeps these exactly.
        assert_eq!(cache.get(a, &[7, 8]).get(&7), Some(&vec![1.0, 2.0]));
        assert!(cache.get(b, &[7]).is_empty(), "another model's vector");
        // 1 MiB holds a few hundred vectors of 512 bytes; writing far more than fits empties the
        // cache instead of failing, and the last batch is kept.
        let big = vec![0.5f32; 256];
        for round in 0..20u64 {
            let items: Vec<(u64, &[f32])> = (0..100)
                .map(|i| (round * 1000 + i, big.as_slice()))
                .collect();
            cache.put(a, &items);
        }
        assert!(cache.len() < 2000, "{}", cache.len());
        assert_eq!(cache.get(a, &[19_000]).len(), 1);
        drop(cache);
        // Reopened, it still answers.
        let cache = SharedCache::open(dir.path(), Some(1)).unwrap();
        assert_eq!(cache.get(a, &[19_099]).len(), 1);
    }
}
