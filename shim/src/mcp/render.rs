//! Rendering daemon replies as MCP tool results: readable text for the model plus
//! `structuredContent` matching each tool's output schema.

use amanmcp_proto::pb;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use super::budget::{self, Shape};
use crate::preview;
use crate::status::{index_summary, indexing_notice, set_aside_json};

/// Render a search-shaped reply (a page starting at `offset`) as readable text plus
/// `structuredContent`, within `shape`'s token budget.
pub fn search_result(
    label: &str,
    query: &str,
    mut reply: pb::SearchReply,
    shape: Shape,
    offset: u64,
    context: &[(String, u32, Value)],
) -> CallToolResult {
    let index = reply.index.clone().unwrap_or_default();
    // Long chunks are shown by their first line and the lines that match the query.
    let matcher = preview::Matcher::new(query);
    for hit in &mut reply.results {
        let parts = matcher.preview(&hit.snippet, hit.start_line, preview::PREVIEW_LINES);
        hit.snippet = preview::text(&parts);
    }
    let fitted = budget::fit_hits(&reply.results, shape);
    reply.results = fitted.hits;
    let results: Vec<Value> = reply
        .results
        .iter()
        .map(|hit| {
            let mut item = json!({
                "path": hit.path,
                "start_line": hit.start_line,
                "end_line": hit.end_line,
                "language": hit.language,
                "score": hit.score,
            });
            if shape.compact {
                item["first_line"] = json!(budget::first_line(&hit.snippet));
            } else {
                item["snippet"] = json!(hit.snippet);
            }
            if let Some(symbol) = &hit.symbol {
                item["symbol"] = json!(symbol);
            }
            if let Some(kind) = &hit.kind {
                item["kind"] = json!(kind);
            }
            if !hit.why.is_empty() {
                item["why"] = json!(hit.why);
            }
            if !hit.defines.is_empty() {
                item["defines"] = json!(hit.defines);
            }
            if let Some(project) = &hit.project {
                item["project"] = json!(project);
            }
            if let Some(graph) = context_of(context, hit) {
                item["graph"] = graph.clone();
            }
            item
        })
        .collect();
    let mut notice = indexing_notice(&index);
    if let Some(reason) = &reply.semantic_unavailable {
        let text = format!("Semantic search unavailable ({reason}); these are keyword results.");
        notice = Some(match notice {
            Some(n) => format!("{n} {text}"),
            None => text,
        });
    }
    let mut structured = json!({
        "results": results,
        "total": reply.total,
        "truncated": reply.truncated,
        "index": index_summary(&index),
        "semantic": reply.semantic_used,
        "vectors_complete": reply.vectors_complete,
    });
    if let Some(notice) = &notice {
        structured["notice"] = json!(notice);
    }
    if !reply.set_aside.is_empty() {
        structured["set_aside"] = set_aside_json(&reply);
    }
    let mut text = render_search(label, &reply, notice.as_deref(), shape.compact, context);
    if fitted.cut || fitted.omitted > 0 {
        if fitted.cut
            && let Some(last) = structured["results"]
                .as_array_mut()
                .and_then(|r| r.last_mut())
        {
            budget::mark(last, "cut", json!(true));
        }
        structured["omitted"] = json!(fitted.omitted);
        let next = (fitted.omitted > 0).then(|| offset + reply.results.len() as u64);
        text.push('\n');
        text.push_str(&budget::omitted_note(
            fitted.omitted,
            fitted.cut,
            shape,
            next,
        ));
        text.push('\n');
    }
    structured_result(text, structured)
}

/// The graph context (`context: graph`) given for `hit`, if any.
fn context_of<'c>(context: &'c [(String, u32, Value)], hit: &pb::SearchHit) -> Option<&'c Value> {
    context
        .iter()
        .find(|(path, line, _)| *path == hit.path && *line == hit.start_line)
        .map(|(_, _, graph)| graph)
}

/// ` (called by A, B +3; calls C)`: a result's graph context, after its header.
fn neighbourhood_line(graph: &Value) -> String {
    let part = |kind: &str, label: &str| {
        let names: Vec<&str> = graph[kind]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let total = graph[format!("{kind}_total")].as_u64().unwrap_or(0) as usize;
        if total == 0 {
            return format!("{label} none");
        }
        let more = total.saturating_sub(names.len());
        let more = if more > 0 {
            format!(" +{more}")
        } else {
            String::new()
        };
        format!("{label} {}{more}", names.join(", "))
    };
    let unexplained = match graph["unexplained"].as_u64() {
        Some(n) if n > 0 => format!(", {n} unresolved call(s) of the name"),
        _ => String::new(),
    };
    format!(
        " ({}; {}{unexplained})",
        part("callers", "called by"),
        part("callees", "calls")
    )
}

/// A successful result: `text` for the model, `structured` for the client.
pub fn structured_result(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// A `lookup` reply: each match's code with its place, kind and enclosing symbol, within
/// `shape`'s token budget (code cut at a line end, further matches left out).
pub fn lookup_result(
    symbol: Option<&str>,
    reply: &pb::LookupReply,
    shape: Shape,
) -> CallToolResult {
    let mut left = shape.max_tokens.saturating_sub(60);
    let mut fitted: Vec<pb::LookupMatch> = Vec::new();
    let mut budget_cut = false;
    for m in &reply.matches {
        let header =
            budget::tokens(&m.path) + 20 + m.signature.as_deref().map_or(0, budget::tokens);
        let body = budget::tokens(&m.code);
        if header + body <= left {
            left -= header + body;
            fitted.push(m.clone());
            continue;
        }
        if left > header + 40 || fitted.is_empty() {
            let (part, lines) = budget::cut_at_lines(&m.code, left.saturating_sub(header));
            let mut m = m.clone();
            m.end_line = m.start_line + (lines as u32).max(1) - 1;
            m.code = part.to_string();
            m.truncated = true;
            fitted.push(m);
            budget_cut = true;
        }
        break;
    }
    let omitted = reply.matches.len() - fitted.len();
    let matches: Vec<Value> = fitted
        .iter()
        .map(|m| {
            let mut item = json!({
                "path": m.path,
                "start_line": m.start_line,
                "end_line": m.end_line,
                "language": m.language,
                "code": m.code,
                "truncated": m.truncated,
                "total_lines": m.total_lines,
            });
            for (key, value) in [
                ("symbol", &m.symbol),
                ("kind", &m.kind),
                ("signature", &m.signature),
                ("enclosing", &m.enclosing),
            ] {
                if let Some(value) = value {
                    item[key] = json!(value);
                }
            }
            item
        })
        .collect();
    let mut structured = json!({"matches": matches, "total": reply.total});
    if omitted > 0 {
        structured["omitted"] = json!(omitted);
    }
    let mut text = String::new();
    if let Some(notice) = crate::status::unparsed_notice(reply.unparsed_files) {
        text.push_str(&format!("Note: {notice}\n"));
        structured["notice"] = json!(notice);
    }
    if reply.matches.is_empty() {
        text.push_str(&format!(
            "No symbol named {:?} in the index.",
            symbol.unwrap_or_default()
        ));
    }
    for m in &fitted {
        text.push_str(&format!("{}:{}-{}", m.path, m.start_line, m.end_line));
        if let (Some(kind), Some(symbol)) = (&m.kind, &m.symbol) {
            text.push_str(&format!(" {kind} {symbol}"));
        }
        if let Some(enclosing) = &m.enclosing {
            text.push_str(&format!(" (in {enclosing})"));
        }
        text.push_str(&format!("\n```{}\n{}\n```\n", m.language, m.code));
        if m.truncated {
            text.push_str(&format!(
                "(cut after line {} of {}; pass start_line: {} for more)\n",
                m.end_line,
                m.total_lines,
                m.end_line + 1
            ));
        }
    }
    if omitted > 0 || budget_cut {
        text.push_str(&format!(
            "({omitted} more matches left out to stay within max_tokens={}; ask with a larger `max_tokens`, a `kind`, or a `path`)\n",
            shape.max_tokens
        ));
    }
    structured_result(text, structured)
}

fn render_search(
    query: &str,
    reply: &pb::SearchReply,
    notice: Option<&str>,
    compact: bool,
    context: &[(String, u32, Value)],
) -> String {
    let mut out = String::new();
    if let Some(notice) = notice {
        out.push_str(notice);
        out.push_str("\n\n");
    }
    for aside in &reply.set_aside {
        out.push_str(&format!(
            "Not searched for: {} ({}).\n",
            aside.word, aside.reason
        ));
    }
    if !reply.set_aside.is_empty() {
        out.push('\n');
    }
    if reply.results.is_empty() {
        out.push_str(&format!("No results for {query}."));
        return out;
    }
    out.push_str(&format!(
        "{} of {} results for {query}:\n",
        reply.results.len(),
        reply.total
    ));
    for hit in &reply.results {
        out.push('\n');
        if let Some(project) = &hit.project {
            out.push_str(&format!("{project}: "));
        }
        out.push_str(&format!("{}:{}-{}", hit.path, hit.start_line, hit.end_line));
        if let Some(symbol) = &hit.symbol {
            out.push_str(&format!(" {symbol}"));
            if let Some(kind) = &hit.kind {
                out.push_str(&format!(" ({kind})"));
            }
        }
        if !hit.defines.is_empty() {
            out.push_str(&format!(", also {}", hit.defines.join(", ")));
        }
        if let Some(graph) = context_of(context, hit) {
            out.push_str(&neighbourhood_line(graph));
        }
        if compact {
            out.push_str(&format!(
                " score {:.2}\n  {}\n",
                hit.score,
                budget::first_line(&hit.snippet)
            ));
            continue;
        }
        out.push_str(&format!(" score {:.2}\n```{}\n", hit.score, hit.language));
        out.push_str(&hit.snippet);
        if !hit.snippet.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("```\n");
    }
    if reply.truncated {
        out.push_str("\n(more results exist; raise `limit` or narrow with `path`/`language`)\n");
    }
    out
}

/// The heading a usage is grouped under: its path, after its project's root if it has one.
fn usage_place(usage: &pb::Usage) -> String {
    match &usage.project {
        Some(project) => format!("{project}: {}", usage.path),
        None => usage.path.clone(),
    }
}

/// A `usages` reply: occurrences grouped by file, definitions first, within `shape`'s token
/// budget; says how to read on when occurrences are left out.
pub fn usages_result(reply: &pb::UsagesReply, shape: Shape, offset: u64) -> CallToolResult {
    let mut left = shape.max_tokens.saturating_sub(80);
    let mut fitted: Vec<&pb::Usage> = Vec::new();
    let mut last_place: Option<String> = None;
    for usage in &reply.usages {
        let mut cost =
            budget::tokens(&usage.text) + usage.enclosing.as_deref().map_or(0, budget::tokens) + 8;
        let place = usage_place(usage);
        if last_place.as_ref() != Some(&place) {
            cost += budget::tokens(&place) + 2;
        }
        if cost > left && !fitted.is_empty() {
            break;
        }
        left = left.saturating_sub(cost);
        last_place = Some(place);
        fitted.push(usage);
    }
    let shown_end = offset + fitted.len() as u64;
    let next_offset = (shown_end < reply.total).then_some(shown_end);
    let usages: Vec<Value> = fitted
        .iter()
        .map(|u| {
            let mut item = json!({
                "path": u.path,
                "line": u.line,
                "column": u.column,
                "text": u.text,
                "definition": u.definition,
                "language": u.language,
            });
            if let Some(enclosing) = &u.enclosing {
                item["enclosing"] = json!(enclosing);
            }
            if let Some(project) = &u.project {
                item["project"] = json!(project);
            }
            item
        })
        .collect();
    let mut structured = json!({
        "name": reply.name,
        "usages": usages,
        "total": reply.total,
        "files": reply.files,
        "definitions": reply.definitions,
        "complete": reply.complete,
    });
    if let Some(next) = next_offset {
        structured["next_offset"] = json!(next);
    }
    let mut text = if reply.total == 0 {
        format!("`{}` occurs nowhere in the index.", reply.name)
    } else {
        let plural = |n: u64, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        format!(
            "`{}`: {} in {} ({}){}:\n",
            reply.name,
            plural(reply.total, "occurrence"),
            plural(reply.files, "file"),
            plural(reply.definitions, "definition"),
            if offset > 0 {
                format!(", from {}", offset + 1)
            } else {
                String::new()
            }
        )
    };
    let mut last_place: Option<String> = None;
    for u in &fitted {
        let place = usage_place(u);
        if last_place.as_ref() != Some(&place) {
            text.push_str(&format!("\n{place}\n"));
            last_place = Some(place);
        }
        text.push_str(&format!("  {}:{}", u.line, u.column));
        if u.definition {
            text.push_str(" definition");
        }
        if let Some(enclosing) = &u.enclosing {
            text.push_str(&format!(" (in {enclosing})"));
        }
        text.push_str(&format!("  {}\n", u.text));
    }
    if let Some(next) = next_offset {
        text.push_str(&format!(
            "\n({} more occurrences; pass offset: {next}, or narrow with `path`)\n",
            reply.total - next
        ));
    }
    if !reply.complete {
        text.push_str("(a very common name: only the first 20,000 chunks holding it were read)\n");
    }
    structured_result(text, structured)
}
