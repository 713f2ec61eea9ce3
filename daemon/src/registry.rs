//! The projects a daemon has loaded, keyed by canonical root. Exactly one [`Project`] (and so
//! one LMDB environment and one writer) exists per root.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, UserError};
use crate::files::scan::Limits;
use crate::project::{Project, ProjectStatus};
use crate::search::SearchConfig;
use crate::watch::WatchConfig;

/// How long forgetting a project waits for requests still using it.
const FORGET_WAIT: Duration = Duration::from_secs(10);
/// How long a complete project must go unused before it is reopened to compact its index.
const SETTLE: Duration = Duration::from_secs(10);

/// A project with an index under the data directory.
#[derive(Debug, Clone)]
pub struct Indexed {
    /// Its root.
    pub root: PathBuf,
    /// Bytes of its index on disk.
    pub bytes: u64,
    /// Loaded in the daemon now.
    pub loaded: bool,
    /// When its index was last written.
    pub last_written: Option<std::time::SystemTime>,
}

impl Indexed {
    /// [`Indexed::last_written`] as Unix time in milliseconds (0: unknown).
    pub fn last_written_ms(&self) -> u64 {
        self.last_written
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as u64)
    }
}

/// Loaded projects.
pub struct Registry {
    data_dir: PathBuf,
    limits: Limits,
    watch: WatchConfig,
    idle_unload: Option<Duration>,
    search: SearchConfig,
    projects: Mutex<HashMap<PathBuf, Arc<Project>>>,
    /// One lock per root, held while that root's project opens (its index check, recovery,
    /// compaction), so a slow open holds up requests for that project only, never the
    /// others'. Forgetting a project holds it too.
    opening: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
}

impl Registry {
    /// An empty registry storing indexes under `data_dir`.
    /// Projects idle for `idle_unload` stop being watched and are unloaded (then reconciled
    /// when next used).
    pub fn new(
        data_dir: PathBuf,
        limits: Limits,
        watch: WatchConfig,
        idle_unload: Option<Duration>,
        search: SearchConfig,
    ) -> Arc<Registry> {
        let registry = Arc::new(Registry {
            data_dir,
            limits,
            watch,
            idle_unload,
            search,
            projects: Mutex::new(HashMap::new()),
            opening: Mutex::new(HashMap::new()),
        });
        let weak = Arc::downgrade(&registry);
        let tick = idle_unload.map_or(Duration::from_secs(30), |idle| {
            (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30))
        });
        let _ = std::thread::Builder::new()
            .name("amanmcp-janitor".into())
            .spawn(move || {
                crate::nice::step_back(crate::nice::INDEXING);
                loop {
                    std::thread::sleep(tick);
                    let Some(registry) = weak.upgrade() else {
                        break;
                    };
                    registry.unload_idle();
                    registry.compact_settled();
                    registry.release_settled_pages();
                    registry.bound_mapped_pages();
                    registry.repair_failed();
                }
            });
        registry
    }

    /// Reopen projects whose index is complete and whose LMDB file is mostly free pages
    /// (left by the vector commits of a first indexing), when nothing holds them and
    /// nobody has used them for [`SETTLE`]: opening compacts the file.
    pub fn compact_settled(&self) {
        let mut reopen = Vec::new();
        {
            let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
            projects.retain(|root, project| {
                let settled = Arc::strong_count(project) == 1
                    && project.idle_ms() >= SETTLE.as_millis() as u64
                    && project.wants_compaction();
                if settled {
                    tracing::info!(root = %root.display(), "reopening the project to compact its index");
                    reopen.push(root.clone());
                }
                !settled
            });
        }
        for root in reopen {
            if let Err(e) = self.open(&root.to_string_lossy(), true) {
                tracing::warn!(root = %root.display(), error = %e, "could not reopen the project after compaction");
            }
        }
    }

    /// Give back every loaded project's mapped pages, and the shared embedding cache's, when
    /// the mapped files resident pass the budget's share ([`crate::memory::Budget::mapped_bytes`]).
    /// A search reads index pages here and there, and the kernel maps the whole page-cache
    /// folio around each page read (up to 1 MB on a kernel with large folios): at 55,000
    /// files a burst of searches added 300-450 MB, the daemon's peak. Asked before every
    /// request and at every janitor tick; one caller gives them back at a time.
    pub fn bound_mapped_pages(&self) {
        static RELEASING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let bound = crate::memory::budget().mapped_bytes();
        if crate::memory::mapped_resident_bytes().is_none_or(|resident| resident <= bound)
            || RELEASING.swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        for project in self.loaded_projects() {
            project.release_mapped_pages();
        }
        if let Some(embedding) = &self.search.embedding {
            embedding.release_mapped_pages();
        }
        RELEASING.store(false, std::sync::atomic::Ordering::Release);
    }

    /// Give back the mapped pages searches read (`memory::release_mapped_pages`) of the
    /// projects nobody has used for [`SETTLE`], and of the shared embedding cache: the
    /// writer gives its own back after it commits, but pages a search reads stayed counted
    /// in the daemon's resident memory until the next commit.
    pub fn release_settled_pages(&self) {
        let mut any = false;
        for project in self.loaded_projects() {
            if project.idle_ms() >= SETTLE.as_millis() as u64 {
                project.release_mapped_pages();
                any = true;
            }
        }
        if any && let Some(embedding) = &self.search.embedding {
            embedding.release_mapped_pages();
        }
    }

    /// Give every loaded project left in error (a commit failed outside any pass) a pass,
    /// which brings it back once the cause has cleared.
    pub fn repair_failed(&self) {
        for project in self.loaded_projects() {
            project.repair_if_failed();
        }
    }

    /// Unload projects nobody has used for the idle time and nothing else holds.
    pub fn unload_idle(&self) {
        let Some(idle) = self.idle_unload else { return };
        let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        let idle_ms = idle.as_millis() as u64;
        projects.retain(|root, project| {
            let keep = Arc::strong_count(project) > 1 || project.idle_ms() < idle_ms;
            if !keep {
                tracing::info!(root = %root.display(), "unloading idle project");
            }
            keep
        });
    }

    /// Let go of every project nothing else holds (no pass running, no request), as the
    /// daemon stops: each one's writer makes its last commit and its index is marked closed
    /// whole, so the next start opens it without reading it all again
    /// (`index::health::take_closed_whole`). A project still busy is left to the process's
    /// exit, unmarked, and is read whole when next opened.
    pub fn close_unused(&self) {
        // Dropped under the lock, as `unload_idle` does: no request can open a project's
        // index again while its writer still makes its last commit.
        let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        projects.retain(|_, project| Arc::strong_count(project) > 1);
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The project at `root`, loading it (and starting its first pass) if needed. With
    /// `reconcile`, an already-loaded project is re-checked against the disk too.
    /// Blocking: call from a blocking context.
    pub fn open(&self, root: &str, reconcile: bool) -> Result<Arc<Project>, Error> {
        self.bound_mapped_pages();
        let root = canonical_root(root)?;
        if let Some(project) = self.loaded(&root, reconcile) {
            return Ok(project);
        }
        let gate = self.gate(&root);
        let _opening = gate.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(project) = self.loaded(&root, reconcile) {
            return Ok(project);
        }
        let damage = self.unload_damaged(&root);
        let project = Project::open(
            root.clone(),
            &self.data_dir,
            self.limits,
            self.watch,
            self.search.clone(),
            damage,
        )?;
        project.start_reconcile();
        self.projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(root, project.clone());
        Ok(project)
    }

    /// The loaded project at `root`, marked used (and re-checked, with `reconcile`); `None`
    /// also when a read found its index damaged (it is then reopened).
    fn loaded(&self, root: &Path, reconcile: bool) -> Option<Arc<Project>> {
        let projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        let project = projects.get(root).filter(|p| p.damage().is_none())?;
        project.touch();
        if reconcile {
            project.start_reconcile();
        }
        Some(project.clone())
    }

    /// Take out of the registry the project at `root` a read found damaged, wait (bounded)
    /// for the requests still using it, and let it go (its writer joined): returns what was
    /// found, for the reopening to rebuild the index. Called with `root`'s gate held.
    fn unload_damaged(&self, root: &Path) -> Option<String> {
        let (project, damage) = {
            let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
            let damage = projects.get(root)?.damage()?;
            (projects.remove(root)?, damage)
        };
        released(&project);
        drop(project);
        Some(damage)
    }

    /// The lock held while `root`'s project opens or is forgotten.
    fn gate(&self, root: &Path) -> Arc<Mutex<()>> {
        self.opening
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(root.to_path_buf())
            .or_default()
            .clone()
    }

    /// Every project with an index under the data directory. Sorted by root.
    pub fn indexed(&self) -> Vec<Indexed> {
        // The loaded roots, then the lock is let go: measuring directories takes a while.
        let loaded: std::collections::HashSet<PathBuf> = self
            .projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        crate::index::indexed_roots(&self.data_dir)
            .into_iter()
            .map(|root| {
                let dir = crate::index::project_dir(&self.data_dir, &root);
                Indexed {
                    bytes: crate::index::lexical::dir_size(&dir),
                    loaded: loaded.contains(&root),
                    last_written: crate::index::last_written(&dir),
                    root,
                }
            })
            .collect()
    }

    /// Unload `root`'s project if loaded (waiting up to [`FORGET_WAIT`] for requests using
    /// it) and delete its index. Returns the bytes freed.
    pub fn forget(&self, root: &Path) -> Result<u64, Error> {
        let dir = crate::index::project_dir(&self.data_dir, root);
        if !dir.join(crate::index::ROOT_FILE).is_file() {
            return Err(UserError::InvalidArgument {
                name: "root",
                reason: format!(
                    "{} is not a project this daemon has indexed",
                    root.display()
                ),
            }
            .into());
        }
        // Held throughout, so nothing opens the project again while its files go.
        let gate = self.gate(root);
        let _opening = gate.lock().unwrap_or_else(|e| e.into_inner());
        let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(project) = projects.remove(root) {
            if !released(&project) {
                projects.insert(root.to_path_buf(), project);
                return Err(UserError::InvalidArgument {
                    name: "root",
                    reason: format!("{} is busy; try again", root.display()),
                }
                .into());
            }
            drop(project);
        }
        let bytes = crate::index::lexical::dir_size(&dir);
        std::fs::remove_dir_all(&dir).map_err(|e| crate::error::IndexError::io(&dir, e))?;
        tracing::info!(root = %root.display(), bytes, "forgot project");
        Ok(bytes)
    }

    /// Every loaded project (the registry's lock is let go before they are used).
    fn loaded_projects(&self) -> Vec<Arc<Project>> {
        self.projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Status of every loaded project, sorted by root.
    pub fn statuses(&self) -> Vec<ProjectStatus> {
        let projects = self.loaded_projects();
        let mut out: Vec<ProjectStatus> = projects.iter().map(|p| p.status()).collect();
        out.sort_by(|a, b| a.root.cmp(&b.root));
        out
    }
}

/// Wait (up to [`FORGET_WAIT`]) until `project` is held here only (requests still using it
/// have ended): whether it is.
fn released(project: &Arc<Project>) -> bool {
    let deadline = std::time::Instant::now() + FORGET_WAIT;
    while Arc::strong_count(project) > 1 {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn canonical_root(root: &str) -> Result<PathBuf, UserError> {
    let bad = |reason: String| UserError::BadRoot {
        path: PathBuf::from(root),
        reason,
    };
    if root.is_empty() {
        return Err(bad("empty path".into()));
    }
    let path = Path::new(root);
    if !path.is_absolute() {
        return Err(bad("must be an absolute path".into()));
    }
    let canonical = path.canonicalize().map_err(|e| bad(e.to_string()))?;
    if !canonical.is_dir() {
        return Err(bad("not a directory".into()));
    }
    if canonical.parent().is_none() {
        return Err(bad(
            "refusing to index the filesystem root; open a project directory".into(),
        ));
    }
    Ok(canonical)
}
