//! The store's map in the daemon's resident memory: pages read by a pass, the vector graph's
//! build or a search stay counted in its RSS until given back (`memory::release_mapped_pages`).

use std::time::{Duration, Instant};

use super::Store;

/// The writer gives the map's pages back at most this often while it commits (a pass or a
/// run of vector commits reads the same upper pages of each tree again at every commit, and
/// faults them back from the page cache), and the embedding worker the shared cache's while
/// it looks vectors up there. At 5 s, the maps held 276 MB at the peak of a 20,000-file
/// first index's vectors (the project's 167 MB, the shared cache's 109 MB).
pub const WHILE_WRITING: Duration = Duration::from_secs(1);

impl Store {
    /// Give back the resident pages of this environment's map (`memory::release_mapped_pages`).
    pub fn release_mapped_pages(&self) {
        crate::memory::release_mapped_pages(&self.env);
    }
}

/// When the writer last gave the map's pages back, and whether it has committed since.
#[derive(Debug)]
pub struct Released {
    last: Instant,
    committed_since: bool,
}

impl Default for Released {
    fn default() -> Self {
        Released {
            last: Instant::now(),
            committed_since: false,
        }
    }
}

impl Released {
    /// A commit has read the map: give its pages back if [`WHILE_WRITING`] has passed since
    /// the last time.
    pub fn after_commit(&mut self, store: &Store) {
        self.committed_since = true;
        if self.last.elapsed() >= WHILE_WRITING {
            self.now(store);
        }
    }

    /// Whether a commit read the map since its pages were last given back: the writer then
    /// waits at most [`WHILE_WRITING`] for its next operation, and gives them back if none
    /// comes ([`Released::now`]).
    pub fn owed(&self) -> bool {
        self.committed_since
    }

    /// Give the pages back now (a pass has ended, or the writer has been quiet).
    pub fn now(&mut self, store: &Store) {
        store.release_mapped_pages();
        self.last = Instant::now();
        self.committed_since = false;
    }
}
