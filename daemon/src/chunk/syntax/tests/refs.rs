//! What `refs` reads from a file: calls with their receivers, imports as each language
//! binds names, and base classes, one test per language family.

use crate::chunk::syntax::chunk_file;
use crate::chunk::syntax::refs::{FileRefs, RefKind};

fn refs(language: &str, text: &str) -> FileRefs {
    chunk_file(language, text).refs
}

/// `name@line` or `receiver.name@line` for each call, `name!@line` for a macro's.
fn calls(found: &FileRefs) -> Vec<String> {
    found
        .refs
        .iter()
        .filter(|r| r.kind != RefKind::Inherit)
        .map(|r| {
            let bang = if r.kind == RefKind::Macro { "!" } else { "" };
            match &r.receiver {
                Some(receiver) => format!("{receiver}.{}{bang}@{}", r.name, r.line),
                None => format!("{}{bang}@{}", r.name, r.line),
            }
        })
        .collect()
}

fn imports(found: &FileRefs) -> Vec<String> {
    found
        .imports
        .iter()
        .map(|i| {
            format!(
                "{}|{}|{}",
                i.module,
                i.name.as_deref().unwrap_or("-"),
                i.local
            )
        })
        .collect()
}

fn bases(found: &FileRefs) -> Vec<&str> {
    found
        .refs
        .iter()
        .filter(|r| r.kind == RefKind::Inherit)
        .map(|r| r.name.as_str())
        .collect()
}

#[test]
fn python_calls_imports_and_bases() {
    let found = refs(
        "python",
        "import os.path\nimport numpy as np\nfrom .util import load, save as store\nfrom pkg.mod import *\n\nclass A(Base, mixins.Logged, metaclass=Meta):\n    def run(self):\n        self.step(os.path.join('a', 'b'))\n        return load(np.array([1]))\n",
    );
    assert_eq!(
        imports(&found),
        [
            "os.path|-|os.path",
            "numpy|-|np",
            ".util|load|load",
            ".util|save|store",
            "pkg.mod|*|*"
        ]
    );
    assert_eq!(
        calls(&found),
        ["self.step@8", "os.path.join@8", "load@9", "np.array@9"]
    );
    assert_eq!(bases(&found), ["Base", "Logged"]);
}

#[test]
fn typescript_calls_imports_and_reexports() {
    let found = refs(
        "typescript",
        "import Default, { parse, format as fmt } from './text';\nimport * as path from \"node:path\";\nexport { Router } from './router';\nclass Server extends Base implements Listener {\n  start() { this.listen(fmt(parse(x))); return new Router(path.join('a')); }\n}\n",
    );
    assert_eq!(
        imports(&found),
        [
            "./text|default|Default",
            "./text|parse|parse",
            "./text|format|fmt",
            "node:path|-|path",
            "./router|Router|Router"
        ]
    );
    assert_eq!(
        calls(&found),
        [
            "this.listen@5",
            "fmt@5",
            "parse@5",
            "Router@5",
            "path.join@5"
        ]
    );
    assert_eq!(bases(&found), ["Base", "Listener"]);
}

#[test]
fn rust_calls_use_trees_and_traits() {
    let found = refs(
        "rust",
        "use crate::index::{store::Store, writer::{self, Writer as W}};\nuse super::*;\nuse std::fmt;\n\nimpl fmt::Display for Store {\n    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {\n        let w = W::open(helper::<u8>(1));\n        self.flush();\n        write!(f, \"{}\", w.len())\n    }\n}\n",
    );
    assert_eq!(
        imports(&found),
        [
            "crate::index::store|Store|Store",
            "crate::index::writer|self|self",
            "crate::index::writer|Writer|W",
            "super|*|*",
            "std|fmt|fmt"
        ]
    );
    // A macro's arguments are tokens to tree-sitter: calls are read from them (`w.len()`).
    assert_eq!(
        calls(&found),
        [
            "W.open@7",
            "helper@7",
            "self.flush@8",
            "write!@9",
            "w.len@9"
        ]
    );
    assert_eq!(bases(&found), ["Display"]);
}

#[test]
fn go_and_java_calls() {
    let go = refs(
        "go",
        "package main\n\nimport (\n\t\"fmt\"\n\tlog \"github.com/x/logging\"\n)\n\nfunc main() {\n\tfmt.Println(run(1))\n\tlog.Info(\"x\")\n}\n",
    );
    assert_eq!(imports(&go), ["fmt|-|fmt", "github.com/x/logging|-|log"]);
    assert_eq!(calls(&go), ["fmt.Println@9", "run@9", "log.Info@10"]);
    let java = refs(
        "java",
        "class A extends B implements C {\n  void f() { helper(); this.g(); new D().h(); }\n}\n",
    );
    assert_eq!(calls(&java), ["helper@2", "this.g@2", "new D().h@2", "D@2"]);
    assert_eq!(bases(&java), ["B", "C"]);
}

#[test]
fn rust_calls_inside_macro_arguments_but_not_templates() {
    let found = refs(
        "rust",
        "fn f(s: S) {\n    let x = tri!(s.open(path::join(a)));\n    assert_eq!(g(1), 2);\n    let t = quote! { Visitor::new(#x) };\n    tri!(Seen::<u8>::new().visit(self.attrs.skip(x)));\n}\n",
    );
    assert_eq!(
        calls(&found),
        [
            "tri!@2",
            "s.open@2",
            "path.join@2",
            "assert_eq!@3",
            "g@3",
            "quote!@4",
            // A receiver is the whole chain before the call, as outside a macro.
            "tri!@5",
            "Seen::<u8>.new@5",
            "Seen::<u8>::new().visit@5",
            "self.attrs.skip@5",
        ]
    );
}
