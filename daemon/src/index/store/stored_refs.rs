//! A file's references as the code graph reads them: left in their stored encoding, with
//! an index by name.

use std::hash::BuildHasher;

use rustc_hash::FxBuildHasher;

use super::codec::{Corrupt, Reader, Writer};
use crate::chunk::syntax::refs::{Binding, FileRefs, Import, RefKind, Reference};

/// A file's references as stored, read on demand: the references stay in their encoded
/// form, one allocation for the file instead of one or two per reference (decoding them
/// was most of a wide `impact`'s time, and the decoded form a third of what the cache
/// could hold), with each record's place kept by its name's hash, so that finding a name
/// reads only its records. Imports and bindings, few, are decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredRefs {
    /// The references' records, back to back, in source order.
    records: Box<[u8]>,
    /// (hash of the name, offset of the record), sorted.
    by_name: Box<[(u32, u32)]>,
    /// Offsets of the inheritance records.
    inherits: Box<[u32]>,
    /// Imports in source order.
    pub imports: Vec<Import>,
    /// Names declared with a type, in source order.
    pub bindings: Vec<Binding>,
    /// (hash of the name, index of the binding), sorted.
    bindings_by_name: Box<[(u32, u32)]>,
}

/// One reference of [`StoredRefs`], borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefView<'a> {
    /// The name as written (the last segment).
    pub name: &'a str,
    /// Line (1-based).
    pub line: u32,
    /// What is done with it.
    pub kind: RefKind,
    /// The expression before the name, if any.
    pub receiver: Option<&'a str>,
}

impl RefView<'_> {
    /// An owned copy.
    pub fn to_reference(self) -> Reference {
        Reference {
            name: self.name.to_string(),
            line: self.line,
            kind: self.kind,
            receiver: self.receiver.map(str::to_string),
        }
    }
}

fn name_hash(name: &str) -> u32 {
    FxBuildHasher.hash_one(name.as_bytes()) as u32
}

/// The values that a sorted (name hash, value) list holds for any of `names`' hashes, in
/// ascending order, each once (a hash may be shared: the caller compares the names).
fn hashed(index: &[(u32, u32)], names: &[&str]) -> impl Iterator<Item = u32> + use<> {
    let mut values: Vec<u32> = Vec::new();
    for name in names {
        let hash = name_hash(name);
        let first = index.partition_point(|(h, _)| *h < hash);
        values.extend(
            index[first..]
                .iter()
                .take_while(|(h, _)| *h == hash)
                .map(|(_, value)| *value),
        );
    }
    values.sort_unstable();
    values.dedup();
    values.into_iter()
}

/// Where each reference record starts, by its name's hash and, for bases, by kind: made as
/// the records are read or written, so they are never walked a second time for it.
#[derive(Default)]
pub(super) struct Places {
    by_name: Vec<(u32, u32)>,
    inherits: Vec<u32>,
}

impl Places {
    fn push(&mut self, offset: usize, name: &str, kind: RefKind) {
        let offset = offset as u32;
        self.by_name.push((name_hash(name), offset));
        if kind == RefKind::Inherit {
            self.inherits.push(offset);
        }
    }
}

impl StoredRefs {
    /// The next `count` reference records of `r`, each read once (so that reading them again
    /// cannot fail): the bytes they take and where each starts.
    pub(super) fn read_records<'a>(
        r: &mut Reader<'a>,
        count: usize,
    ) -> Result<(&'a [u8], Places), Corrupt> {
        let section = r.0;
        let mut places = Places::default();
        for _ in 0..count {
            let offset = section.len() - r.0.len();
            let reference = r.reference()?;
            places.push(offset, reference.name, reference.kind);
        }
        Ok((&section[..section.len() - r.0.len()], places))
    }

    /// From records and their places as [`StoredRefs::read_records`] gives them.
    pub(super) fn new(
        (records, places): (&[u8], Places),
        imports: Vec<Import>,
        bindings: Vec<Binding>,
    ) -> StoredRefs {
        let mut by_name = places.by_name;
        by_name.sort_unstable();
        let mut bindings_by_name: Vec<(u32, u32)> = bindings
            .iter()
            .enumerate()
            .map(|(i, b)| (name_hash(&b.name), i as u32))
            .collect();
        bindings_by_name.sort_unstable();
        StoredRefs {
            records: records.into(),
            by_name: by_name.into(),
            inherits: places.inherits.into(),
            imports,
            bindings,
            bindings_by_name: bindings_by_name.into(),
        }
    }

    fn at(&self, offset: u32) -> Option<RefView<'_>> {
        Reader(self.records.get(offset as usize..)?)
            .reference()
            .ok()
    }

    /// The references, in source order.
    pub fn refs(&self) -> impl Iterator<Item = RefView<'_>> + '_ {
        let mut r = Reader(&self.records);
        // Every record was read when the value was made: none fails here.
        std::iter::from_fn(move || (!r.0.is_empty()).then(|| r.reference().ok()).flatten())
    }

    /// The references to any of `names`, in source order: [`StoredRefs::refs`] filtered,
    /// but only the records of those names are read (a wide `impact` looks for hundreds of
    /// names in the same large files).
    pub fn named(&self, names: &[&str]) -> Vec<RefView<'_>> {
        hashed(&self.by_name, names)
            .filter_map(|offset| self.at(offset))
            .filter(|r| names.contains(&r.name))
            .collect()
    }

    /// The bindings of any of `names`, in source order: [`StoredRefs::bindings`] filtered
    /// through an index (a receiver's type is looked up for each of a file's mentions).
    pub fn bindings_named(&self, names: &[&str]) -> Vec<&Binding> {
        hashed(&self.bindings_by_name, names)
            .map(|i| &self.bindings[i as usize])
            .filter(|b| names.contains(&b.name.as_str()))
            .collect()
    }

    /// The inheritance references (a class's bases), in source order.
    pub fn inherits(&self) -> impl Iterator<Item = RefView<'_>> + '_ {
        self.inherits.iter().filter_map(|offset| self.at(*offset))
    }

    /// How many references there are.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Roughly the heap it holds.
    pub fn heap_size(&self) -> usize {
        let strings = |s: &[&str]| s.iter().map(|s| s.len() + 24).sum::<usize>();
        self.records.len()
            + self.by_name.len() * 8
            + self.inherits.len() * 4
            + self.bindings_by_name.len() * 8
            + self
                .imports
                .iter()
                .map(|i| {
                    8 + strings(&[&i.module, &i.local])
                        + i.name.as_ref().map_or(0, |s| s.len() + 24)
                })
                .sum::<usize>()
            + self
                .bindings
                .iter()
                .map(|b| 8 + strings(&[&b.name, &b.type_name]))
                .sum::<usize>()
    }
}

impl From<&FileRefs> for StoredRefs {
    fn from(refs: &FileRefs) -> StoredRefs {
        let mut w = Writer(Vec::new());
        let mut places = Places::default();
        for r in &refs.refs {
            places.push(w.0.len(), &r.name, r.kind);
            w.reference(r);
        }
        StoredRefs::new((&w.0, places), refs.imports.clone(), refs.bindings.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_read_in_order_by_name_and_by_kind() {
        let refs = crate::chunk::syntax::chunk_file(
            "python",
            "class K(Base, Mixin):\n    def f(self):\n        self.g(c(1))\n        g()\n        c(2)\n",
        )
        .refs;
        let stored = StoredRefs::from(&refs);
        let read: Vec<Reference> = stored.refs().map(RefView::to_reference).collect();
        assert_eq!(read, refs.refs);
        assert_eq!(stored.len(), refs.refs.len());
        // By name: exactly the references the full read has, in source order.
        for names in [&["g"][..], &["c", "Base"], &["absent"], &[]] {
            let want: Vec<RefView> = stored.refs().filter(|r| names.contains(&r.name)).collect();
            assert_eq!(stored.named(names), want, "{names:?}");
        }
        let g = stored.named(&["g"]);
        assert_eq!(
            g.iter().map(|r| (r.line, r.receiver)).collect::<Vec<_>>(),
            [(3, Some("self")), (4, None)]
        );
        let bases: Vec<&str> = stored.inherits().map(|r| r.name).collect();
        assert_eq!(bases, ["Base", "Mixin"]);
        assert!(StoredRefs::default().named(&["g"]).is_empty());
    }

    #[test]
    fn bindings_are_found_by_name_in_source_order() {
        let refs = crate::chunk::syntax::chunk_file(
            "python",
            "def f(x: int, y: Foo):\n    z: Bar = y\n    y = Baz()\n    x = z\n",
        )
        .refs;
        let stored = StoredRefs::from(&refs);
        assert!(stored.bindings.len() >= 4, "{:?}", stored.bindings);
        for names in [&["y"][..], &["x", "z"], &["y", "x", "z"], &["absent"], &[]] {
            let want: Vec<&Binding> = stored
                .bindings
                .iter()
                .filter(|b| names.contains(&b.name.as_str()))
                .collect();
            assert_eq!(stored.bindings_named(names), want, "{names:?}");
        }
        assert_eq!(stored.bindings_named(&["y"]).len(), 2);
    }
}
