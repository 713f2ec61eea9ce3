//! Members found through a class: its own (`self.f()`), else its bases' nearest
//! definition, up the bases a few levels (`super().f()` of a base's base).

use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::resolve::{CLASS_LIKE, Def, Defs, Resolution, Resolver, pick};
use crate::error::IndexError;
use crate::index::store::SymbolRecord;

/// A list of methods' owning classes, and the methods by their owner's name: made once per
/// list and request, since a walk asks it of every call of a common name (`__init__` has
/// hundreds of methods in sympy, asked up four levels of bases for each `super()` call).
pub(super) struct Owners {
    /// The list (held so that its address, the cache's key, is not reused).
    _methods: Defs,
    owners: Vec<Option<Rc<SymbolRecord>>>,
    by_name: FxHashMap<String, Vec<u32>>,
}

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
        let qualified = format!("{}.{name}", class.qualified);
        let own: Vec<Def> = methods
            .iter()
            .filter(|d| d.path == path && d.qualified == qualified)
            .cloned()
            .collect();
        let own = if own.is_empty() {
            let owners = self.owners_of(methods)?;
            methods
                .iter()
                .zip(&owners.owners)
                .filter(|(_, owner)| {
                    owner
                        .as_ref()
                        .is_some_and(|o| o.qualified == class.qualified)
                })
                .map(|(def, _)| def.clone())
                .collect()
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

    /// The owners of `methods`' definitions (see [`Owners`]).
    fn owners_of(&self, methods: &Defs) -> Result<Rc<Owners>, IndexError> {
        let key = Arc::as_ptr(methods) as *const Def as usize;
        if let Some(found) = self.method_owners.borrow().get(&key) {
            return Ok(found.clone());
        }
        let mut owners = Vec::with_capacity(methods.len());
        let mut by_name: FxHashMap<String, Vec<u32>> = FxHashMap::default();
        for (i, def) in methods.iter().enumerate() {
            let owner = self.owner(def)?;
            if let Some(owner) = &owner {
                by_name
                    .entry(owner.name.clone())
                    .or_default()
                    .push(i as u32);
            }
            owners.push(owner);
        }
        let made = Rc::new(Owners {
            _methods: methods.clone(),
            owners,
            by_name,
        });
        self.method_owners.borrow_mut().insert(key, made.clone());
        Ok(made)
    }

    /// The methods whose owning class is named one of `names`, in `methods`' order.
    pub(super) fn owned_by(
        &self,
        methods: &Defs,
        names: &[String],
    ) -> Result<Vec<Def>, IndexError> {
        let owners = self.owners_of(methods)?;
        let mut at: Vec<u32> = names
            .iter()
            .filter_map(|n| owners.by_name.get(n.as_str()))
            .flatten()
            .copied()
            .collect();
        at.sort_unstable();
        at.dedup();
        Ok(at
            .into_iter()
            .map(|i| methods[i as usize].clone())
            .collect())
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
            let mut inherited = self.owned_by(methods, level)?;
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
