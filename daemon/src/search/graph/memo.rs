//! A name's resolved mentions kept across requests, file by file, each file's share with
//! what it was worked out from, and worked out again when a commit changes any of that.
//!
//! Working out a name's mentions in one file reads that file and, to resolve each, other
//! files' symbols, references and languages and the definitions of other names; a
//! [`Resolver::noting`](super::resolve::Resolver::noting) resolver, one per file, notes
//! every such file and name (its own caches start empty, so none of its answers comes from
//! a read it did not note). After a commit that changed file `f` (the index's [`Changes`]
//! log), a file's share is still the answer unless:
//! - it read `f` (so `f`'s old version may have counted), or
//! - `f` now defines a name whose definitions it asked for (any case, as `symbols_named`
//!   matches);
//!
//! and the list of files holding the name is still the answer unless a share went stale
//! or `f` as it is now refers to the name (or imports it under another), so it may hold a
//! mention the list lacks. A name whose list is stale is listed again and only its stale
//! (or new) files' shares are worked out again, the others' taken as kept.
//!
//! What `f` looked like before counts only through the first rule: every file whose
//! old version could have contributed was read, hence noted.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rustc_hash::{FxHashMap, FxHashSet};

use super::mentions::{Mention, files_mentioning, mentions_in};
use super::resolve::{GraphView, Resolver};
use crate::error::{Error, IndexError};
use crate::index::changes::{Changes, Since};

/// Changed files beyond which the memo forgets everything rather than check each.
const MAX_CHECKED: usize = 256;

impl<'v> Resolver<'v> {
    /// A resolver sharing this one's reads that notes every file and name its answers
    /// depend on (its own caches start empty, so nothing it answers comes from reads it
    /// did not note).
    pub(super) fn noting(&self) -> Resolver<'v> {
        Resolver::with(self.view(), self.reads.clone(), Some(Deps::default()))
    }

    /// What a [`Resolver::noting`] resolver read since the last call, and a fresh start
    /// for what it reads next: what it worked out and keeps either notes its reads again
    /// when used (a definition's owner, a name's definitions split by kind) or is dropped
    /// here (methods' owners, Python values' types).
    pub(super) fn take_deps(&self) -> Deps {
        self.method_owners.borrow_mut().clear();
        self.nesting.forget();
        self.deps
            .as_ref()
            .map(|deps| std::mem::take(&mut *deps.borrow_mut()))
            .unwrap_or_default()
    }

    /// Note what `name`'s definitions were read from, for a kept split of them used again
    /// (a resolver noting nothing reads nothing).
    pub(super) fn note_definitions(&self, name: &str) -> Result<(), IndexError> {
        if self.deps.is_some() {
            self.definitions(name)?;
        }
        Ok(())
    }

    pub(super) fn note_path(&self, path: &str) {
        if let Some(deps) = &self.deps {
            deps.borrow_mut().path(path);
        }
    }
}

/// What a name's mentions depend on.
#[derive(Default, Debug)]
pub(super) struct Deps {
    /// Files read.
    paths: FxHashSet<String>,
    /// Names whose definitions were asked for, lowercase.
    names: FxHashSet<String>,
    /// The path noted last (most reads are of the file just read).
    last: String,
}

impl Deps {
    pub(super) fn path(&mut self, path: &str) {
        if self.last == path {
            return;
        }
        if !self.paths.contains(path) {
            self.paths.insert(path.to_owned());
        }
        self.last.clear();
        self.last.push_str(path);
    }

    /// Note `name`; whether it is new.
    pub(super) fn name(&mut self, name: &str) -> bool {
        let lower = name.to_lowercase();
        if self.names.contains(&lower) {
            return false;
        }
        self.names.insert(lower);
        true
    }
}

/// One file's share of a name's mentions (`mentions[start..end]`) and what it read.
struct Part {
    path: String,
    start: usize,
    end: usize,
    deps: Deps,
    /// A change may have made it wrong.
    stale: bool,
}

impl Part {
    fn bytes(&self) -> usize {
        std::mem::size_of::<Part>()
            + self.path.len()
            + self.deps.paths.iter().map(|p| p.len() + 32).sum::<usize>()
            + self.deps.names.iter().map(|n| n.len() + 32).sum::<usize>()
    }
}

/// One name's mentions, file by file.
struct Entry {
    mentions: Arc<Vec<Mention>>,
    /// Whether every file holding the name was read.
    complete: bool,
    parts: Vec<Part>,
    /// The other names re-exports give the name (their files are listed too).
    aliases: Vec<String>,
    /// Whether the files holding the name must be listed again.
    relist: bool,
    bytes: usize,
}

#[derive(Default)]
struct State {
    /// The epoch of the index the entries are the answer for.
    epoch: u64,
    entries: FxHashMap<String, Entry>,
    /// Names in the order they were kept, for forgetting the oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

/// What the code graph keeps for one project across requests: names' mentions, and the
/// working tree's diff.
#[derive(Default)]
pub struct Memo {
    state: Mutex<State>,
    /// The working tree's last `git diff HEAD`.
    pub diff: super::worktree::KeptDiff,
    /// Files' shares worked out (for tests).
    #[cfg(test)]
    worked_out: std::sync::atomic::AtomicUsize,
}

/// A request's use of the memo: the entries are the answer as of `epoch`.
#[derive(Clone, Copy)]
pub struct MemoUse<'a> {
    memo: &'a Memo,
    changes: &'a Changes,
    epoch: u64,
}

impl Memo {
    /// Forget what the commits since the last request changed, and return the memo as of
    /// the last finished commit.
    pub fn up_to_date<'a>(&'a self, view: &dyn GraphView, changes: &'a Changes) -> MemoUse<'a> {
        let mut state = self.lock();
        // A commit under way is not in the log yet: the entries answer for the one before.
        let now = changes.epoch() & !1;
        if now != state.epoch {
            match changes.since(state.epoch) {
                Since::Paths(paths) if paths.len() <= MAX_CHECKED => {
                    if !forget_changed(&mut state, view, &paths) {
                        state.clear();
                    }
                }
                _ => state.clear(),
            }
            state.epoch = now;
        }
        MemoUse {
            memo: self,
            changes,
            epoch: now,
        }
    }

    /// Names kept (for tests).
    #[cfg(test)]
    pub fn names_kept(&self) -> usize {
        self.lock().entries.len()
    }

    /// Files' shares of names' mentions worked out so far (for tests).
    #[cfg(test)]
    pub fn worked_out(&self) -> usize {
        self.worked_out.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    fn clear(&mut self) {
        self.entries.clear();
        self.order.clear();
        self.bytes = 0;
    }

    fn remove(&mut self, name: &str) {
        if let Some(entry) = self.entries.remove(name) {
            self.bytes -= entry.bytes;
        }
    }
}

/// Mark what a change of `paths` may have made wrong; false when one of them could not be
/// read (then nothing can be trusted).
fn forget_changed(state: &mut State, view: &dyn GraphView, paths: &[String]) -> bool {
    // What the changed files, as they are now, refer to and define.
    let mut referred: FxHashSet<String> = FxHashSet::default();
    let mut defined: FxHashSet<String> = FxHashSet::default();
    for path in paths {
        let (Ok(symbols), Ok(refs)) = (view.symbols_of(path), view.refs_of(path)) else {
            return false;
        };
        defined.extend(symbols.iter().map(|s| s.name.to_lowercase()));
        for r in refs.refs() {
            if !referred.contains(r.name) {
                referred.insert(r.name.to_string());
            }
        }
        referred.extend(refs.imports.iter().filter_map(|i| i.name.clone()));
    }
    let changed: FxHashSet<&str> = paths.iter().map(String::as_str).collect();
    let mut dropped = Vec::new();
    for (name, entry) in state.entries.iter_mut() {
        // A list cut short may change with any file: worked out again whole.
        if !entry.complete {
            dropped.push(name.clone());
            continue;
        }
        for part in entry.parts.iter_mut().filter(|p| !p.stale) {
            if meet(&changed, &part.deps.paths) || meet(&defined, &part.deps.names) {
                part.stale = true;
                entry.relist = true;
            }
        }
        if referred.contains(name.as_str()) || entry.aliases.iter().any(|a| referred.contains(a)) {
            entry.relist = true;
        }
    }
    for name in dropped {
        state.remove(&name);
    }
    true
}

/// Whether two sets share an element (looked up from the smaller).
fn meet<A, B>(a: &FxHashSet<A>, b: &FxHashSet<B>) -> bool
where
    A: std::borrow::Borrow<str> + std::hash::Hash + Eq,
    B: std::borrow::Borrow<str> + std::hash::Hash + Eq,
{
    if a.len() <= b.len() {
        a.iter().any(|x| b.contains(x.borrow()))
    } else {
        b.iter().any(|x| a.contains(x.borrow()))
    }
}

impl MemoUse<'_> {
    /// `name`'s mentions and whether they cover every file holding it: kept, or worked out
    /// (again for only the files whose share is stale or new) and kept.
    pub(super) fn mentions(
        &self,
        resolver: &Resolver<'_>,
        name: &str,
    ) -> Result<(Arc<Vec<Mention>>, bool), Error> {
        let mut kept = {
            let mut state = self.memo.lock();
            match state.entries.get(name) {
                Some(entry) if !entry.relist => {
                    return Ok((entry.mentions.clone(), entry.complete));
                }
                Some(_) => {
                    let entry = state.entries.remove(name).expect("just seen");
                    state.bytes -= entry.bytes;
                    Some(entry)
                }
                None => None,
            }
        };
        // The files' shares still right, by path.
        let mut valid: FxHashMap<String, Part> = FxHashMap::default();
        if let Some(entry) = &mut kept {
            for part in std::mem::take(&mut entry.parts) {
                if !part.stale {
                    valid.insert(part.path.clone(), part);
                }
            }
        }
        let (files, aliases, complete) = files_mentioning(resolver, name)?;
        // The files' shares were worked out for the names the name had then.
        if kept.as_ref().is_some_and(|entry| entry.aliases != aliases) {
            valid.clear();
        }
        let mut found = Vec::new();
        let mut parts = Vec::with_capacity(files.len());
        // A resolver of its own, noting what each file's share depends on.
        let noting = resolver.noting();
        for path in files {
            let start = found.len();
            let deps = match (valid.remove(&path), &kept) {
                (Some(part), Some(entry)) => {
                    found.extend_from_slice(&entry.mentions[part.start..part.end]);
                    part.deps
                }
                _ => {
                    #[cfg(test)]
                    (self.memo.worked_out).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    found.extend(mentions_in(&noting, name, &aliases, &path)?);
                    noting.take_deps()
                }
            };
            parts.push(Part {
                path,
                start,
                end: found.len(),
                deps,
                stale: false,
            });
        }
        let found = Arc::new(found);
        self.put(name, found.clone(), complete, parts, aliases);
        Ok((found, complete))
    }

    /// Keep `name`'s mentions, worked out from `parts`' reads since this use began, unless
    /// a commit started meanwhile (they may have read part of it).
    fn put(
        &self,
        name: &str,
        mentions: Arc<Vec<Mention>>,
        complete: bool,
        parts: Vec<Part>,
        aliases: Vec<String>,
    ) {
        let mut state = self.memo.lock();
        if self.changes.epoch() != self.epoch || state.epoch != self.epoch {
            return;
        }
        let bytes = mentions.iter().map(Mention::bytes).sum::<usize>()
            + parts.iter().map(Part::bytes).sum::<usize>();
        // The memory budget's share, counted as the mentions' strings and records.
        let max_bytes = crate::memory::budget().graph_memo_bytes();
        if bytes > max_bytes / 4 {
            return;
        }
        state.remove(name);
        // Names forgotten since they were kept leave the order now and then.
        if state.order.len() > 2 * state.entries.len() + 1024 {
            let State { order, entries, .. } = &mut *state;
            order.retain(|n| entries.contains_key(n));
        }
        while state.bytes + bytes > max_bytes {
            let Some(oldest) = state.order.pop_front() else {
                break;
            };
            state.remove(&oldest);
        }
        state.bytes += bytes;
        state.order.push_back(name.to_string());
        state.entries.insert(
            name.to_string(),
            Entry {
                mentions,
                complete,
                parts,
                aliases,
                relist: false,
                bytes,
            },
        );
    }
}
