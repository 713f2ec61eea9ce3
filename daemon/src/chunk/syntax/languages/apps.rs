//! Languages of JVM and mobile apps: Kotlin, Scala, Swift, Dart and Objective-C.

use super::{Item, NameRule, Spec, item, item_with};

const NAME: NameRule = NameRule::Keyword(&["name"]);

const KOTLIN_ITEMS: &[Item] = &[
    item_with("class_declaration", "class", NAME, true),
    item("object_declaration", "object", true),
    item_with(
        "companion_object",
        "object",
        NameRule::FieldOr("name", "Companion"),
        true,
    ),
    item("function_declaration", "function", false),
    item("secondary_constructor", "constructor", false),
    item_with("type_alias", "type", NameRule::Field("type"), false),
];

const SCALA_ITEMS: &[Item] = &[
    item("class_definition", "class", true),
    item("object_definition", "object", true),
    item("trait_definition", "trait", true),
    item("enum_definition", "enum", true),
    item("function_definition", "function", false),
    item("function_declaration", "function", false),
    item("type_definition", "type", false),
    item("given_definition", "given", false),
];

const SWIFT_ITEMS: &[Item] = &[
    item_with("class_declaration", "class", NAME, true),
    item("protocol_declaration", "protocol", true),
    item("function_declaration", "function", false),
    item("protocol_function_declaration", "function", false),
    item_with(
        "init_declaration",
        "constructor",
        NameRule::FieldOr("name", "init"),
        false,
    ),
    item("typealias_declaration", "type", false),
];

const DART_ITEMS: &[Item] = &[
    item("class_declaration", "class", true),
    item("mixin_declaration", "mixin", true),
    item("extension_declaration", "extension", true),
    item("enum_declaration", "enum", true),
    item_with(
        "function_declaration",
        "function",
        NameRule::Path(&["signature", "name"]),
        false,
    ),
    item_with(
        "method_declaration",
        "method",
        NameRule::Path(&["signature", "*", "name"]),
        false,
    ),
    item_with(
        "type_alias",
        "type",
        NameRule::Path(&["type_identifier"]),
        false,
    ),
];

const OBJC_ITEMS: &[Item] = &[
    item_with(
        "class_interface",
        "interface",
        NameRule::Path(&["identifier"]),
        true,
    ),
    item_with(
        "class_implementation",
        "class",
        NameRule::Path(&["identifier"]),
        true,
    ),
    item_with(
        "protocol_declaration",
        "protocol",
        NameRule::Path(&["identifier"]),
        true,
    ),
    item_with(
        "method_declaration",
        "method",
        NameRule::Path(&["identifier"]),
        false,
    ),
    item_with(
        "method_definition",
        "method",
        NameRule::Path(&["identifier"]),
        false,
    ),
    item_with(
        "function_definition",
        "function",
        NameRule::CDeclarator,
        false,
    ),
    item("struct_specifier", "struct", false),
    item("enum_specifier", "enum", false),
    item_with("type_definition", "type", NameRule::CDeclarator, false),
];

pub(super) static SPECS: &[Spec] = &[
    Spec {
        leading: &["line_comment", "block_comment", "annotation"],
        bodies: &["class_body", "enum_class_body"],
        ..Spec::new(
            "kotlin",
            || tree_sitter_kotlin_ng::LANGUAGE.into(),
            ".",
            KOTLIN_ITEMS,
        )
    },
    Spec {
        leading: &["comment", "block_comment"],
        ..Spec::new(
            "scala",
            || tree_sitter_scala::LANGUAGE.into(),
            ".",
            SCALA_ITEMS,
        )
    },
    Spec {
        leading: &["comment", "multiline_comment"],
        ..Spec::new(
            "swift",
            || tree_sitter_swift::LANGUAGE.into(),
            ".",
            SWIFT_ITEMS,
        )
    },
    Spec {
        leading: &["comment", "documentation_comment"],
        wrappers: &[("member_declaration", None)],
        ..Spec::new(
            "dart",
            || tree_sitter_dart::LANGUAGE.into(),
            ".",
            DART_ITEMS,
        )
    },
    Spec {
        wrappers: &[("implementation_definition", None)],
        ..Spec::new(
            "objc",
            || tree_sitter_objc::LANGUAGE.into(),
            ".",
            OBJC_ITEMS,
        )
    },
];
