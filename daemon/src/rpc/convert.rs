//! Replies built from the daemon's own types.

use amanmcp_proto::pb;

use crate::chunk::syntax::refs::RefKind;
use crate::index::progress::IndexState;
use crate::project::ProjectStatus;
use crate::search::Semantic;
use crate::search::graph::GraphAnswer;
use crate::search::graph::resolve::Def;

pub(super) fn project_status_to_pb(s: ProjectStatus) -> pb::ProjectStatus {
    let state = match s.state {
        IndexState::Indexing => pb::IndexState::Indexing,
        IndexState::Ready => pb::IndexState::Ready,
        IndexState::Error => pb::IndexState::Error,
    };
    pb::ProjectStatus {
        root: s.root.to_string_lossy().into_owned(),
        state: state as i32,
        files: s.files,
        chunks: s.chunks,
        files_done: s.files_done,
        files_total: s.files_total,
        index_bytes: s.index_bytes,
        source_bytes: s.source_bytes,
        skipped_files: s.skipped.iter().map(|(_, n)| n).sum(),
        last_error: s.last_error,
        last_pass_ms: s.last_pass_ms,
        passes: s.passes,
        last_pass_changed: s.last_pass_changed,
        last_pass_removed: s.last_pass_removed,
        notice: s.notice,
        watch: s.watch,
        provisional_files: s.provisional_files,
        resuming: s.resuming,
        vectors: s.vectors.map(|v| pb::VectorStatus {
            model: v.model,
            embedder: v.embedder,
            embedded: v.embedded,
            pending: v.pending,
            rate: v.rate,
            health: v.health,
            from_shared_cache: v.from_shared_cache,
        }),
        skipped: s
            .skipped
            .into_iter()
            .map(|(reason, files)| pb::SkipCount {
                reason: reason.to_string(),
                files,
            })
            .collect(),
    }
}

fn graph_def(def: Def) -> pb::GraphDef {
    pb::GraphDef {
        path: def.path,
        qualified: def.qualified,
        name: def.name,
        kind: def.kind,
        start_line: def.lines.0,
        end_line: def.lines.1,
    }
}

/// `projects`: each link's project when it is another one's (empty: all the asking one's).
/// Only the links from `offset`, `limit` at most (`None`: all), are sent: a wide `impact`
/// has thousands, each with up to ten candidates, and a client shows a page of them.
pub(super) fn graph_reply(
    answer: GraphAnswer,
    projects: Vec<Option<String>>,
    offset: usize,
    limit: Option<usize>,
    unparsed_files: u64,
) -> pb::GraphReply {
    let projects = projects.into_iter().chain(std::iter::repeat(None));
    pb::GraphReply {
        total_links: answer.links.len() as u32,
        targets: answer.targets.into_iter().map(graph_def).collect(),
        choices: answer.choices.into_iter().map(graph_def).collect(),
        links: answer
            .links
            .into_iter()
            .zip(projects)
            .skip(offset)
            .take(limit.unwrap_or(usize::MAX))
            .map(|(l, project)| pb::GraphLink {
                from: Some(graph_def(l.from)),
                to: l.to.map(graph_def),
                name: l.name,
                path: l.path,
                line: l.line,
                label: l.label.as_str().into(),
                rule: l.rule,
                candidates_total: l.candidates.len() as u32,
                // A name defined in hundreds of classes would make every link huge.
                candidates: l
                    .candidates
                    .iter()
                    .take(10)
                    .cloned()
                    .map(graph_def)
                    .collect(),
                depth: l.depth,
                inherits: l.kind == RefKind::Inherit,
                imports: l.kind == RefKind::Import,
                project,
            })
            .collect(),
        unexplained: answer.unexplained as u64,
        unexplained_examples: answer
            .unexplained_examples
            .into_iter()
            .map(|u| pb::GraphUnexplained {
                path: u.path,
                line: u.line,
                why: u.why,
            })
            .collect(),
        impacted: answer
            .impacted
            .into_iter()
            .map(|i| pb::GraphImpacted {
                def: Some(graph_def(i.def)),
                distance: i.distance,
                fan_in: i.fan_in,
                test: i.test,
                label: i.label.as_str().into(),
            })
            .collect(),
        paths: answer
            .paths
            .into_iter()
            .map(|p| pb::GraphPath {
                links: p.into_iter().map(|i| i as u32).collect(),
            })
            .collect(),
        complete: answer.complete && unparsed_files == 0,
        unparsed_files,
    }
}

/// Each item's project root (cross-project answers), then `None` for ever (the others).
pub(super) fn with_projects(projects: Vec<String>) -> impl Iterator<Item = Option<String>> {
    projects
        .into_iter()
        .map(Some)
        .chain(std::iter::repeat(None))
}

/// `projects`: each hit's project root, for cross-project searches.
pub(super) fn search_reply(
    outcome: crate::project::SearchOutcome,
    projects: Vec<String>,
) -> pb::SearchReply {
    let (semantic_used, vectors_complete, semantic_unavailable) = match outcome.semantic {
        Semantic::NotUsed => (false, false, None),
        Semantic::Used { complete } => (true, complete, None),
        Semantic::Unavailable(reason) => (false, false, Some(reason)),
    };
    pb::SearchReply {
        semantic_used,
        vectors_complete,
        semantic_unavailable,
        set_aside: outcome
            .set_aside
            .into_iter()
            .map(|(word, reason)| pb::SetAside {
                word,
                reason: reason.into(),
            })
            .collect(),
        results: outcome
            .hits
            .into_iter()
            .zip(with_projects(projects))
            .map(|(hit, project)| pb::SearchHit {
                project,
                path: hit.path,
                start_line: hit.start_line,
                end_line: hit.end_line,
                language: hit.language,
                symbol: hit.symbol,
                kind: hit.kind,
                score: hit.score,
                snippet: hit.body,
                why: hit.why,
                defines: hit.defines,
            })
            .collect(),
        total: outcome.total,
        truncated: outcome.truncated,
        index: Some(project_status_to_pb(outcome.status)),
    }
}
