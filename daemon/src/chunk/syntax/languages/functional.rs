//! Functional languages: Haskell, Elixir, Erlang and OCaml.

use super::{Item, NameRule, Spec, item, item_with};

const HASKELL_ITEMS: &[Item] = &[
    item("function", "function", false),
    item("bind", "function", false),
    item("data_type", "type", false),
    item("newtype", "type", false),
    item("type_synonym", "type", false),
    item("type_family", "type", false),
    item("class", "class", true),
    item("instance", "instance", true),
];

const ELIXIR_ITEMS: &[Item] = &[item_with("call", "function", NameRule::ElixirCall, true)];

const ERLANG_ITEMS: &[Item] = &[
    item_with(
        "fun_decl",
        "function",
        NameRule::Path(&["clause", "name"]),
        false,
    ),
    item("record_decl", "record", false),
    item_with(
        "type_alias",
        "type",
        NameRule::Path(&["name", "name"]),
        false,
    ),
    item_with("opaque", "type", NameRule::Path(&["name", "name"]), false),
];

const OCAML_ITEMS: &[Item] = &[
    item_with(
        "value_definition",
        "function",
        NameRule::Path(&["let_binding", "pattern"]),
        false,
    ),
    item_with(
        "type_definition",
        "type",
        NameRule::Path(&["type_binding", "name"]),
        false,
    ),
    item_with(
        "module_binding",
        "module",
        NameRule::Path(&["module_name"]),
        true,
    ),
    item_with(
        "module_type_definition",
        "module type",
        NameRule::Path(&["module_type_name"]),
        true,
    ),
    item_with(
        "exception_definition",
        "exception",
        NameRule::Path(&["constructor_declaration", "constructor_name"]),
        false,
    ),
    item_with(
        "class_definition",
        "class",
        NameRule::Path(&["class_binding", "class_name"]),
        false,
    ),
    item_with(
        "external",
        "function",
        NameRule::Path(&["value_name"]),
        false,
    ),
    item_with(
        "value_specification",
        "function",
        NameRule::Path(&["value_name"]),
        false,
    ),
];

pub(super) static SPECS: &[Spec] = &[
    Spec {
        leading: &["comment", "haddock", "signature", "pragma"],
        bodies: &["declarations"],
        transparent: &["declarations"],
        clauses: true,
        ..Spec::new(
            "haskell",
            || tree_sitter_haskell::LANGUAGE.into(),
            ".",
            HASKELL_ITEMS,
        )
    },
    Spec {
        // `@doc`, `@spec` and other module attributes before a definition belong to it.
        leading: &["comment", "unary_operator"],
        bodies: &["do_block"],
        clauses: true,
        ..Spec::new(
            "elixir",
            || tree_sitter_elixir::LANGUAGE.into(),
            ".",
            ELIXIR_ITEMS,
        )
    },
    Spec {
        leading: &["comment", "spec"],
        ..Spec::new(
            "erlang",
            || tree_sitter_erlang::LANGUAGE.into(),
            ":",
            ERLANG_ITEMS,
        )
    },
    Spec {
        wrappers: &[("module_definition", None)],
        ..Spec::new(
            "ocaml",
            || tree_sitter_ocaml::LANGUAGE_OCAML.into(),
            ".",
            OCAML_ITEMS,
        )
    },
    Spec {
        wrappers: &[("module_definition", None)],
        ..Spec::new(
            "ocaml-interface",
            || tree_sitter_ocaml::LANGUAGE_OCAML_INTERFACE.into(),
            ".",
            OCAML_ITEMS,
        )
    },
];
