//! One query across projects: `search`, `usages` and `callers` over the asking project and
//! others this daemon has indexed (`projects: ["all"]` or a list of roots).
//!
//! Only projects with an index in this daemon's data directory can be named, so a caller
//! reaches nothing it could not already search from that project. Each project answers on
//! its own; search results are merged by score (fused scores are rank-based, a single leg's
//! are over its best, so they compare across projects), usages are listed project by
//! project, the asking one first.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, UserError};
use crate::index::lexical::LexicalHit;
use crate::project::{Project, SearchOutcome};
use crate::registry::Registry;
use crate::search::SearchParams;
use crate::search::graph::{GraphAnswer, GraphParams};
use crate::search::usages::{Usage, UsagesFound, UsagesParams};

/// The word that names every indexed project.
pub const ALL: &str = "all";

/// A hit and the root of the project it came from.
pub struct ProjectHit {
    /// The project's root.
    pub project: String,
    /// The hit.
    pub hit: LexicalHit,
}

/// The projects a request names, the asking one (`root`) first: every indexed project for
/// [`ALL`], else each given root, which must be an indexed project.
pub fn projects(
    registry: &Registry,
    root: &str,
    named: &[String],
) -> Result<Vec<Arc<Project>>, Error> {
    let asking = registry.open(root, false)?;
    let indexed = crate::index::indexed_roots(registry.data_dir());
    let mut roots: Vec<PathBuf> = Vec::new();
    if named.iter().any(|n| n == ALL) {
        // Only roots that are still the directories indexed: one replaced by a symlink (to a
        // directory never indexed) is not followed.
        roots.extend(
            indexed
                .iter()
                .filter(|r| r.canonicalize().is_ok_and(|c| &c == *r) && r.is_dir())
                .cloned(),
        );
    } else {
        for name in named {
            let path = crate::index::named_root(name);
            if !indexed.contains(&path) {
                return Err(UserError::InvalidArgument {
                    name: "projects",
                    reason: format!(
                        "{name:?} is not a project this daemon has indexed; give \"all\" or \
                         roots from `amanctl status`"
                    ),
                }
                .into());
            }
            roots.push(path);
        }
    }
    let mut out = vec![asking.clone()];
    for root in roots {
        if root == asking.root() {
            continue;
        }
        let project = registry.open(&root.to_string_lossy(), false)?;
        if !out.iter().any(|p| p.root() == project.root()) {
            out.push(project);
        }
    }
    Ok(out)
}

/// `params` in each project, merged by score and paged; the asking project's status and
/// semantic state stand for the answer.
pub fn search(
    projects: &[Arc<Project>],
    params: &SearchParams,
) -> Result<(SearchOutcome, Vec<String>), Error> {
    let each = SearchParams {
        limit: params.offset + params.limit,
        offset: 0,
        ..params.clone()
    };
    let mut merged: Vec<ProjectHit> = Vec::new();
    let mut total = 0;
    let mut first: Option<SearchOutcome> = None;
    for project in projects {
        let mut outcome = project.search(&each)?;
        total += outcome.total;
        let root = project.root().to_string_lossy().to_string();
        merged.extend(
            std::mem::take(&mut outcome.hits)
                .into_iter()
                .map(|hit| ProjectHit {
                    project: root.clone(),
                    hit,
                }),
        );
        first.get_or_insert(outcome);
    }
    merged.sort_by(|a, b| b.hit.score.total_cmp(&a.hit.score));
    let page: Vec<ProjectHit> = merged
        .into_iter()
        .skip(params.offset)
        .take(params.limit)
        .collect();
    let mut outcome = first.ok_or_else(|| UserError::InvalidArgument {
        name: "projects",
        reason: "no project to search".into(),
    })?;
    outcome.truncated = total > (params.offset + page.len()) as u64;
    outcome.total = total;
    let roots = page.iter().map(|p| p.project.clone()).collect();
    outcome.hits = page.into_iter().map(|p| p.hit).collect();
    Ok((outcome, roots))
}

/// `params` in each project, the asking one first, paged over the whole list. Each usage
/// comes with its project's root.
/// `callers` across projects: the asking project's answer, then each other project's calls
/// of the name that it does not define itself (unresolved there: they may be calls of the
/// asking project's definition, as a client's of its library), each link with its project
/// (`None` for the asking one's).
pub fn callers(
    projects: &[Arc<Project>],
    params: &GraphParams,
) -> Result<(GraphAnswer, Vec<Option<String>>), Error> {
    let (asking, others) = projects
        .split_first()
        .ok_or_else(|| UserError::InvalidArgument {
            name: "projects",
            reason: "no project to search".into(),
        })?;
    let mut answer = asking.graph("callers", params)?;
    let mut roots: Vec<Option<String>> = vec![None; answer.links.len()];
    // Only a definition the asking project singles out has callers elsewhere to look for.
    let Some(target) = answer.targets.first().filter(|_| answer.choices.is_empty()) else {
        return Ok((answer, roots));
    };
    let name = target.name.clone();
    for project in others {
        let root = project.root().to_string_lossy().to_string();
        for link in project.calls_from_outside(&name)? {
            answer.links.push(link);
            roots.push(Some(root.clone()));
        }
    }
    Ok((answer, roots))
}

pub fn usages(
    projects: &[Arc<Project>],
    params: &UsagesParams,
) -> Result<(UsagesFound, Vec<String>), Error> {
    let mut all: Vec<(String, Usage)> = Vec::new();
    let mut found: Option<UsagesFound> = None;
    let (mut files, mut definitions, mut complete) = (0, 0, true);
    for project in projects {
        let mut each = project.usages(&UsagesParams {
            offset: 0,
            limit: usize::MAX,
            ..params.clone()
        })?;
        let root = project.root().to_string_lossy().to_string();
        files += each.files;
        definitions += each.definitions;
        complete &= each.complete;
        all.extend(
            std::mem::take(&mut each.usages)
                .into_iter()
                .map(|u| (root.clone(), u)),
        );
        found.get_or_insert(each);
    }
    let mut found = found.ok_or_else(|| UserError::InvalidArgument {
        name: "projects",
        reason: "no project to search".into(),
    })?;
    found.total = all.len();
    found.files = files;
    found.definitions = definitions;
    found.complete = complete;
    let page: Vec<(String, Usage)> = all
        .into_iter()
        .skip(params.offset)
        .take(params.limit)
        .collect();
    let roots = page.iter().map(|(root, _)| root.clone()).collect();
    found.usages = page.into_iter().map(|(_, u)| u).collect();
    Ok((found, roots))
}
