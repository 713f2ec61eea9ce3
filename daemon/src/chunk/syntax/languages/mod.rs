//! The language table: which tree-sitter nodes define symbols in each language, how their
//! names are found, where a container's members are, and what wraps or precedes them.
//!
//! One file per family of languages; each lists its [`Spec`]s in a `SPECS` slice, and
//! [`spec`] finds a language's among them.

mod apps;
mod config;
mod functional;
mod mainstream;
mod scripts;

use tree_sitter::Language;

/// How an item's name is found.
#[derive(Clone, Copy)]
pub(super) enum NameRule {
    /// The `name` field (or another field).
    Field(&'static str),
    /// A path of steps from the item, each a field name or else the kind of a named child;
    /// the name is the end node's text up to its parameters, without quotes.
    Path(&'static [&'static str]),
    /// The field's text, or the given name when the field is absent (Kotlin's unnamed
    /// `companion object`, Swift's `init`).
    FieldOr(&'static str, &'static str),
    /// The whole text at a path, whitespace collapsed (a CSS selector list).
    Text(&'static [&'static str]),
    /// An HCL block (`resource "aws_s3_bucket" "logs" {}`): the last label, qualified by the
    /// others (or the block type when it has none), the kind from the block type.
    HclBlock,
    /// A name field whose text is qualified by `.` or `:` (Lua `function M.setup`):
    /// the last part is the name, the rest its scope.
    Dotted(&'static str),
    /// The name at a path, the kind from the declaration's keyword (`class`, `interface`,
    /// `struct`, `extension`, ...) when the item's kind is only a default.
    Keyword(&'static [&'static str]),
    /// Rust `impl [Trait for] Type`: the type, without generics.
    RustImpl,
    /// C/C++ function: the identifier inside the declarator chain.
    CDeclarator,
    /// Go method: the name, qualified by the receiver's type.
    GoMethod,
    /// Go `type X struct{...}`: the first type spec.
    GoType,
    /// JS/TS `const f = () => ...`: the declarator, only when its value is a function, a
    /// class or an object literal (a container of its methods).
    JsDeclarator,
    /// JS/TS `key: () => ...` in an object literal: the key, only when its value is a
    /// function or another object literal.
    JsPair,
    /// JS/TS `app.use = function use() {..}`, `Foo.prototype.bar = function () {..}`: an
    /// assignment of a function to a property, named by the property, qualified by the
    /// object (without `.prototype`).
    JsAssigned,
    /// Elixir `defmodule`/`def`/`defmacro` calls: the kind from the macro, the name from its
    /// first argument; other calls are not definitions.
    ElixirCall,
    /// Zig `const X = struct {...}`: a definition only when the value is a container type.
    ZigContainer,
    /// Lua `M.f = function(...)` and R `f <- function(...)`: an assignment whose value is a
    /// function; the name is the left side (qualified names are split like [`Dotted`]).
    AssignedFunction {
        left: &'static str,
        right: &'static str,
        function: &'static str,
    },
}

/// A kind of node that defines a symbol.
pub(super) struct Item {
    pub(super) node: &'static str,
    pub(super) kind: &'static str,
    pub(super) name: NameRule,
    pub(super) container: bool,
}

pub(super) const fn item(node: &'static str, kind: &'static str, container: bool) -> Item {
    Item {
        node,
        kind,
        name: NameRule::Field("name"),
        container,
    }
}

pub(super) const fn item_with(
    node: &'static str,
    kind: &'static str,
    name: NameRule,
    container: bool,
) -> Item {
    Item {
        node,
        kind,
        name,
        container,
    }
}

/// How one language is chunked.
pub(super) struct Spec {
    pub(super) name: &'static str,
    pub(super) language: fn() -> Language,
    pub(super) separator: &'static str,
    pub(super) items: &'static [Item],
    /// Nodes wrapping a definition (decorators, `export`, `template<>`), with the field that
    /// holds it (`None`: the last named child).
    pub(super) wrappers: &'static [(&'static str, Option<&'static str>)],
    /// Nodes that attach to the definition after them (comments, attributes).
    pub(super) leading: &'static [&'static str],
    /// Where a container's members are when it has no `body` field: field names, or else
    /// kinds of named children, tried in order (`class_body`, `do_block`).
    pub(super) bodies: &'static [&'static str],
    /// Nodes whose children are walked as if they stood in their place (Haskell's
    /// `declarations`, YAML's `block_mapping`).
    pub(super) transparent: &'static [&'static str],
    /// Whether consecutive definitions of one name are clauses of one function (Haskell,
    /// Elixir), recorded as one symbol.
    pub(super) clauses: bool,
    /// Items (functions) whose bodies' own definitions are recorded as symbols too: a
    /// nested function, or a type and its `impl` declared inside a function. A reference
    /// there is enclosed by the nested definition, as a compiler sees it. The item is never
    /// split at them: its lines stay one chunk, as a function's do.
    pub(super) nests: &'static [&'static str],
    /// Whether the functions passed to a call written as a statement are walked for
    /// definitions (JavaScript's `describe("..", () => { function helper() {..} })`): their
    /// own are symbols, never split from the chunk around them.
    pub(super) callbacks: bool,
}

impl Spec {
    /// A spec with no wrappers, bodies or transparent nodes, and `comment` leading.
    pub(super) const fn new(
        name: &'static str,
        language: fn() -> Language,
        separator: &'static str,
        items: &'static [Item],
    ) -> Spec {
        Spec {
            name,
            language,
            separator,
            items,
            wrappers: &[],
            leading: &["comment"],
            bodies: &[],
            transparent: &[],
            clauses: false,
            nests: &[],
            callbacks: false,
        }
    }
}

/// The spec of a language name the index records, if it is chunked by syntax.
pub(super) fn spec(language: &str) -> Option<&'static Spec> {
    all().find(|spec| spec.name == language)
}

/// Every language chunked by syntax.
pub(super) fn all() -> impl Iterator<Item = &'static Spec> {
    [
        mainstream::SPECS,
        apps::SPECS,
        functional::SPECS,
        scripts::SPECS,
        config::SPECS,
    ]
    .into_iter()
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grammar_loads_and_names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for spec in all() {
            assert!(seen.insert(spec.name), "{} listed twice", spec.name);
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&(spec.language)())
                .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            assert!(
                crate::files::lang::resolve_language(spec.name).is_some(),
                "{} has no file extensions",
                spec.name
            );
        }
    }
}
