//! The code graph: who calls a definition (`callers`), what it calls (`callees`), what a
//! change reaches (`impact`), and how one definition reaches another (`trace`).
//!
//! Built at query time from what the index keeps per file (its symbols, and its calls,
//! bases and imports read by `chunk::syntax::refs`), so it is exactly as fresh as the
//! index and costs nothing to keep. Each edge is labelled: **resolved** by a scope rule
//! (`resolve`), **ambiguous** with its candidates, or, for callees, **unresolved** (outside
//! the project or dynamic). Calls of the name that resolve nowhere are counted, never
//! dropped silently: "no callers" is only said when no call of the name is left unexplained.

pub mod diff;
mod imported;
mod members;
pub mod memo;
mod mentions;
pub mod modules;
mod python;
mod receivers;
pub mod resolve;
mod rust;
mod script;
#[cfg(test)]
mod tests;
mod walk;
pub mod worktree;

use resolve::{Def, Defs, GraphView};
pub use walk::Walk;

use super::Searcher;
use crate::chunk::syntax::refs::RefKind;
use crate::error::{Error, IndexError, UserError};
use crate::index::ProjectIndex;
use crate::index::store::{StoredRefs, SymbolRecord};

/// Deepest a walk goes.
pub const MAX_DEPTH: u32 = 5;
/// Files read for one name at most.
const MAX_FILES: usize = 5_000;
/// Links kept per request at most; beyond it the answer says it is incomplete.
const MAX_LINKS: usize = 2_000;
/// Unresolved calls listed by example (all are counted).
const MAX_EXAMPLES: usize = 10;

/// How sure a link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Label {
    Resolved,
    Ambiguous,
    Unresolved,
}

impl Label {
    pub fn as_str(self) -> &'static str {
        match self {
            Label::Resolved => "resolved",
            Label::Ambiguous => "ambiguous",
            Label::Unresolved => "unresolved",
        }
    }
}

/// One call (or base class, or import) from `from` to `to`.
#[derive(Debug, Clone)]
pub struct Link {
    /// The calling definition (a `file` definition for code at a file's top level).
    pub from: Def,
    /// The definition called, when known.
    pub to: Option<Def>,
    /// The name as called.
    pub name: String,
    /// The call site.
    pub path: String,
    pub line: u32,
    pub label: Label,
    /// The rule that resolved it, or why it is unresolved.
    pub rule: String,
    /// What an ambiguous call may mean.
    pub candidates: Defs,
    /// Steps from the asked definitions (1 = direct).
    pub depth: u32,
    /// A call, a base class or an import.
    pub kind: RefKind,
}

/// A call of the asked name that resolved to nothing in the project.
#[derive(Debug, Clone)]
pub struct Unexplained {
    pub path: String,
    pub line: u32,
    pub why: String,
}

/// A definition a change reaches.
#[derive(Debug, Clone)]
pub struct Impacted {
    pub def: Def,
    /// Steps from the nearest changed definition.
    pub distance: u32,
    /// Links into it from what the change reaches.
    pub fan_in: u32,
    /// Whether it is a test.
    pub test: bool,
    /// The weakest label on the way from the change.
    pub label: Label,
}

/// A graph answer.
#[derive(Debug, Clone, Default)]
pub struct GraphAnswer {
    /// The definitions asked about (for `impact`: those the change touches).
    pub targets: Vec<Def>,
    /// When the asked name has several definitions and none was chosen: them, and nothing
    /// else (ask again with a qualified name or `path`).
    pub choices: Vec<Def>,
    pub links: Vec<Link>,
    /// Calls of the asked names resolved to nothing in the project, in all.
    pub unexplained: usize,
    pub unexplained_examples: Vec<Unexplained>,
    /// `impact`: what the change reaches, nearest first.
    pub impacted: Vec<Impacted>,
    /// `trace`: paths as indices into `links`.
    pub paths: Vec<Vec<usize>>,
    /// Whether every file and link was read.
    pub complete: bool,
}

/// A graph request.
#[derive(Debug, Clone, Default)]
pub struct GraphParams {
    /// Bare or qualified names (`impact` takes several; the others one).
    pub symbols: Vec<String>,
    /// `trace`: the definition to reach.
    pub to: Option<String>,
    /// A file or directory the asked definition is in.
    pub within: Option<String>,
    /// Levels to walk (1..=5).
    pub depth: u32,
    /// `impact`: `git diff` arguments naming the change (empty: the working tree against
    /// HEAD); used when `symbols` is empty.
    pub diff: Option<String>,
}

impl GraphView for ProjectIndex {
    fn symbols_of(&self, path: &str) -> Result<std::sync::Arc<Vec<SymbolRecord>>, IndexError> {
        self.store.shared_symbols_of(path)
    }
    fn refs_of(&self, path: &str) -> Result<std::sync::Arc<StoredRefs>, IndexError> {
        self.store.refs_of(path)
    }
    fn language_of(&self, path: &str) -> Result<Option<String>, IndexError> {
        self.store.language_of(path)
    }
    fn symbols_named(&self, name: &str) -> Result<Vec<(String, SymbolRecord)>, IndexError> {
        self.store.symbols_named(name)
    }
    fn files_mentioning(&self, name: &str, limit: usize) -> Result<Vec<String>, IndexError> {
        // The index keeps words lowercase, without outer underscores (`_private`, `$x`).
        let word = name.trim_matches(['_', '-', '$']).to_lowercase();
        let ids = self.lexical.chunk_ids_with_word(&word)?;
        let mut paths = self.store.paths_of_chunks(&ids)?;
        paths.truncate(limit);
        Ok(paths)
    }
}

/// Whether a definition is a test, by its path or name.
pub fn is_test(def: &Def) -> bool {
    let lower = def.path.to_lowercase();
    let (dirs, file) = lower.rsplit_once('/').unwrap_or(("", &lower));
    let stem = file.split('.').next().unwrap_or(file);
    dirs.split('/')
        .any(|d| matches!(d, "test" | "tests" | "__tests__" | "spec" | "testing"))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || file.contains(".test.")
        || file.contains(".spec.")
        || def.name.starts_with("test")
        || def.name.starts_with("Test")
}

/// A file's path names its top level, which `callees` and a trace's start take; nothing
/// calls a file, so `callers` of one would answer "none": an error says what to ask instead.
fn definitions_only(targets: &[Def], kind: &str) -> Result<(), Error> {
    match targets.iter().find(|d| d.kind == "file") {
        Some(file) => Err(UserError::InvalidArgument {
            name: "symbol",
            reason: format!(
                "`{}` is a file: `{kind}` takes a definition in it (`callees` takes a file, for what its top level imports and calls; `usages` finds where a name is mentioned)",
                file.path
            ),
        }
        .into()),
        None => Ok(()),
    }
}

impl Searcher<'_> {
    /// The definitions a request names, or the choice between them.
    fn graph_targets(
        &self,
        walk: &Walk<'_>,
        name: &str,
        within: Option<&str>,
    ) -> Result<Vec<Def>, Error> {
        let defs = walk.definitions(name, within)?;
        if defs.is_empty() {
            // "No definition" is no answer while files wait to be parsed.
            let unparsed = match self.index.progress.provisional() {
                0 => String::new(),
                n => format!(
                    "; {n} files are not parsed yet and may define it: ask again once `index-status` shows none left"
                ),
            };
            return Err(UserError::InvalidArgument {
                name: "symbol",
                reason: format!(
                    "no definition of `{name}` in this project{} (`usages` finds every mention of a name){unparsed}",
                    within.map(|w| format!(" under `{w}`")).unwrap_or_default()
                ),
            }
            .into());
        }
        Ok(defs)
    }

    /// A walk over this project, with the mentions kept from earlier requests.
    fn walk(&self) -> Walk<'_> {
        let memo = self.graph_memo.up_to_date(self.index, &self.index.changes);
        Walk::with_memo(self.index, Some(memo))
    }

    /// Calls of the bare `name` that this project does not define (`callers` asked from
    /// another project with `projects`).
    pub fn calls_from_outside(&self, name: &str) -> Result<Vec<Link>, Error> {
        self.walk().calls_from_outside(name)
    }

    /// Run a graph request: `kind` is `callers`, `callees`, `impact` or `trace`.
    pub fn graph(&self, kind: &str, params: &GraphParams) -> Result<GraphAnswer, Error> {
        let mut walk = self.walk();
        let within = params
            .within
            .as_deref()
            .map(str::trim)
            .filter(|w| !w.is_empty());
        let depth = params.depth.clamp(1, MAX_DEPTH);
        let one = |walk: &Walk<'_>| -> Result<Result<Vec<Def>, GraphAnswer>, Error> {
            let name = params
                .symbols
                .first()
                .map(String::as_str)
                .unwrap_or_default();
            let defs = self.graph_targets(walk, name, within)?;
            Ok(if defs.len() > 1 {
                Err(GraphAnswer {
                    choices: defs,
                    complete: true,
                    ..Default::default()
                })
            } else {
                Ok(defs)
            })
        };
        match kind {
            "callers" | "callees" => {
                let targets = match one(&walk)? {
                    Ok(targets) => targets,
                    Err(choice) => return Ok(choice),
                };
                if kind == "callers" {
                    definitions_only(&targets, kind)?;
                    walk.callers(&targets, depth, false)
                } else {
                    walk.callees(&targets, depth)
                }
            }
            "trace" => {
                let from = match one(&walk)? {
                    Ok(targets) => targets,
                    Err(choice) => return Ok(choice),
                };
                let to_name = params.to.as_deref().unwrap_or_default();
                let to = self.graph_targets(&walk, to_name, None)?;
                definitions_only(&to, "trace to")?;
                walk.trace(&from, &to, depth)
            }
            "impact" => {
                let changed = if params.symbols.is_empty() {
                    diff::changed_definitions(
                        self.root,
                        params.diff.as_deref(),
                        &walk.resolver,
                        (&self.graph_memo.diff, &self.index.changes),
                    )?
                } else {
                    let mut all = Vec::new();
                    for name in &params.symbols {
                        all.extend(self.graph_targets(&walk, name, within)?);
                    }
                    definitions_only(&all, kind)?;
                    all
                };
                walk.impact(&changed, depth)
            }
            other => Err(UserError::InvalidArgument {
                name: "kind",
                reason: format!("unknown graph request `{other}`"),
            }
            .into()),
        }
    }
}
