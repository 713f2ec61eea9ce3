//! Receivers: what `x.name(...)` means when `x` is not `self` — a name declared with a
//! type (a parameter, local or field, as written), an imported module, a class named or
//! constructed there (`Foo.bar`, `Foo().bar`), else a value of unknown type: ambiguous.

use super::resolve::{CLASS_LIKE, Def, Defs, Resolution, Resolver};
use super::rust;
use crate::chunk::syntax::refs::Import;
use crate::chunk::syntax::{DECLARED, capitalised};
use crate::error::IndexError;

impl Resolver<'_> {
    /// The type `receiver` was declared with nearest above `line`: a local or parameter of
    /// the same definition (or of the file's top level), or a field (`self.x`, `this.x`)
    /// of the same class.
    pub(super) fn declared_type(
        &self,
        path: &str,
        line: u32,
        receiver: &str,
    ) -> Result<Option<String>, IndexError> {
        let element = unindexed(receiver);
        self.declared_type_at(path, line, element.as_deref().unwrap_or(receiver), 0)
    }

    fn declared_type_at(
        &self,
        path: &str,
        line: u32,
        receiver: &str,
        depth: u32,
    ) -> Result<Option<String>, IndexError> {
        // Rust's `let x = self.get()?;` (or `.unwrap()`): what the callee returns, out of
        // its `Option` or `Result`.
        if let Some(call) = receiver.strip_suffix('?')
            && call.ends_with("()")
        {
            return self.returned_type_as(path, line, call, depth, true);
        }
        // Python's `x = self.make()`: what the call returns.
        if receiver.ends_with("()") {
            return match self.language(path)?.as_str() {
                "python" | "typescript" | "tsx" => self.called_type(path, line, receiver),
                // Rust's `let x = self.make();`: the callee's written return type (a call
                // written as the receiver itself is `declared`'s to type, as returned).
                "rust" if depth > 0 => self.returned_type(path, line, receiver, depth),
                _ => Ok(None),
            };
        }
        let refs = self.refs(path)?;
        // A field may also be declared in its class's body (`conn: Connection`).
        let bare_field = receiver
            .strip_prefix("self.")
            .or_else(|| receiver.strip_prefix("this."));
        let field = receiver.starts_with("self.") || receiver.starts_with("this.");
        let scope = if field {
            self.enclosing_class(path, line)?
                .map(|s| (s.start_line, s.end_line))
        } else {
            self.enclosing_with(path, line, |s| {
                (!CLASS_LIKE.contains(&s.kind.as_str())).then_some((s.start_line, s.end_line))
            })?
            .flatten()
        };
        let within = |l: u32| match scope {
            Some((start, end)) => start <= l && l <= end,
            None => true,
        };
        let mut best: Option<&crate::chunk::syntax::refs::Binding> = None;
        // A field given values of several types in its class has none known, unless its
        // type is written as a declaration (`self.x: Base` then `self.x = Sub()`): then
        // it has that one, as a type checker reads it.
        let mut field_types: Vec<String> = Vec::new();
        let mut declared_types: Vec<String> = Vec::new();
        let names: &[&str] = match bare_field {
            Some(bare) => &[receiver, bare],
            None => &[receiver],
        };
        for b in refs.bindings_named(names) {
            let class_body = bare_field.is_some_and(|f| f == b.name)
                && self.enclosing_with(path, b.line, |s| CLASS_LIKE.contains(&s.kind.as_str()))?
                    == Some(true);
            if b.name != receiver && !class_body {
                continue;
            }
            // A field may be declared anywhere in its class; a local only above its use, in
            // the function around the use or one enclosing it (a nested function sees its
            // outer function's names, not a sibling's), or at the top level.
            let usable = if field {
                within(b.line)
            } else {
                b.line <= line
                    && match self.enclosing_with(path, b.line, |s| {
                        (
                            !CLASS_LIKE.contains(&s.kind.as_str()),
                            s.start_line,
                            s.end_line,
                        )
                    })? {
                        None => true,
                        Some(_) if scope.is_none() => true,
                        Some((plain, start, end)) => plain && start <= line && line <= end,
                    }
            };
            if usable && field {
                if let Some(ty) = b.type_name.strip_prefix(DECLARED) {
                    if !declared_types.iter().any(|t| t == ty) {
                        declared_types.push(ty.to_string());
                    }
                    continue;
                }
                // `self.x = x`: the type `x` has there (a parameter's), when it is known.
                let ty = match b.type_name.strip_prefix('=') {
                    Some(other) if depth < 3 => self
                        .declared_type_at(path, b.line, other, depth + 1)?
                        .unwrap_or_else(|| b.type_name.clone()),
                    _ => b.type_name.clone(),
                };
                if !field_types.contains(&ty) {
                    field_types.push(ty);
                }
            }
            // The nearest above; one on the use's own line only when there is none above
            // (`let value = f(value)`: the new `value` is not yet in scope).
            let key = |l: u32| (l > line, l == line, l.abs_diff(line));
            if usable && best.is_none_or(|x| key(x.line) > key(b.line)) {
                best = Some(b);
            }
        }
        match declared_types.len() {
            0 => {}
            1 => return Ok(declared_types.pop()),
            _ => return Ok(None),
        }
        if field_types.len() > 1 {
            return Ok(None);
        }
        match best {
            Some(b) => match b.type_name.strip_prefix('=') {
                Some(other) if depth < 3 => self.declared_type_at(path, b.line, other, depth + 1),
                Some(_) => Ok(None),
                None if b.type_name.is_empty() => Ok(None),
                None => Ok(Some(b.type_name.trim_start_matches(DECLARED).to_string())),
            },
            // `x.field`: the field's type in the class or struct `x` is (`self`: the
            // enclosing one, or the one the `impl` around is for): Rust's as declared,
            // Python's declared, given or a property's, up its bases.
            None if depth < 3 => {
                let language = self.language(path)?;
                if language != "rust" && language != "python" {
                    return Ok(None);
                }
                let Some((head, field)) = receiver.rsplit_once('.') else {
                    return Ok(None);
                };
                let owner = if head == "self" {
                    self.enclosing_class(path, line)?.map(|c| c.name)
                } else {
                    self.declared_type_at(path, line, head, depth + 1)?
                };
                match owner {
                    Some(owner) if language == "python" => self.attribute_type(&owner, field),
                    Some(owner) => self.field_type(&owner, field),
                    None => Ok(None),
                }
            }
            None => Ok(None),
        }
    }

    /// Of the members of several types named `ty`, those of the one `path` sees: its own,
    /// else the one it imports (`use crate::de::Parameters`), else all of them.
    fn types_in_scope(
        &self,
        path: &str,
        ty: &str,
        members: Vec<Def>,
    ) -> Result<Vec<Def>, IndexError> {
        let mut own = Vec::new();
        for def in &members {
            if def.path == path && self.owner(def)?.is_some_and(|o| o.name == ty) {
                own.push(def.clone());
            }
        }
        if !own.is_empty() {
            return Ok(own);
        }
        if let Some(import) = self.import_of(path, ty)? {
            let all: Vec<&Def> = members.iter().collect();
            let language = self.language(path)?;
            if let Resolution::Resolved(def, _) =
                self.in_module(path, &language, &import.module, &all, "import")
            {
                return Ok(vec![def]);
            }
        }
        Ok(members)
    }

    /// The type the field `field` of the struct(s) named `owner` is declared with, when
    /// they agree.
    fn field_type(&self, owner: &str, field: &str) -> Result<Option<String>, IndexError> {
        let mut found: Option<String> = None;
        for def in self.definitions(owner)?.iter() {
            if !matches!(def.kind.as_str(), "struct" | "class") || def.name != owner {
                continue;
            }
            for b in self.refs(&def.path)?.bindings.iter() {
                if b.name == field && def.lines.0 <= b.line && b.line <= def.lines.1 {
                    let ty = b.type_name.trim_start_matches(DECLARED);
                    if found.as_ref().is_some_and(|f| f != ty) {
                        return Ok(None);
                    }
                    found = Some(ty.to_string());
                }
            }
        }
        Ok(found.filter(|t| !t.is_empty() && !t.starts_with('=')))
    }

    /// `receiver.name` where the receiver was declared with a type: that type's member,
    /// else one of its bases'.
    pub(super) fn declared(
        &self,
        path: &str,
        line: u32,
        receiver: &str,
        methods: &Defs,
    ) -> Result<Option<Resolution>, IndexError> {
        let (ty, how) = if let Some(ty) = self.declared_type(path, line, receiver)? {
            (ty, "declared type")
        } else if let Some(ty) = self.returned_type(path, line, receiver, 0)? {
            (ty, "returned type")
        } else if let Some(ty) = self.dereferenced_self(path, line, receiver)? {
            (ty, "dereferenced self")
        } else if let Some(ty) = self.imported_value_type(path, receiver)? {
            (ty, "imported value's type")
        } else {
            return Ok(None);
        };
        // A generic parameter (`visitor: V` with `V: Visitor`) stands for its bounds.
        let mut types = vec![ty.clone()];
        types.extend(self.bounds(path, line, &ty)?);
        let mut own = self.owned_by(methods, &types)?;
        if own.len() > 1 && self.language(path)? == "rust" {
            own = self.types_in_scope(path, &ty, own)?;
        }
        match own.len() {
            1 => return Ok(Some(Resolution::Resolved(own.remove(0), how))),
            0 => {}
            _ => return Ok(Some(Resolution::Ambiguous(own.into()))),
        }
        // The declared type's bases (one level), wherever the type is defined.
        let bases = self.bases_of_named(&ty)?;
        let mut inherited = self.owned_by(methods, &bases)?;
        Ok(match inherited.len() {
            1 => Some(Resolution::Resolved(
                inherited.remove(0),
                "declared type's base",
            )),
            0 => None,
            _ => Some(Resolution::Ambiguous(inherited.into())),
        })
    }

    /// `receiver.name` where the receiver is not `self`: an imported module, a class, or a
    /// value of a type not written down.
    pub(super) fn qualified(
        &self,
        path: &str,
        language: &str,
        receiver: &str,
        methods: &Defs,
        functions: &Defs,
        name: &str,
    ) -> Result<Resolution, IndexError> {
        // A module bound by an import (`np.array`, `os.path.join`, `fmt.Println`).
        let (module, maybe_class) = match self.import_of(path, receiver)? {
            Some(import) if import.name.is_none() => (Some(import.module), false),
            Some(import) if import.name.as_deref() == Some("*") => (Some(import.module), false),
            // `from pkg import mod` then `mod.f()`: the module is `pkg.mod`, unless no such
            // module holds it and the name is a class's (`from base import Base` then
            // `Base.__init__(self)`).
            Some(import) if language == "python" => {
                let name = import.name.unwrap_or_default();
                let class = capitalised(&name);
                (
                    Some(format!("{}.{name}", import.module.trim_end_matches('.'))),
                    class,
                )
            }
            _ => (None, false),
        };
        if let Some(module) = module {
            let all: Vec<&Def> = functions.iter().chain(methods.iter()).collect();
            let found = self.in_module(path, language, &module, &all, "module");
            if !(maybe_class && matches!(found, Resolution::Unresolved(_))) {
                return Ok(found);
            }
        }
        // JS/TS `import { util } from "./index"` where the index says `export * as util from
        // "./util"`: a module again.
        if let Some((from, module)) = self.namespace_reexported(path, language, receiver)? {
            let all: Vec<&Def> = functions.iter().chain(methods.iter()).collect();
            return Ok(self.in_module(&from, language, &module, &all, "module"));
        }
        // A class named by the receiver (`Foo.bar`, `Foo::new`, an alias of one), or one
        // constructed there (`Foo().bar`, `new Foo().bar`); type arguments dropped
        // (`Foo::<T>::new`).
        let receiver = &without_type_arguments(receiver);
        let constructed = constructor(receiver);
        let named = constructed.unwrap_or(receiver);
        let last = named.rsplit(['.', ':']).next().unwrap_or(named).trim();
        let imported = self.import_of(path, last)?;
        let class_name = match &imported {
            Some(Import {
                name: Some(name), ..
            }) if name != "*" => name.clone(),
            _ => last.to_string(),
        };
        // A capitalised name is a type; an imported one names something definite (a
        // namespace or object: `import { util } from ...; util.f()`).
        if capitalised(last) || imported.is_some() {
            let mut members = self.owned_by(methods, std::slice::from_ref(&class_name))?;
            // Several types of the name, named bare: the one the file defines or imports.
            if members.len() > 1 && named == last && language == "rust" {
                let mut seen = self.types_in_scope(path, &class_name, members.clone())?;
                if seen.len() == 1 {
                    return Ok(Resolution::Resolved(seen.remove(0), "named type, in scope"));
                }
            }
            match members.len() {
                1 => return Ok(Resolution::Resolved(members.remove(0), "named type")),
                0 => {}
                _ => return Ok(Resolution::Ambiguous(members.into())),
            }
        }
        // Rust's `module::f(..)`: the function of the module the path ends with.
        if language == "rust" && last.chars().next().is_some_and(char::is_lowercase) {
            let in_module: Vec<&Def> = functions
                .iter()
                .filter(|d| rust::module_of(d) == Some(last))
                .collect();
            if let [one] = in_module.as_slice() {
                return Ok(Resolution::Resolved((*one).clone(), "module path"));
            }
        }
        // A value whose type is not written down: any method of the name (never resolved,
        // however few there are: a library's method of the same name may be meant).
        let mut candidates = methods;
        if candidates.is_empty() {
            candidates = functions;
        }
        Ok(if candidates.is_empty() {
            Resolution::Unresolved(format!("no `{name}` defined in the project"))
        } else {
            Resolution::Ambiguous(candidates.clone())
        })
    }

    /// The file and module behind a JS/TS name imported from a module that re-exports a
    /// module under it (`export * as util from "./util.js"`).
    fn namespace_reexported(
        &self,
        path: &str,
        language: &str,
        receiver: &str,
    ) -> Result<Option<(String, String)>, IndexError> {
        if !matches!(language, "javascript" | "typescript" | "tsx") {
            return Ok(None);
        }
        let Some(Import {
            module,
            name: Some(name),
            ..
        }) = self.import_of(path, receiver)?
        else {
            return Ok(None);
        };
        let Some(file) = self.indexed_module_files(language, path, &module).next() else {
            return Ok(None);
        };
        let refs = self.refs(&file)?;
        Ok(refs
            .imports
            .iter()
            .find(|i| i.local == name && i.name.is_none())
            .map(|i| (file.clone(), i.module.clone())))
    }

    /// The type of a Rust receiver that is itself a call, by the return type written in
    /// the called function's signature: `Foo::new().f()` (`new` of `Foo` returns `Self`),
    /// `iter.map(g).f()` (`map` of `iter`'s type, or of one of its bounds, returns `Map<Self,
    /// F>`), `make().f()`. Known only when every candidate callee says the same type.
    fn returned_type(
        &self,
        path: &str,
        line: u32,
        receiver: &str,
        depth: u32,
    ) -> Result<Option<String>, IndexError> {
        self.returned_type_as(path, line, receiver, depth, false)
    }

    /// [`Self::returned_type`]; with `unwrapped`, the type inside the `Option` or `Result`
    /// the callee returns (`let conn = self.get()?;`).
    fn returned_type_as(
        &self,
        path: &str,
        line: u32,
        receiver: &str,
        depth: u32,
        unwrapped: bool,
    ) -> Result<Option<String>, IndexError> {
        if depth > 2 || self.language(path)? != "rust" {
            return Ok(None);
        }
        let receiver = without_type_arguments(receiver);
        let Some((head, callee)) = called(&receiver) else {
            return Ok(None);
        };
        let all: Defs = self.definitions(callee)?.iter().cloned().collect();
        let defs = rust::visible(&all, path);
        // The type the callee is a member of, and what `Self` stands for.
        let owner = match head {
            None => None,
            Some(("self", _)) => self.enclosing_class(path, line)?.map(|c| c.name),
            Some((ty, "::")) if ty.chars().next().is_some_and(char::is_uppercase) => {
                Some(ty.rsplit("::").next().unwrap_or(ty).to_string()).filter(|t| !t.is_empty())
            }
            Some((value, _)) => match self.declared_type_at(path, line, value, depth + 1)? {
                Some(ty) => Some(ty),
                None => self.returned_type(path, line, value, depth + 1)?,
            },
        };
        let mut returned: Option<String> = None;
        let types = match &owner {
            Some(ty) => {
                let mut types = vec![ty.clone()];
                types.extend(self.bounds(path, line, ty)?);
                types
            }
            None => Vec::new(),
        };
        for def in defs.iter() {
            let member_of = self.owner(def)?.map(|o| o.name.clone());
            let fits = match (&owner, &member_of) {
                (None, None) => true,
                (Some(_), Some(of)) => types.contains(of),
                _ => false,
            };
            if !fits {
                continue;
            }
            let symbols = self.symbols(&def.path)?;
            let Some(symbol) = def.record_in(&symbols) else {
                continue;
            };
            let ty = match rust::returned_in_as(&symbol.signature, unwrapped) {
                Some(ty) if ty == "Self" => match &owner {
                    Some(owner) => owner.clone(),
                    None => return Ok(None),
                },
                Some(ty) => ty,
                None => return Ok(None),
            };
            if returned.as_ref().is_some_and(|r| *r != ty) {
                return Ok(None);
            }
            returned = Some(ty);
        }
        Ok(returned)
    }

    /// `(**self).f()` in a Rust `impl ... for &mut A` (or `&A`): the type behind the
    /// reference, `A`, whose bounds then name the trait meant.
    fn dereferenced_self(
        &self,
        path: &str,
        line: u32,
        receiver: &str,
    ) -> Result<Option<String>, IndexError> {
        let inner = receiver.trim_start_matches('(').trim_end_matches(')');
        if !inner.starts_with('*') || inner.trim_start_matches('*').trim() != "self" {
            return Ok(None);
        }
        let Some(class) = self.enclosing_class(path, line)? else {
            return Ok(None);
        };
        let Some(referenced) = class.name.strip_prefix('&') else {
            return Ok(None);
        };
        let ty = rust::referent(referenced).trim();
        let simple = !ty.is_empty() && ty.chars().all(|c| c.is_alphanumeric() || c == '_');
        Ok(simple.then(|| ty.to_string()))
    }

    /// The traits a generic parameter `ty` is bounded by in the signatures around `line`
    /// (the function's and its `impl`'s: `<V: Visitor<'de>>`, `where V: Visitor<'de>`).
    fn bounds(&self, path: &str, line: u32, ty: &str) -> Result<Vec<String>, IndexError> {
        let symbols = self.symbols(path)?;
        Ok(symbols
            .iter()
            .filter(|s| s.start_line <= line && line <= s.end_line)
            .flat_map(|s| rust::bounds_in(&s.signature, ty))
            .collect())
    }
}

/// `receiver` without its type arguments: `Foo::<T>`, `Foo<T>` -> `Foo`; `Vec::<u8>::new()` too.
fn without_type_arguments(receiver: &str) -> String {
    let mut out = String::with_capacity(receiver.len());
    let mut depth = 0usize;
    for c in receiver.chars() {
        match c {
            '<' => {
                // A turbofish's `::` goes with its arguments.
                if depth == 0 && out.ends_with("::") {
                    out.truncate(out.len() - 2);
                }
                depth += 1;
            }
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.trim_end_matches(':').to_string()
}

/// A call's callee split from what stands before it: `a.b(x).f(y)` -> (`a.b(x)`, `.`),
/// `f`; `Foo::new()` -> (`Foo`, `::`), `new`; `make()` -> no head, `make`.
fn called(receiver: &str) -> Option<(Option<(&str, &str)>, &str)> {
    let callee = before_arguments(receiver)?.trim_end();
    let name_at = callee
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |at| at + 1);
    let name = &callee[name_at..];
    if name.is_empty() {
        return None;
    }
    let before = &callee[..name_at];
    let head = if let Some(head) = before.strip_suffix("::") {
        Some((head.trim_end(), "::"))
    } else if let Some(head) = before.strip_suffix('.') {
        Some((head.trim_end(), "."))
    } else if before.trim().is_empty() {
        None
    } else {
        return None;
    };
    Some((head.filter(|(h, _)| !h.is_empty()), name))
}

/// The class a receiver constructs: `Foo(1)` and `new Foo(a, b)` -> `Foo`.
fn constructor(receiver: &str) -> Option<&str> {
    let callee = before_arguments(receiver)?.trim();
    let callee = callee.strip_prefix("new ").unwrap_or(callee).trim();
    let simple = !callee.is_empty()
        && callee
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | ':'));
    simple.then_some(callee)
}

/// What a call ending `receiver` calls: the text before its last argument list
/// (`a.f(x)(y)` -> `a.f(x)`); none when `receiver` is no call.
fn before_arguments(receiver: &str) -> Option<&str> {
    let inner = receiver.strip_suffix(')')?;
    let mut depth = 0usize;
    for (at, c) in inner.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth == 0 => return Some(&inner[..at]),
            '(' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// A receiver with its subscripts dropped (`variant.fields[0].attrs` ->
/// `variant.fields.attrs`, `self.handlers[name]` -> `self.handlers`): an element is typed as
/// its collection is, whose type is recorded by its element's (`Vec<Field>`,
/// `dict[str, Handler]`). None when it has no subscript, or one not closed.
fn unindexed(receiver: &str) -> Option<String> {
    if !receiver.contains('[') {
        return None;
    }
    let mut out = String::with_capacity(receiver.len());
    let mut depth = 0usize;
    for c in receiver.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.checked_sub(1)?,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    (depth == 0 && !out.is_empty() && !out.ends_with('.')).then_some(out)
}
