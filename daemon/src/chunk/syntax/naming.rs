//! Naming: how a definition node's name, scope and kind are read, one rule per shape of
//! grammar (see [`NameRule`]).

use tree_sitter::Node;

use super::builder::node_text;
use super::languages::{Item, NameRule};
use super::walker::Walker;

/// What a definition is called and what it is.
pub(super) struct Named {
    pub(super) name: String,
    /// Parent qualification implied by the name itself (C++ `Foo::bar`, Go receivers).
    pub(super) scope: Option<String>,
    pub(super) kind: &'static str,
    /// Whether its members are walked for definitions.
    pub(super) container: bool,
}

impl Walker<'_> {
    /// How the item `node` is named, or `None` when it defines nothing after all.
    pub(super) fn name(&self, node: Node<'_>, item: &'static Item) -> Option<Named> {
        let text = |n: Node<'_>| node_text(n, self.src).to_string();
        let plain = |name: String, kind: &'static str| Named {
            name,
            scope: None,
            kind,
            container: item.container,
        };
        let scoped = |name: String, scope: Option<String>, kind: &'static str| Named {
            name,
            scope,
            kind,
            container: item.container,
        };
        let named = match item.name {
            NameRule::Field(field) => {
                let name = node.child_by_field_name(field).map(text)?;
                plain(name, item.kind)
            }
            NameRule::RustImpl => {
                let ty = node.child_by_field_name("type").map(text)?;
                let ty = ty.split('<').next().unwrap_or(&ty).trim().to_string();
                plain(ty, item.kind)
            }
            NameRule::CDeclarator => {
                let mut decl = node.child_by_field_name("declarator")?;
                for _ in 0..8 {
                    match decl.kind() {
                        "identifier" | "field_identifier" | "type_identifier"
                        | "destructor_name" | "operator_name" | "primitive_type" => {
                            return Some(plain(text(decl), item.kind));
                        }
                        "qualified_identifier" => {
                            let full = text(decl);
                            return Some(match full.rsplit_once("::") {
                                Some((scope, name)) => {
                                    scoped(name.to_string(), Some(scope.to_string()), "method")
                                }
                                None => plain(full, item.kind),
                            });
                        }
                        _ => {
                            decl = decl.child_by_field_name("declarator").or_else(|| {
                                let mut walk = decl.walk();
                                decl.named_children(&mut walk).next()
                            })?;
                        }
                    }
                }
                return None;
            }
            NameRule::GoMethod => {
                let name = node.child_by_field_name("name").map(text)?;
                let receiver = node
                    .child_by_field_name("receiver")
                    .map(text)
                    .unwrap_or_default();
                // `(s *Server)` -> `Server`
                let ty = receiver
                    .trim_matches(|c| c == '(' || c == ')')
                    .split_whitespace()
                    .last()
                    .unwrap_or("")
                    .trim_start_matches('*')
                    .split('[')
                    .next()
                    .unwrap_or("")
                    .to_string();
                scoped(name, (!ty.is_empty()).then_some(ty), item.kind)
            }
            NameRule::GoType => {
                let mut walk = node.walk();
                let spec = node
                    .named_children(&mut walk)
                    .find(|c| c.kind() == "type_spec" || c.kind() == "type_alias")?;
                let name = spec.child_by_field_name("name").map(text)?;
                let kind = match spec.child_by_field_name("type").map(|t| t.kind()) {
                    Some("struct_type") => "struct",
                    Some("interface_type") => "interface",
                    _ => "type",
                };
                plain(name, kind)
            }
            NameRule::JsDeclarator => {
                let declarator = naming_declarator(node)?;
                let (kind, container) = js_value(node)?;
                let name = declarator.child_by_field_name("name").map(text)?;
                Named {
                    name,
                    scope: None,
                    kind,
                    container: container || item.container,
                }
            }
            NameRule::JsAssigned => {
                let left = node.child_by_field_name("left")?;
                if left.kind() != "member_expression" {
                    return None;
                }
                let (kind, container) = js_value(node)?;
                let name = left.child_by_field_name("property").map(text)?;
                let object = left.child_by_field_name("object").map(text)?;
                let object = object.strip_suffix(".prototype").unwrap_or(&object);
                if object == "module" && name == "exports" {
                    // `module.exports = function () {..}`: the module's export, unnamed.
                    return None;
                }
                // `exports.x = ...` names the module's export, `this.x = ...` a member of
                // what encloses it: no owner written.
                let scope = (!matches!(object, "exports" | "module.exports" | "this"))
                    .then(|| object.to_string());
                let kind = match (kind, &scope) {
                    ("function", Some(_)) => "method",
                    _ => kind,
                };
                Named {
                    name,
                    scope,
                    kind,
                    container,
                }
            }
            NameRule::JsPair => {
                let (kind, container) = js_value(node)?;
                let name = clean(&node.child_by_field_name("key").map(text)?);
                Named {
                    name,
                    scope: None,
                    kind,
                    container,
                }
            }
            NameRule::FieldOr(field, default) => plain(
                node.child_by_field_name(field)
                    .map_or_else(|| default.to_string(), text),
                item.kind,
            ),
            NameRule::Path(path) => {
                let raw = text(self.at(node, path)?);
                let name = clean(&raw);
                if unquote(&raw).is_some() {
                    plain(name, item.kind)
                } else {
                    // `Base.show`, `dependencies.serde`: the last part, qualified by the rest.
                    let (scope, name) = split_last(&name, &['.']);
                    scoped(name, scope, item.kind)
                }
            }
            NameRule::Text(path) => {
                let full = text(self.at(node, path)?);
                let mut name = full.split_whitespace().collect::<Vec<_>>().join(" ");
                if name.len() > MAX_TEXT_NAME {
                    let mut cut = MAX_TEXT_NAME;
                    while !name.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    name.truncate(cut);
                }
                plain(name, item.kind)
            }
            NameRule::HclBlock => {
                let mut walk = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut walk).collect();
                let block_type = text(*children.iter().find(|c| c.kind() == "identifier")?);
                let labels: Vec<String> = children
                    .iter()
                    .filter(|c| c.kind() == "string_lit" || c.kind() == "identifier")
                    .skip(1)
                    .map(|c| clean(&text(*c)))
                    .collect();
                let kind = HCL_BLOCKS
                    .iter()
                    .find(|k| **k == block_type)
                    .copied()
                    .unwrap_or(item.kind);
                // `resource "aws_s3_bucket" "logs"`: `logs` in `aws_s3_bucket`, as Terraform
                // addresses it.
                match labels.split_last() {
                    None => plain(block_type, kind),
                    Some((name, [])) => plain(name.clone(), kind),
                    Some((name, scope)) => scoped(name.clone(), Some(scope.join(".")), kind),
                }
            }
            NameRule::Dotted(field) => {
                let full = node.child_by_field_name(field).map(text)?;
                let (scope, name) = split_last(&full, &['.', ':']);
                scoped(name, scope, item.kind)
            }
            NameRule::Keyword(path) => {
                let name = clean(&text(self.at(node, path)?));
                let mut walk = node.walk();
                let keyword = node
                    .children(&mut walk)
                    .filter(|c| !c.is_named())
                    .find_map(|c| KEYWORD_KINDS.iter().find(|k| **k == c.kind()).copied());
                plain(name, keyword.unwrap_or(item.kind))
            }
            NameRule::ElixirCall => {
                let target = node.child_by_field_name("target").map(text)?;
                let (kind, container) = match target.as_str() {
                    "defmodule" => ("module", true),
                    "defprotocol" => ("protocol", true),
                    "defimpl" => ("impl", true),
                    "def" | "defp" | "defdelegate" => ("function", false),
                    "defmacro" | "defmacrop" => ("macro", false),
                    "defguard" | "defguardp" => ("guard", false),
                    _ => return None,
                };
                let mut walk = node.walk();
                let arguments = node
                    .named_children(&mut walk)
                    .find(|c| c.kind() == "arguments")?;
                let mut walk = arguments.walk();
                let mut first = arguments.named_children(&mut walk).next()?;
                // `def a(x) when guard`: the call is the operator's left side.
                while first.kind() == "binary_operator" {
                    first = first.child_by_field_name("left")?;
                }
                let name = match first.kind() {
                    "call" => first.child_by_field_name("target").map(text)?,
                    _ => clean(&text(first)),
                };
                // `defmodule Phoenix.Router`: `Router`, in `Phoenix`.
                let (scope, name) = split_last(&name, &['.']);
                Named {
                    name,
                    scope,
                    kind,
                    container,
                }
            }
            NameRule::ZigContainer => {
                let mut walk = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut walk).collect();
                let name = children.iter().find(|c| c.kind() == "identifier")?;
                let kind = children.iter().find_map(|c| match c.kind() {
                    "struct_declaration" => Some("struct"),
                    "enum_declaration" => Some("enum"),
                    "union_declaration" => Some("union"),
                    "opaque_declaration" => Some("opaque"),
                    _ => None,
                })?;
                plain(text(*name), kind)
            }
            NameRule::AssignedFunction {
                left,
                right,
                function,
            } => {
                let value = self.at(node, &[right])?;
                let value = if value.kind() == function {
                    value
                } else {
                    let mut walk = value.walk();
                    value.named_children(&mut walk).next()?
                };
                if value.kind() != function {
                    return None;
                }
                let (scope, name) = split_last(&text(self.at(node, &[left])?), &['.', ':']);
                scoped(name, scope, item.kind)
            }
        };
        Some(named)
    }

    /// The node at the end of `path` from `node`: each step a field name, else the kind of a
    /// named child, `*` any named child.
    fn at<'t>(&self, node: Node<'t>, path: &[&str]) -> Option<Node<'t>> {
        path.iter().try_fold(node, |at, step| child(at, step))
    }
}

/// The first declarator of a JS/TS `const`/`let`/`var` declaration.
fn naming_declarator(node: Node<'_>) -> Option<Node<'_>> {
    let mut walk = node.walk();
    node.named_children(&mut walk)
        .find(|c| c.kind() == "variable_declarator")
}

/// What the value a JS/TS declaration, property or assignment gives ([`js_value_of`])
/// defines, and whether its members are definitions: a function, a class, or an object
/// literal (whose methods and function-valued properties are its members).
fn js_value(node: Node<'_>) -> Option<(&'static str, bool)> {
    match js_value_of(node)?.kind() {
        "arrow_function" | "function_expression" | "function" | "generator_function" => {
            Some(("function", false))
        }
        "class" => Some(("class", false)),
        "object" => Some(("object", true)),
        _ => None,
    }
}

/// `{..} satisfies T`, `{..} as const`, `({..})`: the expression inside.
fn unwrap_js(mut value: Node<'_>) -> Node<'_> {
    for _ in 0..4 {
        match value.kind() {
            "satisfies_expression" | "as_expression" | "parenthesized_expression" => {
                let mut walk = value.walk();
                match value.named_children(&mut walk).next() {
                    Some(inner) => value = inner,
                    None => break,
                }
            }
            _ => break,
        }
    }
    value
}

/// The value a JS/TS declaration, property or assignment gives (`const x = v`, `key: v`,
/// `app.x = v`), looked at through `satisfies` / `as`.
fn js_value_of(node: Node<'_>) -> Option<Node<'_>> {
    let value = match node.kind() {
        "pair" => node.child_by_field_name("value")?,
        "assignment_expression" => node.child_by_field_name("right")?,
        "lexical_declaration" | "variable_declaration" => {
            naming_declarator(node)?.child_by_field_name("value")?
        }
        _ => return None,
    };
    Some(unwrap_js(value))
}

/// The object literal an object-valued JS/TS declaration, property or assignment holds:
/// where its members are.
pub(super) fn js_object(node: Node<'_>) -> Option<Node<'_>> {
    js_value_of(node).filter(|v| v.kind() == "object")
}

/// One step from `node`: the field named `step`, else the first named child of that kind
/// (`*`: any named child).
pub(super) fn child<'t>(node: Node<'t>, step: &str) -> Option<Node<'t>> {
    node.child_by_field_name(step).or_else(|| {
        let mut walk = node.walk();
        node.named_children(&mut walk)
            .find(|c| step == "*" || c.kind() == step)
    })
}

/// Keywords that name a declaration's kind in grammars with one node for several kinds
/// (Kotlin's and Swift's `class_declaration` also declare interfaces, structs, enums).
const KEYWORD_KINDS: &[&str] = &[
    "interface",
    "struct",
    "enum",
    "extension",
    "actor",
    "protocol",
    "object",
    "class",
];

/// Names taken from whole text (selectors) are cut at this many bytes.
const MAX_TEXT_NAME: usize = 80;

/// Terraform's block types, used as the kind of an HCL block.
const HCL_BLOCKS: &[&str] = &[
    "resource",
    "data",
    "variable",
    "output",
    "module",
    "provider",
    "locals",
    "terraform",
];

/// A name as written: quotes removed, cut before parameters, generics or a type.
fn clean(raw: &str) -> String {
    if let Some(inner) = unquote(raw) {
        return inner.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    raw.trim()
        .split(|c: char| c.is_whitespace() || "(<{[:;=,".contains(c))
        .next()
        .unwrap_or("")
        .to_string()
}

/// The inside of a name written as a string (`test "parse works"`, `"name": 1`).
fn unquote(raw: &str) -> Option<&str> {
    let raw = raw.trim();
    ['"', '\'', '`']
        .into_iter()
        .find_map(|quote| raw.strip_prefix(quote)?.strip_suffix(quote))
}

/// The last part of a qualified name and the rest before it, split at the last of
/// `separators`: `M.setup` -> (`M`, `setup`); `f` -> (None, `f`).
fn split_last(name: &str, separators: &[char]) -> (Option<String>, String) {
    let name = name.trim();
    match name.rfind(separators) {
        Some(at) if at > 0 && at + 1 < name.len() => {
            (Some(name[..at].to_string()), name[at + 1..].to_string())
        }
        _ => (None, name.to_string()),
    }
}
