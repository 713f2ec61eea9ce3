//! Scripting and small systems languages: Lua, R, Julia and Zig.

use super::{Item, NameRule, Spec, item, item_with};

const LUA_ITEMS: &[Item] = &[
    item_with(
        "function_declaration",
        "function",
        NameRule::Dotted("name"),
        false,
    ),
    item_with(
        "assignment_statement",
        "function",
        NameRule::AssignedFunction {
            left: "variable_list",
            right: "expression_list",
            function: "function_definition",
        },
        false,
    ),
];

const R_ITEMS: &[Item] = &[item_with(
    "binary_operator",
    "function",
    NameRule::AssignedFunction {
        left: "lhs",
        right: "rhs",
        function: "function_definition",
    },
    false,
)];

const JULIA_ITEMS: &[Item] = &[
    item("module_definition", "module", true),
    item_with(
        "function_definition",
        "function",
        NameRule::Path(&["signature"]),
        false,
    ),
    item_with(
        "macro_definition",
        "macro",
        NameRule::Path(&["signature"]),
        false,
    ),
    item_with(
        "struct_definition",
        "struct",
        NameRule::Path(&["type_head"]),
        false,
    ),
    item_with(
        "abstract_definition",
        "type",
        NameRule::Path(&["type_head"]),
        false,
    ),
];

/// Zig's `test "name" {}` blocks are not definitions: their names are sentences that would
/// match queries about the code they test.
const ZIG_ITEMS: &[Item] = &[
    item("function_declaration", "function", false),
    item_with(
        "variable_declaration",
        "struct",
        NameRule::ZigContainer,
        true,
    ),
];

pub(super) static SPECS: &[Spec] = &[
    Spec {
        wrappers: &[("variable_declaration", None)],
        ..Spec::new("lua", || tree_sitter_lua::LANGUAGE.into(), ".", LUA_ITEMS)
    },
    Spec::new("r", || tree_sitter_r::LANGUAGE.into(), ".", R_ITEMS),
    Spec {
        leading: &["line_comment", "block_comment", "string_literal"],
        ..Spec::new(
            "julia",
            || tree_sitter_julia::LANGUAGE.into(),
            ".",
            JULIA_ITEMS,
        )
    },
    Spec {
        bodies: &[
            "struct_declaration",
            "enum_declaration",
            "union_declaration",
        ],
        ..Spec::new("zig", || tree_sitter_zig::LANGUAGE.into(), ".", ZIG_ITEMS)
    },
];
