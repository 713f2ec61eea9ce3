//! One project: its index (LMDB + tantivy), its writer, its progress, and search.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use globset::GlobBuilder;

use crate::embedding::{EmbedProgress, Wake};
use crate::error::{Error, IndexError, UserError};
use crate::hybrid::{SearchConfig, SearchMode};
use crate::lexical::{Lexical, LexicalHit, LexicalQuery};
use crate::scan::{Limits, SkipReason};
use crate::store::{FORMAT_VERSION, Store};
use crate::watch::{ProjectWatch, WatchConfig, WatchMode};
use crate::writer::{self, WriterHandle};

/// Where a project's index stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexState {
    /// A pass is running; search answers from what is indexed so far.
    Indexing,
    /// The index matches the files on disk as of the last pass.
    Ready,
    /// The last pass or commit failed (see `last_error`).
    Error,
}

const SKIP_REASONS: [SkipReason; 6] = [
    SkipReason::TooLarge,
    SkipReason::Binary,
    SkipReason::NotUtf8,
    SkipReason::LongLines,
    SkipReason::Secret,
    SkipReason::Unreadable,
];

/// Live counters of a project, shared by the writer, the indexer and readers.
#[derive(Default)]
pub struct Progress {
    state: AtomicU8,
    files: AtomicU64,
    chunks: AtomicU64,
    /// Chunks waiting for a vector.
    pending: AtomicU64,
    index_bytes: AtomicU64,
    files_done: AtomicU64,
    files_total: AtomicU64,
    source_bytes: AtomicU64,
    last_pass_ms: AtomicU64,
    passes: AtomicU64,
    last_pass_changed: AtomicU64,
    last_pass_removed: AtomicU64,
    notice: Mutex<Option<String>>,
    skipped: [AtomicU64; 6],
    last_error: Mutex<Option<String>>,
}

impl Progress {
    /// Current state.
    pub fn state(&self) -> IndexState {
        match self.state.load(Ordering::Acquire) {
            0 => IndexState::Indexing,
            1 => IndexState::Ready,
            _ => IndexState::Error,
        }
    }

    /// Set the state.
    pub fn set_state(&self, state: IndexState) {
        let v = match state {
            IndexState::Indexing => 0,
            IndexState::Ready => 1,
            IndexState::Error => 2,
        };
        self.state.store(v, Ordering::Release);
    }

    /// Record an error and enter the error state.
    pub fn set_error(&self, message: String) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
        self.set_state(IndexState::Error);
    }

    /// Start a pass over `total` files.
    pub fn begin_pass(&self, total: u64) {
        self.files_total.store(total, Ordering::Relaxed);
        self.files_done.store(0, Ordering::Relaxed);
        for counter in &self.skipped {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// `n` more files of the pass are done.
    pub fn add_done(&self, n: u64) {
        self.files_done.fetch_add(n, Ordering::Relaxed);
    }

    /// A file was skipped.
    pub fn add_skipped(&self, reason: SkipReason) {
        let idx = SKIP_REASONS
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(SKIP_REASONS.len() - 1);
        self.skipped[idx].fetch_add(1, Ordering::Relaxed);
    }

    /// End a pass that re-chunked `changed` files and removed `removed`.
    pub fn end_pass(&self, source_bytes: u64, elapsed_ms: u64, changed: u64, removed: u64) {
        self.last_pass_changed.store(changed, Ordering::Relaxed);
        self.last_pass_removed.store(removed, Ordering::Relaxed);
        self.source_bytes.store(source_bytes, Ordering::Relaxed);
        self.last_pass_ms.store(elapsed_ms, Ordering::Relaxed);
    }

    /// Count a finished pass (successful or not).
    fn pass_finished(&self) {
        self.passes.fetch_add(1, Ordering::Release);
    }
}

/// A snapshot of a project's status.
#[derive(Debug, Clone)]
pub struct ProjectStatus {
    /// Canonical root.
    pub root: PathBuf,
    /// State.
    pub state: IndexState,
    /// Files searchable now.
    pub files: u64,
    /// Chunks searchable now.
    pub chunks: u64,
    /// Files done in the current/last pass.
    pub files_done: u64,
    /// Files in the current/last pass.
    pub files_total: u64,
    /// Bytes of the on-disk index.
    pub index_bytes: u64,
    /// Bytes of source indexed.
    pub source_bytes: u64,
    /// Files skipped in the last pass, by reason (non-zero only).
    pub skipped: Vec<(&'static str, u64)>,
    /// Last error, if any.
    pub last_error: Option<String>,
    /// Duration of the last pass.
    pub last_pass_ms: u64,
    /// Passes finished since the project was loaded.
    pub passes: u64,
    /// Files re-chunked by the last pass.
    pub last_pass_changed: u64,
    /// Files removed by the last pass.
    pub last_pass_removed: u64,
    /// Why the index was rebuilt, if it was.
    pub notice: Option<String>,
    /// How changes are noticed.
    pub watch: String,
    /// Semantic search, when an embedder is configured.
    pub vectors: Option<VectorStatus>,
}

/// Where a project's vectors stand.
#[derive(Debug, Clone)]
pub struct VectorStatus {
    /// The embedder's model id.
    pub model: String,
    /// The embedder, in words (backend, URL).
    pub embedder: String,
    /// Chunks with a vector.
    pub embedded: u64,
    /// Chunks waiting for one.
    pub pending: u64,
    /// Chunks embedded per second recently (0 when idle).
    pub rate: f64,
    /// `ok`, `unknown` or `error: ...`.
    pub health: String,
}

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

/// A search request.
#[derive(Debug, Clone)]
pub struct SearchParams {
    /// Free-text query.
    pub query: String,
    /// Page size.
    pub limit: usize,
    /// Results to skip.
    pub offset: usize,
    /// Only paths matching this glob.
    pub path_glob: Option<String>,
    /// Only this language.
    pub language: Option<String>,
    /// Which rankers to use.
    pub mode: SearchMode,
}

/// Whether a search could use vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Semantic {
    /// Not asked for (lexical mode).
    NotUsed,
    /// Used; `complete` says whether every chunk had its vector.
    Used {
        /// Every chunk had a vector when the search ran.
        complete: bool,
    },
    /// Asked for but unavailable (no embedder, or it failed): lexical results only.
    Unavailable(String),
}

/// A page of search results.
pub struct SearchOutcome {
    /// The hits, best first.
    pub hits: Vec<LexicalHit>,
    /// Total matching chunks.
    pub total: u64,
    /// Whether more results exist beyond this page.
    pub truncated: bool,
    /// The project's status when the search ran.
    pub status: ProjectStatus,
    /// Whether vectors took part.
    pub semantic: Semantic,
}

/// How long a search on an empty, still-indexing project waits for the first commit.
const FIRST_COMMIT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Largest page a search may ask for.
pub const MAX_LIMIT: usize = 1000;

/// A file name matching more files than this says too little to boost them.
const MAX_MENTIONED_MATCHES: usize = 3;

/// Candidates each ranker contributes to a fused ranking (at least: more when a page
/// reaches deeper).
const FUSION_DEPTH: usize = 100;

/// A loaded project.
pub struct Project {
    root: PathBuf,
    index: Arc<ProjectIndex>,
    /// `None` only while dropping (so the writer sees its channel close).
    writer: Option<WriterHandle>,
    writer_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    limits: Limits,
    pass_running: AtomicBool,
    pass_requested: AtomicBool,
    /// Held by a full pass and by an event update, so the two never interleave.
    update_lock: Mutex<()>,
    watch: ProjectWatch,
    poller_started: AtomicBool,
    last_used_ms: AtomicU64,
    search: SearchConfig,
    embed_stop: Arc<AtomicBool>,
    embed_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Batches with more changed paths than this trigger a full pass instead of an update.
const STORM_PATHS: usize = 5000;
/// Updates touching more directories than this become a full pass.
const STORM_DIRS: usize = 500;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Drop for Project {
    fn drop(&mut self) {
        self.watch.stop();
        // The embedding worker holds a writer handle: stop it first (it finishes the batch
        // it is embedding, if any).
        self.embed_stop.store(true, Ordering::SeqCst);
        self.index.embed_wake.notify();
        if let Some(thread) = self
            .embed_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = thread.join();
        }
        // Close the writer's channel and wait for its last commit, so the LMDB environment
        // and the tantivy lock are free before the project can be opened again.
        self.writer.take();
        if let Some(thread) = self
            .writer_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = thread.join();
        }
    }
}

impl Project {
    /// Open (or create, or rebuild if unreadable) the index of `root` under `data_dir`.
    pub fn open(
        root: PathBuf,
        data_dir: &Path,
        limits: Limits,
        watch_config: WatchConfig,
        search: SearchConfig,
    ) -> Result<Arc<Project>, IndexError> {
        let dir = project_dir(data_dir, &root);
        let index = match open_index(&dir, &root) {
            Ok(index) => index,
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "index unreadable; rebuilding");
                let _ = std::fs::remove_dir_all(&dir);
                let index = open_index(&dir, &root)?;
                *index
                    .progress
                    .notice
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) =
                    Some(format!("the index was rebuilt: {e}"));
                index
            }
        };
        let recovered = writer::recover(&index)?;
        if recovered > 0 {
            tracing::info!(root = %root.display(), recovered, "recovered an interrupted commit");
        }
        if let Some(embedding) = &search.embedding {
            let model = embedding.embedder.model_id();
            if let Some(queued) = writer::adopt_model(&index, &model)? {
                tracing::info!(root = %root.display(), %model, queued, "vectors reset for the embedder's model");
            }
        }
        index.refresh_counts();
        let index = Arc::new(index);
        let (writer, writer_thread) = writer::spawn(index.clone())?;
        let (changes_tx, changes_rx) = std::sync::mpsc::channel::<Vec<PathBuf>>();
        let project_root = root.clone();
        let embed_stop = Arc::new(AtomicBool::new(false));
        let embed_thread = match &search.embedding {
            Some(embedding) => match crate::embedding::spawn(
                index.clone(),
                writer.clone(),
                embedding.clone(),
                embed_stop.clone(),
            ) {
                Ok(thread) => Some(thread),
                Err(e) => {
                    tracing::error!(error = %e, "cannot start the embedding worker");
                    None
                }
            },
            None => None,
        };
        let project = Arc::new(Project {
            root,
            index,
            writer: Some(writer),
            writer_thread: Mutex::new(Some(writer_thread)),
            limits,
            pass_running: AtomicBool::new(false),
            pass_requested: AtomicBool::new(false),
            update_lock: Mutex::new(()),
            watch: ProjectWatch::start(watch_config, project_root, changes_tx),
            poller_started: AtomicBool::new(false),
            last_used_ms: AtomicU64::new(now_ms()),
            search,
            embed_stop,
            embed_thread: Mutex::new(embed_thread),
        });
        // The updater holds only a weak reference: an unloaded project stops it.
        let weak = Arc::downgrade(&project);
        let spawned = std::thread::Builder::new()
            .name("amanmcp-updater".into())
            .spawn(move || {
                while let Ok(mut paths) = changes_rx.recv() {
                    while let Ok(more) = changes_rx.try_recv() {
                        paths.extend(more);
                    }
                    let Some(project) = weak.upgrade() else { break };
                    project.apply_changes(paths);
                }
            });
        if let Err(e) = spawned {
            project.watch.stop();
            tracing::error!(error = %e, "cannot start the file updater; changes are seen on reconcile only");
        }
        Ok(project)
    }

    fn writer(&self) -> &WriterHandle {
        self.writer
            .as_ref()
            .expect("the writer lives as long as the project")
    }

    /// Note a request for this project (for idle unloading).
    pub fn touch(&self) {
        self.last_used_ms.store(now_ms(), Ordering::Relaxed);
    }

    /// Milliseconds since the last request.
    pub fn idle_ms(&self) -> u64 {
        now_ms().saturating_sub(self.last_used_ms.load(Ordering::Relaxed))
    }

    /// Apply a batch of file events: re-check the directories they touched, or run a full
    /// pass for storms and ignore-file changes.
    fn apply_changes(self: &Arc<Self>, paths: Vec<PathBuf>) {
        let mut full = paths.len() > STORM_PATHS;
        let mut scopes: std::collections::BTreeMap<String, bool> =
            std::collections::BTreeMap::new();
        for path in &paths {
            // The watcher sends the root itself when the OS dropped events: re-check all.
            if path == &self.root {
                full = true;
                break;
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if crate::scan::IGNORE_FILES.contains(&name) {
                full = true;
                break;
            }
            // Not UTF-8: never indexed, nothing to re-check.
            let Some(rel) = crate::scan::relative_path(&self.root, path) else {
                continue;
            };
            let parent = rel.rsplit_once('/').map_or("", |(p, _)| p).to_string();
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.is_dir() => {
                    scopes.insert(rel, true);
                }
                Ok(_) => {}
                // Gone: it may have been a directory with indexed files below it.
                Err(_) => {
                    self.watch.forget_dir(path);
                    scopes.insert(rel, true);
                }
            }
            scopes.entry(parent).or_insert(false);
        }
        if full || scopes.len() > STORM_DIRS {
            self.start_reconcile();
            return;
        }
        let _guard = self.update_lock.lock().unwrap_or_else(|e| e.into_inner());
        let started = std::time::Instant::now();
        let mut walked = std::collections::HashMap::new();
        let scopes: Vec<crate::indexer::DirScope> = scopes
            .into_iter()
            .filter(|(rel, _)| {
                // A vanished directory is re-checked so its files are removed; an existing
                // one only if the walk would enter it (not ignored, not hidden).
                !self.root.join(rel).exists()
                    || crate::scan::dir_is_walked(&self.root, rel, &mut walked)
            })
            .map(|(rel, recursive)| crate::indexer::DirScope { rel, recursive })
            .collect();
        if scopes.is_empty() {
            return;
        }
        let watch = &self.watch;
        match crate::indexer::update(
            &self.root,
            &self.index,
            self.writer(),
            self.limits,
            &scopes,
            &mut |dir| watch.watch_dir(dir),
        ) {
            Ok(stats) => tracing::debug!(
                ?stats,
                paths = paths.len(),
                scopes = scopes.len(),
                ms = started.elapsed().as_secs_f64() * 1e3,
                "applied file events"
            ),
            // Counts are refreshed by the writer's commit (there is none when nothing changed).
            Err(message) => self.index.progress.set_error(message),
        }
        drop(_guard);
        self.ensure_poller();
    }

    /// In polling mode, run a reconcile pass every poll interval (until unloaded).
    fn ensure_poller(self: &Arc<Self>) {
        if !matches!(self.watch.mode(), WatchMode::Polling(_))
            || self.poller_started.swap(true, Ordering::SeqCst)
        {
            return;
        }
        let weak = Arc::downgrade(self);
        let interval = self.watch.poll_interval();
        let _ = std::thread::Builder::new()
            .name("amanmcp-poller".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(interval);
                    let Some(project) = weak.upgrade() else { break };
                    project.start_reconcile();
                }
            });
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Start a reconcile pass in the background, unless one is running (then it reruns
    /// once the current pass ends).
    pub fn start_reconcile(self: &Arc<Self>) {
        // Callers see `indexing` as soon as this returns, not once the thread starts.
        self.index.progress.set_state(IndexState::Indexing);
        self.pass_requested.store(true, Ordering::SeqCst);
        if self.pass_running.swap(true, Ordering::SeqCst) {
            return;
        }
        let project = self.clone();
        let spawned = std::thread::Builder::new()
            .name("amanmcp-indexer".into())
            .spawn(move || {
                while project.pass_requested.swap(false, Ordering::SeqCst) {
                    project.run_pass();
                }
                project.pass_running.store(false, Ordering::SeqCst);
                // A request that raced with the end of the loop starts a new thread.
                if project.pass_requested.load(Ordering::SeqCst) {
                    project.start_reconcile();
                }
            });
        if let Err(e) = spawned {
            self.pass_running.store(false, Ordering::SeqCst);
            self.index
                .progress
                .set_error(format!("cannot start indexer: {e}"));
        }
    }

    fn run_pass(self: &Arc<Self>) {
        let progress = &self.index.progress;
        progress.set_state(IndexState::Indexing);
        let guard = self.update_lock.lock().unwrap_or_else(|e| e.into_inner());
        let watch = &self.watch;
        let outcome = crate::indexer::reconcile(
            &self.root,
            &self.index,
            self.writer(),
            self.limits,
            &mut |dir| watch.watch_dir(dir),
        );
        drop(guard);
        self.ensure_poller();
        match outcome {
            Ok(()) => {
                *progress
                    .last_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = None;
                progress.set_state(IndexState::Ready);
            }
            Err(message) => {
                tracing::error!(root = %self.root.display(), %message, "indexing pass failed");
                progress.set_error(message);
            }
        }
        progress.pass_finished();
    }

    /// A snapshot of the project's status.
    pub fn status(&self) -> ProjectStatus {
        let p = &self.index.progress;
        let skipped = SKIP_REASONS
            .iter()
            .zip(&p.skipped)
            .map(|(reason, n)| (reason.label(), n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect();
        let pending = p.pending.load(Ordering::Relaxed);
        let chunks = p.chunks.load(Ordering::Relaxed);
        let vectors = self.search.embedding.as_ref().map(|embedding| {
            let health = match self.index.embed_progress.last_error() {
                Some(error) => format!("error: {error}"),
                None => embedding.health.summary(),
            };
            VectorStatus {
                model: embedding.embedder.model_id(),
                embedder: embedding.embedder.describe(),
                embedded: chunks.saturating_sub(pending),
                pending,
                rate: self.index.embed_progress.rate(),
                health,
            }
        });
        // Ready means searchable in full: the lexical index and the vectors.
        let state = match p.state() {
            IndexState::Ready if vectors.as_ref().is_some_and(|v| v.pending > 0) => {
                IndexState::Indexing
            }
            state => state,
        };
        ProjectStatus {
            root: self.root.clone(),
            state,
            files: p.files.load(Ordering::Relaxed),
            chunks,
            files_done: p.files_done.load(Ordering::Relaxed),
            files_total: p.files_total.load(Ordering::Relaxed),
            index_bytes: p.index_bytes.load(Ordering::Relaxed),
            source_bytes: p.source_bytes.load(Ordering::Relaxed),
            skipped,
            last_error: p
                .last_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            last_pass_ms: p.last_pass_ms.load(Ordering::Relaxed),
            passes: p.passes.load(Ordering::Acquire),
            last_pass_changed: p.last_pass_changed.load(Ordering::Relaxed),
            last_pass_removed: p.last_pass_removed.load(Ordering::Relaxed),
            notice: p.notice.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            watch: match self.watch.mode() {
                WatchMode::Events => format!("events ({} directories)", self.watch.watched()),
                WatchMode::Polling(why) => format!("polling: {why}"),
                WatchMode::Off => "off".into(),
            },
            vectors,
        }
    }

    /// Search the project. Answers from whatever is committed, even mid-pass.
    pub fn search(&self, params: &SearchParams) -> Result<SearchOutcome, Error> {
        if params.query.trim().is_empty() {
            return Err(UserError::InvalidArgument {
                name: "query",
                reason: "must not be empty".into(),
            }
            .into());
        }
        self.wait_for_first_commit();
        let (paths, language) = self.filters(params)?;
        let mentioned = self.mentioned_files(&params.query)?;
        let lexical_query = |offset, limit| LexicalQuery {
            text: &params.query,
            paths: paths.as_deref(),
            language: language.as_deref(),
            offset,
            limit,
            more_like_this: false,
            mentioned: &mentioned,
        };
        if params.mode == SearchMode::Lexical {
            let (hits, total) = self
                .index
                .lexical
                .search(&lexical_query(params.offset, params.limit))?;
            return Ok(self.outcome(hits, total as u64, params.offset, Semantic::NotUsed));
        }
        let depth = (params.offset + params.limit).max(FUSION_DEPTH);
        let semantic = self.semantic_ranking(
            |embedding| embedding.embed_query(&params.query),
            depth,
            paths.as_deref(),
            language.as_deref(),
        );
        let (ranking, complete) = match semantic {
            Ok(found) => found,
            Err(reason) => {
                // No vectors to be had: answer lexically, and say so.
                let (hits, total) = self
                    .index
                    .lexical
                    .search(&lexical_query(params.offset, params.limit))?;
                return Ok(self.outcome(
                    hits,
                    total as u64,
                    params.offset,
                    Semantic::Unavailable(reason),
                ));
            }
        };
        let (lexical_hits, lexical_total) = match params.mode {
            SearchMode::Semantic => (Vec::new(), 0),
            _ => self.index.lexical.search(&lexical_query(0, depth))?,
        };
        let n_terms = crate::query::weighted_terms(&params.query).len();
        let fusion = self.search.fusion.for_query(n_terms);
        let (mut hits, total) =
            self.fused(lexical_hits, lexical_total as u64, &ranking, &fusion, None)?;
        if params.mode == SearchMode::Hybrid {
            crate::hybrid::pin_definitions(&params.query, &mut hits, |h| h.symbol.as_deref());
        }
        let hits: Vec<LexicalHit> = hits
            .into_iter()
            .skip(params.offset)
            .take(params.limit)
            .collect();
        Ok(self.outcome(hits, total, params.offset, Semantic::Used { complete }))
    }

    /// Indexed files the query names: by path (a suffix of an indexed path, so absolute and
    /// site-packages paths match too) or by a file name that only a few files have.
    fn mentioned_files(&self, query: &str) -> Result<Vec<String>, Error> {
        let mentions = crate::query::path_mentions(query);
        if mentions.is_empty() {
            return Ok(Vec::new());
        }
        let paths = self.index.store.all_paths()?;
        let mut out = Vec::new();
        for mention in &mentions {
            // The longest suffix of the mention that is an indexed path, else the paths that
            // end with it.
            let parts: Vec<&str> = mention.split('/').collect();
            let found: Vec<&String> = (0..parts.len())
                .map(|i| parts[i..].join("/"))
                .find_map(|suffix| {
                    let slashed = format!("/{suffix}");
                    let hits: Vec<&String> = paths
                        .iter()
                        .filter(|p| **p == suffix || p.ends_with(&slashed))
                        .collect();
                    (!hits.is_empty()).then_some(hits)
                })
                .unwrap_or_default();
            if found.len() <= MAX_MENTIONED_MATCHES {
                out.extend(found.into_iter().cloned());
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    fn outcome(
        &self,
        hits: Vec<LexicalHit>,
        total: u64,
        offset: usize,
        semantic: Semantic,
    ) -> SearchOutcome {
        SearchOutcome {
            truncated: total > (offset + hits.len()) as u64,
            hits,
            total,
            status: self.status(),
            semantic,
        }
    }

    /// Chunk ids nearest to the query vector, best first, within the filters; and whether
    /// every chunk had its vector. `Err` says why vectors cannot be used.
    fn semantic_ranking(
        &self,
        query_vector: impl FnOnce(
            &crate::embed::Embedding,
        ) -> Result<Arc<Vec<f32>>, crate::embed::EmbedError>,
        depth: usize,
        paths: Option<&[String]>,
        language: Option<&str>,
    ) -> Result<(Vec<u64>, bool), String> {
        let Some(embedding) = &self.search.embedding else {
            return Err("semantic search is off (AMANMCP_EMBEDDER=off)".into());
        };
        let vector = query_vector(embedding).map_err(|e| e.to_string())?;
        let candidates = match (paths, language) {
            (None, None) => None,
            _ => Some(
                self.chunk_filter(paths, language)
                    .map_err(|e| e.to_string())?,
            ),
        };
        let found = self
            .index
            .store
            .nearest(&vector, depth, candidates.as_ref(), self.search.search_k)
            .map_err(|e| e.to_string())?;
        let complete = self.index.progress.pending.load(Ordering::Relaxed) == 0;
        Ok((found.into_iter().map(|(id, _)| id).collect(), complete))
    }

    /// Chunk ids of the files passing the path and language filters.
    fn chunk_filter(
        &self,
        paths: Option<&[String]>,
        language: Option<&str>,
    ) -> Result<roaring::RoaringBitmap, IndexError> {
        let files = self.index.store.all_files()?;
        let wanted: Option<std::collections::HashSet<&str>> =
            paths.map(|p| p.iter().map(String::as_str).collect());
        let mut out = roaring::RoaringBitmap::new();
        for (path, record) in &files {
            if wanted.as_ref().is_some_and(|w| !w.contains(path.as_str())) {
                continue;
            }
            if language.is_some_and(|l| record.language != l) {
                continue;
            }
            out.extend(
                record
                    .chunk_ids
                    .iter()
                    .filter_map(|id| u32::try_from(*id).ok()),
            );
        }
        Ok(out)
    }

    /// Fuse a lexical page (from rank 0) with a semantic ranking, fetch the hits only the
    /// vectors found, drop overlapping and `excluded` hits. Returns every fused hit, best
    /// first, and the total number of matches.
    fn fused(
        &self,
        lexical_hits: Vec<LexicalHit>,
        lexical_total: u64,
        semantic: &[u64],
        fusion: &crate::hybrid::Fusion,
        excluded: Option<&dyn Fn(&LexicalHit) -> bool>,
    ) -> Result<(Vec<LexicalHit>, u64), Error> {
        let lexical_ids: Vec<u64> = lexical_hits.iter().map(|h| h.chunk_id).collect();
        let fused = fusion.fuse(&lexical_ids, semantic);
        let mut by_id: std::collections::HashMap<u64, LexicalHit> =
            lexical_hits.into_iter().map(|h| (h.chunk_id, h)).collect();
        let missing: Vec<u64> = fused
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !by_id.contains_key(id))
            .collect();
        let semantic_only = missing.len() as u64;
        by_id.extend(self.index.lexical.chunks_by_id(&missing)?);
        let hits: Vec<LexicalHit> = fused
            .into_iter()
            .filter_map(|(id, score)| {
                by_id.remove(&id).map(|mut hit| {
                    hit.score = score;
                    hit
                })
            })
            .filter(|hit| excluded.is_none_or(|excluded| !excluded(hit)))
            .collect();
        let keep = crate::hybrid::without_overlaps(
            hits.iter()
                .map(|h| (h.path.as_str(), h.start_line, h.end_line)),
        );
        let n_found = hits.len();
        let mut keep = keep.into_iter().peekable();
        let hits: Vec<LexicalHit> = hits
            .into_iter()
            .enumerate()
            .filter_map(|(i, hit)| (keep.next_if_eq(&i).is_some()).then_some(hit))
            .collect();
        let dropped = (n_found - hits.len()) as u64;
        let total = (lexical_total + semantic_only)
            .saturating_sub(dropped)
            .max(hits.len() as u64);
        Ok((hits, total))
    }

    /// The page size, path filter (the glob expanded to indexed paths) and language filter
    /// shared by every search-shaped request, validated.
    fn filters(
        &self,
        params: &SearchParams,
    ) -> Result<(Option<Vec<String>>, Option<String>), Error> {
        if params.limit == 0 || params.limit > MAX_LIMIT {
            return Err(UserError::InvalidArgument {
                name: "limit",
                reason: format!("must be between 1 and {MAX_LIMIT}, got {}", params.limit),
            }
            .into());
        }
        let paths = match params.path_glob.as_deref().filter(|g| !g.is_empty()) {
            Some(glob) => Some(self.paths_matching(glob)?),
            None => None,
        };
        let language = params
            .language
            .as_deref()
            .filter(|l| !l.is_empty())
            .map(str::to_ascii_lowercase);
        Ok((paths, language))
    }

    /// Code similar to a reference (see [`crate::lookup::reference`]), the reference excluded:
    /// the reference's distinctive terms (BM25 "more like this") fused with its vector's
    /// nearest chunks.
    pub fn similar(
        &self,
        reference: &crate::lookup::Reference,
        params: &SearchParams,
    ) -> Result<SearchOutcome, Error> {
        self.wait_for_first_commit();
        let (paths, language) = self.filters(params)?;
        let found = crate::lookup::reference(&self.root, &self.index.store, reference)?;
        let overlaps = |hit: &LexicalHit| {
            found.location.as_ref().is_some_and(|(path, start, end)| {
                &hit.path == path && hit.start_line <= *end && *start <= hit.end_line
            })
        };
        // Fetch more than asked: hits overlapping the reference are dropped.
        let depth = (params.limit + 8).max(FUSION_DEPTH);
        let (lexical_hits, lexical_total) = match params.mode {
            SearchMode::Semantic => (Vec::new(), 0),
            _ => self.index.lexical.search(&LexicalQuery {
                text: &found.text,
                paths: paths.as_deref(),
                language: language.as_deref(),
                offset: 0,
                limit: depth,
                more_like_this: true,
                mentioned: &[],
            })?,
        };
        let (ranking, semantic) = match params.mode {
            SearchMode::Lexical => (Vec::new(), Semantic::NotUsed),
            _ => {
                let text = crate::embedding::document_text(
                    found
                        .location
                        .as_ref()
                        .map_or("", |(path, _, _)| path.as_str()),
                    None,
                    &found.text,
                );
                match self.semantic_ranking(
                    |embedding| {
                        embedding
                            .embed_documents(std::slice::from_ref(&text))?
                            .pop()
                            .map(Arc::new)
                            .ok_or_else(|| {
                                crate::embed::EmbedError::Model("no vector returned".into())
                            })
                    },
                    depth,
                    paths.as_deref(),
                    language.as_deref(),
                ) {
                    Ok((ranking, complete)) => (ranking, Semantic::Used { complete }),
                    Err(reason) => (Vec::new(), Semantic::Unavailable(reason)),
                }
            }
        };
        let excluded = |hit: &LexicalHit| overlaps(hit);
        let (hits, total) = self.fused(
            lexical_hits,
            lexical_total as u64,
            &ranking,
            &self.search.fusion,
            Some(&excluded),
        )?;
        let hits: Vec<LexicalHit> = hits.into_iter().take(params.limit).collect();
        Ok(self.outcome(hits, total, 0, semantic))
    }

    /// Code by path and/or symbol (see [`crate::lookup`]).
    pub fn lookup(
        &self,
        params: &crate::lookup::LookupParams,
    ) -> Result<Vec<crate::lookup::LookupMatch>, Error> {
        self.wait_for_first_commit();
        crate::lookup::lookup(&self.root, &self.index.store, params)
    }

    /// Wait (bounded) for the running pass to end, then check consistency.
    pub fn verify(&self) -> Result<crate::verify::VerifyReport, Error> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        while (self.pass_running.load(Ordering::SeqCst)
            || self.index.progress.passes.load(Ordering::Acquire) == 0)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _guard = self.update_lock.lock().unwrap_or_else(|e| e.into_inner());
        Ok(crate::verify::verify(&self.root, &self.index, self.limits)?)
    }

    /// Re-check one path (file or directory, relative or absolute inside the root) now.
    pub fn reindex_path(self: &Arc<Self>, path: &str) -> Result<(), Error> {
        let rel = crate::lookup::relative_inside(&self.root, path)?;
        self.apply_changes(vec![self.root.join(rel)]);
        Ok(())
    }

    /// Indexed files in path order: a page, and the total.
    pub fn list_files(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<(String, crate::store::FileRecord)>, u64), Error> {
        self.wait_for_first_commit();
        Ok(self.index.store.files_page(offset, limit)?)
    }

    /// A brand-new index has nothing to answer from: give its first pass a moment (bounded)
    /// to commit something, so the first search of a small project is not empty.
    fn wait_for_first_commit(&self) {
        let progress = &self.index.progress;
        let deadline = std::time::Instant::now() + FIRST_COMMIT_WAIT;
        while progress.state() == IndexState::Indexing
            && progress.files.load(Ordering::Relaxed) == 0
            && progress.passes.load(Ordering::Acquire) == 0
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    fn paths_matching(&self, glob: &str) -> Result<Vec<String>, Error> {
        let pattern = if glob.ends_with('/') {
            format!("{glob}**")
        } else {
            glob.to_string()
        };
        let matcher = GlobBuilder::new(&pattern)
            .literal_separator(false)
            .build()
            .map_err(|e| UserError::InvalidArgument {
                name: "path",
                reason: format!("bad glob {glob:?}: {e}"),
            })?
            .compile_matcher();
        let files = self.index.store.all_files()?;
        Ok(files
            .into_keys()
            .filter(|path| matcher.is_match(path))
            .collect())
    }
}

fn open_index(dir: &Path, root: &Path) -> Result<ProjectIndex, IndexError> {
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
    // arroy item ids are 32-bit: an index whose chunk ids ran past that is rebuilt.
    if store.next_chunk_id()? > u64::from(u32::MAX) {
        return Err(IndexError::io(
            dir,
            std::io::Error::other("chunk ids exhausted"),
        ));
    }
    let lexical = Lexical::open(&dir.join("tantivy"))?;
    Ok(ProjectIndex {
        store,
        lexical,
        progress: Progress::default(),
        embed_wake: Wake::default(),
        embed_progress: EmbedProgress::default(),
    })
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
