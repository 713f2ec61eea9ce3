//! The indexing pipeline, top to bottom:
//! `scan` (walk, stat) -> `diff` against LMDB -> `read_and_chunk` (parallel) -> writer -> flush.
//!
//! A full pass covers the whole project; an update covers the directories a batch of file
//! events touched. Unchanged files (same size and mtime) are not read. Files whose content
//! hash is unchanged are only touched. Files gone from disk, or now skipped, are removed.
//!
//! A full pass that meets many new files (a first index of a large tree) is *quick*: it
//! chunks them by line windows, without parsing, and records them as provisional
//! ([`FileRecord::PROVISIONAL`]), so the whole tree is searchable in the time of a read and a
//! tantivy pass (tree-sitter's parse is most of a pass's time). The project then runs a
//! second pass at once, which reads and chunks the provisional files by syntax; their
//! vectors wait for it (the embedding worker embeds no provisional chunk).

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use crate::chunk::syntax;
use crate::error::IndexError;
use crate::files::lang;
use crate::files::scan::{self, Candidate, Limits, ReadOutcome, SkipReason};
use crate::index::ProjectIndex;
use crate::index::store::FileRecord;
use crate::index::writer::{FileUpdate, WriteOp, WriterHandle};

/// A directory an update re-checks: its direct children, or everything below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirScope {
    /// Relative path of the directory ("" for the root).
    pub rel: String,
    /// Whether to re-check the whole subtree.
    pub recursive: bool,
}

/// What a diff did.
#[derive(Debug, Default)]
pub struct DiffStats {
    /// Files re-chunked.
    pub changed: u64,
    /// Files removed.
    pub removed: u64,
    /// Bytes of text read or known unchanged.
    pub source_bytes: u64,
}

/// Bring the whole index of `root` in line with the files on disk. With `reread`, every
/// file is read and its content hash compared, whatever its size and mtime say (what
/// `verify` checks: content changed under an unchanged size and mtime, or read through a
/// symlink swapped in by an older build, is put right). Returns whether the pass was quick
/// (new files recorded as provisional): the caller then runs another pass at once.
pub fn reconcile(
    root: &Path,
    index: &ProjectIndex,
    writer: &WriterHandle,
    limits: Limits,
    reread: bool,
    on_dir: &mut dyn FnMut(&Path),
) -> Result<bool, IndexError> {
    let started = Instant::now();
    let progress = &index.progress;
    let scanned = scan::scan_scope(root, root, None, limits, on_dir);
    if let Some(error) = scanned.failure {
        return Err(IndexError::io(root, error));
    }
    progress.begin_pass(scanned.files.len() as u64);
    crate::crash::point_or_hold("pass_scanned");
    for (_, reason) in &scanned.skipped {
        progress.add_skipped(*reason);
    }
    let mut known = index.store.all_files()?;
    // Only a quick pass writes provisional records: with none at the start and no quick
    // pass, there are none at the end either, and the records need no second read.
    let had_provisional = count_provisional(index, &known) > 0;
    keep_unreadable(&mut known, &scanned.unreadable_dirs);
    let new_files = scanned
        .files
        .iter()
        .filter(|c| !known.contains_key(&c.rel_path))
        .count();
    let quick = new_files >= quick_pass_files();
    // Paths left dirty by a commit that failed half-way may be ahead in tantivy: they are
    // read again whatever their size and mtime say (or dropped, if gone from disk).
    let dirty = index.store.dirty_paths()?;
    let mut gone = 0;
    let on_disk: std::collections::HashSet<&str> = if dirty.is_empty() {
        Default::default()
    } else {
        scanned.files.iter().map(|c| c.rel_path.as_str()).collect()
    };
    for path in &dirty {
        known.remove(path);
        if !on_disk.contains(path.as_str()) {
            progress.changing();
            writer.send_or_gone(WriteOp::Remove(path.clone()))?;
            gone += 1;
        }
    }
    // Files chunked by another chunker version are read and chunked again, whatever their
    // size, mtime and hash say.
    let rechunk = index.store.chunker_version()? != Some(crate::chunk::CHUNKER_VERSION);
    let mut stats = diff(
        root,
        &scanned.files,
        &known,
        Reading {
            rechunk,
            reread: reread || rechunk,
            quick,
        },
        writer,
        limits,
        &Watchers {
            done: &|n| progress.add_done(n),
            skipped: &|reason| progress.add_skipped(reason),
            changing: &|| progress.changing(),
            provisional: &|delta| add_provisional(index, delta),
        },
    )?;
    stats.removed += gone;
    if rechunk {
        writer.send_or_gone(WriteOp::ChunkerVersion(crate::chunk::CHUNKER_VERSION))?;
    }
    // A full pass leaves no deleted document behind: BM25 then counts exactly what a fresh
    // index of the same files counts.
    writer.settle()?;
    super::release_c_heap();
    if quick || had_provisional {
        count_provisional(index, &index.store.all_files()?);
    }
    progress.end_pass(
        stats.source_bytes,
        started.elapsed().as_millis() as u64,
        stats.changed,
        stats.removed,
    );
    if quick {
        crate::crash::point_or_hold("after_quick_pass");
    }
    Ok(quick)
}

/// Re-check only `scopes` (after file events) and make the result searchable.
pub fn update(
    root: &Path,
    index: &ProjectIndex,
    writer: &WriterHandle,
    limits: Limits,
    scopes: &[DirScope],
    on_dir: &mut dyn FnMut(&Path),
) -> Result<DiffStats, IndexError> {
    let mut files: HashMap<String, Candidate> = HashMap::new();
    let mut known: HashMap<String, FileRecord> = HashMap::new();
    for scope in scopes {
        let start = if scope.rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&scope.rel)
        };
        let depth = if scope.recursive { None } else { Some(1) };
        let scanned = scan::scan_scope(root, &start, depth, limits, on_dir);
        if let Some(error) = scanned.failure {
            return Err(IndexError::io(root, error));
        }
        for candidate in scanned.files {
            files.insert(candidate.rel_path.clone(), candidate);
        }
        let mut under = index.store.files_under(&scope.rel, scope.recursive)?;
        keep_unreadable(&mut under, &scanned.unreadable_dirs);
        known.extend(under);
    }
    let mut files: Vec<Candidate> = files.into_values().collect();
    files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    let stats = diff(
        root,
        &files,
        &known,
        Reading::default(),
        writer,
        limits,
        &Watchers {
            done: &|_| {},
            skipped: &|_| {},
            changing: &|| {},
            provisional: &|delta| add_provisional(index, delta),
        },
    )?;
    if stats.changed + stats.removed > 0 {
        writer.flush()?;
    }
    Ok(stats)
}

/// A full pass that must chunk at least this many new files is quick (see the module's
/// doc): 5,000 by default (a syntax pass of ~20 s on two cores), `AMANMCP_QUICK_PASS_FILES`
/// to change it (0: never quick).
fn quick_pass_files() -> usize {
    static FILES: OnceLock<usize> = OnceLock::new();
    *FILES.get_or_init(|| {
        match std::env::var("AMANMCP_QUICK_PASS_FILES")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
        {
            Some(0) => usize::MAX,
            Some(n) => n,
            None => 5_000,
        }
    })
}

/// Set the count of provisional files from `records`, and return it.
fn count_provisional(index: &ProjectIndex, records: &HashMap<String, FileRecord>) -> u64 {
    let n = records.values().filter(|r| r.is_provisional()).count() as u64;
    index.progress.provisional.store(n, Ordering::Relaxed);
    n
}

/// Move the count of provisional files by `delta` as a pass sends them.
fn add_provisional(index: &ProjectIndex, delta: i64) {
    let counter = &index.progress.provisional;
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
        Some(n.saturating_add_signed(delta))
    });
}

/// Run `f` on the threads that read and chunk files for every project (one per core),
/// apart from rayon's global pool (see [`diff`]); on the global pool only if those threads
/// cannot be started.
fn on_parse_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("amanmcp-parse-{i}"))
            .start_handler(|_| crate::nice::step_back(crate::nice::INDEXING))
            .build()
            .inspect_err(|e| tracing::error!(error = %e, "cannot start the parsing threads"))
            .ok()
    });
    match pool {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// Leave out of `known` the files under directories the walk could not read: not seeing
/// them does not mean they are gone, so the diff must neither drop nor re-read them.
fn keep_unreadable(known: &mut HashMap<String, FileRecord>, dirs: &[String]) {
    for dir in dirs {
        if dir.is_empty() {
            known.clear();
            return;
        }
        let prefix = format!("{dir}/");
        known.retain(|path, _| !path.starts_with(&prefix));
    }
}

/// Which files a pass reads.
#[derive(Debug, Default, Clone, Copy)]
struct Reading {
    /// Every file counts as changed (chunked again).
    rechunk: bool,
    /// Every file is read, and counts as changed if its content hash differs.
    reread: bool,
    /// New files are chunked by line windows and recorded as provisional.
    quick: bool,
}

/// What a diff tells as it goes.
struct Watchers<'a> {
    /// `n` more files are done.
    done: &'a (dyn Fn(u64) + Sync),
    /// A file is skipped, for this reason.
    skipped: &'a (dyn Fn(SkipReason) + Sync),
    /// A file is about to be indexed again or dropped.
    changing: &'a (dyn Fn() + Sync),
    /// The count of provisional files moves by this much.
    provisional: &'a (dyn Fn(i64) + Sync),
}

/// Compare `files` (on disk) with `known` (in LMDB) and send the differences to the writer.
fn diff(
    root: &Path,
    files: &[Candidate],
    known: &HashMap<String, FileRecord>,
    reading: Reading,
    writer: &WriterHandle,
    limits: Limits,
    watchers: &Watchers<'_>,
) -> Result<DiffStats, IndexError> {
    let Watchers {
        done: on_done,
        skipped: on_skipped,
        changing: on_changing,
        provisional: on_provisional,
    } = watchers;
    let removed = AtomicU64::new(0);
    let changed = AtomicU64::new(0);
    let on_disk: std::collections::HashSet<&str> =
        files.iter().map(|c| c.rel_path.as_str()).collect();
    for (path, record) in known.iter().filter(|(p, _)| !on_disk.contains(p.as_str())) {
        on_changing();
        writer.send_or_gone(WriteOp::Remove(path.clone()))?;
        removed.fetch_add(1, Ordering::Relaxed);
        if record.is_provisional() {
            on_provisional(-1);
        }
    }
    let Reading {
        rechunk,
        reread,
        quick,
    } = reading;
    let (unchanged, to_read): (Vec<&Candidate>, Vec<&Candidate>) = files.iter().partition(|c| {
        !reread
            && known.get(&c.rel_path).is_some_and(|r| {
                !r.is_provisional() && r.size == c.size && r.mtime_ns == c.mtime_ns
            })
    });
    let source_bytes = AtomicU64::new(unchanged.iter().map(|c| c.size).sum());
    let failed: std::sync::Mutex<Option<std::io::Error>> = std::sync::Mutex::new(None);
    on_done(unchanged.len() as u64);

    // On the parse pool, not rayon's global one: these threads block on the writer's
    // bounded queue, and the writer's graph builds run on the global pool; sharing one pool
    // would let a full queue and a graph build wait for each other for ever.
    on_parse_pool(|| {
        to_read
            .par_iter()
            .for_each_with(writer.clone(), |writer, candidate| {
                let previous = known.get(&candidate.rel_path);
                let op = match scan::read_text(root, &candidate.rel_path, limits) {
                    ReadOutcome::Text(text, hash) => {
                        source_bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
                        if !rechunk
                            && previous.is_some_and(|r| !r.is_provisional() && r.hash == hash)
                        {
                            Some(WriteOp::Touch {
                                path: candidate.rel_path.clone(),
                                size: candidate.size,
                                mtime_ns: candidate.mtime_ns,
                            })
                        } else {
                            on_changing();
                            changed.fetch_add(1, Ordering::Relaxed);
                            let language = lang::language_of(Path::new(&candidate.rel_path));
                            let text = crate::files::secrets::redact(&text);
                            let was_provisional = previous.is_some_and(FileRecord::is_provisional);
                            let provisional = quick && previous.is_none();
                            let (chunked, hash) = if provisional {
                                let chunks = crate::chunk::line_windows(&text);
                                let chunked = syntax::Chunked {
                                    chunks,
                                    ..Default::default()
                                };
                                (chunked, FileRecord::PROVISIONAL)
                            } else {
                                (syntax::chunk_file(language, &text), hash)
                            };
                            match (was_provisional, provisional) {
                                (false, true) => on_provisional(1),
                                (true, false) => on_provisional(-1),
                                _ => {}
                            }
                            Some(WriteOp::Upsert(FileUpdate {
                                path: candidate.rel_path.clone(),
                                size: candidate.size,
                                mtime_ns: candidate.mtime_ns,
                                hash,
                                language,
                                chunks: chunked.chunks,
                                symbols: chunked.symbols,
                                refs: chunked.refs,
                            }))
                        }
                    }
                    ReadOutcome::Failed(error) => {
                        failed
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_or_insert(error);
                        None
                    }
                    ReadOutcome::Skipped(reason) => {
                        on_skipped(reason);
                        previous.map(|record| {
                            on_changing();
                            removed.fetch_add(1, Ordering::Relaxed);
                            if record.is_provisional() {
                                on_provisional(-1);
                            }
                            WriteOp::Remove(candidate.rel_path.clone())
                        })
                    }
                };
                if let Some(op) = op {
                    writer.send(op);
                }
                on_done(1);
            });
    });
    if let Some(error) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        // What was sent stands; what could not be read is retried by the next pass.
        let path = files
            .first()
            .map_or(Path::new("."), |c| c.abs_path.as_path());
        return Err(IndexError::io(path, error));
    }
    Ok(DiffStats {
        changed: changed.load(Ordering::Relaxed),
        removed: removed.load(Ordering::Relaxed),
        source_bytes: source_bytes.load(Ordering::Relaxed),
    })
}
