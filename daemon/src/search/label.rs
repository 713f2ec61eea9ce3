//! What a result is labelled with: the symbols its chunk defines, the one the query asks for
//! first. A chunk holding several small definitions (`rewind_body`, then a function
//! appended after it) was shown under its first one even when the query found the second.

use crate::index::lexical::LexicalHit;
use crate::index::store::SymbolRecord;

/// Label each of `hits` (a page): `symbol` and `kind` become the definition inside the
/// chunk that the query names (by name, or a word of it), else the chunk's own, else its
/// first; `defines` lists the chunk's other definitions in order. `defined` gives the
/// symbols whose definitions start inside a hit's lines, in order.
pub fn label(
    query: &str,
    hits: &mut [LexicalHit],
    defined: impl Fn(&LexicalHit) -> Vec<SymbolRecord>,
) {
    let query = query.to_lowercase();
    let words: Vec<&str> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.len() > 1)
        .collect();
    let asked = |name: &str| {
        let name = name.to_lowercase();
        words.contains(&name.as_str()) || (name.len() >= 4 && query.contains(&name))
    };
    for hit in hits {
        let inside = defined(hit);
        if inside.is_empty() {
            continue;
        }
        let own = |qualified: &str| hit.symbol.as_deref() == Some(qualified);
        let chosen = inside
            .iter()
            .find(|s| asked(&s.name))
            .or_else(|| inside.iter().find(|s| own(&s.qualified)))
            .unwrap_or(&inside[0]);
        // A chunk inside a larger definition (a method's lines under its class) keeps its
        // own label unless the query names one of the definitions it holds.
        let enclosing = hit
            .symbol
            .as_deref()
            .is_some_and(|own| !inside.iter().any(|s| s.qualified == own));
        if !enclosing || asked(&chosen.name) {
            hit.symbol = Some(chosen.qualified.clone());
            hit.kind = Some(chosen.kind.clone());
        }
        hit.defines = inside
            .iter()
            .filter(|s| Some(s.qualified.as_str()) != hit.symbol.as_deref())
            .map(|s| s.qualified.clone())
            .collect();
    }
}
