//! The in-memory buffer of inserted keys: one byte arena plus 8-byte entries.
//!
//! Inserting appends the key and its payload to the arena and an entry to a vector:
//! no hashing, no tree, no allocation per key. The merge thread sorts the entries
//! (by key, then by arena offset, so the first insertion of a key comes first) and
//! drops repeated keys, which keeps the first insertion's payload.

use std::cmp::Ordering;

/// One inserted key: where it is in the arena and how long it and its payload are
/// (the payload follows the key).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    off: u32,
    key_len: u16,
    payload_len: u16,
}

/// Bytes one [`Entry`] takes, counted in [`Buffer::bytes`].
pub(crate) const ENTRY_BYTES: usize = size_of::<Entry>();

/// Keys and payloads inserted since the last hand-off.
pub(crate) struct Buffer {
    arena: Vec<u8>,
    entries: Vec<Entry>,
}

impl Buffer {
    /// An empty buffer expecting about `limit` bytes (reserved, not touched; with
    /// room for the one insert that crosses the limit).
    pub(crate) fn new(limit: usize) -> Buffer {
        Buffer {
            arena: Vec::with_capacity(limit + 2 * usize::from(u16::MAX)),
            entries: Vec::with_capacity(limit / 64),
        }
    }

    /// Appends a key and its payload. Lengths are checked by the caller (each at
    /// most `u16::MAX`, and the arena stays under 4 GiB because the buffer limit is
    /// at most 2 GiB).
    pub(crate) fn push(&mut self, key: &[u8], payload: &[u8]) {
        let off = self.arena.len() as u32;
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(payload);
        self.entries.push(Entry {
            off,
            key_len: key.len() as u16,
            payload_len: payload.len() as u16,
        });
    }

    /// Bytes held: arena plus entries.
    pub(crate) fn bytes(&self) -> usize {
        self.arena.len() + self.entries.len() * ENTRY_BYTES
    }

    /// Number of entries (repeats included until [`Buffer::sort_dedup`]).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if nothing was inserted.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, in sorted order after [`Buffer::sort_dedup`].
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The key of `e`.
    pub(crate) fn key(&self, e: Entry) -> &[u8] {
        let start = e.off as usize;
        &self.arena[start..start + usize::from(e.key_len)]
    }

    /// The payload of `e`.
    pub(crate) fn payload(&self, e: Entry) -> &[u8] {
        let start = e.off as usize + usize::from(e.key_len);
        &self.arena[start..start + usize::from(e.payload_len)]
    }

    /// Sorts the entries by key and keeps the first insertion of each key.
    pub(crate) fn sort_dedup(&mut self) {
        let arena = &self.arena;
        let key = |e: &Entry| &arena[e.off as usize..e.off as usize + usize::from(e.key_len)];
        self.entries
            .sort_unstable_by(|a, b| match key(a).cmp(key(b)) {
                Ordering::Equal => a.off.cmp(&b.off),
                other => other,
            });
        self.entries
            .dedup_by(|later, first| key(later) == key(first));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_and_keeps_first_payload() {
        let mut b = Buffer::new(1024);
        for (k, p) in [
            ("b", "1"),
            ("a", "2"),
            ("b", "3"),
            ("", "4"),
            ("ab", "5"),
            ("a", "6"),
        ] {
            b.push(k.as_bytes(), p.as_bytes());
        }
        assert_eq!(b.bytes(), 6 * ENTRY_BYTES + 6 + 6);
        b.sort_dedup();
        let got: Vec<(&[u8], &[u8])> = b
            .entries()
            .iter()
            .map(|&e| (b.key(e), b.payload(e)))
            .collect();
        let want: Vec<(&[u8], &[u8])> =
            vec![(b"", b"4"), (b"a", b"2"), (b"ab", b"5"), (b"b", b"1")];
        assert_eq!(got, want);
    }
}
