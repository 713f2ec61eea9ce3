//! A query's two legs at once: the vectors' on a thread kept for it, BM25's on the
//! caller's. A thread spawned per query cost more than the vector leg itself on a small
//! project (a new thread's stack, its thread-locals and its allocator heap set up, then torn
//! down, every search).
//!
//! The kept threads sleep on a condition variable between legs. (They were a rayon pool,
//! whose idle workers call `sched_yield` some thirty times after each job before sleeping:
//! on two cores, a sixth of a small project's search time went to that spinning, taken from
//! the caller's leg and from the client beside the daemon.)

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// A leg handed to a kept thread, its borrows' lifetime erased (see [`run`]).
type Job = Box<dyn FnOnce() + Send + 'static>;

/// The kept threads' queue of legs.
struct Helpers {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
    threads: usize,
}

/// The threads the second leg of a query runs on (`amanmcp-search-N`; the embedder's own
/// pools are `amanmcp-query-N` and `amanmcp-embed-N`): one per core (searches run on many
/// request threads, each hands over one leg), made on the first search.
fn helpers() -> Option<&'static Helpers> {
    static HELPERS: OnceLock<Option<Arc<Helpers>>> = OnceLock::new();
    HELPERS
        .get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            let helpers = Arc::new(Helpers {
                jobs: Mutex::new(VecDeque::new()),
                ready: Condvar::new(),
                threads: cores,
            });
            for i in 0..cores {
                let helpers = helpers.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("amanmcp-search-{i}"))
                    .spawn(move || helpers.serve());
                if let Err(e) = spawned {
                    tracing::warn!(error = %e, "no query threads; legs run in turn");
                    return None;
                }
            }
            Some(helpers)
        })
        .as_deref()
}

thread_local! {
    /// Whether this thread is a kept one (running a leg handed over).
    static HELPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Helpers {
    /// A kept thread's life: run each leg handed over, sleeping while there is none.
    fn serve(&self) {
        HELPING.set(true);
        loop {
            let job = {
                let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if let Some(job) = jobs.pop_front() {
                        break job;
                    }
                    jobs = self.ready.wait(jobs).unwrap_or_else(|e| e.into_inner());
                }
            };
            // Each job catches its own panic (see `run`).
            job();
        }
    }
}

/// Whether work handed to [`run`] goes to another core (more than one search thread). Read
/// once: `available_parallelism` reads the cgroup's files on every call.
pub(crate) fn on_another_core() -> bool {
    helpers().is_some_and(|helpers| helpers.threads > 1)
}

/// Set once a leg has run; waited on by the caller that handed it over.
#[derive(Default)]
struct Done {
    done: Mutex<bool>,
    signal: Condvar,
}

impl Done {
    fn set(&self) {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        *done = true;
        self.signal.notify_one();
    }

    fn wait(&self) {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        while !*done {
            done = self.signal.wait(done).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Waits for the handed-over leg when dropped, so the leg's borrows outlive it even if
/// `here()` panics.
struct WaitOnDrop<'a>(&'a Done);

impl Drop for WaitOnDrop<'_> {
    fn drop(&mut self) {
        self.0.wait();
    }
}

/// `beside()` on a search thread while `here()` runs on this one; both results. A panic in
/// `beside` becomes `failed` (the caller answers without that leg), as a thread's join did.
pub(crate) fn run<A: Send, B>(
    beside: impl FnOnce() -> A + Send,
    failed: impl FnOnce() -> A,
    here: impl FnOnce() -> B,
) -> (A, B) {
    let guarded = move || catch_unwind(AssertUnwindSafe(beside)).ok();
    let Some(helpers) = helpers() else {
        let a = guarded();
        return (a.unwrap_or_else(failed), here());
    };
    if HELPING.get() {
        // A leg that hands over a leg of its own would wait on the threads it occupies.
        let a = guarded();
        return (a.unwrap_or_else(failed), here());
    }
    let result: Mutex<Option<A>> = Mutex::new(None);
    let done = Arc::new(Done::default());
    let (result_ref, done_job) = (&result, done.clone());
    let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
        let a = guarded();
        *result_ref.lock().unwrap_or_else(|e| e.into_inner()) = a;
        done_job.set();
    });
    // SAFETY: the job borrows `result` and what `beside` borrows, all of which outlive this
    // call. It writes `result` before it sets `done` (which it owns a share of, so setting
    // it touches nothing of this frame), and this function neither returns nor unwinds
    // before `done` is set: `_wait` waits for it on every path. `catch_unwind` in `guarded`
    // keeps a panicking leg from skipping `set`.
    let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) };
    let _wait = WaitOnDrop(&done);
    helpers
        .jobs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push_back(job);
    helpers.ready.notify_one();
    let b = here();
    drop(_wait);
    let a = result.into_inner().unwrap_or_else(|e| e.into_inner());
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

    #[test]
    fn a_leg_borrowing_the_callers_data_is_done_before_the_call_returns() {
        // Many callers at once, each leg reading and writing the caller's own data.
        let handles: Vec<_> = (0..8)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..200u64 {
                        let mut seen = vec![0u64; 16];
                        let input: Vec<u64> = (0..16).map(|k| k * i + t).collect();
                        let (sum, here) = super::run(
                            || {
                                seen.iter_mut().zip(&input).for_each(|(s, x)| *s = *x);
                                input.iter().sum::<u64>()
                            },
                            || 0,
                            || i,
                        );
                        assert_eq!(here, i);
                        assert_eq!(sum, input.iter().sum::<u64>());
                        assert_eq!(seen, input);
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
    }

    #[test]
    fn a_panic_here_still_waits_for_the_leg() {
        let flag = std::sync::atomic::AtomicBool::new(false);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            super::run(
                || {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    flag.store(true, std::sync::atomic::Ordering::SeqCst);
                },
                || (),
                || panic!("here"),
            )
        }));
        assert!(caught.is_err());
        assert!(flag.load(std::sync::atomic::Ordering::SeqCst));
    }
}
