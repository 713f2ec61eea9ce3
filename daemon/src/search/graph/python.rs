//! Python values typed by what is written elsewhere, as a type checker reads them: a local
//! given what a call returns (`writer = await self._start(req)` with `async def _start(...)
//! -> StreamWriter`; a TypeScript local the same way, by the return type [`super::script`]
//! reads), an attribute of a typed value (`request.writer`: a field declared in
//! the class, or a property's return annotation), up a class's bases. Only annotations are
//! read, never inferred: a callee without one, or candidates that disagree, leave the
//! value untyped.

use std::cell::{Cell, RefCell};

use rustc_hash::FxHashMap;

use super::resolve::{CLASS_LIKE, Def, Resolution, Resolver};
use crate::chunk::syntax::refs::{RefKind, Reference};
use crate::chunk::syntax::{DECLARED, capitalised};
use crate::error::IndexError;

/// How many calls deep one value's type is looked for (`a = f()` where `f` returns
/// `g()`'s...): each level resolves a call, which may type another value.
const MAX_NESTED: u32 = 2;

/// Guards the resolution of calls made while typing a value, and keeps each call's type
/// for the request (a walk meets the same local at every call on it).
#[derive(Default)]
pub(super) struct Nesting {
    depth: Cell<u32>,
    typed: RefCell<FxHashMap<(String, u32, String), Option<String>>>,
}

impl Nesting {
    /// Forget the types worked out (their reads are not noted again when used).
    pub(super) fn forget(&self) {
        self.typed.borrow_mut().clear();
    }
}

impl Resolver<'_> {
    /// The type of the value of `call` (`recv.f()`, `f()`) written at `line` of `path`:
    /// the return annotation of the definition it calls, when the call resolves to one.
    pub(super) fn called_type(
        &self,
        path: &str,
        line: u32,
        call: &str,
    ) -> Result<Option<String>, IndexError> {
        let Some(bare) = call.strip_suffix("()") else {
            return Ok(None);
        };
        let (receiver, name) = match bare.rsplit_once('.') {
            Some((receiver, name)) => (Some(receiver.to_string()), name),
            None => (None, bare),
        };
        let nesting = &self.nesting;
        let depth = nesting.depth.get();
        if depth >= MAX_NESTED || name.is_empty() {
            return Ok(None);
        }
        // Only a type found from the top is kept: deeper, the guard may have cut it short.
        let key = (path.to_string(), line, call.to_string());
        if depth == 0
            && let Some(ty) = nesting.typed.borrow().get(&key)
        {
            return Ok(ty.clone());
        }
        nesting.depth.set(depth + 1);
        let reference = Reference {
            name: name.to_string(),
            line,
            kind: RefKind::Call,
            receiver,
        };
        let resolution = self.resolve(path, &reference);
        nesting.depth.set(depth);
        let ty = match resolution? {
            Resolution::Resolved(def, _) => self.agreed_return(&[def])?,
            _ => None,
        };
        if depth == 0 {
            nesting.typed.borrow_mut().insert(key, ty.clone());
        }
        Ok(ty)
    }

    /// The type every one of `defs` says it returns (a class called: the class).
    fn agreed_return(&self, defs: &[Def]) -> Result<Option<String>, IndexError> {
        let mut agreed: Option<String> = None;
        for def in defs {
            let ty = if CLASS_LIKE.contains(&def.kind.as_str()) {
                def.name.clone()
            } else {
                let symbols = self.symbols(&def.path)?;
                let Some(symbol) = def.record_in(&symbols) else {
                    return Ok(None);
                };
                let written = match self.language(&def.path)?.as_str() {
                    "typescript" | "tsx" => super::script::returned_in(&symbol.signature),
                    _ => returned_in(&symbol.signature),
                };
                match written {
                    Some(ty) if ty == "Self" => match self.owner(def)? {
                        Some(owner) => owner.name.clone(),
                        None => return Ok(None),
                    },
                    Some(ty) => ty,
                    None => return Ok(None),
                }
            };
            if agreed.as_ref().is_some_and(|a| *a != ty) {
                return Ok(None);
            }
            agreed = Some(ty);
        }
        Ok(agreed)
    }

    /// The type of the attribute `attribute` of a value of type `owner`: declared in the
    /// class (`writer: StreamWriter` in its body, `self.writer: StreamWriter`), given one
    /// type of value in it (`self.writer = StreamWriter()`), or returned by a property of
    /// the name; else the same up its bases.
    pub(super) fn attribute_type(
        &self,
        owner: &str,
        attribute: &str,
    ) -> Result<Option<String>, IndexError> {
        // Classes of one level that disagree leave the attribute untyped.
        let found = self.up_the_bases(vec![owner.to_string()], Vec::new(), |_, level| {
            let mut found: Option<String> = None;
            for class in level {
                if let Some(ty) = self.own_attribute(class, attribute)? {
                    if found.as_ref().is_some_and(|f| *f != ty) {
                        return Ok(Some(None));
                    }
                    found = Some(ty);
                }
            }
            Ok(found.map(Some))
        })?;
        Ok(found.flatten())
    }

    /// `attribute` as the classes named `class` themselves define it.
    fn own_attribute(&self, class: &str, attribute: &str) -> Result<Option<String>, IndexError> {
        let field = format!("self.{attribute}");
        let mut declared: Vec<String> = Vec::new();
        let mut given: Vec<String> = Vec::new();
        let mut properties: Vec<Def> = Vec::new();
        for def in self.definitions(class)?.iter() {
            if def.kind != "class" || self.language(&def.path)? != "python" {
                continue;
            }
            let within = |line: u32| def.lines.0 <= line && line <= def.lines.1;
            for b in self.refs(&def.path)?.bindings.iter() {
                if !within(b.line) || (b.name != attribute && b.name != field) {
                    continue;
                }
                let list = match b.type_name.strip_prefix(DECLARED) {
                    Some(ty) => (&mut declared, ty),
                    None => (&mut given, b.type_name.as_str()),
                };
                if !list.0.iter().any(|t| t == list.1) {
                    list.0.push(list.1.to_string());
                }
            }
            for method in self.definitions(attribute)?.iter() {
                if method.path == def.path
                    && within(method.lines.0)
                    && self.owner(method)?.is_some_and(|o| o.name == class)
                {
                    properties.push(method.clone());
                }
            }
        }
        if declared.len() == 1 {
            return Ok(declared.pop());
        }
        if !declared.is_empty() {
            return Ok(None);
        }
        // Values of one written type (`self.x = Foo()`); any other value leaves it unknown.
        if given.len() == 1 && !given[0].starts_with('=') && capitalised(&given[0]) {
            return Ok(given.pop());
        }
        if !given.is_empty() || properties.is_empty() {
            return Ok(None);
        }
        self.agreed_return(&properties)
    }
}

/// The type a Python definition's `signature` says it returns (`-> Foo`, `-> "Foo"`,
/// `-> Foo | None`, `-> Optional[Foo]`, `-> web.Response`): a bare class name, or `Self`.
/// None for nothing returned, a builtin, a container (`list[Foo]` is no `Foo`) or a union
/// of several types.
pub(super) fn returned_in(signature: &str) -> Option<String> {
    let def = signature.find("def ")?;
    let open = def + signature[def..].find('(')?;
    let rest = super::rust::after_parameters(signature, open)?
        .trim_start()
        .strip_prefix("->")?;
    annotated(rest.trim().trim_end_matches(':'), 0)
}

/// The one class an annotation names.
fn annotated(text: &str, depth: u32) -> Option<String> {
    let text = text.trim().trim_matches(|c| c == '"' || c == '\'').trim();
    if depth > 3 || text.is_empty() {
        return None;
    }
    let alternatives: Vec<&str> = top_level(text, '|')
        .into_iter()
        .map(str::trim)
        .filter(|a| *a != "None")
        .collect();
    let [one] = alternatives.as_slice() else {
        return None;
    };
    if let Some(open) = one.find('[') {
        let head = one[..open].rsplit('.').next().unwrap_or("");
        let inner = one[open + 1..].strip_suffix(']')?;
        let args: Vec<&str> = top_level(inner, ',')
            .into_iter()
            .map(str::trim)
            .filter(|a| *a != "None")
            .collect();
        return match (head, args.as_slice()) {
            ("Optional" | "Union" | "Awaitable" | "Final" | "ClassVar", [arg]) => {
                annotated(arg, depth + 1)
            }
            ("Annotated", [arg, ..]) => annotated(arg, depth + 1),
            _ => None,
        };
    }
    let name = one.rsplit('.').next().unwrap_or(one);
    let plain = name.chars().all(|c| c.is_alphanumeric() || c == '_');
    (plain && capitalised(name) && !matches!(name, "Any" | "NoReturn" | "Never"))
        .then(|| name.to_string())
}

/// `text` split at `separator` outside brackets.
fn top_level(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            c if c == separator && depth == 0 => {
                parts.push(&text[start..at]);
                start = at + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::returned_in;

    #[test]
    fn return_annotations_name_one_class() {
        let cases = [
            (
                "async def _start(self, request: \"BaseRequest\") -> AbstractStreamWriter:",
                Some("AbstractStreamWriter"),
            ),
            (
                "def f(self) -> AbstractStreamWriter | None:",
                Some("AbstractStreamWriter"),
            ),
            (
                "def f(self) -> Optional[\"Application\"]:",
                Some("Application"),
            ),
            ("def f(self) -> \"web.Response\":", Some("Response")),
            (
                "@property def writer(self) -> StreamWriter:",
                Some("StreamWriter"),
            ),
            ("@cache(size=3) def f(x=(1, 2)) -> Self:", Some("Self")),
            ("def f(self) -> None:", None),
            ("def f(self) -> bool:", None),
            ("def f(self) -> list[Foo]:", None),
            ("def f(self) -> List[Foo]:", None),
            ("def f(self) -> Foo | Bar:", None),
            ("def f(self) -> Union[Foo, Bar]:", None),
            ("def f(self, g: Callable[[], Foo]):", None),
        ];
        for (signature, expected) in cases {
            assert_eq!(returned_in(signature).as_deref(), expected, "{signature}");
        }
    }
}
