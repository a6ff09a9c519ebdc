//! The set file: encode and decode side by side, and the streaming [`FileReader`](crate::reader::FileReader)
//! that checks everything it reads ([`verify`](crate::reader::verify) reads a whole file).
//!
//! ```text
//! header  32 B  magic "PCRWSEEN" | version u32 | restart interval u32
//!               | generation u64 | count u64
//! entries       per key: shared varint | suffix length varint | suffix bytes
//!               (shared = 0 at every restart: key i with i % interval == 0)
//! index         u64 file offset of each restart entry, ceil(count / interval) of them
//! footer  32 B  index offset u64 | count u64 | generation u64 | crc32 u32 | "SEEN"
//! ```
//!
//! All integers little-endian, varints LEB128. Keys strictly increasing (bytewise).
//! The CRC-32 (IEEE, `crc32fast`) covers every byte before it: header, entries,
//! index and the first 24 bytes of the footer.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::error::{Corruption, SeenError};

/// First eight bytes of every set file.
pub const MAGIC: [u8; 8] = *b"PCRWSEEN";
/// Last four bytes of every set file.
pub const END_MAGIC: [u8; 4] = *b"SEEN";
/// The format version written by this build (the only one it reads).
pub const VERSION: u32 = 1;
/// Length of the header.
pub const HEADER_LEN: usize = 32;
/// Length of the footer.
pub const FOOTER_LEN: usize = 32;
/// Longest key, in bytes (keys are written and read with lengths up to this).
pub const MAX_KEY_LEN: usize = u16::MAX as usize;
/// Largest restart interval a file may declare.
pub const MAX_RESTART_INTERVAL: u32 = 1 << 16;

/// The header's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// A key with no shared prefix every this many keys.
    pub restart_interval: u32,
    /// The merge that wrote the file (1 for the first).
    pub generation: u64,
    /// Number of keys.
    pub count: u64,
}

impl Header {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0; HEADER_LEN];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&self.restart_interval.to_le_bytes());
        out[16..24].copy_from_slice(&self.generation.to_le_bytes());
        out[24..32].copy_from_slice(&self.count.to_le_bytes());
        out
    }

    /// Parses and checks a header.
    pub fn decode(bytes: &[u8; HEADER_LEN]) -> Result<Header, Corruption> {
        if bytes[0..8] != MAGIC {
            return Err(Corruption::BadMagic);
        }
        let version = u32_at(bytes, 8);
        if version != VERSION {
            return Err(Corruption::UnsupportedVersion(version));
        }
        let restart_interval = u32_at(bytes, 12);
        if restart_interval == 0 || restart_interval > MAX_RESTART_INTERVAL {
            return Err(Corruption::BadRestartInterval(restart_interval));
        }
        Ok(Header {
            restart_interval,
            generation: u64_at(bytes, 16),
            count: u64_at(bytes, 24),
        })
    }

    /// Number of restart entries (and of index slots).
    pub fn restarts(&self) -> u64 {
        self.count.div_ceil(u64::from(self.restart_interval))
    }
}

/// The footer's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    /// File offset of the restart index (the end of the entries).
    pub index_offset: u64,
    /// Number of keys (same as the header's).
    pub count: u64,
    /// Generation (same as the header's).
    pub generation: u64,
    /// CRC-32 of every byte before it.
    pub crc: u32,
}

impl Footer {
    /// The footer's first 24 bytes (covered by the CRC).
    pub fn encode_fields(&self) -> [u8; 24] {
        let mut out = [0; 24];
        out[0..8].copy_from_slice(&self.index_offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.count.to_le_bytes());
        out[16..24].copy_from_slice(&self.generation.to_le_bytes());
        out
    }

    /// The footer's last 8 bytes: CRC and end marker.
    pub fn encode_tail(&self) -> [u8; 8] {
        let mut out = [0; 8];
        out[0..4].copy_from_slice(&self.crc.to_le_bytes());
        out[4..8].copy_from_slice(&END_MAGIC);
        out
    }

    /// Parses a footer and checks its end marker.
    pub fn decode(bytes: &[u8; FOOTER_LEN]) -> Result<Footer, Corruption> {
        if bytes[28..32] != END_MAGIC {
            return Err(Corruption::BadEndMagic);
        }
        Ok(Footer {
            index_offset: u64_at(bytes, 0),
            count: u64_at(bytes, 8),
            generation: u64_at(bytes, 16),
            crc: u32_at(bytes, 24),
        })
    }
}

/// What a set file holds, from its header and footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSummary {
    /// The merge that wrote it.
    pub generation: u64,
    /// Number of keys.
    pub count: u64,
    /// File length in bytes.
    pub bytes: u64,
    /// Restart interval.
    pub restart_interval: u32,
}

/// Reads a file's header and footer and checks that they agree with each other and
/// with the file's length (a cheap check: the entries are checked when read).
pub(crate) fn read_ends(file: &mut File, path: &Path) -> Result<(Header, Footer, u64), SeenError> {
    let corrupt = |what| SeenError::Corrupt {
        path: path.to_owned(),
        what,
    };
    let len = file.metadata().map_err(SeenError::io(path))?.len();
    if len < (HEADER_LEN + FOOTER_LEN) as u64 {
        return Err(corrupt(Corruption::Truncated));
    }
    let mut head = [0; HEADER_LEN];
    let mut foot = [0; FOOTER_LEN];
    file.seek(SeekFrom::Start(0)).map_err(SeenError::io(path))?;
    file.read_exact(&mut head).map_err(SeenError::io(path))?;
    file.seek(SeekFrom::End(-(FOOTER_LEN as i64)))
        .map_err(SeenError::io(path))?;
    file.read_exact(&mut foot).map_err(SeenError::io(path))?;
    let header = Header::decode(&head).map_err(corrupt)?;
    let footer = Footer::decode(&foot).map_err(corrupt)?;
    let index_len = header.restarts().checked_mul(8);
    let expected_len = index_len
        .and_then(|n| n.checked_add(footer.index_offset))
        .and_then(|n| n.checked_add(FOOTER_LEN as u64));
    if header.count != footer.count
        || header.generation != footer.generation
        || footer.index_offset < HEADER_LEN as u64
        || expected_len != Some(len)
    {
        return Err(corrupt(Corruption::Inconsistent));
    }
    Ok((header, footer, len))
}

/// Appends `value` as a LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Decodes a LEB128 varint at the start of `bytes`: the value and its length, or
/// `None` if it is cut off or longer than ten bytes.
pub(crate) fn get_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Length of the longest common prefix of `a` and `b`.
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("8 bytes"))
            ^ u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(get_varint(&out), Some((v, out.len())));
            assert_eq!(get_varint(&out[..out.len() - 1]), None);
        }
        assert_eq!(get_varint(&[0x80; 11]), None);
    }

    #[test]
    fn common_prefix_at_every_position() {
        let a: Vec<u8> = (0..40).collect();
        for i in 0..40 {
            let mut b = a.clone();
            b[i] ^= 0xff;
            assert_eq!(common_prefix(&a, &b), i);
        }
        assert_eq!(common_prefix(&a, &a[..17]), 17);
        assert_eq!(common_prefix(b"", b"x"), 0);
    }

    #[test]
    fn header_and_footer_round_trip_and_reject() {
        let h = Header {
            restart_interval: 64,
            generation: 7,
            count: 1000,
        };
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        let mut bad = h.encode();
        bad[0] = b'X';
        assert_eq!(Header::decode(&bad), Err(Corruption::BadMagic));
        let mut bad = h.encode();
        bad[8] = 2;
        assert_eq!(Header::decode(&bad), Err(Corruption::UnsupportedVersion(2)));
        let f = Footer {
            index_offset: 99,
            count: 1000,
            generation: 7,
            crc: 0xdead_beef,
        };
        let mut bytes = [0; FOOTER_LEN];
        bytes[..24].copy_from_slice(&f.encode_fields());
        bytes[24..].copy_from_slice(&f.encode_tail());
        assert_eq!(Footer::decode(&bytes), Ok(f));
        bytes[31] = 0;
        assert_eq!(Footer::decode(&bytes), Err(Corruption::BadEndMagic));
    }
}
