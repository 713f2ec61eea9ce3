//! The definitions a change touches: `git diff` of the project (the working tree against
//! `HEAD` by default, `--staged`, or a revision range), each changed line mapped to the
//! innermost definition around it in the index.

use std::path::Path;
use std::process::Command;

use super::resolve::{Def, Resolver};
use super::worktree::{Hunks, KeptDiff};
use crate::error::{Error, UserError};
use crate::index::changes::Changes;

/// Changed line ranges (new side, 1-based inclusive) per relative path, from a unified diff
/// with no context lines.
pub fn changed_lines(diff: &str) -> Hunks {
    let mut out: Vec<(String, Vec<(u32, u32)>)> = Vec::new();
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("+++ ") {
            let path = path.trim();
            if path == "/dev/null" {
                // A deleted file: nothing of it is left to reach.
                out.push((String::new(), Vec::new()));
            } else {
                let path = path.strip_prefix("b/").unwrap_or(path);
                out.push((path.to_string(), Vec::new()));
            }
        } else if let Some(hunk) = line.strip_prefix("@@ ") {
            let Some(new) = hunk.split_whitespace().find(|p| p.starts_with('+')) else {
                continue;
            };
            let mut parts = new[1..].split(',');
            let start: u32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
            let count: u32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(1);
            if let Some((_, ranges)) = out.last_mut() {
                // A pure deletion (count 0) touches the line it was removed before.
                let start = start.max(1);
                ranges.push((start, start + count.saturating_sub(1)));
            }
        }
    }
    out.retain(|(path, ranges)| !path.is_empty() && !ranges.is_empty());
    out
}

/// Whether `spec` is safe to hand to `git diff`: nothing, `--staged`/`--cached`, or
/// revisions (`main`, `HEAD~3..HEAD`, `v1.2...topic`); never another option.
fn checked(spec: Option<&str>) -> Result<Vec<String>, Error> {
    let spec = spec.map(str::trim).unwrap_or_default();
    let mut args = Vec::new();
    for part in spec.split_whitespace() {
        let revision = !part.starts_with('-')
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./~^@{}-".contains(c));
        if matches!(part, "--staged" | "--cached") || revision {
            args.push(part.to_string());
        } else {
            return Err(UserError::InvalidArgument {
                name: "diff",
                reason: format!(
                    "`{part}` is not a revision: give nothing (the working tree against HEAD), `--staged`, or a range such as `main..HEAD`"
                ),
            }
            .into());
        }
    }
    if args.is_empty() {
        args.push("HEAD".into());
    }
    Ok(args)
}

/// `git diff` of `args` (checked revisions or `--staged`) in `root`, as `impact` runs it:
/// changed lines only, paths relative to `root`, no colour or external diff tool; only
/// `paths` when any are given (taken literally, never as pathspec magic).
pub fn git_diff(root: &Path, args: &[String], paths: &[String]) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(root)
        .args([
            "--literal-pathspecs",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--unified=0",
            "--relative",
        ])
        .args(args)
        .arg("--")
        .args(paths);
    command
}

/// The changed lines `git diff` of `args` gives for `paths` (all when none).
pub(super) fn run(root: &Path, args: &[String], paths: &[String]) -> Result<Hunks, Error> {
    let output = git_diff(root, args, paths)
        .output()
        .map_err(|e| UserError::InvalidArgument {
            name: "diff",
            reason: format!("cannot run git here ({e}); name the changed symbols instead"),
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(UserError::InvalidArgument {
            name: "diff",
            reason: format!(
                "git diff failed: {}",
                stderr.lines().next().unwrap_or("no message")
            ),
        }
        .into());
    }
    Ok(changed_lines(&String::from_utf8_lossy(&output.stdout)))
}

/// The definitions the change named by `spec` touches, in the project at `root`. The
/// working tree's diff (no `spec`) comes from `kept` when nothing changed since it was
/// taken, with what the index's `changes` log says changed since.
pub fn changed_definitions(
    root: &Path,
    spec: Option<&str>,
    resolver: &Resolver<'_>,
    kept: (&KeptDiff, &Changes),
) -> Result<Vec<Def>, Error> {
    let args = checked(spec)?;
    let hunks = if args == ["HEAD"] {
        let (kept, changes) = kept;
        kept.changed_lines(root, changes, |paths| run(root, &args, paths))?
    } else {
        run(root, &args, &[])?
    };
    let mut defs = Vec::new();
    for (path, ranges) in hunks {
        let symbols = resolver.symbols(&path)?;
        for (start, end) in ranges {
            // The innermost definition overlapping the range, for each line of it.
            for line in start..=end.min(start + 2_000) {
                let inner = symbols
                    .iter()
                    .filter(|s| s.start_line <= line && line <= s.end_line && s.kind != "impl")
                    .min_by_key(|s| s.end_line - s.start_line);
                if let Some(symbol) = inner {
                    let def = Def::new(&path, symbol);
                    if !defs.contains(&def) {
                        defs.push(def);
                    }
                }
            }
        }
    }
    Ok(defs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_give_new_side_ranges_per_file() {
        let diff = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -3 +3 @@ def f():\n-    return 1\n+    return 2\n@@ -10,0 +11,3 @@\n+x\n+y\n+z\n@@ -20,2 +22,0 @@\n-gone\n-gone\ndiff --git a/old.py b/old.py\n--- a/old.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n";
        assert_eq!(
            changed_lines(diff),
            [("src/a.py".to_string(), vec![(3, 3), (11, 13), (22, 22)])]
        );
    }

    #[test]
    fn only_revisions_reach_git() {
        assert_eq!(checked(None).unwrap(), ["HEAD"]);
        assert_eq!(checked(Some("--staged")).unwrap(), ["--staged"]);
        assert_eq!(checked(Some("main..HEAD")).unwrap(), ["main..HEAD"]);
        for bad in ["--output=/tmp/x", "-p", "HEAD;rm", "$(x)"] {
            assert!(checked(Some(bad)).is_err(), "{bad}");
        }
    }
}
