//! The first languages: Rust, Python, JavaScript, TypeScript, Go, Java, C, C++, C#, Ruby,
//! PHP and Bash.

use super::{Item, NameRule, Spec, item, item_with};

pub(super) const RUST_ITEMS: &[Item] = &[
    item("function_item", "function", false),
    item("function_signature_item", "function", false),
    item("struct_item", "struct", false),
    item("enum_item", "enum", false),
    item("union_item", "union", false),
    item("trait_item", "trait", true),
    item_with("impl_item", "impl", NameRule::RustImpl, true),
    item("mod_item", "module", true),
    item("type_item", "type", false),
    item("const_item", "const", false),
    item("static_item", "static", false),
    item("macro_definition", "macro", false),
];

pub(super) const PYTHON_ITEMS: &[Item] = &[
    item("function_definition", "function", false),
    item("class_definition", "class", true),
];

/// The items of JavaScript, and those another language adds to them (TypeScript).
macro_rules! js_items {
    ($($more:expr),* $(,)?) => {
        &[
            item("function_declaration", "function", false),
            item("generator_function_declaration", "function", false),
            item("class_declaration", "class", true),
            item("method_definition", "method", false),
            item_with("lexical_declaration", "function", NameRule::JsDeclarator, false),
            item_with("variable_declaration", "function", NameRule::JsDeclarator, false),
            item_with("pair", "function", NameRule::JsPair, false),
            item_with("assignment_expression", "function", NameRule::JsAssigned, false),
            $($more),*
        ]
    };
}

pub(super) const JS_ITEMS: &[Item] = js_items!();

pub(super) const TS_ITEMS: &[Item] = js_items!(
    item("abstract_class_declaration", "class", true),
    item("method_signature", "method", false),
    item("abstract_method_signature", "method", false),
    item("function_signature", "function", false),
    item("interface_declaration", "interface", true),
    item("type_alias_declaration", "type", false),
    item("enum_declaration", "enum", false),
    item("internal_module", "namespace", true),
    item("module", "module", true),
);

/// `namespace X {}` parses as an expression statement around `internal_module`.
pub(super) const TS_WRAPPERS: &[(&str, Option<&str>)] = &[
    ("export_statement", Some("declaration")),
    ("expression_statement", None),
];

pub(super) const GO_ITEMS: &[Item] = &[
    item("function_declaration", "function", false),
    item_with("method_declaration", "method", NameRule::GoMethod, false),
    item_with("type_declaration", "type", NameRule::GoType, false),
];

pub(super) const JAVA_ITEMS: &[Item] = &[
    item("class_declaration", "class", true),
    item("interface_declaration", "interface", true),
    item("enum_declaration", "enum", true),
    item("record_declaration", "record", true),
    item("annotation_type_declaration", "annotation", true),
    item("method_declaration", "method", false),
    item("constructor_declaration", "constructor", false),
];

pub(super) const C_ITEMS: &[Item] = &[
    item_with(
        "function_definition",
        "function",
        NameRule::CDeclarator,
        false,
    ),
    item("struct_specifier", "struct", false),
    item("enum_specifier", "enum", false),
    item("union_specifier", "union", false),
    item_with("type_definition", "type", NameRule::CDeclarator, false),
];

pub(super) const CPP_ITEMS: &[Item] = &[
    item_with(
        "function_definition",
        "function",
        NameRule::CDeclarator,
        false,
    ),
    item("class_specifier", "class", true),
    item("struct_specifier", "struct", true),
    item("union_specifier", "union", false),
    item("enum_specifier", "enum", false),
    item("namespace_definition", "namespace", true),
    item_with("type_definition", "type", NameRule::CDeclarator, false),
];

pub(super) const CSHARP_ITEMS: &[Item] = &[
    item("class_declaration", "class", true),
    item("struct_declaration", "struct", true),
    item("interface_declaration", "interface", true),
    item("record_declaration", "record", true),
    item("enum_declaration", "enum", false),
    item("method_declaration", "method", false),
    item("constructor_declaration", "constructor", false),
    item("property_declaration", "property", false),
    item("namespace_declaration", "namespace", true),
    item("file_scoped_namespace_declaration", "namespace", false),
];

pub(super) const RUBY_ITEMS: &[Item] = &[
    item("method", "method", false),
    item("singleton_method", "method", false),
    item("class", "class", true),
    item("module", "module", true),
];

pub(super) const PHP_ITEMS: &[Item] = &[
    item("function_definition", "function", false),
    item("class_declaration", "class", true),
    item("interface_declaration", "interface", true),
    item("trait_declaration", "trait", true),
    item("enum_declaration", "enum", true),
    item("method_declaration", "method", false),
    item("namespace_definition", "namespace", true),
];

pub(super) const BASH_ITEMS: &[Item] = &[item("function_definition", "function", false)];

/// JavaScript and TypeScript functions whose nested function declarations are symbols.
const JS_NESTS: &[&str] = &[
    "function_declaration",
    "generator_function_declaration",
    "method_definition",
];

pub(super) static SPECS: &[Spec] = &[
    Spec {
        leading: &["line_comment", "block_comment", "attribute_item"],
        nests: &["function_item"],
        ..Spec::new(
            "rust",
            || tree_sitter_rust::LANGUAGE.into(),
            "::",
            RUST_ITEMS,
        )
    },
    Spec {
        wrappers: &[("decorated_definition", Some("definition"))],
        nests: &["function_definition"],
        ..Spec::new(
            "python",
            || tree_sitter_python::LANGUAGE.into(),
            ".",
            PYTHON_ITEMS,
        )
    },
    Spec {
        wrappers: &[
            ("export_statement", Some("declaration")),
            ("expression_statement", None),
        ],
        nests: JS_NESTS,
        callbacks: true,
        ..Spec::new(
            "javascript",
            || tree_sitter_javascript::LANGUAGE.into(),
            ".",
            JS_ITEMS,
        )
    },
    Spec {
        wrappers: TS_WRAPPERS,
        nests: JS_NESTS,
        callbacks: true,
        ..Spec::new(
            "typescript",
            || tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            ".",
            TS_ITEMS,
        )
    },
    Spec {
        wrappers: TS_WRAPPERS,
        nests: JS_NESTS,
        callbacks: true,
        ..Spec::new(
            "tsx",
            || tree_sitter_typescript::LANGUAGE_TSX.into(),
            ".",
            TS_ITEMS,
        )
    },
    Spec::new("go", || tree_sitter_go::LANGUAGE.into(), ".", GO_ITEMS),
    Spec {
        leading: &["line_comment", "block_comment"],
        ..Spec::new(
            "java",
            || tree_sitter_java::LANGUAGE.into(),
            ".",
            JAVA_ITEMS,
        )
    },
    Spec::new("c", || tree_sitter_c::LANGUAGE.into(), "::", C_ITEMS),
    Spec {
        wrappers: &[("template_declaration", None)],
        ..Spec::new("cpp", || tree_sitter_cpp::LANGUAGE.into(), "::", CPP_ITEMS)
    },
    Spec::new(
        "csharp",
        || tree_sitter_c_sharp::LANGUAGE.into(),
        ".",
        CSHARP_ITEMS,
    ),
    Spec::new(
        "ruby",
        || tree_sitter_ruby::LANGUAGE.into(),
        ".",
        RUBY_ITEMS,
    ),
    Spec::new(
        "php",
        || tree_sitter_php::LANGUAGE_PHP.into(),
        "::",
        PHP_ITEMS,
    ),
    Spec::new(
        "bash",
        || tree_sitter_bash::LANGUAGE.into(),
        ".",
        BASH_ITEMS,
    ),
];
