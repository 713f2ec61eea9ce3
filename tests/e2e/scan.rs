//! A project whose int8 vectors are too many to hold in memory but whose sign bits fit is
//! searched by a scan of those bits, with no ANN graph: linking a graph cost the writer about
//! a millisecond of CPU a vector. Its semantic answers are the nearest, and follow an edit.

use std::time::Duration;

use amanmcp_tests::{FakeEmbedServer, Shim, TestEnv, made_up_word, result_paths, write_file};
use serde_json::json;

/// The budget under test: int8 rows up to 1 MB (1,020 chunks of 1,024 dimensions), sign
/// rows up to 2 MB (15,420 chunks).
const BUDGET_MB: &str = "64";
const DIMS: usize = 1024;
/// One chunk a file (its functions are too small to be chunks of their own).
const FILES: usize = 1300;
const FUNCTIONS: usize = 2;

/// A made-up word for `n`, distinct for each `n`.
fn word(n: usize) -> String {
    format!("q{}", made_up_word(n))
}

/// Function `f` of file `i`: its own three words, asked for by [`query`].
fn function(i: usize, f: usize) -> String {
    let n = i * FUNCTIONS + f;
    let (a, b, c) = (word(n), word(n + 10_000), word(n + 20_000));
    format!("def {a}_{b}(value):\n    \"\"\"{c} of the {b}.\"\"\"\n    return value + {n}\n\n\n")
}

fn query(n: usize) -> String {
    format!("{} {} {}", word(n), word(n + 10_000), word(n + 20_000))
}

fn first_semantic_path(shim: &mut Shim, query: &str) -> Option<String> {
    let reply = shim.call_tool("search", json!({"query": query, "mode": "semantic"}));
    result_paths(&reply).into_iter().next()
}

#[test]
fn a_project_too_large_for_int8_rows_is_searched_by_sign_bits_without_a_graph() {
    let server = FakeEmbedServer::start(&["fake-embed"]);
    server.set_dims(DIMS);
    let env = TestEnv::new();
    let files: Vec<(String, String)> = (0..FILES)
        .map(|i| {
            let text: String = (0..FUNCTIONS).map(|f| function(i, f)).collect();
            (format!("pkg{}/m{i}.py", i % 40), text)
        })
        .collect();
    let root = env.project("wide", &files);
    let url = server.url();
    let mut daemon = env.start_daemon_with(&[
        ("AMANMCP_MEMORY_MB", BUDGET_MB),
        ("AMANMCP_EMBEDDER", "ollama"),
        ("AMANMCP_EMBED_URL", url.as_str()),
        ("AMANMCP_EMBED_MODEL", "fake-embed"),
    ]);
    let ran = env.amanctl_on(&root, &["index"]);
    assert!(ran.ok(), "{}", ran.text());
    env.wait_for(Duration::from_secs(300), "every chunk embedded", || {
        let status = env.project_status();
        status["state"] == "ready" && status["embedding"]["embedded"] == status["chunks"]
    });
    let chunks = env.project_status()["chunks"].as_u64().unwrap();
    assert!(
        chunks > 1_100,
        "only {chunks} chunks: too few to pass the int8 bound"
    );

    let mut shim = Shim::start(&env, &root);
    shim.initialize();
    for i in [0, 617, FILES - 1] {
        let n = i * FUNCTIONS + 1;
        let want = format!("pkg{}/m{i}.py", i % 40);
        assert_eq!(first_semantic_path(&mut shim, &query(n)), Some(want));
    }
    // An edit: the new function's vector is searched once embedded (an older copy answers
    // meanwhile, without it).
    let n = FILES * FUNCTIONS + 1;
    let mut text = files[5].1.clone();
    text.push_str(&function(FILES, 1));
    write_file(&root, &files[5].0, &text);
    env.wait_for(
        Duration::from_secs(60),
        "the edit searched by meaning",
        || first_semantic_path(&mut shim, &query(n)).as_ref() == Some(&files[5].0),
    );

    env.verify_ok(&root, "searched without a graph");
    let log = env.daemon_log();
    assert!(
        !log.contains("graph built"),
        "a graph was built for {chunks} chunks:\n{log}"
    );
    env.stop_daemon();
    daemon.wait().unwrap();
}
