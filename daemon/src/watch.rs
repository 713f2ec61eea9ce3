//! File watching for one project.
//!
//! Every directory the indexing walk enters gets a non-recursive watch, so ignored trees
//! (`target/`, `node_modules/`) are never watched. Events are gathered for [`DEBOUNCE`] after
//! the first of a batch and handed, as batches of paths, to the project's updater (see
//! `Project::apply_changes`). The thread that gathers them sleeps until an event comes: an
//! idle project costs no wake-ups (a polling debouncer woke 200 times a second per project).
//! When the OS runs out of watches (inotify `ENOSPC`) or the configured limit is reached, the
//! project falls back to periodic reconcile passes and says so in its status.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind, MetadataKind, ModifyKind};
use notify::{RecursiveMode, Watcher};

/// Events within this time of a batch's first are handled in that batch.
pub const DEBOUNCE: Duration = Duration::from_millis(20);

/// Watch settings.
#[derive(Debug, Clone, Copy)]
pub struct WatchConfig {
    /// Watch at all (`AMANMCP_WATCH=0` turns it off).
    pub enabled: bool,
    /// Most directories watched per project before falling back to polling.
    pub max_watches: usize,
    /// Interval of reconcile passes when polling.
    pub poll_interval: Duration,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            enabled: true,
            max_watches: 100_000,
            poll_interval: Duration::from_secs(15),
        }
    }
}

impl WatchConfig {
    /// Defaults, overridden by `AMANMCP_WATCH`, `AMANMCP_MAX_WATCHES`, `AMANMCP_POLL_SECS`.
    pub fn from_env() -> Self {
        let mut config = WatchConfig::default();
        let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
        if let Some(v) = var("AMANMCP_WATCH") {
            config.enabled = v != 0;
        }
        if let Some(v) = var("AMANMCP_MAX_WATCHES") {
            config.max_watches = v as usize;
        }
        if let Some(v) = var("AMANMCP_POLL_SECS") {
            config.poll_interval = Duration::from_secs(v.max(1));
        }
        config
    }
}

/// How a project notices changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchMode {
    /// OS file events.
    Events,
    /// Periodic reconcile passes, with why.
    Polling(String),
    /// Not watched.
    Off,
}

/// The watches of one project.
pub struct ProjectWatch {
    /// Dropping it removes every watch, and its event channel closes, which ends the thread
    /// gathering batches.
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    watched: Mutex<HashSet<PathBuf>>,
    mode: Mutex<WatchMode>,
    config: WatchConfig,
}

impl ProjectWatch {
    /// Start watching; batches of changed paths go to `changes`. A batch holding `root`
    /// itself asks for a full pass (the OS dropped events).
    pub fn start(
        config: WatchConfig,
        root: PathBuf,
        changes: Sender<Vec<PathBuf>>,
    ) -> ProjectWatch {
        let watch = ProjectWatch {
            watcher: Mutex::new(None),
            watched: Mutex::new(HashSet::new()),
            mode: Mutex::new(WatchMode::Off),
            config,
        };
        if !config.enabled {
            return watch;
        }
        let (events_tx, events) = std::sync::mpsc::channel();
        let watcher = match notify::recommended_watcher(events_tx) {
            Ok(watcher) => watcher,
            Err(e) => {
                watch.fall_back(format!("cannot start a file watcher: {e}"));
                return watch;
            }
        };
        let gathering = std::thread::Builder::new()
            .name("amanmcp-watch".into())
            .spawn(move || gather(&events, &root, &changes));
        match gathering {
            Ok(_) => {
                *watch.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher);
                *watch.mode.lock().unwrap_or_else(|e| e.into_inner()) = WatchMode::Events;
            }
            Err(e) => watch.fall_back(format!("cannot start the file watcher's thread: {e}")),
        }
        watch
    }

    /// The current mode.
    pub fn mode(&self) -> WatchMode {
        self.mode.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Number of directories watched.
    pub fn watched(&self) -> usize {
        self.watched.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Watch `dir` (non-recursively) if it is not watched yet.
    pub fn watch_dir(&self, dir: &Path) {
        if self.mode() != WatchMode::Events {
            return;
        }
        let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        if watched.contains(dir) {
            return;
        }
        if watched.len() >= self.config.max_watches {
            let n = watched.len();
            drop(watched);
            self.fall_back(format!(
                "watch limit reached ({n} directories, AMANMCP_MAX_WATCHES={})",
                self.config.max_watches
            ));
            return;
        }
        let outcome = {
            let mut watcher = self.watcher.lock().unwrap_or_else(|e| e.into_inner());
            match watcher.as_mut() {
                Some(watcher) => watcher.watch(dir, RecursiveMode::NonRecursive),
                None => return,
            }
        };
        match outcome {
            Ok(()) => {
                watched.insert(dir.to_path_buf());
            }
            Err(e) if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) => {
                let n = watched.len();
                drop(watched);
                self.fall_back(format!(
                    "the OS ran out of file watches after {n} directories (inotify ENOSPC)"
                ));
            }
            // The directory vanished meanwhile: the next event or pass handles it.
            Err(e) => tracing::debug!(dir = %dir.display(), error = %e, "cannot watch"),
        }
    }

    /// Forget a directory that no longer exists.
    pub fn forget_dir(&self, dir: &Path) {
        self.watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(dir);
    }

    fn fall_back(&self, reason: String) {
        tracing::warn!(%reason, "falling back to periodic reconcile");
        // Dropping the watcher removes every watch and ends the gathering thread.
        self.watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        *self.mode.lock().unwrap_or_else(|e| e.into_inner()) = WatchMode::Polling(reason);
    }

    /// The polling interval.
    pub fn poll_interval(&self) -> Duration {
        self.config.poll_interval
    }

    /// Stop watching.
    pub fn stop(&self) {
        self.watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        *self.mode.lock().unwrap_or_else(|e| e.into_inner()) = WatchMode::Off;
    }
}

/// Hand `changes` the paths of each batch of `events` (those within [`DEBOUNCE`] of the
/// batch's first), until the watcher is dropped. Blocks while no event comes.
fn gather(
    events: &Receiver<notify::Result<notify::Event>>,
    root: &Path,
    changes: &Sender<Vec<PathBuf>>,
) {
    while let Ok(first) = events.recv() {
        let deadline = Instant::now() + DEBOUNCE;
        let mut batch = vec![first];
        let mut open = true;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match events.recv_timeout(left) {
                Ok(event) => batch.push(event),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        let paths = changed_paths(batch, root);
        if !paths.is_empty() && changes.send(paths).is_err() {
            return;
        }
        if !open {
            return;
        }
    }
}

/// The paths a batch of events may have changed, each once, in order; `root` itself when the
/// OS dropped events (a full pass re-checks everything).
fn changed_paths(batch: Vec<notify::Result<notify::Event>>, root: &Path) -> Vec<PathBuf> {
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut paths: Vec<PathBuf> = Vec::new();
    for event in batch {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(%error, "file watcher error");
                continue;
            }
        };
        if event.need_rescan() {
            if seen.insert(root.to_path_buf()) {
                paths.push(root.to_path_buf());
            }
            continue;
        }
        // Opening or reading a file changes nothing, and the indexer's own reads would
        // otherwise come back as a batch of every file it just indexed. A close after writing
        // is kept: it is the earliest sign a save is done.
        let read_only = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
            EventKind::Access(_) => true,
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => true,
            _ => false,
        };
        if read_only {
            continue;
        }
        for path in event.paths {
            if seen.insert(path.clone()) {
                paths.push(path);
            }
        }
    }
    paths
}
