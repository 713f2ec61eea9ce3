//! The ANN graphs' unit tests: which graph new vectors join, when removed ones are dropped,
//! and sealing.

use super::*;
use crate::index::store::{ChunkRecord, EmbeddedChunk, FileRecord, Store};

const DIMS: usize = 16;

/// A small deterministic generator from `seed`: values in [-1, 1). The store's vector tests
/// draw their vectors from it.
pub(in crate::index::store) fn values(seed: u64) -> impl FnMut() -> f32 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// A deterministic unit-ish vector for chunk `id`.
fn vector(id: u64) -> Vec<f32> {
    let mut next = values(id.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    (0..DIMS).map(|_| next()).collect()
}

/// Index file `path` with chunks `ids` and give them their vectors, in one commit.
fn add_file(store: &Store, path: &str, ids: std::ops::Range<u64>) {
    add_file_with(store, path, ids, vector);
}

/// Index file `path` with chunks `ids` (chunk `id`'s text hash `1_000_000 + id`) and give
/// them the vectors `vector` makes, in one commit.
pub(in crate::index::store) fn add_file_with(
    store: &Store,
    path: &str,
    ids: std::ops::Range<u64>,
    vector: impl Fn(u64) -> Vec<f32>,
) {
    add_file_hashed(store, path, ids, |id| 1_000_000 + id, vector);
}

/// [`add_file_with`], chunk `id`'s text hash `hash(id)` (chunks of one text share a hash).
pub(in crate::index::store) fn add_file_hashed(
    store: &Store,
    path: &str,
    ids: std::ops::Range<u64>,
    hash: impl Fn(u64) -> u64,
    vector: impl Fn(u64) -> Vec<f32>,
) {
    let chunks: Vec<(u64, ChunkRecord)> = ids
        .clone()
        .map(|id| {
            let record = ChunkRecord {
                path: path.into(),
                start_line: 1,
                end_line: 1,
                symbol: None,
                kind: None,
                hash: hash(id),
            };
            (id, record)
        })
        .collect();
    let file = FileRecord {
        size: 1,
        mtime_ns: 1,
        hash: 1,
        language: "rust".into(),
        chunk_ids: ids.clone().collect(),
    };
    let items: Vec<EmbeddedChunk> = ids
        .clone()
        .map(|id| EmbeddedChunk {
            chunk_id: id,
            hash: hash(id),
            vector: vector(id),
        })
        .collect();
    let mut txn = store.write_txn().unwrap();
    txn.put_file(path, &file, &chunks, &[], &Default::default())
        .unwrap();
    assert_eq!(txn.put_vectors(&items).unwrap(), items.len());
    txn.build_vectors(ids.end).unwrap();
    txn.commit(ids.end).unwrap();
}

/// Remove `path`, then run a vector commit (as the embedding worker's empty one).
pub(in crate::index::store) fn remove_file(store: &Store, path: &str) {
    let mut txn = store.write_txn().unwrap();
    txn.remove_file(path).unwrap();
    txn.put_vectors(&[]).unwrap();
    txn.build_vectors(7).unwrap();
    txn.commit(1 << 20).unwrap();
}

/// (each large graph's size, recent graph size).
fn graph_sizes(store: &Store) -> (Vec<u64>, u64) {
    store
        .read(|rtxn| {
            let reader = AnnReader::open(rtxn, store.vectors, store.meta)?.expect("vectors");
            let (large, recent) = reader.graph_items();
            Ok((large.iter().map(|g| g.len()).collect(), recent.len()))
        })
        .unwrap()
}

/// (vectors in the large graphs, recent graph size).
fn sizes(store: &Store) -> (u64, u64) {
    let (large, recent) = graph_sizes(store);
    (large.iter().sum(), recent)
}

/// Removed chunks whose vectors are still to be dropped.
fn waiting(store: &Store) -> u64 {
    store
        .read(|rtxn| Ok(store.vector_deletes.len(rtxn)?))
        .unwrap()
}

/// The chunk nearest to chunk `id`'s own vector.
fn nearest_to(store: &Store, id: u64) -> u64 {
    store.nearest(&vector(id), 10, None, 0).unwrap()[0].0
}

#[test]
fn few_new_vectors_join_a_small_graph_many_the_main_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    // A first pass's commit (BULK or more vectors) links into the open large graph.
    add_file(&store, "a.rs", 0..4400);
    assert_eq!(sizes(&store), (4400, 0));
    // A saved file's few join the recent graph.
    add_file(&store, "b.rs", 4400..4500);
    assert_eq!(sizes(&store), (4400, 100));
    // A search finds vectors of either graph.
    for id in [3, 2999, 4450, 4499] {
        assert_eq!(nearest_to(&store, id), id);
    }
    // A removed file's vectors in the recent graph are dropped at once.
    remove_file(&store, "b.rs");
    assert_eq!(sizes(&store), (4400, 0));
    assert!(!store.vector_commit_due().unwrap());
    // The recent graph is merged once it holds more than MERGE_MIN.
    for (n, start) in (4500..8700).step_by(600).enumerate() {
        add_file(&store, &format!("c{n}.rs"), start..start + 600);
    }
    assert_eq!(sizes(&store), (8600, 0));
    for id in [3, 4500, 8699] {
        assert_eq!(nearest_to(&store, id), id);
    }
}

#[test]
fn a_saved_files_old_vectors_in_the_recent_graph_go_without_a_merge() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    add_file(&store, "a.rs", 0..4400);
    add_file(&store, "b.rs", 4400..4500);
    add_file(&store, "c.rs", 4500..4510);
    assert_eq!(sizes(&store), (4400, 110));
    // A lexical commit removes b.rs (saved again: its chunks are new) and flushes as the
    // writer does, no vector commit first: b's vectors leave the recent graph, and the
    // recent graph is not merged into the large one (which links all of it again).
    let mut txn = store.write_txn().unwrap();
    txn.remove_file("b.rs").unwrap();
    txn.build_vectors(7).unwrap();
    txn.commit(1 << 20).unwrap();
    assert_eq!((sizes(&store), waiting(&store)), ((4400, 10), 0));
    assert_eq!(nearest_to(&store, 4505), 4505);
}

#[test]
fn removed_vectors_of_the_main_graph_wait_for_a_merge_unseen_by_searches() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    add_file(&store, "a.rs", 0..8000);
    add_file(&store, "b.rs", 8000..9100);
    assert_eq!(sizes(&store), (9100, 0));
    remove_file(&store, "b.rs");
    // Still in the large graph, queued, not due (no more than an eighth of it), never
    // found.
    assert_eq!(sizes(&store), (9100, 0));
    assert_eq!(waiting(&store), 1100);
    assert!(!store.vector_commit_due().unwrap());
    let found = store.nearest(&vector(8100), 50, None, 0).unwrap();
    assert!(found.iter().all(|(id, _)| *id < 8000), "{found:?}");
    // The next merge drops them.
    add_file(&store, "c.rs", 9100..10200);
    assert_eq!(sizes(&store), (9100, 0));
    assert_eq!(waiting(&store), 0);
    assert_eq!(nearest_to(&store, 10000), 10000);
    assert_eq!(nearest_to(&store, 10), 10);
    // Many removed at once are due: dropped by the next vector commit, empty or not.
    remove_file(&store, "a.rs");
    assert_eq!((sizes(&store), waiting(&store)), ((1100, 0), 0));
}

#[test]
fn a_large_graph_is_sealed_and_the_next_one_takes_new_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    // Bulk commits fill the open graph to its seal, then open the next.
    add_file(&store, "a.rs", 0..5000);
    add_file(&store, "b.rs", 5000..6100);
    add_file(&store, "c.rs", 6100..22000);
    assert_eq!(graph_sizes(&store), (vec![seal(), seal(), 2000], 0));
    // Every graph is searched.
    for id in [1, 6050, 9999, 10000, 19999, 20000, 21999] {
        assert_eq!(nearest_to(&store, id), id);
    }
    // A few removed vectors of a sealed graph wait (linking it again is not due yet),
    // unseen by searches.
    remove_file(&store, "b.rs");
    assert_eq!(waiting(&store), 1100);
    assert!(!store.vector_commit_due().unwrap());
    let found = store.nearest(&vector(5500), 50, None, 0).unwrap();
    assert!(
        found.iter().all(|(id, _)| !(5000..6100).contains(id)),
        "{found:?}"
    );
    // Past an eighth of the graph they are dropped from it, the other graphs untouched.
    remove_file(&store, "a.rs");
    assert_eq!(waiting(&store), 0);
    assert_eq!(graph_sizes(&store), (vec![3900, seal(), 2000], 0));
    for id in [6100, 9999, 15000, 21999] {
        assert_eq!(nearest_to(&store, id), id);
    }
}

#[test]
fn a_project_small_enough_for_exact_search_has_no_graph_until_it_outgrows_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    // Room for 100 vectors of 16 dimensions (and their scales).
    crate::index::store::exact::tests::without_graph_up_to(100 * (DIMS + 4));
    let has_graph = || {
        store
            .read(|rtxn| Ok(holds_vectors(rtxn, store.vectors)?))
            .unwrap()
    };
    add_file(&store, "a.rs", 0..60);
    assert!(!has_graph());
    // Searched exactly, by a copy made on the search's path.
    for id in [0, 31, 59] {
        assert_eq!(nearest_to(&store, id), id);
    }
    let (vectors, pending, _) = store.vector_state().unwrap();
    assert_eq!(vectors, (0..60).collect::<RoaringBitmap>());
    assert!(pending.is_empty());
    assert!(!store.vector_commit_due().unwrap());

    // Past the bound, the commit that adds vectors links every one into a graph.
    add_file(&store, "b.rs", 60..160);
    assert!(has_graph());
    assert_eq!(sizes(&store), (160, 0));
    let (vectors, _, _) = store.vector_state().unwrap();
    assert_eq!(vectors, (0..160).collect::<RoaringBitmap>());
    for id in [0, 59, 60, 159] {
        assert_eq!(nearest_to(&store, id), id);
    }
}

#[test]
fn a_project_without_a_graph_gets_one_when_the_bound_shrinks() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    crate::index::store::exact::tests::without_graph_up_to(100 * (DIMS + 4));
    add_file(&store, "a.rs", 0..60);
    assert!(!store.vector_commit_due().unwrap());
    // A smaller memory budget at the next start: the embedding worker's empty vector
    // commit makes the graph.
    crate::index::store::exact::tests::without_graph_up_to(0);
    assert!(store.vector_commit_due().unwrap());
    let mut txn = store.write_txn().unwrap();
    txn.put_vectors(&[]).unwrap();
    txn.build_vectors(3).unwrap();
    txn.commit(60).unwrap();
    assert!(!store.vector_commit_due().unwrap());
    assert_eq!(sizes(&store), (60, 0));
    assert_eq!(nearest_to(&store, 42), 42);
}
