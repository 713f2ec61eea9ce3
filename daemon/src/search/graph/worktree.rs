//! The working tree's diff against `HEAD` kept between `impact` requests, so an unchanged
//! tree does not run `git diff` again, and a changed one re-diffs only what changed.
//!
//! `git diff HEAD` of the files the index holds can change only when
//! - git's own files change: `HEAD`, the ref it names, `packed-refs` or the index (a
//!   commit, a checkout, a reset, a staged new file): then the whole diff runs again;
//! - a file in the working tree changes: the index's [`Changes`] log names every file a
//!   commit put or removed, and those are diffed again, alone (`git diff HEAD -- paths`);
//! - a file the last diff found changed is written again without the index noting it (say,
//!   put back as the index holds it before the index saw the first write): each such
//!   file's stat (inode, size, times) is kept and compared, and it is diffed again when
//!   the stat differs.
//!
//! A file the index does not hold has no definitions, so its lines never counted.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::Error;
use crate::index::changes::{Changes, Since};

/// Changed files beyond which the whole diff runs again rather than these alone.
const MAX_PATHSPECS: usize = 64;

/// A file's identity and times as `stat` gives them: a write changes at least one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    })
}

/// Where git keeps what `git diff HEAD` depends on.
struct GitFiles {
    /// This worktree's git directory (`HEAD`, `index`).
    dir: PathBuf,
    /// The repository's shared directory (`refs/`, `packed-refs`).
    common: PathBuf,
}

/// The state of git's files: equal states give equal diffs of equal working trees.
#[derive(PartialEq, Eq, Debug)]
struct GitState {
    head: Vec<u8>,
    stamps: Vec<Option<Stamp>>,
}

impl GitFiles {
    /// Git's own answer for `root` (`git rev-parse`), so worktrees and submodules count.
    fn find(root: &Path) -> Option<GitFiles> {
        let out = std::process::Command::new("git")
            .current_dir(root)
            .args(["rev-parse", "--absolute-git-dir", "--git-common-dir"])
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8(out.stdout).ok()?;
        let mut lines = text.lines();
        let dir = PathBuf::from(lines.next()?);
        let common = dir.join(lines.next()?);
        Some(GitFiles { dir, common })
    }

    fn state(&self) -> Option<GitState> {
        let head = std::fs::read(self.dir.join("HEAD")).ok()?;
        let mut files = vec![
            self.dir.join("HEAD"),
            self.dir.join("index"),
            self.common.join("packed-refs"),
        ];
        if let Some(name) = head.strip_prefix(b"ref: ") {
            let name = String::from_utf8_lossy(name.trim_ascii()).into_owned();
            files.push(self.common.join(name));
        }
        let stamps: Vec<Option<Stamp>> = files.iter().map(|f| stamp(f)).collect();
        // Without `HEAD` and the index nothing says when the diff changes.
        if stamps[0].is_none() || stamps[1].is_none() {
            return None;
        }
        Some(GitState { head, stamps })
    }
}

/// A file's changed line ranges (new side, 1-based inclusive).
pub type Ranges = Vec<(u32, u32)>;

/// Each changed file's line ranges, in git's order (by path).
pub type Hunks = Vec<(String, Ranges)>;

struct Kept {
    /// Git's state when diffed.
    state: GitState,
    /// The index's epoch the diff answers for.
    epoch: u64,
    /// The changed files, their ranges and their stat when diffed.
    files: BTreeMap<String, (Ranges, Option<Stamp>)>,
}

#[derive(Default)]
struct State {
    /// Where git keeps its files, found once (again only when they are gone).
    git: Option<GitFiles>,
    last: Option<Kept>,
}

/// The last working-tree diff of one project.
#[derive(Default)]
pub struct KeptDiff {
    state: Mutex<State>,
    /// `git diff` runs, whole or of some files (for tests).
    runs: std::sync::atomic::AtomicUsize,
}

impl KeptDiff {
    /// `git diff HEAD` of the project at `root`, as changed lines per file: the kept one
    /// when nothing it depends on changed, else run again (the changed files alone when
    /// few changed).
    pub fn changed_lines(
        &self,
        root: &Path,
        changes: &Changes,
        run: impl Fn(&[String]) -> Result<Hunks, Error>,
    ) -> Result<Hunks, Error> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let State { git, last } = &mut *state;
        // A commit under way ends after the epoch before it: it counts as a change.
        let epoch = changes.epoch() & !1;
        if git.is_none() {
            *git = GitFiles::find(root);
        }
        let now = git.as_ref().and_then(GitFiles::state);
        if now.is_none() {
            *git = None;
        }
        if let (Some(git), Some(mut k)) = (git.as_ref(), last.take())
            && now.as_ref() == Some(&k.state)
            && let Some(paths) = self.stale(&k, root, changes)
            && self.rediff(git, &mut k, root, paths, epoch, &run)?
        {
            let hunks = answer(&k);
            *last = Some(k);
            return Ok(hunks);
        }
        // The whole diff, kept if git's files held still while it ran.
        self.count();
        let hunks = run(&[])?;
        if let (Some(git), Some(now)) = (git.as_ref(), now)
            && git.state().as_ref() == Some(&now)
        {
            let files = hunks
                .iter()
                .map(|(path, ranges)| (path.clone(), (ranges.clone(), stamp(&root.join(path)))))
                .collect();
            *last = Some(Kept {
                state: now,
                epoch,
                files,
            });
        }
        Ok(hunks)
    }

    /// The files to diff again (none: the kept diff is the answer); `None` when too many.
    fn stale(&self, k: &Kept, root: &Path, changes: &Changes) -> Option<Vec<String>> {
        let Since::Paths(mut paths) = changes.since(k.epoch) else {
            return None;
        };
        for (path, (_, was)) in &k.files {
            if was.is_none() || stamp(&root.join(path)) != *was {
                paths.push(path.clone());
            }
        }
        paths.sort_unstable();
        paths.dedup();
        (paths.len() <= MAX_PATHSPECS).then_some(paths)
    }

    /// Diff `paths` again into `k`; false when git's files moved meanwhile (then the whole
    /// diff runs).
    fn rediff(
        &self,
        git: &GitFiles,
        k: &mut Kept,
        root: &Path,
        paths: Vec<String>,
        epoch: u64,
        run: &impl Fn(&[String]) -> Result<Hunks, Error>,
    ) -> Result<bool, Error> {
        if !paths.is_empty() {
            self.count();
            let hunks = run(&paths)?;
            if git.state().as_ref() != Some(&k.state) {
                return Ok(false);
            }
            for path in &paths {
                k.files.remove(path);
            }
            for (path, ranges) in hunks {
                let was = stamp(&root.join(&path));
                k.files.insert(path, (ranges, was));
            }
        }
        k.epoch = epoch;
        Ok(true)
    }

    fn count(&self) {
        self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many times git ran (for tests).
    #[cfg(test)]
    pub fn runs(&self) -> usize {
        self.runs.load(std::sync::atomic::Ordering::Relaxed)
    }
}

fn answer(k: &Kept) -> Hunks {
    (k.files.iter())
        .map(|(path, (ranges, _))| (path.clone(), ranges.clone()))
        .collect()
}
