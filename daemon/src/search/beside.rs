//! A query's two legs at once: the vectors' on a thread kept for it, BM25's on the
//! caller's. A thread spawned per query cost more than the vector leg itself on a small
//! project (a new thread's stack, its thread-locals and its allocator heap set up, then torn
//! down, every search).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

/// The threads the second leg of a query runs on (`amanmcp-search-N`; the embedder's own
/// pools are `amanmcp-query-N` and `amanmcp-embed-N`): one per core (searches run on many
/// request threads, each hands over one leg), made on the first search.
fn helpers() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .thread_name(|i| format!("amanmcp-search-{i}"))
            .build()
            .map_err(|e| tracing::warn!(error = %e, "no query threads; legs run in turn"))
            .ok()
    })
    .as_ref()
}

/// Whether work handed to [`run`] goes to another core (more than one search thread). Read
/// once: `available_parallelism` reads the cgroup's files on every call.
pub(crate) fn on_another_core() -> bool {
    helpers().is_some_and(|pool| pool.current_num_threads() > 1)
}

/// `beside()` on a search thread while `here()` runs on this one; both results. A panic in
/// `beside` becomes `failed` (the caller answers without that leg), as a thread's join did.
pub(crate) fn run<A: Send, B>(
    beside: impl FnOnce() -> A + Send,
    failed: impl FnOnce() -> A,
    here: impl FnOnce() -> B,
) -> (A, B) {
    let guarded = move || catch_unwind(AssertUnwindSafe(beside)).ok();
    let Some(pool) = helpers() else {
        let a = guarded();
        return (a.unwrap_or_else(failed), here());
    };
    let mut a = None;
    let b = pool.in_place_scope(|scope| {
        scope.spawn(|_| a = guarded());
        here()
    });
    (a.unwrap_or_else(failed), b)
}

#[cfg(test)]
mod tests {
    #[test]
    fn both_legs_answer_and_a_panicking_leg_is_reported_failed() {
        let (a, b) = super::run(|| 2 + 2, || 0, || "here");
        assert_eq!((a, b), (4, "here"));
        let (a, b) = super::run(|| -> i32 { panic!("leg") }, || -1, || "still");
        assert_eq!((a, b), (-1, "still"));
    }

    #[test]
    fn the_second_leg_runs_on_a_kept_thread() {
        let name = || std::thread::current().name().map(str::to_owned);
        let (first, _) = super::run(name, || None, || ());
        let first = first.expect("a named query thread");
        assert!(first.starts_with("amanmcp-search-"), "{first}");
    }
}
