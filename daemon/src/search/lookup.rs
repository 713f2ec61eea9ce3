//! `lookup`: code by path (and line range) and/or by symbol, confined to the project root.
//!
//! Only files the index holds are served ([`confine`]); paths with `..` or absolute paths
//! elsewhere are refused before anything is read, files are opened without following
//! symlinks at any component ([`open_beneath`]), and what is read is redacted
//! ([`secrets::redact`]).

use std::path::{Component, Path};

use crate::error::{Error, UserError};
use crate::files::lang;
use crate::files::secrets;
use crate::index::store::{Store, SymbolRecord};

/// At most this many lines are returned per match.
pub const MAX_LOOKUP_LINES: u32 = 400;
/// Files larger than this are not served.
const MAX_SERVE_BYTES: u64 = 8 << 20;
/// Most matches a symbol lookup returns.
pub const MAX_LOOKUP_LIMIT: usize = 50;

/// A lookup request.
#[derive(Debug, Clone, Default)]
pub struct LookupParams {
    /// File path, relative to the root or absolute inside it.
    pub path: Option<String>,
    /// First line wanted (1-based).
    pub start_line: Option<u32>,
    /// Last line wanted (1-based, inclusive).
    pub end_line: Option<u32>,
    /// Symbol name, bare or qualified.
    pub symbol: Option<String>,
    /// Only symbols of this kind.
    pub kind: Option<String>,
    /// Most matches to return.
    pub limit: usize,
    /// Do not cut the code at [`MAX_LOOKUP_LINES`].
    pub whole_file: bool,
}

/// One piece of code found.
#[derive(Debug, Clone)]
pub struct LookupMatch {
    /// Relative path.
    pub path: String,
    /// First line returned.
    pub start_line: u32,
    /// Last line returned.
    pub end_line: u32,
    /// Language.
    pub language: String,
    /// The symbol, for symbol lookups.
    pub symbol: Option<String>,
    /// Its kind.
    pub kind: Option<String>,
    /// Its declaration.
    pub signature: Option<String>,
    /// The enclosing symbol.
    pub enclosing: Option<String>,
    /// The code.
    pub code: String,
    /// Whether the range was cut to [`MAX_LOOKUP_LINES`].
    pub truncated: bool,
    /// Lines in the file.
    pub total_lines: u32,
}

fn invalid(name: &'static str, reason: impl Into<String>) -> Error {
    UserError::InvalidArgument {
        name,
        reason: reason.into(),
    }
    .into()
}

/// `path` as a path relative to `root`, checked lexically: not empty, no NUL, an absolute path
/// only inside the root, no `..`. Nothing is read from disk (the path may not exist).
pub fn relative_inside<'p>(root: &Path, path: &'p str) -> Result<&'p Path, Error> {
    if path.trim().is_empty() {
        return Err(invalid("path", "must not be empty"));
    }
    if path.contains('\0') {
        return Err(invalid("path", "must not contain NUL bytes"));
    }
    let given = Path::new(path);
    let relative = if given.is_absolute() {
        given.strip_prefix(root).map_err(|_| {
            invalid(
                "path",
                format!("{path} is outside the project root {}", root.display()),
            )
        })?
    } else {
        given
    };
    if relative.components().any(|c| {
        matches!(
            c,
            Component::ParentDir | Component::RootDir | Component::Prefix(_)
        )
    }) {
        return Err(invalid(
            "path",
            format!("{path} leaves the project (`..` is not allowed)"),
        ));
    }
    Ok(relative)
}

/// The root-relative, `/`-separated form of a lexically checked path (`./a/b` -> `a/b`).
pub fn normalized(relative: &Path) -> String {
    relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The indexed file `path` names, as a root-relative path. Only what the index holds is
/// served: ignored, hidden, secret, binary and oversized files, and anything under `.git/`,
/// are refused exactly as the indexer skips them, and paths leaving the root are refused
/// before anything is read.
pub fn confine(root: &Path, store: &Store, path: &str) -> Result<String, Error> {
    let rel = normalized(relative_inside(root, path)?);
    if rel.is_empty() {
        return Err(invalid(
            "path",
            format!("{path} is the project root, not a file"),
        ));
    }
    if secrets::is_secret(Path::new(&rel)) {
        return Err(invalid(
            "path",
            format!("{rel} looks like a secrets file and is not served"),
        ));
    }
    if !store.has_file(&rel)? {
        return Err(invalid(
            "path",
            format!(
                "{rel} is not in the index (no such file, or ignored, hidden, binary or too \
                 large); only indexed files are served"
            ),
        ));
    }
    Ok(rel)
}

/// Read an indexed file to serve (through [`crate::files::open`]): refuses anything but a
/// regular file, binaries and huge files; decodes lossily and redacts credentials
/// ([`secrets::redact`]).
fn read_lines(root: &Path, rel: &str) -> Result<Vec<String>, Error> {
    use crate::files::open::{Contents, open_beneath, read_regular};
    let file = open_beneath(root, rel).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => invalid(
            "path",
            format!("{rel} goes through a symlink and is not served"),
        ),
        _ => invalid("path", format!("cannot open {rel}: {e}")),
    })?;
    let bytes = match read_regular(file, MAX_SERVE_BYTES) {
        Ok(Contents::Bytes(bytes)) => bytes,
        Ok(Contents::TooLarge(size)) => {
            return Err(invalid(
                "path",
                format!("{rel} is too large to serve ({size} bytes)"),
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            return Err(invalid("path", format!("{rel} is not a file")));
        }
        Err(e) => return Err(invalid("path", format!("cannot read {rel}: {e}"))),
    };
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(invalid("path", format!("{rel} is a binary file")));
    }
    let text = String::from_utf8_lossy(&bytes);
    Ok(secrets::redact(&text).lines().map(str::to_string).collect())
}

/// Cut `[start, end]` (1-based, inclusive) out of `lines`, at most `max_lines` of them.
fn excerpt(lines: &[String], start: u32, end: u32, max_lines: u32) -> (u32, u32, String, bool) {
    let total = lines.len() as u32;
    let start = start.clamp(1, total.max(1));
    let end = end.clamp(start, total.max(start));
    let (end, truncated) = if end - start + 1 > max_lines {
        (start + max_lines - 1, true)
    } else {
        (end, false)
    };
    let code = if total == 0 {
        String::new()
    } else {
        lines[(start - 1) as usize..end as usize].join("\n")
    };
    (start, end, code, truncated)
}

/// The innermost symbol of `symbols` containing `line`.
fn innermost(symbols: &[SymbolRecord], line: u32) -> Option<&SymbolRecord> {
    symbols
        .iter()
        .filter(|s| s.start_line <= line && line <= s.end_line)
        .min_by_key(|s| s.end_line - s.start_line)
}

/// `Session.request`, `Runtime::block_on` -> ("request", Some("Session.request")).
fn split_symbol(symbol: &str) -> (String, Option<String>) {
    let normalized = symbol.trim().replace("::", ".").replace('#', ".");
    match normalized.rsplit_once('.') {
        Some((_, name)) if !name.is_empty() => (name.to_string(), Some(normalized)),
        _ => (normalized, None),
    }
}

/// Run a lookup against the project at `root`.
pub fn lookup(
    root: &Path,
    store: &Store,
    params: &LookupParams,
) -> Result<Vec<LookupMatch>, Error> {
    let path = params.path.as_deref().filter(|p| !p.trim().is_empty());
    let symbol = params.symbol.as_deref().filter(|s| !s.trim().is_empty());
    if let (Some(start), Some(end)) = (params.start_line, params.end_line)
        && end < start
    {
        return Err(invalid(
            "end_line",
            format!("must not be before start_line ({end} < {start})"),
        ));
    }
    if params.start_line == Some(0) {
        return Err(invalid("start_line", "lines are 1-based"));
    }
    if params.end_line == Some(0) {
        return Err(invalid("end_line", "lines are 1-based"));
    }
    match (path, symbol) {
        (None, None) => Err(invalid("path", "give a `path`, a `symbol`, or both")),
        (Some(path), None) => {
            let rel = confine(root, store, path)?;
            let lines = read_lines(root, &rel)?;
            let start = params.start_line.unwrap_or(1);
            let end = params.end_line.unwrap_or(u32::MAX);
            let max_lines = if params.whole_file {
                u32::MAX
            } else {
                MAX_LOOKUP_LINES
            };
            let (start, end, code, truncated) = excerpt(&lines, start, end, max_lines);
            let symbols = store.symbols_of(&rel)?;
            let enclosing = innermost(&symbols, start).map(|s| s.qualified.clone());
            Ok(vec![LookupMatch {
                language: lang::language_of(Path::new(&rel)).to_string(),
                path: rel,
                start_line: start,
                end_line: end,
                symbol: None,
                kind: None,
                signature: None,
                enclosing,
                code,
                truncated,
                total_lines: lines.len() as u32,
            }])
        }
        (path, Some(symbol)) => {
            let only_path = match path {
                Some(path) => Some(confine(root, store, path)?),
                None => None,
            };
            let (name, qualified) = split_symbol(symbol);
            let mut found = store.symbols_named(&name)?;
            if let Some(only) = &only_path {
                found.retain(|(p, _)| p == only);
            }
            if let Some(kind) = params.kind.as_deref().filter(|k| !k.is_empty()) {
                found.retain(|(_, s)| s.kind.eq_ignore_ascii_case(kind));
            }
            if let Some(qualified) = &qualified {
                let wanted = qualified.to_lowercase();
                found.retain(|(_, s)| {
                    let q = s.qualified.replace("::", ".").to_lowercase();
                    q == wanted || q.ends_with(&format!(".{wanted}"))
                });
            }
            // Exact-case matches first, then definitions over declarations, then by path.
            found.sort_by(|(pa, a), (pb, b)| {
                let exact = |s: &SymbolRecord| s.name != name;
                (exact(a), pa, a.start_line).cmp(&(exact(b), pb, b.start_line))
            });
            let mut matches = Vec::new();
            for (rel, sym) in found
                .into_iter()
                .take(params.limit.clamp(1, MAX_LOOKUP_LIMIT))
            {
                let Ok(lines) = read_lines(root, &rel) else {
                    continue;
                };
                let (start, end, code, truncated) =
                    excerpt(&lines, sym.start_line, sym.end_line, MAX_LOOKUP_LINES);
                matches.push(LookupMatch {
                    language: lang::language_of(Path::new(&rel)).to_string(),
                    path: rel,
                    start_line: start,
                    end_line: end,
                    symbol: Some(sym.qualified),
                    kind: Some(sym.kind),
                    signature: Some(sym.signature),
                    enclosing: sym.parent,
                    code,
                    truncated,
                    total_lines: lines.len() as u32,
                });
            }
            Ok(matches)
        }
    }
}

/// What `similar` compares against.
#[derive(Debug, Clone)]
pub enum Reference {
    /// The chunk of `path` containing `line`.
    Location {
        /// File.
        path: String,
        /// 1-based line.
        line: u32,
    },
    /// A symbol, bare or qualified (the first match).
    Symbol(String),
    /// A piece of code.
    Snippet(String),
}

/// The text of a reference, and where it is (to leave it out of the results).
pub struct ResolvedReference {
    /// The reference's code.
    pub text: String,
    /// (path, first line, last line), unless it is a snippet.
    pub location: Option<(String, u32, u32)>,
}

/// Resolve a reference for `similar`.
pub fn reference(
    root: &Path,
    store: &Store,
    reference: &Reference,
) -> Result<ResolvedReference, Error> {
    match reference {
        Reference::Snippet(text) => {
            if text.trim().is_empty() {
                return Err(invalid("snippet", "must not be empty"));
            }
            Ok(ResolvedReference {
                text: text.clone(),
                location: None,
            })
        }
        Reference::Location { path, line } => {
            let rel = confine(root, store, path)?;
            let lines = read_lines(root, &rel)?;
            if *line == 0 || *line as usize > lines.len() {
                return Err(invalid(
                    "line",
                    format!("{rel} has {} lines; got {line}", lines.len()),
                ));
            }
            // The smallest indexed chunk containing the line, else a window around it.
            let chunks = store.chunks_of(&rel)?;
            let (start, end) = chunks
                .iter()
                .filter(|(s, e)| s <= line && line <= e)
                .min_by_key(|(s, e)| e - s)
                .copied()
                .unwrap_or((
                    line.saturating_sub(10).max(1),
                    (line + 10).min(lines.len() as u32),
                ));
            let (start, end, text, _) = excerpt(&lines, start, end, MAX_LOOKUP_LINES);
            Ok(ResolvedReference {
                text,
                location: Some((rel, start, end)),
            })
        }
        Reference::Symbol(symbol) => {
            let found = lookup(
                root,
                store,
                &LookupParams {
                    symbol: Some(symbol.clone()),
                    limit: 1,
                    ..LookupParams::default()
                },
            )?;
            let first = found.into_iter().next().ok_or_else(|| {
                invalid("symbol", format!("no symbol named {symbol:?} in the index"))
            })?;
            Ok(ResolvedReference {
                text: first.code,
                location: Some((first.path, first.start_line, first.end_line)),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_checked_lexically() {
        let root = Path::new("/proj");
        let rel = |p: &str| relative_inside(root, p).map(normalized);
        assert_eq!(rel("src/a.rs").unwrap(), "src/a.rs");
        assert_eq!(rel("./src/a.rs").unwrap(), "src/a.rs");
        assert_eq!(rel("/proj/src/a.rs").unwrap(), "src/a.rs");
        for bad in [
            "../x",
            "src/../../x",
            "./src/../src/a.rs",
            "/etc/passwd",
            "",
            "a\0b",
        ] {
            let err = rel(bad).unwrap_err().to_string();
            assert!(err.contains("path"), "{bad}: {err}");
        }
    }

    #[test]
    fn opening_never_follows_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("x.txt"), "OUTSIDE").unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn a() {}").unwrap();
        std::os::unix::fs::symlink(outside.join("x.txt"), root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("linkdir")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("src/inner")).unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(read_lines(&root, "src/a.rs").unwrap(), ["fn a() {}"]);
        for through_link in ["link.txt", "linkdir/x.txt", "src/inner/x.txt"] {
            let err = read_lines(&root, through_link).unwrap_err().to_string();
            assert!(err.contains("symlink"), "{through_link}: {err}");
        }
        let err = read_lines(&root, "src").unwrap_err().to_string();
        assert!(err.contains("not a file"), "{err}");
    }

    #[test]
    fn symbols_split_on_any_separator() {
        assert_eq!(split_symbol("request"), ("request".into(), None));
        assert_eq!(
            split_symbol("Session.request"),
            ("request".into(), Some("Session.request".into()))
        );
        assert_eq!(
            split_symbol("Runtime::block_on"),
            ("block_on".into(), Some("Runtime.block_on".into()))
        );
    }
}
