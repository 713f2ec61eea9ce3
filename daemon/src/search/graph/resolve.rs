//! What a reference refers to, decided by scope, in order: the enclosing class for
//! `self`/`this`, the file's own definitions, what the file imports, the same package, then a
//! unique project-wide name. A call whose receiver's type is not written down is never
//! guessed: when several definitions could be meant, the answer is *ambiguous* with them
//! all; when none in the project could, *unresolved*.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::hash::Hash;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::memo::Deps;
use super::modules::dir_of;
use super::rust;
use crate::chunk::syntax::refs::{Import, RefKind, Reference};
use crate::error::IndexError;
use crate::index::store::{StoredRefs, SymbolRecord};

/// What the graph reads from an index (a trait so the rules are tested on small fixtures).
/// Shared between threads: a wide walk reads on every core.
pub trait GraphView: Sync {
    /// The symbols of a file.
    fn symbols_of(&self, path: &str) -> Result<Arc<Vec<SymbolRecord>>, IndexError>;
    /// The references and imports of a file.
    fn refs_of(&self, path: &str) -> Result<Arc<StoredRefs>, IndexError>;
    /// The language of an indexed file.
    fn language_of(&self, path: &str) -> Result<Option<String>, IndexError>;
    /// Every (path, symbol) whose bare name is `name`, any case.
    fn symbols_named(&self, name: &str) -> Result<Vec<(String, SymbolRecord)>, IndexError>;
    /// Files whose text holds `name` as a word (at most `limit`): the only ones that can
    /// hold a reference to it.
    fn files_mentioning(&self, name: &str, limit: usize) -> Result<Vec<String>, IndexError>;
}

/// A definition: a symbol in a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Def {
    /// Relative path.
    pub path: String,
    /// Qualified name.
    pub qualified: String,
    /// Bare name.
    pub name: String,
    /// Kind (`function`, `method`, `class`, ...).
    pub kind: String,
    /// First and last line.
    pub lines: (u32, u32),
}

impl Def {
    pub fn new(path: &str, symbol: &SymbolRecord) -> Def {
        Def {
            path: path.to_string(),
            qualified: symbol.qualified.clone(),
            name: symbol.name.clone(),
            kind: symbol.kind.clone(),
            lines: (symbol.start_line, symbol.end_line),
        }
    }

    /// This definition's own record among its file's `symbols`.
    pub fn record_in<'s>(&self, symbols: &'s [SymbolRecord]) -> Option<&'s SymbolRecord> {
        symbols
            .iter()
            .find(|s| s.qualified == self.qualified && s.start_line == self.lines.0)
    }
}

/// Definitions shared between resolutions, links and the per-request caches.
pub type Defs = Arc<[Def]>;

/// What a reference was found to refer to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// This definition, by the named rule.
    Resolved(Def, &'static str),
    /// One of these (the receiver's type is unknown, or several are in scope); shared, as a
    /// name's definitions are the candidates of each of its calls.
    Ambiguous(Defs),
    /// Nothing in the project (external, builtin or dynamic), with why.
    Unresolved(String),
}

/// Kinds a call can reach.
const CALLABLE: &[&str] = &[
    "function",
    "method",
    "constructor",
    "class",
    "struct",
    "record",
    "object",
    "macro",
    "type",
    "interface",
    "trait",
    "enum",
    "protocol",
    "mixin",
];
/// Kinds whose members are methods.
pub const CLASS_LIKE: &[&str] = &[
    "class",
    "struct",
    "interface",
    "trait",
    "impl",
    "object",
    "record",
    "enum",
    "protocol",
    "mixin",
    "extension",
    "module",
    "namespace",
];
/// Receivers that name the enclosing class's instance or the class itself.
const SELF: &[&str] = &["self", "this", "cls", "Self", "@", "$this", "static"];
/// Languages where a bare call inside a class may be one of its own methods.
const IMPLICIT_SELF: &[&str] = &[
    "java", "csharp", "cpp", "kotlin", "ruby", "swift", "scala", "dart",
];
/// Languages whose packages are directories: a bare name is visible across a directory.
const PACKAGE_DIRS: &[&str] = &["go", "java", "kotlin", "csharp", "c", "cpp", "scala"];

/// What a request read of the index, kept for its resolvers on one thread.
#[derive(Default)]
pub(super) struct Reads {
    symbols: RefCell<FxHashMap<String, Arc<Vec<SymbolRecord>>>>,
    refs: RefCell<FxHashMap<String, Arc<StoredRefs>>>,
    named: RefCell<FxHashMap<String, Rc<Vec<Def>>>>,
    languages: RefCell<FxHashMap<String, String>>,
}

/// Resolves references, caching what it reads for one request.
pub struct Resolver<'v> {
    view: &'v dyn GraphView,
    pub(super) reads: Rc<Reads>,
    /// What this resolver read, noted when it works for the memo.
    pub(super) deps: Option<RefCell<Deps>>,
    owners: RefCell<FxHashMap<Def, Option<Rc<SymbolRecord>>>>,
    /// Each list of methods' owners, keyed by the list's address (the list is kept in the
    /// value, so the address cannot be reused while the request lasts).
    pub(super) method_owners: RefCell<FxHashMap<usize, Rc<super::members::Owners>>>,
    splits: RefCell<FxHashMap<(String, String), Rc<Split>>>,
    pub(super) nesting: super::python::Nesting,
}

impl<'v> Resolver<'v> {
    pub fn new(view: &'v dyn GraphView) -> Resolver<'v> {
        Self::with(view, Rc::default(), None)
    }

    pub(super) fn with(
        view: &'v dyn GraphView,
        reads: Rc<Reads>,
        deps: Option<Deps>,
    ) -> Resolver<'v> {
        Resolver {
            view,
            reads,
            deps: deps.map(RefCell::new),
            owners: RefCell::default(),
            method_owners: RefCell::default(),
            splits: RefCell::default(),
            nesting: Default::default(),
        }
    }

    pub fn view(&self) -> &'v dyn GraphView {
        self.view
    }

    pub fn symbols(&self, path: &str) -> Result<Arc<Vec<SymbolRecord>>, IndexError> {
        self.note_path(path);
        cached(&self.reads.symbols, path, || self.view.symbols_of(path))
    }

    pub fn refs(&self, path: &str) -> Result<Arc<StoredRefs>, IndexError> {
        self.note_path(path);
        cached(&self.reads.refs, path, || self.view.refs_of(path))
    }

    pub fn language(&self, path: &str) -> Result<String, IndexError> {
        self.note_path(path);
        cached(&self.reads.languages, path, || {
            Ok(self.view.language_of(path)?.unwrap_or_default())
        })
    }

    /// Definitions named exactly `name` that code can refer to.
    pub fn definitions(&self, name: &str) -> Result<Rc<Vec<Def>>, IndexError> {
        let defs = cached(&self.reads.named, name, || {
            let mut defs: Vec<Def> = self
                .view
                .symbols_named(name)?
                .iter()
                .filter(|(_, s)| s.name == name && CALLABLE.contains(&s.kind.as_str()))
                .map(|(path, s)| Def::new(path, s))
                .collect();
            defs.sort();
            defs.dedup();
            Ok(Rc::new(defs))
        })?;
        // Its answer changes when a file defining it changes, or another comes to.
        if let Some(deps) = &self.deps {
            let mut deps = deps.borrow_mut();
            if deps.name(name) {
                for def in defs.iter() {
                    deps.path(&def.path);
                }
            }
        }
        Ok(defs)
    }

    /// `name`'s definitions callable from `language` (code calls code of its own family:
    /// JS with TS, C with C++), methods apart from functions; once per request.
    fn split(&self, name: &str, language: &str) -> Result<Rc<Split>, IndexError> {
        self.note_definitions(name)?;
        let key = (name.to_string(), family(language).to_string());
        cached(&self.splits, &key, || {
            let (mut methods, mut functions, mut macros) = (Vec::new(), Vec::new(), Vec::new());
            for def in self.definitions(name)?.iter() {
                if family(&self.language(&def.path)?) != key.1 {
                    continue;
                }
                // Rust's macros are reached by `name!(...)` only.
                if def.kind == "macro" && key.1 == "rust" {
                    macros.push(def.clone());
                } else if self.is_method(def)? {
                    methods.push(def.clone());
                } else {
                    functions.push(def.clone());
                }
            }
            Ok(Rc::new(Split {
                methods: methods.into(),
                functions: functions.into(),
                macros: macros.into(),
            }))
        })
    }

    /// The enclosing class-like symbol of a definition, if it is a member of one.
    pub fn owner(&self, def: &Def) -> Result<Option<Rc<SymbolRecord>>, IndexError> {
        // Made from the definition's file alone: noted on each use (the memo's shares).
        self.note_path(&def.path);
        cached(&self.owners, def, || Ok(self.find_owner(def)?.map(Rc::new)))
    }

    fn find_owner(&self, def: &Def) -> Result<Option<SymbolRecord>, IndexError> {
        let symbols = self.symbols(&def.path)?;
        let Some(me) = def.record_in(&symbols) else {
            return Ok(None);
        };
        let Some(parent) = &me.parent else {
            return Ok(None);
        };
        // A Rust module holds functions, not methods.
        let rust = self.language(&def.path)? == "rust";
        let around = symbols
            .iter()
            .filter(|s| &s.qualified == parent && s.start_line <= me.start_line)
            .filter(|s| s.end_line >= me.end_line)
            .find(|s| CLASS_LIKE.contains(&s.kind.as_str()) && !(rust && s.kind == "module"))
            .cloned();
        // A method declared apart from its type (Go's `func (p *Pool) Drain()`) names it.
        Ok(around.or_else(|| {
            (me.kind == "method").then(|| SymbolRecord {
                name: parent
                    .rsplit(['.', ':'])
                    .next()
                    .unwrap_or(parent)
                    .to_string(),
                qualified: parent.clone(),
                kind: "struct".into(),
                start_line: me.start_line,
                end_line: me.end_line,
                signature: String::new(),
                parent: None,
            })
        }))
    }

    pub(super) fn is_method(&self, def: &Def) -> Result<bool, IndexError> {
        Ok(self.owner(def)?.is_some())
    }

    /// The innermost symbol around `line` in `path`.
    pub fn enclosing(&self, path: &str, line: u32) -> Result<Option<SymbolRecord>, IndexError> {
        self.enclosing_with(path, line, SymbolRecord::clone)
    }

    /// `f` of the innermost symbol around `line` in `path` (read in place: the walk asks
    /// this of every mention).
    pub fn enclosing_with<T>(
        &self,
        path: &str,
        line: u32,
        f: impl FnOnce(&SymbolRecord) -> T,
    ) -> Result<Option<T>, IndexError> {
        let symbols = self.symbols(path)?;
        // A JavaScript/TypeScript object literal (`const h = { parse() {..} }`) holds its
        // methods but calls nothing itself: what is written in it outside its methods is
        // its surroundings' (a compiler's view: the literal is a value, not a function).
        let mut literal = None;
        let mut is_literal = |s: &SymbolRecord| -> Result<bool, IndexError> {
            if s.kind != "object" {
                return Ok(false);
            }
            if literal.is_none() {
                literal = Some(family(&self.language(path)?) == "js");
            }
            Ok(literal == Some(true))
        };
        let mut best: Option<&SymbolRecord> = None;
        for s in symbols.iter() {
            if s.start_line <= line && line <= s.end_line && s.kind != "impl" && !is_literal(s)? {
                let key =
                    |s: &SymbolRecord| (s.end_line - s.start_line, std::cmp::Reverse(s.start_line));
                if best.is_none_or(|b| key(s) < key(b)) {
                    best = Some(s);
                }
            }
        }
        Ok(best.map(f))
    }

    /// The innermost class-like symbol around `line` in `path`.
    pub(super) fn enclosing_class(
        &self,
        path: &str,
        line: u32,
    ) -> Result<Option<SymbolRecord>, IndexError> {
        let symbols = self.symbols(path)?;
        Ok(symbols
            .iter()
            .filter(|s| s.start_line <= line && line <= s.end_line)
            .filter(|s| CLASS_LIKE.contains(&s.kind.as_str()))
            .min_by_key(|s| s.end_line - s.start_line)
            .cloned())
    }

    /// The names of the bases of the class-like symbol `class` in `path` (and, for a Rust
    /// `impl Trait for Type`, the trait).
    pub(super) fn bases(
        &self,
        path: &str,
        class: &SymbolRecord,
    ) -> Result<Vec<String>, IndexError> {
        let refs = self.refs(path)?;
        let symbols = self.symbols(path)?;
        // The header may span lines (`class Foo<\n  T,\n> extends Base<T> {`, decorators
        // above it): a base is named within the class and outside every symbol inside it.
        let header = |line: u32| {
            class.start_line <= line
                && line <= class.end_line
                && !symbols.iter().any(|s| {
                    (s.start_line, s.end_line) != (class.start_line, class.end_line)
                        && class.start_line <= s.start_line
                        && s.end_line <= class.end_line
                        && s.start_line <= line
                        && line <= s.end_line
                })
        };
        Ok(refs
            .inherits()
            .filter(|r| header(r.line))
            .map(|r| r.name.to_string())
            .collect())
    }

    /// The import of `path` binding `local`, if any.
    pub(super) fn import_of(&self, path: &str, local: &str) -> Result<Option<Import>, IndexError> {
        let refs = self.refs(path)?;
        Ok(refs.imports.iter().find(|i| i.local == local).cloned())
    }

    /// What `r`, written in `path`, refers to.
    pub fn resolve(&self, path: &str, r: &Reference) -> Result<Resolution, IndexError> {
        let language = self.language(path)?;
        // The imported name behind a local alias (`save as store`).
        let import = self.import_of(path, &r.name)?;
        let name = match &import {
            Some(Import {
                name: Some(name), ..
            }) if name != "*" && name != "default" && name != "self" => name.clone(),
            _ => r.name.clone(),
        };
        let split = self.split(&name, &language)?;
        if r.kind == RefKind::Macro {
            return Ok(rust::macro_named(&split.macros, path, &name));
        }
        let (methods, functions) = if language == "rust" {
            (
                &rust::visible(&split.methods, path),
                &rust::visible(&split.functions, path),
            )
        } else {
            (&split.methods, &split.functions)
        };
        let class = self.enclosing_class(path, r.line)?;
        match r.receiver.as_deref() {
            Some(receiver) if SELF.contains(&receiver) => {
                let Some(class) = class else {
                    return Ok(pick(methods, "method", &name));
                };
                self.member_of(path, &class, methods, &name)
            }
            Some(receiver) if receiver.starts_with("super") || receiver == "base" => {
                let Some(class) = class else {
                    return Ok(pick(methods, "method", &name));
                };
                self.inherited(path, &class, methods, &name)
            }
            Some(receiver) => {
                if let Some(found) = self.declared(path, r.line, receiver, methods)? {
                    return Ok(found);
                }
                self.qualified(path, &language, receiver, methods, functions, &name)
            }
            None => self.bare(path, &language, r, import, class, methods, functions, &name),
        }
    }

    /// A bare `name(...)`.
    #[allow(clippy::too_many_arguments)]
    fn bare(
        &self,
        path: &str,
        language: &str,
        r: &Reference,
        import: Option<Import>,
        class: Option<SymbolRecord>,
        methods: &Defs,
        functions: &Defs,
        name: &str,
    ) -> Result<Resolution, IndexError> {
        // The file's own definitions in scope: top-level, or nested in a function around
        // the reference; the nearest one above it wins.
        let symbols = self.symbols(path)?;
        let in_scope = |def: &&Def| {
            def.path == path && {
                let parent = def.record_in(&symbols).and_then(|s| s.parent.clone());
                parent.is_none_or(|p| {
                    symbols
                        .iter()
                        .any(|s| s.qualified == p && s.start_line <= r.line && r.line <= s.end_line)
                })
            }
        };
        // An alias (`import X as Y`) is bound by its import only: a local `X` is another name.
        let aliased = r.name != name;
        if language == "rust" && !aliased && self.rust_local(path, r)? {
            return Ok(Resolution::Unresolved(format!(
                "`{}` is a local value here",
                r.name
            )));
        }
        let mut local: Vec<&Def> = functions
            .iter()
            .filter(|_| !aliased)
            .filter(in_scope)
            .collect();
        local.sort_by_key(|d| (d.lines.0 > r.line, d.lines.0.abs_diff(r.line)));
        if let Some(def) = local.first() {
            return Ok(Resolution::Resolved((*def).clone(), "same file"));
        }
        if IMPLICIT_SELF.contains(&language)
            && let Some(class) = &class
            && let Resolution::Resolved(def, _) = self.member_of(path, class, methods, name)?
        {
            return Ok(Resolution::Resolved(def, "enclosing class"));
        }
        // An import binding the name.
        if let Some(import) = import {
            let all: Vec<&Def> = functions.iter().chain(methods.iter()).collect();
            // No definition carries the name: a module on the way may re-export another
            // name under it (`export { callProcedure as callTRPCProcedure } from`).
            if all.is_empty()
                && let Some((file, renamed)) = self.renamed(path, language, &import.module, name)
                && let Some(original) = renamed.name.as_deref()
            {
                let split = self.split(original, language)?;
                let all: Vec<&Def> = split.functions.iter().chain(split.methods.iter()).collect();
                return Ok(self.in_module(
                    &file,
                    language,
                    &renamed.module,
                    &all,
                    "import (renamed)",
                ));
            }
            return Ok(self.in_module(path, language, &import.module, &all, "import"));
        }
        // A wildcard import of a module that defines it.
        let refs = self.refs(path)?;
        for wildcard in refs.imports.iter().filter(|i| i.local == "*") {
            if let Resolution::Resolved(def, _) = self.in_module(
                path,
                language,
                &wildcard.module,
                &functions.iter().collect::<Vec<_>>(),
                "import",
            ) {
                return Ok(Resolution::Resolved(def, "import *"));
            }
        }
        if PACKAGE_DIRS.contains(&language) {
            let dir = dir_of(path);
            let mut same: Vec<&Def> = functions
                .iter()
                .filter(|d| dir_of(&d.path) == dir)
                .collect();
            if same.len() == 1 {
                return Ok(Resolution::Resolved(same.remove(0).clone(), "same package"));
            }
        }
        Ok(match functions.len() {
            1 => Resolution::Resolved(functions[0].clone(), "unique name"),
            0 if IMPLICIT_SELF.contains(&language) && !methods.is_empty() => {
                Resolution::Ambiguous(methods.clone())
            }
            0 => Resolution::Unresolved(format!("no `{name}` defined in the project")),
            _ => Resolution::Ambiguous(functions.clone()),
        })
    }
}

/// The family of languages that call each other's code.
fn family(language: &str) -> &str {
    match language {
        "javascript" | "typescript" | "tsx" | "vue" | "svelte" => "js",
        "c" | "cpp" => "c",
        other => other,
    }
}

/// `cache[key]`, made by `make` the first time it is asked for in this request (the borrow
/// is released while `make` runs, so it may fill other caches).
fn cached<Q, K, V>(
    cache: &RefCell<FxHashMap<K, V>>,
    key: &Q,
    make: impl FnOnce() -> Result<V, IndexError>,
) -> Result<V, IndexError>
where
    Q: ?Sized + Hash + Eq + ToOwned<Owned = K>,
    K: Borrow<Q> + Hash + Eq,
    V: Clone,
{
    if let Some(found) = cache.borrow().get(key) {
        return Ok(found.clone());
    }
    let made = make()?;
    cache.borrow_mut().insert(key.to_owned(), made.clone());
    Ok(made)
}

/// A member reached through a receiver whose class is unknown: ambiguous among the
/// candidates (even one: an outside base class may define it), unresolved without any.
pub(super) fn pick(defs: &Defs, what: &str, name: &str) -> Resolution {
    if defs.is_empty() {
        Resolution::Unresolved(format!("no {what} `{name}` defined in the project"))
    } else {
        Resolution::Ambiguous(defs.clone())
    }
}

/// A name's definitions in one language family, members of a class apart.
pub(super) struct Split {
    pub(super) methods: Defs,
    pub(super) functions: Defs,
    /// Rust's macros (elsewhere a macro is called like a function).
    pub(super) macros: Defs,
}
