//! A receiver that is a value another module defines at its top level: `globalRegistry.add()`
//! with `import { globalRegistry } from "./registries"`, `registries.globalRegistry.add()`
//! with `import * as registries`, Python's `from .app import app` then `app.get(...)`. Its
//! type is the one that module's declaration writes or constructs (`export const
//! globalRegistry: Registry = ...`, `app = FastAPI()`), never inferred.

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
        let (local, value) = match receiver.split_once('.') {
            None => (receiver, None),
            Some((ns, value)) if !value.contains('.') => (ns, Some(value)),
            Some(_) => return Ok(None),
        };
        let Some(import) = self.import_of(path, local)? else {
            return Ok(None);
        };
        let (module, name) = match (value, import.name.as_deref()) {
            // `value` imported by name.
            (None, Some(name)) if !matches!(name, "*" | "default" | "self") => {
                (import.module.clone(), name.to_string())
            }
            // `ns.value` with `ns` a module imported whole.
            (Some(value), None | Some("*")) => (import.module.clone(), value.to_string()),
            // Python's `from pkg import module`, then `module.value`.
            (Some(value), Some(sub)) if language == "python" => {
                let dot = if import.module.ends_with('.') {
                    ""
                } else {
                    "."
                };
                (format!("{}{dot}{sub}", import.module), value.to_string())
            }
            _ => return Ok(None),
        };
        for file in self.indexed_module_files(&language, path, &module) {
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
