//! Stage 1 of indexing: walk a project with gitignore semantics and list candidate files.
//!
//! Honours `.gitignore` (even outside a git repository), `.git/info/exclude`, `.ignore` and
//! `.amanmcpignore`; skips hidden files, symlinks (never followed, so no loops or escapes),
//! secrets, known binary extensions, lock files and files over the size limit.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::files::lang;

/// A file that may need indexing.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Path relative to the project root, '/'-separated.
    pub rel_path: String,
    /// Absolute path.
    pub abs_path: PathBuf,
    /// Size in bytes at scan time.
    pub size: u64,
    /// Modification time in nanoseconds since the epoch (0 if unknown).
    pub mtime_ns: u64,
}

/// Why a file was not indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// Larger than the configured limit.
    TooLarge,
    /// Contains NUL bytes or has a binary extension.
    Binary,
    /// Not text in any encoding we can read (mostly invalid UTF-8, e.g. UTF-16).
    NotUtf8,
    /// A line longer than the limit: minified or generated.
    LongLines,
    /// Looks like a secrets file.
    Secret,
    /// Could not be read (permissions, vanished, bad name).
    Unreadable,
}

impl SkipReason {
    /// Short label for status output.
    pub fn label(self) -> &'static str {
        match self {
            SkipReason::TooLarge => "too_large",
            SkipReason::Binary => "binary",
            SkipReason::NotUtf8 => "not_utf8",
            SkipReason::LongLines => "long_lines",
            SkipReason::Secret => "secret",
            SkipReason::Unreadable => "unreadable",
        }
    }
}

/// Limits on what is indexed.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Files larger than this are skipped.
    pub max_file_bytes: u64,
    /// Files with a line longer than this are skipped (minified, generated).
    pub max_line_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 1024 * 1024,
            max_line_bytes: 16 * 1024,
        }
    }
}

impl Limits {
    /// Defaults, overridden by `AMANMCP_MAX_FILE_BYTES`.
    pub fn from_env() -> Self {
        let mut limits = Limits::default();
        if let Some(v) = std::env::var("AMANMCP_MAX_FILE_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            limits.max_file_bytes = v;
        }
        if let Some(v) = std::env::var("AMANMCP_MAX_LINE_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            limits.max_line_bytes = v;
        }
        limits
    }
}

/// The result of a walk.
#[derive(Debug, Default)]
pub struct ScanOutput {
    /// Files to consider, sorted by path.
    pub files: Vec<Candidate>,
    /// Files skipped during the walk, with why.
    pub skipped: Vec<(String, SkipReason)>,
    /// Directories the walk could not read (relative; "" for the start): what is below
    /// them is unknown, not gone.
    pub unreadable_dirs: Vec<String>,
    /// A failure that makes the whole walk untrustworthy (out of file descriptors or
    /// memory): the pass must fail and be retried, never act on what it saw.
    pub failure: Option<std::io::Error>,
}

/// Whether an I/O error says "not now" (resources ran out) rather than "not this file".
pub fn is_transient(error: &std::io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE) | Some(libc::ENFILE) | Some(libc::ENOMEM) | Some(libc::EAGAIN)
    )
}

/// The path an `ignore` walk error is about, if it says.
fn walk_error_path(error: &ignore::Error) -> Option<&Path> {
    match error {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            walk_error_path(err)
        }
        _ => None,
    }
}

/// Names of the files whose change alters what is indexed.
pub const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore", ".amanmcpignore"];

fn walker(start: &Path, max_depth: Option<usize>) -> ignore::Walk {
    ignore::WalkBuilder::new(start)
        .hidden(true)
        .follow_links(false)
        .require_git(false)
        .git_global(false)
        .max_depth(max_depth)
        .add_custom_ignore_filename(IGNORE_FILES[2])
        .build()
}

/// Walk `root` and list candidate files.
pub fn scan(root: &Path, limits: Limits) -> ScanOutput {
    scan_scope(root, root, None, limits, &mut |_| {})
}

/// Walk `start` (a directory inside `root`, or `root`) down to `max_depth`, calling `on_dir`
/// for every directory the walk enters, and list candidate files.
pub fn scan_scope(
    root: &Path,
    start: &Path,
    max_depth: Option<usize>,
    limits: Limits,
    on_dir: &mut dyn FnMut(&Path),
) -> ScanOutput {
    let mut out = ScanOutput::default();
    // Never through a symlink: a directory swapped for one must not lead the walk outside.
    if !std::fs::symlink_metadata(start).is_ok_and(|m| m.is_dir()) {
        return out;
    }
    for entry in walker(start, max_depth) {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                if let Some(io) = error.io_error().filter(|io| is_transient(io)) {
                    let code = io.raw_os_error().unwrap_or(libc::EMFILE);
                    out.failure = Some(std::io::Error::from_raw_os_error(code));
                } else if let Some(dir) = walk_error_path(&error) {
                    let dir = if dir == root {
                        Some(String::new())
                    } else {
                        relative_path(root, dir)
                    };
                    out.unreadable_dirs.extend(dir);
                }
                continue;
            }
        };
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            on_dir(entry.path());
            continue;
        }
        if !file_type.is_file() {
            continue;
        }
        let abs_path = entry.path().to_path_buf();
        let Some(rel_path) = relative_path(root, &abs_path) else {
            out.skipped
                .push((abs_path.display().to_string(), SkipReason::Unreadable));
            continue;
        };
        let rel = Path::new(&rel_path);
        if crate::files::secrets::is_secret(rel) {
            out.skipped.push((rel_path, SkipReason::Secret));
            continue;
        }
        if lang::is_noise(rel) {
            out.skipped.push((rel_path, SkipReason::Binary));
            continue;
        }
        let Ok(meta) = entry.metadata() else {
            out.skipped.push((rel_path, SkipReason::Unreadable));
            continue;
        };
        if meta.len() > limits.max_file_bytes {
            out.skipped.push((rel_path, SkipReason::TooLarge));
            continue;
        }
        out.files.push(Candidate {
            rel_path,
            abs_path,
            size: meta.len(),
            mtime_ns: mtime_ns(&meta),
        });
    }
    out.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    out
}

/// Whether the walk from `root` enters directory `rel_dir` (it is not ignored or hidden, nor
/// inside such a directory). `cache` remembers answers within one batch of changes.
pub fn dir_is_walked(
    root: &Path,
    rel_dir: &str,
    cache: &mut std::collections::HashMap<String, bool>,
) -> bool {
    if rel_dir.is_empty() {
        return true;
    }
    if let Some(known) = cache.get(rel_dir) {
        return *known;
    }
    let (parent, _) = rel_dir.rsplit_once('/').unwrap_or(("", rel_dir));
    let walked = dir_is_walked(root, parent, cache) && {
        let parent_abs = if parent.is_empty() {
            root.to_path_buf()
        } else {
            root.join(parent)
        };
        let target = root.join(rel_dir);
        walker(&parent_abs, Some(1))
            .flatten()
            .any(|e| e.path() == target && e.file_type().is_some_and(|t| t.is_dir()))
    };
    cache.insert(rel_dir.to_string(), walked);
    walked
}

/// Modification time of `meta` in nanoseconds since the epoch, 0 if unknown.
pub fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `path` relative to `root`, '/'-separated; `None` if outside root or not UTF-8.
pub fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut out = String::new();
    for component in rel.components() {
        let std::path::Component::Normal(part) = component else {
            return None;
        };
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(part.to_str()?);
    }
    (!out.is_empty()).then_some(out)
}

/// What reading a candidate produced.
pub enum ReadOutcome {
    /// UTF-8 text and its content hash.
    Text(String, u64),
    /// Skipped, with why.
    Skipped(SkipReason),
    /// Not readable now (out of file descriptors or memory): neither indexed nor dropped.
    Failed(std::io::Error),
}

/// Read the file at `rel` under `root` (never through a symlink: see
/// [`crate::files::open`]), rejecting binary, undecodable, minified and oversized content.
/// Mostly-UTF-8 text in a legacy encoding (a Latin-1 comment) is decoded lossily.
pub fn read_text(root: &Path, rel: &str, limits: Limits) -> ReadOutcome {
    use crate::files::open::{Contents, open_beneath, read_regular};
    let bytes = match open_beneath(root, rel).and_then(|f| read_regular(f, limits.max_file_bytes)) {
        Ok(Contents::Bytes(bytes)) => bytes,
        Ok(Contents::TooLarge(_)) => return ReadOutcome::Skipped(SkipReason::TooLarge),
        Err(e) if is_transient(&e) => return ReadOutcome::Failed(e),
        Err(_) => return ReadOutcome::Skipped(SkipReason::Unreadable),
    };
    let head = &bytes[..bytes.len().min(8192)];
    if head.contains(&0) {
        return ReadOutcome::Skipped(SkipReason::Binary);
    }
    let hash = xxhash_rust::xxh3::xxh3_64(&bytes);
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            let replaced = text
                .chars()
                .filter(|c| *c == char::REPLACEMENT_CHARACTER)
                .count();
            if replaced * 20 > text.chars().count().max(1) {
                return ReadOutcome::Skipped(SkipReason::NotUtf8);
            }
            text
        }
    };
    if text.lines().any(|line| line.len() > limits.max_line_bytes) {
        return ReadOutcome::Skipped(SkipReason::LongLines);
    }
    ReadOutcome::Text(text, hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_with_gitignore_and_skips_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn a() {}").unwrap();
        std::fs::write(root.join("src/deep/mod.rs"), "fn b() {}").unwrap();
        std::fs::write(root.join("target/out.rs"), "fn c() {}").unwrap();
        std::fs::write(root.join("debug.log"), "log").unwrap();
        std::fs::write(root.join("server.pem"), "secret").unwrap();
        std::fs::write(root.join("big.txt"), "x".repeat(2000)).unwrap();
        let out = scan(
            root,
            Limits {
                max_file_bytes: 1000,
                ..Limits::default()
            },
        );
        let paths: Vec<&str> = out.files.iter().map(|c| c.rel_path.as_str()).collect();
        assert_eq!(paths, ["src/deep/mod.rs", "src/lib.rs"]);
        assert!(
            out.skipped
                .contains(&("server.pem".into(), SkipReason::Secret))
        );
        assert!(
            out.skipped
                .contains(&("big.txt".into(), SkipReason::TooLarge))
        );
    }

    #[test]
    fn reads_reject_binary_and_non_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("a.dat");
        std::fs::write(&bin, [1u8, 0, 2, 3]).unwrap();
        assert!(matches!(
            read_text(
                dir.path(),
                bin.file_name().unwrap().to_str().unwrap(),
                Limits::default()
            ),
            ReadOutcome::Skipped(SkipReason::Binary)
        ));
        let latin1 = dir.path().join("b.txt");
        std::fs::write(&latin1, b"# caf\xe9 au lait\ndef brew(): pass\n").unwrap();
        match read_text(
            dir.path(),
            latin1.file_name().unwrap().to_str().unwrap(),
            Limits::default(),
        ) {
            ReadOutcome::Text(text, _) => assert!(text.contains("def brew()")),
            _ => panic!("mostly-UTF-8 text is decoded lossily"),
        }
        let utf16 = dir.path().join("c.txt");
        let wide: Vec<u8> = "hello world"
            .encode_utf16()
            .flat_map(|u| u.to_be_bytes())
            .collect();
        std::fs::write(&utf16, &wide[1..]).unwrap();
        assert!(matches!(
            read_text(
                dir.path(),
                utf16.file_name().unwrap().to_str().unwrap(),
                Limits::default()
            ),
            ReadOutcome::Skipped(_)
        ));
        let minified = dir.path().join("bundle.js");
        std::fs::write(&minified, "var a=1;".repeat(5000)).unwrap();
        assert!(matches!(
            read_text(
                dir.path(),
                minified.file_name().unwrap().to_str().unwrap(),
                Limits::default()
            ),
            ReadOutcome::Skipped(SkipReason::LongLines)
        ));
    }
}
