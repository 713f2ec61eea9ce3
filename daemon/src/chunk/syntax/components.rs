//! Single-file components: Vue (`.vue`) and Svelte (`.svelte`). Each `<script>` block is
//! chunked by the TypeScript grammar (`lang="ts"`) or the JavaScript one, at its own lines in
//! the file, with its symbols; the rest (`<template>`, `<style>`, markup) by line windows,
//! each labelled with the block it is in.

use super::{Chunked, chunk_file};
use crate::chunk::{self, Chunk};

/// A `<script>` block: the lines strictly between its tags (0-based, end exclusive) and the
/// language of its code.
struct Script {
    body: std::ops::Range<usize>,
    language: &'static str,
}

fn script_language(open_tag: &str) -> &'static str {
    let tag = open_tag.replace('\'', "\"");
    if tag.contains("lang=\"ts\"") || tag.contains("lang=\"typescript\"") {
        "typescript"
    } else {
        "javascript"
    }
}

/// The `<script>` blocks whose tags stand on lines of their own.
fn scripts(lines: &[&str]) -> Vec<Script> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        let opens =
            line.starts_with("<script") && !line.contains("</script>") && line.contains('>');
        let close = opens
            .then(|| (i + 1..lines.len()).find(|&j| lines[j].contains("</script>")))
            .flatten();
        if let Some(close) = close {
            out.push(Script {
                body: i + 1..close,
                language: script_language(line),
            });
            i = close + 1;
            continue;
        }
        i += 1;
    }
    out
}

/// The block a top-level tag (at the start of its line) opens.
fn block_kind(opened: &str) -> Option<&'static str> {
    if opened.starts_with("<template") {
        Some("template")
    } else if opened.starts_with("<style") {
        Some("style")
    } else if opened.starts_with("<script") {
        Some("script")
    } else {
        None
    }
}

/// Chunk a Vue or Svelte component (see the module docs).
pub fn chunk_component(text: &str) -> Chunked {
    let lines: Vec<&str> = text.lines().collect();
    let scripts = scripts(&lines);
    let mut chunks = Vec::new();
    let mut symbols = Vec::new();
    let mut in_script = vec![false; lines.len()];
    for script in &scripts {
        // The script's lines at their places, every other line blank: line numbers hold.
        let masked: String = lines
            .iter()
            .enumerate()
            .map(|(i, line)| if script.body.contains(&i) { *line } else { "" })
            .collect::<Vec<_>>()
            .join("\n");
        let parsed = chunk_file(script.language, &masked);
        chunks.extend(parsed.chunks);
        symbols.extend(parsed.symbols);
        for flag in &mut in_script[script.body.clone()] {
            *flag = true;
        }
    }
    // The rest, in runs of consecutive lines, each run starting anew at a top-level block
    // tag, by line windows labelled with their block.
    let opens_block = |i: usize| block_kind(lines[i]).is_some();
    let mut start = 0;
    let mut kind = None;
    while start < lines.len() {
        if in_script[start] {
            start += 1;
            continue;
        }
        let end = (start + 1..lines.len())
            .find(|&i| in_script[i] || opens_block(i))
            .unwrap_or(lines.len());
        if opens_block(start) {
            kind = block_kind(lines[start]);
        }
        let region = lines[start..end].join("\n");
        for mut window in chunk::line_windows(&region) {
            window.start_line += start as u32;
            window.end_line += start as u32;
            chunks.push(Chunk { kind, ..window });
        }
        start = end;
    }
    chunks.sort_by_key(|c| c.start_line);
    Chunked {
        chunks,
        symbols,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::check;

    const VUE: &str = r#"<template>
  <div class="cart">
    <button @click="checkout">Pay {{ total }}</button>
  </div>
</template>

<script lang="ts">
import { defineComponent } from 'vue';

export function priceWithTax(price: number): number {
  return price * 1.2;
}

export default defineComponent({
  name: 'Cart',
});
</script>

<style scoped>
.cart { display: flex; }
</style>
"#;

    const SVELTE: &str = r#"<script>
  export let items = [];

  function addItem(item) {
    items = [...items, item];
  }
</script>

<ul>
  {#each items as item}
    <li>{item}</li>
  {/each}
</ul>

<style>
  ul { margin: 0; }
</style>
"#;

    #[test]
    fn vue_scripts_are_parsed_in_place_and_the_rest_is_labelled() {
        let chunked = check("vue", VUE, &[("priceWithTax", "function")]);
        let symbol = chunked
            .symbols
            .iter()
            .find(|s| s.name == "priceWithTax")
            .unwrap();
        assert_eq!((symbol.start_line, symbol.end_line), (10, 12));
        let kinds: Vec<(u32, Option<&str>)> = chunked
            .chunks
            .iter()
            .map(|c| (c.start_line, c.kind))
            .collect();
        assert_eq!(kinds.first(), Some(&(1, Some("template"))), "{kinds:?}");
        let style = chunked.chunks.iter().find(|c| c.text.contains(".cart {"));
        assert_eq!(style.map(|c| c.kind), Some(Some("style")), "{kinds:?}");
    }

    #[test]
    fn svelte_scripts_default_to_javascript() {
        let chunked = check("svelte", SVELTE, &[("addItem", "function")]);
        let markup = chunked.chunks.iter().find(|c| c.text.contains("{#each"));
        assert!(markup.is_some(), "{:?}", chunked.chunks);
        // No script: markup only, still covered.
        check("svelte", "<h1>Hello</h1>\n<p>plain</p>\n", &[]);
        // An unclosed script tag is markup too.
        check("vue", "<script>\nlet a = 1;\n", &[]);
    }
}
