//! What a loaded project answers: searches, similar code, lookups, usages, the code graph
//! and its file list, each read from what is committed (a brand-new index first gets a
//! moment to commit something).

use std::sync::atomic::Ordering;

use super::Project;
use crate::error::Error;
use crate::index::lexical::LexicalHit;
use crate::index::progress::IndexState;
use crate::search::graph::{GraphAnswer, GraphParams, Link};
use crate::search::usages::{UsagesFound, UsagesParams};
use crate::search::{Found, SearchParams, Searcher, Semantic};

use super::status::ProjectStatus;

/// A page of search results.
pub struct SearchOutcome {
    /// The hits, best first.
    pub hits: Vec<LexicalHit>,
    /// Total matching chunks.
    pub total: u64,
    /// Whether more results exist beyond this page.
    pub truncated: bool,
    /// The project's status when the search ran.
    pub status: ProjectStatus,
    /// Whether vectors took part.
    pub semantic: Semantic,
    /// Query words not searched for, each with the reason.
    pub set_aside: Vec<(String, &'static str)>,
}

/// How long a search on an empty, still-indexing project waits for the first commit.
const FIRST_COMMIT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Project {
    /// Search the project. Answers from whatever is committed, even mid-pass.
    pub fn search(&self, params: &SearchParams) -> Result<SearchOutcome, Error> {
        self.wait_for_first_commit();
        let found = self.noting(self.searcher().search(params))?;
        Ok(self.outcome(found))
    }

    /// Code similar to a reference, the reference excluded (see [`Searcher::similar`]).
    pub fn similar(
        &self,
        reference: &crate::search::lookup::Reference,
        params: &SearchParams,
    ) -> Result<SearchOutcome, Error> {
        self.wait_for_first_commit();
        let found = self.noting(self.searcher().similar(reference, params))?;
        Ok(self.outcome(found))
    }

    fn searcher(&self) -> Searcher<'_> {
        Searcher {
            root: &self.root,
            index: &self.index,
            config: &self.search,
            graph_memo: &self.graph_memo,
        }
    }

    fn outcome(&self, found: Found) -> SearchOutcome {
        SearchOutcome {
            hits: found.hits,
            total: found.total,
            truncated: found.truncated,
            status: self.status(),
            semantic: found.semantic,
            set_aside: found.set_aside,
        }
    }

    /// Files indexed provisionally, not parsed yet: their definitions and calls are missing
    /// from `lookup` and the graph until the syntax pass reaches them.
    pub fn unparsed_files(&self) -> u64 {
        self.index.progress.provisional()
    }

    /// Code by path and/or symbol (see [`crate::search::lookup`]).
    pub fn lookup(
        &self,
        params: &crate::search::lookup::LookupParams,
    ) -> Result<Vec<crate::search::lookup::LookupMatch>, Error> {
        self.wait_for_first_commit();
        self.noting(crate::search::lookup::lookup(
            &self.root,
            &self.index.store,
            params,
        ))
    }

    /// Where a name is defined and used (see [`crate::search::usages`]).
    pub fn usages(&self, params: &UsagesParams) -> Result<UsagesFound, Error> {
        self.wait_for_first_commit();
        self.noting(self.searcher().usages(params))
    }

    /// A code graph request (see [`crate::search::graph`]).
    pub fn graph(&self, kind: &str, params: &GraphParams) -> Result<GraphAnswer, Error> {
        self.wait_for_first_commit();
        self.noting(self.searcher().graph(kind, params))
    }

    /// Calls of `name` this project does not define (see `across::callers`).
    pub fn calls_from_outside(&self, name: &str) -> Result<Vec<Link>, Error> {
        self.wait_for_first_commit();
        self.noting(self.searcher().calls_from_outside(name))
    }

    /// Indexed files in path order: a page, and the total.
    pub fn list_files(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<(String, crate::index::store::FileRecord)>, u64), Error> {
        self.wait_for_first_commit();
        Ok(self.index.store.files_page(offset, limit)?)
    }

    /// A brand-new index has nothing to answer from: give its first pass a moment (bounded)
    /// to commit something, so the first search of a small project is not empty.
    fn wait_for_first_commit(&self) {
        let progress = &self.index.progress;
        let deadline = std::time::Instant::now() + FIRST_COMMIT_WAIT;
        while progress.state() == IndexState::Indexing
            && progress.files.load(Ordering::Relaxed) == 0
            && progress.passes.load(Ordering::Acquire) == 0
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}
