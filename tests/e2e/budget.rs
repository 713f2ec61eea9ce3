//! Answers that fit the context window: `max_tokens` and `format: compact` on the real shim.

use amanmcp_tests::{Shim, TestEnv};
use serde_json::{Value, json};

/// A Python module of `functions` functions mentioning `budgetword`, ~20 lines each.
fn module(i: usize, functions: usize) -> String {
    let mut out = String::new();
    for f in 0..functions {
        out.push_str(&format!("def budgetword_{i}_{f}(value):\n"));
        for line in 0..18 {
            out.push_str(&format!(
                "    value = value * {line} + {f}  # budgetword step {line} of module {i}\n"
            ));
        }
        out.push_str("    return value\n\n");
    }
    out
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn answers_stay_within_max_tokens_cut_at_line_ends_and_say_what_was_left_out() {
    let env = TestEnv::new();
    let files: Vec<(String, String)> = (0..20)
        .map(|i| (format!("m{i}.py"), module(i, 12)))
        .collect();
    let root = env.project("proj", &files);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    // Twenty near-identical modules tie on `budgetword`; one function's name is m0's alone.
    shim.search_until("budgetword_0_0", "m0.py");
    env.wait_ready();

    for max_tokens in [300, 2_000, 8_000] {
        let reply = shim.call_tool(
            "search",
            json!({"query": "budgetword", "limit": 100, "mode": "lexical", "max_tokens": max_tokens}),
        );
        let answer = text(&reply);
        assert!(
            answer.len() <= max_tokens * 4 + 400,
            "{max_tokens}: {} bytes",
            answer.len()
        );
        let structured = &reply["result"]["structuredContent"];
        let results = structured["results"].as_array().unwrap();
        assert!(!results.is_empty(), "{reply}");
        assert!(
            structured["omitted"].as_u64().unwrap_or(0) > 0,
            "{structured}"
        );
        assert!(
            answer.contains("left out to stay within the token budget"),
            "{answer}"
        );
        assert!(answer.contains("offset:"), "{answer}");
        for hit in results {
            let snippet = hit["snippet"].as_str().unwrap();
            let lines = hit["end_line"].as_u64().unwrap() - hit["start_line"].as_u64().unwrap() + 1;
            assert_eq!(
                u64::from(amanmcp::preview::covered(snippet)),
                lines,
                "{hit}"
            );
        }
    }

    // Without max_tokens, the default keeps the biggest page well under 25,000 tokens.
    let reply = shim.call_tool(
        "search",
        json!({"query": "budgetword", "limit": 100, "mode": "lexical"}),
    );
    assert!(
        text(&reply).len() <= 8_000 * 4 + 400,
        "{} bytes",
        text(&reply).len()
    );

    // Compact: place and first line, many more results in the same budget.
    let reply = shim.call_tool(
        "search",
        json!({"query": "budgetword", "limit": 100, "mode": "lexical", "format": "compact"}),
    );
    let results = reply["result"]["structuredContent"]["results"]
        .as_array()
        .unwrap();
    assert!(results.len() >= 50, "{}", results.len());
    assert!(
        results
            .iter()
            .all(|h| h.get("snippet").is_none() && h["first_line"].is_string())
    );
    let reply = shim.call_tool("search", json!({"query": "x", "format": "tiny"}));
    assert!(text(&reply).contains("`format`"), "{reply}");
    let reply = shim.call_tool("search", json!({"query": "x", "max_tokens": 5}));
    assert!(text(&reply).contains("`max_tokens`"), "{reply}");

    // lookup: a whole file cut at a line end, and told where to read on.
    let reply = shim.call_tool("lookup", json!({"path": "m3.py", "max_tokens": 400}));
    let answer = text(&reply);
    assert!(answer.len() <= 400 * 4 + 400, "{} bytes", answer.len());
    let found = &reply["result"]["structuredContent"]["matches"][0];
    assert_eq!(found["truncated"], true, "{found}");
    let end = found["end_line"].as_u64().unwrap();
    assert!(
        answer.contains(&format!("pass start_line: {}", end + 1)),
        "{answer}"
    );
}

#[test]
fn a_large_file_read_as_a_resource_is_cut_at_a_line_end_and_says_how_to_read_on() {
    let env = TestEnv::new();
    // 20 modules of 12 functions: ~240 KB, ~60,000 tokens.
    let big: String = (0..20).map(|i| module(i, 12)).collect();
    let total_lines = big.lines().count();
    let root = env.project("proj", &[("big.py", big.clone())]);
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    shim.search_until("budgetword", "big.py");

    let uri = format!("file://{}/big.py", root.display());
    let reply = shim.request("resources/read", json!({"uri": uri}));
    let contents = &reply["result"]["contents"][0];
    let served = contents["text"].as_str().unwrap();
    assert!(served.len() / 4 <= 20_000, "{} tokens", served.len() / 4);
    let meta = &contents["_meta"];
    assert_eq!(meta["truncated"], true, "{meta}");
    assert_eq!(meta["total_lines"], total_lines, "{meta}");
    let next = meta["next_start_line"].as_u64().unwrap() as usize;
    // Every served line is the file's own line, whole, then one line saying how to go on.
    let lines: Vec<&str> = served.lines().collect();
    let original: Vec<&str> = big.lines().collect();
    assert_eq!(lines.len(), next, "{meta}");
    assert_eq!(lines[..next - 1], original[..next - 1]);
    assert!(
        lines[next - 1].contains(&format!("path \"big.py\", start_line {next}")),
        "{}",
        lines[next - 1]
    );
    // `lookup` from there gives the next line.
    let reply = shim.call_tool("lookup", json!({"path": "big.py", "start_line": next}));
    let code = reply["result"]["structuredContent"]["matches"][0]["code"]
        .as_str()
        .unwrap();
    assert_eq!(code.lines().next(), Some(original[next - 1]), "{reply}");
}
