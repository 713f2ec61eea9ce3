//! The project's embedding worker: chunks waiting for a vector -> embedder -> the writer.
//!
//! Runs in the background, so BM25 answers as soon as a chunk is committed and vectors
//! follow. Reads pending chunk ids from LMDB and their text from tantivy (so a restart
//! resumes where it stopped), takes vectors of text seen before from the embedding cache,
//! embeds the rest a batch at a time, and sends the vectors to the project's writer, which
//! stores them only for chunks that still exist (and drops removed chunks' vectors). On embedder errors it backs off (1 s,
//! doubling to a minute) and tries again; the error shows in the project's status.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::embed::Embedding;
use crate::index::ProjectIndex;
use crate::index::progress::IndexState;
use crate::index::store::EmbeddedChunk;
use crate::index::store::resident::WHILE_WRITING;
use crate::index::writer::{WriteOp, WriterHandle};

/// Chunk text given to the embedder: where it is and what it defines on the first line (the
/// built-in embedder weighs that line more), then the code.
pub fn document_text(path: &str, symbol: Option<&str>, body: &str) -> String {
    match symbol {
        Some(symbol) => format!("{path} {symbol}\n{body}"),
        None => format!("{path}\n{body}"),
    }
}

/// Start the worker. It stops when `stop` is set (and `index.embed_wake` rung).
pub fn spawn(
    index: Arc<ProjectIndex>,
    writer: WriterHandle,
    embedding: Arc<Embedding>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("amanmcp-embedder".into())
        .spawn(move || {
            crate::nice::step_back(crate::nice::EMBEDDING);
            run(&index, &writer, &embedding, &stop)
        })
}

/// How long the worker waits for a pass to end before looking again.
const PASS_WAIT: Duration = Duration::from_millis(200);

/// Chunks looked up in the caches at a time.
const CACHE_LOOKAHEAD: usize = 2048;

fn run(index: &ProjectIndex, writer: &WriterHandle, embedding: &Embedding, stop: &AtomicBool) {
    let batch_size = embedding.embedder.batch_size().max(1);
    // Sent to the writer but perhaps not committed yet: not embedded twice.
    let mut in_flight: HashSet<u64> = HashSet::new();
    let mut backoff = Duration::from_secs(1);
    let mut window: (Instant, u64) = (Instant::now(), 0);
    let progress = &index.embed_progress;
    let mut failures_seen = index.progress.commit_failures.load(Ordering::SeqCst);
    // Vectors were sent since the queue last emptied (their commits free C heap memory).
    let mut sent_since_empty = false;
    // When an empty vector commit was last sent.
    let mut last_empty: Option<Instant> = None;
    // A commit was asked for the vectors sent since the queue emptied.
    let mut commit_asked = false;
    // When the shared cache's pages were last given back.
    let mut last_release = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        // A commit that failed dropped the vectors sent meanwhile: they are pending again,
        // not on their way. Wait (the disk may still be full), then send them again.
        let failures = index.progress.commit_failures.load(Ordering::SeqCst);
        if failures != failures_seen {
            failures_seen = failures;
            in_flight.clear();
            index.embed_wake.wait(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(60));
            continue;
        }
        // BM25 first: while a pass changes the index, its commits must not wait behind
        // vector commits, whose graph linking takes the writer's time (sympy's lexical pass
        // took 14.0 s instead of 7.7 s once vectors kept pace with it).
        // Nor are provisional chunks embedded: the pass after a quick one replaces them.
        if index.progress.state() == IndexState::Indexing || index.progress.provisional() > 0 {
            index.embed_wake.wait(PASS_WAIT);
            continue;
        }
        in_flight.retain(|id| index.store.is_pending(*id).unwrap_or(false));
        // Look far ahead in the caches: their vectors go to the writer in one commit (each
        // vector commit links its vectors into the ANN graph, so a second checkout's thousands of cache
        // hits must not arrive a batch at a time); only `batch_size` misses are embedded.
        let pending = match index
            .store
            .pending_chunks(batch_size.max(CACHE_LOOKAHEAD), &in_flight)
        {
            Ok(pending) => pending,
            Err(e) => {
                tracing::error!(error = %e, "cannot read chunks waiting for vectors");
                index.embed_wake.wait(backoff);
                continue;
            }
        };
        if pending.is_empty() {
            // Every waiting chunk's vector is sent: commit them now, not after the writer's
            // interval (700 ms, most of a small project's wait for its vectors).
            if !in_flight.is_empty() && !commit_asked {
                commit_asked = true;
                if !writer.send(WriteOp::Commit) {
                    return;
                }
            }
            // Removed chunks' vectors are dropped, and a graph made for a project that
            // outgrew exact search, by a vector commit: send an empty one (at most one a
            // second, should one not make the progress it is due for).
            if in_flight.is_empty()
                && last_empty.is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
                && index.store.vector_commit_due().unwrap_or(false)
            {
                last_empty = Some(Instant::now());
                if !writer.send(WriteOp::Vectors(Vec::new())) {
                    return;
                }
            }
            if sent_since_empty && in_flight.is_empty() {
                sent_since_empty = false;
                crate::index::release_c_heap();
                // Every vector is in: the pages of the shared cache its look-ups read go back
                // (the writer gives back the project store's once it is quiet).
                embedding.release_mapped_pages();
            }
            progress.rate_bits.store(0f64.to_bits(), Ordering::Relaxed);
            window = (Instant::now(), 0);
            index.embed_wake.wait(Duration::from_secs(5));
            continue;
        }
        // Text embedded before (unchanged code, renames, copies, branch switches) comes from
        // the cache, without the embedder.
        let hashes: Vec<u64> = pending.iter().map(|(_, hash)| *hash).collect();
        let mut cached = index.store.cached_vectors(&hashes).unwrap_or_default();
        // Then the daemon's cache: another checkout, worktree or branch embedded it.
        let missing: Vec<u64> = hashes
            .iter()
            .copied()
            .filter(|hash| !cached.contains_key(hash))
            .collect();
        if !missing.is_empty() {
            let shared = embedding.shared_vectors(&missing);
            progress
                .shared_hits
                .fetch_add(shared.len() as u64, Ordering::Relaxed);
            cached.extend(shared);
            // The cache's pages these look-ups read need not stay resident meanwhile.
            if last_release.elapsed() >= WHILE_WRITING {
                last_release = Instant::now();
                embedding.release_mapped_pages();
            }
        }
        if !cached.is_empty() {
            let items: Vec<EmbeddedChunk> = pending
                .iter()
                .filter_map(|(chunk_id, hash)| {
                    cached.get(hash).map(|vector| EmbeddedChunk {
                        chunk_id: *chunk_id,
                        hash: *hash,
                        vector: vector.clone(),
                    })
                })
                .collect();
            in_flight.extend(items.iter().map(|item| item.chunk_id));
            sent_since_empty = true;
            commit_asked = false;
            if !writer.send(WriteOp::Vectors(items)) {
                return;
            }
        }
        let pending: Vec<(u64, u64)> = pending
            .into_iter()
            .filter(|(_, hash)| !cached.contains_key(hash))
            .take(batch_size)
            .collect();
        if pending.is_empty() {
            continue;
        }
        let ids: Vec<u64> = pending.iter().map(|(id, _)| *id).collect();
        let docs = match index.lexical.chunks_by_id(&ids) {
            Ok(docs) => docs,
            Err(e) => {
                tracing::error!(error = %e, "cannot read chunk texts to embed");
                index.embed_wake.wait(backoff);
                continue;
            }
        };
        let mut items = Vec::with_capacity(docs.len());
        let mut texts = Vec::with_capacity(docs.len());
        for (id, hash) in &pending {
            match docs.get(id) {
                Some(doc) => {
                    texts.push(document_text(&doc.path, doc.symbol.as_deref(), &doc.body));
                    items.push((*id, *hash));
                }
                // Deleted since it was listed (its pending mark goes with it), or its
                // document is missing: `verify` reports that; do not spin on it.
                None => {
                    in_flight.insert(*id);
                }
            }
        }
        if texts.is_empty() {
            continue;
        }
        match embedding.embed_documents(&texts) {
            Ok(vectors) => {
                backoff = Duration::from_secs(1);
                progress.set_error(None);
                let n = vectors.len() as u64;
                let shared: Vec<(u64, &[f32])> = items
                    .iter()
                    .zip(&vectors)
                    .map(|((_, hash), vector)| (*hash, vector.as_slice()))
                    .collect();
                embedding.share_vectors(&shared);
                let embedded = items
                    .iter()
                    .zip(vectors)
                    .map(|((chunk_id, hash), vector)| EmbeddedChunk {
                        chunk_id: *chunk_id,
                        hash: *hash,
                        vector,
                    })
                    .collect();
                if !writer.send(WriteOp::Vectors(embedded)) {
                    return;
                }
                sent_since_empty = true;
                commit_asked = false;
                in_flight.extend(items.iter().map(|(id, _)| *id));
                window.1 += n;
                let elapsed = window.0.elapsed().as_secs_f64();
                if elapsed > 0.5 {
                    let rate = window.1 as f64 / elapsed;
                    progress.rate_bits.store(rate.to_bits(), Ordering::Relaxed);
                }
                if elapsed > 30.0 {
                    window = (Instant::now(), 0);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in_s = backoff.as_secs(), "embedding failed");
                progress.set_error(Some(e.to_string()));
                // Commits ring the wake-up too: sleep the whole backoff unless stopped.
                let deadline = Instant::now() + backoff;
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                    index
                        .embed_wake
                        .wait(deadline.saturating_duration_since(Instant::now()));
                }
                backoff = (backoff * 2).min(Duration::from_secs(60));
                window = (Instant::now(), 0);
            }
        }
    }
}
