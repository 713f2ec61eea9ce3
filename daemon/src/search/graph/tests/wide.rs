//! A wide walk, whose levels' mentions are found on two threads, answers as one thread does.

use super::fixture;
use crate::search::graph::walk::Walk;

#[test]
fn a_wide_impact_answers_the_same_on_two_threads_as_on_one() {
    // Twelve functions, each called from another file and from a method whose class calls
    // its base's `__init__`: more names at a level than a walk keeps to one thread.
    let mut base = String::from("class Base:\n    def __init__(self):\n        pass\n\n");
    let mut callers = String::from("from base import *\n\n");
    for i in 0..12 {
        base.push_str(&format!("def f{i}():\n    pass\n\n"));
        callers.push_str(&format!(
            "class C{i}(Base):\n    def __init__(self):\n        super().__init__()\n        f{i}()\n\ndef g{i}():\n    C{i}()\n    f{i}()\n\n"
        ));
    }
    let view = fixture(&[("base.py", &base), ("callers.py", &callers)]);
    let answer = |parallel: bool| {
        let mut walk = Walk::new(&view);
        walk.parallel = parallel;
        let mut changed = walk.definitions("Base.__init__", None).unwrap();
        for i in 0..12 {
            changed.extend(walk.definitions(&format!("f{i}"), None).unwrap());
        }
        assert_eq!(changed.len(), 13);
        let answer = walk.impact(&changed, 2).unwrap();
        let links: Vec<String> = answer
            .links
            .iter()
            .map(|l| {
                format!(
                    "{} -> {} {}:{} {} {}",
                    l.from.qualified,
                    l.name,
                    l.path,
                    l.line,
                    l.label.as_str(),
                    l.depth
                )
            })
            .collect();
        let reached: Vec<String> = answer
            .impacted
            .iter()
            .map(|i| format!("{} {}", i.def.qualified, i.distance))
            .collect();
        (links, reached, answer.complete)
    };
    let one = answer(false);
    assert!(one.0.len() >= 36, "{:?}", one.0);
    assert!(one.1.iter().any(|r| r == "C3.__init__ 1"), "{:?}", one.1);
    for _ in 0..5 {
        assert_eq!(answer(true), one);
    }
}
