//! Which project a shim or an `amanctl` command serves: the path named (`--project PATH`,
//! `amanctl search QUERY PATH`), else the repository root containing the working directory
//! (nearest `.git`), else the working directory: one rule for every entry point. A working
//! directory that is the home directory or a system directory is never taken as a project.

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

impl RootSource {
    /// How the root was chosen, in words.
    pub fn describe(self) -> &'static str {
        match self {
            RootSource::Explicit => "as named",
            RootSource::Git => "the git repository around the working directory",
            RootSource::WorkingDir => "the working directory; no git repository around it",
        }
    }
}

/// Directories that are never a project unless named: the home directory and the system's
/// own (`/`, `/etc`, `/usr`, ...).
fn unfit_reason(root: &Path) -> Option<String> {
    const SYSTEM: &[&str] = &[
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib64",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/var",
        "/Applications",
        "/Library",
        "/System",
        "/Users",
        "/Volumes",
        "/private",
    ];
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|h| h.canonicalize().ok());
    if home.as_deref() == Some(root) {
        return Some(format!("{} is your home directory", root.display()));
    }
    let system = SYSTEM
        .iter()
        .any(|dir| Path::new(dir).canonicalize().is_ok_and(|dir| dir == root))
        || root.starts_with("/usr")
        || root.starts_with("/etc")
        || root.starts_with("/proc")
        || root.starts_with("/sys");
    system.then(|| format!("{} is a system directory", root.display()))
}

/// Why `root`, found as `source` says, is taken as no project: a working directory (no
/// repository around it) that is the home directory or a system directory. A root named
/// explicitly or found as a repository is always a project.
pub fn refused(root: &Path, source: RootSource) -> Option<String> {
    (source == RootSource::WorkingDir)
        .then(|| unfit_reason(root))
        .flatten()
}

/// The project an `amanctl` command serves: `path` as named, else the rule above. A working
/// directory that is no project (home, a system directory) is refused with what to do.
pub fn command_root(path: Option<&Path>) -> Result<(PathBuf, RootSource), String> {
    let (root, source) = resolve_root_with_source(path).map_err(|e| match path {
        Some(path) => format!("{}: {e}", path.display()),
        None => e.to_string(),
    })?;
    if let Some(reason) = refused(&root, source) {
        return Err(format!(
            "{reason}, not a project (no git repository around it); run amanctl inside a \
             repository, or name the directory to use: amanctl ... PATH"
        ));
    }
    Ok((root, source))
}
