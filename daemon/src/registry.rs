//! The projects a daemon has loaded, keyed by canonical root. Exactly one [`Project`] (and so
//! one LMDB environment and one writer) exists per root.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, UserError};
use crate::project::{Project, ProjectStatus};
use crate::scan::Limits;

/// Loaded projects.
pub struct Registry {
    data_dir: PathBuf,
    limits: Limits,
    projects: Mutex<HashMap<PathBuf, Arc<Project>>>,
}

impl Registry {
    /// An empty registry storing indexes under `data_dir`.
    pub fn new(data_dir: PathBuf, limits: Limits) -> Registry {
        Registry {
            data_dir,
            limits,
            projects: Mutex::new(HashMap::new()),
        }
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The project at `root`, loading it (and starting its first pass) if needed. With
    /// `reconcile`, an already-loaded project is re-checked against the disk too.
    /// Blocking: call from a blocking context.
    pub fn open(&self, root: &str, reconcile: bool) -> Result<Arc<Project>, Error> {
        let root = canonical_root(root)?;
        let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(project) = projects.get(&root) {
            if reconcile {
                project.start_reconcile();
            }
            return Ok(project.clone());
        }
        let project = Project::open(root.clone(), &self.data_dir, self.limits)?;
        project.start_reconcile();
        projects.insert(root, project.clone());
        Ok(project)
    }

    /// Status of every loaded project, sorted by root.
    pub fn statuses(&self) -> Vec<ProjectStatus> {
        let projects: Vec<Arc<Project>> = self
            .projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        let mut out: Vec<ProjectStatus> = projects.iter().map(|p| p.status()).collect();
        out.sort_by(|a, b| a.root.cmp(&b.root));
        out
    }
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
    Ok(canonical)
}
