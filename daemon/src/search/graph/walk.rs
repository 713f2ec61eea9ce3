//! The walks: one level of callers or callees of a definition, and the multi-level walks
//! built on them (`callers`, `callees`, `impact`, `trace`).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::memo::MemoUse;
use super::mentions::{Mention, find_mentions};
use super::resolve::{CLASS_LIKE, Def, Defs, Resolution, Resolver};
use super::{
    GraphAnswer, GraphView, Impacted, Label, Link, MAX_DEPTH, MAX_EXAMPLES, MAX_LINKS, Unexplained,
    is_test,
};
use crate::chunk::syntax::refs::{Import, RefKind};
use crate::error::{Error, UserError};

/// Names at one level below which a walk stays on one thread (a thread's own resolver
/// reads again what the request's has).
const PARALLEL_NAMES: usize = 8;
/// Targets whose mentions are found together, ahead of the walk's steps through them.
const PREFETCH_BLOCK: usize = 32;

/// The walk over one request, with its reads cached.
pub struct Walk<'v> {
    pub resolver: Resolver<'v>,
    pub complete: bool,
    /// Resolved references per name.
    mentions: FxHashMap<String, Arc<Vec<Mention>>>,
    /// Names' mentions kept across requests, if this walk may use them.
    memo: Option<MemoUse<'v>>,
    /// Names whose unresolved calls were counted.
    explained: HashSet<String>,
    /// Whether a wide level's mentions are found on two threads (more than one core).
    pub parallel: bool,
}

/// What a helper thread found: each name's mentions, and whether it read every file.
type Helped = (Vec<(String, Arc<Vec<Mention>>)>, bool);

impl<'v> Walk<'v> {
    pub fn new(view: &'v dyn GraphView) -> Walk<'v> {
        Walk::with_memo(view, None)
    }

    /// A walk that takes names' mentions from `memo` and keeps those it works out there.
    pub fn with_memo(view: &'v dyn GraphView, memo: Option<MemoUse<'v>>) -> Walk<'v> {
        Walk {
            resolver: Resolver::new(view),
            complete: true,
            mentions: FxHashMap::default(),
            memo,
            explained: HashSet::new(),
            parallel: crate::search::beside::on_another_core(),
        }
    }

    /// The definitions `name` (bare or qualified) may mean, within `within` if given.
    pub fn definitions(&self, name: &str, within: Option<&str>) -> Result<Vec<Def>, Error> {
        // A file's own path names the code at its top level (its imports, what it runs when
        // loaded): what a search result outside any definition is.
        let path = name.trim().trim_start_matches("./");
        if (path.contains('/') || path.contains('.')) && !self.resolver.language(path)?.is_empty() {
            return Ok(vec![super::mentions::file_def(path, 1)]);
        }
        let segments: Vec<&str> = name
            .split(['.', ':', '#', '/', '\\'])
            .filter(|s| !s.is_empty())
            .collect();
        let Some(bare) = segments.last() else {
            return Err(UserError::InvalidArgument {
                name: "symbol",
                reason: "a name is needed (e.g. `parse_config`, `Session.request`)".into(),
            }
            .into());
        };
        let defs = self.resolver.definitions(bare)?;
        let within = within.map(|w| w.trim_end_matches('/'));
        Ok(defs
            .iter()
            .filter(|d| {
                let qualified: Vec<&str> = d
                    .qualified
                    .split(['.', ':', '#', '/', '\\'])
                    .filter(|s| !s.is_empty())
                    .collect();
                // Or qualified by its module: `net.load` for `load` in `pkg/net.py`.
                let module = d
                    .path
                    .rsplit_once('.')
                    .map_or(d.path.as_str(), |(stem, _)| stem);
                let mut full: Vec<&str> = module.split('/').collect();
                full.extend(&qualified);
                qualified.ends_with(&segments) || full.ends_with(&segments)
            })
            .filter(|d| within.is_none_or(|w| d.path == w || d.path.starts_with(&format!("{w}/"))))
            .cloned()
            .collect())
    }

    /// Calls of `target` (and, with `impact`, classes deriving from it and imports naming
    /// it), one level.
    pub fn callers_of(
        &mut self,
        target: &Def,
        impact: bool,
        depth: u32,
        answer: &mut GraphAnswer,
    ) -> Result<Vec<Link>, Error> {
        let mentions = self.mentions(&target.name)?;
        let mut found = Vec::new();
        // Calls resolving to nothing are counted once per name, whichever target asks.
        let count_unexplained = self.explained.insert(target.name.clone());
        for m in mentions.iter() {
            if matches!(m.reference.kind, RefKind::Inherit | RefKind::Import) && !impact {
                continue;
            }
            let (label, rule, candidates) = match &m.resolution {
                Resolution::Resolved(def, rule) if def == target => {
                    (Label::Resolved, rule.to_string(), Defs::default())
                }
                Resolution::Ambiguous(defs) if defs.contains(target) => (
                    Label::Ambiguous,
                    "several in scope".to_string(),
                    defs.clone(),
                ),
                Resolution::Unresolved(why) => {
                    if count_unexplained {
                        answer.unexplained += 1;
                        if answer.unexplained_examples.len() < MAX_EXAMPLES {
                            answer.unexplained_examples.push(Unexplained {
                                path: m.path.clone(),
                                line: m.reference.line,
                                why: why.clone(),
                            });
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            let rule = match m.reference.kind {
                RefKind::Import => format!("imports it ({rule})"),
                _ => rule,
            };
            found.push(Link {
                from: m.from.clone(),
                to: Some(target.clone()),
                name: m.reference.name.clone(),
                path: m.path.clone(),
                line: m.reference.line,
                label,
                rule,
                candidates,
                depth,
                kind: m.reference.kind,
            });
        }
        // An import says what a file uses only where no call there says it already (only
        // `impact` keeps imports: `callers` pays nothing for this).
        if impact {
            let calling: HashSet<String> = (found.iter())
                .filter(|l| l.kind != RefKind::Import)
                .map(|l| l.path.clone())
                .collect();
            found.retain(|l| l.kind != RefKind::Import || !calling.contains(&l.path));
        }
        Ok(found)
    }

    /// Calls of `name` this project does not define (from another project's view: calls
    /// that may be of its definition), as unresolved links.
    pub fn calls_from_outside(&mut self, name: &str) -> Result<Vec<Link>, Error> {
        let mentions = self.mentions(name)?;
        Ok(mentions
            .iter()
            .filter(|m| matches!(m.reference.kind, RefKind::Call | RefKind::Macro))
            .filter_map(|m| match &m.resolution {
                Resolution::Unresolved(why) => Some(Link {
                    from: m.from.clone(),
                    to: None,
                    name: m.reference.name.clone(),
                    path: m.path.clone(),
                    line: m.reference.line,
                    label: Label::Unresolved,
                    rule: why.clone(),
                    candidates: Defs::default(),
                    depth: 1,
                    kind: m.reference.kind,
                }),
                _ => None,
            })
            .collect())
    }

    /// The mentions of those of `names` not yet known, found on every core: each thread
    /// with a resolver of its own, since a name's mentions do not depend on what else the
    /// request asked (its caches only remember). A wide walk (`impact` of a large diff)
    /// asks for the callers of a hundred names at a level.
    fn prefetch_mentions(&mut self, names: &[&str]) -> Result<(), Error> {
        let mut wanted: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !self.mentions.contains_key(*n))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        if !self.parallel || wanted.len() < PARALLEL_NAMES {
            return Ok(());
        }
        let view = self.resolver.view();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let take = || {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            wanted.get(i).copied()
        };
        // One helper, on the search threads kept for a query's second leg (a thread made
        // per request would set up its allocator heap every time).
        let memo = self.memo;
        let helper = || -> Result<Helped, Error> {
            let mut walk = Walk::with_memo(view, memo);
            let mut done = Vec::new();
            while let Some(name) = take() {
                walk.mentions(name)?;
                done.push(name);
            }
            let mut out = Vec::with_capacity(done.len());
            for name in done {
                if let Some(mentions) = walk.mentions.remove(name) {
                    out.push((name.to_string(), mentions));
                }
            }
            Ok((out, walk.complete))
        };
        let (helped, mine) = crate::search::beside::run(
            || Some(helper()),
            || None,
            || {
                // This thread takes names too, with the request's own resolver.
                while let Some(name) = take() {
                    self.mentions(name)?;
                }
                Ok::<(), Error>(())
            },
        );
        mine?;
        // A helper that failed to run left its names to the steps, which find them.
        if let Some(helped) = helped {
            let (mentions, complete) = helped?;
            self.complete &= complete;
            for (name, found) in mentions {
                self.mentions.insert(name, found);
            }
        }
        Ok(())
    }

    /// Every reference to `name` (or to a local alias of it) in the project, resolved, with
    /// the definition around it; computed once per name and request, or taken from the
    /// memo, which keeps what it computes.
    fn mentions(&mut self, name: &str) -> Result<Arc<Vec<Mention>>, Error> {
        if let Some(found) = self.mentions.get(name) {
            return Ok(found.clone());
        }
        let (found, complete) = match self.memo {
            Some(memo) => memo.mentions(&self.resolver, name)?,
            None => {
                let (found, complete) = find_mentions(&self.resolver, name)?;
                (Arc::new(found), complete)
            }
        };
        self.complete &= complete;
        self.mentions.insert(name.to_string(), found.clone());
        Ok(found)
    }

    /// Calls made inside `def`, one level.
    pub fn callees_of(&mut self, def: &Def, depth: u32) -> Result<Vec<Link>, Error> {
        let refs = self.resolver.refs(&def.path)?;
        let mut found = Vec::new();
        let whole = def.kind == "file";
        let within = |line: u32| whole || (def.lines.0 <= line && line <= def.lines.1);
        // What it imports by name is used too (a module's imports, Python's imports inside
        // a function), resolved as a use of the name bound would be; an outside package's
        // name is none of the project's.
        let imported = (refs.imports.iter())
            .filter(|i| within(i.line) && i.name.as_deref().is_some_and(|n| n != "*"))
            .map(Import::to_reference);
        let written = (refs.refs())
            .filter(|r| r.kind != RefKind::Inherit)
            .filter(|r| within(r.line))
            .map(|r| r.to_reference());
        for r in imported.chain(written) {
            let r = &r;
            // A class calls what its own body does, not what its methods do (they are
            // callees of their own); a file, what its top level does.
            if (CLASS_LIKE.contains(&def.kind.as_str()) || def.kind == "file")
                && self
                    .resolver
                    .enclosing(&def.path, r.line)?
                    .is_some_and(|inner| inner.qualified != def.qualified)
            {
                continue;
            }
            let (to, label, rule, candidates) = match self.resolver.resolve(&def.path, r)? {
                Resolution::Resolved(to, rule) => {
                    (Some(to), Label::Resolved, rule.into(), Defs::default())
                }
                Resolution::Ambiguous(defs) => {
                    (None, Label::Ambiguous, "several in scope".into(), defs)
                }
                Resolution::Unresolved(_) if r.kind == RefKind::Import => continue,
                Resolution::Unresolved(why) => (None, Label::Unresolved, why, Defs::default()),
            };
            // A recursive call is not a callee.
            if to.as_ref() == Some(def) {
                continue;
            }
            found.push(Link {
                from: def.clone(),
                to,
                name: r.name.clone(),
                path: def.path.clone(),
                line: r.line,
                label,
                rule,
                candidates,
                depth,
                kind: r.kind,
            });
        }
        Ok(found)
    }

    /// Callers of `targets`, level by level up to `depth`, following resolved and
    /// ambiguous links (with `impact`, bases and imports too).
    pub fn callers(
        &mut self,
        targets: &[Def],
        depth: u32,
        impact: bool,
    ) -> Result<GraphAnswer, Error> {
        self.levels(
            targets,
            depth,
            true,
            |walk, target, d, answer| {
                // Code at a file's top level has no callers of its own.
                if target.kind == "file" {
                    return Ok(Vec::new());
                }
                walk.callers_of(target, impact, d, answer)
            },
            |link| Some(&link.from),
        )
    }

    /// Callees of `targets`, level by level up to `depth`, following resolved links.
    pub fn callees(&mut self, targets: &[Def], depth: u32) -> Result<GraphAnswer, Error> {
        self.levels(
            targets,
            depth,
            false,
            |walk, target, d, _| walk.callees_of(target, d),
            |link| link.to.as_ref(),
        )
    }

    /// A breadth-first walk from `targets`: each level's links from `step`, the next level
    /// the definitions `next` names that were not seen, until `depth` or the link bound.
    /// With `callers`, each level's mentions are found first, on every core.
    fn levels(
        &mut self,
        targets: &[Def],
        depth: u32,
        callers: bool,
        mut step: impl FnMut(&mut Self, &Def, u32, &mut GraphAnswer) -> Result<Vec<Link>, Error>,
        next: impl Fn(&Link) -> Option<&Def>,
    ) -> Result<GraphAnswer, Error> {
        let mut answer = GraphAnswer {
            targets: targets.to_vec(),
            ..Default::default()
        };
        let mut seen: HashSet<Def> = targets.iter().cloned().collect();
        let mut level: Vec<Def> = targets.to_vec();
        for d in 1..=depth.clamp(1, MAX_DEPTH) {
            let mut following = Vec::new();
            // In blocks, so that the work done ahead stops near where the link bound does.
            'level: for block in level.chunks(PREFETCH_BLOCK) {
                if callers {
                    let names: Vec<&str> = block
                        .iter()
                        .filter(|t| t.kind != "file")
                        .map(|t| t.name.as_str())
                        .collect();
                    self.prefetch_mentions(&names)?;
                }
                for target in block {
                    for link in step(self, target, d, &mut answer)? {
                        if let Some(def) = next(&link)
                            && seen.insert(def.clone())
                        {
                            following.push(def.clone());
                        }
                        answer.links.push(link);
                    }
                    if answer.links.len() >= MAX_LINKS {
                        self.complete = false;
                        break 'level;
                    }
                }
            }
            if following.is_empty() || !self.complete {
                break;
            }
            level = following;
        }
        answer.complete = self.complete;
        Ok(answer)
    }

    /// What reaches `changed` by calls, inheritance and imports, nearest first, tests marked.
    pub fn impact(&mut self, changed: &[Def], depth: u32) -> Result<GraphAnswer, Error> {
        let mut answer = self.callers(changed, depth, true)?;
        let mut best: BTreeMap<Def, (u32, u32, Label)> = BTreeMap::new();
        for link in &answer.links {
            if changed.contains(&link.from) {
                continue;
            }
            let entry = best
                .entry(link.from.clone())
                .or_insert((link.depth, 0, link.label));
            entry.0 = entry.0.min(link.depth);
            entry.1 += 1;
            entry.2 = entry.2.min(link.label);
        }
        let mut impacted: Vec<Impacted> = best
            .into_iter()
            .map(|(def, (distance, fan_in, label))| Impacted {
                test: is_test(&def),
                def,
                distance,
                fan_in,
                label,
            })
            .collect();
        impacted.sort_by(|a, b| {
            (a.distance, b.fan_in, &a.def.path, a.def.lines.0).cmp(&(
                b.distance,
                a.fan_in,
                &b.def.path,
                b.def.lines.0,
            ))
        });
        answer.impacted = impacted;
        Ok(answer)
    }

    /// Shortest call paths from `from` to `to` (a few), up to `depth` calls.
    pub fn trace(&mut self, from: &[Def], to: &[Def], depth: u32) -> Result<GraphAnswer, Error> {
        let mut answer = GraphAnswer {
            targets: from.iter().chain(to).cloned().collect(),
            ..Default::default()
        };
        // Breadth first over callees; each definition's first links in.
        let mut parent: HashMap<Def, Vec<usize>> = HashMap::new();
        let mut dist: HashMap<Def, u32> = from.iter().map(|d| (d.clone(), 0)).collect();
        let mut queue: VecDeque<Def> = from.iter().cloned().collect();
        let mut reached: Vec<Def> = Vec::new();
        while let Some(def) = queue.pop_front() {
            let d = dist[&def];
            if d >= depth.clamp(1, MAX_DEPTH) || answer.links.len() >= MAX_LINKS {
                continue;
            }
            for link in self.callees_of(&def, d + 1)? {
                let targets: Vec<Def> = match &link.to {
                    Some(to) => vec![to.clone()],
                    None => link.candidates.to_vec(),
                };
                let index = answer.links.len();
                answer.links.push(link);
                for next in targets {
                    match dist.get(&next) {
                        Some(&seen) if seen < d + 1 => continue,
                        Some(_) => {}
                        None => {
                            dist.insert(next.clone(), d + 1);
                            if to.contains(&next) {
                                reached.push(next.clone());
                            } else {
                                queue.push_back(next.clone());
                            }
                        }
                    }
                    let into = parent.entry(next).or_default();
                    if into.len() < 3 {
                        into.push(index);
                    }
                }
            }
        }
        // Paths back from each reached target, a few per target.
        for end in reached {
            let mut partial: Vec<(Def, Vec<usize>)> = vec![(end, Vec::new())];
            while let Some((def, path)) = partial.pop() {
                if from.contains(&def) {
                    let mut path = path;
                    path.reverse();
                    answer.paths.push(path);
                    if answer.paths.len() >= 5 {
                        break;
                    }
                    continue;
                }
                for &index in parent.get(&def).into_iter().flatten() {
                    let mut longer = path.clone();
                    longer.push(index);
                    partial.push((answer.links[index].from.clone(), longer));
                }
            }
        }
        answer.paths.sort_by_key(Vec::len);
        // Only the links on a path are kept.
        let on_path: Vec<usize> = {
            let mut all: Vec<usize> = answer.paths.iter().flatten().copied().collect();
            all.sort_unstable();
            all.dedup();
            all
        };
        let renumber: HashMap<usize, usize> = on_path
            .iter()
            .enumerate()
            .map(|(new, old)| (*old, new))
            .collect();
        answer.links = on_path.iter().map(|i| answer.links[*i].clone()).collect();
        for path in &mut answer.paths {
            for index in path.iter_mut() {
                *index = renumber[index];
            }
        }
        answer.complete = self.complete;
        Ok(answer)
    }
}
