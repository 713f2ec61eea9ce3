//! The language table: which tree-sitter nodes define symbols in each language, how their
//! names are found, and what wraps or precedes them.

use tree_sitter::Language;

/// How an item's name is found.
#[derive(Clone, Copy)]
pub(super) enum NameRule {
    /// The `name` field (or another field).
    Field(&'static str),
    /// Rust `impl [Trait for] Type`: the type, without generics.
    RustImpl,
    /// C/C++ function: the identifier inside the declarator chain.
    CDeclarator,
    /// Go method: the name, qualified by the receiver's type.
    GoMethod,
    /// Go `type X struct{...}`: the first type spec.
    GoType,
    /// JS/TS `const f = () => ...`: the declarator, only when its value is a function/class.
    JsDeclarator,
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
}

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

pub(super) const JS_ITEMS: &[Item] = &[
    item("function_declaration", "function", false),
    item("generator_function_declaration", "function", false),
    item("class_declaration", "class", true),
    item("method_definition", "method", false),
    item_with(
        "lexical_declaration",
        "function",
        NameRule::JsDeclarator,
        false,
    ),
    item_with(
        "variable_declaration",
        "function",
        NameRule::JsDeclarator,
        false,
    ),
];

pub(super) const TS_ITEMS: &[Item] = &[
    item("function_declaration", "function", false),
    item("generator_function_declaration", "function", false),
    item("class_declaration", "class", true),
    item("abstract_class_declaration", "class", true),
    item("method_definition", "method", false),
    item("method_signature", "method", false),
    item("abstract_method_signature", "method", false),
    item("function_signature", "function", false),
    item("interface_declaration", "interface", true),
    item("type_alias_declaration", "type", false),
    item("enum_declaration", "enum", false),
    item("internal_module", "namespace", true),
    item("module", "module", true),
    item_with(
        "lexical_declaration",
        "function",
        NameRule::JsDeclarator,
        false,
    ),
    item_with(
        "variable_declaration",
        "function",
        NameRule::JsDeclarator,
        false,
    ),
];

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

pub(super) fn spec(language: &str) -> Option<&'static Spec> {
    static RUST: Spec = Spec {
        name: "rust",
        language: || tree_sitter_rust::LANGUAGE.into(),
        separator: "::",
        items: RUST_ITEMS,
        wrappers: &[],
        leading: &["line_comment", "block_comment", "attribute_item"],
    };
    static PYTHON: Spec = Spec {
        name: "python",
        language: || tree_sitter_python::LANGUAGE.into(),
        separator: ".",
        items: PYTHON_ITEMS,
        wrappers: &[("decorated_definition", Some("definition"))],
        leading: &["comment"],
    };
    static JAVASCRIPT: Spec = Spec {
        name: "javascript",
        language: || tree_sitter_javascript::LANGUAGE.into(),
        separator: ".",
        items: JS_ITEMS,
        wrappers: &[("export_statement", Some("declaration"))],
        leading: &["comment"],
    };
    static TYPESCRIPT: Spec = Spec {
        name: "typescript",
        language: || tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        separator: ".",
        items: TS_ITEMS,
        wrappers: TS_WRAPPERS,
        leading: &["comment"],
    };
    static TSX: Spec = Spec {
        name: "tsx",
        language: || tree_sitter_typescript::LANGUAGE_TSX.into(),
        separator: ".",
        items: TS_ITEMS,
        wrappers: TS_WRAPPERS,
        leading: &["comment"],
    };
    static GO: Spec = Spec {
        name: "go",
        language: || tree_sitter_go::LANGUAGE.into(),
        separator: ".",
        items: GO_ITEMS,
        wrappers: &[],
        leading: &["comment"],
    };
    static JAVA: Spec = Spec {
        name: "java",
        language: || tree_sitter_java::LANGUAGE.into(),
        separator: ".",
        items: JAVA_ITEMS,
        wrappers: &[],
        leading: &["line_comment", "block_comment"],
    };
    static C: Spec = Spec {
        name: "c",
        language: || tree_sitter_c::LANGUAGE.into(),
        separator: "::",
        items: C_ITEMS,
        wrappers: &[],
        leading: &["comment"],
    };
    static CPP: Spec = Spec {
        name: "cpp",
        language: || tree_sitter_cpp::LANGUAGE.into(),
        separator: "::",
        items: CPP_ITEMS,
        wrappers: &[("template_declaration", None)],
        leading: &["comment"],
    };
    static CSHARP: Spec = Spec {
        name: "csharp",
        language: || tree_sitter_c_sharp::LANGUAGE.into(),
        separator: ".",
        items: CSHARP_ITEMS,
        wrappers: &[],
        leading: &["comment"],
    };
    static RUBY: Spec = Spec {
        name: "ruby",
        language: || tree_sitter_ruby::LANGUAGE.into(),
        separator: ".",
        items: RUBY_ITEMS,
        wrappers: &[],
        leading: &["comment"],
    };
    static PHP: Spec = Spec {
        name: "php",
        language: || tree_sitter_php::LANGUAGE_PHP.into(),
        separator: "::",
        items: PHP_ITEMS,
        wrappers: &[],
        leading: &["comment"],
    };
    static BASH: Spec = Spec {
        name: "bash",
        language: || tree_sitter_bash::LANGUAGE.into(),
        separator: ".",
        items: BASH_ITEMS,
        wrappers: &[],
        leading: &["comment"],
    };
    Some(match language {
        "rust" => &RUST,
        "python" => &PYTHON,
        "javascript" => &JAVASCRIPT,
        "typescript" => &TYPESCRIPT,
        "tsx" => &TSX,
        "go" => &GO,
        "java" => &JAVA,
        "c" => &C,
        "cpp" => &CPP,
        "csharp" => &CSHARP,
        "ruby" => &RUBY,
        "php" => &PHP,
        "bash" => &BASH,
        _ => return None,
    })
}
