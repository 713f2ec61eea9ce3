//! Which project a shim serves: `--project PATH`, else the repository root containing the
//! working directory (nearest `.git`), else the working directory.

use std::path::{Path, PathBuf};

/// Resolve the project root, canonicalized.
pub fn resolve_root(explicit: Option<&Path>) -> std::io::Result<PathBuf> {
    if let Some(path) = explicit {
        let root = path.canonicalize()?;
        if !root.is_dir() {
            return Err(std::io::Error::other(format!(
                "{} is not a directory",
                root.display()
            )));
        }
        return Ok(root);
    }
    let cwd = std::env::current_dir()?.canonicalize()?;
    Ok(cwd
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(&cwd)
        .to_path_buf())
}
