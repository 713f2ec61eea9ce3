//! A name's mentions: every reference to it in the project, resolved, with the definition
//! around each (what `callers` and `impact` are made of, and what the memo keeps).

use super::MAX_FILES;
use super::resolve::{Def, Resolution, Resolver};
use crate::chunk::syntax::refs::{Import, RefKind, Reference};
use crate::error::Error;

/// A reference to a name, where it is, what it resolved to and what encloses it.
#[derive(Clone)]
pub(super) struct Mention {
    pub path: String,
    pub reference: Reference,
    pub resolution: Resolution,
    pub from: Def,
}

impl Mention {
    /// About what it takes in memory.
    pub(super) fn bytes(&self) -> usize {
        let def = |d: &Def| d.path.len() + d.qualified.len() + d.name.len() + d.kind.len();
        let resolution = match &self.resolution {
            Resolution::Resolved(to, _) => def(to),
            // The candidates are shared with the name's other calls.
            Resolution::Ambiguous(_) => 0,
            Resolution::Unresolved(why) => why.len(),
        };
        std::mem::size_of::<Mention>()
            + self.path.len()
            + self.reference.name.len()
            + self.reference.receiver.as_ref().map_or(0, String::len)
            + def(&self.from)
            + resolution
    }
}

/// The definition of the file itself, for code at its top level.
pub(super) fn file_def(path: &str, line: u32) -> Def {
    Def {
        path: path.to_string(),
        qualified: path.to_string(),
        name: path.rsplit('/').next().unwrap_or(path).to_string(),
        kind: "file".into(),
        lines: (line, line),
    }
}

/// Every reference to `name` (or to an alias of it) in the project, resolved by
/// `resolver`, with the definition around it; and whether every file holding it was read.
pub(super) fn find_mentions(
    resolver: &Resolver<'_>,
    name: &str,
) -> Result<(Vec<Mention>, bool), Error> {
    let (files, aliases, complete) = files_mentioning(resolver, name)?;
    let mut out = Vec::new();
    for path in files {
        out.extend(mentions_in(resolver, name, &aliases, &path)?);
    }
    Ok((out, complete))
}

/// The files that may mention `name`, in the order its mentions are listed, then those that
/// may mention it by another name a re-export gives it (`export { name as alias } from`,
/// `from .x import name as alias` in a package's `__init__.py`); those names; and whether
/// that is all of the files.
pub(super) fn files_mentioning(
    resolver: &Resolver<'_>,
    name: &str,
) -> Result<(Vec<String>, Vec<String>, bool), Error> {
    let mut files = resolver.view().files_mentioning(name, MAX_FILES)?;
    let mut complete = files.len() < MAX_FILES;
    let mut aliases: Vec<String> = Vec::new();
    for path in &files {
        let refs = resolver.refs(path)?;
        for import in &refs.imports {
            if import.name.as_deref() == Some(name)
                && import.local != name
                && !aliases.contains(&import.local)
            {
                aliases.push(import.local.clone());
            }
        }
    }
    for alias in &aliases {
        let more = resolver.view().files_mentioning(alias, MAX_FILES)?;
        complete &= more.len() < MAX_FILES;
        for path in more {
            if files.len() >= MAX_FILES {
                complete = false;
                break;
            }
            if !files.contains(&path) {
                files.push(path);
            }
        }
    }
    Ok((files, aliases, complete))
}

/// The references to `name` in the file at `path` (or to a local name an import there binds
/// to it or to one of `aliases`, the names re-exports give it), resolved.
pub(super) fn mentions_in(
    resolver: &Resolver<'_>,
    name: &str,
    aliases: &[String],
    path: &str,
) -> Result<Vec<Mention>, Error> {
    let refs = resolver.refs(path)?;
    let binds = |import: &Import| {
        (import.name.as_deref()).is_some_and(|n| n == name || aliases.iter().any(|a| a == n))
    };
    // Local names bound to the name by an import (`save as store`, `import {
    // callTRPCProcedure }` of a re-export's). A few names, compared directly (hashing each
    // of a file's references cost more than the rest of the walk).
    let mut names: Vec<&str> = vec![name];
    for import in refs.imports.iter().filter(|i| binds(i)) {
        if !names.contains(&import.local.as_str()) {
            names.push(import.local.as_str());
        }
    }
    let mut out = Vec::new();
    for r in refs.named(&names) {
        let r = r.to_reference();
        out.push(Mention {
            resolution: resolver.resolve(path, &r)?,
            from: caller(resolver, path, &r)?,
            path: path.to_string(),
            reference: r,
        });
    }
    // The imports naming it, resolved as a use of the name they bind would be; one that
    // resolves to nothing in the project (an outside package's name) is no mention.
    for import in refs.imports.iter().filter(|i| binds(i)) {
        let r = import.to_reference();
        let resolution = resolver.resolve(path, &r)?;
        if matches!(resolution, Resolution::Unresolved(_)) {
            continue;
        }
        out.push(Mention {
            resolution,
            from: caller(resolver, path, &r)?,
            path: path.to_string(),
            reference: r,
        });
    }
    Ok(out)
}

/// The definition around a reference (a base class: the deriving class).
fn caller(resolver: &Resolver<'_>, path: &str, r: &Reference) -> Result<Def, Error> {
    let symbols = resolver.symbols(path)?;
    if r.kind == RefKind::Inherit
        && let Some(class) = symbols.iter().find(|s| s.start_line == r.line)
    {
        return Ok(Def::new(path, class));
    }
    Ok(resolver
        .enclosing_with(path, r.line, |symbol| Def::new(path, symbol))?
        .unwrap_or_else(|| file_def(path, r.line)))
}
