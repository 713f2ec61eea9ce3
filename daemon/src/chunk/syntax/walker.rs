//! The walker: finds the definitions among a node's children (through wrappers and
//! leading comments), names and qualifies them, and records them as segments and symbols.

use tree_sitter::Node;

use super::builder::{Builder, end_row};
use super::languages::Spec;
use super::naming::{self, Named};
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
    pub(super) name: String,
    /// Parent qualification implied by the name itself (C++ `Foo::bar`, Go receivers).
    pub(super) scope: Option<String>,
    pub(super) kind: &'static str,
    /// Whether its members are definitions to walk (a container item, unless its name rule
    /// says otherwise: an Elixir `def` is a call like `defmodule`).
    pub(super) container: bool,
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
        let mut last_leading_end = 0;
        // The previous definition at this level, for clauses of one function in a row.
        let mut previous: Option<(usize, String)> = None;
        for child in self.children(node) {
            let start = child.start_position().row;
            if start >= hi {
                break;
            }
            if self.spec.leading.contains(&child.kind()) {
                // A blank line ends a run of comments: what is above it is not the doc.
                if leading.is_some() && start > last_leading_end + 1 {
                    leading = None;
                }
                leading.get_or_insert(start.max(cursor));
                last_leading_end = child.end_position().row;
                continue;
            }
            if leading.is_some() && start > last_leading_end + 1 {
                leading = None;
            }
            let Some(def) = self.definition(child, parent_kind) else {
                leading = None;
                previous = None;
                self.callbacks(out, child, parent, parent_kind, depth);
                continue;
            };
            let def_start = leading.take().unwrap_or(start).max(cursor);
            let def_end = end_row(def.outer).max(def_start + 1).min(hi);
            if let Some((symbol, _)) = previous.as_ref().filter(|(symbol, name)| {
                *name == def.name && out.symbols[*symbol].kind == def.kind && !def.container
            }) {
                // Another clause of the same function (Haskell, Elixir): one symbol, one item.
                let symbol = *symbol;
                let end = def_end.max(out.symbols[symbol].end_line as usize);
                out.symbols[symbol].end_line = end as u32;
                if segments && def_end > cursor {
                    match out.segs.last_mut() {
                        Some(seg) if seg.symbol == Some(symbol) && seg.end == cursor => {
                            seg.end = def_end;
                        }
                        _ => out.push_seg(cursor, def_end, Some(symbol)),
                    }
                    cursor = def_end;
                }
                continue;
            }
            let symbol = self.record(out, &def, def_start, def_end, parent);
            previous = self.spec.clauses.then(|| (symbol, def.name.clone()));
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

    /// Record the members of a container, or a nesting function's own definitions
    /// (`Spec::nests`), without adding segments.
    pub(super) fn members(
        &self,
        out: &mut Builder<'_>,
        def: &Def<'_>,
        symbol: usize,
        start: usize,
        end: usize,
        depth: usize,
    ) {
        let nests = def.container || self.spec.nests.contains(&def.node.kind());
        if nests && depth < MAX_DEPTH {
            let body = self.def_body(def);
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

    /// Record the definitions inside the functions passed to a call written as a statement
    /// (`Spec::callbacks`), without adding segments.
    fn callbacks(
        &self,
        out: &mut Builder<'_>,
        node: Node<'_>,
        parent: Option<&str>,
        parent_kind: Option<&'static str>,
        depth: usize,
    ) {
        if !self.spec.callbacks || depth >= MAX_DEPTH || node.kind() != "expression_statement" {
            return;
        }
        let mut walk = node.walk();
        let Some(mut call) = node.named_children(&mut walk).next() else {
            return;
        };
        if call.kind() == "await_expression" {
            let mut walk = call.walk();
            match call.named_children(&mut walk).next() {
                Some(inner) => call = inner,
                None => return,
            }
        }
        let Some(arguments) = call
            .child_by_field_name("arguments")
            .filter(|_| call.kind() == "call_expression")
        else {
            return;
        };
        let mut walk = arguments.walk();
        for argument in arguments.named_children(&mut walk) {
            if !matches!(
                argument.kind(),
                "arrow_function" | "function_expression" | "function"
            ) {
                continue;
            }
            let Some(body) = argument
                .child_by_field_name("body")
                .filter(|b| b.kind() == "statement_block")
            else {
                continue;
            };
            let (lo, hi) = (body.start_position().row, end_row(body));
            self.container(out, body, lo, hi, parent, parent_kind, depth + 1, false);
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
        if !(too_big && def.container && depth < MAX_DEPTH) {
            out.push_seg(start, end, Some(symbol));
            self.members(out, def, symbol, start, end, depth);
            return;
        }
        let body = self.def_body(def);
        let first_member = self
            .children(body)
            .into_iter()
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
                    let children = self.children(inner);
                    children
                        .iter()
                        .find(|c| self.spec.items.iter().any(|i| i.node == c.kind()))
                        .or(children.last())
                        .copied()
                }
            };
            inner = next?;
        }
        let item = self.spec.items.iter().find(|i| i.node == inner.kind())?;
        // Inside a function, `el.onclick = () => ..` hands a function over; it defines
        // nothing a caller names (as a compiler sees it: the call inside is the function's).
        if matches!(item.name, super::languages::NameRule::JsAssigned)
            && matches!(parent_kind, Some("function" | "method"))
        {
            return None;
        }
        let Named {
            name,
            scope,
            kind,
            container,
        } = self.name(inner, item)?;
        if name.is_empty() {
            return None;
        }
        let in_type = matches!(
            parent_kind,
            Some(
                "class"
                    | "impl"
                    | "trait"
                    | "interface"
                    | "struct"
                    | "record"
                    | "enum"
                    | "extension"
                    | "protocol"
                    | "object"
                    | "mixin"
                    | "instance"
            )
        );
        let kind = if kind == "function" && in_type {
            "method"
        } else {
            kind
        };
        Some(Def {
            outer: node,
            node: inner,
            name,
            scope,
            kind,
            container,
        })
    }

    /// The named children of `node`, with those of transparent nodes in their place.
    pub(super) fn children<'t>(&self, node: Node<'t>) -> Vec<Node<'t>> {
        let mut out = Vec::new();
        let mut walk = node.walk();
        for child in node.named_children(&mut walk) {
            if self.spec.transparent.contains(&child.kind()) {
                out.extend(self.children(child));
            } else {
                out.push(child);
            }
        }
        out
    }

    /// Where a definition's members are: an object literal's own (a JS/TS `const x = {..}`),
    /// else its node's [`Self::body`].
    fn def_body<'t>(&self, def: &Def<'t>) -> Node<'t> {
        match def.kind {
            "object" => naming::js_object(def.node),
            _ => None,
        }
        .unwrap_or_else(|| self.body(def.node))
    }

    /// Where a container's members are: its `body` field, else the first of the spec's
    /// bodies (a field or a child's kind), else the container itself.
    pub(super) fn body<'t>(&self, node: Node<'t>) -> Node<'t> {
        if let Some(body) = node.child_by_field_name("body") {
            return body;
        }
        self.spec
            .bodies
            .iter()
            .find_map(|body| naming::child(node, body))
            .unwrap_or(node)
    }
}
