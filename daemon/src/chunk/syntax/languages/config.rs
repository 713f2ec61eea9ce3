//! Configuration, schema and style formats: JSON, YAML and TOML by top-level keys and
//! tables, HCL (Terraform) by blocks, Protocol Buffers, GraphQL, SQL and CSS by definitions.

use super::{Item, NameRule, Spec, item_with};

const KEY: NameRule = NameRule::Path(&["key"]);
const FIRST: NameRule = NameRule::Path(&["*"]);

const JSON_ITEMS: &[Item] = &[item_with("pair", "key", KEY, false)];

const YAML_ITEMS: &[Item] = &[item_with("block_mapping_pair", "key", KEY, false)];

const TOML_ITEMS: &[Item] = &[
    item_with("table", "table", FIRST, false),
    item_with("table_array_element", "table", FIRST, false),
    item_with("pair", "key", FIRST, false),
];

const HCL_ITEMS: &[Item] = &[item_with("block", "block", NameRule::HclBlock, false)];

const PROTO_ITEMS: &[Item] = &[
    item_with(
        "message",
        "message",
        NameRule::Path(&["message_name"]),
        true,
    ),
    item_with("enum", "enum", NameRule::Path(&["enum_name"]), false),
    item_with(
        "service",
        "service",
        NameRule::Path(&["service_name"]),
        true,
    ),
    item_with("rpc", "rpc", NameRule::Path(&["rpc_name"]), false),
];

const NAME: NameRule = NameRule::Path(&["name"]);

const GRAPHQL_ITEMS: &[Item] = &[
    item_with("object_type_definition", "type", NAME, false),
    item_with("interface_type_definition", "interface", NAME, false),
    item_with("input_object_type_definition", "input", NAME, false),
    item_with("enum_type_definition", "enum", NAME, false),
    item_with("union_type_definition", "union", NAME, false),
    item_with("scalar_type_definition", "scalar", NAME, false),
    item_with("directive_definition", "directive", NAME, false),
    item_with("operation_definition", "operation", NAME, false),
    item_with(
        "fragment_definition",
        "fragment",
        NameRule::Path(&["fragment_name"]),
        false,
    ),
];

const OBJECT: NameRule = NameRule::Path(&["object_reference"]);

const SQL_ITEMS: &[Item] = &[
    item_with("create_table", "table", OBJECT, false),
    item_with("create_view", "view", OBJECT, false),
    item_with("create_materialized_view", "view", OBJECT, false),
    item_with("create_function", "function", OBJECT, false),
    item_with("create_type", "type", OBJECT, false),
    item_with("create_index", "index", NameRule::Path(&["column"]), false),
    item_with("create_trigger", "trigger", OBJECT, false),
];

const CSS_ITEMS: &[Item] = &[
    item_with("rule_set", "rule", NameRule::Text(&["selectors"]), false),
    item_with(
        "keyframes_statement",
        "keyframes",
        NameRule::Path(&["keyframes_name"]),
        false,
    ),
    item_with("media_statement", "media", NameRule::Text(&["*"]), true),
];

pub(super) static SPECS: &[Spec] = &[
    Spec {
        transparent: &["document", "object"],
        ..Spec::new(
            "json",
            || tree_sitter_json::LANGUAGE.into(),
            ".",
            JSON_ITEMS,
        )
    },
    Spec {
        transparent: &["document", "block_node", "block_mapping"],
        ..Spec::new(
            "yaml",
            || tree_sitter_yaml::LANGUAGE.into(),
            ".",
            YAML_ITEMS,
        )
    },
    Spec::new(
        "toml",
        || tree_sitter_toml_ng::LANGUAGE.into(),
        ".",
        TOML_ITEMS,
    ),
    Spec {
        transparent: &["body"],
        ..Spec::new("hcl", || tree_sitter_hcl::LANGUAGE.into(), ".", HCL_ITEMS)
    },
    Spec {
        bodies: &["message_body"],
        ..Spec::new(
            "protobuf",
            || tree_sitter_proto::LANGUAGE.into(),
            ".",
            PROTO_ITEMS,
        )
    },
    Spec {
        transparent: &["document"],
        wrappers: &[
            ("definition", None),
            ("type_system_definition", None),
            ("type_definition", None),
            ("executable_definition", None),
        ],
        ..Spec::new(
            "graphql",
            || tree_sitter_graphql::LANGUAGE.into(),
            ".",
            GRAPHQL_ITEMS,
        )
    },
    Spec {
        wrappers: &[("statement", None)],
        leading: &["comment", "marginalia"],
        ..Spec::new(
            "sql",
            || tree_sitter_sequel::LANGUAGE.into(),
            ".",
            SQL_ITEMS,
        )
    },
    Spec {
        bodies: &["block"],
        ..Spec::new("css", || tree_sitter_css::LANGUAGE.into(), ".", CSS_ITEMS)
    },
];
