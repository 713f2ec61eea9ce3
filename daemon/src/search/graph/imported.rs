//! A receiver that is a value another module defines at its top level: `globalRegistry.add()`
//! with `import { globalRegistry } from "./registries"`, `registries.globalRegistry.add()`
//! with `import * as registries`, Python's `from .app import app` then `app.get(...)`. Its
//! type is the one that module's declaration writes or constructs (`export const
//! globalRegistry: Registry = ...`, `app = FastAPI()`), never inferred.

use super::modules::module_files;
use super::resolve::Resolver;
use crate::chunk::syntax::DECLARED;
use crate::error::IndexError;

impl Resolver<'_> {
    /// The type of the imported top-level value `receiver` names in `path`, if its module's
    /// declaration gives one.
    pub(super) fn imported_value_type(
        &self,
        path: &str,
        receiver: &str,
    ) -> Result<Option<String>, IndexError> {
        let language = self.language(path)?;
        // `value` imported by name, or `ns.value` with `ns` a module imported whole (Python's
        // `from pkg import module` too).
        let (module, name) = match receiver.split_once('.') {
            None => match self.import_of(path, receiver)? {
                Some(import) => match import.name {
                    Some(name) if !matches!(name.as_str(), "*" | "default" | "self") => {
                        (import.module, name)
                    }
                    _ => return Ok(None),
                },
                None => return Ok(None),
            },
            Some((ns, name)) if !name.contains('.') => match self.import_of(path, ns)? {
                Some(import) => match import.name.as_deref() {
                    None | Some("*") => (import.module, name.to_string()),
                    Some(sub) if language == "python" => {
                        let dot = if import.module.ends_with('.') {
                            ""
                        } else {
                            "."
                        };
                        (format!("{}{dot}{sub}", import.module), name.to_string())
                    }
                    Some(_) => return Ok(None),
                },
                None => return Ok(None),
            },
            Some(_) => return Ok(None),
        };
        for file in module_files(&language, path, &module) {
            if self.language(&file).map_or(true, |l| l.is_empty()) {
                continue;
            }
            let refs = self.refs(&file)?;
            for b in refs.bindings_named(&[name.as_str()]) {
                // Only the module's own top level: a local of one of its functions is not
                // what it exports.
                if b.type_name.is_empty() || self.enclosing(&file, b.line)?.is_some() {
                    continue;
                }
                let ty = match b.type_name.strip_prefix('=') {
                    Some(other) => self.declared_type(&file, b.line, other)?,
                    None => Some(b.type_name.trim_start_matches(DECLARED).to_string()),
                };
                if ty.is_some() {
                    return Ok(ty);
                }
            }
        }
        Ok(None)
    }
}
