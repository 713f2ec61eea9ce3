//! The code graph tools: `callers`, `callees`, `impact`, `trace`. One daemon call each
//! (`Graph`); the answer lists links with their call site and label, paged and fitted to
//! `max_tokens`.

use std::sync::Arc;

use amanmcp_proto::pb;
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use super::AmanServer;
use super::args::{
    ToolError, optional_integer, optional_projects, optional_string, required_string,
};
use super::budget::{self, DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS, MIN_MAX_TOKENS, Shape};
use super::render::structured_result;

/// Largest page of links.
const MAX_LINKS: u64 = 500;
/// Default page of links.
const DEFAULT_LINKS: u64 = 100;

fn def(d: &pb::GraphDef) -> Value {
    json!({
        "symbol": d.qualified,
        "kind": d.kind,
        "path": d.path,
        "lines": [d.start_line, d.end_line],
    })
}

fn place(d: &pb::GraphDef) -> String {
    format!("{}:{} {}", d.path, d.start_line, d.qualified)
}

fn link(l: &pb::GraphLink) -> Value {
    let mut out = json!({
        "from": l.from.as_ref().map(place),
        "at": format!("{}:{}", l.path, l.line),
        "name": l.name,
        "label": l.label,
        "rule": l.rule,
        "depth": l.depth,
    });
    if let Some(to) = &l.to {
        out["to"] = json!(place(to));
    }
    if !l.candidates.is_empty() {
        out["candidates"] = json!(l.candidates.iter().map(place).collect::<Vec<_>>());
        if l.candidates_total as usize > l.candidates.len() {
            out["candidates_total"] = json!(l.candidates_total);
        }
    }
    if l.inherits {
        out["inherits"] = json!(true);
    }
    if l.imports {
        out["imports"] = json!(true);
    }
    if let Some(project) = &l.project {
        out["project"] = json!(project);
    }
    out
}

/// The reply as structured content and text: its page of links (the daemon sent those from
/// `offset`, at most `limit`) cut to the token budget.
fn graph_result(
    kind: &str,
    reply: &pb::GraphReply,
    offset: u64,
    limit: u64,
    shape: Shape,
) -> CallToolResult {
    let mut out = json!({
        "targets": reply.targets.iter().map(def).collect::<Vec<_>>(),
        "complete": reply.complete,
    });
    if let Some(notice) = crate::status::unparsed_notice(reply.unparsed_files) {
        out["notice"] = json!(notice);
    }
    if !reply.choices.is_empty() {
        out["choices"] = json!(reply.choices.iter().map(def).collect::<Vec<_>>());
        out["note"] = json!(format!(
            "{} definitions carry this name: ask again with a qualified name (e.g. `{}`) or `path`.",
            reply.choices.len(),
            reply.choices[0].qualified
        ));
        let text = serde_json::to_string_pretty(&out).unwrap_or_default();
        return structured_result(text, out);
    }
    let mut left = shape.max_tokens.saturating_sub(120);
    let mut links = Vec::new();
    let mut shown = 0u64;
    for l in reply.links.iter().take(limit as usize) {
        let value = link(l);
        let cost = budget::tokens(&value.to_string());
        if cost > left {
            break;
        }
        left -= cost;
        links.push(value);
        shown += 1;
    }
    let total = u64::from(reply.total_links);
    out["links"] = json!(links);
    out["total_links"] = json!(total);
    if offset + shown < total {
        out["next_offset"] = json!(offset + shown);
    }
    if kind == "callers" || kind == "impact" {
        out["unexplained_calls"] = json!(reply.unexplained);
        if reply.unexplained > 0 {
            out["unexplained_examples"] = json!(
                reply
                    .unexplained_examples
                    .iter()
                    .map(|u| json!({"at": format!("{}:{}", u.path, u.line), "why": u.why}))
                    .collect::<Vec<_>>()
            );
        }
    }
    if kind == "impact" {
        out["impacted"] = json!(
            reply
                .impacted
                .iter()
                .take(200)
                .map(|i| {
                    let mut v = i.def.as_ref().map(def).unwrap_or_default();
                    v["distance"] = json!(i.distance);
                    v["fan_in"] = json!(i.fan_in);
                    v["test"] = json!(i.test);
                    v["label"] = json!(i.label);
                    v
                })
                .collect::<Vec<_>>()
        );
        let tests: Vec<String> = reply
            .impacted
            .iter()
            .filter(|i| i.test)
            .filter_map(|i| i.def.as_ref().map(place))
            .collect();
        out["tests"] = json!(tests);
    }
    if kind == "trace" {
        out["paths"] = json!(
            reply
                .paths
                .iter()
                .map(|p| p
                    .links
                    .iter()
                    .filter_map(|i| reply.links.get(*i as usize))
                    .map(link)
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>()
        );
        out.as_object_mut().map(|o| o.remove("links"));
    }
    let text = serde_json::to_string_pretty(&out).unwrap_or_default();
    structured_result(text, out)
}

/// Search results given their graph neighbourhood (`context: graph`), the first ones only.
const CONTEXT_HITS: usize = 5;
/// Callers and callees named per result.
const CONTEXT_LINKS: usize = 3;

impl AmanServer {
    /// For `search` with `context: graph`: each of the first results that is a definition of
    /// this project, its callers and callees (a few of each, with totals), keyed by the
    /// result's place. A definition the graph cannot single out is left without.
    pub(super) async fn neighbourhoods(
        &self,
        hits: &[pb::SearchHit],
    ) -> Result<Vec<(String, u32, Value)>, ToolError> {
        let root = self.root().await;
        let mut out = Vec::new();
        for hit in hits
            .iter()
            .filter(|h| h.project.is_none())
            .take(CONTEXT_HITS)
        {
            let Some(symbol) = &hit.symbol else { continue };
            let mut found = json!({});
            for kind in ["callers", "callees"] {
                let request = pb::GraphRequest {
                    root: root.clone(),
                    kind: kind.into(),
                    symbols: vec![symbol.clone()],
                    path: Some(hit.path.clone()),
                    depth: 1,
                    limit: Some(CONTEXT_LINKS as u32),
                    ..Default::default()
                };
                // A name the graph cannot single out (several definitions) has no context.
                let Ok(reply) = self.ask_graph(request).await else {
                    continue;
                };
                if !reply.choices.is_empty() {
                    continue;
                }
                let named: Vec<String> = reply
                    .links
                    .iter()
                    .map(|l| {
                        let other = if kind == "callers" {
                            l.from.as_ref().map(place)
                        } else {
                            l.to.as_ref().map(place)
                        };
                        other.unwrap_or_else(|| format!("{}:{} {}?", l.path, l.line, l.name))
                    })
                    .collect();
                found[format!("{kind}_total")] = json!(reply.total_links);
                found[kind] = json!(named.into_iter().take(CONTEXT_LINKS).collect::<Vec<_>>());
                if kind == "callers" && reply.unexplained > 0 {
                    found["unexplained"] = json!(reply.unexplained);
                }
            }
            if found.as_object().is_some_and(|o| !o.is_empty()) {
                out.push((hit.path.clone(), hit.start_line, found));
            }
        }
        Ok(out)
    }

    /// `callers`, `callees`, `impact` or `trace`.
    pub(super) async fn graph(
        &self,
        kind: &str,
        args: &JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        let symbols = match kind {
            "impact" => match args.get("symbols") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) if items.len() <= 50 => items
                    .iter()
                    .map(|v| {
                        v.as_str().map(String::from).ok_or_else(|| {
                            ToolError::Argument("`symbols` must be an array of names".into())
                        })
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => {
                    return Err(ToolError::Argument(
                        "`symbols` must be an array of at most 50 names".into(),
                    ));
                }
            },
            "trace" => vec![required_string(args, "from")?],
            _ => vec![required_string(args, "symbol")?],
        };
        let offset = optional_integer(args, "offset", 0, 100_000)?.unwrap_or(0);
        let limit = optional_integer(args, "limit", 1, MAX_LINKS)?.unwrap_or(DEFAULT_LINKS);
        let request = pb::GraphRequest {
            root: self.root().await,
            kind: kind.to_string(),
            symbols,
            to: if kind == "trace" {
                Some(required_string(args, "to")?)
            } else {
                None
            },
            path: optional_string(args, "path")?,
            depth: optional_integer(args, "depth", 1, 5)?.unwrap_or(0) as u32,
            diff: optional_string(args, "diff")?,
            projects: if kind == "callers" {
                optional_projects(args)?
            } else {
                Vec::new()
            },
            offset: offset as u32,
            limit: Some(limit as u32),
        };
        let shape = Shape::from_args(args)?;
        let reply = self.ask_graph(request).await?;
        Ok(graph_result(kind, &reply, offset, limit, shape))
    }

    /// One `Graph` call to the daemon.
    async fn ask_graph(&self, request: pb::GraphRequest) -> Result<pb::GraphReply, ToolError> {
        Ok(self
            .link
            .call(|mut client| {
                let request = request.clone();
                async move { client.graph(request).await.map(|r| r.into_inner()) }
            })
            .await?)
    }
}

fn input(extra: Value, required: &[&str]) -> Arc<JsonObject> {
    let mut properties = json!({
        "path": {"type": "string", "description": "Only definitions in this file or directory (to choose between definitions of one name)."},
        "depth": {"type": "integer", "minimum": 1, "maximum": 5, "description": "Levels to walk (1-5)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LINKS, "default": DEFAULT_LINKS, "description": "Most links to return."},
        "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Links to skip (the previous answer's `next_offset`)."},
        "max_tokens": {"type": "integer", "minimum": MIN_MAX_TOKENS, "maximum": MAX_MAX_TOKENS, "default": DEFAULT_MAX_TOKENS, "description": "Most tokens the answer may take (bytes / 4)."}
    });
    if let (Some(all), Value::Object(more)) = (properties.as_object_mut(), extra) {
        all.extend(more);
    }
    let schema = json!({"type": "object", "properties": properties, "required": required});
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

fn output() -> Arc<JsonObject> {
    let schema = json!({
        "type": "object",
        "properties": {
            "targets": {"type": "array", "description": "The definitions asked about (impact: those the change touches)."},
            "choices": {"type": "array", "description": "The name has several definitions: these; ask again with one."},
            "links": {"type": "array", "description": "Each call: `from` (path:line symbol), `at` (the call site), `to`, `label` (resolved, ambiguous with `candidates`, unresolved), `rule`, `depth`; `project` when the call is in another project (`projects`)."},
            "total_links": {"type": "integer"},
            "next_offset": {"type": "integer"},
            "unexplained_calls": {"type": "integer", "description": "Calls of the name that resolve to nothing in the project (external or dynamic): a caller may hide among them."},
            "impacted": {"type": "array", "description": "impact: what reaches the change, nearest first, with `distance`, `fan_in`, `test`."},
            "tests": {"type": "array", "description": "impact: the tests among them."},
            "paths": {"type": "array", "description": "trace: call paths, each a list of links."},
            "complete": {"type": "boolean"},
            "notice": {"type": "string", "description": "What the answer may lack (files not parsed yet)."}
        },
        "required": ["targets", "complete"]
    });
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

/// The graph tools.
pub fn tools(read_only: &ToolAnnotations) -> Vec<Tool> {
    let symbol = json!({"symbol": {"type": "string", "description": "A definition, bare (`parse_config`) or qualified (`Session.request`, `Runtime::block_on`)."}});
    vec![
        Tool::new(
            "callers",
            "Who calls a function, method or class: each call site with its enclosing definition, resolved by scope (imports, the enclosing class, the package) and labelled resolved or ambiguous; calls of the name that resolve to nothing in the project are counted, never hidden. `depth` walks up to 5 levels of callers.",
            input(
                json!({
                    "symbol": symbol["symbol"],
                    "projects": {"type": "array", "items": {"type": "string"}, "maxItems": 64, "description": "Also other projects this daemon has indexed ([\"all\"] or their roots): their calls of the name that they do not define themselves (unresolved there: perhaps calls of this definition, as a client's of its library), each with its `project`."}
                }),
                &["symbol"],
            ),
        )
        .with_title("Find callers")
        .with_raw_output_schema(output())
        .with_annotations(read_only.clone()),
        Tool::new(
            "callees",
            "What a function, method or class calls: each call with the definition it resolves to (or its candidates when ambiguous, or why it is unresolved: external, builtin, dynamic). A file's path as `symbol` (`pkg/util.py`) asks for its top level: what it imports from the project and runs when loaded. `depth` walks down up to 5 levels.",
            input(symbol, &["symbol"]),
        )
        .with_title("Find callees")
        .with_raw_output_schema(output())
        .with_annotations(read_only.clone()),
        Tool::new(
            "impact",
            "What a change reaches: give `symbols`, or nothing for the working tree's uncommitted changes (`diff`: `--staged` or a range such as `main..HEAD`). Lists the changed definitions, then everything that reaches them by calls, inheritance or imports up to `depth` (default 3), nearest first, tests marked and listed apart.",
            input(
                json!({
                    "symbols": {"type": "array", "items": {"type": "string"}, "maxItems": 50, "description": "Changed definitions (omit to read the change from git)."},
                    "diff": {"type": "string", "description": "`git diff` revisions: omit for the working tree against HEAD, `--staged`, or `main..HEAD`."}
                }),
                &[],
            ),
        )
        .with_title("Impact of a change")
        .with_raw_output_schema(output())
        .with_annotations(read_only.clone()),
        Tool::new(
            "trace",
            "How one definition reaches another: the shortest call paths from `from` to `to` (a few), each a list of calls with their sites, up to `depth` calls (default 3).",
            input(
                json!({
                    "from": {"type": "string", "description": "Where the paths start (a definition's name)."},
                    "to": {"type": "string", "description": "Where they end."}
                }),
                &["from", "to"],
            ),
        )
        .with_title("Trace call paths")
        .with_raw_output_schema(output())
        .with_annotations(read_only.clone()),
    ]
}
