//! Keys of any length. LMDB refuses keys over 511 bytes (`MDB_BAD_VALSIZE`), and a
//! project's relative paths can be longer (deep `node_modules`-style trees, symbol names of
//! generated code). A text up to [`MAX_KEY`] bytes is its own key; a longer one is cut at
//! [`CUT`] bytes, followed by a mark and the hash of the whole text, and the whole text is
//! kept in the `long_keys` database under that key. Cut keys keep the text's prefix, so
//! prefix scans (a directory's files, a name's symbols) still find them: a scan asks for at
//! most [`CUT`] bytes of prefix and checks the whole text.

use std::borrow::Cow;

use heed::types::Str;
use heed::{Database, RoTxn, RwTxn};

/// The longest text used as its own key.
pub(super) const MAX_KEY: usize = 480;
/// Where a longer text is cut (at a character boundary at or below).
const CUT: usize = 400;
/// Between the cut text and its hash; a text of its own keeps a key under [`MAX_KEY`] bytes,
/// so the mark and hash after byte [`CUT`] tell a cut key apart.
const MARK: char = '\u{1}';

/// The LMDB key of `text`.
pub(super) fn key(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_KEY {
        return Cow::Borrowed(text);
    }
    let hash = xxhash_rust::xxh3::xxh3_128(text.as_bytes());
    Cow::Owned(format!("{}{MARK}{hash:032x}", cut(text)))
}

/// Whether `key` was cut from a longer text.
pub(super) fn is_cut(key: &str) -> bool {
    let bytes = key.as_bytes();
    bytes.len() > 33
        && bytes.len() <= CUT + 33
        && bytes[bytes.len() - 33] == MARK as u8
        && bytes[bytes.len() - 32..].iter().all(u8::is_ascii_hexdigit)
}

/// At most [`CUT`] bytes of `text`, ending at a character boundary.
fn cut(text: &str) -> &str {
    let mut end = text.len().min(CUT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What a prefix scan for `prefix` asks LMDB for (the whole text must then start with
/// `prefix`: see [`LongKeys::full`]).
pub(super) fn scan_prefix(prefix: &str) -> &str {
    if prefix.len() <= CUT {
        prefix
    } else {
        cut(prefix)
    }
}

/// The `long_keys` database: cut key -> whole text.
#[derive(Clone, Copy)]
pub(super) struct LongKeys(pub(super) Database<'static, Str, Str>);

impl LongKeys {
    /// The whole text of `key`.
    pub(super) fn full<'k>(&self, rtxn: &RoTxn, key: &'k str) -> heed::Result<Cow<'k, str>> {
        if !is_cut(key) {
            return Ok(Cow::Borrowed(key));
        }
        Ok(match self.0.get(rtxn, key)? {
            Some(text) => Cow::Owned(text.to_string()),
            None => Cow::Borrowed(key),
        })
    }

    /// Remember the whole text of `text`'s key, if it was cut. Returns the key.
    pub(super) fn put<'t>(&self, wtxn: &mut RwTxn, text: &'t str) -> heed::Result<Cow<'t, str>> {
        let key = key(text);
        if let Cow::Owned(cut) = &key {
            self.0.put(wtxn, cut, text)?;
        }
        Ok(key)
    }

    /// Forget the whole text of `text`'s key, if it was cut.
    pub(super) fn delete(&self, wtxn: &mut RwTxn, text: &str) -> heed::Result<()> {
        if let Cow::Owned(cut) = key(text) {
            self.0.delete(wtxn, &cut)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_get_short_keys_that_keep_their_prefix() {
        assert_eq!(key("src/lib.rs"), "src/lib.rs");
        let long = format!("{}/x.js", "node_modules/pkg".repeat(80));
        let k = key(&long);
        assert!(
            k.len() <= MAX_KEY && k.starts_with("node_modules/pkg"),
            "{k}"
        );
        assert!(is_cut(&k));
        assert!(!is_cut("src/lib.rs"));
        assert_ne!(key(&format!("{long}2")), k, "two long texts, two keys");
        // Multi-byte characters are never split.
        let wide = "é".repeat(300);
        assert!(key(&wide).starts_with(&"é".repeat(200)));
        assert_eq!(scan_prefix(&long), &long[..CUT]);
    }
}
