//! Which project a shim serves: `--project PATH`, else the repository root containing the
//! working directory (nearest `.git`), else the working directory.

use std::path::{Path, PathBuf};

/// Where the project root came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootSource {
    /// `--project`.
    Explicit,
    /// The git repository containing the working directory.
    Git,
    /// The working directory itself (no repository around it).
    WorkingDir,
}

/// Resolve the project root, canonicalized.
pub fn resolve_root(explicit: Option<&Path>) -> std::io::Result<PathBuf> {
    resolve_root_with_source(explicit).map(|(root, _)| root)
}

/// Resolve the project root, and say where it came from.
pub fn resolve_root_with_source(explicit: Option<&Path>) -> std::io::Result<(PathBuf, RootSource)> {
    if let Some(path) = explicit {
        let root = path.canonicalize()?;
        if !root.is_dir() {
            return Err(std::io::Error::other(format!(
                "{} is not a directory",
                root.display()
            )));
        }
        return Ok((root, RootSource::Explicit));
    }
    let cwd = std::env::current_dir()?.canonicalize()?;
    Ok(
        match cwd.ancestors().find(|dir| dir.join(".git").exists()) {
            Some(repo) => (repo.to_path_buf(), RootSource::Git),
            None => (cwd, RootSource::WorkingDir),
        },
    )
}
