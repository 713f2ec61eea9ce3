//! A file's outgoing references, read from the same tree the chunker walks: calls (with the
//! receiver written before the name, if any), base classes and implemented traits, and the
//! imports that bind names (Python, JavaScript/TypeScript, Rust, Go). What they refer to is
//! decided at query time, by `search::graph`: this module only records what is written.
//!
//! One walk over every node. Call shapes are recognised by node kinds shared across the
//! grammars (`call`, `call_expression`, `method_invocation`, `invocation_expression`, ...);
//! the callee's name is the last identifier of the called expression, the receiver the text
//! before it (`self`, `os.path`, `Foo::`).

use tree_sitter::Node;

pub use super::bindings::Binding;
use super::bindings::bindings;
use super::builder::node_text;
use super::kinds::{self, Grammar, Visit};

/// What a reference does with the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKind {
    /// A call or a constructor call.
    Call,
    /// A macro invocation (Rust's `name!(...)`): only a macro can be meant.
    Macro,
    /// A base class, an extended interface, an implemented trait.
    Inherit,
    /// An import naming it (`from m import name`, `use m::Name`): made by the graph from a
    /// file's imports when it is asked, not read with the calls.
    Import,
}

/// One reference to a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The name as written (the last segment).
    pub name: String,
    /// Line (1-based).
    pub line: u32,
    /// What is done with it.
    pub kind: RefKind,
    /// The expression before the name, separators dropped (`self`, `os.path`, `Vec`), if
    /// any; cut to [`MAX_RECEIVER_BYTES`].
    pub receiver: Option<String>,
}

/// One name an import binds: `from a.b import c as d` binds `d` to `c` of module `a.b`;
/// `import a.b` binds `a.b` (no name); `import * as ns from "./x"` binds `ns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// The module as written (`a.b`, `.util`, `./util`, `crate::a::b`, `github.com/x/y`).
    pub module: String,
    /// The imported name (`*` for all of them); `None` when the module itself is bound.
    pub name: Option<String>,
    /// The local name it is bound to.
    pub local: String,
    /// Line (1-based).
    pub line: u32,
}

impl Import {
    /// The import as a use of the local name it binds, resolved as any use of it would be.
    pub fn to_reference(&self) -> Reference {
        Reference {
            name: self.local.clone(),
            line: self.line,
            kind: RefKind::Import,
            receiver: None,
        }
    }
}

/// A file's references, imports and declared types.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileRefs {
    /// References in source order.
    pub refs: Vec<Reference>,
    /// Imports in source order.
    pub imports: Vec<Import>,
    /// Names declared with a type, in source order.
    pub bindings: Vec<Binding>,
}

/// Receivers are kept up to this many bytes (a long chained expression says little more).
pub const MAX_RECEIVER_BYTES: usize = 80;
/// References kept per file at most (a generated file of a million calls is not a graph).
const MAX_REFS: usize = 50_000;

/// Fields of a call node that hold what is called, tried in order.
const CALLEE_FIELDS: &[&str] = &["function", "constructor", "macro", "type"];
/// Fields of a call node that hold the called name itself when the receiver is apart
/// (Java's `method_invocation`, Ruby's `call`, PHP's member calls).
const NAME_FIELDS: &[&str] = &["name", "method"];
/// Fields holding that receiver.
const RECEIVER_FIELDS: &[&str] = &["object", "receiver", "scope"];
/// Fields of a member expression holding the member's name.
const MEMBER_FIELDS: &[&str] = &["property", "attribute", "field", "name"];

fn is_identifier(kind: &str) -> bool {
    kind.ends_with("identifier") && !kind.starts_with("scoped") && !kind.starts_with("qualified")
        || matches!(kind, "name" | "constant" | "word")
}

/// Everything `root` (parsed as `language`) refers to.
pub fn extract(language: &str, root: Node<'_>, src: &str) -> FileRefs {
    let mut out = FileRefs::default();
    let grammar = kinds::grammar(language, &root.language());
    // One cursor, depth first in source order: each node is reached by one step from its
    // parent or its previous sibling, with no stack of nodes and no cursor reset per node.
    let mut cursor = root.walk();
    'walk: loop {
        let node = cursor.node();
        if out.refs.len() >= MAX_REFS {
            break;
        }
        if node.is_named() {
            match grammar.visit(node) {
                Visit::Call => {
                    if let Some((name, receiver)) = callee(&grammar, node, src) {
                        let ref_kind = if node.kind() == "macro_invocation" {
                            RefKind::Macro
                        } else {
                            RefKind::Call
                        };
                        out.refs.push(reference(name, node, ref_kind, receiver));
                    }
                }
                Visit::Tokens if language == "rust" => {
                    if !in_template(node, src) {
                        macro_calls(node, src, &mut out.refs);
                    }
                }
                Visit::Declaration => {
                    imports(language, node, src, &mut out.imports);
                    inherits(&grammar, language, node, src, &mut out.refs);
                    bindings(&grammar, language, node, src, &mut out.bindings);
                }
                Visit::Tokens | Visit::Pass => {}
            }
            if cursor.goto_first_child() {
                continue;
            }
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    out
}

/// Calls written in a Rust macro's arguments (`tri!(self.f(x))`, `assert_eq!(g(1), 2)`):
/// tree-sitter keeps them as tokens, so an identifier followed by a parenthesised group is
/// a call, its receiver what stands before a `.` or `::` (an identifier, or the text of
/// another token: a receiver of unknown type).
fn macro_calls(node: Node<'_>, src: &str, out: &mut Vec<Reference>) {
    let mut cursor = node.walk();
    let tokens: Vec<Node<'_>> = node.children(&mut cursor).collect();
    for (i, token) in tokens.iter().enumerate() {
        let called = tokens.get(i + 1).is_some_and(|next| {
            next.kind() == "token_tree" && node_text(*next, src).starts_with('(')
        });
        if token.kind() != "identifier" || !called {
            continue;
        }
        let separator = i.checked_sub(1).map(|j| tokens[j]);
        let receiver = match separator {
            Some(sep) if matches!(sep.kind(), "." | "::") => {
                i.checked_sub(2).map(|end| chain_text(&tokens, end, src))
            }
            _ => None,
        };
        out.push(reference(
            node_text(*token, src),
            *token,
            RefKind::Call,
            receiver,
        ));
    }
}

/// The text of the expression chain in `tokens` ending at `end`, as a receiver written
/// outside a macro reads: `a.b(x).c` in `a.b(x).c.f(..)`, `Foo::<T>::new()`, `self.attrs`.
fn chain_text<'s>(tokens: &[Node<'_>], end: usize, src: &'s str) -> &'s str {
    let is_group =
        |t: &Node<'_>| t.kind() == "token_tree" && node_text(*t, src).starts_with(['(', '[']);
    let is_name = |t: &Node<'_>| matches!(t.kind(), "identifier" | "self" | "super" | "crate");
    let mut start = end;
    loop {
        // The element ending at `start`: a name, a call or index (`f(x)`, `v[0]`), or a
        // type's arguments (`Foo::<T>`).
        if is_group(&tokens[start]) && start >= 1 && is_name(&tokens[start - 1]) {
            start -= 1;
        } else if tokens[start].kind() == ">" {
            start = before_type_arguments(tokens, start);
        }
        let continues = start >= 2
            && matches!(tokens[start - 1].kind(), "." | "::")
            && (is_name(&tokens[start - 2])
                || is_group(&tokens[start - 2])
                || tokens[start - 2].kind() == ">");
        if !continues {
            break;
        }
        start -= 2;
    }
    src.get(tokens[start].start_byte()..tokens[end].end_byte())
        .unwrap_or("")
}

/// The token naming a type whose arguments end at `at` (`Foo::<T>::new`: `Foo`), else `at`.
fn before_type_arguments(tokens: &[Node<'_>], at: usize) -> usize {
    if tokens[at].kind() != ">" {
        return at;
    }
    let mut depth = 0usize;
    for j in (0..=at).rev() {
        match tokens[j].kind() {
            ">" => depth += 1,
            "<" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    // `Foo::<T>` or `Foo<T>`.
                    let name = if j >= 2 && tokens[j - 1].kind() == "::" {
                        j - 2
                    } else {
                        j.saturating_sub(1)
                    };
                    return name;
                }
            }
            _ => {}
        }
    }
    at
}

/// Whether a token tree is in a code template (`quote! { .. }`): code it writes, not calls.
fn in_template(node: Node<'_>, src: &str) -> bool {
    let mut up = node.parent();
    while let Some(n) = up {
        if n.kind() == "macro_invocation" {
            let name = n
                .child_by_field_name("macro")
                .map_or("", |m| node_text(m, src));
            let name = name.rsplit("::").next().unwrap_or(name);
            return name.starts_with("quote") || name == "parse_quote";
        }
        up = n.parent();
    }
    false
}

fn reference(name: &str, node: Node<'_>, kind: RefKind, receiver: Option<&str>) -> Reference {
    Reference {
        name: name.to_string(),
        line: node.start_position().row as u32 + 1,
        kind,
        receiver: receiver.map(cut_receiver).filter(|r| !r.is_empty()),
    }
}

/// The receiver without its trailing separator and outer whitespace, cut to its last
/// [`MAX_RECEIVER_BYTES`].
pub(super) fn cut_receiver(receiver: &str) -> String {
    let trimmed = receiver
        .trim()
        .trim_end_matches(['.', ':', '?', '!', '&'])
        .trim_end_matches("->")
        .trim();
    let mut start = trimmed.len().saturating_sub(MAX_RECEIVER_BYTES);
    while !trimmed.is_char_boundary(start) {
        start += 1;
    }
    trimmed[start..].to_string()
}

/// The called name and the receiver written before it.
pub(super) fn callee<'s>(
    g: &Grammar,
    call: Node<'_>,
    src: &'s str,
) -> Option<(&'s str, Option<&'s str>)> {
    for field in NAME_FIELDS {
        if let Some(name) = g.field(call, field)
            && is_identifier(name.kind())
            && g.field(call, "function").is_none()
        {
            let receiver = RECEIVER_FIELDS
                .iter()
                .find_map(|f| g.field(call, f))
                .map(|r| node_text(r, src));
            return Some((node_text(name, src), receiver));
        }
    }
    let function = CALLEE_FIELDS
        .iter()
        .find_map(|f| g.field(call, f))
        .or_else(|| call.named_child(0))?;
    named(g, function, src, 0)
}

/// The last identifier of an expression naming something, and the text before it.
fn named<'s>(
    g: &Grammar,
    node: Node<'_>,
    src: &'s str,
    depth: usize,
) -> Option<(&'s str, Option<&'s str>)> {
    if depth > 4 {
        return None;
    }
    let kind = node.kind();
    if is_identifier(kind) {
        return Some((node_text(node, src), None));
    }
    if kind.starts_with("generic") {
        let inner = g
            .field(node, "function")
            .or_else(|| g.field(node, "type"))
            .or_else(|| node.named_child(0))?;
        return named(g, inner, src, depth + 1);
    }
    let member = MEMBER_FIELDS
        .iter()
        .find_map(|f| g.field(node, f))
        .or_else(|| {
            // Kotlin's `navigation_expression`, Swift's: the last named child.
            let count = node.named_child_count();
            let last = node.named_child(u32::try_from(count.checked_sub(1)?).ok()?)?;
            (count > 1).then_some(last)
        })?;
    let (name, _) = named(g, member, src, depth + 1)?;
    let before = src.get(node.start_byte()..member.start_byte())?;
    Some((name, Some(before)))
}

/// The names an import statement binds.
fn imports(language: &str, node: Node<'_>, src: &str, out: &mut Vec<Import>) {
    let line = node.start_position().row as u32 + 1;
    let text = |n: Node<'_>| node_text(n, src).to_string();
    let mut push = |module: String, name: Option<String>, local: String| {
        out.push(Import {
            module,
            name,
            local,
            line,
        })
    };
    match (language, node.kind()) {
        ("python", "import_statement") => {
            let mut cursor = node.walk();
            for child in node.children_by_field_name("name", &mut cursor) {
                match child.kind() {
                    "aliased_import" => {
                        let (Some(module), Some(alias)) = (
                            child.child_by_field_name("name"),
                            child.child_by_field_name("alias"),
                        ) else {
                            continue;
                        };
                        push(text(module), None, text(alias));
                    }
                    _ => push(text(child), None, text(child)),
                }
            }
        }
        ("python", "import_from_statement") => {
            let Some(module) = node.child_by_field_name("module_name") else {
                return;
            };
            let module = text(module);
            let mut cursor = node.walk();
            let mut any = false;
            for child in node.children_by_field_name("name", &mut cursor) {
                any = true;
                let (name, local) = match child.kind() {
                    "aliased_import" => (
                        child.child_by_field_name("name").map(text),
                        child.child_by_field_name("alias").map(text),
                    ),
                    _ => (Some(text(child)), Some(text(child))),
                };
                if let (Some(name), Some(local)) = (name, local) {
                    push(module.clone(), Some(name), local);
                }
            }
            let mut cursor = node.walk();
            let wildcard = node
                .named_children(&mut cursor)
                .any(|c| c.kind() == "wildcard_import");
            if wildcard || !any {
                push(module, Some("*".into()), "*".into());
            }
        }
        ("javascript" | "typescript" | "tsx", "import_statement" | "export_statement") => {
            let Some(source) = node.child_by_field_name("source") else {
                return;
            };
            let module = text(source).trim_matches(['"', '\'', '`']).to_string();
            let mut cursor = node.walk();
            let mut clauses = 0;
            for child in node.named_children(&mut cursor) {
                if matches!(
                    child.kind(),
                    "import_clause" | "export_clause" | "namespace_export" | "identifier"
                ) {
                    clauses += 1;
                }
                js_clause(child, src, &module, &mut push);
            }
            // `export * from "./x"`: everything `./x` exports.
            if node.kind() == "export_statement" && clauses == 0 {
                push(module, Some("*".into()), "*".into());
            }
        }
        ("rust", "use_declaration") => {
            if let Some(argument) = node.child_by_field_name("argument") {
                rust_use(argument, src, "", &mut push);
            }
        }
        ("go", "import_spec") => {
            let Some(path) = node.child_by_field_name("path") else {
                return;
            };
            let module = text(path).trim_matches(['"', '`']).to_string();
            let local = node
                .child_by_field_name("name")
                .map(text)
                .unwrap_or_else(|| module.rsplit('/').next().unwrap_or_default().to_string());
            push(module, None, local);
        }
        _ => {}
    }
}

/// The bindings of one part of a JS/TS import or re-export.
fn js_clause(
    node: Node<'_>,
    src: &str,
    module: &str,
    push: &mut impl FnMut(String, Option<String>, String),
) {
    let text = |n: Node<'_>| node_text(n, src).to_string();
    match node.kind() {
        "import_clause" => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                js_clause(child, src, module, push);
            }
        }
        // `import x from`: the module's default export, bound to `x`.
        "identifier" => push(module.into(), Some("default".into()), text(node)),
        "namespace_import" | "namespace_export" => {
            let mut cursor = node.walk();
            let local = node
                .named_children(&mut cursor)
                .last()
                .map(text)
                .unwrap_or_else(|| "*".into());
            push(module.into(), None, local);
        }
        "named_imports" | "export_clause" => {
            let mut cursor = node.walk();
            for spec in node.named_children(&mut cursor) {
                let Some(name) = spec.child_by_field_name("name") else {
                    continue;
                };
                let local = spec.child_by_field_name("alias").unwrap_or(name);
                push(module.into(), Some(text(name)), text(local));
            }
        }
        _ => {}
    }
}

/// The bindings of a Rust `use` tree under `prefix`.
fn rust_use(
    node: Node<'_>,
    src: &str,
    prefix: &str,
    push: &mut impl FnMut(String, Option<String>, String),
) {
    let join = |a: &str, b: &str| match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}::{b}"),
    };
    let text = |n: Node<'_>| node_text(n, src).to_string();
    match node.kind() {
        "scoped_identifier" => {
            let path = node
                .child_by_field_name("path")
                .map(text)
                .unwrap_or_default();
            if let Some(name) = node.child_by_field_name("name") {
                let name = text(name);
                push(join(prefix, &path), Some(name.clone()), name);
            }
        }
        "identifier" | "crate" | "super" | "self" => {
            let name = text(node);
            push(prefix.to_string(), Some(name.clone()), name);
        }
        "use_as_clause" => {
            let (Some(path), Some(alias)) = (
                node.child_by_field_name("path"),
                node.child_by_field_name("alias"),
            ) else {
                return;
            };
            let full = join(prefix, &text(path));
            let (module, name) = full.rsplit_once("::").unwrap_or(("", &full));
            push(module.to_string(), Some(name.to_string()), text(alias));
        }
        "use_wildcard" => {
            let mut cursor = node.walk();
            let path = node.named_children(&mut cursor).next().map(text);
            push(
                join(prefix, &path.unwrap_or_default()),
                Some("*".into()),
                "*".into(),
            );
        }
        "scoped_use_list" => {
            let path = node
                .child_by_field_name("path")
                .map(text)
                .unwrap_or_default();
            let prefix = join(prefix, &path);
            if let Some(list) = node.child_by_field_name("list") {
                rust_use(list, src, &prefix, push);
            }
        }
        "use_list" => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                rust_use(child, src, prefix, push);
            }
        }
        _ => {}
    }
}

/// Base classes, extended interfaces and implemented traits named at `node`.
fn inherits(g: &Grammar, language: &str, node: Node<'_>, src: &str, out: &mut Vec<Reference>) {
    let bases: Vec<Node<'_>> = match (language, node.kind()) {
        ("python", "class_definition") => g
            .field(node, "superclasses")
            .map(|list| {
                let mut cursor = list.walk();
                list.named_children(&mut cursor).collect()
            })
            .unwrap_or_default(),
        ("javascript" | "typescript" | "tsx", "extends_clause" | "implements_clause")
        | ("typescript" | "tsx", "extends_type_clause")
        | ("java", "superclass" | "super_interfaces" | "extends_interfaces")
        | ("csharp", "base_list")
        | ("kotlin", "delegation_specifier") => {
            let mut cursor = node.walk();
            node.named_children(&mut cursor).collect()
        }
        ("javascript", "class_heritage") => {
            let mut cursor = node.walk();
            node.named_children(&mut cursor).collect()
        }
        ("rust", "impl_item") => g.field(node, "trait").into_iter().collect(),
        _ => return,
    };
    for base in bases {
        // `type_list` and friends hold the names one level down.
        let names: Vec<Node<'_>> = if base.kind().ends_with("list") {
            let mut cursor = base.walk();
            base.named_children(&mut cursor).collect()
        } else {
            vec![base]
        };
        for name in names {
            // Keyword arguments (`metaclass=...`) and type arguments name no base.
            if name.kind().starts_with("keyword") || name.kind().ends_with("arguments") {
                continue;
            }
            // Python's `Mapping[str, Resource]`: the generic is the base, not its arguments.
            let name = match name.kind() {
                "subscript" => g.field(name, "value").unwrap_or(name),
                _ => name,
            };
            if let Some((name, receiver)) = named(g, name, src, 0) {
                out.push(reference(name, node, RefKind::Inherit, receiver));
            }
        }
    }
}
