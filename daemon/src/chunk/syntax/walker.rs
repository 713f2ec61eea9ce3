//! The walker: finds the definitions among a node's children (through wrappers and
//! leading comments), names and qualifies them, and records them as segments and symbols.

use tree_sitter::Node;

use super::builder::{Builder, end_row, node_text};
use super::languages::{Item, NameRule, Spec};
use super::*;

pub(super) struct Walker<'s> {
    pub(super) spec: &'static Spec,
    pub(super) src: &'s str,
}

/// A definition recognised in the tree.
pub(super) struct Def<'t> {
    /// The node whose lines the definition spans (the wrapper, if any).
    pub(super) outer: Node<'t>,
    /// The definition node itself.
    pub(super) node: Node<'t>,
    pub(super) item: &'static Item,
    pub(super) name: String,
    /// Parent qualification implied by the name itself (C++ `Foo::bar`, Go receivers).
    pub(super) scope: Option<String>,
    pub(super) kind: &'static str,
}

impl<'s> Walker<'s> {
    /// Record the definitions among the named children of `node`; with `segments`, also
    /// partition rows `[lo, hi)` into segments.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn container(
        &self,
        out: &mut Builder<'_>,
        node: Node<'_>,
        lo: usize,
        hi: usize,
        parent: Option<&str>,
        parent_kind: Option<&'static str>,
        depth: usize,
        segments: bool,
    ) {
        let mut cursor = lo;
        let mut leading: Option<usize> = None;
        let mut walk = node.walk();
        for child in node.named_children(&mut walk) {
            let start = child.start_position().row;
            if start >= hi {
                break;
            }
            if self.spec.leading.contains(&child.kind()) {
                leading.get_or_insert(start.max(cursor));
                continue;
            }
            let Some(def) = self.definition(child, parent_kind) else {
                leading = None;
                continue;
            };
            let def_start = leading.take().unwrap_or(start).max(cursor);
            let def_end = end_row(def.outer).max(def_start + 1).min(hi);
            let symbol = self.record(out, &def, def_start, def_end, parent);
            if !segments {
                self.members(out, &def, symbol, def_start, def_end, depth);
                continue;
            }
            if def_end <= cursor {
                // On a line already covered (several items on one line).
                self.members(out, &def, symbol, def_start, def_end, depth);
                continue;
            }
            out.push_seg(cursor, def_start, None);
            self.emit(out, &def, symbol, def_start, def_end, depth);
            cursor = def_end;
        }
        if segments {
            out.push_seg(cursor, hi, None);
        }
    }

    /// Record the members of a container without adding segments.
    pub(super) fn members(
        &self,
        out: &mut Builder<'_>,
        def: &Def<'_>,
        symbol: usize,
        start: usize,
        end: usize,
        depth: usize,
    ) {
        if def.item.container && depth < MAX_DEPTH {
            let body = def.node.child_by_field_name("body").unwrap_or(def.node);
            let qualified = out.symbols[symbol].qualified.clone();
            self.container(
                out,
                body,
                start,
                end,
                Some(&qualified),
                Some(def.kind),
                depth + 1,
                false,
            );
        }
    }

    /// Add the segments of one definition covering exactly `[start, end)`.
    pub(super) fn emit(
        &self,
        out: &mut Builder<'_>,
        def: &Def<'_>,
        symbol: usize,
        start: usize,
        end: usize,
        depth: usize,
    ) {
        let too_big = end - start > MAX_CHUNK_LINES
            || out.lines[start..end]
                .iter()
                .map(|l| l.len() + 1)
                .sum::<usize>()
                > MAX_CHUNK_BYTES;
        if !(too_big && def.item.container && depth < MAX_DEPTH) {
            out.push_seg(start, end, Some(symbol));
            self.members(out, def, symbol, start, end, depth);
            return;
        }
        let body = def.node.child_by_field_name("body").unwrap_or(def.node);
        let mut walk = body.walk();
        let first_member = body
            .named_children(&mut walk)
            .map(|c| c.start_position().row)
            .find(|row| *row > start);
        let header_end = first_member.unwrap_or(end).clamp(start + 1, end);
        out.push_seg(start, header_end, Some(symbol));
        let qualified = out.symbols[symbol].qualified.clone();
        self.container(
            out,
            body,
            header_end,
            end,
            Some(&qualified),
            Some(def.kind),
            depth + 1,
            true,
        );
    }

    pub(super) fn record(
        &self,
        out: &mut Builder<'_>,
        def: &Def<'_>,
        start: usize,
        end: usize,
        parent: Option<&str>,
    ) -> usize {
        let parent = match (&def.scope, parent) {
            (Some(scope), Some(parent)) => Some(format!("{parent}{}{scope}", self.spec.separator)),
            (Some(scope), None) => Some(scope.clone()),
            (None, parent) => parent.map(str::to_string),
        };
        let qualified = match &parent {
            Some(p) => format!("{p}{}{}", self.spec.separator, def.name),
            None => def.name.clone(),
        };
        out.symbols.push(Symbol {
            name: def.name.clone(),
            qualified,
            kind: def.kind,
            start_line: (start + 1) as u32,
            end_line: end.max(start + 1) as u32,
            signature: self.signature(def.node),
            parent,
        });
        out.symbols.len() - 1
    }

    pub(super) fn signature(&self, node: Node<'_>) -> String {
        let end = node
            .child_by_field_name("body")
            .map_or(node.end_byte(), |b| b.start_byte());
        let raw = self.src.get(node.start_byte()..end).unwrap_or("");
        let raw = if node.child_by_field_name("body").is_none() {
            raw.lines().next().unwrap_or("")
        } else {
            raw
        };
        let mut sig = raw.split_whitespace().collect::<Vec<_>>().join(" ");
        if sig.len() > MAX_SIGNATURE_BYTES {
            let mut cut = MAX_SIGNATURE_BYTES;
            while !sig.is_char_boundary(cut) {
                cut -= 1;
            }
            sig.truncate(cut);
            sig.push('…');
        }
        sig
    }

    pub(super) fn definition<'t>(
        &self,
        node: Node<'t>,
        parent_kind: Option<&'static str>,
    ) -> Option<Def<'t>> {
        let mut inner = node;
        for _ in 0..3 {
            let Some((_, field)) = self.spec.wrappers.iter().find(|(k, _)| *k == inner.kind())
            else {
                break;
            };
            let next = match field {
                Some(field) => inner.child_by_field_name(field),
                None => {
                    let mut walk = inner.walk();
                    inner.named_children(&mut walk).last()
                }
            };
            inner = next?;
        }
        let item = self.spec.items.iter().find(|i| i.node == inner.kind())?;
        let (name, scope, kind) = self.name(inner, item)?;
        let in_type = matches!(
            parent_kind,
            Some("class" | "impl" | "trait" | "interface" | "struct" | "record" | "enum")
        );
        let kind = if kind == "function" && in_type {
            "method"
        } else {
            kind
        };
        Some(Def {
            outer: node,
            node: inner,
            item,
            name,
            scope,
            kind,
        })
    }

    /// (name, scope implied by the name, kind)
    pub(super) fn name(
        &self,
        node: Node<'_>,
        item: &'static Item,
    ) -> Option<(String, Option<String>, &'static str)> {
        let text = |n: Node<'_>| node_text(n, self.src).to_string();
        match item.name {
            NameRule::Field(field) => {
                let name = node.child_by_field_name(field).map(text)?;
                Some((name, None, item.kind))
            }
            NameRule::RustImpl => {
                let ty = node.child_by_field_name("type").map(text)?;
                let ty = ty.split('<').next().unwrap_or(&ty).trim().to_string();
                Some((ty, None, item.kind))
            }
            NameRule::CDeclarator => {
                let mut decl = node.child_by_field_name("declarator")?;
                for _ in 0..8 {
                    match decl.kind() {
                        "identifier" | "field_identifier" | "type_identifier"
                        | "destructor_name" | "operator_name" | "primitive_type" => {
                            return Some((text(decl), None, item.kind));
                        }
                        "qualified_identifier" => {
                            let full = text(decl);
                            return Some(match full.rsplit_once("::") {
                                Some((scope, name)) => {
                                    (name.to_string(), Some(scope.to_string()), "method")
                                }
                                None => (full, None, item.kind),
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
                None
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
                Some((name, (!ty.is_empty()).then_some(ty), item.kind))
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
                Some((name, None, kind))
            }
            NameRule::JsDeclarator => {
                let mut walk = node.walk();
                let declarator = node
                    .named_children(&mut walk)
                    .find(|c| c.kind() == "variable_declarator")?;
                let value = declarator.child_by_field_name("value")?;
                let kind = match value.kind() {
                    "arrow_function"
                    | "function_expression"
                    | "function"
                    | "generator_function" => "function",
                    "class" => "class",
                    _ => return None,
                };
                let name = declarator.child_by_field_name("name").map(text)?;
                Some((name, None, kind))
            }
        }
    }
}
