//! Test hooks: abort the process at a named point when `AMANMCP_CRASH_AT` names it, so
//! end-to-end tests can stop the daemon exactly where a crash would hurt most (between the
//! tantivy and LMDB halves of a commit; between the steps of a compaction); or hold the
//! calling thread there for good when `AMANMCP_HOLD_AT` names it, so a test can look at the
//! daemon in that state (and then kill it); or fail every commit while a file exists
//! (`AMANMCP_FAIL_WRITES_WHILE`).

/// Abort here if `AMANMCP_CRASH_AT` is `name`.
pub(crate) fn point(name: &str) {
    static CRASH_AT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let at = CRASH_AT.get_or_init(|| std::env::var("AMANMCP_CRASH_AT").ok());
    if at.as_deref() == Some(name) {
        tracing::error!(point = name, "AMANMCP_CRASH_AT: aborting");
        std::process::abort();
    }
}

/// Abort here if `AMANMCP_CRASH_AT` is `name`; stop this thread here for good if
/// `AMANMCP_HOLD_AT` is.
pub(crate) fn point_or_hold(name: &str) {
    point(name);
    static HOLD_AT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let at = HOLD_AT.get_or_init(|| std::env::var("AMANMCP_HOLD_AT").ok());
    if at.as_deref() == Some(name) {
        tracing::warn!(point = name, "AMANMCP_HOLD_AT: holding this thread");
        loop {
            std::thread::park();
        }
    }
}

/// While the file named by `AMANMCP_FAIL_WRITES_WHILE` exists, every commit fails as a full
/// disk would (`ENOSPC`; or `EROFS`, `EMFILE` when the file says so), so tests can watch a
/// failure be reported and repaired once the cause clears (a full disk or a read-only mount
/// cannot be made without privileges, and root ignores permissions).
pub(crate) fn injected_write_failure() -> std::io::Result<()> {
    static FLAG: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    let flag = FLAG.get_or_init(|| std::env::var_os("AMANMCP_FAIL_WRITES_WHILE").map(Into::into));
    let Some(flag) = flag.as_deref().filter(|f| f.exists()) else {
        return Ok(());
    };
    // The file names the cause: EROFS, EMFILE, or (by default) ENOSPC.
    let errno = match std::fs::read_to_string(flag).unwrap_or_default().trim() {
        "EROFS" => libc::EROFS,
        "EMFILE" => libc::EMFILE,
        _ => libc::ENOSPC,
    };
    Err(std::io::Error::from_raw_os_error(errno))
}
