//! Rust's own scope facts for the resolver: which crate a test, example or bench file is
//! (`visible`), which macro `name!` means (`macro_named`), the bounds of a generic
//! parameter (`bounds_in`), the type a function returns (`returned_in`) and the module a
//! function is in (`module_of`).

use super::resolve::{Def, Defs, Resolution, Resolver};
use crate::chunk::syntax::refs::Reference;
use crate::error::IndexError;

impl Resolver<'_> {
    /// Whether a local or parameter of `r`'s name is in scope where `r` calls it (`let test
    /// = ...; test(..)`): then a value is called, not a function.
    pub(super) fn rust_local(&self, path: &str, r: &Reference) -> Result<bool, IndexError> {
        let Some(scope) = self.enclosing(path, r.line)? else {
            return Ok(false);
        };
        Ok(self.refs(path)?.bindings.iter().any(|b| {
            // A `let` is not in scope in its own initializer (`let test = |v| test(v)`).
            b.name == r.name && scope.start_line <= b.line && b.line < r.line
        }))
    }
}

/// The Rust test, example or bench directory (each file there its own crate) holding `path`.
fn own_crate(path: &str) -> Option<&str> {
    let mut at = 0;
    for segment in path.split('/') {
        at += segment.len() + 1;
        if matches!(segment, "tests" | "examples" | "benches") && at < path.len() {
            return Some(&path[..at]);
        }
    }
    None
}

/// Of `defs`, those Rust code in `from` can name: a test's, an example's or a bench's
/// definitions only from beside it (they are crates of their own, nobody's dependency).
pub(super) fn visible(defs: &Defs, from: &str) -> Defs {
    let hidden = |d: &Def| own_crate(&d.path).is_some_and(|own| !from.starts_with(own));
    if defs.iter().any(hidden) {
        defs.iter().filter(|d| !hidden(d)).cloned().collect()
    } else {
        defs.clone()
    }
}

/// A Rust macro invocation: the macro of the name, the file's own first.
pub(super) fn macro_named(macros: &Defs, path: &str, name: &str) -> Resolution {
    let own: Vec<&Def> = macros.iter().filter(|d| d.path == path).collect();
    match (own.as_slice(), macros.len()) {
        ([one], _) => Resolution::Resolved((*one).clone(), "same file"),
        (_, 0) => Resolution::Unresolved(format!("no macro `{name}!` defined in the project")),
        (_, 1) => Resolution::Resolved(macros[0].clone(), "macro"),
        _ => Resolution::Ambiguous(macros.clone()),
    }
}

/// The Rust module a function is in: its inline `mod` (`content::f`), else its file's
/// (`size_hint.rs`, `size_hint/mod.rs`; none for a crate root).
pub(super) fn module_of(def: &Def) -> Option<&str> {
    if let Some((outer, _)) = def.qualified.rsplit_once("::") {
        return Some(outer.rsplit("::").next().unwrap_or(outer));
    }
    let (dirs, file) = def.path.rsplit_once('/').unwrap_or(("", &def.path));
    let stem = file.strip_suffix(".rs")?;
    match stem {
        "mod" => dirs.rsplit('/').next(),
        "lib" | "main" => None,
        _ => Some(stem),
    }
}

/// The bounds of `ty` written in `signature`: each `ty: A + B<T>` after `<`, `,` or
/// `where`, as bare trait names (`A`, `B`); lifetimes and `?Sized` dropped.
pub(super) fn bounds_in(signature: &str, ty: &str) -> Vec<String> {
    let mut out = Vec::new();
    // No name, no bounds (and `find("")` would match in place forever).
    if ty.is_empty() {
        return out;
    }
    let mut rest = signature;
    while let Some(at) = rest.find(ty) {
        let before = rest[..at].trim_end();
        let after = rest[at + ty.len()..].trim_start();
        rest = &rest[at + ty.len()..];
        let starts = before.ends_with(['<', ',', '(']) || before.ends_with("where");
        let Some(list) = after.strip_prefix(':').filter(|a| !a.starts_with(':')) else {
            continue;
        };
        if !starts {
            continue;
        }
        // Up to the end of this bound list: a `,`, `>` or `{` outside angle brackets.
        let mut depth = 0usize;
        let end = list
            .char_indices()
            .find(|&(_, c)| match c {
                '<' | '(' => {
                    depth += 1;
                    false
                }
                '>' | ')' if depth > 0 => {
                    depth -= 1;
                    false
                }
                ',' | '>' | '{' | ')' | ';' | '=' => true,
                _ => false,
            })
            .map_or(list.len(), |(i, _)| i);
        for bound in list[..end].split('+') {
            let bound = bound.trim().trim_start_matches('?');
            let path = bound.split('<').next().unwrap_or(bound).trim();
            let name = path.rsplit("::").next().unwrap_or(path);
            if !name.is_empty()
                && !bound.starts_with('\'')
                && bound != "Sized"
                && name.chars().all(|c| c.is_alphanumeric() || c == '_')
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// What follows the parameter list opening at `open` (its parentheses matched), if it closes.
pub(super) fn after_parameters(signature: &str, open: usize) -> Option<&str> {
    let mut depth = 0usize;
    for (at, c) in signature.get(open..)?.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return signature.get(open + at + 1..);
                }
            }
            _ => {}
        }
    }
    None
}

/// The type a function's `signature` says it returns, as a bare name (`-> Self`,
/// `-> Map<Self, F>`: `Map`, `-> &'a mut Foo`: `Foo`); none for a value of no single type
/// (`Result`, `Option`, `impl Trait`, a tuple) or a function returning nothing.
/// With `unwrapped`, the type inside a returned `Option` or `Result` instead (`fn
/// get(&self) -> Option<Conn>`: `Conn`), as `f()?` and `f().unwrap()` give it.
pub(super) fn returned_in_as(signature: &str, unwrapped: bool) -> Option<String> {
    // The `->` after the parameter list (not one inside it: `f: impl Fn() -> X`).
    let rest = after_parameters(signature, signature.find('(')?)?
        .trim_start()
        .strip_prefix("->")?;
    type_named(rest, unwrapped)
}

/// The type a written type names (`&'a mut de::Field` -> `Field`); a wrapper names none,
/// but `Option` and `Result` name their first argument's with `unwrapped`.
fn type_named(written: &str, unwrapped: bool) -> Option<String> {
    let ty = referent(written.trim_start().trim_start_matches('&'));
    let path: &str = ty
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .next()
        .unwrap_or("");
    let name = path.rsplit("::").next().unwrap_or(path);
    if unwrapped && matches!(name, "Option" | "Result") {
        let inner = ty[path.len()..].trim_start().strip_prefix('<')?;
        return type_named(inner, false);
    }
    let wrapper = matches!(
        name,
        "Result" | "Option" | "Box" | "Vec" | "Rc" | "Arc" | "Cow"
    );
    (name.chars().next().is_some_and(char::is_uppercase) && !wrapper).then(|| name.to_string())
}

/// The type a reference refers to, written after its `&`: without its lifetime and `mut`
/// (`'a mut Foo<T>`: `Foo<T>`).
pub(super) fn referent(after_ampersand: &str) -> &str {
    let mut ty = after_ampersand.trim_start();
    if ty.starts_with('\'') {
        ty = ty.split_once(' ').map_or("", |(_, t)| t).trim_start();
    }
    ty.strip_prefix("mut ").unwrap_or(ty)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unwrapped_return_type_is_inside_its_option_or_result() {
        use super::returned_in_as;
        let ty = |sig| returned_in_as(sig, true);
        assert_eq!(ty("fn get(&self) -> Option<Conn>").as_deref(), Some("Conn"));
        assert_eq!(
            ty("fn open() -> io::Result<&'a mut fs::File>").as_deref(),
            Some("File")
        );
        assert_eq!(ty("fn f() -> Result<Option<Conn>, E>"), None);
        assert_eq!(ty("fn f() -> Conn").as_deref(), Some("Conn"));
        assert_eq!(returned_in_as("fn get(&self) -> Option<Conn>", false), None);
    }

    #[test]
    fn return_types_are_read_from_signatures() {
        let ty = |sig| super::returned_in_as(sig, false);
        assert_eq!(ty("pub fn new() -> Self").as_deref(), Some("Self"));
        assert_eq!(
            ty("fn map<F>(self, f: F) -> Map<Self, F> where F: Fn(u8) -> u8,").as_deref(),
            Some("Map")
        );
        assert_eq!(
            ty("fn get(&self) -> &'a mut de::Field").as_deref(),
            Some("Field")
        );
        // A parameter's `->` is not the function's; wrappers and no return type say nothing.
        assert_eq!(ty("fn call(f: impl Fn() -> Foo)"), None);
        assert_eq!(ty("fn open() -> Result<Self, Error>"), None);
        assert_eq!(ty("fn count(&self) -> usize"), None);
    }
}
