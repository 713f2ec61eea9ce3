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

/// KB resident in this process's maps of files under `dir` (`/proc/self/smaps`).
#[cfg(target_os = "linux")]
fn resident_kb_under(dir: &std::path::Path) -> u64 {
    let dir = std::fs::canonicalize(dir).unwrap();
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    let mut kb = 0;
    for line in smaps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let first = fields.next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            inside = line
                .find('/')
                .is_some_and(|at| line[at..].starts_with(dir.to_str().unwrap()));
        } else if first == "Rss:" && inside {
            kb += fields
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    kb
}

/// What a search read of the segment files' maps stays resident until given back, and the
/// index answers the same afterwards (its pages fault back in).
#[cfg(target_os = "linux")]
#[test]
fn the_pages_a_search_read_of_the_segment_files_are_given_back() {
    let dir = tempfile::tempdir().unwrap();
    let lexical = Lexical::open(dir.path()).unwrap();
    let mut writer = lexical.writer(None).unwrap();
    for id in 0..3000 {
        add(&lexical, &writer, id, &format!("src/module_{id}.py"));
    }
    lexical.commit(&mut writer).unwrap();
    // The fast field of chunk ids, then a BM25 search reading the terms, postings and
    // stored documents.
    let read = |lexical: &Lexical| {
        let terms = [("dispatch".to_string(), 1.0)];
        let query = super::LexicalQuery {
            text: "dispatch",
            terms: &terms,
            paths: None,
            language: None,
            offset: 0,
            limit: 50,
            more_like_this: false,
            mentioned: &[],
            chunks: None,
        };
        let (hits, total) = lexical.search(&query).unwrap();
        assert_eq!((hits.len(), total), (50, 3000));
        lexical.all_chunk_ids().unwrap().len()
    };
    assert_eq!(read(&lexical), 3000);
    let before = resident_kb_under(dir.path());
    assert!(before > 0, "nothing of the segment files was resident");

    lexical.release_mapped_pages();
    let after = resident_kb_under(dir.path());
    assert_eq!(after, 0, "{after} of {before} KB still resident");
    assert_eq!(read(&lexical), 3000);
    assert!(resident_kb_under(dir.path()) > 0);
}
