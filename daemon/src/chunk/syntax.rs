//! Syntax-aware chunking: tree-sitter for 13 languages, headings for Markdown, line windows
//! for everything else.
//!
//! The walk partitions a file's lines into ordered segments (gaps between items, items,
//! container headers), so chunks cover every non-blank line by construction. Containers
//! (classes, impls, modules, namespaces) that are too large are split into a header and their
//! members; items that are too large are split into line windows labelled with the item; small
//! neighbours are merged. Every item found is also returned as a [`Symbol`] for `lookup`.

use std::cell::RefCell;
use std::collections::HashMap;

use tree_sitter::{Language, Node, Parser};

use crate::chunk::{self, Chunk};

/// A definition found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The bare name (`request`).
    pub name: String,
    /// The name qualified by its parents (`Session.request`, `Runtime::block_on`).
    pub qualified: String,
    /// `function`, `method`, `class`, `struct`, `impl`, ...
    pub kind: &'static str,
    /// First line (1-based), including leading doc comments and attributes.
    pub start_line: u32,
    /// Last line (1-based, inclusive).
    pub end_line: u32,
    /// The declaration up to its body, whitespace collapsed.
    pub signature: String,
    /// The qualified name of the enclosing symbol, if any.
    pub parent: Option<String>,
}

/// The chunks and symbols of a file.
#[derive(Debug, Default)]
pub struct Chunked {
    /// Ordered chunks covering every non-blank line.
    pub chunks: Vec<Chunk>,
    /// Every definition found.
    pub symbols: Vec<Symbol>,
}

/// Items longer than this are split (containers into members, others into windows).
pub const MAX_CHUNK_LINES: usize = 60;
/// Segments longer than this in bytes are split by lines.
pub const MAX_CHUNK_BYTES: usize = 6 * 1024;
/// Segments this short may be merged with a neighbour.
const SMALL_LINES: usize = 12;
/// Merged groups stay within this many lines.
const MERGE_LINES: usize = 40;
/// Containers nest at most this deep before their members stop being split out.
const MAX_DEPTH: usize = 8;
/// Larger files are chunked by line windows without parsing.
const MAX_PARSE_BYTES: usize = 1 << 20;
/// Signatures are cut at this many bytes.
const MAX_SIGNATURE_BYTES: usize = 300;

/// How an item's name is found.
#[derive(Clone, Copy)]
enum NameRule {
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
struct Item {
    node: &'static str,
    kind: &'static str,
    name: NameRule,
    container: bool,
}

const fn item(node: &'static str, kind: &'static str, container: bool) -> Item {
    Item {
        node,
        kind,
        name: NameRule::Field("name"),
        container,
    }
}

const fn item_with(
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
struct Spec {
    name: &'static str,
    language: fn() -> Language,
    separator: &'static str,
    items: &'static [Item],
    /// Nodes wrapping a definition (decorators, `export`, `template<>`), with the field that
    /// holds it (`None`: the last named child).
    wrappers: &'static [(&'static str, Option<&'static str>)],
    /// Nodes that attach to the definition after them (comments, attributes).
    leading: &'static [&'static str],
}

const RUST_ITEMS: &[Item] = &[
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

const PYTHON_ITEMS: &[Item] = &[
    item("function_definition", "function", false),
    item("class_definition", "class", true),
];

const JS_ITEMS: &[Item] = &[
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

const TS_ITEMS: &[Item] = &[
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
const TS_WRAPPERS: &[(&str, Option<&str>)] = &[
    ("export_statement", Some("declaration")),
    ("expression_statement", None),
];

const GO_ITEMS: &[Item] = &[
    item("function_declaration", "function", false),
    item_with("method_declaration", "method", NameRule::GoMethod, false),
    item_with("type_declaration", "type", NameRule::GoType, false),
];

const JAVA_ITEMS: &[Item] = &[
    item("class_declaration", "class", true),
    item("interface_declaration", "interface", true),
    item("enum_declaration", "enum", true),
    item("record_declaration", "record", true),
    item("annotation_type_declaration", "annotation", true),
    item("method_declaration", "method", false),
    item("constructor_declaration", "constructor", false),
];

const C_ITEMS: &[Item] = &[
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

const CPP_ITEMS: &[Item] = &[
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

const CSHARP_ITEMS: &[Item] = &[
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

const RUBY_ITEMS: &[Item] = &[
    item("method", "method", false),
    item("singleton_method", "method", false),
    item("class", "class", true),
    item("module", "module", true),
];

const PHP_ITEMS: &[Item] = &[
    item("function_definition", "function", false),
    item("class_declaration", "class", true),
    item("interface_declaration", "interface", true),
    item("trait_declaration", "trait", true),
    item("enum_declaration", "enum", true),
    item("method_declaration", "method", false),
    item("namespace_definition", "namespace", true),
];

const BASH_ITEMS: &[Item] = &[item("function_definition", "function", false)];

fn spec(language: &str) -> Option<&'static Spec> {
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

/// Languages chunked by syntax (tree-sitter), plus `markdown` (by headings).
pub const SYNTAX_LANGUAGES: &[&str] = &[
    "rust",
    "python",
    "javascript",
    "typescript",
    "tsx",
    "go",
    "java",
    "c",
    "cpp",
    "csharp",
    "ruby",
    "php",
    "bash",
    "markdown",
];

/// Chunk `text` of the given language.
pub fn chunk_file(language: &str, text: &str) -> Chunked {
    let lines: Vec<&str> = text.lines().collect();
    let mut builder = Builder {
        lines: &lines,
        segs: Vec::new(),
        symbols: Vec::new(),
    };
    let parsed = if language == "markdown" {
        builder.markdown();
        true
    } else {
        match spec(language) {
            Some(spec) if text.len() <= MAX_PARSE_BYTES => builder.parse(spec, text),
            _ => false,
        }
    };
    if !parsed {
        return Chunked {
            chunks: chunk::line_windows(text),
            symbols: Vec::new(),
        };
    }
    builder.finish()
}

/// A run of lines `[start, end)` (0-based rows), with the symbol it belongs to.
#[derive(Debug, Clone, Copy)]
struct Seg {
    start: usize,
    end: usize,
    symbol: Option<usize>,
}

struct Builder<'a> {
    lines: &'a [&'a str],
    segs: Vec<Seg>,
    symbols: Vec<Symbol>,
}

thread_local! {
    static PARSERS: RefCell<HashMap<&'static str, Parser>> = RefCell::new(HashMap::new());
}

/// The row after the node's last line (exclusive end).
fn end_row(node: Node<'_>) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row
    } else {
        end.row + 1
    }
}

fn node_text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or("")
}

impl Builder<'_> {
    fn parse(&mut self, spec: &'static Spec, text: &str) -> bool {
        let tree = PARSERS.with(|parsers| {
            let mut parsers = parsers.borrow_mut();
            let parser = parsers.entry(spec.name).or_insert_with(|| {
                let mut parser = Parser::new();
                // A grammar that fails to load leaves the parser without a language; parse
                // then returns None and we fall back to windows.
                let _ = parser.set_language(&(spec.language)());
                parser
            });
            parser.parse(text, None)
        });
        let Some(tree) = tree else { return false };
        let walker = Walker { spec, src: text };
        walker.container(
            self,
            tree.root_node(),
            0,
            self.lines.len(),
            None,
            None,
            0,
            true,
        );
        true
    }

    fn push_seg(&mut self, start: usize, end: usize, symbol: Option<usize>) {
        if start < end {
            self.segs.push(Seg { start, end, symbol });
        }
    }

    fn markdown(&mut self) {
        let mut in_fence = false;
        let mut cursor = 0;
        let mut current: Option<usize> = None;
        let mut stack: Vec<(usize, usize)> = Vec::new(); // (level, symbol index)
        for (row, line) in self.lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                in_fence = !in_fence;
                continue;
            }
            if in_fence || !trimmed.starts_with('#') {
                continue;
            }
            let level = trimmed.chars().take_while(|c| *c == '#').count();
            let title = trimmed[level..].trim();
            if level > 6 || !trimmed[level..].starts_with([' ', '\t']) || title.is_empty() {
                continue;
            }
            self.push_seg(cursor, row, current);
            cursor = row;
            while stack.last().is_some_and(|(l, _)| *l >= level) {
                stack.pop();
            }
            let parent = stack
                .last()
                .map(|(_, idx)| self.symbols[*idx].qualified.clone());
            let title = title.trim_end_matches('#').trim().to_string();
            let qualified = match &parent {
                Some(p) => format!("{p} > {title}"),
                None => title.clone(),
            };
            self.symbols.push(Symbol {
                name: title,
                qualified,
                kind: "section",
                start_line: (row + 1) as u32,
                end_line: (row + 1) as u32,
                signature: trimmed.to_string(),
                parent,
            });
            let idx = self.symbols.len() - 1;
            stack.push((level, idx));
            current = Some(idx);
        }
        self.push_seg(cursor, self.lines.len(), current);
        // A section ends where the next heading of the same or a higher level starts.
        let n = self.lines.len();
        let starts: Vec<(usize, usize)> = self
            .symbols
            .iter()
            .map(|s| {
                (
                    s.start_line as usize,
                    s.signature.chars().take_while(|c| *c == '#').count(),
                )
            })
            .collect();
        for (i, symbol) in self.symbols.iter_mut().enumerate() {
            let (_, level) = starts[i];
            let end = starts[i + 1..]
                .iter()
                .find(|(_, l)| *l <= level)
                .map_or(n, |(line, _)| line - 1);
            symbol.end_line = end.max(symbol.start_line as usize) as u32;
        }
    }

    /// Split oversized segments, merge small neighbours, and build chunks.
    fn finish(self) -> Chunked {
        let lines = self.lines;
        let row_bytes = |r: usize| lines[r].len() + 1;
        // 1. Split oversized segments into pieces within the line and byte bounds.
        let mut pieces: Vec<Seg> = Vec::with_capacity(self.segs.len());
        for seg in &self.segs {
            let mut start = seg.start;
            while start < seg.end {
                let mut end = start;
                let mut bytes = 0;
                while end < seg.end && end - start < MAX_CHUNK_LINES {
                    bytes += row_bytes(end);
                    end += 1;
                    if bytes >= MAX_CHUNK_BYTES {
                        break;
                    }
                }
                pieces.push(Seg {
                    start,
                    end,
                    symbol: seg.symbol,
                });
                start = end;
            }
        }
        // 2. Merge small neighbours (gaps such as closing braces and imports, tiny items).
        let non_blank = |seg: &Seg| {
            (seg.start..seg.end)
                .filter(|&r| !lines[r].trim().is_empty())
                .count()
        };
        let mut groups: Vec<Vec<Seg>> = Vec::new();
        for piece in pieces {
            if non_blank(&piece) == 0 {
                // Blank runs join the previous group (they add no chunk of their own).
                if let Some(group) = groups.last_mut() {
                    group.push(piece);
                    continue;
                }
            }
            if let Some(group) = groups.last_mut() {
                let group_lines: usize = group.iter().map(non_blank).sum();
                let group_bytes: usize = group
                    .iter()
                    .flat_map(|s| s.start..s.end)
                    .map(row_bytes)
                    .sum();
                let piece_lines = non_blank(&piece);
                let piece_bytes: usize = (piece.start..piece.end).map(row_bytes).sum();
                let fits = group_lines + piece_lines <= MERGE_LINES
                    && group_bytes + piece_bytes <= MAX_CHUNK_BYTES;
                let small = piece_lines <= SMALL_LINES || group_lines <= SMALL_LINES;
                let tail = piece_lines <= 2 && piece.symbol.is_none();
                let same_item =
                    piece.symbol.is_some() && group.iter().all(|s| s.symbol == piece.symbol);
                if fits && (small || tail) && !same_item {
                    group.push(piece);
                    continue;
                }
            }
            groups.push(vec![piece]);
        }
        // 3. Build chunks.
        let mut by_start: Vec<usize> = (0..self.symbols.len()).collect();
        by_start.sort_by_key(|&i| self.symbols[i].start_line);
        let mut chunks = Vec::with_capacity(groups.len());
        for group in groups {
            let (Some(first), Some(last)) = (group.first(), group.last()) else {
                continue;
            };
            let (mut start, mut end) = (first.start, last.end);
            while start < end && lines[start].trim().is_empty() {
                start += 1;
            }
            while end > start && lines[end - 1].trim().is_empty() {
                end -= 1;
            }
            if start == end {
                continue;
            }
            let (first_line, last_line) = ((start + 1) as u32, end as u32);
            // Names: every symbol lying within the chunk, members of unsplit containers too.
            let from = by_start.partition_point(|&i| self.symbols[i].start_line < first_line);
            let inside: Vec<usize> = by_start[from..]
                .iter()
                .copied()
                .take_while(|&i| self.symbols[i].start_line <= last_line)
                .filter(|&i| self.symbols[i].end_line <= last_line)
                .collect();
            let mut names: Vec<String> = Vec::new();
            for &i in &inside {
                if !names.contains(&self.symbols[i].name) {
                    names.push(self.symbols[i].name.clone());
                }
            }
            // Main symbol: the smallest one covering at least half of the chunk, else the
            // segment symbol covering most of it (a piece of a split item or a header).
            let span = |i: usize| {
                let s = &self.symbols[i];
                let lo = s.start_line.max(first_line);
                let hi = s.end_line.min(last_line);
                if hi >= lo { hi - lo + 1 } else { 0 }
            };
            let chunk_lines = last_line - first_line + 1;
            let covering = group
                .iter()
                .filter_map(|seg| seg.symbol)
                .chain(inside.iter().copied())
                .filter(|&i| span(i) * 2 >= chunk_lines)
                .min_by_key(|&i| self.symbols[i].end_line - self.symbols[i].start_line);
            let main = covering.or_else(|| {
                group
                    .iter()
                    .filter_map(|seg| seg.symbol)
                    .max_by_key(|&i| span(i))
            });
            chunks.push(Chunk {
                start_line: (start + 1) as u32,
                end_line: end as u32,
                text: lines[start..end].join("\n"),
                symbol: main.map(|i| self.symbols[i].qualified.clone()),
                kind: main.map(|i| self.symbols[i].kind),
                names,
            });
        }
        Chunked {
            chunks,
            symbols: self.symbols,
        }
    }
}

struct Walker<'s> {
    spec: &'static Spec,
    src: &'s str,
}

/// A definition recognised in the tree.
struct Def<'t> {
    /// The node whose lines the definition spans (the wrapper, if any).
    outer: Node<'t>,
    /// The definition node itself.
    node: Node<'t>,
    item: &'static Item,
    name: String,
    /// Parent qualification implied by the name itself (C++ `Foo::bar`, Go receivers).
    scope: Option<String>,
    kind: &'static str,
}

impl<'s> Walker<'s> {
    /// Record the definitions among the named children of `node`; with `segments`, also
    /// partition rows `[lo, hi)` into segments.
    #[allow(clippy::too_many_arguments)]
    fn container(
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
    fn members(
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
    fn emit(
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

    fn record(
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

    fn signature(&self, node: Node<'_>) -> String {
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

    fn definition<'t>(&self, node: Node<'t>, parent_kind: Option<&'static str>) -> Option<Def<'t>> {
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
    fn name(
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

#[cfg(test)]
mod tests;
