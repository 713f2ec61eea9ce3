//! One view of a project's status, shared by `amanctl status`/`amanctl index` and the MCP
//! tools: the JSON object, the text, the notices, and following a pass to its end.

use std::time::Duration;

use amanmcp_proto::pb;
use serde_json::{Map, Value, json};

use crate::link::{DaemonLink, LinkError, state_name};

/// The short index state every search-shaped reply carries.
pub fn index_summary(status: &pb::ProjectStatus) -> Value {
    let mut summary = json!({
        "state": state_name(status.state),
        "files": status.files,
        "chunks": status.chunks,
    });
    if let Some(vectors) = &status.vectors {
        summary["embedded"] = json!(vectors.embedded);
    }
    summary
}

/// The query words a search set aside, each with the reason, as JSON (`set_aside` of the
/// `search` tool's structured answer and of `amanctl search --json`).
pub fn set_aside_json(reply: &pb::SearchReply) -> Value {
    reply
        .set_aside
        .iter()
        .map(|a| json!({"word": a.word, "reason": a.reason}))
        .collect()
}

/// The embedder's state as JSON (`index-status`, `amanctl status --json`).
pub fn embedding_json(vectors: &pb::VectorStatus) -> Value {
    let mut out = json!({
        "model": vectors.model,
        "embedder": vectors.embedder,
        "embedded": vectors.embedded,
        "pending": vectors.pending,
        "chunks_per_second": vectors.rate,
        "health": vectors.health,
        "from_shared_cache": vectors.from_shared_cache,
    });
    if let Some(eta) = eta_seconds(vectors) {
        out["eta_seconds"] = json!(eta);
    }
    out
}

/// Seconds until every chunk has its vector at the current rate (`None`: nothing pending,
/// or no rate yet).
fn eta_seconds(vectors: &pb::VectorStatus) -> Option<f64> {
    (vectors.pending > 0 && vectors.rate > 0.0)
        .then(|| (vectors.pending as f64 / vectors.rate).ceil())
}

/// Embedding progress as words: `1200/3400 chunks embedded (85.2 chunks/s, ~27 s left)`.
pub fn embedding_progress(vectors: &pb::VectorStatus) -> String {
    let total = vectors.embedded + vectors.pending;
    let mut out = format!("{}/{} chunks embedded", vectors.embedded, total);
    if let Some(eta) = eta_seconds(vectors) {
        out.push_str(&format!(
            " ({:.1} chunks/s, ~{eta:.0} s left)",
            vectors.rate
        ));
    }
    out
}

/// What a `lookup` or graph answer lacks while a large first index is still being parsed.
pub fn unparsed_notice(unparsed_files: u64) -> Option<String> {
    (unparsed_files > 0).then(|| {
        format!(
            "{unparsed_files} files are searchable but not parsed yet (a large first index reads every file before it parses them): definitions and calls in them are missing from this answer. Ask again once `index-status` shows no files left to parse."
        )
    })
}

pub fn indexing_notice(status: &pb::ProjectStatus) -> Option<String> {
    (state_name(status.state) == "indexing").then(|| {
        let lexical_done = status.files_total > 0 && status.files_done >= status.files_total;
        // After a quick first pass (every file searchable by lines), the second parses them.
        if status.provisional_files > 0 && (status.passes > 0 || status.resuming) {
            format!(
                "Keyword search covers every file; {} files are still being parsed, so lookup, usages and the code graph miss their definitions for now.",
                status.provisional_files
            )
        } else if let Some(vectors) = status.vectors.as_ref().filter(|v| v.pending > 0 && lexical_done) {
            format!(
                "Keyword search is complete; semantic vectors are still being computed ({}), so meaning-based ranking may miss some code.",
                embedding_progress(vectors)
            )
        } else if status.resuming {
            format!(
                "The index as the daemon last left it is searchable in full; files changed since are being looked for ({}/{} files checked), so edits made while the daemon was stopped may not show yet.",
                status.files_done, status.files_total
            )
        } else if status.files_total == 0 {
            "The index is still being built (scanning files); results may be incomplete.".into()
        } else {
            format!(
                "The index is still being built ({}/{} files done); results may be incomplete.",
                status.files_done, status.files_total
            )
        }
    })
}

/// Everything the daemon reports about a project, as JSON (`index-status`'s structured
/// content and each project of `amanctl status --json`).
pub fn project_json(status: &pb::ProjectStatus) -> Value {
    let mut out = index_summary(status);
    let skipped: Map<String, Value> = status
        .skipped
        .iter()
        .map(|s| (s.reason.clone(), json!(s.files)))
        .collect();
    for (key, value) in [
        ("root", json!(status.root)),
        ("files_done", json!(status.files_done)),
        ("files_total", json!(status.files_total)),
        ("index_bytes", json!(status.index_bytes)),
        ("source_bytes", json!(status.source_bytes)),
        ("skipped_files", json!(status.skipped_files)),
        ("skipped", Value::Object(skipped)),
        ("last_pass_ms", json!(status.last_pass_ms)),
        ("last_pass_changed", json!(status.last_pass_changed)),
        ("last_pass_removed", json!(status.last_pass_removed)),
        ("passes", json!(status.passes)),
        ("watch", json!(status.watch)),
        ("provisional_files", json!(status.provisional_files)),
        ("resuming", json!(status.resuming)),
    ] {
        out[key] = value;
    }
    if let Some(error) = &status.last_error {
        out["last_error"] = json!(error);
    }
    if let Some(notice) = &status.notice {
        out["notice"] = json!(notice);
    }
    if let Some(vectors) = &status.vectors {
        out["embedding"] = embedding_json(vectors);
    }
    out
}

/// The same as text, one `Label: value` line each.
pub fn project_text(status: &pb::ProjectStatus) -> String {
    let state = match state_name(status.state) {
        "indexing" if status.resuming => format!(
            "indexing (the last run's index searchable in full; looking for files changed since: {}/{} files checked)",
            status.files_done, status.files_total
        ),
        "indexing" => format!(
            "indexing ({}/{} files checked)",
            status.files_done, status.files_total
        ),
        other => other.to_string(),
    };
    let mut text = format!(
        "Project {}\nState: {state}\nFiles: {}  Chunks: {}\nIndex size: {} (source {})\n",
        status.root,
        status.files,
        status.chunks,
        human_bytes(status.index_bytes),
        human_bytes(status.source_bytes),
    );
    if !status.skipped.is_empty() {
        let parts: Vec<String> = status
            .skipped
            .iter()
            .map(|s| format!("{} {}", s.files, s.reason))
            .collect();
        text.push_str(&format!("Skipped: {}\n", parts.join(", ")));
    }
    text.push_str(&format!(
        "Last pass: {} ms, {} files changed, {} removed\n",
        status.last_pass_ms, status.last_pass_changed, status.last_pass_removed
    ));
    if status.provisional_files > 0 {
        text.push_str(&format!(
            "Parsing: {} files searchable by their words, their definitions not read yet\n",
            status.provisional_files
        ));
    }
    text.push_str(&format!("Watching: {}\n", status.watch));
    match &status.vectors {
        Some(vectors) => text.push_str(&format!(
            "Semantic: {}; embedder {} ({})\n",
            embedding_progress(vectors),
            vectors.embedder,
            vectors.health
        )),
        None => text.push_str("Semantic: off (keyword search only)\n"),
    }
    if let Some(notice) = &status.notice {
        text.push_str(&format!("Notice: {notice}\n"));
    }
    text.push_str(&format!(
        "Last error: {}\n",
        status.last_error.as_deref().unwrap_or("none")
    ));
    text
}

/// One project in one line, as `amanctl status` lists them: state, root, size, and progress
/// while indexing or embedding (or that it is keyword only); then, indented, an error or
/// notice when there is one.
pub fn project_line(status: &pb::ProjectStatus) -> String {
    let state = state_name(status.state);
    let progress = match (&status.vectors, state) {
        (_, "indexing") if status.resuming => format!(
            "  checking for changes since the last run, {}/{} files",
            status.files_done, status.files_total
        ),
        (_, "indexing") if status.files_total > 0 && status.files_done < status.files_total => {
            format!(
                "  {}% of files ({}/{})",
                status.files_done * 100 / status.files_total,
                status.files_done,
                status.files_total
            )
        }
        (_, "indexing") if status.provisional_files > 0 => {
            format!("  parsing, {} files to go", status.provisional_files)
        }
        (Some(v), _) if v.pending > 0 => {
            let total = v.embedded + v.pending;
            let mut out = format!("  vectors {}%", v.embedded * 100 / total.max(1));
            if let Some(eta) = eta_seconds(v) {
                out.push_str(&format!(", ~{eta:.0} s left"));
            }
            out
        }
        (None, _) => "  keyword only".to_string(),
        _ => String::new(),
    };
    let mut line = format!(
        "{state:<9} {}  {} files, {} chunks, {}{progress}",
        status.root,
        status.files,
        status.chunks,
        human_bytes(status.index_bytes),
    );
    if let Some(error) = &status.last_error {
        line.push_str(&format!("\n          error: {error}"));
    }
    if let Some(notice) = &status.notice {
        line.push_str(&format!("\n          {notice}"));
    }
    line
}

/// `seconds` as people say it: `42s`, `5m 3s`, `2h 10m`, `3d 4h`.
pub fn human_duration(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// `n` bytes in binary units: `12.3 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The project's status now (`None` if the daemon no longer holds it).
pub async fn current(
    link: &DaemonLink,
    root: &str,
) -> Result<Option<pb::ProjectStatus>, LinkError> {
    let reply = link
        .call(|mut client| async move {
            client
                .status(pb::StatusRequest {})
                .await
                .map(|r| r.into_inner())
        })
        .await?;
    Ok(reply.projects.into_iter().find(|p| p.root == root))
}

/// Poll the project's status every `every` from `status` until `done` says so, awaiting
/// `on_step` with each status first (it may stop early by answering `false`). Returns the
/// last status seen.
pub async fn follow<Fut: Future<Output = bool>>(
    link: &DaemonLink,
    mut status: pb::ProjectStatus,
    every: Duration,
    mut done: impl FnMut(&pb::ProjectStatus) -> bool,
    mut on_step: impl FnMut(pb::ProjectStatus) -> Fut,
) -> Result<pb::ProjectStatus, LinkError> {
    while !done(&status) {
        if !on_step(status.clone()).await {
            break;
        }
        tokio::time::sleep(every).await;
        if let Some(now) = current(link, &status.root).await? {
            status = now;
        }
    }
    Ok(status)
}
