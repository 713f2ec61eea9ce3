//! `lookup`: code by path (and line range) and/or by symbol, confined to the project root.
//!
//! Paths with `..`, absolute paths elsewhere, and symlinks resolving outside the root are
//! refused; so are secrets files, binaries and files too large to serve.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, UserError};
use crate::lang;
use crate::store::{Store, SymbolRecord};

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

/// Resolve `path` inside `root` (canonical). Returns the real path and the relative path.
pub fn confine(root: &Path, path: &str) -> Result<(PathBuf, String), Error> {
    let relative = relative_inside(root, path)?;
    let joined = root.join(relative);
    let real = joined.canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            invalid("path", format!("no such file in the project: {path}"))
        }
        _ => invalid("path", format!("cannot open {path}: {e}")),
    })?;
    if !real.starts_with(root) {
        return Err(invalid(
            "path",
            format!("{path} resolves outside the project (symlink)"),
        ));
    }
    let rel = crate::scan::relative_path(root, &real)
        .ok_or_else(|| invalid("path", format!("{path} is the project root, not a file")))?;
    if lang::is_secret(Path::new(&rel)) {
        return Err(invalid(
            "path",
            format!("{rel} looks like a secrets file and is not served"),
        ));
    }
    Ok((real, rel))
}

/// Read a file to serve: refuses directories, binaries and huge files; decodes lossily.
fn read_lines(real: &Path, rel: &str) -> Result<Vec<String>, Error> {
    let meta =
        std::fs::metadata(real).map_err(|e| invalid("path", format!("cannot open {rel}: {e}")))?;
    if !meta.is_file() {
        return Err(invalid("path", format!("{rel} is not a file")));
    }
    if meta.len() > MAX_SERVE_BYTES {
        return Err(invalid(
            "path",
            format!("{rel} is too large to serve ({} bytes)", meta.len()),
        ));
    }
    let bytes =
        std::fs::read(real).map_err(|e| invalid("path", format!("cannot read {rel}: {e}")))?;
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(invalid("path", format!("{rel} is a binary file")));
    }
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::to_string)
        .collect())
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
            let (real, rel) = confine(root, path)?;
            let lines = read_lines(&real, &rel)?;
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
                Some(path) => Some(confine(root, path)?.1),
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
                let Ok((real, rel)) = confine(root, &rel) else {
                    continue;
                };
                let Ok(lines) = read_lines(&real, &rel) else {
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
            let (real, rel) = confine(root, path)?;
            let lines = read_lines(&real, &rel)?;
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
    fn confinement_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn a() {}").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.txt"), root.join("link.txt")).unwrap();
        std::fs::write(root.join(".env"), "KEY=1").unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(confine(&root, "src/a.rs").unwrap().1, "src/a.rs");
        assert!(confine(&root, "./src/../src/a.rs").is_err());
        let abs = root.join("src/a.rs");
        assert_eq!(confine(&root, abs.to_str().unwrap()).unwrap().1, "src/a.rs");
        for bad in [
            "../outside.txt",
            "src/../../outside.txt",
            "/etc/passwd",
            "link.txt",
            ".env",
            "",
            "nope.rs",
        ] {
            let err = confine(&root, bad).unwrap_err().to_string();
            assert!(err.contains("path"), "{bad}: {err}");
        }
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
