//! Retrieval quality regression guard: CoSQA (500 real web queries over 6,267 Python functions)
//! through the real daemon with the built-in embedder, with the benchmark program itself.

use std::path::PathBuf;

use amanmcp_tests::bin;

/// MRR measured when these guards were set (2 cores, built-in embedder, 256 bytes):
/// lexical 0.237, semantic 0.324-0.326, hybrid 0.315-0.318. The floors leave room for the
/// approximate vector search's run-to-run noise only.
const FLOORS: [(&str, &str); 3] = [
    ("--min-mrr", "0.22"),
    ("--min-mrr-semantic", "0.30"),
    ("--min-mrr-hybrid", "0.29"),
];

#[test]
fn cosqa_mrr_stays_above_its_floors_in_every_mode() {
    let eval = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/eval/cosqa");
    assert!(
        eval.join("code_idx_map.txt").is_file(),
        "{} not found: the shared eval data must sit beside the checkout",
        eval.display()
    );
    let mut command = std::process::Command::new(bin("amanmcp-bench"));
    command.arg("cosqa").arg("--eval").arg(&eval);
    for (flag, floor) in FLOORS {
        command.args([flag, floor]);
    }
    let out = command.output().expect("run amanmcp-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    for mode in ["lexical", "semantic", "hybrid"] {
        assert!(
            stdout.contains(&format!("cosqa {mode}: MRR")),
            "no {mode} figure:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
