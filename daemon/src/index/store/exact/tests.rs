//! The in-memory copy: its scans against the truth, its bounds, and how it follows commits.
use super::super::ann::tests::{add_file_hashed, add_file_with, remove_file, values};
use super::super::quantized::{int8_norm, quantized_bytes, sign_words};
use super::*;

/// Wait (bounded) until `ready` holds.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// `store`'s exact answer, once its copy is built.
fn exact_answer(
    store: &Store,
    query: &[f32],
    limit: usize,
    only: Option<&RoaringBitmap>,
) -> Vec<(u64, f32)> {
    let mut found = None;
    wait_until("no exact copy was built", || {
        found = store.exact_nearest(query, limit, only);
        found.is_some()
    });
    found.unwrap_or_default()
}

#[test]
fn a_small_project_s_nearest_are_the_true_nearest_and_follow_each_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut next = super::super::ann::tests::values(3);
    let dims = 48;
    let vectors: Vec<Vec<f32>> = (0..400)
        .map(|_| (0..dims).map(|_| next()).collect())
        .collect();
    add_file_with(&store, "a.rs", 0..300, |id| vectors[id as usize].clone());
    let query: Vec<f32> = (0..dims).map(|_| next()).collect();
    // The truth: every stored vector's distance, nearest first.
    let probe = Probe::new(&query);
    let truth = |ids: &mut dyn Iterator<Item = u64>| -> Vec<u64> {
        let mut all: Vec<(u64, f32)> = ids
            .map(|id| {
                (
                    id,
                    probe
                        .distance(&quantized_bytes(&vectors[id as usize]))
                        .unwrap(),
                )
            })
            .collect();
        all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        all.into_iter().map(|(id, _)| id).collect()
    };
    let ids = |found: &[(u64, f32)]| found.iter().map(|(id, _)| *id).collect::<Vec<_>>();

    let found = exact_answer(&store, &query, 50, None);
    assert_eq!(
        ids(&found),
        truth(&mut (0..300))
            .into_iter()
            .take(50)
            .collect::<Vec<_>>()
    );
    // Within a filter, the filter's nearest.
    let even: RoaringBitmap = (0..300).step_by(2).collect();
    let found = exact_answer(&store, &query, 20, Some(&even));
    let even_truth: Vec<u64> = truth(&mut (0..300).step_by(2))
        .into_iter()
        .take(20)
        .collect();
    assert_eq!(ids(&found), even_truth);

    // A commit makes the copy stale; as the index has settled (no chunk waits for a
    // vector), a new one is built at once, with no search asking, and holds the new
    // vectors.
    add_file_with(&store, "b.rs", 300..400, |id| vectors[id as usize].clone());
    wait_until("not rebuilt after the commit", || {
        store.exact.fresh(dims).is_some()
    });
    let found = exact_answer(&store, &query, 400, None);
    assert_eq!(ids(&found), truth(&mut (0..400)));
    // Search asks through `nearest`, which answers from the copy.
    let asked = store.nearest(&query, 10, None, 0).unwrap();
    assert_eq!(
        ids(&asked),
        truth(&mut (0..400))
            .into_iter()
            .take(10)
            .collect::<Vec<_>>()
    );
    // A query of other dimensions has no copy to use.
    assert!(store.exact_nearest(&query[..8], 5, None).is_none());
}

thread_local! {
    /// [`fits_without_graph`]'s bound in tests: 0, every project has a graph.
    pub(super) static GRAPHLESS_BYTES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Let projects of up to `bytes` of vectors go without a graph, on this thread.
pub(in crate::index::store) fn without_graph_up_to(bytes: usize) {
    GRAPHLESS_BYTES.with(|b| b.set(bytes));
}

#[test]
fn vectors_too_many_for_memory_or_not_all_cached_are_not_copied() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    add_file_with(&store, "a.rs", 0..60, |id| vec![id as f32 + 1.0; 16]);
    let copy = |dims, int8, signs| {
        store
            .read(|rtxn| store.exact_vectors(rtxn, 0, dims, Bounds { int8, signs }))
            .unwrap()
    };
    let kind = |c: &ExactVectors| match c.rows {
        Rows::Int8 { .. } => Kind::Int8,
        Rows::Signs { .. } => Kind::Signs,
    };
    let int8 = copy(16, 60 * 20, 0).unwrap();
    assert_eq!((int8.ids.len(), kind(&int8)), (60, Kind::Int8));
    // One byte short of int8 rows: sign rows (one word and an id a chunk), if they fit.
    let signs = copy(16, 60 * 20 - 1, 60 * 16).unwrap();
    assert_eq!((signs.ids.len(), kind(&signs)), (60, Kind::Signs));
    assert!(copy(16, 60 * 20 - 1, 60 * 16 - 1).is_none());
    // Vectors of other dimensions: a scan would miss the chunks the graph has.
    assert!(copy(8, usize::MAX, usize::MAX).is_none());
}

#[test]
fn chunks_of_one_text_share_its_cached_vector_in_either_copy() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let dims = 96;
    let mut next = values(5);
    let vectors: Vec<Vec<f32>> = (0..40)
        .map(|_| (0..dims).map(|_| next()).collect())
        .collect();
    // b.rs copies a.rs's 40 texts; c.rs holds chunk 80's text once more, under another id.
    add_file_with(&store, "a.rs", 0..40, |id| vectors[id as usize].clone());
    add_file_hashed(
        &store,
        "b.rs",
        40..80,
        |id| 1_000_000 + id - 40,
        |id| vectors[id as usize - 40].clone(),
    );
    add_file_hashed(
        &store,
        "c.rs",
        80..81,
        |_| 1_000_007,
        |_| vectors[7].clone(),
    );
    let at = |ids: &[u64], id: u64| ids.iter().position(|i| *i == id).unwrap();
    for bounds in [
        Bounds {
            int8: usize::MAX,
            signs: 0,
        },
        Bounds {
            int8: 0,
            signs: usize::MAX,
        },
    ] {
        let copy = store
            .read(|rtxn| store.exact_vectors(rtxn, 0, dims, bounds))
            .unwrap()
            .expect("a copy");
        assert_eq!(copy.ids, (0..81).collect::<Vec<u64>>());
        let row = |i: usize| match &copy.rows {
            Rows::Int8 { rows, norms } => {
                let w = dims + 4;
                (rows[i * w..(i + 1) * w].to_vec(), norms[i].to_bits())
            }
            Rows::Signs { words, rows } => {
                let row = rows[i * words..(i + 1) * words].iter();
                (row.flat_map(|w| w.to_le_bytes()).collect(), 0)
            }
        };
        for id in 0..40u64 {
            let own = quantized_bytes(&vectors[id as usize]);
            let want = match &copy.rows {
                Rows::Int8 { .. } => (own.clone(), int8_norm(int8_values(&own)).to_bits()),
                Rows::Signs { .. } => {
                    let words = sign_words(int8_values(&own));
                    (words.flat_map(|w| w.to_le_bytes()).collect(), 0)
                }
            };
            assert_eq!(row(at(&copy.ids, id)), want, "chunk {id}");
            assert_eq!(row(at(&copy.ids, id + 40)), want, "chunk {}", id + 40);
        }
        assert_eq!(row(at(&copy.ids, 80)), row(at(&copy.ids, 7)));
    }
}

#[test]
fn a_project_too_large_for_int8_rows_is_searched_by_sign_bits_without_a_graph() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    *store.exact.0.bounds.lock().unwrap() = Some(Bounds {
        int8: 0,
        signs: usize::MAX,
    });
    without_graph_up_to(usize::MAX);
    let dims = 96;
    let mut next = values(11);
    let vectors: Vec<Vec<f32>> = (0..2_000)
        .map(|_| (0..dims).map(|_| next()).collect())
        .collect();
    add_file_with(&store, "a.rs", 0..2_000, |id| vectors[id as usize].clone());
    let graph = store.read(|rtxn| Ok(super::super::ann::holds_vectors(rtxn, store.vectors)?));
    assert!(!graph.unwrap(), "no graph");
    let probe_of = |query: &[f32]| {
        let probe = Probe::new(query);
        let mut all: Vec<(u64, f32)> = (0..2_000)
            .map(|id| {
                let bytes = quantized_bytes(&vectors[id as usize]);
                (id, probe.distance(&bytes).unwrap())
            })
            .collect();
        all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        all
    };
    // Over many queries, the sign scan's answers carry exact distances, and find more of
    // the true ten than the graph's way did: three times as many candidates by sign bits
    // alone, re-scored. Uniform random vectors, with no clusters, are the hard case for
    // sign bits (real code's vectors are measured by `amanmcp-bench ann`).
    let mut hits = 0;
    let mut three_times = 0;
    for _ in 0..20 {
        let query: Vec<f32> = (0..dims).map(|_| next()).collect();
        let truth = probe_of(&query);
        let found = store.nearest(&query, 10, None, 0).unwrap();
        assert_eq!(found.len(), 10);
        for (id, distance) in &found {
            let exact = truth.iter().find(|(t, _)| t == id).unwrap().1;
            assert!((exact - distance).abs() < 1e-6);
        }
        assert!(found.windows(2).all(|w| w[0].1 <= w[1].1));
        let true_ten = &truth[..10];
        hits += true_ten
            .iter()
            .filter(|(id, _)| found.iter().any(|(f, _)| f == id))
            .count();
        let bits = query_sign_words(&query);
        let mut by_signs: Vec<(u32, u64)> = (0..2_000u64)
            .map(|id| {
                let bytes = quantized_bytes(&vectors[id as usize]);
                let row: Vec<u64> = sign_words(int8_values(&bytes)).collect();
                (sign_distance(&bits, &row), id)
            })
            .collect();
        by_signs.sort_unstable();
        let mut graph_way: Vec<(f32, u64)> = by_signs[..30]
            .iter()
            .map(|(_, id)| (truth.iter().find(|(t, _)| t == id).unwrap().1, *id))
            .collect();
        graph_way.sort_by(|a, b| a.0.total_cmp(&b.0));
        three_times += true_ten
            .iter()
            .filter(|(id, _)| graph_way[..10].iter().any(|(_, g)| g == id))
            .count();
    }
    assert!(
        hits >= 150 && hits > three_times + 30,
        "recall@10 {hits}/200 against {three_times}"
    );
    let copy = store
        .exact
        .fresh(dims)
        .expect("the copy made by the first search");
    assert!(matches!(copy.rows, Rows::Signs { words: 2, .. }));

    // A chunk added later is found once its commit's copy is built; until then an older
    // copy answers (re-scored against the store, a removed chunk left out).
    let query: Vec<f32> = (0..dims).map(|_| next()).collect();
    let before = store.nearest(&query, 5, None, 0).unwrap();
    add_file_with(&store, "b.rs", 2_000..2_001, |_| query.clone());
    // (And its builder done, so that the next search's rebuild is not skipped as running.)
    wait_until("no copy after the commit", || {
        store.exact.fresh(dims).is_some() && !store.exact.0.building.load(Ordering::Acquire)
    });
    let found = store.nearest(&query, 5, None, 0).unwrap();
    assert_eq!(found[0].0, 2_000);
    assert!(found[0].1 < 1e-3);
    assert_eq!(&found[1..], &before[..4]);
    // Stale (a commit without a rebuild yet): the older copy answers at once.
    store.exact.committed();
    let removed = store.nearest(&query, 5, None, 0).unwrap();
    assert_eq!(removed, found);
    // (And its builder done, so that the next search's rebuild is not skipped as running.)
    wait_until("no copy after the search", || {
        store.exact.fresh(dims).is_some() && !store.exact.0.building.load(Ordering::Acquire)
    });
    remove_file(&store, "b.rs");
    store.exact.committed();
    let after = store.nearest(&query, 5, None, 0).unwrap();
    assert_eq!(after, before);
}
