//! The tools' JSON schemas (input and output) and annotations, as `tools/list` shows them.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use super::budget::{DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS, MIN_MAX_TOKENS};
use super::{
    DEFAULT_LIMIT, DEFAULT_LOOKUP_LIMIT, DEFAULT_USAGES_LIMIT, MAX_LIMIT, MAX_LOOKUP_LIMIT,
    MAX_OFFSET, MAX_USAGES_LIMIT, MAX_USAGES_OFFSET,
};

/// `path` in every tool is a file or directory, never a pattern; globs go in `in_path`.
const PATH_SCOPE: &str = "Only this file, or the files under this directory, relative to the project root (e.g. `src/net` or `src/lib.rs`). A pattern goes in `in_path`.";
const IN_PATH: &str = "Only files whose project-relative path matches this glob, e.g. `src/**/*.rs`, `*.py` or `tests/`.";

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("schemas are JSON objects"),
    }
}

fn index_schema() -> Value {
    json!({
        "type": "object",
        "description": "Index state when the call ran.",
        "properties": {
            "state": {"type": "string", "enum": ["indexing", "ready", "error"]},
            "files": {"type": "integer", "description": "Files searchable now."},
            "chunks": {"type": "integer", "description": "Chunks searchable now."},
            "embedded": {"type": "integer", "description": "Chunks with a semantic vector (absent when semantic search is off). `state` is `ready` only when every chunk has one."}
        },
        "required": ["state", "files", "chunks"]
    })
}

fn lookup_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "A file, relative to the project root (e.g. `src/lib.rs`). Alone: returns the file (or the line range)."},
            "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based) when looking up a path."},
            "end_line": {"type": "integer", "minimum": 1, "description": "Last line to return (1-based, inclusive) when looking up a path."},
            "symbol": {"type": "string", "description": "A symbol name, bare (`request`) or qualified (`Session.request`, `Runtime::block_on`). With `path`, only that file is searched."},
            "kind": {"type": "string", "description": "Only symbols of this kind: function, method, class, struct, enum, trait, interface, impl, module, namespace, type, const, section, ..."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LOOKUP_LIMIT, "default": DEFAULT_LOOKUP_LIMIT, "description": "Most symbol matches to return (1-50, default 5)."},
            "max_tokens": {"type": "integer", "minimum": MIN_MAX_TOKENS, "maximum": MAX_MAX_TOKENS, "default": DEFAULT_MAX_TOKENS, "description": "Most tokens the answer may take (bytes / 4): code is cut at a line end and further matches left out, and the answer says how to read on."}
        }
    })
}

fn lookup_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "matches": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "start_line": {"type": "integer"},
                        "end_line": {"type": "integer"},
                        "language": {"type": "string"},
                        "symbol": {"type": "string"},
                        "kind": {"type": "string"},
                        "signature": {"type": "string"},
                        "enclosing": {"type": "string", "description": "The symbol containing this code."},
                        "code": {"type": "string"},
                        "truncated": {"type": "boolean", "description": "The code was cut to 400 lines."},
                        "total_lines": {"type": "integer", "description": "Lines in the whole file."}
                    },
                    "required": ["path", "start_line", "end_line", "language", "code", "truncated", "total_lines"]
                }
            },
            "total": {"type": "integer"},
            "omitted": {"type": "integer", "description": "Matches left out to fit `max_tokens`."},
            "notice": {"type": "string", "description": "What the answer may lack (files not parsed yet)."}
        },
        "required": ["matches", "total"]
    })
}

fn usages_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "An identifier, bare (`JoinSet`, `parse_config`) or qualified (`tokio::task::JoinSet`, `Session.request`: its last part is searched). Matched whole and as written: `Config` does not find `ConfigLoader` or `config`."},
            "path": {"type": "string", "description": PATH_SCOPE},
            "in_path": {"type": "string", "description": IN_PATH},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_USAGES_LIMIT, "default": DEFAULT_USAGES_LIMIT, "description": "Most occurrences to return (1-500, default 50)."},
            "offset": {"type": "integer", "minimum": 0, "maximum": MAX_USAGES_OFFSET, "default": 0, "description": "Occurrences to skip (the previous answer's `next_offset`)."},
            "max_tokens": {"type": "integer", "minimum": MIN_MAX_TOKENS, "maximum": MAX_MAX_TOKENS, "default": DEFAULT_MAX_TOKENS, "description": "Most tokens the answer may take (bytes / 4); occurrences that do not fit are left out and `next_offset` says where to go on."},
            "projects": {"type": "array", "items": {"type": "string"}, "maxItems": 64, "description": "Also search other projects this daemon has indexed: [\"all\"] or their roots (absolute paths). Each result then says its `project`."}
        },
        "required": ["name"]
    })
}

fn usages_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The identifier searched."},
            "usages": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "project": {"type": "string", "description": "The root of the project it is in (with `projects`)."},
                        "line": {"type": "integer"},
                        "column": {"type": "integer", "description": "1-based, in bytes."},
                        "text": {"type": "string", "description": "The line, trimmed."},
                        "enclosing": {"type": "string", "description": "The innermost symbol around the occurrence."},
                        "definition": {"type": "boolean", "description": "This occurrence defines the name."},
                        "language": {"type": "string"}
                    },
                    "required": ["path", "line", "column", "text", "definition", "language"]
                }
            },
            "total": {"type": "integer", "description": "Occurrences in all."},
            "files": {"type": "integer", "description": "Files with an occurrence."},
            "definitions": {"type": "integer"},
            "complete": {"type": "boolean", "description": "False for a name so common that only the first 20,000 chunks holding it were read."},
            "next_offset": {"type": "integer", "description": "Pass as `offset` for the occurrences after these."}
        },
        "required": ["name", "usages", "total", "files", "definitions", "complete"]
    })
}

/// The tools this server offers.
pub fn tools() -> Vec<Tool> {
    let read_only = ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true);
    let search_input = json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "What to look for: identifiers (camelCase and snake_case parts match too), words from the code or comments, an error message, or a short description."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": "Maximum number of results (1-100, default 10)."
            },
            "path": {"type": "string", "description": PATH_SCOPE},
            "in_path": {"type": "string", "description": IN_PATH},
            "language": {
                "type": "string",
                "description": "Only files of this language, e.g. `rust`, `python`, `typescript`, `go`, `markdown`."
            },
            "mode": {
                "type": "string",
                "enum": ["hybrid", "lexical", "semantic"],
                "default": "hybrid",
                "description": "hybrid (default): keywords and meaning, fused; lexical: exact words and identifiers only; semantic: meaning only."
            },
            "max_tokens": {
                "type": "integer",
                "minimum": MIN_MAX_TOKENS,
                "maximum": MAX_MAX_TOKENS,
                "default": DEFAULT_MAX_TOKENS,
                "description": "Most tokens the answer may take (estimated as bytes / 4). Results that do not fit are left out (the last one cut at a line end) and the answer says how to get them."
            },
            "format": {
                "type": "string",
                "enum": ["full", "compact"],
                "default": "full",
                "description": "full: each result's code; compact: path, lines, symbol and first line only (for reading the code with your own tools)."
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_OFFSET,
                "default": 0,
                "description": "Results to skip, for the next page."
            },
            "projects": {"type": "array", "items": {"type": "string"}, "maxItems": 64, "description": "Also search other projects this daemon has indexed: [\"all\"] or their roots (absolute paths). Each result then says its `project`."},
            "context": {"type": "string", "enum": ["graph"], "description": "graph: each of the first results that is a definition also names its callers and what it calls (a few of each, with their counts), from the code graph: one call for a located answer and its neighbourhood."}
        },
        "required": ["query"]
    });
    let search_output = json!({
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Relative to the project root."},
                        "project": {"type": "string", "description": "The root of the project the result is in (with `projects`)."},
                        "start_line": {"type": "integer", "description": "1-based, inclusive."},
                        "end_line": {"type": "integer", "description": "1-based, inclusive."},
                        "language": {"type": "string"},
                        "symbol": {"type": "string"},
                        "kind": {"type": "string"},
                        "score": {"type": "number"},
                        "snippet": {"type": "string", "description": "The chunk's code: whole when short; else its first line and the lines that best match the query, each run of lines left out shown as `⋮ lines A-B not shown` (read them with `lookup` or the file resource). Absent with `format: compact`."},
                        "first_line": {"type": "string", "description": "The chunk's first non-blank line (`format: compact`)."},
                        "cut": {"type": "boolean", "description": "The snippet was cut at a line end to fit `max_tokens`."},
                        "why": {"type": "array", "items": {"type": "string"}, "description": "Why this result ranks here: its rank in each retrieval leg (BM25, vectors) and the legs' weights when uneven, then what the ranking stage saw (a definition the query asks for, a file or directory its words name, a test or generated path)."},
                        "defines": {"type": "array", "items": {"type": "string"}, "description": "The chunk's other definitions, in order (`symbol` is the one the query asks for, else the chunk's own)."},
                        "graph": {"type": "object", "description": "With `context: graph`: `callers` and `callees` (each `path:line symbol`, a few), their totals `callers_total` and `callees_total`, and `unexplained` calls of the name the graph could not resolve.", "properties": {"callers": {"type": "array", "items": {"type": "string"}}, "callees": {"type": "array", "items": {"type": "string"}}, "callers_total": {"type": "integer"}, "callees_total": {"type": "integer"}, "unexplained": {"type": "integer"}}}
                    },
                    "required": ["path", "start_line", "end_line", "language", "score"]
                }
            },
            "total": {"type": "integer", "description": "Matching chunks in all."},
            "omitted": {"type": "integer", "description": "Results of this page left out to fit `max_tokens`."},
            "truncated": {"type": "boolean", "description": "True when more results exist than returned."},
            "index": index_schema(),
            "semantic": {"type": "boolean", "description": "Whether semantic vectors took part in the ranking."},
            "vectors_complete": {"type": "boolean", "description": "Whether every chunk had its vector when the search ran."},
            "notice": {"type": "string", "description": "Present while the index is incomplete, or when semantic search was unavailable."},
            "set_aside": {"type": "array", "description": "Words of the query not searched for, each with the reason (a word naming the language most of the project is in tells no file apart).", "items": {"type": "object", "properties": {"word": {"type": "string"}, "reason": {"type": "string"}}, "required": ["word", "reason"]}}
        },
        "required": ["results", "total", "truncated", "index"]
    });
    let mut status_output = index_schema();
    let props = status_output["properties"]
        .as_object_mut()
        .expect("index schema has properties");
    props.insert("root".into(), json!({"type": "string"}));
    props.insert("files_done".into(), json!({"type": "integer"}));
    props.insert("files_total".into(), json!({"type": "integer"}));
    props.insert("index_bytes".into(), json!({"type": "integer"}));
    props.insert("source_bytes".into(), json!({"type": "integer"}));
    props.insert(
        "skipped".into(),
        json!({"type": "object", "additionalProperties": {"type": "integer"}, "description": "Files not indexed, by reason."}),
    );
    props.insert("last_pass_ms".into(), json!({"type": "integer"}));
    props.insert(
        "skipped_files".into(),
        json!({"type": "integer", "description": "Files not indexed, all reasons."}),
    );
    props.insert(
        "passes".into(),
        json!({"type": "integer", "description": "Full passes completed since the project was opened."}),
    );
    props.insert("last_error".into(), json!({"type": "string"}));
    props.insert(
        "watch".into(),
        json!({"type": "string", "description": "How changes are noticed: events (N directories), polling: <why>, or off."}),
    );
    props.insert(
        "last_pass_changed".into(),
        json!({"type": "integer", "description": "Files re-chunked by the last pass."}),
    );
    props.insert(
        "last_pass_removed".into(),
        json!({"type": "integer", "description": "Files dropped by the last pass."}),
    );
    props.insert(
        "notice".into(),
        json!({"type": "string", "description": "Set when the index had to be rebuilt."}),
    );
    props.insert(
        "embedding".into(),
        json!({
            "type": "object",
            "description": "Semantic vectors: absent when semantic search is off.",
            "properties": {
                "model": {"type": "string"},
                "embedder": {"type": "string"},
                "embedded": {"type": "integer"},
                "pending": {"type": "integer"},
                "chunks_per_second": {"type": "number"},
                "eta_seconds": {"type": "number", "description": "Seconds until every chunk has its vector, at the current rate (absent when unknown)."},
                "health": {"type": "string", "description": "ok, unknown (not used yet) or error: ..."}
            }
        }),
    );
    vec![
        Tool::new(
            "search",
            "Search this project's code. Returns the best-matching code chunks with their path and 1-based line range, best first.",
            schema(search_input),
        )
        .with_title("Search code")
        .with_raw_output_schema(schema(search_output.clone()))
        .with_annotations(read_only.clone()),
        Tool::new(
            "similar",
            "Find code similar to a reference, the reference itself excluded: a location (`path` + `line`), a `symbol` (e.g. `Session.request`), or a code `snippet`. Useful for finding duplicated logic, other implementations of a pattern, or code to update together.",
            schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File of the reference code, relative to the project root (with `line`)."},
                    "line": {"type": "integer", "minimum": 1, "description": "A line inside the reference code (1-based; with `path`)."},
                    "symbol": {"type": "string", "description": "A symbol whose definition is the reference, bare or qualified."},
                    "snippet": {"type": "string", "description": "A piece of code to compare against."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "Maximum number of results (1-100, default 10)."},
                    "in_path": {"type": "string", "description": IN_PATH},
                    "mode": {"type": "string", "enum": ["hybrid", "lexical", "semantic"], "default": "hybrid", "description": "hybrid (default): shared terms and meaning, fused; lexical: shared terms only; semantic: meaning only."},
                    "language": {"type": "string", "description": "Only files of this language, e.g. `rust`, `python`."},
                    "max_tokens": {"type": "integer", "minimum": MIN_MAX_TOKENS, "maximum": MAX_MAX_TOKENS, "default": DEFAULT_MAX_TOKENS, "description": "Most tokens the answer may take (bytes / 4); what does not fit is left out, and the answer says so."},
                    "format": {"type": "string", "enum": ["full", "compact"], "default": "full", "description": "full: each result's code; compact: path, lines, symbol and first line only."}
                }
            })),
        )
        .with_title("Find similar code")
        .with_raw_output_schema(schema(search_output))
        .with_annotations(read_only.clone()),
        Tool::new(
            "lookup",
            "Get code by location or by name: a file (optionally a 1-based line range) and/or a symbol such as `parse_config`, `Session.request` or `Runtime::block_on` (optionally filtered by kind). Returns the code with its path, lines, kind, signature and enclosing symbol. Paths must stay inside the project.",
            schema(lookup_input()),
        )
        .with_title("Look up code")
        .with_raw_output_schema(schema(lookup_output()))
        .with_annotations(read_only.clone()),
        Tool::new(
            "usages",
            "Find where a name is defined and used: every line holding the identifier (whole, as written), definitions first, then uses grouped by file, each with its line, column and enclosing symbol. The question after `lookup`: who calls this function, where is this type used.",
            schema(usages_input()),
        )
        .with_title("Find usages")
        .with_raw_output_schema(schema(usages_output()))
        .with_annotations(read_only.clone()),
    ]
    .into_iter()
    .chain(super::graph::tools(&read_only))
    .chain([
        Tool::new(
            "reindex",
            "Re-check the index against the files on disk now: the whole project (reports progress when the request carries a progress token; returns when done), or one file or directory given as `path`. Rarely needed: the index follows file changes on its own.",
            schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A file or directory relative to the project root. Omit to re-check the whole project."}
                }
            })),
        )
        .with_title("Re-index")
        .with_raw_output_schema(schema(json!({
            "type": "object",
            "properties": {
                "state": {"type": "string", "enum": ["indexing", "ready", "error"]},
                "files": {"type": "integer"},
                "chunks": {"type": "integer"},
                "scope": {"type": "string", "description": "`project` or the path re-checked."},
                "ms": {"type": "integer", "description": "Time taken."},
                "changed": {"type": "integer", "description": "Files re-chunked (whole-project runs)."},
                "removed": {"type": "integer", "description": "Files dropped (whole-project runs)."}
            },
            "required": ["state", "files", "chunks", "scope", "ms"]
        })))
        .with_annotations(
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .idempotent(true),
        ),
        Tool::new(
            "index-status",
            "Show the state of this project's index: ready or still indexing (with progress), files and chunks indexed, size on disk, skipped files and the last error.",
            schema(json!({"type": "object", "properties": {}})),
        )
        .with_title("Index status")
        .with_raw_output_schema(schema(status_output))
        .with_annotations(read_only),
    ])
    .collect()
}
