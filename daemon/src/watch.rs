//! File watching for one project.
//!
//! Every directory the indexing walk enters gets a non-recursive watch, so ignored trees
//! (`target/`, `node_modules/`) are never watched. Events are debounced and handed, as batches
//! of paths, to the project's updater (see `Project::apply_changes`). When the OS runs out of
//! watches (inotify `ENOSPC`) or the configured limit is reached, the project falls back to
//! periodic reconcile passes and says so in its status.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::Sender;
use std::time::Duration;

use notify::RecursiveMode;
use notify::event::{AccessKind, AccessMode, EventKind, MetadataKind, ModifyKind};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

/// Events closer together than this are handled as one batch.
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

type FileDebouncer = Debouncer<notify::RecommendedWatcher, RecommendedCache>;

/// The watches of one project.
pub struct ProjectWatch {
    debouncer: Mutex<Option<FileDebouncer>>,
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
            debouncer: Mutex::new(None),
            watched: Mutex::new(HashSet::new()),
            mode: Mutex::new(WatchMode::Off),
            config,
        };
        if !config.enabled {
            return watch;
        }
        let handler = move |result: DebounceEventResult| match result {
            Ok(events) => {
                let mut paths: Vec<PathBuf> = Vec::new();
                for event in events {
                    if event.need_rescan() {
                        paths.push(root.clone());
                        continue;
                    }
                    // Opening or reading a file changes nothing, and the indexer's own reads
                    // would otherwise come back as a batch of every file it just indexed.
                    // A close after writing is kept: it is the earliest sign a save is done.
                    let read_only = match event.kind {
                        EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
                        EventKind::Access(_) => true,
                        EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => true,
                        _ => false,
                    };
                    if read_only {
                        continue;
                    }
                    paths.extend(event.event.paths.iter().cloned());
                }
                if !paths.is_empty() {
                    let _ = changes.send(paths);
                }
            }
            Err(errors) => {
                for error in errors {
                    tracing::warn!(%error, "file watcher error");
                }
            }
        };
        match new_debouncer(DEBOUNCE, None, handler) {
            Ok(debouncer) => {
                *watch.debouncer.lock().unwrap_or_else(|e| e.into_inner()) = Some(debouncer);
                *watch.mode.lock().unwrap_or_else(|e| e.into_inner()) = WatchMode::Events;
            }
            Err(e) => watch.fall_back(format!("cannot start a file watcher: {e}")),
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
            let mut debouncer = self.debouncer.lock().unwrap_or_else(|e| e.into_inner());
            match debouncer.as_mut() {
                Some(debouncer) => debouncer.watch(dir, RecursiveMode::NonRecursive),
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
        // Dropping the debouncer removes every watch and stops its thread.
        self.debouncer
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
        self.debouncer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        *self.mode.lock().unwrap_or_else(|e| e.into_inner()) = WatchMode::Off;
    }
}
