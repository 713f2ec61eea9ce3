//! Retrieval quality regression guard: CoSQA (500 real web queries over 6,267 Python functions)
//! through the real daemon, with the benchmark program itself.

use std::path::PathBuf;

use amanmcp_tests::bin;

/// Lexical MRR measured when this guard was set: 0.237. The floor leaves room for noise only.
const COSQA_MIN_MRR: &str = "0.22";

#[test]
fn cosqa_mrr_stays_above_its_floor() {
    let eval = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/eval/cosqa");
    assert!(
        eval.join("code_idx_map.txt").is_file(),
        "{} not found: the shared eval data must sit beside the checkout",
        eval.display()
    );
    let out = std::process::Command::new(bin("amanmcp-bench"))
        .args(["cosqa", "--min-mrr", COSQA_MIN_MRR, "--eval"])
        .arg(&eval)
        .output()
        .expect("run amanmcp-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("cosqa lexical: MRR"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
