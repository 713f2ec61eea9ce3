//! The indexing pipeline of one pass, top to bottom:
//! `scan` (walk, stat) -> `diff` against LMDB -> `read_and_chunk` (parallel) -> writer.
//!
//! Unchanged files (same size and mtime) are not read. Files whose content hash is unchanged
//! are only touched. Files gone from disk, or now skipped, are removed.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use crate::project::ProjectIndex;
use crate::scan::{self, Limits, ReadOutcome};
use crate::writer::{FileUpdate, WriteOp, WriterHandle};
use crate::{lang, syntax};

/// Bring the index of `root` in line with the files on disk.
pub fn reconcile(
    root: &Path,
    index: &ProjectIndex,
    writer: &WriterHandle,
    limits: Limits,
) -> Result<(), String> {
    let started = Instant::now();
    let progress = &index.progress;

    // Stage 1: scan.
    let scanned = scan::scan(root, limits);
    progress.begin_pass(scanned.files.len() as u64);
    for (_, reason) in &scanned.skipped {
        progress.add_skipped(*reason);
    }

    // Stage 2: diff against what is indexed.
    let known = index.store.all_files().map_err(|e| e.to_string())?;
    let on_disk: HashSet<&str> = scanned.files.iter().map(|c| c.rel_path.as_str()).collect();
    let removed = AtomicU64::new(0);
    let changed_files = AtomicU64::new(0);
    for path in known.keys().filter(|p| !on_disk.contains(p.as_str())) {
        if !writer.send(WriteOp::Remove(path.clone())) {
            return Err("index writer has stopped".into());
        }
        removed.fetch_add(1, Ordering::Relaxed);
    }
    let (unchanged, changed): (Vec<_>, Vec<_>) = scanned.files.iter().partition(|c| {
        known
            .get(&c.rel_path)
            .is_some_and(|r| r.size == c.size && r.mtime_ns == c.mtime_ns)
    });
    let source_bytes = AtomicU64::new(unchanged.iter().map(|c| c.size).sum());
    progress.add_done(unchanged.len() as u64);

    // Stage 3: read and chunk changed files in parallel; the writer commits them.
    changed
        .par_iter()
        .for_each_with(writer.clone(), |writer, candidate| {
            let previous = known.get(&candidate.rel_path);
            let op = match scan::read_text(&candidate.abs_path, limits) {
                ReadOutcome::Text(text, hash) => {
                    source_bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
                    if previous.is_some_and(|r| r.hash == hash) {
                        Some(WriteOp::Touch {
                            path: candidate.rel_path.clone(),
                            size: candidate.size,
                            mtime_ns: candidate.mtime_ns,
                        })
                    } else {
                        changed_files.fetch_add(1, Ordering::Relaxed);
                        let language = lang::language_of(Path::new(&candidate.rel_path));
                        let chunked = syntax::chunk_file(language, &text);
                        Some(WriteOp::Upsert(FileUpdate {
                            path: candidate.rel_path.clone(),
                            size: candidate.size,
                            mtime_ns: candidate.mtime_ns,
                            hash,
                            language,
                            chunks: chunked.chunks,
                            symbols: chunked.symbols,
                        }))
                    }
                }
                ReadOutcome::Skipped(reason) => {
                    progress.add_skipped(reason);
                    previous.map(|_| {
                        removed.fetch_add(1, Ordering::Relaxed);
                        WriteOp::Remove(candidate.rel_path.clone())
                    })
                }
            };
            if let Some(op) = op {
                writer.send(op);
            }
            progress.add_done(1);
        });

    // Stage 4: make it all durable and visible.
    writer.flush()?;
    progress.end_pass(
        source_bytes.load(Ordering::Relaxed),
        started.elapsed().as_millis() as u64,
        changed_files.load(Ordering::Relaxed),
        removed.load(Ordering::Relaxed),
    );
    Ok(())
}
