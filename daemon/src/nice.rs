//! Who yields the CPU to whom. A search runs at the daemon's own priority; every thread
//! doing background work steps back from it first, so on a machine whose cores are all busy
//! indexing, a search still gets most of a core (Linux `nice` is per thread, and a thread
//! inherits its creator's). Indexing steps back from searches, embedding from indexing, the
//! word table from everything. Elsewhere than Linux this does nothing.

/// Passes (reading and parsing), the writer (with tantivy's threads it makes), compaction
/// and the in-memory vector copies' builds: behind searches.
pub const INDEXING: i32 = 5;
/// Embedding documents: behind indexing and searches (on 2 cores the first pass of a
/// 2,000-file tree ends in 4.4 s instead of 7.6 s beside them).
pub const EMBEDDING: i32 = 10;
/// Filling the word table: behind everything, project embedding included.
pub const WORD_TABLE: i32 = 19;

/// Put the calling thread at least `steps` behind the daemon's main thread. Never raises a
/// priority (a thread cannot take back what it gave up without privilege), so calling it
/// again, or on a thread that inherited a step back, changes nothing. A failure (a sandbox
/// refusing) leaves the priority as it was.
pub fn step_back(steps: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: getpid, gettid and getpriority/setpriority on this process's own ids have no
    // preconditions; errno is this thread's.
    unsafe {
        let main = libc::getpid() as libc::id_t;
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let base = libc::getpriority(libc::PRIO_PROCESS, main);
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if *libc::__errno_location() != 0 {
            return;
        }
        let target = (base + steps).min(19);
        if target > now {
            libc::setpriority(libc::PRIO_PROCESS, tid, target);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = steps;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn own_nice() -> i32 {
        // SAFETY: as in `step_back`.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[test]
    fn steps_back_once_and_never_forward() {
        let base = own_nice();
        let (first, again, less) = std::thread::spawn(|| {
            step_back(INDEXING);
            let first = own_nice();
            step_back(INDEXING);
            let again = own_nice();
            step_back(1);
            (first, again, own_nice())
        })
        .join()
        .unwrap();
        assert_eq!(first, (base + INDEXING).min(19));
        assert_eq!(again, first, "a second step back is no further");
        assert_eq!(less, first, "a smaller step never raises the priority");
        assert_eq!(own_nice(), base, "only the calling thread stepped back");
    }
}
