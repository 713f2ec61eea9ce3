//! What a chunk's text says when the syntax walk has not named it: whether it defines a
//! name (by a definition keyword or an assignment at its top level).

/// Words that introduce a definition in the languages the index reads (and those it only
/// reads as text: Lua, Haskell, Kotlin, Swift, Elixir, Zig, ...).
const DEFINITION_KEYWORDS: &[&str] = &[
    "fn",
    "def",
    "defp",
    "defmodule",
    "defmacro",
    "func",
    "function",
    "class",
    "struct",
    "trait",
    "interface",
    "enum",
    "type",
    "typealias",
    "union",
    "module",
    "object",
    "protocol",
    "extension",
    "record",
    "impl",
    "val",
    "var",
    "let",
    "const",
    "local",
    "data",
    "newtype",
    "macro_rules!",
    "sub",
    "proc",
    "fun",
];

/// Words that declare a variable: a definition at a file's top level, a local inside a body.
const LOCAL_KEYWORDS: &[&str] = &["var", "let", "const", "local", "val"];

/// Whether `body` defines `name` (lowercase) by its text: a definition keyword right before
/// it (`local function pick`, `data StackSet`, `pub const Parser`, `function M.pick`), or a
/// line starting with it followed by `=` (unindented), `::` as a signature or `:`
/// (`withDisplay ::`, `TelescopeGlobalState = {}`, `res.send = function`). Not a local
/// variable (an indented `var view` or `args = args[1:]`), a path (`Deserialize::new(d)`) nor
/// an import (`const send = require('send')`). The fallback for languages
/// without syntax chunking, and for definitions the syntax walk does not name.
///
/// `lower` is the body lowercased (once per chunk, for every name asked about), `name` a
/// lowercase name.
pub(super) fn defines_in_text(lower: &str, name: &str) -> bool {
    if name.len() < 3 || !lower.contains(name) {
        return false;
    }
    lower.lines().any(|line| {
        let indented = line.starts_with([' ', '\t']);
        let lower = line.trim_start();
        let Some(at) = find_word(lower, name) else {
            return false;
        };
        let mut before: Vec<&str> = lower[..at].split_whitespace().collect();
        let after = lower[at + name.len()..].trim_start();
        // A member of a module or object: `function M.pick(`, `res.send = function`.
        let member = before.last().is_some_and(|w| w.ends_with(['.', ':']));
        if member {
            before.pop();
        }
        // The value assigned to it (`= value`, not `==`), and whether that defines it
        // rather than importing another module.
        let value = after
            .strip_prefix('=')
            .filter(|v| !v.starts_with('='))
            .map(str::trim_start);
        let assigned = value.is_some_and(|v| !IMPORTS.iter().any(|i| v.starts_with(i)));
        match before.last() {
            // An indented `var view` is a local variable, not what the query asks for.
            Some(word) if LOCAL_KEYWORDS.contains(word) => {
                !indented && (value.is_none() || assigned)
            }
            Some(word) => DEFINITION_KEYWORDS.contains(&word.trim_start_matches("pub(crate)")),
            // `res.send = function send(body)`, not `exports.response = res`.
            None if member => {
                !indented && value.is_some_and(|v| MEMBER_VALUES.iter().any(|m| v.starts_with(m)))
            }
            None => {
                // A signature (`withDisplay :: X a`), not a path (`Deserialize::deserialize(d)`).
                match after.strip_prefix("::") {
                    Some(rest) => rest.is_empty() || rest.starts_with(char::is_whitespace),
                    None => {
                        (assigned && !indented)
                            || (after.starts_with(':') && !after.starts_with(":="))
                    }
                }
            }
        }
    })
}

/// What a member's value starts with when the assignment defines it.
const MEMBER_VALUES: &[&str] = &["function", "class", "async", "(", "{"];

/// What an assignment of an import starts with: `const send = require('send')` names
/// another module, it does not define one.
const IMPORTS: &[&str] = &["require(", "require ", "import(", "await import("];

/// The byte offset of `word` in `text` as a whole word.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(pos) = text[from..].find(word) {
        let at = from + pos;
        let end = at + word.len();
        let ok_before = text[..at].chars().next_back().is_none_or(|c| !is_word(c));
        let ok_after = text[end..].chars().next().is_none_or(|c| !is_word(c));
        if ok_before && ok_after {
            return Some(at);
        }
        from = at + word.len().max(1);
    }
    None
}
