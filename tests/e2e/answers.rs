//! What an answer shows: a result is labelled with the definition the query asks for (a
//! chunk holding several small functions is not shown under its first), and a long chunk is
//! previewed by the lines that match, the rest named by number.

use amanmcp_tests::{Shim, TestEnv};
use serde_json::json;

#[test]
fn a_result_is_labelled_by_what_the_query_asks_for_and_shows_the_matching_lines() {
    let env = TestEnv::new();
    let mut long = String::from("def assemble_report(rows):\n");
    for i in 0..40 {
        if i == 25 {
            long.push_str("    total = sum_needlezeta(rows)\n");
        } else {
            long.push_str(&format!("    step_{i} = rows[{i}]\n"));
        }
    }
    long.push_str("    return total\n");
    let root = env.project(
        "proj",
        &[
            (
                "session.py",
                "def rewind_body(prepared_request):\n    \"\"\"Move the body back to its start.\"\"\"\n    body_seek = getattr(prepared_request.body, \"seek\", None)\n    if body_seek is not None:\n        body_seek(prepared_request._body_position)\n\n\ndef appended_zetafunc(value):\n    return value * 2\n"
                    .to_string(),
            ),
            ("report.py", long),
        ],
    );
    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    let found = shim.search_until("appended_zetafunc", "session.py");
    let hit = &found["structuredContent"]["results"][0];
    assert_eq!(hit["path"], "session.py", "{found}");
    assert_eq!(hit["symbol"], "appended_zetafunc", "{hit}");
    let text = found["content"][0]["text"].as_str().unwrap();
    let header = text
        .lines()
        .find(|l| l.starts_with("session.py:"))
        .unwrap_or_default();
    assert!(header.contains("appended_zetafunc"), "{text}");
    // Both functions are one chunk: the other is named too.
    assert_eq!(hit["start_line"], 1, "{hit}");
    assert_eq!(hit["defines"], json!(["rewind_body"]), "{hit}");
    assert!(header.contains("also rewind_body"), "{text}");

    let found = shim.search_until("sum_needlezeta", "report.py");
    let hit = &found["structuredContent"]["results"][0];
    let snippet = hit["snippet"].as_str().unwrap();
    assert!(
        snippet.starts_with("def assemble_report(rows):"),
        "{snippet}"
    );
    assert!(
        snippet.contains("total = sum_needlezeta(rows)"),
        "{snippet}"
    );
    assert!(snippet.contains("⋮ lines 2-"), "{snippet}");
    assert!(snippet.lines().count() <= 14, "{snippet}");
}
