//! Unit tests of the floor a hybrid candidate keeps at its semantic score ([`rank`]).

use std::collections::HashMap;

use super::super::{Profile, rank};
use super::{Symbols, hit};

/// Three candidates as fused (the client first by both legs; the backoff the vectors'
/// nearest, found by BM25 far down; the pool in between) and each one's score in semantic mode.
fn fused() -> (Vec<crate::index::lexical::LexicalHit>, HashMap<u64, f32>) {
    let mut hits = vec![
        hit("src/client.rs", 1.0),
        hit("src/backoff.rs", 0.3),
        hit("src/pool.rs", 0.5),
    ];
    for (id, hit) in hits.iter_mut().enumerate() {
        hit.chunk_id = id as u64;
    }
    let near = HashMap::from([(0, 0.8), (1, 0.95), (2, 0.1)]);
    (hits, near)
}

fn order(query: &str, near: Option<&HashMap<u64, f32>>) -> Vec<String> {
    let (hits, _) = fused();
    let ranked = rank(&Profile::new(query), hits, &Symbols(vec![]), near);
    ranked.into_iter().map(|h| h.path).collect()
}

#[test]
fn where_no_file_is_named_a_candidate_keeps_its_semantic_score() {
    let (_, near) = fused();
    // RRF alone.
    assert_eq!(
        order("wait longer between failed attempts", None),
        ["src/client.rs", "src/pool.rs", "src/backoff.rs"]
    );
    // No path says anything about the question: the backoff is as near as the vectors put it.
    assert_eq!(
        order("wait longer between failed attempts", Some(&near)),
        ["src/client.rs", "src/backoff.rs", "src/pool.rs"]
    );
    let (hits, _) = fused();
    let ranked = rank(
        &Profile::new("wait longer between failed attempts"),
        hits,
        &Symbols(vec![]),
        Some(&near),
    );
    let backoff = ranked.iter().find(|h| h.path == "src/backoff.rs").unwrap();
    assert!(
        backoff
            .why
            .iter()
            .any(|w| w.starts_with("as near as the vectors")),
        "{:?}",
        backoff.why
    );
    // A query word names a file (`client.rs`): the names decide, and fusion stands.
    assert_eq!(
        order("how the client waits between failed attempts", Some(&near)),
        ["src/client.rs", "src/pool.rs", "src/backoff.rs"]
    );
}
