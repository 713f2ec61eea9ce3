//! Unit tests of the path priors: tests, docs, a project's notes and library copies rank
//! lower unless the query asks for them.

use super::super::paths::is_secondary_path;
use super::{Symbols, hit, order};

#[test]
fn copies_of_libraries_named_with_their_release_rank_lower() {
    let hits = vec![
        hit("static/jquery-3.5.1.js", 1.0),
        hit("src/anchor.js", 0.5),
    ];
    assert_eq!(
        order("anchor scrolling", hits, Symbols(vec![]))[0],
        "src/anchor.js"
    );
    assert!(is_secondary_path("vendor/d3_7.8.min.js"));
    assert!(!is_secondary_path("src/http2.rs"));
    assert!(!is_secondary_path("src/utf-8.c"));
    assert!(!is_secondary_path("lib/v1.2/api.py"));
}

#[test]
fn tests_and_docs_rank_lower_unless_asked_for() {
    let hits = vec![hit("tests/router_test.go", 1.0), hit("router.go", 0.7)];
    assert_eq!(
        order("route matching", hits.clone(), Symbols(vec![])),
        ["router.go", "tests/router_test.go"]
    );
    assert_eq!(
        order("tests for route matching", hits, Symbols(vec![])),
        ["tests/router_test.go", "router.go"]
    );
    assert!(is_secondary_path("docs/guide.md"));
    assert!(is_secondary_path("src/foo.test.ts"));
    assert!(is_secondary_path("src/RouterTest.java"));
    assert!(!is_secondary_path("src/contest.rs"));
    assert!(!is_secondary_path("src/latest.py"));
    for notes in [
        "CHANGES",
        "CHANGES.old",
        "LICENSE",
        "AUTHORS.txt",
        "Changes",
        "lib/NEWS",
    ] {
        assert!(is_secondary_path(notes), "{notes}");
    }
    for code in [
        "src/history.py",
        "fastapi/security.py",
        "lib/news.rs",
        "Readme.kt",
    ] {
        assert!(!is_secondary_path(code), "{code}");
    }
    assert!(!is_secondary_path("src/attest/mod.rs"));
    // A changelog's line about the fix reads like the question; the code it fixed answers it.
    let hits = vec![
        hit("CHANGES", 1.0),
        hit("sphinx/builders/linkcheck.py", 0.6),
    ];
    assert_eq!(
        order(
            "linkcheck falls back to GET on too many redirects",
            hits.clone(),
            Symbols(vec![])
        ),
        ["sphinx/builders/linkcheck.py", "CHANGES"]
    );
    assert_eq!(
        order("changelog entries for linkcheck", hits, Symbols(vec![])),
        ["CHANGES", "sphinx/builders/linkcheck.py"]
    );
}
