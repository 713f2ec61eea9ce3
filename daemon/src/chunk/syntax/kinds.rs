//! What the references' walk ([`super::refs::extract`]) does at each kind of node, looked up
//! by kind id: a node's kind as a string costs a C-string length and a UTF-8 check per call,
//! and the walk asks it of every named node of every file. Fields by id likewise: a field
//! asked by name is looked for among every field name of the grammar, each compared in turn
//! (13% of the walk on sympy).

use std::cell::RefCell;
use std::collections::HashMap;
use std::num::NonZeroU16;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use tree_sitter::{Language, Node};

/// Nodes that call what their function part names.
pub const CALLS: &[&str] = &[
    "call",
    "call_expression",
    "method_invocation",
    "invocation_expression",
    "function_call_expression",
    "member_call_expression",
    "scoped_call_expression",
    "new_expression",
    "object_creation_expression",
    "macro_invocation",
];

/// Nodes that may import, name a base type or bind a name to a type, in some language
/// (`refs::imports`, `refs::inherits`, `bindings::bindings` decide by language).
const DECLARATIONS: &[&str] = &[
    // Imports.
    "import_statement",
    "import_from_statement",
    "export_statement",
    "use_declaration",
    "import_spec",
    // Bases.
    "class_definition",
    "extends_clause",
    "extends_type_clause",
    "implements_clause",
    "superclass",
    "super_interfaces",
    "extends_interfaces",
    "base_list",
    "delegation_specifier",
    "class_heritage",
    "impl_item",
    // Bindings.
    "assignment",
    "assignment_expression",
    "typed_parameter",
    "typed_default_parameter",
    "variable_declarator",
    "required_parameter",
    "optional_parameter",
    "public_field_definition",
    "let_declaration",
    "parameter",
    "short_var_declaration",
    "parameter_declaration",
    "var_spec",
    "local_variable_declaration",
    "field_declaration",
    "formal_parameter",
    "for_statement",
    "for_expression",
    "as_pattern",
];

/// What the walk does at a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// Nothing but descend.
    Pass,
    /// Read a call ([`CALLS`]).
    Call,
    /// Read a Rust macro's tokens (`token_tree`) for calls.
    Tokens,
    /// Read imports, bases and bindings ([`DECLARATIONS`]).
    Declaration,
}

impl Visit {
    fn of(kind: &str) -> Visit {
        if CALLS.contains(&kind) {
            Visit::Call
        } else if kind == "token_tree" {
            Visit::Tokens
        } else if DECLARATIONS.contains(&kind) {
            Visit::Declaration
        } else {
            Visit::Pass
        }
    }
}

/// What the walk reads of one grammar: each kind id's [`Visit`], and the ids of the fields it
/// asks nodes for (`Node::child_by_field_name` compares the name against every field name
/// of the grammar in turn, and the walk asks a few per call it reads).
pub struct Grammar {
    visits: Box<[Visit]>,
    language: Language,
    fields: RefCell<FxHashMap<&'static str, Option<NonZeroU16>>>,
}

impl Grammar {
    /// `node`'s [`Visit`] (an id past the table, which a grammar never makes: by name).
    pub fn visit(&self, node: Node<'_>) -> Visit {
        self.visits
            .get(usize::from(node.kind_id()))
            .copied()
            .unwrap_or_else(|| Visit::of(node.kind()))
    }

    /// `node`'s child in field `name`, as `Node::child_by_field_name` finds it. `node` must
    /// be of this grammar.
    pub fn field<'t>(&self, node: Node<'t>, name: &'static str) -> Option<Node<'t>> {
        let id = *self
            .fields
            .borrow_mut()
            .entry(name)
            .or_insert_with(|| self.language.field_id_for_name(name));
        node.child_by_field_id(id?.get())
    }
}

/// The [`Grammar`] of `language` (one grammar per language name), made once per thread and
/// language.
pub fn grammar(language: &str, grammar: &Language) -> Rc<Grammar> {
    thread_local! {
        static TABLES: RefCell<HashMap<String, Rc<Grammar>>> = RefCell::new(HashMap::new());
    }
    TABLES.with(|tables| {
        if let Some(table) = tables.borrow().get(language) {
            return table.clone();
        }
        let visits: Box<[Visit]> = (0..grammar.node_kind_count())
            .map(|id| {
                u16::try_from(id)
                    .ok()
                    .and_then(|id| grammar.node_kind_for_id(id))
                    .map_or(Visit::Pass, Visit::of)
            })
            .collect();
        let table = Rc::new(Grammar {
            visits,
            language: grammar.clone(),
            fields: RefCell::default(),
        });
        tables
            .borrow_mut()
            .insert(language.to_string(), table.clone());
        table
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::syntax::languages;

    #[test]
    fn every_listed_kind_is_a_node_of_some_grammar_and_tables_agree_with_names() {
        let mut seen: Vec<String> = Vec::new();
        for spec in languages::all() {
            let grammar = (spec.language)();
            let table = super::grammar(spec.name, &grammar);
            assert_eq!(
                table.visits.len(),
                grammar.node_kind_count(),
                "{}",
                spec.name
            );
            for (id, visit) in table.visits.iter().enumerate() {
                let name = grammar.node_kind_for_id(id as u16).unwrap_or_default();
                assert_eq!(*visit, Visit::of(name), "{} {name}", spec.name);
                seen.push(name.to_string());
            }
        }
        for kind in CALLS.iter().chain(DECLARATIONS).chain(&["token_tree"]) {
            assert!(seen.iter().any(|s| s == kind), "no grammar has `{kind}`");
        }
        assert_eq!(Visit::of("call"), Visit::Call);
        assert_eq!(Visit::of("import_from_statement"), Visit::Declaration);
        assert_eq!(Visit::of("identifier"), Visit::Pass);
    }

    #[test]
    fn fields_by_id_find_what_fields_by_name_find() {
        let sources = [
            (
                "python",
                "class A(B):\n    x: int = f(1)\n    def g(self, y: C):\n        self.z = D.e(y)\n",
            ),
            (
                "rust",
                "impl T for S { fn f(&self, x: Foo) { let y: Bar = Baz::new(); y.g(x); m!(a.b()); } }",
            ),
            (
                "typescript",
                "class A extends B { constructor(private x: C) { super(); this.y = new D(); x.f(); } }",
            ),
            ("go", "func (s *S) F(x *T) { y := &U{}; y.G(x) }"),
        ];
        let names = [
            "name",
            "function",
            "type",
            "object",
            "left",
            "right",
            "value",
            "pattern",
            "declarator",
            "method",
            "receiver",
            "scope",
            "property",
            "attribute",
            "field",
            "constructor",
            "macro",
            "arguments",
            "body",
            "no_such_field",
        ];
        for (language, source) in sources {
            let spec = languages::spec(language).expect("a language");
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&(spec.language)()).expect("grammar");
            let tree = parser.parse(source, None).expect("a tree");
            let grammar = super::grammar(language, &tree.root_node().language());
            let mut stack = vec![tree.root_node()];
            let mut compared = 0;
            while let Some(node) = stack.pop() {
                for name in names {
                    // Twice: the second answer comes from the cache.
                    for _ in 0..2 {
                        assert_eq!(
                            grammar.field(node, name),
                            node.child_by_field_name(name),
                            "{language}: {} . {name}",
                            node.kind()
                        );
                    }
                    compared += usize::from(node.child_by_field_name(name).is_some());
                }
                let mut cursor = node.walk();
                stack.extend(node.children(&mut cursor));
            }
            assert!(compared > 5, "{language}: only {compared} fields found");
        }
    }
}
