//! Tidy: the rules of the house, checked on every source file (rust-analyzer's habit). Every
//! file opens with a `//!` line saying what it is; none is over 600 lines; no `dbg!`/`todo!`
//! outside tests; ARCHITECTURE.md's code map names every module that exists and no file or
//! folder that does not.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 600;
const SOURCE_DIRS: &[&str] = &[
    "daemon/src",
    "daemon/encoder/src",
    "shim/src",
    "bench/src",
    "proto/src",
    "tests",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "node_modules" || name == "target" {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources() -> Vec<(String, String)> {
    let root = workspace();
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    assert!(files.len() > 50, "found only {} source files", files.len());
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read source");
            let relative = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (relative, text)
        })
        .collect()
}

#[test]
fn every_source_file_says_what_it_is_and_stays_small() {
    let mut problems = Vec::new();
    for (path, text) in sources() {
        if !text.starts_with("//!") {
            problems.push(format!("{path}: does not open with a `//!` line"));
        }
        let lines = text.lines().count();
        if lines > MAX_LINES {
            problems.push(format!("{path}: {lines} lines (at most {MAX_LINES})"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_debugging_leftovers_outside_tests() {
    let mut problems = Vec::new();
    for (path, text) in sources() {
        if path.starts_with("tests/") || path.ends_with("/tests.rs") || path.contains("/tests/") {
            continue;
        }
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for mark in ["dbg!(", "todo!(", "unimplemented!("] {
                if line.contains(mark) {
                    problems.push(format!("{path}:{}: {mark}", n + 1));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The module a source file defines, as the code map names it (`store` for
/// `store/mod.rs`), or `None` for crate roots and test modules.
fn module_name(path: &str) -> Option<String> {
    let p = Path::new(path);
    let stem = p.file_stem()?.to_str()?;
    match stem {
        "main" | "lib" | "tests" => None,
        "mod" => Some(p.parent()?.file_name()?.to_str()?.to_string()),
        _ => Some(stem.to_string()),
    }
}

#[test]
fn the_code_map_names_every_module_and_nothing_else() {
    let root = workspace();
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut problems = Vec::new();
    let mut names = Vec::new();
    for (path, _) in sources() {
        // Unit-test folders (`syntax/tests/`) are tests, not modules of the map.
        if path.starts_with("tests/") || path.contains("/tests/") {
            continue;
        }
        let Some(name) = module_name(&path) else {
            continue;
        };
        names.push(name.clone());
        let named = [
            format!("`{name}`"),
            format!("`{name}/`"),
            format!("`{name}.rs`"),
            format!("/{name}`"),
        ]
        .iter()
        .any(|form| map.contains(form.as_str()));
        if !named {
            problems.push(format!("{path}: module `{name}` is not in ARCHITECTURE.md"));
        }
    }
    // Every file or folder the map names in backticks exists.
    for token in map.split('`').skip(1).step_by(2) {
        let looks_like_path = token.ends_with(".rs") || token.ends_with('/');
        if !looks_like_path || token.contains(' ') || token.contains("://") {
            continue;
        }
        let target = token.trim_end_matches('/');
        let exists = root.join(target).exists()
            || SOURCE_DIRS.iter().any(|dir| {
                let mut found = Vec::new();
                rust_files(&root.join(dir), &mut found);
                found.iter().any(|f| {
                    let f = f.to_string_lossy();
                    f.ends_with(&format!("/{target}")) || f.contains(&format!("/{target}/"))
                })
            });
        if !exists {
            problems.push(format!(
                "ARCHITECTURE.md names `{token}`, which does not exist"
            ));
        }
    }
    assert!(names.len() > 30, "found only {} modules", names.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
