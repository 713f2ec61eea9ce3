//! Binary encodings of the records kept in LMDB. Serialization lives here, not on the types.
//!
//! Layout: little-endian integers; strings as u32 length + UTF-8 bytes; options as a 0/1 tag.

use std::borrow::Cow;

use heed::{BoxedError, BytesDecode, BytesEncode};

use super::records::{ChunkRecord, FileRecord, SymbolNames, SymbolRecord};
use super::stored_refs::{RefView, StoredRefs};
use crate::chunk::syntax::refs::{Binding, FileRefs, Import, RefKind, Reference};

pub(super) struct Writer(pub(super) Vec<u8>);

impl Writer {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.0.push(1);
                self.str(s);
            }
            None => self.0.push(0),
        }
    }
    pub(super) fn reference(&mut self, r: &Reference) {
        self.str(&r.name);
        self.u32(r.line);
        self.0.push(match r.kind {
            RefKind::Call => 0,
            RefKind::Inherit => 1,
            RefKind::Macro => 2,
            RefKind::Import => 3,
        });
        self.opt_str(r.receiver.as_deref());
    }
}

pub(super) struct Reader<'a>(pub(super) &'a [u8]);

#[derive(Debug, thiserror::Error)]
#[error("truncated or corrupt record")]
pub(super) struct Corrupt;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        if self.0.len() < n {
            return Err(Corrupt);
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, Corrupt> {
        Ok(self.take(1)?[0])
    }
    pub(super) fn u32(&mut self) -> Result<u32, Corrupt> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().map_err(|_| Corrupt)?,
        ))
    }
    fn u64(&mut self) -> Result<u64, Corrupt> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().map_err(|_| Corrupt)?,
        ))
    }
    fn string(&mut self) -> Result<String, Corrupt> {
        self.str_ref().map(str::to_string)
    }
    fn skip_str(&mut self) -> Result<(), Corrupt> {
        self.bytes_ref().map(|_| ())
    }
    /// A string's bytes, borrowed from the record, not checked as UTF-8.
    fn bytes_ref(&mut self) -> Result<&'a [u8], Corrupt> {
        let len = self.u32()? as usize;
        self.take(len)
    }
    fn skip_opt_str(&mut self) -> Result<(), Corrupt> {
        match self.u8()? {
            0 => Ok(()),
            1 => self.skip_str(),
            _ => Err(Corrupt),
        }
    }
    /// A reference's record, its strings borrowed.
    pub(super) fn reference(&mut self) -> Result<RefView<'a>, Corrupt> {
        Ok(RefView {
            name: self.str_ref()?,
            line: self.u32()?,
            kind: match self.u8()? {
                0 => RefKind::Call,
                1 => RefKind::Inherit,
                2 => RefKind::Macro,
                3 => RefKind::Import,
                _ => return Err(Corrupt),
            },
            receiver: match self.u8()? {
                0 => None,
                1 => Some(self.str_ref()?),
                _ => return Err(Corrupt),
            },
        })
    }
    /// A string, borrowed from the record.
    fn str_ref(&mut self) -> Result<&'a str, Corrupt> {
        std::str::from_utf8(self.bytes_ref()?).map_err(|_| Corrupt)
    }
    /// The fields of a symbol record after its name.
    fn symbol_after(&mut self, name: String) -> Result<SymbolRecord, Corrupt> {
        Ok(SymbolRecord {
            name,
            qualified: self.string()?,
            kind: self.string()?,
            start_line: self.u32()?,
            end_line: self.u32()?,
            signature: self.string()?,
            parent: self.opt_string()?,
        })
    }
    /// Skip the fields of a symbol record after its name; its first line.
    fn skip_symbol_after(&mut self) -> Result<u32, Corrupt> {
        self.skip_str()?; // qualified
        self.skip_str()?; // kind
        let start_line = self.u32()?;
        self.u32()?; // end line
        self.skip_str()?; // signature
        self.skip_opt_str()?; // parent
        Ok(start_line)
    }
    fn opt_string(&mut self) -> Result<Option<String>, Corrupt> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.string()?)),
            _ => Err(Corrupt),
        }
    }
}

/// heed codec for [`FileRecord`].
pub enum FileCodec {}

impl<'a> BytesEncode<'a> for FileCodec {
    type EItem = FileRecord;
    fn bytes_encode(item: &'a FileRecord) -> Result<Cow<'a, [u8]>, BoxedError> {
        let mut w = Writer(Vec::with_capacity(48 + item.chunk_ids.len() * 8));
        w.u64(item.size);
        w.u64(item.mtime_ns);
        w.u64(item.hash);
        w.str(&item.language);
        w.u32(item.chunk_ids.len() as u32);
        for id in &item.chunk_ids {
            w.u64(*id);
        }
        Ok(Cow::Owned(w.0))
    }
}

impl<'a> BytesDecode<'a> for FileCodec {
    type DItem = FileRecord;
    fn bytes_decode(bytes: &'a [u8]) -> Result<FileRecord, BoxedError> {
        let mut r = Reader(bytes);
        let size = r.u64()?;
        let mtime_ns = r.u64()?;
        let hash = r.u64()?;
        let language = r.string()?;
        let n = r.u32()? as usize;
        let mut chunk_ids = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            chunk_ids.push(r.u64()?);
        }
        Ok(FileRecord {
            size,
            mtime_ns,
            hash,
            language,
            chunk_ids,
        })
    }
}

/// The content hash of an encoded [`FileRecord`] without decoding the rest (its language
/// and chunk ids): what the caches of a file's decoded symbols and references check.
pub enum FileHashCodec {}

impl<'a> BytesDecode<'a> for FileHashCodec {
    type DItem = u64;
    fn bytes_decode(bytes: &'a [u8]) -> Result<u64, BoxedError> {
        let mut r = Reader(bytes);
        r.u64()?;
        r.u64()?;
        Ok(r.u64()?)
    }
}

/// heed codec for [`ChunkRecord`].
pub enum ChunkCodec {}

impl<'a> BytesEncode<'a> for ChunkCodec {
    type EItem = ChunkRecord;
    fn bytes_encode(item: &'a ChunkRecord) -> Result<Cow<'a, [u8]>, BoxedError> {
        let mut w = Writer(Vec::with_capacity(64 + item.path.len()));
        w.str(&item.path);
        w.u32(item.start_line);
        w.u32(item.end_line);
        w.opt_str(item.symbol.as_deref());
        w.opt_str(item.kind.as_deref());
        w.u64(item.hash);
        Ok(Cow::Owned(w.0))
    }
}

/// The text hash of an encoded [`ChunkRecord`] without decoding the rest: it is encoded
/// last (re-scoring reads hundreds of them a query).
pub(super) fn chunk_hash(bytes: &[u8]) -> Option<u64> {
    bytes.last_chunk::<8>().map(|b| u64::from_le_bytes(*b))
}

/// The path of an encoded [`ChunkRecord`] without decoding the rest: it is encoded first
/// (a code-graph request reads the paths of thousands of chunks).
pub(super) fn chunk_path(bytes: &[u8]) -> Result<&str, BoxedError> {
    Ok(Reader(bytes).str_ref()?)
}

impl<'a> BytesDecode<'a> for ChunkCodec {
    type DItem = ChunkRecord;
    fn bytes_decode(bytes: &'a [u8]) -> Result<ChunkRecord, BoxedError> {
        let mut r = Reader(bytes);
        Ok(ChunkRecord {
            path: r.string()?,
            start_line: r.u32()?,
            end_line: r.u32()?,
            symbol: r.opt_string()?,
            kind: r.opt_string()?,
            hash: r.u64()?,
        })
    }
}

/// heed codec for a file's symbols.
pub enum SymbolsCodec {}

impl<'a> BytesEncode<'a> for SymbolsCodec {
    type EItem = [SymbolRecord];
    fn bytes_encode(items: &'a [SymbolRecord]) -> Result<Cow<'a, [u8]>, BoxedError> {
        let mut w = Writer(Vec::with_capacity(items.len() * 64));
        w.u32(items.len() as u32);
        for s in items {
            w.str(&s.name);
            w.str(&s.qualified);
            w.str(&s.kind);
            w.u32(s.start_line);
            w.u32(s.end_line);
            w.str(&s.signature);
            w.opt_str(s.parent.as_deref());
        }
        Ok(Cow::Owned(w.0))
    }
}

impl<'a> BytesDecode<'a> for SymbolsCodec {
    type DItem = Vec<SymbolRecord>;
    fn bytes_decode(bytes: &'a [u8]) -> Result<Vec<SymbolRecord>, BoxedError> {
        let mut r = Reader(bytes);
        let n = r.u32()? as usize;
        let mut out = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let name = r.string()?;
            out.push(r.symbol_after(name)?);
        }
        Ok(out)
    }
}

/// The bare names and first lines of [`SymbolsCodec`]'s records, the other fields skipped
/// unread (no allocation per symbol: the ranking stage reads every candidate file's).
pub enum SymbolNamesCodec {}

impl<'a> BytesDecode<'a> for SymbolNamesCodec {
    type DItem = SymbolNames;
    fn bytes_decode(bytes: &'a [u8]) -> Result<SymbolNames, BoxedError> {
        let mut r = Reader(bytes);
        let n = r.u32()? as usize;
        let mut out = SymbolNames::default();
        for _ in 0..n {
            let name = r.str_ref()?;
            let start_line = r.skip_symbol_after()?;
            out.push(start_line, name);
        }
        out.sort();
        Ok(out)
    }
}

/// The records of a [`SymbolsCodec`] value whose bare name is `lowercase` in any case; the
/// others are skipped unread (a name defined in a hundred large files is looked up once
/// per graph request).
pub(super) fn symbols_named_in(
    bytes: &[u8],
    lowercase: &str,
) -> Result<Vec<SymbolRecord>, BoxedError> {
    let mut r = Reader(bytes);
    let n = r.u32()? as usize;
    let mut out = Vec::new();
    for _ in 0..n {
        // Most names differ: compared as bytes, checked as UTF-8 only when kept.
        let raw = r.bytes_ref()?;
        let matches = if raw.is_ascii() && lowercase.is_ascii() {
            raw.eq_ignore_ascii_case(lowercase.as_bytes())
        } else {
            std::str::from_utf8(raw)
                .map_err(|_| Corrupt)?
                .to_lowercase()
                == lowercase
        };
        if matches {
            let name = std::str::from_utf8(raw).map_err(|_| Corrupt)?;
            out.push(r.symbol_after(name.to_string())?);
        } else {
            r.skip_symbol_after()?;
        }
    }
    Ok(out)
}

/// [`FileRefs`], read back as [`StoredRefs`]: the references (name, line, kind, receiver),
/// the imports (module, name, local name, line), then the bindings (name, type, line);
/// LZ4-compressed (names and receivers repeat: a third of the size).
pub enum RefsCodec {}

/// Largest decompressed [`FileRefs`] (50,000 references of long names stay well under it).
const MAX_REFS_BYTES: usize = 64 << 20;

impl<'a> BytesEncode<'a> for RefsCodec {
    type EItem = FileRefs;
    fn bytes_encode(item: &'a FileRefs) -> Result<Cow<'a, [u8]>, BoxedError> {
        let mut w = Writer(Vec::with_capacity(
            item.refs.len() * 24 + item.imports.len() * 40,
        ));
        w.u32(item.refs.len() as u32);
        for r in &item.refs {
            w.reference(r);
        }
        w.u32(item.imports.len() as u32);
        for i in &item.imports {
            w.str(&i.module);
            w.opt_str(i.name.as_deref());
            w.str(&i.local);
            w.u32(i.line);
        }
        w.u32(item.bindings.len() as u32);
        for b in &item.bindings {
            w.str(&b.name);
            w.str(&b.type_name);
            w.u32(b.line);
        }
        Ok(Cow::Owned(lz4_flex::block::compress_prepend_size(&w.0)))
    }
}

impl<'a> BytesDecode<'a> for RefsCodec {
    type DItem = StoredRefs;
    fn bytes_decode(bytes: &'a [u8]) -> Result<StoredRefs, BoxedError> {
        // A corrupt length must not ask for gigabytes.
        let (size, _) = lz4_flex::block::uncompressed_size(bytes).map_err(|_| Corrupt)?;
        if size > MAX_REFS_BYTES {
            return Err(Corrupt.into());
        }
        let raw = lz4_flex::block::decompress_size_prepended(bytes).map_err(|_| Corrupt)?;
        let mut r = Reader(&raw);
        let count = r.u32()? as usize;
        let records = StoredRefs::read_records(&mut r, count)?;
        let n = r.u32()? as usize;
        let mut imports = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            imports.push(Import {
                module: r.string()?,
                name: r.opt_string()?,
                local: r.string()?,
                line: r.u32()?,
            });
        }
        let n = r.u32()? as usize;
        let mut bindings = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            bindings.push(Binding {
                name: r.string()?,
                type_name: r.string()?,
                line: r.u32()?,
            });
        }
        Ok(StoredRefs::new(records, imports, bindings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let file = FileRecord {
            size: 10,
            mtime_ns: 20,
            hash: 30,
            language: "rust".into(),
            chunk_ids: vec![1, 2, 3],
        };
        let bytes = FileCodec::bytes_encode(&file).unwrap();
        assert_eq!(FileCodec::bytes_decode(&bytes).unwrap(), file);
        assert_eq!(FileHashCodec::bytes_decode(&bytes).unwrap(), file.hash);
        let chunk = ChunkRecord {
            path: "src/a.rs".into(),
            start_line: 1,
            end_line: 40,
            symbol: Some("Foo::bar".into()),
            kind: None,
            hash: 7,
        };
        let bytes = ChunkCodec::bytes_encode(&chunk).unwrap();
        assert_eq!(ChunkCodec::bytes_decode(&bytes).unwrap(), chunk);
        assert!(ChunkCodec::bytes_decode(&bytes[..5]).is_err());
        assert_eq!(chunk_path(&bytes).unwrap(), chunk.path);
        assert_eq!(chunk_hash(&bytes), Some(7));
        assert!(chunk_path(&bytes[..5]).is_err());
        let symbols = vec![SymbolRecord {
            name: "request".into(),
            qualified: "Session.request".into(),
            kind: "method".into(),
            start_line: 3,
            end_line: 9,
            signature: "def request(self)".into(),
            parent: Some("Session".into()),
        }];
        let bytes = SymbolsCodec::bytes_encode(&symbols).unwrap();
        assert_eq!(SymbolsCodec::bytes_decode(&bytes).unwrap(), symbols);
        // The names alone, read from the same bytes, in order of first line.
        let names = SymbolNamesCodec::bytes_decode(&bytes).unwrap();
        let mut expected: Vec<(u32, &str)> = symbols
            .iter()
            .map(|s| (s.start_line, s.name.as_str()))
            .collect();
        expected.sort_by_key(|(line, _)| *line);
        for (line, name) in &expected {
            assert!(names.starting_within(*line, *line).any(|n| n == *name));
        }
        assert_eq!(names.starting_within(0, u32::MAX).count(), symbols.len());
        assert!(SymbolNamesCodec::bytes_decode(&bytes[..bytes.len() - 1]).is_err());
        // Looked up by name, any case: exactly the records the full decode has.
        for symbol in &symbols {
            let lowercase = symbol.name.to_lowercase();
            let want: Vec<&SymbolRecord> = symbols
                .iter()
                .filter(|s| s.name.to_lowercase() == lowercase)
                .collect();
            let found = symbols_named_in(&bytes, &lowercase).unwrap();
            assert_eq!(found.iter().collect::<Vec<_>>(), want);
        }
        assert!(symbols_named_in(&bytes, "absent").unwrap().is_empty());
        assert!(symbols_named_in(&bytes[..bytes.len() - 1], "absent").is_err());
        let refs = crate::chunk::syntax::chunk_file(
            "python",
            "from .a import b as c\nclass K(Base):\n    def f(self):\n        self.g(c(1))\n",
        )
        .refs;
        assert_eq!(refs.refs.len(), 3);
        assert_eq!(refs.imports.len(), 1);
        let bytes = RefsCodec::bytes_encode(&refs).unwrap();
        let stored = RefsCodec::bytes_decode(&bytes).unwrap();
        let read: Vec<Reference> = stored.refs().map(RefView::to_reference).collect();
        assert_eq!(read, refs.refs);
        assert_eq!((stored.len(), &stored.imports), (3, &refs.imports));
        assert_eq!(stored.bindings, refs.bindings);
        assert_eq!(stored, StoredRefs::from(&refs));
        assert!(RefsCodec::bytes_decode(&bytes[..bytes.len() - 1]).is_err());
    }
}
