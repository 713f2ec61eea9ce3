//! The builder: partitions a file's rows into segments (gaps, items, container headers),
//! then `finish` splits oversized pieces, merges small neighbours and emits the chunks.

use std::cell::RefCell;
use std::collections::HashMap;

use tree_sitter::{Node, Parser};

use super::languages::Spec;
use super::walker::Walker;
use super::*;

/// A run of lines `[start, end)` (0-based rows), with the symbol it belongs to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seg {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) symbol: Option<usize>,
}

pub(super) struct Builder<'a> {
    pub(super) lines: &'a [&'a str],
    pub(super) segs: Vec<Seg>,
    pub(super) symbols: Vec<Symbol>,
    pub(super) refs: refs::FileRefs,
}

thread_local! {
    static PARSERS: RefCell<HashMap<&'static str, Parser>> = RefCell::new(HashMap::new());
}

/// The row after the node's last line (exclusive end).
pub(super) fn end_row(node: Node<'_>) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row
    } else {
        end.row + 1
    }
}

pub(super) fn node_text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or("")
}

impl Builder<'_> {
    pub(super) fn parse(&mut self, spec: &'static Spec, text: &str) -> bool {
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
        self.refs = refs::extract(spec.name, tree.root_node(), text);
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

    pub(super) fn push_seg(&mut self, start: usize, end: usize, symbol: Option<usize>) {
        if start < end {
            self.segs.push(Seg { start, end, symbol });
        }
    }

    pub(super) fn markdown(&mut self) {
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
    pub(super) fn finish(self) -> Chunked {
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
        // 2b. A tiny group left between two large ones (a one-line function after a long
        // one) joins a neighbour within the chunk bounds, the one before if it can: a chunk
        // of a few lines is poor evidence for keyword and vector search alike.
        let size = |group: &[Seg]| -> (usize, usize) {
            let lines_ = group.iter().map(|s| s.end - s.start).sum();
            let bytes = group
                .iter()
                .flat_map(|s| s.start..s.end)
                .map(row_bytes)
                .sum();
            (lines_, bytes)
        };
        let fits = |a: &[Seg], b: &[Seg]| {
            let ((al, ab), (bl, bb)) = (size(a), size(b));
            al + bl <= MAX_CHUNK_LINES && ab + bb <= MAX_CHUNK_BYTES
        };
        let mut merged: Vec<Vec<Seg>> = Vec::with_capacity(groups.len());
        let mut carry: Option<Vec<Seg>> = None;
        for mut group in groups {
            if let Some(mut tiny) = carry.take() {
                if fits(&tiny, &group) {
                    tiny.append(&mut group);
                    group = tiny;
                } else {
                    merged.push(tiny);
                }
            }
            if group.iter().map(non_blank).sum::<usize>() > TINY_LINES {
                merged.push(group);
                continue;
            }
            match merged.last_mut() {
                Some(previous) if fits(previous, &group) => previous.append(&mut group),
                _ => carry = Some(group),
            }
        }
        merged.extend(carry);
        let groups = merged;
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
            refs: self.refs,
        }
    }
}
