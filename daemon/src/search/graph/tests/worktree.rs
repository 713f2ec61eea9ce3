//! The kept working-tree diff is a fresh `git diff HEAD`'s after each kind of change, and
//! runs git only when something it depends on changed.

use std::path::Path;
use std::process::Command;

use crate::index::changes::Changes;
use crate::search::graph::diff::run;
use crate::search::graph::worktree::{Hunks, KeptDiff};

/// `git args` in `dir`, as a user with a name and no signing.
fn git(dir: &Path, args: &[&str]) {
    let user = "-c user.name=t -c user.email=t@t -c commit.gpgsign=false";
    let mut command = Command::new("git");
    let command = command.current_dir(dir).args(user.split(' ')).args(args);
    let out = command.output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository, the index's change log and the kept diff.
struct Tree {
    dir: tempfile::TempDir,
    changes: Changes,
    kept: KeptDiff,
}

impl Tree {
    fn new(files: &[(&str, &str)]) -> Tree {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        let tree = Tree {
            dir,
            changes: Changes::default(),
            kept: KeptDiff::default(),
        };
        for (path, text) in files {
            tree.write(path, text);
        }
        git(tree.root(), &["add", "-A"]);
        git(tree.root(), &["commit", "-q", "-m", "base"]);
        tree
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.root().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Let a second pass and have git refresh its index, as a tree left alone for a while
    /// is: files written in the second git's index was are "racily clean" to git, which
    /// may then rewrite its index on a diff (and the whole diff runs again).
    fn settle(&self) {
        std::thread::sleep(std::time::Duration::from_millis(1100));
        git(self.root(), &["update-index", "-q", "--refresh"]);
    }

    /// The index commits `paths` (as the writer notes them).
    fn noted(&self, paths: &[&str]) {
        drop(self.changes.around(paths.iter().map(|p| p.to_string())));
    }

    /// The kept diff's answer, checked against a fresh `git diff HEAD`, and how many times
    /// git ran for it.
    fn ask(&self, why: &str) -> (Hunks, usize) {
        let head = ["HEAD".to_string()];
        let before = self.kept.runs();
        let kept = (self.kept)
            .changed_lines(self.root(), &self.changes, |paths| {
                run(self.root(), &head, paths)
            })
            .unwrap();
        let fresh = run(self.root(), &head, &[]).unwrap();
        assert_eq!(kept, fresh, "{why}");
        (kept, self.kept.runs() - before)
    }
}

#[test]
fn the_kept_diff_is_git_s_after_each_kind_of_change() {
    let a = "def f():\n    return 1\n";
    let tree = Tree::new(&[("a.py", a), ("b.py", "x = 1\n"), ("sub/c.py", "y = 2\n")]);
    tree.settle();
    assert_eq!(tree.ask("first"), (vec![], 1));
    assert_eq!(tree.ask("nothing changed"), (vec![], 0), "git ran again");

    // A file the index saw change: that file alone is diffed.
    tree.write("a.py", "def f():\n    return 2\n");
    tree.noted(&["a.py"]);
    let (hunks, runs) = tree.ask("a noted edit");
    assert_eq!((hunks, runs), (vec![("a.py".into(), vec![(2, 2)])], 1));
    assert_eq!(tree.ask("nothing changed since").1, 0, "git ran again");

    // A changed file written again before the index saw it: its stat tells.
    tree.write("a.py", "def f():\n    return 22\n\nz = 3\n");
    let (hunks, runs) = tree.ask("an edit the index has not seen");
    assert_eq!((hunks, runs), (vec![("a.py".into(), vec![(2, 4)])], 1));

    // Put back as committed: no longer changed.
    tree.write("a.py", a);
    tree.noted(&["a.py"]);
    assert_eq!(tree.ask("put back").0, vec![]);

    // A new file staged: git's index moved, the whole diff runs.
    tree.write("sub/d.py", "def g():\n    pass\n");
    tree.noted(&["sub/d.py"]);
    git(tree.root(), &["add", "sub/d.py"]);
    assert_eq!(
        tree.ask("staged").0,
        vec![("sub/d.py".into(), vec![(1, 2)])]
    );

    // A commit: `HEAD`'s branch moved.
    tree.write("b.py", "x = 2\n");
    git(tree.root(), &["commit", "-q", "-am", "next"]);
    assert_eq!(tree.ask("committed").0, vec![]);
    tree.settle();
    assert_eq!(tree.ask("settled").0, vec![]);
    assert_eq!(tree.ask("nothing since").1, 0, "git ran again");

    // A checkout of the commit before, detached: `HEAD` itself moved.
    git(tree.root(), &["checkout", "-q", "HEAD~1"]);
    tree.noted(&["b.py", "sub/d.py"]);
    assert_eq!(tree.ask("checked out").0, vec![]);
    tree.write("sub/c.py", "y = 3\n");
    tree.noted(&["sub/c.py"]);
    assert_eq!(
        tree.ask("detached, an edit").0,
        vec![("sub/c.py".into(), vec![(1, 1)])]
    );
}

#[test]
fn many_changed_files_run_the_whole_diff_and_odd_names_stay_paths() {
    let names: Vec<String> = (0..70).map(|i| format!(":odd {i}.py")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "a\n")).collect();
    let tree = Tree::new(&files);
    assert_eq!(tree.ask("first").1, 1);
    for name in &names[..3] {
        tree.write(name, "b\n");
    }
    tree.noted(&[&names[0], &names[1], &names[2]]);
    assert_eq!(tree.ask("three, as pathspecs").0.len(), 3);
    for name in &names {
        tree.write(name, "c\n");
    }
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    tree.noted(&all);
    assert_eq!(tree.ask("seventy").0.len(), 70);
}
