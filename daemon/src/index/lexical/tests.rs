//! The lexical index's own behaviour: merges seen by searches once they land.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{ChunkDoc, Lexical};

fn add(lexical: &Lexical, writer: &tantivy::IndexWriter, chunk_id: u64, path: &str) {
    let doc = ChunkDoc {
        chunk_id,
        path,
        language: "python",
        start_line: 1,
        end_line: 2,
        symbol: Some("handler"),
        kind: Some("function"),
        names: &[],
        body: "def handler():\n    return dispatch()\n",
    };
    lexical.add_chunk(writer, &doc).unwrap();
}

fn segments_read(lexical: &Lexical) -> usize {
    lexical.reader.searcher().segment_readers().len()
}

/// A merge that lands after the last commit is announced by the merge policy, and the
/// reader, left on the merged-away segments, moves to the merged one on
/// `refresh_if_stale`; a second call finds nothing to do.
#[test]
fn a_merge_after_the_last_commit_is_announced_and_read_after_a_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let lexical = Lexical::open(dir.path()).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let mut writer = lexical
        .writer(Some(Arc::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })))
        .unwrap();
    for (id, path) in [(1, "a.py"), (2, "b.py"), (3, "c.py")] {
        add(&lexical, &writer, id, path);
        lexical.commit(&mut writer).unwrap();
    }
    assert_eq!(segments_read(&lexical), 3);
    assert!(!lexical.refresh_if_stale().unwrap(), "nothing moved yet");
    let before = calls.load(Ordering::SeqCst);
    assert!(
        before >= 3,
        "the policy is asked after each commit: {before}"
    );

    let ids = lexical.index.searchable_segment_ids().unwrap();
    writer.merge(&ids).wait().unwrap();
    assert!(
        calls.load(Ordering::SeqCst) > before,
        "the merge's end was not announced"
    );
    assert_eq!(
        segments_read(&lexical),
        3,
        "the reader moved without a reload"
    );

    assert!(lexical.refresh_if_stale().unwrap());
    assert_eq!(segments_read(&lexical), 1);
    assert_eq!(lexical.reader.searcher().num_docs(), 3);
    assert!(!lexical.refresh_if_stale().unwrap());
}
