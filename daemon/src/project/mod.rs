//! One loaded project: opens (or rebuilds) its index, runs its writer, watcher and embedding
//! worker, and turns file events into indexing passes; what it answers is in [`answers`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, IndexError};
use crate::files::scan::Limits;
use crate::index::progress::IndexState;
use crate::index::writer::{self, WriterHandle};
use crate::index::{ProjectIndex, open_index, project_dir, startup};
use crate::search::SearchConfig;
use crate::watch::{ProjectWatch, WatchConfig, WatchMode};

mod answers;
mod damage;
mod status;
pub use answers::SearchOutcome;
pub use status::{ProjectStatus, VectorStatus};

/// A loaded project.
pub struct Project {
    root: PathBuf,
    /// The index's directory under the data directory.
    dir: PathBuf,
    index: Arc<ProjectIndex>,
    /// `None` only while dropping (so the writer sees its channel close).
    writer: Option<WriterHandle>,
    writer_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    limits: Limits,
    pass_running: AtomicBool,
    pass_requested: AtomicBool,
    /// The next full pass reads every file, whatever its size and mtime say.
    reread_requested: AtomicBool,
    /// Held by a full pass and by an event update, so the two never interleave.
    update_lock: Mutex<()>,
    watch: ProjectWatch,
    poller_started: AtomicBool,
    /// Seconds before a failed pass is tried again (doubling to a minute; 0 after success).
    retry_secs: std::sync::atomic::AtomicU64,
    /// A retry is scheduled (failures meanwhile do not schedule more).
    retry_pending: AtomicBool,
    last_used_ms: AtomicU64,
    search: SearchConfig,
    /// The code graph's resolved mentions, kept across requests.
    graph_memo: crate::search::graph::memo::Memo,
    embed_stop: Arc<AtomicBool>,
    embed_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Damage a read ran into while loaded: the registry reopens it, rebuilding the index.
    damage: Mutex<Option<String>>,
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
        let mut closed_whole = self.damage().is_none();
        if let Some(thread) = self
            .writer_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            closed_whole &= thread.join().is_ok();
        }
        // Nothing writes to the index any more: the next open need not read it all again
        // while its files stay as they are now.
        if closed_whole {
            crate::index::health::mark_closed_whole(&self.dir);
        }
    }
}

impl Project {
    /// Open (or create, or rebuild if unreadable or damaged) the index of `root` under
    /// `data_dir`; `known_damage`: what a read ran into (rebuilt without checking again).
    pub fn open(
        root: PathBuf,
        data_dir: &Path,
        limits: Limits,
        watch_config: WatchConfig,
        search: SearchConfig,
        known_damage: Option<String>,
    ) -> Result<Arc<Project>, IndexError> {
        let dir = project_dir(data_dir, &root);
        // Taken away whatever follows: from here on the index is open, or rebuilt.
        let closed_whole = crate::index::health::take_closed_whole(&dir);
        let damage = known_damage.or_else(|| crate::index::health::damage(&dir, closed_whole));
        let damaged = damage.map(|reason| {
            let aside = crate::index::health::set_aside(&dir);
            tracing::error!(dir = %dir.display(), %reason, aside = ?aside, "index damaged; rebuilding it");
            match aside {
                Some(aside) => format!(
                    "the index was damaged ({reason}); it was moved to {} and is rebuilt from the files",
                    aside.display()
                ),
                None => format!("the index was damaged ({reason}); it is rebuilt from the files"),
            }
        });
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
        if damaged.is_some() {
            *index
                .progress
                .notice
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = damaged;
        }
        if let Err(e) = crate::index::record_root(&dir, &root) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot record the project's root");
        }
        let recovered = startup::recover(&index)?;
        if recovered > 0 {
            tracing::info!(root = %root.display(), recovered, "recovered an interrupted commit");
        }
        if let Some(embedding) = &search.embedding {
            let model = embedding.embedder.model_id();
            if let Some(queued) = startup::adopt_model(&index, &model)? {
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
            Some(embedding) => match crate::embed::worker::spawn(
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
            dir,
            index,
            writer: Some(writer),
            writer_thread: Mutex::new(Some(writer_thread)),
            limits,
            pass_running: AtomicBool::new(false),
            pass_requested: AtomicBool::new(false),
            reread_requested: AtomicBool::new(false),
            update_lock: Mutex::new(()),
            watch: ProjectWatch::start(watch_config, project_root, changes_tx),
            poller_started: AtomicBool::new(false),
            retry_secs: std::sync::atomic::AtomicU64::new(0),
            retry_pending: AtomicBool::new(false),
            last_used_ms: AtomicU64::new(now_ms()),
            search,
            graph_memo: Default::default(),
            embed_stop,
            embed_thread: Mutex::new(embed_thread),
            damage: Mutex::new(None),
        });
        // The updater holds only a weak reference: an unloaded project stops it.
        let weak = Arc::downgrade(&project);
        let spawned = std::thread::Builder::new()
            .name("amanmcp-updater".into())
            .spawn(move || {
                crate::nice::step_back(crate::nice::INDEXING);
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
    /// Whether the index is complete (vectors too) and its LMDB file mostly free pages, so
    /// that reopening the project would give disk back (see `index::store::compact`).
    pub fn wants_compaction(&self) -> bool {
        let p = &self.index.progress;
        p.state() == IndexState::Ready
            && p.pending.load(std::sync::atomic::Ordering::Relaxed) == 0
            && self.index.store.worth_compacting()
    }

    /// Give back the resident pages of the project's maps: its LMDB file's and its lexical
    /// segment files'.
    pub fn release_mapped_pages(&self) {
        self.index.store.release_mapped_pages();
        self.index.lexical.release_mapped_pages();
    }

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
            if crate::files::scan::IGNORE_FILES.contains(&name) {
                full = true;
                break;
            }
            // Not UTF-8: never indexed, nothing to re-check.
            let Some(rel) = crate::files::scan::relative_path(&self.root, path) else {
                continue;
            };
            let parent = rel.rsplit_once('/').map_or("", |(p, _)| p).to_string();
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.is_dir() => {
                    scopes.insert(rel, true);
                }
                Ok(meta) if meta.is_file() => {}
                // Gone, or now a symlink or other non-directory: it may have been a directory
                // with indexed files below it, which must go (a symlink is never followed).
                _ => {
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
        let scopes: Vec<crate::index::pipeline::DirScope> = scopes
            .into_iter()
            .filter(|(rel, _)| {
                // A vanished directory (or one replaced by a symlink) is re-checked so its
                // files are removed; a real one only if the walk would enter it (not
                // ignored, not hidden).
                !std::fs::symlink_metadata(self.root.join(rel)).is_ok_and(|m| m.is_dir())
                    || crate::files::scan::dir_is_walked(&self.root, rel, &mut walked)
            })
            .map(|(rel, recursive)| crate::index::pipeline::DirScope { rel, recursive })
            .collect();
        if scopes.is_empty() {
            return;
        }
        let watch = &self.watch;
        match crate::index::pipeline::update(
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
            // A failed update leaves LMDB behind the disk: a full pass repairs it.
            Err(error) => {
                self.index.progress.set_error(error.explained());
                drop(_guard);
                self.start_reconcile();
                return;
            }
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
        // Callers see the pass's state as soon as this returns, not once the thread starts.
        self.index.progress.pass_starting();
        self.pass_requested.store(true, Ordering::SeqCst);
        if self.pass_running.swap(true, Ordering::SeqCst) {
            return;
        }
        let project = self.clone();
        let spawned = std::thread::Builder::new()
            .name("amanmcp-indexer".into())
            .spawn(move || {
                crate::nice::step_back(crate::nice::INDEXING);
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

    /// Start a full pass that reads every file and compares its content (what a person
    /// asks for with `amanctl index` or the `reindex` tool), unless one is running (then it
    /// reruns once the current pass ends).
    pub fn start_reread(self: &Arc<Self>) {
        self.reread_requested.store(true, Ordering::SeqCst);
        self.start_reconcile();
    }

    fn run_pass(self: &Arc<Self>) {
        let progress = &self.index.progress;
        progress.pass_starting();
        let guard = self.update_lock.lock().unwrap_or_else(|e| e.into_inner());
        let started = std::time::Instant::now();
        let watch = &self.watch;
        let reread = self.reread_requested.swap(false, Ordering::SeqCst);
        let outcome = crate::index::pipeline::reconcile(
            &self.root,
            &self.index,
            self.writer(),
            self.limits,
            reread,
            &mut |dir| watch.watch_dir(dir),
        );
        drop(guard);
        self.ensure_poller();
        match outcome {
            Ok(quick) => {
                // File events wait for a pass (it holds the update lock): this is how long.
                tracing::debug!(
                    ms = started.elapsed().as_secs_f64() * 1e3,
                    quick,
                    "pass ended"
                );
                // A quick pass left its new files chunked by lines: chunk them by syntax now.
                if quick {
                    self.pass_requested.store(true, Ordering::SeqCst);
                }
                *progress
                    .last_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = None;
                progress.matched();
                self.retry_secs.store(0, Ordering::Relaxed);
            }
            Err(error) => {
                let message = error.explained();
                tracing::error!(root = %self.root.display(), error = %message, "indexing pass failed");
                progress.set_error(message);
                self.retry_later();
            }
        }
        progress.pass_finished();
    }

    /// A project left in error by a failed commit that no pass was waiting on (the vectors
    /// of a full disk) gets a pass, as a failed pass does (the registry's janitor asks).
    pub fn repair_if_failed(self: &Arc<Self>) {
        if self.index.progress.state() == IndexState::Error
            && !self.pass_running.load(Ordering::SeqCst)
        {
            self.retry_later();
        }
    }

    /// After a failed pass, run another once the cause may have cleared: in 1 s, then 2, 4,
    /// ... up to a minute between tries, while the project is loaded. The pass re-reads
    /// every file whose LMDB record does not match the disk, which is what the failure
    /// left behind.
    fn retry_later(self: &Arc<Self>) {
        if self.retry_pending.swap(true, Ordering::SeqCst) {
            return;
        }
        let secs = match self.retry_secs.load(Ordering::Relaxed) {
            0 => 1,
            n => (n * 2).min(60),
        };
        self.retry_secs.store(secs, Ordering::Relaxed);
        let weak = Arc::downgrade(self);
        let _ = std::thread::Builder::new()
            .name("amanmcp-retry".into())
            .spawn(move || {
                std::thread::sleep(std::time::Duration::from_secs(secs));
                if let Some(project) = weak.upgrade() {
                    project.retry_pending.store(false, Ordering::SeqCst);
                    project.start_reconcile();
                }
            });
    }

    /// Wait (bounded) for the running pass to end, then check consistency.
    pub fn verify(&self) -> Result<crate::index::verify::VerifyReport, Error> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        while (self.pass_running.load(Ordering::SeqCst)
            || self.index.progress.passes.load(Ordering::Acquire) == 0)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _guard = self.update_lock.lock().unwrap_or_else(|e| e.into_inner());
        Ok(crate::index::verify::verify(
            &self.root,
            &self.index,
            self.limits,
        )?)
    }

    /// Re-check one path (file or directory, relative or absolute inside the root) now.
    /// A path that is neither on disk nor in the index is an error, not a no-op.
    pub fn reindex_path(self: &Arc<Self>, path: &str) -> Result<(), Error> {
        let rel = crate::search::lookup::relative_inside(&self.root, path)?;
        let key = crate::search::lookup::normalized(rel);
        let on_disk = std::fs::symlink_metadata(self.root.join(rel)).is_ok();
        let indexed = !key.is_empty()
            && (self.index.store.has_file(&key)?
                || !self.index.store.files_under(&key, true)?.is_empty());
        if !on_disk && !indexed {
            return Err(crate::error::UserError::InvalidArgument {
                name: "path",
                reason: format!("no such file or directory in the project: {path}"),
            }
            .into());
        }
        self.apply_changes(vec![self.root.join(rel)]);
        Ok(())
    }
}
