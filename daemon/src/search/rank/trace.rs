//! For fitting the ranking stage offline (`bench/fit-rank.py`): with
//! `AMANMCP_RANK_TRACE=<file>` in the daemon's environment, each search appends one JSON line
//! per ranking to that file: the query, and every candidate's retrieval account, evidence
//! ([`super::evidence::Evidence`]), the query words its text and path hold, and its file's
//! coverage. Unset (always, outside the bench), nothing is written and nothing is built.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// The trace file, if the environment names one (opened once).
fn file() -> Option<&'static Mutex<std::fs::File>> {
    static FILE: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::var_os("AMANMCP_RANK_TRACE")?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| tracing::warn!("rank trace {}: {e}", path.to_string_lossy()))
            .ok()?;
        Some(Mutex::new(file))
    })
    .as_ref()
}

/// Whether rankings are traced.
pub fn enabled() -> bool {
    file().is_some()
}

/// Append `record` as one line.
pub fn write(record: &serde_json::Value) {
    if let Some(file) = file() {
        let mut line = record.to_string();
        line.push('\n');
        if let Ok(mut file) = file.lock() {
            let _ = file.write_all(line.as_bytes());
        }
    }
}
