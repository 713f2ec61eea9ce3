//! Declared types of names, as written: `x: Foo`, `x = Foo(...)`, `let x = Foo::new()`,
//! `const x = new Foo()`, `self.x: Foo`, `this.x = new Foo()`, `x := &Foo{}`, `Foo x`. The
//! graph types a call's receiver by the nearest of these above it, so `x.close()` reaches
//! `Foo.close` and not every `close`. Only what is written down is recorded: no inference.

use tree_sitter::Node;

use super::builder::node_text;
use super::kinds::Grammar;
use super::refs::{callee, cut_receiver};

/// A name and the type it was declared with (or constructed as).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The variable, parameter or field as a receiver is written (`conn`, `self.conn`,
    /// `this.conn`).
    pub name: String,
    /// The type's bare name (`Connection`), `=name` when the value is another name's
    /// (`self.conn = conn`), `=recv.f()` / `=f()` when it is what a call returns and
    /// `=a.b` an attribute's value (Python: typed by the callee's return annotation, the
    /// attribute's declaration; Rust: by the callee's written return type), or empty for a
    /// Rust local whose type is not written.
    pub type_name: String,
    /// Line (1-based).
    pub line: u32,
}

/// Generic wrappers whose argument is the type meant (`Optional[Foo]`, `Arc<Foo>`).
const WRAPPERS: &[&str] = &[
    "Optional",
    "Union",
    "List",
    "Dict",
    "Set",
    "Tuple",
    "Type",
    "Sequence",
    "Iterable",
    "Iterator",
    "Callable",
    "Any",
    "Awaitable",
    "ClassVar",
    "Final",
    "Annotated",
    "Mapping",
    "Vec",
    "Box",
    "Option",
    "Rc",
    "Arc",
    "RefCell",
    "Cell",
    "Mutex",
    "RwLock",
    "Result",
    "Promise",
    "Array",
    "Readonly",
    "Partial",
    "Record",
    "Cow",
];

/// Whether `name` is spelled as a type is: a capital first letter after any leading
/// underscores or dollar signs (`Pool`, Python's private `_DNSCacheTable`, TypeScript's
/// `$ZodType`).
pub(crate) fn capitalised(name: &str) -> bool {
    name.trim_start_matches(['_', '$'])
        .chars()
        .next()
        .is_some_and(char::is_uppercase)
}

/// Marks a type written as a field's declaration (`self.x: Base`, a TypeScript or Java
/// class field): the field has that type whatever values it is given, as a type checker
/// reads it. Bindings without it are typed by a value (`self.x = Sub()`).
pub const DECLARED: char = ':';

/// The type a type expression names: its first identifier that is not a wrapper (and, but
/// in Go, starts with a capital letter).
fn type_name(language: &str, node: Node<'_>, src: &str) -> Option<String> {
    let mut stack = vec![node];
    let mut cursor = node.walk();
    while let Some(n) = stack.pop() {
        let kind = n.kind();
        // Python's quoted annotation, a type named before it is defined (`"Application"`,
        // `"Optional[Application]"`): the first type-like word inside.
        if kind == "string" && language == "python" {
            let text = node_text(n, src).trim_matches(|c| c == '"' || c == '\'');
            return text
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .find(|w| capitalised(w) && !WRAPPERS.contains(w))
                .map(str::to_string);
        }
        if kind == "type_identifier" || kind == "identifier" || kind == "constant" {
            let text = node_text(n, src);
            let capital = capitalised(text);
            if (capital || language == "go" && kind == "type_identifier")
                && !WRAPPERS.contains(&text)
            {
                return Some(text.to_string());
            }
        }
        let start = stack.len();
        stack.extend(n.named_children(&mut cursor));
        stack[start..].reverse();
    }
    None
}

/// The type a value constructs: `Foo(...)`, `new Foo()`, `Foo::new()`, `Foo { .. }`,
/// `&Foo{}`, `mod.Foo(...)`.
fn constructed(g: &Grammar, language: &str, value: Node<'_>, src: &str) -> Option<String> {
    match value.kind() {
        "call" | "call_expression" | "new_expression" | "object_creation_expression" => {
            let (name, receiver) = callee(g, value, src)?;
            if capitalised(name) {
                return Some(name.to_string());
            }
            // `Foo::new()`, `Foo.create()`: the receiver names the type.
            let last = receiver?
                .trim_end_matches([':', '.'])
                .rsplit([':', '.'])
                .next()?
                .to_string();
            capitalised(&last).then_some(last)
        }
        "struct_expression" | "composite_literal" => {
            let ty = g.field(value, "name").or_else(|| g.field(value, "type"))?;
            type_name(language, ty, src)
        }
        "unary_expression" | "await" | "await_expression" | "parenthesized_expression" => {
            constructed(g, language, value.named_child(0)?, src)
        }
        _ => None,
    }
}

/// A value typed where it is used: what a call returns (Python `=self._start()`, `=make()`,
/// TypeScript `=this.make()`), awaited or not, or (Python) an attribute's value
/// (`=self._payload_writer`, `=request.writer`). Each grammar's kinds are its own (`call`,
/// `await`, `attribute` are Python's; `call_expression`, `await_expression` TypeScript's).
fn used_value(g: &Grammar, value: Node<'_>, src: &str) -> Option<String> {
    match value.kind() {
        "await" | "await_expression" | "parenthesized_expression" => {
            used_value(g, value.named_child(0)?, src)
        }
        "call" | "call_expression" => {
            let (name, receiver) = callee(g, value, src)?;
            Some(match receiver.map(cut_receiver).filter(|r| !r.is_empty()) {
                Some(receiver) if receiver.len() <= 80 => format!("={receiver}.{name}()"),
                Some(_) => return None,
                None => format!("={name}()"),
            })
        }
        "attribute" => receiver_name(value, src).map(|v| format!("={v}")),
        _ => None,
    }
}

/// A Rust value that is what a call returns, as the call is written with its arguments
/// dropped (`=self.make()`, `=Config::load()`, `=parse()`), through `.await`; through `?`,
/// `.unwrap()` or `.expect(..)` marked `?` (`=self.get()?`: what is inside the `Option` or
/// `Result` it returns). Typed by the callee's written return type where it is used.
fn rust_call(g: &Grammar, value: Node<'_>, src: &str) -> Option<String> {
    let (call, unwrapped) = rust_unwrapped(g, value, src, false)?;
    let function = g.field(call, "function")?;
    let text = node_text(function, src);
    let plain = text.len() <= 120 && !text.contains(['\n', '{', '|', '!', '"']);
    let mark = if unwrapped { "?" } else { "" };
    plain.then(|| format!("={text}(){mark}"))
}

/// The call a Rust value is, through `?`, `.await`, parentheses, `.unwrap()` and
/// `.expect(..)`, and whether it was unwrapped on the way.
fn rust_unwrapped<'t>(
    g: &Grammar,
    value: Node<'t>,
    src: &str,
    unwrapped: bool,
) -> Option<(Node<'t>, bool)> {
    match value.kind() {
        "try_expression" => rust_unwrapped(g, value.named_child(0)?, src, true),
        "await_expression" | "parenthesized_expression" => {
            rust_unwrapped(g, value.named_child(0)?, src, unwrapped)
        }
        "call_expression" => match method_call(g, value, src) {
            Some((receiver, "unwrap" | "expect", _)) => rust_unwrapped(g, receiver, src, true),
            _ => Some((value, unwrapped)),
        },
        _ => None,
    }
}

/// A Rust method call's receiver and method, and whether it passes arguments
/// (`xs.iter()`: `xs`, `iter`, false).
fn method_call<'t, 's>(
    g: &Grammar,
    call: Node<'t>,
    src: &'s str,
) -> Option<(Node<'t>, &'s str, bool)> {
    let function = g.field(call, "function")?;
    if function.kind() != "field_expression" {
        return None;
    }
    let method = node_text(g.field(function, "field")?, src);
    let arguments = g.field(call, "arguments")?.named_child_count() > 0;
    Some((g.field(function, "value")?, method, arguments))
}

/// The collection a loop iterates, as a name: `xs`, `self.xs`; Rust's `&xs`, `&mut xs`,
/// `xs.iter()`, `xs.iter_mut()`, `xs.into_iter()`.
fn iterated<'t>(g: &Grammar, value: Node<'t>, src: &str) -> Option<Node<'t>> {
    match value.kind() {
        "identifier" | "attribute" | "field_expression" => Some(value),
        "reference_expression" => iterated(g, g.field(value, "value")?, src),
        "call_expression" => match method_call(g, value, src)? {
            (receiver, "iter" | "iter_mut" | "into_iter", false) => iterated(g, receiver, src),
            _ => None,
        },
        _ => None,
    }
}

/// The receiver spelling of a declared name (`self.x`, `this.x`, `x`), if it is one.
fn receiver_name(node: Node<'_>, src: &str) -> Option<String> {
    let text = node_text(node, src).trim();
    let simple = text
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '$'));
    (simple && !text.is_empty() && text.len() <= 80).then(|| text.to_string())
}

/// The bindings declared at `node`, if it declares any.
pub fn bindings(g: &Grammar, language: &str, node: Node<'_>, src: &str, out: &mut Vec<Binding>) {
    let line = node.start_position().row as u32 + 1;
    let mut push = |name: Option<String>, type_name: Option<String>| {
        if let (Some(name), Some(type_name)) = (name, type_name) {
            out.push(Binding {
                name,
                type_name,
                line,
            });
        }
    };
    let field = |name: &'static str| g.field(node, name);
    match node.kind() {
        // Python `x: Foo = ...`, `self.x = Foo()`; JS/TS `this.x = new Foo()`.
        "assignment" | "assignment_expression" => {
            let Some(left) = field("left") else { return };
            let declared = field("type")
                .and_then(|t| type_name(language, t, src))
                .map(|t| format!("{DECLARED}{t}"));
            let made = field("right").and_then(|v| constructed(g, language, v, src));
            // `self.x = x`: the type of another name, looked up where it is used.
            let copied = field("right").and_then(|v| match v.kind() {
                "identifier" => Some(format!("={}", node_text(v, src))),
                _ if language == "python" => used_value(g, v, src),
                _ => None,
            });
            push(receiver_name(left, src), declared.or(made).or(copied));
        }
        // Python `def f(x: Foo)`, `x: Foo = None`.
        "typed_parameter" | "typed_default_parameter" => {
            let name = field("name").or_else(|| node.named_child(0));
            let ty = field("type").and_then(|t| type_name(language, t, src));
            push(name.and_then(|n| receiver_name(n, src)), ty);
        }
        // JS/TS `const x: Foo = ...`, `let x = new Foo()`; TS `const x = this.make()`,
        // typed by the callee's written return type where it is used.
        "variable_declarator" => {
            let declared = field("type").and_then(|t| type_name(language, t, src));
            let made = field("value").and_then(|v| constructed(g, language, v, src));
            let returned = field("value")
                .filter(|_| matches!(language, "typescript" | "tsx"))
                .and_then(|v| used_value(g, v, src));
            push(
                field("name").and_then(|n| receiver_name(n, src)),
                declared.or(made).or(returned),
            );
        }
        // TS `f(x: Foo)`, `constructor(private x: Foo)` (also `this.x`); class fields.
        "required_parameter" | "optional_parameter" | "public_field_definition" => {
            let name = field("pattern").or_else(|| field("name"));
            let ty = field("type").and_then(|t| type_name(language, t, src));
            let name = name.and_then(|n| receiver_name(n, src));
            let is_field = node.kind() == "public_field_definition"
                || (0..node.child_count())
                    .filter_map(|i| node.child(i))
                    .any(|c| c.kind() == "accessibility_modifier");
            if is_field && let (Some(name), Some(ty)) = (&name, &ty) {
                push(
                    Some(format!("this.{name}")),
                    Some(format!("{DECLARED}{ty}")),
                );
            }
            push(name, ty);
        }
        // Rust `let x: Foo = ...`, `let x = Foo::new()`; `fn f(x: &Foo)`. A local whose
        // type is not written is recorded with none (""): it shadows what came before.
        "let_declaration" | "parameter" => {
            let name = field("pattern").and_then(|n| receiver_name(n, src));
            let declared = field("type").and_then(|t| type_name(language, t, src));
            let made = field("value").and_then(|v| constructed(g, language, v, src));
            let returned = field("value").and_then(|v| rust_call(g, v, src));
            let untyped = (node.kind() == "let_declaration").then(String::new);
            push(name, declared.or(made).or(returned).or(untyped));
        }
        // Python `with Session() as s:`, `with self.pool as p:`, `except Error as e:`: the
        // alias is what the value constructs or holds (`__enter__` returning its object).
        "as_pattern" if language == "python" => {
            let (Some(value), Some(alias)) = (node.named_child(0), field("alias")) else {
                return;
            };
            let target = match alias.kind() {
                "as_pattern_target" => alias.named_child(0),
                _ => Some(alias),
            };
            let named = (value.kind() == "identifier" && capitalised(node_text(value, src)))
                .then(|| node_text(value, src).to_string());
            let ty = constructed(g, language, value, src)
                .or(named)
                .or_else(|| used_value(g, value, src));
            push(target.and_then(|t| receiver_name(t, src)), ty);
        }
        // Python `for x in xs:`, Rust `for x in xs` (`&xs`, `xs.iter()`): an element is
        // typed as its collection is, whose type is recorded by its element's (`list[Foo]`,
        // `Vec<Foo>`, `&[Foo]`: `Foo`), looked up where the loop is.
        "for_statement" | "for_expression" => {
            let (left, right) = match node.kind() {
                "for_statement" => (field("left"), field("right")),
                _ => (field("pattern"), field("value")),
            };
            let (Some(left), Some(right)) = (left, right) else {
                return;
            };
            if left.kind() == "identifier"
                && let Some(collection) =
                    iterated(g, right, src).and_then(|c| receiver_name(c, src))
            {
                push(receiver_name(left, src), Some(format!("={collection}")));
            }
        }
        // Go `x := &Foo{}`, `func f(x *Foo)`, `var x Foo`.
        "short_var_declaration" => {
            let (Some(left), Some(right)) = (field("left"), field("right")) else {
                return;
            };
            if let (Some(name), Some(value)) = (left.named_child(0), right.named_child(0)) {
                push(
                    receiver_name(name, src),
                    constructed(g, language, value, src),
                );
            }
        }
        "parameter_declaration" | "var_spec" => {
            let ty = field("type").and_then(|t| type_name(language, t, src));
            let mut cursor = node.walk();
            let names: Vec<Node<'_>> = node.children_by_field_name("name", &mut cursor).collect();
            for name in names {
                push(receiver_name(name, src), ty.clone());
            }
        }
        // Java/C# `Foo x = ...;`, `void f(Foo x)`.
        "local_variable_declaration" | "field_declaration" | "formal_parameter" => {
            let ty = field("type").and_then(|t| type_name(language, t, src));
            // Rust's `attrs: attr::Field` in a struct: read through `x.attrs` (`field_type`).
            if node.kind() == "formal_parameter" || language == "rust" {
                push(field("name").and_then(|n| receiver_name(n, src)), ty);
                return;
            }
            let mut cursor = node.walk();
            let declarators: Vec<Node<'_>> = node
                .children_by_field_name("declarator", &mut cursor)
                .collect();
            for d in declarators {
                let name = g.field(d, "name").and_then(|n| receiver_name(n, src));
                if node.kind() == "field_declaration"
                    && let (Some(name), Some(ty)) = (&name, &ty)
                {
                    push(
                        Some(format!("this.{name}")),
                        Some(format!("{DECLARED}{ty}")),
                    );
                }
                push(name, ty.clone());
            }
        }
        _ => {}
    }
}
