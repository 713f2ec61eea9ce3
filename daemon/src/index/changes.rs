//! The files each commit changed, numbered, for what is kept above the index (the code
//! graph's resolved mentions) to know what to forget.
//!
//! The writer holds a [`Changes::around`] guard over each commit that changes files: it
//! calls [`Changes::begin`] before the commit's first write and [`Changes::end`] when
//! dropped, after its last (also when it fails), so the epoch is odd while a commit is
//! under way. Something computed from reads made between two readings of an even epoch
//! that are equal saw no commit; anything else may have seen half of one.

use std::collections::VecDeque;
use std::sync::Mutex;

/// Paths the log keeps at most; a reader asking further back is told to forget all.
const MAX_PATHS: usize = 20_000;

#[derive(Default)]
pub struct Changes {
    log: Mutex<Log>,
}

#[derive(Default)]
struct Log {
    epoch: u64,
    /// (the epoch a commit ended at, the paths it changed), oldest first.
    commits: VecDeque<(u64, Vec<String>)>,
    paths: usize,
    /// The end epoch of the newest commit dropped from the log.
    floor: u64,
}

/// What changed since an epoch.
#[derive(Debug, PartialEq, Eq)]
pub enum Since {
    /// These paths (each once, sorted).
    Paths(Vec<String>),
    /// More than the log keeps: assume everything.
    Everything,
}

impl Changes {
    /// The current epoch (odd while a commit is under way).
    pub fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// A commit starts writing.
    pub fn begin(&self) {
        let mut log = self.lock();
        if log.epoch.is_multiple_of(2) {
            log.epoch += 1;
        }
    }

    /// The commit begun last is over (committed or not), having touched `paths`.
    pub fn end(&self, paths: Vec<String>) {
        let mut log = self.lock();
        if !log.epoch.is_multiple_of(2) {
            log.epoch += 1;
        } else {
            log.epoch += 2;
        }
        let epoch = log.epoch;
        log.paths += paths.len();
        log.commits.push_back((epoch, paths));
        while log.paths > MAX_PATHS {
            let Some((ended, dropped)) = log.commits.pop_front() else {
                break;
            };
            log.paths -= dropped.len();
            log.floor = ended;
        }
    }

    /// Note a commit changing `paths` (if any) from now until the guard drops, however the
    /// commit ends.
    pub fn around(&self, paths: impl Iterator<Item = String>) -> Noted<'_> {
        let paths: Vec<String> = paths.collect();
        if !paths.is_empty() {
            self.begin();
        }
        Noted {
            changes: self,
            paths,
        }
    }

    /// The paths changed by commits that ended after `epoch`.
    pub fn since(&self, epoch: u64) -> Since {
        let log = self.lock();
        if epoch < log.floor {
            return Since::Everything;
        }
        let mut paths: Vec<String> = log
            .commits
            .iter()
            .filter(|(ended, _)| *ended > epoch)
            .flat_map(|(_, paths)| paths.iter().cloned())
            .collect();
        paths.sort_unstable();
        paths.dedup();
        Since::Paths(paths)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A commit under way (see [`Changes::around`]).
pub struct Noted<'a> {
    changes: &'a Changes,
    paths: Vec<String>,
}

impl Drop for Noted<'_> {
    fn drop(&mut self) {
        if !self.paths.is_empty() {
            self.changes.end(std::mem::take(&mut self.paths));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_are_odd_while_writing_and_the_log_answers_what_changed() {
        let changes = Changes::default();
        assert_eq!(changes.epoch(), 0);
        changes.begin();
        assert_eq!(changes.epoch(), 1);
        changes.end(vec!["b.py".into(), "a.py".into()]);
        assert_eq!(changes.epoch(), 2);
        changes.begin();
        changes.end(vec!["a.py".into(), "c.py".into()]);
        assert_eq!(
            changes.since(0),
            Since::Paths(vec!["a.py".into(), "b.py".into(), "c.py".into()])
        );
        assert_eq!(
            changes.since(2),
            Since::Paths(vec!["a.py".into(), "c.py".into()])
        );
        assert_eq!(changes.since(4), Since::Paths(Vec::new()));
        // An end without a begin still moves to a new even epoch.
        changes.end(vec!["d.py".into()]);
        assert_eq!(changes.epoch(), 6);
        assert_eq!(changes.since(4), Since::Paths(vec!["d.py".into()]));
    }

    #[test]
    fn a_reader_asking_past_what_the_log_keeps_is_told_everything() {
        let changes = Changes::default();
        changes.begin();
        changes.end((0..MAX_PATHS).map(|i| format!("{i}.rs")).collect());
        let kept = changes.epoch();
        changes.begin();
        changes.end(vec!["last.rs".into()]);
        assert_eq!(changes.since(0), Since::Everything);
        assert_eq!(changes.since(kept), Since::Paths(vec!["last.rs".into()]));
    }
}
