//! What the references' walk ([`super::refs::extract`]) does at each kind of node, looked up
//! by kind id: a node's kind as a string costs a C-string length and a UTF-8 check per call,
//! and the walk asks it of every named node of every file.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

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

/// Each kind id's [`Visit`] in `grammar`, that of `language` (one grammar per language
/// name), made once per thread and language.
pub fn visits(language: &str, grammar: &Language) -> Rc<[Visit]> {
    thread_local! {
        static TABLES: RefCell<HashMap<String, Rc<[Visit]>>> = RefCell::new(HashMap::new());
    }
    TABLES.with(|tables| {
        if let Some(table) = tables.borrow().get(language) {
            return table.clone();
        }
        let table: Rc<[Visit]> = (0..grammar.node_kind_count())
            .map(|id| {
                u16::try_from(id)
                    .ok()
                    .and_then(|id| grammar.node_kind_for_id(id))
                    .map_or(Visit::Pass, Visit::of)
            })
            .collect();
        tables
            .borrow_mut()
            .insert(language.to_string(), table.clone());
        table
    })
}

/// `node`'s [`Visit`] in `table` (an id past the table, which a grammar never makes: by name).
pub fn visit(table: &[Visit], node: Node<'_>) -> Visit {
    table
        .get(usize::from(node.kind_id()))
        .copied()
        .unwrap_or_else(|| Visit::of(node.kind()))
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
            let table = visits(spec.name, &grammar);
            assert_eq!(table.len(), grammar.node_kind_count(), "{}", spec.name);
            for (id, visit) in table.iter().enumerate() {
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
}
