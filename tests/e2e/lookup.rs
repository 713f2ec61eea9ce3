//! `lookup` through the real shim and daemon.

use amanmcp_tests::{Shim, TestEnv};
use serde_json::{Value, json};

const SESSION_PY: &str = r#"import socket


class Session:
    """Keeps connections alive."""

    def request(self, method, url):
        conn = self.connect(url)
        return conn.send(method)

    def close(self):
        pass


def request(method, url):
    return Session().request(method, url)
"#;

const RUNTIME_RS: &str = r#"pub struct Runtime;

impl Runtime {
    /// Runs a future to completion on this runtime.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let mut park = Park::new();
        park.run(future)
    }
}
"#;

fn project(env: &TestEnv) -> std::path::PathBuf {
    let root = env.project(
        "proj",
        &[
            ("requests/sessions.py", SESSION_PY),
            ("src/runtime.rs", RUNTIME_RS),
            (".env", "API_KEY=hunter2\n"),
        ],
    );
    std::fs::write(env.path().join("outside.txt"), "not yours\n").unwrap();
    std::os::unix::fs::symlink(env.path().join("outside.txt"), root.join("escape.txt")).unwrap();
    root
}

fn matches(reply: &Value) -> &Vec<Value> {
    assert_ne!(reply["result"]["isError"], json!(true), "{reply}");
    reply["result"]["structuredContent"]["matches"]
        .as_array()
        .unwrap()
}

#[test]
fn lookup_finds_qualified_methods_and_refuses_traversal() {
    let env = TestEnv::new();
    let root = project(&env);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("block_on", "src/runtime.rs");

    let reply = shim.call_tool("lookup", json!({"symbol": "Session.request"}));
    let found = matches(&reply);
    assert_eq!(found.len(), 1, "{reply}");
    assert_eq!(found[0]["path"], "requests/sessions.py");
    assert_eq!(found[0]["kind"], "method");
    assert_eq!(found[0]["symbol"], "Session.request");
    assert_eq!(found[0]["enclosing"], "Session");
    assert_eq!(
        (
            found[0]["start_line"].as_u64(),
            found[0]["end_line"].as_u64()
        ),
        (Some(7), Some(9))
    );
    assert!(
        found[0]["code"]
            .as_str()
            .unwrap()
            .starts_with("    def request(self, method, url):")
    );
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("requests/sessions.py:7-9 method Session.request (in Session)"),
        "{text}"
    );

    // Bare name: both the method and the function; the kind filter narrows it.
    let reply = shim.call_tool("lookup", json!({"symbol": "request"}));
    assert_eq!(matches(&reply).len(), 2, "{reply}");
    let reply = shim.call_tool("lookup", json!({"symbol": "request", "kind": "function"}));
    let found = matches(&reply);
    assert_eq!(found.len(), 1, "{reply}");
    assert_eq!(found[0]["start_line"], 15);

    let reply = shim.call_tool("lookup", json!({"symbol": "Runtime::block_on"}));
    let found = matches(&reply);
    assert_eq!(found[0]["path"], "src/runtime.rs", "{reply}");
    assert_eq!(found[0]["start_line"], 4, "doc comment included: {reply}");
    assert!(
        found[0]["signature"]
            .as_str()
            .unwrap()
            .starts_with("pub fn block_on<F: Future>")
    );

    // By path and line range, with the enclosing symbol.
    let reply = shim.call_tool(
        "lookup",
        json!({"path": "src/runtime.rs", "start_line": 6, "end_line": 7}),
    );
    let found = matches(&reply);
    assert_eq!(
        found[0]["code"],
        "        let mut park = Park::new();\n        park.run(future)"
    );
    assert_eq!(found[0]["enclosing"], "Runtime::block_on");
    assert_eq!(found[0]["total_lines"], 9);

    // Unknown symbols are an empty answer, not an error.
    let reply = shim.call_tool("lookup", json!({"symbol": "no_such_thing"}));
    assert!(matches(&reply).is_empty());

    // Confinement.
    let outside = env.path().join("outside.txt");
    for (args, needle) in [
        (json!({"path": "../outside.txt"}), "leaves the project"),
        (
            json!({"path": "requests/../../outside.txt"}),
            "leaves the project",
        ),
        (
            json!({"path": outside.to_str().unwrap()}),
            "outside the project",
        ),
        (json!({"path": "/etc/passwd"}), "outside the project"),
        (json!({"path": "escape.txt"}), "not in the index"),
        (json!({"path": ".env"}), "secrets"),
        (json!({"path": "missing.py"}), "not in the index"),
        (json!({}), "path"),
        (
            json!({"path": "src/runtime.rs", "start_line": 0}),
            "start_line",
        ),
        (
            json!({"path": "src/runtime.rs", "start_line": 5, "end_line": 2}),
            "end_line",
        ),
        (json!({"symbol": 7}), "symbol"),
    ] {
        let reply = shim.call_tool("lookup", args.clone());
        assert_eq!(reply["result"]["isError"], json!(true), "{args} -> {reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(needle), "{args} -> {text}");
        assert!(
            !text.contains("not yours") && !text.contains("hunter2"),
            "{text}"
        );
    }
}

#[test]
fn search_ranks_the_definition_of_a_symbol_first() {
    let env = TestEnv::new();
    let mut files = vec![("src/runtime.rs", RUNTIME_RS.to_string())];
    for i in 0..5 {
        files.push((
            ["a.rs", "b.rs", "c.rs", "d.rs", "e.rs"][i],
            format!("fn caller{i}() {{\n    rt.block_on(async {{}});\n    rt.block_on(async {{}});\n}}\n"),
        ));
    }
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    let root = env.project("proj", &files);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    let result = shim.search_until("block_on", "src/runtime.rs");
    let first = &result["structuredContent"]["results"][0];
    assert_eq!(first["path"], "src/runtime.rs", "{result}");
    assert_eq!(first["symbol"], "Runtime::block_on", "{result}");
    assert_eq!(first["kind"], "method", "{result}");
}

const CONFIGS_PY: &str = r#"import json


def parse_user_config(path):
    with open(path) as handle:
        raw = json.load(handle)
    retries = int(raw.get("retries", 3))
    timeout_seconds = float(raw.get("timeout_seconds", 2.5))
    return {"retries": retries, "timeout_seconds": timeout_seconds}


def render_banner(title):
    width = len(title) + 4
    return "*" * width + "\n* " + title + " *\n" + "*" * width
"#;

const TEAM_PY: &str = r#"import json


def parse_team_config(path):
    with open(path) as handle:
        raw = json.load(handle)
    retries = int(raw.get("retries", 5))
    timeout_seconds = float(raw.get("timeout_seconds", 9.0))
    return {"retries": retries, "timeout_seconds": timeout_seconds, "team": True}
"#;

#[test]
fn similar_finds_code_like_a_location_a_symbol_or_a_snippet_but_not_itself() {
    let env = TestEnv::new();
    let root = env.project(
        "proj",
        &[("app/config.py", CONFIGS_PY), ("team/settings.py", TEAM_PY)],
    );
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("parse_team_config", "team/settings.py");

    for args in [
        json!({"symbol": "parse_user_config"}),
        json!({"path": "app/config.py", "line": 7}),
        json!({"snippet": "retries = int(raw.get(\"retries\", 1))\ntimeout_seconds = float(raw.get(\"timeout_seconds\", 1))"}),
    ] {
        let reply = shim.call_tool("similar", args.clone());
        let result = &reply["result"];
        assert_ne!(result["isError"], json!(true), "{args} -> {reply}");
        let hits = result["structuredContent"]["results"].as_array().unwrap();
        assert_eq!(hits[0]["symbol"], "parse_team_config", "{args} -> {reply}");
        if args.get("snippet").is_none() {
            // The reference itself is never among the results.
            assert!(
                hits.iter().all(|h| h["symbol"] != "parse_user_config"),
                "{args} -> {reply}"
            );
        }
    }
    for (args, needle) in [
        (json!({}), "exactly one reference"),
        (json!({"path": "app/config.py"}), "line"),
        (
            json!({"symbol": "a", "snippet": "b"}),
            "exactly one reference",
        ),
        (json!({"symbol": "no_such_symbol"}), "no symbol named"),
        (json!({"path": "../x.py", "line": 1}), "leaves the project"),
        (json!({"path": "app/config.py", "line": 999}), "line"),
    ] {
        let reply = shim.call_tool("similar", args.clone());
        assert_eq!(reply["result"]["isError"], json!(true), "{args} -> {reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(needle), "{args} -> {text}");
    }
}

/// One small file per language added after the first twelve, with the definition `lookup`
/// must find in it and where.
const POLYGLOT: &[(&str, &str, &str, &str, u64)] = &[
    (
        "app/src/Engine.kt",
        "package app\n\nclass Engine {\n    fun start(x: Int): Int {\n        return x\n    }\n}\n",
        "Engine.start",
        "method",
        4,
    ),
    (
        "Sources/Session.swift",
        "import Foundation\n\nstruct Session {\n    func request(_ url: String) -> Int {\n        return 1\n    }\n}\n",
        "Session.request",
        "method",
        4,
    ),
    (
        "src/Core.hs",
        "module Core where\n\n-- | Runs it.\nrunX :: Int -> IO ()\nrunX 0 = return ()\nrunX x = return ()\n",
        "runX",
        "function",
        3,
    ),
    (
        "lib/router.ex",
        "defmodule Demo.Router do\n  @doc \"Matches.\"\n  def match(conn), do: conn\nend\n",
        "Router.match",
        "function",
        2,
    ),
    (
        "lua/picker.lua",
        "local M = {}\n\nfunction M.find(opts)\n  return opts\nend\n\nreturn M\n",
        "M.find",
        "function",
        3,
    ),
    (
        "src/clap.zig",
        "const std = @import(\"std\");\n\npub const Parser = struct {\n    pub fn init() Parser {\n        return .{};\n    }\n};\n",
        "Parser.init",
        "method",
        4,
    ),
    (
        "infra/main.tf",
        "variable \"region\" {\n  default = \"us\"\n}\n\nresource \"aws_s3_bucket\" \"logs\" {\n  bucket = \"x\"\n}\n",
        "aws_s3_bucket.logs",
        "resource",
        5,
    ),
    (
        "deploy/ci.yml",
        "name: ci\non: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n",
        "jobs",
        "key",
        3,
    ),
    (
        "web/Cart.vue",
        "<template>\n  <p>{{ total }}</p>\n</template>\n\n<script lang=\"ts\">\nexport function priceWithTax(price: number): number {\n  return price * 1.2;\n}\n</script>\n",
        "priceWithTax",
        "function",
        6,
    ),
    (
        "web/List.svelte",
        "<script>\n  function addItem(item) {\n    return item;\n  }\n</script>\n\n<ul><li>x</li></ul>\n",
        "addItem",
        "function",
        2,
    ),
];

#[test]
fn lookup_finds_definitions_in_every_new_language() {
    let env = TestEnv::new();
    let files: Vec<(&str, &str)> = POLYGLOT.iter().map(|(p, t, ..)| (*p, *t)).collect();
    let root = env.project("poly", &files);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("aws_s3_bucket", "infra/main.tf");
    for (path, _, symbol, kind, line) in POLYGLOT {
        let reply = shim.call_tool("lookup", json!({"symbol": symbol}));
        let found = matches(&reply);
        assert!(
            found
                .iter()
                .any(|m| m["path"] == *path && m["kind"] == *kind && m["start_line"] == *line),
            "{symbol} in {path}: {reply}"
        );
    }
    // The language filter takes the new names and their extensions.
    for (language, path) in [
        ("kotlin", "app/src/Engine.kt"),
        ("hs", "src/Core.hs"),
        ("vue", "web/Cart.vue"),
    ] {
        let reply = shim.call_tool(
            "search",
            json!({"query": "start runX priceWithTax", "language": language, "mode": "lexical"}),
        );
        let results = reply["result"]["structuredContent"]["results"]
            .as_array()
            .unwrap();
        assert!(!results.is_empty(), "{language}: {reply}");
        assert!(results.iter().all(|r| r["path"] == path), "{reply}");
    }
}

#[test]
fn amanctl_search_prints_lines_for_people_and_json_for_scripts() {
    let env = TestEnv::new();
    let root = project(&env);
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());

    let ran = env.amanctl_on(
        &root,
        &["search", "--mode", "lexical", "--context", "20", "block_on"],
    );
    assert!(ran.ok(), "{}", ran.text());
    let first = ran.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("src/runtime.rs:") && first.contains("Runtime::block_on"),
        "{}",
        ran.text()
    );
    assert!(
        !ran.stdout.contains('\x1b'),
        "no colour when not a terminal"
    );
    assert!(
        ran.stdout.contains("pub fn block_on"),
        "snippet lines shown"
    );

    let ran = env.amanctl_on(&root, &["search", "--json", "-n", "1", "block_on"]);
    assert!(ran.ok(), "{}", ran.text());
    let out: Value = serde_json::from_str(&ran.stdout).expect("JSON");
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{out}");
    assert_eq!(results[0]["path"], "src/runtime.rs");
    assert_eq!(results[0]["symbol"], "Runtime::block_on");

    // Nothing found: exit 1 and say so.
    let ran = env.amanctl_on(&root, &["search", "--mode", "lexical", "zzqqxxnotthere"]);
    assert_eq!(ran.code, 1, "{}", ran.text());
    assert!(ran.stderr.contains("no results"), "{}", ran.text());
}
