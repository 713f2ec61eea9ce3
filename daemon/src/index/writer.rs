//! The project's single writer: the only thread that writes to LMDB or tantivy.
//!
//! Updates arrive over a bounded channel and are committed in batches (every
//! [`COMMIT_INTERVAL`], once the files or the vector bytes staged reach the memory budget's
//! share, [`crate::memory::Budget`], or on [`WriteOp::Flush`]). The channel holds at most
//! 256 operations, and vectors, whose operations differ in size by the model's width, are
//! bounded in bytes too: a sender waits while the vectors queued and staged, not yet
//! committed, hold the budget's share ([`crate::memory::Gate`]).
//!
//! A commit keeps LMDB and tantivy consistent across crashes with a write-ahead intent:
//! 1. LMDB: mark the batch's paths dirty, commit;
//! 2. tantivy: commit (deletes by path, new chunk documents);
//! 3. LMDB: write file and chunk records, clear the dirty marks, commit.
//!
//! On open, any dirty path has its tantivy documents and LMDB records dropped, and the
//! reconcile pass then re-indexes it (see [`super::startup::recover`]).
//!
//! Vectors live in LMDB only (the ANN graph), so they need no intent: step 3 writes a chunk's pending
//! mark with its record (and queues a removed chunk's vector for dropping); vectors arrive
//! later from the embedding worker as [`WriteOp::Vectors`], and only those commits touch
//! the graph, linking their vectors into it before they commit.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use crate::chunk::Chunk;
use crate::chunk::syntax::Symbol;
use crate::chunk::syntax::refs::FileRefs;
use crate::error::IndexError;
use crate::index::ProjectIndex;
use crate::index::lexical::{ChunkDoc, OnSegmentsMoved};
use crate::index::store::{ChunkRecord, EmbeddedChunk, FileRecord, SymbolRecord, resident};
use crate::memory::Gate;

/// Staged changes are committed at least this often while updates flow.
pub const COMMIT_INTERVAL: Duration = Duration::from_millis(700);
/// While updates keep flowing without pause (a cold pass), the interval doubles up to this:
/// fewer commits mean fewer tantivy segments to merge. It resets once the stream pauses.
pub const MAX_COMMIT_INTERVAL: Duration = Duration::from_secs(5);

/// A new or changed file, read and chunked.
pub struct FileUpdate {
    /// Relative path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time (ns).
    pub mtime_ns: u64,
    /// Content hash.
    pub hash: u64,
    /// Language name.
    pub language: &'static str,
    /// The file's chunks.
    pub chunks: Vec<Chunk>,
    /// The file's symbols.
    pub symbols: Vec<Symbol>,
    /// What the file refers to.
    pub refs: FileRefs,
}

/// One instruction for the writer.
pub enum WriteOp {
    /// Replace a file's chunks.
    Upsert(FileUpdate),
    /// A file's content is unchanged; only its size/mtime moved.
    Touch {
        /// Relative path.
        path: String,
        /// New size.
        size: u64,
        /// New mtime (ns).
        mtime_ns: u64,
    },
    /// Drop a file.
    Remove(String),
    /// Vectors for chunks waiting for one (from the embedding worker).
    Vectors(Vec<EmbeddedChunk>),
    /// Every file has been chunked again with this chunker version (after the upserts
    /// sent before it).
    ChunkerVersion(u64),
    /// Commit now and report the outcome.
    Flush(mpsc::Sender<Result<(), IndexError>>),
    /// Commit now, reporting nothing (a failure is kept for the next flush, as the
    /// interval's commits keep theirs): the embedding worker's queue has emptied, so what it
    /// sent need not wait for the interval.
    Commit,
    /// Commit now, then write again the live documents of tantivy segments holding deleted
    /// ones (`Lexical::settle`: BM25 then counts what a fresh index would), and report.
    Settle(mpsc::Sender<Result<(), IndexError>>),
    /// tantivy's segments may have changed (a merge ended): searches should read the
    /// merged segments now, not at the next commit (sent by tantivy's merge policy).
    SegmentsMoved,
}

/// The sending side of a project's writer.
#[derive(Clone)]
pub struct WriterHandle {
    /// Shared so tantivy's merge policy can hold it weakly: the channel closes (and the
    /// thread ends) when the last handle goes, whatever tantivy keeps.
    tx: Arc<SyncSender<WriteOp>>,
    /// Vector bytes sent and not yet committed.
    vector_gate: Arc<Gate>,
    /// The index's directory, for errors.
    dir: std::path::PathBuf,
}

impl WriterHandle {
    /// Queue an operation (blocks while the queue is full, or while the vectors sent and
    /// not yet committed hold the memory budget's share).
    pub fn send(&self, op: WriteOp) -> bool {
        let bytes = match &op {
            WriteOp::Vectors(items) => vector_bytes(items),
            _ => 0,
        };
        self.vector_gate.acquire(bytes);
        let sent = self.tx.send(op).is_ok();
        if !sent {
            self.vector_gate.release(bytes);
        }
        sent
    }

    /// Commit everything queued so far and wait for it.
    pub fn flush(&self) -> Result<(), IndexError> {
        self.acknowledged(WriteOp::Flush)
    }

    /// Commit everything queued so far, settle the lexical index ([`WriteOp::Settle`]) and
    /// wait for both.
    pub fn settle(&self) -> Result<(), IndexError> {
        self.acknowledged(WriteOp::Settle)
    }

    fn acknowledged(
        &self,
        op: fn(mpsc::Sender<Result<(), IndexError>>) -> WriteOp,
    ) -> Result<(), IndexError> {
        let (ack_tx, ack_rx) = mpsc::channel();
        self.send_or_gone(op(ack_tx))?;
        ack_rx.recv().unwrap_or_else(|_| Err(self.gone()))
    }

    /// Queue an operation, or say the writer is gone.
    pub fn send_or_gone(&self, op: WriteOp) -> Result<(), IndexError> {
        if self.send(op) {
            Ok(())
        } else {
            Err(self.gone())
        }
    }

    fn gone(&self) -> IndexError {
        IndexError::WriterGone(self.dir.clone())
    }
}

/// Start the writer thread of `index`.
pub fn spawn(
    index: Arc<ProjectIndex>,
) -> Result<(WriterHandle, std::thread::JoinHandle<()>), IndexError> {
    let dir = index.lexical.dir().to_path_buf();
    let (tx, rx) = mpsc::sync_channel(256);
    let tx = Arc::new(tx);
    let moved = segments_moved(Arc::downgrade(&tx));
    let vector_gate = Arc::new(Gate::new(crate::memory::budget().vector_bytes_in_flight()));
    let next_chunk_id = index.store.next_chunk_id()?;
    let gate = vector_gate.clone();
    let (opened_tx, opened) = mpsc::sync_channel(1);
    let thread = std::thread::Builder::new()
        .name("amanmcp-writer".into())
        .spawn(move || {
            // Before tantivy's writer is made: its indexing and merging threads inherit it.
            crate::nice::step_back(crate::nice::INDEXING);
            let writer = match index.lexical.writer(Some(moved.clone())) {
                Ok(writer) => writer,
                Err(e) => return drop(opened_tx.send(Err(e))),
            };
            let _ = opened_tx.send(Ok(()));
            Writer {
                index,
                writer: Some(writer),
                moved,
                next_chunk_id,
                staged: Vec::new(),
                staged_vector_bytes: 0,
                vector_gate: gate,
                lexical_paths: HashSet::new(),
                first_staged: None,
                interval: COMMIT_INTERVAL,
                failed_since_flush: None,
                last_logged: None,
                released: Default::default(),
            }
            .run(rx)
        })
        .map_err(|e| IndexError::io(std::path::Path::new("writer thread"), e))?;
    opened.recv().unwrap_or_else(|_| {
        let gone = std::io::Error::other("the writer thread ended before it opened tantivy");
        Err(IndexError::io(std::path::Path::new("writer thread"), gone))
    })?;
    Ok((
        WriterHandle {
            tx,
            vector_gate,
            dir,
        },
        thread,
    ))
}

enum Staged {
    Put(
        String,
        FileRecord,
        Vec<(u64, ChunkRecord)>,
        Vec<SymbolRecord>,
        FileRefs,
    ),
    Touch(String, u64, u64),
    Remove(String),
    Vectors(Vec<EmbeddedChunk>),
    ChunkerVersion(u64),
}

struct Writer {
    index: Arc<ProjectIndex>,
    /// The tantivy writer; `None` after a failure left it unusable (a rollback that could
    /// not reopen it), until the next operation opens a new one.
    writer: Option<tantivy::IndexWriter>,
    /// What tantivy's merge policy calls when segments may have moved.
    moved: OnSegmentsMoved,
    next_chunk_id: u64,
    staged: Vec<Staged>,
    /// Bytes of the vectors staged: with the files staged, what a commit waits with in memory.
    /// Added and let go with the staged vectors themselves (none while nothing is staged).
    staged_vector_bytes: usize,
    /// Vector bytes sent and not yet committed: released when staged vectors are let go.
    vector_gate: Arc<Gate>,
    lexical_paths: HashSet<String>,
    first_staged: Option<Instant>,
    /// The current commit interval (see [`MAX_COMMIT_INTERVAL`]).
    interval: Duration,
    /// A commit failed since the last flush: its changes were dropped, so the flush that
    /// ends a pass must fail too (a pass over dropped changes is not `ready`).
    failed_since_flush: Option<String>,
    /// The last failure logged, and when: the same cause is logged once a minute.
    last_logged: Option<(String, Instant)>,
    /// When the store's map last gave back the pages commits read.
    released: resident::Released,
}

impl Writer {
    fn run(mut self, rx: Receiver<WriteOp>) {
        loop {
            let op = match self.first_staged {
                None if self.released.owed() => rx.recv_timeout(resident::WHILE_WRITING),
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(first) => rx.recv_timeout(self.interval.saturating_sub(first.elapsed())),
            };
            match op {
                Ok(WriteOp::Commit) => self.commit_or_fail(),
                Ok(WriteOp::SegmentsMoved) => self.refresh_reader(),
                Ok(WriteOp::Flush(ack)) => {
                    let _ = ack.send(self.flush());
                }
                Ok(WriteOp::Settle(ack)) => {
                    let outcome = self
                        .flush()
                        .and_then(|()| self.settle().inspect_err(|e| self.fail_flush(e)));
                    // A full pass has ended: what it read of the store need not stay resident.
                    self.released.now(&self.index.store);
                    let _ = ack.send(outcome);
                }
                Ok(op) => {
                    if let Err(e) = self.stage(op) {
                        self.fail(&e);
                    }
                    // Ops may flow without pause, so the interval is checked here too, not
                    // only when the channel goes quiet.
                    let due = self
                        .first_staged
                        .is_some_and(|first| first.elapsed() >= self.interval);
                    let budget = crate::memory::budget();
                    if due
                        || self.staged.len() >= budget.staged_files()
                        || self.staged_vector_bytes >= budget.staged_vector_bytes()
                    {
                        self.commit_or_fail();
                        self.interval = (self.interval * 2).min(MAX_COMMIT_INTERVAL);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.interval = COMMIT_INTERVAL;
                    if self.staged.is_empty() {
                        // Quiet since the last commit: what commits read need not stay
                        // resident.
                        self.released.now(&self.index.store);
                    } else {
                        self.commit_or_fail();
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.commit_or_fail();
                    return;
                }
            }
        }
    }

    /// The tantivy writer, opened again if a failure dropped it.
    fn tantivy(&mut self) -> Result<&mut tantivy::IndexWriter, IndexError> {
        if self.writer.is_none() {
            self.writer = Some(self.index.lexical.writer(Some(self.moved.clone()))?);
            tracing::info!("index writer reopened after a failure");
        }
        Ok(self.writer.as_mut().expect("just opened"))
    }

    fn stage(&mut self, op: WriteOp) -> Result<(), IndexError> {
        self.first_staged.get_or_insert_with(Instant::now);
        // Vectors first: staged whatever tantivy's state, so the bytes they hold are let go
        // with the next commit or failure.
        let op = match op {
            WriteOp::Vectors(items) => {
                self.staged_vector_bytes += vector_bytes(&items);
                self.staged.push(Staged::Vectors(items));
                return Ok(());
            }
            op => op,
        };
        self.tantivy()?;
        let lexical = &self.index.lexical;
        let writer = self.writer.as_ref().expect("opened above");
        match op {
            WriteOp::Upsert(update) => {
                lexical.delete_path(writer, &update.path);
                let mut chunks = Vec::with_capacity(update.chunks.len());
                for chunk in &update.chunks {
                    let chunk_id = self.next_chunk_id;
                    self.next_chunk_id += 1;
                    lexical.add_chunk(
                        writer,
                        &ChunkDoc {
                            chunk_id,
                            path: &update.path,
                            language: update.language,
                            start_line: chunk.start_line,
                            end_line: chunk.end_line,
                            symbol: chunk.symbol.as_deref(),
                            kind: chunk.kind,
                            names: &chunk.names,
                            body: &chunk.text,
                        },
                    )?;
                    chunks.push((
                        chunk_id,
                        ChunkRecord {
                            path: update.path.clone(),
                            start_line: chunk.start_line,
                            end_line: chunk.end_line,
                            symbol: chunk.symbol.clone(),
                            kind: chunk.kind.map(str::to_string),
                            hash: xxhash_rust::xxh3::xxh3_64(chunk.text.as_bytes()),
                        },
                    ));
                }
                let record = FileRecord {
                    size: update.size,
                    mtime_ns: update.mtime_ns,
                    hash: update.hash,
                    language: update.language.to_string(),
                    chunk_ids: chunks.iter().map(|(id, _)| *id).collect(),
                };
                self.lexical_paths.insert(update.path.clone());
                let symbols = update.symbols.iter().map(SymbolRecord::from).collect();
                self.staged.push(Staged::Put(
                    update.path,
                    record,
                    chunks,
                    symbols,
                    update.refs,
                ));
            }
            WriteOp::Touch {
                path,
                size,
                mtime_ns,
            } => self.staged.push(Staged::Touch(path, size, mtime_ns)),
            WriteOp::Remove(path) => {
                lexical.delete_path(writer, &path);
                self.lexical_paths.insert(path.clone());
                self.staged.push(Staged::Remove(path));
            }
            WriteOp::ChunkerVersion(version) => self.staged.push(Staged::ChunkerVersion(version)),
            WriteOp::Vectors(_)
            | WriteOp::Flush(_)
            | WriteOp::Settle(_)
            | WriteOp::Commit
            | WriteOp::SegmentsMoved => {
                unreachable!("handled above and by run")
            }
        }
        Ok(())
    }

    /// Commit now; the outcome, or the failure of a commit since the last flush.
    fn flush(&mut self) -> Result<(), IndexError> {
        self.interval = COMMIT_INTERVAL;
        match self.commit() {
            Ok(()) => match self.failed_since_flush.take() {
                Some(earlier) => Err(IndexError::EarlierCommit(earlier)),
                None => Ok(()),
            },
            Err(e) => {
                self.fail_flush(&e);
                Err(e)
            }
        }
    }

    /// A flush failed with `e`: [`Writer::fail`], the caller told now (so not again at the
    /// next flush).
    fn fail_flush(&mut self, e: &IndexError) {
        self.fail(e);
        self.failed_since_flush = None;
    }

    /// Write again the live documents of segments holding deleted ones.
    fn settle(&mut self) -> Result<(), IndexError> {
        let index = self.index.clone();
        let started = Instant::now();
        let rewritten = index.lexical.settle(self.tantivy()?)?;
        if rewritten > 0 {
            tracing::info!(
                documents = rewritten,
                ms = started.elapsed().as_millis() as u64,
                "lexical segments holding deleted documents written again"
            );
        }
        Ok(())
    }

    /// A merge may have landed: reload the reader if its segments are not the index's, so
    /// that cost is paid here and not by the next edit's commit. Between operations, so
    /// never between a commit's tantivy and LMDB halves.
    fn refresh_reader(&mut self) {
        let started = Instant::now();
        match self.index.lexical.refresh_if_stale() {
            Ok(true) => tracing::debug!(
                ms = started.elapsed().as_secs_f64() * 1e3,
                "reader reloaded after a merge"
            ),
            Ok(false) => {}
            // Searches read the segments they had; the next commit reloads again.
            Err(e) => tracing::warn!(error = %e.explained(), "reader not reloaded after a merge"),
        }
    }

    fn commit_or_fail(&mut self) {
        if let Err(e) = self.commit() {
            self.fail(&e);
        }
    }

    /// Drop what is staged after a failed commit, record the failure (for status and for
    /// the next flush) and log it, once a minute per cause.
    fn fail(&mut self, e: &IndexError) {
        let message = e.explained();
        let repeated = self
            .last_logged
            .as_ref()
            .is_some_and(|(last, at)| *last == message && at.elapsed() < Duration::from_secs(60));
        if !repeated {
            tracing::error!(error = %message, "index commit failed; pending changes dropped");
            self.last_logged = Some((message.clone(), Instant::now()));
        }
        self.index.progress.set_error(message.clone());
        self.index
            .progress
            .commit_failures
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.failed_since_flush = Some(message);
        // A rollback reopens tantivy's writer; if that fails too (out of descriptors), the
        // writer is unusable (a second rollback would panic inside tantivy): drop it, and
        // the next operation opens a new one.
        if let Some(mut writer) = self.writer.take() {
            match writer.rollback() {
                Ok(_) => self.writer = Some(writer),
                Err(e) => {
                    tracing::warn!(error = %e, "index writer dropped after a failed rollback")
                }
            }
        }
        self.staged.clear();
        self.let_vectors_go();
        self.lexical_paths.clear();
        self.first_staged = None;
    }

    /// The staged vectors are committed or dropped: senders may send more.
    fn let_vectors_go(&mut self) {
        self.vector_gate
            .release(std::mem::take(&mut self.staged_vector_bytes));
    }

    fn commit(&mut self) -> Result<(), IndexError> {
        self.first_staged = None;
        if self.staged.is_empty() {
            return Ok(());
        }
        crate::crash::injected_write_failure()
            .map_err(|e| IndexError::io(self.index.lexical.dir(), e))?;
        let index = self.index.clone();
        // The files whose symbols and references change, noted around the commit (a
        // failed one too: it may have written one half).
        let _noted = index
            .changes
            .around(self.staged.iter().filter_map(|staged| match staged {
                Staged::Put(path, ..) | Staged::Remove(path) => Some(path.clone()),
                _ => None,
            }));
        let store = &index.store;
        let started = Instant::now();
        let n_staged = self.staged.len();
        let mut dirty_ms = 0.0;
        if !self.lexical_paths.is_empty() {
            let mut txn = store.write_txn()?;
            for path in &self.lexical_paths {
                txn.mark_dirty(path)?;
            }
            txn.commit(self.next_chunk_id)?;
            dirty_ms = started.elapsed().as_secs_f64() * 1e3;
            index.lexical.commit(self.tantivy()?)?;
            crate::crash::point("after_lexical_commit");
        }
        let lexical_ms = started.elapsed().as_secs_f64() * 1e3;
        let mut txn = store.write_txn()?;
        let mut n_vectors = 0;
        for staged in self.staged.drain(..) {
            match staged {
                Staged::Put(path, record, chunks, symbols, refs) => {
                    txn.put_file(&path, &record, &chunks, &symbols, &refs)?
                }
                Staged::Touch(path, size, mtime_ns) => txn.touch_file(&path, size, mtime_ns)?,
                Staged::Remove(path) => txn.remove_file(&path)?,
                Staged::ChunkerVersion(version) => txn.set_chunker_version(version)?,
                Staged::Vectors(items) => {
                    n_vectors += txn.put_vectors(&items)?;
                }
            }
        }
        txn.build_vectors(self.next_chunk_id)?;
        if !self.lexical_paths.is_empty() {
            txn.clear_dirty()?;
        }
        txn.commit(self.next_chunk_id)?;
        self.released.after_commit(store);
        self.let_vectors_go();
        self.lexical_paths.clear();
        self.index.refresh_counts();
        self.index.embed_wake.notify();
        tracing::debug!(
            files = n_staged,
            vectors = n_vectors,
            dirty_ms,
            lexical_ms,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            "committed"
        );
        Ok(())
    }
}

impl Drop for Writer {
    /// Nobody commits any more: senders waiting for vector bytes must not wait forever.
    fn drop(&mut self) {
        self.vector_gate.close();
    }
}

/// What tantivy's merge policy calls: a [`WriteOp::SegmentsMoved`] for the writer thread,
/// dropped when the queue is full (a commit is coming, and it reloads) or the writer is gone.
fn segments_moved(tx: std::sync::Weak<SyncSender<WriteOp>>) -> OnSegmentsMoved {
    Arc::new(move || {
        if let Some(tx) = tx.upgrade() {
            let _ = tx.try_send(WriteOp::SegmentsMoved);
        }
    })
}

/// Bytes of `items`' vectors.
fn vector_bytes(items: &[EmbeddedChunk]) -> usize {
    items
        .iter()
        .map(|item| std::mem::size_of_val(item.vector.as_slice()))
        .sum()
}
