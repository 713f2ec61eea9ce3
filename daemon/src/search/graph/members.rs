//! Members found through a class: its own (`self.f()`), else its bases' nearest
//! definition, up the bases a few levels (`super().f()` of a base's base).

use super::resolve::{CLASS_LIKE, Def, Defs, Resolution, Resolver, pick};
use crate::error::IndexError;
use crate::index::store::SymbolRecord;

/// How far up the bases a member is looked for (`self.f()`, `super().f()`).
pub(super) const BASE_LEVELS: usize = 4;

impl Resolver<'_> {
    /// `self.name`: the enclosing class's own member, else one of its bases'.
    pub(super) fn member_of(
        &self,
        path: &str,
        class: &SymbolRecord,
        methods: &Defs,
        name: &str,
    ) -> Result<Resolution, IndexError> {
        let own: Vec<Def> = methods
            .iter()
            .filter(|d| d.path == path && d.qualified == format!("{}.{name}", class.qualified))
            .cloned()
            .collect();
        let own = if own.is_empty() {
            self.owned_by(methods, |owner| owner.qualified == class.qualified)?
        } else {
            own
        };
        if let [one] = own.as_slice() {
            return Ok(Resolution::Resolved(one.clone(), "enclosing class"));
        }
        if own.len() > 1 {
            return Ok(Resolution::Ambiguous(own.into()));
        }
        self.inherited(path, class, methods, name)
    }

    /// The methods whose owning class passes `wanted`.
    fn owned_by(
        &self,
        methods: &Defs,
        wanted: impl Fn(&SymbolRecord) -> bool,
    ) -> Result<Vec<Def>, IndexError> {
        let mut found = Vec::new();
        for def in methods.iter() {
            if let Some(owner) = self.owner(def)?
                && wanted(&owner)
            {
                found.push(def.clone());
            }
        }
        Ok(found)
    }

    /// A member of `class`'s nearest bases that define it (its bases, else theirs, up to
    /// [`BASE_LEVELS`] up), else any method of the name (ambiguous: an outside base may
    /// define it).
    pub(super) fn inherited(
        &self,
        path: &str,
        class: &SymbolRecord,
        methods: &Defs,
        name: &str,
    ) -> Result<Resolution, IndexError> {
        let first = self.bases(path, class)?;
        let found = self.up_the_bases(first, vec![class.name.clone()], |depth, level| {
            let mut inherited = self.owned_by(methods, |owner| level.contains(&owner.name))?;
            Ok(match inherited.len() {
                0 => None,
                1 => {
                    let how = if depth == 0 {
                        "base class"
                    } else {
                        "base's base"
                    };
                    Some(Resolution::Resolved(inherited.remove(0), how))
                }
                _ => Some(Resolution::Ambiguous(inherited.into())),
            })
        })?;
        if let Some(found) = found {
            return Ok(found);
        }
        Ok(pick(methods, "method", name))
    }

    /// `at` asked of each level of bases in turn, from `first` up [`BASE_LEVELS`] levels
    /// (each level the bases of the one below, none seen before, `seen` counted as seen),
    /// until it answers.
    pub(super) fn up_the_bases<T>(
        &self,
        first: Vec<String>,
        mut seen: Vec<String>,
        mut at: impl FnMut(usize, &[String]) -> Result<Option<T>, IndexError>,
    ) -> Result<Option<T>, IndexError> {
        let mut level = first;
        for depth in 0..BASE_LEVELS {
            if let Some(found) = at(depth, &level)? {
                return Ok(Some(found));
            }
            seen.extend(level.iter().cloned());
            let mut next = Vec::new();
            for base in &level {
                for up in self.bases_of_named(base)? {
                    if !seen.contains(&up) && !next.contains(&up) {
                        next.push(up);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        Ok(None)
    }

    /// The bases of every class-like definition named `name`, wherever it is defined.
    pub(super) fn bases_of_named(&self, name: &str) -> Result<Vec<String>, IndexError> {
        let mut bases = Vec::new();
        for class in self.definitions(name)?.iter() {
            if CLASS_LIKE.contains(&class.kind.as_str())
                && let Some(symbol) = class.record_in(&self.symbols(&class.path)?)
            {
                bases.extend(self.bases(&class.path, symbol)?);
            }
        }
        Ok(bases)
    }
}
