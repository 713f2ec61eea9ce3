//! Whether a definition's file is the module an import names, as each language spells
//! module paths: Python packages (`a.b`, `.util`), JS/TS relative paths and `index` files,
//! Rust `crate::`/`super::`/`self::` paths, Go import paths (a directory); and following
//! what a module re-exports, by the same name (`Resolver::in_module`) or another
//! (`Resolver::renamed`).

use super::resolve::{Def, Resolution, Resolver};
use crate::chunk::syntax::refs::Import;

/// `path` without its last extension.
fn stem_path(path: &str) -> &str {
    match path.rfind('.') {
        Some(dot) if !path[dot..].contains('/') => &path[..dot],
        _ => path,
    }
}

/// The directory of `path` ("" at the root).
pub fn dir_of(path: &str) -> &str {
    path.rfind('/').map_or("", |slash| &path[..slash])
}

/// `a/b/../c/./d` -> `a/c/d`; `None` if it climbs above the root.
fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            _ => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// Whether `module` (segments joined by `/`) is `path`'s module or a package holding it:
/// `path` without extension (and without a trailing `__init__`, `index`, `mod`) ends with
/// it at a segment boundary, or lies under a directory that does.
fn names_file(module: &str, path: &str) -> bool {
    // Every form below ends with the module, so the path holds it: most of a name's
    // definitions are told apart by this one search.
    if module.is_empty() || !path.contains(module) {
        return false;
    }
    let stem = stem_path(path);
    let stem = ["/__init__", "/index", "/mod"]
        .iter()
        .find_map(|tail| stem.strip_suffix(tail))
        .unwrap_or(stem);
    let at_boundary = |whole: &str| {
        whole == module
            || whole
                .strip_suffix(module)
                .is_some_and(|head| head.ends_with('/'))
    };
    if at_boundary(stem) {
        return true;
    }
    // A package: the definition is in a file under the module's directory.
    let mut dir = dir_of(path);
    while !dir.is_empty() {
        if at_boundary(dir) {
            return true;
        }
        dir = dir_of(dir);
    }
    false
}

/// A Python import's module as a path (`a.b` -> `a/b`) and, for a relative one (`..a`), the
/// package directory it starts from.
fn python_path<'i>(importer: &'i str, module: &str) -> (Option<&'i str>, String) {
    let dots = module.chars().take_while(|c| *c == '.').count();
    let rest = module[dots..].replace('.', "/");
    if dots == 0 {
        return (None, rest);
    }
    let mut package = dir_of(importer);
    for _ in 1..dots {
        package = dir_of(package);
    }
    (Some(package), rest)
}

/// `base/rest`, leaving out an empty part.
fn join(base: &str, rest: &str) -> String {
    [base, rest]
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether the file `def_path` is (or is inside) what `importer`'s import of `module`
/// names, in `language`. `None`: the module is outside the project (a package, the
/// standard library), as far as its spelling says.
pub fn imports_from(language: &str, importer: &str, module: &str, def_path: &str) -> Option<bool> {
    ImportTarget::new(language, importer, module).holds(def_path)
}

/// What one import names, worked out once and asked of many definitions' files (a name
/// defined in a hundred files is matched against each import that could bind it).
pub struct ImportTarget<'a> {
    language: &'a str,
    importer: &'a str,
    module: &'a str,
    spelled: Spelled,
}

/// A Python or JS/TS import's target as a path, or why there is none.
enum Spelled {
    /// A module named from the root or a package (`a/b`: [`names_file`]).
    Named(String),
    /// A relative path's file or package (`a/b`: [`exact_or_under`]).
    At(String),
    /// Outside the project (a package, climbing above the root).
    Outside,
    /// Worked out per definition (Rust, Go, other languages).
    Other,
}

impl<'a> ImportTarget<'a> {
    pub fn new(language: &'a str, importer: &'a str, module: &'a str) -> ImportTarget<'a> {
        let spelled = match language {
            "python" => match python_path(importer, module) {
                (None, rest) => Spelled::Named(rest),
                (Some(package), rest) => Spelled::At(join(package, &rest)),
            },
            "javascript" | "typescript" | "tsx" => {
                if module.starts_with('.') || module.starts_with('/') {
                    match normalize(&format!("{}/{module}", dir_of(importer))) {
                        Some(target) => Spelled::At(stem_path(&target).to_string()),
                        None => Spelled::Outside,
                    }
                } else {
                    match ["@/", "~/"].iter().find_map(|p| module.strip_prefix(p)) {
                        Some(rest) => Spelled::Named(stem_path(rest).to_string()),
                        None => Spelled::Outside,
                    }
                }
            }
            _ => Spelled::Other,
        };
        ImportTarget {
            language,
            importer,
            module,
            spelled,
        }
    }

    /// Whether the file `def_path` is (or is inside) what the import names; `None`: the
    /// module is outside the project, as far as its spelling says.
    pub fn holds(&self, def_path: &str) -> Option<bool> {
        match &self.spelled {
            Spelled::Named(module) => Some(names_file(module, def_path)),
            Spelled::At(target) => Some(exact_or_under(target, def_path)),
            Spelled::Outside => None,
            Spelled::Other => {
                spelled_per_definition(self.language, self.importer, self.module, def_path)
            }
        }
    }
}

/// [`imports_from`] for the languages whose rule reads the definition's path as a whole.
fn spelled_per_definition(
    language: &str,
    importer: &str,
    module: &str,
    def_path: &str,
) -> Option<bool> {
    match language {
        "rust" => {
            let segments: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
            let (first, rest) = segments.split_first()?;
            let own = rust_module(importer);
            let base: Vec<String> = match *first {
                "crate" => Vec::new(),
                "self" => own,
                "super" => {
                    let mut own = own;
                    own.pop();
                    own
                }
                // Another crate: the project's only if a directory carries its name.
                other => {
                    let dir = other.replace('_', "-");
                    let under = def_path.split('/').any(|d| d == other || d == dir);
                    if !under {
                        return None;
                    }
                    Vec::new()
                }
            };
            let mut wanted: Vec<String> = base;
            wanted.extend(rest.iter().map(|s| s.to_string()));
            let module = rust_module(def_path);
            // `use crate::a::b::Item`: the item's module is `a::b`; a path may also end in
            // a type (`crate::a::Type`) whose methods live in `a`.
            // Both are paths from the crate root: equal, not merely ending alike
            // (`serde::de::value` is not `private::de`).
            Some(
                wanted.is_empty()
                    || module == wanted
                    || (wanted.len() > 1 && module[..] == wanted[..wanted.len() - 1]),
            )
        }
        "go" => {
            let dir = dir_of(def_path);
            Some(!dir.is_empty() && (module == dir || module.ends_with(&format!("/{dir}"))))
        }
        _ => None,
    }
}

impl Resolver<'_> {
    /// Those of [`module_files`] the index holds, most likely first.
    pub(super) fn indexed_module_files<'a>(
        &'a self,
        language: &str,
        importer: &str,
        module: &str,
    ) -> impl Iterator<Item = String> + 'a {
        module_files(language, importer, module)
            .into_iter()
            .filter(|f| self.language(f).is_ok_and(|l| !l.is_empty()))
    }

    /// Breadth first over the module `module` imported by `path`, then the modules its file
    /// re-exports `name` from (`export { name } from`, `export * from`, `from .impl import
    /// name`), a few hops and files. `visit(importer, module)` sees each and says whether to
    /// go on through its file's re-exports; `on_import(file, import)` sees each import
    /// there binding the name, and may end the walk with a value.
    fn through_reexports<T>(
        &self,
        path: &str,
        language: &str,
        module: &str,
        name: &str,
        mut visit: impl FnMut(&str, &str) -> bool,
        mut on_import: impl FnMut(&str, &Import) -> Option<T>,
    ) -> Option<T> {
        let mut queue =
            std::collections::VecDeque::from([(path.to_string(), module.to_string(), 0)]);
        let mut seen = std::collections::HashSet::new();
        while let Some((from, module, hops)) = queue.pop_front() {
            if !visit(&from, &module) || hops >= 4 || seen.len() > 64 {
                continue;
            }
            let Some(file) = self.indexed_module_files(language, &from, &module).next() else {
                continue;
            };
            if !seen.insert(file.clone()) {
                continue;
            }
            let Ok(refs) = self.refs(&file) else { continue };
            for import in refs
                .imports
                .iter()
                .filter(|i| i.local == name || i.local == "*")
            {
                if let Some(found) = on_import(&file, import) {
                    return Some(found);
                }
                queue.push_back((file.clone(), import.module.clone(), hops + 1));
            }
        }
        None
    }

    /// The re-export, in a module `module` (imported by `path`) or one it re-exports from,
    /// that binds `name` to another name (`export { a as name } from "./x"`, `from .x import
    /// a as name`, `pub use x::a as name`), with the file holding it.
    pub(super) fn renamed(
        &self,
        path: &str,
        language: &str,
        module: &str,
        name: &str,
    ) -> Option<(String, Import)> {
        self.through_reexports(
            path,
            language,
            module,
            name,
            |_, _| true,
            |file, import| {
                let original = import.name.as_deref()?;
                (import.local == name
                    && !matches!(original, "*" | "default" | "self")
                    && original != name)
                    .then(|| (file.to_string(), import.clone()))
            },
        )
    }

    /// Among `candidates`, those in the module `module` imported by `path`, following
    /// what that module re-exports (`from .impl import name`, `export { name } from`).
    pub(super) fn in_module(
        &self,
        path: &str,
        language: &str,
        module: &str,
        candidates: &[&Def],
        rule: &'static str,
    ) -> Resolution {
        let mut matched: Vec<Def> = Vec::new();
        let name = candidates
            .first()
            .map(|d| d.name.clone())
            .unwrap_or_default();
        self.through_reexports::<()>(
            path,
            language,
            module,
            &name,
            |from, module| {
                let target = ImportTarget::new(language, from, module);
                for def in candidates {
                    if target.holds(&def.path) == Some(true) && !matched.contains(def) {
                        matched.push((*def).clone());
                    }
                }
                matched.is_empty()
            },
            |_, _| None,
        );
        match matched.len() {
            1 => Resolution::Resolved(matched.remove(0), rule),
            0 => Resolution::Unresolved(format!("imported from `{module}`")),
            _ => Resolution::Ambiguous(matched.into()),
        }
    }
}

/// The project files an import of `module` from `importer` may name (to follow what they
/// re-export), most likely first.
fn module_files(language: &str, importer: &str, module: &str) -> Vec<String> {
    match language {
        "python" => {
            let (package, rest) = python_path(importer, module);
            let bases = match package {
                None => vec!["", "src", "lib"],
                Some(package) => vec![package],
            };
            bases
                .iter()
                .map(|b| join(b, &rest))
                .filter(|t| !t.is_empty())
                .flat_map(|t| [format!("{t}.py"), format!("{t}/__init__.py")])
                .collect()
        }
        "javascript" | "typescript" | "tsx" if module.starts_with('.') => {
            let Some(target) = normalize(&format!("{}/{module}", dir_of(importer))) else {
                return Vec::new();
            };
            let stem = stem_path(&target).to_string();
            let mut out = vec![target.clone()];
            for ext in ["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts"] {
                out.push(format!("{stem}.{ext}"));
                out.push(format!("{target}/index.{ext}"));
            }
            out
        }
        _ => Vec::new(),
    }
}

/// `target` is the file (any extension), its `__init__`/`index`, or a directory above it.
fn exact_or_under(target: &str, def_path: &str) -> bool {
    target.is_empty()
        || def_path
            .strip_prefix(target)
            .is_some_and(|rest| rest.starts_with('/') || stem_path(def_path).len() == target.len())
}

/// A Rust file's module path within its crate: `src/a/b.rs` and `src/a/b/mod.rs` -> `a, b`;
/// `lib.rs`, `main.rs` -> the crate root.
fn rust_module(path: &str) -> Vec<String> {
    let inner = path.rsplit_once("src/").map_or(path, |(_, rest)| rest);
    let stem = stem_path(inner);
    let mut parts: Vec<String> = stem.split('/').map(String::from).collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_modules_absolute_relative_and_packages() {
        let py = |importer, module, def| imports_from("python", importer, module, def);
        assert_eq!(py("app/main.py", "pkg.util", "src/pkg/util.py"), Some(true));
        assert_eq!(py("app/main.py", "pkg", "pkg/__init__.py"), Some(true));
        assert_eq!(py("app/main.py", "pkg", "pkg/core/impl.py"), Some(true));
        assert_eq!(py("app/main.py", "pkg.util", "other/util.py"), Some(false));
        assert_eq!(py("app/main.py", "mypkg.util", "pkg/util.py"), Some(false));
        assert_eq!(
            py("app/sub/main.py", ".util", "app/sub/util.py"),
            Some(true)
        );
        assert_eq!(py("app/sub/main.py", "..util", "app/util.py"), Some(true));
        assert_eq!(py("app/sub/main.py", ".util", "app/util.py"), Some(false));
        assert_eq!(
            py("app/sub/main.py", ".", "app/sub/__init__.py"),
            Some(true)
        );
    }

    #[test]
    fn javascript_relative_paths_index_files_and_packages() {
        let ts = |importer, module, def| imports_from("typescript", importer, module, def);
        assert_eq!(ts("src/a/b.ts", "./c", "src/a/c.ts"), Some(true));
        assert_eq!(ts("src/a/b.ts", "../c.js", "src/c.ts"), Some(true));
        assert_eq!(ts("src/a/b.ts", "./lib", "src/a/lib/index.ts"), Some(true));
        assert_eq!(ts("src/a/b.ts", "./c", "src/a/cc.ts"), Some(false));
        assert_eq!(ts("src/a/b.ts", "react", "src/react.ts"), None);
        assert_eq!(ts("src/a/b.ts", "@/lib/x", "src/lib/x.tsx"), Some(true));
        assert_eq!(ts("a.ts", "../../x", "x.ts"), None);
    }

    #[test]
    fn rust_paths_from_the_crate_root_self_and_super() {
        let rs = |importer, module, def| imports_from("rust", importer, module, def);
        assert_eq!(
            rs(
                "src/main.rs",
                "crate::index::store",
                "src/index/store/mod.rs"
            ),
            Some(true)
        );
        assert_eq!(rs("src/a/b.rs", "super::c", "src/a/c.rs"), Some(true));
        assert_eq!(rs("src/a/mod.rs", "self::c", "src/a/c.rs"), Some(true));
        assert_eq!(rs("src/a/b.rs", "crate::x", "src/a/c.rs"), Some(false));
        assert_eq!(rs("src/a.rs", "std::fmt", "src/fmt.rs"), None);
        assert_eq!(
            rs("app/src/a.rs", "my_core::x", "my-core/src/x.rs"),
            Some(true)
        );
    }

    #[test]
    fn go_import_paths_name_directories() {
        let go = |module, def| imports_from("go", "cmd/main.go", module, def);
        assert_eq!(go("github.com/o/r/pkg/util", "pkg/util/u.go"), Some(true));
        assert_eq!(go("github.com/o/r/pkg/util", "pkg/other/u.go"), Some(false));
    }
}
