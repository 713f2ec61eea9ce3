//! The resolution rules on small fixtures, one per rule, through the real chunker.

use std::collections::HashMap;

use super::resolve::{GraphView, Resolution};
use super::*;
use crate::chunk::syntax::chunk_file;
use crate::files::lang::language_of;

mod imported;
mod imports;
mod loops;
mod memo;
mod nested;
mod python;
mod rust;
mod typescript;
mod wide;
mod worktree;

/// Files chunked in memory, standing for an index.
struct Fixture(HashMap<String, (String, crate::chunk::syntax::Chunked)>);

fn fixture(files: &[(&str, &str)]) -> Fixture {
    Fixture(
        files
            .iter()
            .map(|(path, text)| {
                let language = language_of(std::path::Path::new(path));
                (
                    path.to_string(),
                    (language.to_string(), chunk_file(language, text)),
                )
            })
            .collect(),
    )
}

impl GraphView for Fixture {
    fn symbols_of(&self, path: &str) -> Result<std::sync::Arc<Vec<SymbolRecord>>, IndexError> {
        Ok(std::sync::Arc::new(
            self.0.get(path).map_or_else(Vec::new, |(_, c)| {
                c.symbols.iter().map(SymbolRecord::from).collect()
            }),
        ))
    }
    fn refs_of(&self, path: &str) -> Result<std::sync::Arc<StoredRefs>, IndexError> {
        Ok(std::sync::Arc::new(
            self.0
                .get(path)
                .map(|(_, c)| StoredRefs::from(&c.refs))
                .unwrap_or_default(),
        ))
    }
    fn language_of(&self, path: &str) -> Result<Option<String>, IndexError> {
        Ok(self.0.get(path).map(|(l, _)| l.clone()))
    }
    fn symbols_named(&self, name: &str) -> Result<Vec<(String, SymbolRecord)>, IndexError> {
        let mut out = Vec::new();
        for (path, (_, chunked)) in &self.0 {
            for s in &chunked.symbols {
                if s.name.eq_ignore_ascii_case(name) {
                    out.push((path.clone(), SymbolRecord::from(s)));
                }
            }
        }
        Ok(out)
    }
    fn files_mentioning(&self, name: &str, _limit: usize) -> Result<Vec<String>, IndexError> {
        let mut paths: Vec<String> = self
            .0
            .iter()
            .filter(|(_, (_, c))| {
                c.chunks.iter().any(|k| {
                    k.text
                        .split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                        .any(|w| w.eq_ignore_ascii_case(name))
                })
            })
            .map(|(p, _)| p.clone())
            .collect();
        paths.sort();
        Ok(paths)
    }
}

/// `path:caller label` for every caller link of `name` (qualified), defined in `within`.
fn callers_in(view: &Fixture, name: &str, within: Option<&str>) -> Vec<String> {
    let mut walk = Walk::new(view);
    let targets = walk.definitions(name, within).unwrap();
    assert_eq!(targets.len(), 1, "{name}: {targets:?}");
    let answer = walk.callers(&targets, 1, false).unwrap();
    let mut out: Vec<String> = answer
        .links
        .iter()
        .map(|l| format!("{}:{} {}", l.from.path, l.from.qualified, l.label.as_str()))
        .collect();
    out.sort();
    out
}

fn callers(view: &Fixture, name: &str) -> Vec<String> {
    callers_in(view, name, None)
}

/// What the call of `name` on `line` of `path` resolves to.
fn resolve(view: &Fixture, path: &str, line: u32, name: &str) -> String {
    let walk = Walk::new(view);
    let refs = view.refs_of(path).unwrap();
    let r = refs
        .refs()
        .find(|r| r.line == line && r.name == name)
        .unwrap_or_else(|| {
            panic!(
                "no {name} on {path}:{line}: {:?}",
                refs.refs().collect::<Vec<_>>()
            )
        })
        .to_reference();
    match walk.resolver.resolve(path, &r).unwrap() {
        Resolution::Resolved(def, rule) => format!("{}:{} ({rule})", def.path, def.qualified),
        Resolution::Ambiguous(defs) => format!(
            "ambiguous: {}",
            defs.iter()
                .map(|d| format!("{}:{}", d.path, d.qualified))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Resolution::Unresolved(why) => format!("unresolved: {why}"),
    }
}

const PY_UTIL: &str = "def load(path):\n    return open(path)\n\ndef save(x):\n    pass\n";
const PY_OTHER: &str = "def load(url):\n    return fetch(url)\n";

#[test]
fn python_imports_pick_the_module_they_name() {
    let view = fixture(&[
        ("pkg/util.py", PY_UTIL),
        ("net/other.py", PY_OTHER),
        (
            "pkg/app.py",
            "from .util import load, save as store\nimport net.other as net\n\ndef main():\n    load('a')\n    store(1)\n    net.load('u')\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "pkg/app.py", 5, "load"),
        "pkg/util.py:load (import)"
    );
    assert_eq!(
        resolve(&view, "pkg/app.py", 6, "store"),
        "pkg/util.py:save (import)"
    );
    assert_eq!(
        resolve(&view, "pkg/app.py", 7, "load"),
        "net/other.py:load (module)"
    );
    // Callers of each `load` are told apart; the alias counts as a call of `save`.
    assert_eq!(
        callers_in(&view, "load", Some("pkg/util.py")),
        ["pkg/app.py:main resolved"]
    );
    assert_eq!(
        callers_in(&view, "load", Some("net")),
        ["pkg/app.py:main resolved"]
    );
    assert_eq!(callers(&view, "save"), ["pkg/app.py:main resolved"]);
}

#[test]
fn a_local_definition_shadows_an_import() {
    let view = fixture(&[
        ("pkg/util.py", PY_UTIL),
        (
            "pkg/app.py",
            "from .util import save\n\ndef save(x):\n    return x\n\ndef main():\n    save(1)\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "pkg/app.py", 7, "save"),
        "pkg/app.py:save (same file)"
    );
}

#[test]
fn self_calls_resolve_to_the_enclosing_class_or_its_base() {
    let view = fixture(&[(
        "m.py",
        "class Base:\n    def run(self):\n        pass\n\nclass A(Base):\n    def step(self):\n        self.run()\n        self.step()\n\nclass B:\n    def step(self):\n        pass\n",
    )]);
    assert_eq!(
        resolve(&view, "m.py", 7, "run"),
        "m.py:Base.run (base class)"
    );
    assert_eq!(
        resolve(&view, "m.py", 8, "step"),
        "m.py:A.step (enclosing class)"
    );
}

#[test]
fn an_unknown_receiver_is_ambiguous_and_an_unknown_name_unresolved() {
    let view = fixture(&[(
        "m.py",
        "class A:\n    def close(self):\n        pass\n\nclass B:\n    def close(self):\n        pass\n\ndef f(x, y):\n    x.close()\n    y.flush()\n    print(x)\n",
    )]);
    assert_eq!(
        resolve(&view, "m.py", 10, "close"),
        "ambiguous: m.py:A.close, m.py:B.close"
    );
    assert!(resolve(&view, "m.py", 11, "flush").starts_with("unresolved"));
    assert!(resolve(&view, "m.py", 12, "print").starts_with("unresolved"));
    // Both closes list f as an ambiguous caller, never as resolved.
    assert_eq!(callers(&view, "A.close"), ["m.py:f ambiguous"]);
}

#[test]
fn typescript_relative_imports_and_named_types() {
    let view = fixture(&[
        (
            "src/text.ts",
            "export function parse(s: string) { return s; }\n",
        ),
        (
            "src/other/text.ts",
            "export function parse(s: string) { return 1; }\n",
        ),
        (
            "src/app.ts",
            "import { parse } from './text';\nexport class Server {\n  static make() { return new Server(); }\n  start() { parse('x'); Server.make(); }\n}\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "src/app.ts", 4, "parse"),
        "src/text.ts:parse (import)"
    );
    assert_eq!(
        resolve(&view, "src/app.ts", 4, "make"),
        "src/app.ts:Server.make (named type)"
    );
}

#[test]
fn rust_use_paths_and_go_packages() {
    let view = fixture(&[
        ("src/store/mod.rs", "pub fn open() -> u8 { 1 }\n"),
        ("src/writer.rs", "pub fn open() -> u8 { 2 }\n"),
        (
            "src/main.rs",
            "use crate::store::open;\n\nfn main() {\n    open();\n}\n",
        ),
        (
            "pkg/util/u.go",
            "package util\n\nfunc Run() int { return 1 }\n",
        ),
        (
            "pkg/other/o.go",
            "package other\n\nfunc Run() int { return 2 }\n",
        ),
        (
            "cmd/main.go",
            "package main\n\nimport \"github.com/o/r/pkg/util\"\n\nfunc main() {\n\tutil.Run()\n}\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "src/main.rs", 4, "open"),
        "src/store/mod.rs:open (import)"
    );
    assert_eq!(
        resolve(&view, "cmd/main.go", 6, "Run"),
        "pkg/util/u.go:Run (module)"
    );
}

#[test]
fn callees_and_impact_walk_the_graph() {
    let view = fixture(&[(
        "m.py",
        "def leaf():\n    pass\n\ndef mid():\n    leaf()\n\ndef top():\n    mid()\n    len([])\n\ndef test_top():\n    top()\n",
    )]);
    let mut walk = Walk::new(&view);
    let top = walk.definitions("top", None).unwrap();
    let callees = walk.callees(&top, 2).unwrap();
    let names: Vec<(String, u32, &str)> = callees
        .links
        .iter()
        .map(|l| (l.name.clone(), l.depth, l.label.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("mid".into(), 1, "resolved"),
            ("len".into(), 1, "unresolved"),
            ("leaf".into(), 2, "resolved")
        ]
    );
    let leaf = walk.definitions("leaf", None).unwrap();
    let impact = walk.impact(&leaf, 3).unwrap();
    let reached: Vec<(&str, u32, bool)> = impact
        .impacted
        .iter()
        .map(|i| (i.def.name.as_str(), i.distance, i.test))
        .collect();
    assert_eq!(
        reached,
        [("mid", 1, false), ("top", 2, false), ("test_top", 3, true)]
    );
    let trace = walk.trace(&top, &leaf, 3).unwrap();
    assert_eq!(trace.paths.len(), 1);
    let hops: Vec<&str> = trace.paths[0]
        .iter()
        .map(|i| trace.links[*i].name.as_str())
        .collect();
    assert_eq!(hops, ["mid", "leaf"]);
}

#[test]
fn receivers_typed_by_what_is_written_pick_their_class() {
    let view = fixture(&[
        (
            "m.py",
            "class A:\n    def close(self):\n        pass\n\nclass B:\n    def close(self):\n        pass\n\nclass C(B):\n    pass\n\nclass Holder:\n    def __init__(self):\n        self.conn = A()\n\n    def stop(self, other: B, third: 'C'):\n        self.conn.close()\n        other.close()\n        made = C()\n        made.close()\n",
        ),
        (
            "s.ts",
            "class Pool { drain() {} }\nclass Cache { drain() {} }\nclass Svc {\n  constructor(private pool: Pool) {}\n  stop(c: Cache) { this.pool.drain(); c.drain(); const p = new Pool(); p.drain(); }\n}\n",
        ),
        (
            "src/lib.rs",
            "struct Pool;\nimpl Pool { fn new() -> Pool { Pool } fn drain(&self) {} }\nstruct Cache;\nimpl Cache { fn drain(&self) {} }\nfn stop(c: &Cache) {\n    let p = Pool::new();\n    p.drain();\n    c.drain();\n}\n",
        ),
        (
            "g/g.go",
            "package g\n\ntype Pool struct{}\n\nfunc (p *Pool) Drain() {}\n\ntype Cache struct{}\n\nfunc (c *Cache) Drain() {}\n\nfunc Stop(c *Cache) {\n\tp := &Pool{}\n\tp.Drain()\n\tc.Drain()\n}\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "m.py", 17, "close"),
        "m.py:A.close (declared type)"
    );
    assert_eq!(
        resolve(&view, "m.py", 18, "close"),
        "m.py:B.close (declared type)"
    );
    assert_eq!(
        resolve(&view, "m.py", 20, "close"),
        "m.py:B.close (declared type's base)"
    );
    let walk = Walk::new(&view);
    let refs = view.refs_of("s.ts").unwrap();
    let drains: Vec<String> = refs
        .refs()
        .filter(|r| r.name == "drain")
        .map(
            |r| match walk.resolver.resolve("s.ts", &r.to_reference()).unwrap() {
                Resolution::Resolved(def, _) => def.qualified,
                other => format!("{other:?}"),
            },
        )
        .collect();
    assert_eq!(drains, ["Pool.drain", "Cache.drain", "Pool.drain"]);
    assert_eq!(
        resolve(&view, "src/lib.rs", 7, "drain"),
        "src/lib.rs:Pool::drain (declared type)"
    );
    assert_eq!(
        resolve(&view, "src/lib.rs", 8, "drain"),
        "src/lib.rs:Cache::drain (declared type)"
    );
    assert_eq!(
        resolve(&view, "g/g.go", 13, "Drain"),
        "g/g.go:Pool.Drain (declared type)"
    );
    assert_eq!(
        resolve(&view, "g/g.go", 14, "Drain"),
        "g/g.go:Cache.Drain (declared type)"
    );
}

const RUST_LIB: &str = "macro_rules! check { ($e:expr) => { $e }; }\nfn check(x: u8) -> u8 { x }\nmod inner {\n    pub fn helper() -> u8 { 1 }\n    pub fn run() -> u8 { helper() }\n}\npub trait Visitor {\n    fn visit_unit(self) -> u8;\n}\nstruct Other;\nimpl Other {\n    fn visit_unit(self) -> u8 { 0 }\n}\nfn drive<V>(visitor: V) -> u8\nwhere\n    V: Visitor,\n{\n    check!(1);\n    let check = |x: u8| x;\n    check(2);\n    visitor.visit_unit()\n}\n";

#[test]
fn rust_macros_modules_bounds_and_locals() {
    let view = fixture(&[("src/lib.rs", RUST_LIB)]);
    // A function in a module is a function, called bare from beside it.
    assert_eq!(
        resolve(&view, "src/lib.rs", 5, "helper"),
        "src/lib.rs:inner::helper (same file)"
    );
    // `check!` is the macro, never the function of the same name.
    let walk = Walk::new(&view);
    let refs = view.refs_of("src/lib.rs").unwrap();
    let invocation = refs.refs().find(|r| r.line == 18).unwrap().to_reference();
    match walk.resolver.resolve("src/lib.rs", &invocation).unwrap() {
        Resolution::Resolved(def, _) => assert_eq!((def.kind.as_str(), def.lines.0), ("macro", 1)),
        other => panic!("check! resolved to {other:?}"),
    }
    // A local of the name shadows the function.
    assert_eq!(
        resolve(&view, "src/lib.rs", 20, "check"),
        "unresolved: `check` is a local value here"
    );
    // A receiver typed by a generic parameter reaches its bound's method.
    assert_eq!(
        resolve(&view, "src/lib.rs", 21, "visit_unit"),
        "src/lib.rs:Visitor::visit_unit (declared type)"
    );
}

#[test]
fn bounds_are_read_from_signatures() {
    use super::rust::bounds_in;
    let sig = "fn f<'a, V: de::Visitor<'a> + ?Sized, W>(v: V, w: W) -> X where W: Sink + Clone,";
    assert_eq!(bounds_in(sig, "V"), ["Visitor"]);
    assert_eq!(bounds_in(sig, "W"), ["Sink", "Clone"]);
    assert!(bounds_in(sig, "X").is_empty());
    assert!(bounds_in(sig, "").is_empty());
}

#[test]
fn rust_module_paths_and_types_of_the_same_file() {
    let view = fixture(&[
        ("src/size_hint.rs", "pub fn from_bounds() -> u8 { 1 }\n"),
        ("src/other.rs", "pub fn from_bounds() -> u8 { 2 }\n"),
        (
            "src/value.rs",
            "pub struct Seq;\nimpl Seq {\n    pub fn new() -> Seq { Seq }\n}\n",
        ),
        (
            "src/de.rs",
            "struct Seq;\nimpl Seq {\n    fn new() -> Seq { Seq }\n}\nfn run() {\n    size_hint::from_bounds();\n    Seq::new();\n    value::Seq::new();\n    helper();\n    tri!(Seq::<u8>::new());\n}\n",
        ),
        ("src/util.rs", "pub fn helper() -> u8 { 1 }\n"),
        // A test file is a crate of its own: its definitions are its own.
        (
            "tests/t.rs",
            "fn helper() -> u8 { 2 }\nfn check() { helper(); }\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "src/de.rs", 6, "from_bounds"),
        "src/size_hint.rs:from_bounds (module path)"
    );
    assert_eq!(
        resolve(&view, "src/de.rs", 7, "new"),
        "src/de.rs:Seq::new (named type, in scope)"
    );
    // A type named by a path is not taken to be the file's own.
    assert!(resolve(&view, "src/de.rs", 8, "new").starts_with("ambiguous"));
    assert_eq!(
        resolve(&view, "src/de.rs", 9, "helper"),
        "src/util.rs:helper (unique name)"
    );
    assert_eq!(
        resolve(&view, "tests/t.rs", 2, "helper"),
        "tests/t.rs:helper (same file)"
    );
    // Type arguments (here inside a macro's tokens) do not hide the type.
    assert_eq!(
        resolve(&view, "src/de.rs", 10, "new"),
        "src/de.rs:Seq::new (named type, in scope)"
    );
}

#[test]
fn rust_fields_type_their_receivers() {
    let view = fixture(&[(
        "src/ast.rs",
        "struct Attrs;\nimpl Attrs {\n    fn skip(&self) -> bool { true }\n}\nstruct Other;\nimpl Other {\n    fn skip(&self) -> bool { false }\n}\nstruct Field {\n    attrs: Attrs,\n}\nimpl Field {\n    fn check(&self) -> bool { self.attrs.skip() }\n}\nfn run(field: &Field) -> bool {\n    field.attrs.skip()\n}\n",
    )]);
    for line in [13, 16] {
        assert_eq!(
            resolve(&view, "src/ast.rs", line, "skip"),
            "src/ast.rs:Attrs::skip (declared type)"
        );
    }
}

#[test]
fn rust_a_type_of_several_is_the_one_imported() {
    let params = "pub struct Params;\nimpl Params {\n    pub fn name(&self) -> u8 { 1 }\n}\n";
    let view = fixture(&[
        ("src/de.rs", params),
        ("src/ser.rs", params),
        (
            "src/de/enum_x.rs",
            "use crate::de::Params;\nfn f(params: &Params) -> u8 {\n    params.name()\n}\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "src/de/enum_x.rs", 3, "name"),
        "src/de.rs:Params::name (declared type)"
    );
}

#[test]
fn a_field_given_values_of_several_types_is_typed_only_by_a_written_declaration() {
    let source = |declaration: &str| {
        format!(
            "from typing import Optional\n\nclass Base:\n    def log(self):\n        pass\n\nclass Wrapper(Base):\n    def log(self):\n        pass\n\nclass Handler:\n    def __init__(self, custom: Base):\n        {declaration}\n        self.logger = Wrapper()\n\n    def run(self):\n        self.logger.log()\n"
        )
    };
    // Written as a declaration, the field has that type whatever it is given, as a type
    // checker reads it (pyright's callee here is `Base.log`).
    let view = fixture(&[("log.py", &source("self.logger: Base = custom"))]);
    assert_eq!(
        resolve(&view, "log.py", 17, "log"),
        "log.py:Base.log (declared type)"
    );
    // A quoted annotation (a type named before its definition) declares it too.
    let view = fixture(&[(
        "log.py",
        &source("self.logger: \"Optional[Base]\" = custom"),
    )]);
    assert_eq!(
        resolve(&view, "log.py", 17, "log"),
        "log.py:Base.log (declared type)"
    );
    // Given two types' values and declared with neither: either (`Wrapper.log` alone would
    // hide the call from `Base.log`).
    let view = fixture(&[("log.py", &source("self.logger = custom"))]);
    assert_eq!(
        resolve(&view, "log.py", 17, "log"),
        "ambiguous: log.py:Base.log, log.py:Wrapper.log"
    );
}

#[test]
fn rust_calls_type_their_receivers_by_what_the_callee_returns() {
    // `Visitor::new()` returns `Self`; `map` of the bound `Iter` returns `Map<Self, F>`;
    // `make()` returns a `Map`; a `let` does not type the receiver in its own initializer.
    let view = fixture(&[(
        "src/lib.rs",
        "struct Visitor;\nimpl Visitor {\n    fn new() -> Self { Visitor }\n    fn visit(&self) -> u8 { 1 }\n}\nstruct Other;\nimpl Other {\n    fn visit(&self) -> u8 { 2 }\n    fn drive(&self) -> u8 { 2 }\n}\nstruct Map<I, F> { base: I, f: F }\nimpl<I, F> Map<I, F> {\n    fn drive(&self) -> u8 { 3 }\n}\ntrait Iter {\n    fn map<F>(self, f: F) -> Map<Self, F> where Self: Sized { Map { base: self, f } }\n}\nfn make() -> Map<u8, u8> { todo!() }\nfn run<I: Iter>(iter: I, value: &Visitor) -> u8 {\n    Visitor::new().visit();\n    iter.map(1).drive();\n    make().drive();\n    let value = value.visit();\n    value\n}\n",
    )]);
    let at = |line, name| resolve(&view, "src/lib.rs", line, name);
    assert_eq!(at(20, "visit"), "src/lib.rs:Visitor::visit (returned type)");
    assert_eq!(at(21, "drive"), "src/lib.rs:Map::drive (returned type)");
    assert_eq!(at(22, "drive"), "src/lib.rs:Map::drive (returned type)");
    assert_eq!(at(23, "visit"), "src/lib.rs:Visitor::visit (declared type)");
}

#[test]
fn rust_a_dereferenced_self_is_the_referenced_types_bounds() {
    let view = fixture(&[(
        "src/lib.rs",
        "trait Access {\n    fn next(&mut self) -> u8;\n}\nstruct Seq;\nimpl Access for Seq {\n    fn next(&mut self) -> u8 { 1 }\n}\nimpl<A> Access for &mut A\nwhere\n    A: ?Sized + Access,\n{\n    fn next(&mut self) -> u8 { (**self).next() }\n}\n",
    )]);
    assert_eq!(
        resolve(&view, "src/lib.rs", 12, "next"),
        "src/lib.rs:Access::next (dereferenced self)"
    );
}

#[test]
fn a_private_class_constructed_types_its_value() {
    let view = fixture(&[(
        "m.py",
        "class _Table:\n    def clear(self):\n        pass\n\nclass Other:\n    def clear(self):\n        pass\n\nclass Connector:\n    def __init__(self):\n        self._hosts = _Table()\n\n    def reset(self):\n        self._hosts.clear()\n",
    )]);
    assert_eq!(
        resolve(&view, "m.py", 14, "clear"),
        "m.py:_Table.clear (declared type)"
    );
}

#[test]
fn a_field_copied_from_a_parameter_of_its_declared_type_keeps_it() {
    let view = fixture(&[(
        "m.py",
        "class A:\n    def go(self):\n        pass\n\nclass B:\n    def go(self):\n        pass\n\nclass Session:\n    def __init__(self, conn: A):\n        self._conn: A | None = None\n        self._conn = conn\n\n    def run(self):\n        self._conn.go()\n",
    )]);
    assert_eq!(
        resolve(&view, "m.py", 15, "go"),
        "m.py:A.go (declared type)"
    );
}

#[test]
fn an_inherited_member_is_found_up_the_bases_and_its_own_first() {
    let view = fixture(&[(
        "routes.py",
        "class Base:\n    def freeze(self):\n        pass\n\nclass Middle(Base):\n    pass\n\nclass Router(Middle):\n    def freeze(self):\n        super().freeze()\n\n    def close(self):\n        self.freeze()\n\nclass Other:\n    def freeze(self):\n        pass\n",
    )]);
    assert_eq!(
        resolve(&view, "routes.py", 10, "freeze"),
        "routes.py:Base.freeze (base's base)"
    );
    assert_eq!(
        resolve(&view, "routes.py", 13, "freeze"),
        "routes.py:Router.freeze (enclosing class)"
    );
}
