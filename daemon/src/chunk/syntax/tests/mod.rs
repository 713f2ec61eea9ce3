//! Chunk invariants and symbols for every language the chunker knows: one test per
//! language, each on a small file with the language's usual definitions.

mod javascript;
mod mainstream;
mod more;
mod refs;

use super::{Chunked, chunk_file};
use crate::chunk::check_chunk_invariants;

pub(super) fn check(language: &str, text: &str, expected: &[(&str, &str)]) -> Chunked {
    let chunked = chunk_file(language, text);
    check_chunk_invariants(text, &chunked.chunks);
    let found: Vec<(String, &str)> = chunked
        .symbols
        .iter()
        .map(|s| (s.qualified.clone(), s.kind))
        .collect();
    for (name, kind) in expected {
        assert!(
            found.iter().any(|(n, k)| n == name && k == kind),
            "{language}: expected {kind} {name}, found {found:?}"
        );
    }
    chunked
}
