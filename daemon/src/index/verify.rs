//! Consistency check of one project: LMDB against tantivy, and both against the disk.
//! Used by `amanctl verify` and by the crash tests.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::error::IndexError;
use crate::files::scan::{self, Limits, ReadOutcome};
use crate::index::ProjectIndex;

/// What the check found.
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Every inconsistency, described.
    pub problems: Vec<String>,
    /// Files in LMDB.
    pub files: u64,
    /// Chunks in LMDB.
    pub chunks: u64,
    /// Live tantivy documents.
    pub docs: u64,
}

/// Check `index` of `root`. Only meaningful while no pass is running.
pub fn verify(
    root: &Path,
    index: &ProjectIndex,
    limits: Limits,
) -> Result<VerifyReport, IndexError> {
    let mut report = VerifyReport::default();
    let problems = &mut report.problems;
    let files = index.store.all_files()?;
    let chunks: HashMap<u64, String> = index.store.all_chunks()?.into_iter().collect();
    report.files = files.len() as u64;
    report.chunks = chunks.len() as u64;

    // LMDB: file records and chunk records point at each other.
    let mut referenced = HashSet::new();
    for (path, record) in &files {
        for id in &record.chunk_ids {
            match chunks.get(id) {
                Some(chunk_path) if chunk_path == path => {}
                Some(other) => problems.push(format!("chunk {id} of {path} records path {other}")),
                None => problems.push(format!("chunk {id} of {path} missing from LMDB")),
            }
            if !referenced.insert(*id) {
                problems.push(format!("chunk {id} referenced twice"));
            }
        }
    }
    for (id, path) in &chunks {
        if !referenced.contains(id) {
            problems.push(format!("orphan chunk {id} ({path}) in LMDB"));
        }
    }
    let dirty = index.store.dirty_paths()?;
    if !dirty.is_empty() {
        problems.push(format!("{} dirty paths left: {:?}", dirty.len(), dirty));
    }

    // tantivy: exactly the LMDB chunks, each once.
    let docs = index.lexical.all_chunk_ids()?;
    report.docs = docs.len() as u64;
    let mut seen = HashSet::new();
    for id in &docs {
        if !seen.insert(*id) {
            problems.push(format!("chunk {id} indexed twice in tantivy"));
        } else if !chunks.contains_key(id) {
            problems.push(format!("tantivy document for chunk {id} unknown to LMDB"));
        }
    }
    for (id, path) in &chunks {
        if !seen.contains(id) {
            problems.push(format!("chunk {id} ({path}) missing from tantivy"));
        }
    }

    // Vectors: every chunk has a vector or waits for one (not both); the vector of a chunk
    // that is gone is queued to be dropped.
    let (vectors, pending, deletes) = index.store.vector_state()?;
    for (id, path) in &chunks {
        let has_vector = u32::try_from(*id).is_ok_and(|item| vectors.contains(item));
        match (has_vector, pending.contains(id)) {
            (true, true) => problems.push(format!(
                "chunk {id} ({path}) has a vector and waits for one"
            )),
            (false, false) => problems.push(format!(
                "chunk {id} ({path}) has no vector and none is pending"
            )),
            _ => {}
        }
    }
    for item in &vectors {
        let id = u64::from(item);
        if !chunks.contains_key(&id) && !deletes.contains(&id) {
            problems.push(format!("vector of unknown chunk {item}"));
        }
    }
    for id in &pending {
        if !chunks.contains_key(id) {
            problems.push(format!("pending mark of unknown chunk {id}"));
        }
    }

    // Disk: every indexable file is indexed with its current content, nothing else is.
    let scanned = scan::scan(root, limits);
    let mut on_disk = HashSet::new();
    for candidate in &scanned.files {
        if let ReadOutcome::Text(_, hash) = scan::read_text(root, &candidate.rel_path, limits) {
            on_disk.insert(candidate.rel_path.as_str());
            match files.get(&candidate.rel_path) {
                Some(record) if record.is_provisional() => problems.push(format!(
                    "{} is still chunked provisionally (by lines, no syntax pass since)",
                    candidate.rel_path
                )),
                Some(record) if record.hash == hash => {}
                Some(_) => {
                    problems.push(format!("{} is stale (content changed)", candidate.rel_path))
                }
                None => problems.push(format!("{} is not indexed", candidate.rel_path)),
            }
        }
    }
    for path in files.keys() {
        if !on_disk.contains(path.as_str()) {
            problems.push(format!("{path} is indexed but not on disk"));
        }
    }
    problems.sort();
    Ok(report)
}
