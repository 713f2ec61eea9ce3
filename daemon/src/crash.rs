//! A test hook: abort the process at a named point when `AMANMCP_CRASH_AT` names it, so
//! end-to-end tests can stop the daemon exactly where a crash would hurt most (between the
//! tantivy and LMDB halves of a commit; between the steps of a compaction).

/// Abort here if `AMANMCP_CRASH_AT` is `name`.
pub(crate) fn point(name: &str) {
    static CRASH_AT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let at = CRASH_AT.get_or_init(|| std::env::var("AMANMCP_CRASH_AT").ok());
    if at.as_deref() == Some(name) {
        tracing::error!(point = name, "AMANMCP_CRASH_AT: aborting");
        std::process::abort();
    }
}
