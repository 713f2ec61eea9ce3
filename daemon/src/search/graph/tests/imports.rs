//! `impact` follows imports: a file importing a definition by name is reached by a change to
//! it, though it may never call it (an exception caught, a type named), unless a call there
//! already links it; `callers` stays calls.

use super::fixture;
use crate::search::graph::Walk;

/// Python (`from .errors import Timeout`), TypeScript (`import { parse } from "./parse"`)
/// and Rust (`use crate::errors::Timeout;`) name the definition they import; a name from
/// outside the project and a module imported whole are no such link.
#[test]
fn impact_reaches_the_files_importing_a_definition() {
    let view = fixture(&[
        ("pkg/errors.py", "class Timeout(Exception):\n    pass\n"),
        (
            "pkg/adapters.py",
            "import os\nfrom json import loads\nfrom .errors import Timeout\n\ndef send():\n    try:\n        pass\n    except Timeout:\n        pass\n",
        ),
        (
            "pkg/api.py",
            "from .errors import Timeout as T\n\ndef get():\n    raise T()\n",
        ),
        ("pkg/other.py", "from .elsewhere import Timeout\n"),
        (
            "web/parse.ts",
            "export function parse(s: string) { return s; }\n",
        ),
        (
            "web/app.ts",
            "import { parse } from \"./parse\";\nexport const p = parse;\n",
        ),
        ("src/errors.rs", "pub struct Timeout;\n"),
        (
            "src/net.rs",
            "use crate::errors::Timeout;\n\nfn wait() -> Timeout { Timeout }\n",
        ),
    ]);
    let mut walk = Walk::new(&view);
    let links = |walk: &mut Walk<'_>, name: &str, within: &str, impact: bool| -> Vec<String> {
        let targets = walk.definitions(name, Some(within)).unwrap();
        let answer = if impact {
            walk.impact(&targets, 1).unwrap()
        } else {
            walk.callers(&targets, 1, false).unwrap()
        };
        let mut out: Vec<String> = answer
            .links
            .iter()
            .map(|l| format!("{}:{} {:?} {}", l.path, l.line, l.kind, l.rule))
            .collect();
        out.sort();
        out
    };
    assert_eq!(
        links(&mut walk, "Timeout", "pkg", true),
        // `api.py`'s call says it uses it: its import is no second link.
        [
            "pkg/adapters.py:3 Import imports it (import)",
            "pkg/api.py:4 Call import"
        ]
    );
    // Callers are calls: the `raise T()` alone.
    assert_eq!(
        links(&mut walk, "Timeout", "pkg", false),
        ["pkg/api.py:4 Call import"]
    );
    assert_eq!(
        links(&mut walk, "parse", "web", true),
        ["web/app.ts:1 Import imports it (import)"]
    );
    assert_eq!(
        links(&mut walk, "Timeout", "src", true),
        ["src/net.rs:1 Import imports it (import)"]
    );
    // What an import reaches is the importing file's top level, listed as impacted.
    let targets = walk.definitions("Timeout", Some("pkg/errors.py")).unwrap();
    let impact = walk.impact(&targets, 2).unwrap();
    let reached: Vec<(&str, &str)> = impact
        .impacted
        .iter()
        .map(|i| (i.def.path.as_str(), i.def.kind.as_str()))
        .collect();
    assert!(
        reached.contains(&("pkg/adapters.py", "file")),
        "{reached:?}"
    );
    assert!(
        !reached.iter().any(|(p, _)| *p == "pkg/other.py"),
        "{reached:?}"
    );
}

/// A re-export that renames (`export { callProcedure as callTRPCProcedure } from`, `from
/// .impl import run as start` in a package's `__init__.py`): a call of the new name is a call
/// of the definition, found by `callers` though the calling file never spells its name.
#[test]
fn a_call_through_a_renaming_reexport_is_a_caller() {
    let view = fixture(&[
        (
            "core/router.ts",
            "export function callProcedure(x: number) { return x; }\n",
        ),
        (
            "server/index.ts",
            "export { callProcedure as callTRPCProcedure } from \"../core/router\";\n",
        ),
        (
            "adapters/ws.ts",
            "import { callTRPCProcedure } from \"../server/index\";\n\nexport function handleRequest() {\n  return callTRPCProcedure(1);\n}\n",
        ),
        ("pkg/impl.py", "def run():\n    return 1\n"),
        ("pkg/__init__.py", "from .impl import run as start\n"),
        (
            "app.py",
            "from pkg import start\n\ndef main():\n    return start()\n",
        ),
    ]);
    let mut walk = Walk::new(&view);
    let callers = |walk: &mut Walk<'_>, name: &str, within: &str| -> Vec<String> {
        let targets = walk.definitions(name, Some(within)).unwrap();
        let mut out: Vec<String> = (walk.callers(&targets, 1, false).unwrap().links.iter())
            .map(|l| format!("{}:{} {}", l.path, l.line, l.rule))
            .collect();
        out.sort();
        out
    };
    assert_eq!(
        callers(&mut walk, "callProcedure", "core"),
        ["adapters/ws.ts:4 import (renamed)"]
    );
    assert_eq!(
        callers(&mut walk, "run", "pkg"),
        ["app.py:4 import (renamed)"]
    );
}

/// A file's path names its top level: its callees are what it imports and runs when
/// loaded, not what its definitions call.
#[test]
fn a_files_callees_are_what_its_top_level_imports_and_calls() {
    let view = fixture(&[
        (
            "pkg/conventions.py",
            "def split_super_sub(text):\n    return text\n",
        ),
        ("pkg/util.py", "def helper():\n    pass\n"),
        (
            "pkg/symbology.py",
            "from pkg.conventions import split_super_sub\nfrom pkg.util import helper\n\nTABLE = split_super_sub('x')\n\ndef pretty():\n    return helper()\n\ndef lazy():\n    from pkg.conventions import split_super_sub as split\n    return 1\n",
        ),
    ]);
    let mut walk = Walk::new(&view);
    let file = walk.definitions("pkg/symbology.py", None).unwrap();
    assert_eq!(file.len(), 1);
    assert_eq!(file[0].kind, "file");
    let mut callees: Vec<String> = walk
        .callees(&file, 1)
        .unwrap()
        .links
        .iter()
        .map(|l| {
            let to =
                l.to.as_ref()
                    .map_or("-".into(), |d| format!("{}:{}", d.path, d.name));
            format!("{} {:?} {to}", l.line, l.kind)
        })
        .collect();
    callees.sort();
    assert_eq!(
        callees,
        [
            "1 Import pkg/conventions.py:split_super_sub",
            "2 Import pkg/util.py:helper",
            "4 Call pkg/conventions.py:split_super_sub",
        ]
    );
    // A function's own imports are its callees (Python imports inside functions).
    let lazy = walk.definitions("lazy", None).unwrap();
    let callees: Vec<String> = (walk.callees(&lazy, 1).unwrap().links.iter())
        .map(|l| {
            format!(
                "{} {:?} {:?}",
                l.line,
                l.kind,
                l.to.as_ref().map(|d| &d.name)
            )
        })
        .collect();
    assert_eq!(callees, ["10 Import Some(\"split_super_sub\")"]);
    // Not a path of the project: a name as before.
    assert!(walk.definitions("pkg/none.py", None).unwrap().is_empty());
}
