//! The memo's answers after each kind of edit are a fresh walk's.

use super::*;
use crate::index::changes::Changes;
use crate::search::graph::memo::Memo;

const STORE: &str =
    "class Store:\n    def save(self, x):\n        pass\n\n    def load(self):\n        return 1\n";
const UTIL: &str = "def save(x):\n    pass\n\ndef helper():\n    save(1)\n";
const APP: &str = "from .util import save\nfrom .store import Store\n\ndef main():\n    s = Store()\n    s.save(1)\n    save(2)\n\nclass App(Store):\n    def run(self):\n        self.save(3)\n";
const CLI: &str = "from .app import main\n\ndef cli():\n    main()\n\ndef go():\n    helper()\n";

/// `impact` of `names` at depth 2, every link and count written out.
fn impact(walk: &mut Walk<'_>, names: &[&str]) -> String {
    let mut targets = Vec::new();
    for name in names {
        targets.extend(walk.definitions(name, None).unwrap());
    }
    format!("{:?}", walk.impact(&targets, 2).unwrap())
}

/// A memo and its change log, asked about `names` as files change.
struct Asked {
    memo: Memo,
    changes: Changes,
    names: &'static [&'static str],
}

impl Asked {
    fn new(names: &'static [&'static str]) -> Asked {
        Asked {
            memo: Memo::default(),
            changes: Changes::default(),
            names,
        }
    }

    /// The memo's answer (checked against a fresh walk's) in the state `files`, after a
    /// commit that changed `changed`.
    fn step(&self, files: &[(&str, &str)], changed: &[&str]) -> String {
        let view = fixture(files);
        self.changes.begin();
        self.changes
            .end(changed.iter().map(|p| p.to_string()).collect());
        let memo = self.memo.up_to_date(&view, &self.changes);
        let kept = impact(&mut Walk::with_memo(&view, Some(memo)), self.names);
        let fresh = impact(&mut Walk::new(&view), self.names);
        assert_eq!(kept, fresh, "after changing {changed:?}");
        kept
    }
}

#[test]
fn kept_mentions_answer_as_a_fresh_walk_after_each_kind_of_edit() {
    let asked = Asked::new(&["save", "Store.save", "main", "helper"]);
    let mut files = vec![
        ("pkg/store.py", STORE),
        ("pkg/util.py", UTIL),
        ("pkg/app.py", APP),
        ("pkg/cli.py", CLI),
    ];
    let first = asked.step(&files, &[]);
    let kept = asked.memo.names_kept();
    assert!(kept >= 3, "names kept: {kept}");
    // Asked again, nothing changed: the kept mentions, the same answer.
    assert_eq!(asked.step(&files, &[]), first);

    // A file nobody's answer read or could read: everything stays.
    files.push(("docs/notes.py", "def unrelated():\n    return 1\n"));
    assert_eq!(asked.step(&files, &["docs/notes.py"]), first);
    assert_eq!(asked.memo.names_kept(), kept);

    // A new file calling `save` under another name.
    files.push((
        "pkg/extra.py",
        "from .util import save as keep\n\ndef extra():\n    keep(5)\n",
    ));
    let with_extra = asked.step(&files, &["pkg/extra.py"]);
    assert_ne!(with_extra, first);

    // A second `helper` elsewhere: the bare call in `go` is no longer the only one's.
    files.push(("pkg/more.py", "def helper():\n    return 2\n"));
    asked.step(&files, &["pkg/more.py"]);

    // `save` leaves `util.py`: its callers' calls resolve elsewhere or nowhere.
    let util = files.iter().position(|(p, _)| *p == "pkg/util.py").unwrap();
    files[util].1 = "def helper():\n    return 3\n";
    asked.step(&files, &["pkg/util.py"]);

    // A file removed.
    files.retain(|(p, _)| *p != "pkg/extra.py");
    asked.step(&files, &["pkg/extra.py"]);

    // A caller's lines move.
    let app = files.iter().position(|(p, _)| *p == "pkg/app.py").unwrap();
    let moved = format!("\n\n{APP}");
    files[app].1 = &moved;
    asked.step(&files, &["pkg/app.py"]);
}

#[test]
fn a_name_first_resolved_inside_another_names_mentions_is_kept_with_its_own_reads() {
    // `box_up` is first resolved while typing `b` for `b.open()` (one request, `open`'s
    // mentions first): `box_up`'s own mentions then reuse what that read.
    let maker =
        "class Box:\n    def open(self):\n        pass\n\ndef box_up() -> Box:\n    return Box()\n";
    let user = "def run():\n    b = box_up()\n    b.open()\n\ndef again():\n    box_up()\n";
    let asked = Asked::new(&["open", "box_up"]);
    asked.step(&[("a/maker.py", maker), ("b/user.py", user)], &[]);
    // The definitions' lines move.
    let moved = format!("\n\n{maker}");
    asked.step(
        &[("a/maker.py", &moved), ("b/user.py", user)],
        &["a/maker.py"],
    );
    // A second `box_up`: the bare calls are no longer the only one's.
    asked.step(
        &[
            ("a/maker.py", &moved),
            ("b/user.py", user),
            ("c/other.py", "def box_up():\n    return 1\n"),
        ],
        &["c/other.py"],
    );
}

#[test]
fn an_edit_works_out_again_only_the_shares_of_the_files_it_touched() {
    let util = "def save(x):\n    pass\n";
    let callers: Vec<(String, String)> = (0..10)
        .map(|i| {
            let text = format!("from .util import save\n\ndef use{i}():\n    save({i})\n");
            (format!("pkg/user{i}.py"), text)
        })
        .collect();
    let mut files: Vec<(&str, &str)> = vec![("pkg/util.py", util)];
    files.extend(callers.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    let asked = Asked::new(&["save"]);
    asked.step(&files, &[]);
    let cold = asked.memo.worked_out();
    assert!(cold >= 10, "shares worked out: {cold}");

    // One caller's lines move: its own shares are worked out again, the nine others kept.
    let moved = format!("\n\n{}", callers[3].1);
    files[4].1 = &moved;
    asked.step(&files, &["pkg/user3.py"]);
    let again = asked.memo.worked_out() - cold;
    assert!((1..=2).contains(&again), "shares worked out again: {again}");
}
