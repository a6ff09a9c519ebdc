//! The catalog: one RocksDB under `<repo>/catalog/` holding the digest index (payload
//! digest → first capture) and the ingest journal (which batches are stored, which
//! are half-way).
//!
//! # Keys and values
//!
//! | key | value |
//! |---|---|
//! | `d` + 20-byte SHA-1 | [`FirstCapture`]: version byte, date (u64 seconds, u32 nanos, big-endian), record id (16-byte UUID, or length-prefixed text for another form), target URI |
//! | `p` + batch name | pending ingest: version byte, sequence number (then, from version 1 repositories, a stored path, ignored) |
//! | `b` + batch name | done: version byte, [`BatchRecord`] (version 1: a batch stored as a file of its own, at offset 0) |
//! | `n` | the next batch sequence number (u64, big-endian) |
//! | `w` | the open WARC file and its durable length (`crate::warcfile::OpenWarc`) |
//!
//! A digest entry is 21 key bytes plus about 30 + URI bytes of value (≈ 100 bytes for
//! a typical URL); RocksDB compresses blocks with LZ4, so 100 M unique payloads take
//! roughly 10 GB on disk. **Memory does not grow with the crawl**: it is bounded by
//! the memtables (2 × [`CatalogOptions::write_buffer_bytes`]) plus the LRU block
//! cache ([`CatalogOptions::block_cache_bytes`]), which also holds the index and
//! Bloom-filter blocks (10 bits, ≈ 1.25 bytes per entry: 125 MB at 100 M pages; give
//! the cache that much to keep every lookup of a new payload free of disk reads).
//!
//! Every change of one ingest (its digest entries, `b` written, `p` deleted, `w`'s
//! new durable length) is one `WriteBatch` written with a synced WAL: it happens
//! entirely or not at all.

use std::path::Path;

use rocksdb::{BlockBasedOptions, Cache, DB, DBCompressionType, IteratorMode, Options, WriteBatch};
use rocksdb::{Direction, WriteOptions};
use spool::warc::{Sha1Digest, WarcDate};
use uuid::Uuid;

use crate::error::{Result, StorageError};
use crate::warcfile::OpenWarc;

const DIGEST: u8 = b'd';
const PENDING: u8 = b'p';
const DONE: u8 = b'b';
const NEXT_SEQ: &[u8] = b"n";
const OPEN_WARC: &[u8] = b"w";
const VERSION: u8 = 1;
/// Version of a [`BatchRecord`] value: 2 adds the offset in a shared WARC file, 3
/// the count of server-not-modified revisits.
const BATCH_VERSION: u8 = 3;

/// Memory bounds of the catalog's RocksDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogOptions {
    /// LRU block cache (data, index and filter blocks). Default 64 MiB.
    pub block_cache_bytes: usize,
    /// One memtable; at most two exist. Default 16 MiB.
    pub write_buffer_bytes: usize,
}

impl Default for CatalogOptions {
    fn default() -> Self {
        Self {
            block_cache_bytes: 64 << 20,
            write_buffer_bytes: 16 << 20,
        }
    }
}

/// The first stored capture of a payload: what a revisit record refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstCapture {
    /// `WARC-Date` of the capture.
    pub date: WarcDate,
    /// `WARC-Record-ID` of its response record, as written.
    pub record_id: String,
    /// `WARC-Target-URI`.
    pub uri: String,
}

/// What the journal keeps about a stored batch (returned again on a repeated ingest).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchRecord {
    /// Ingest sequence number (names the batch's index file).
    pub seq: u64,
    /// The WARC file the batch was appended to, relative to `<repo>/warc/`.
    pub stored: String,
    /// Where the batch starts in that file.
    pub offset: u64,
    /// Records in the batch.
    pub records: u64,
    /// Responses stored as first captures of their payload.
    pub responses: u64,
    /// Duplicate responses recorded as revisits.
    pub revisits: u64,
    /// 304 answers recorded as server-not-modified revisits (0 in records written
    /// before they were counted, version 2 and older).
    pub not_modified: u64,
    /// CDXJ lines written.
    pub index_lines: u64,
    /// Size of the batch file (its revisit records follow it in the WARC file).
    pub bytes: u64,
}

/// The catalog's RocksDB.
pub(crate) struct Catalog {
    db: DB,
    sync: WriteOptions,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("path", &self.db.path())
            .finish()
    }
}

impl Catalog {
    /// Opens (creating) the catalog. RocksDB's lock file makes this the only writer.
    pub(crate) fn open(path: &Path, o: &CatalogOptions) -> Result<Self> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_compression_type(DBCompressionType::Lz4);
        opts.set_write_buffer_size(o.write_buffer_bytes);
        opts.set_max_write_buffer_number(2);
        opts.set_max_open_files(256);
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&Cache::new_lru_cache(o.block_cache_bytes));
        table.set_bloom_filter(10.0, false);
        table.set_cache_index_and_filter_blocks(true);
        table.set_pin_l0_filter_and_index_blocks_in_cache(true);
        opts.set_block_based_table_factory(&table);
        let db = DB::open(&opts, path)?;
        let mut sync = WriteOptions::default();
        sync.set_sync(true);
        Ok(Self { db, sync })
    }

    /// The first captures of `digests`, in order (`None` for a payload not seen).
    pub(crate) fn first_captures(
        &self,
        digests: &[Sha1Digest],
    ) -> Result<Vec<Option<FirstCapture>>> {
        let keys: Vec<[u8; 21]> = digests.iter().map(digest_key).collect();
        let mut out = Vec::with_capacity(keys.len());
        for (key, got) in keys.iter().zip(self.db.multi_get(&keys)) {
            out.push(match got? {
                None => None,
                Some(v) => Some(decode_capture(&v).ok_or_else(|| bad_key(key))?),
            });
        }
        Ok(out)
    }

    /// The record of a stored batch.
    pub(crate) fn done(&self, name: &str) -> Result<Option<BatchRecord>> {
        let key = named(DONE, name);
        match self.db.get(&key)? {
            None => Ok(None),
            Some(v) => decode_batch(&v).map(Some).ok_or_else(|| bad_key(&key)),
        }
    }

    /// The sequence number of the pending ingest of `name`.
    pub(crate) fn pending(&self, name: &str) -> Result<Option<u64>> {
        let key = named(PENDING, name);
        match self.db.get(&key)? {
            None => Ok(None),
            Some(v) => decode_pending(&v).map(Some).ok_or_else(|| bad_key(&key)),
        }
    }

    /// Every pending ingest: `(name, seq)`. O(pending).
    pub(crate) fn all_pending(&self) -> Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for item in self
            .db
            .iterator(IteratorMode::From(&[PENDING], Direction::Forward))
        {
            let (key, value) = item?;
            if key.first() != Some(&PENDING) {
                break;
            }
            let name = String::from_utf8(key[1..].to_vec()).map_err(|_| bad_key(&key))?;
            let seq = decode_pending(&value).ok_or_else(|| bad_key(&key))?;
            out.push((name, seq));
        }
        Ok(out)
    }

    /// Starts the ingest of `name`: allocates its sequence number and records it as
    /// pending (synced), before anything is moved.
    pub(crate) fn begin(&self, name: &str) -> Result<u64> {
        let seq = match self.db.get(NEXT_SEQ)? {
            None => 1,
            Some(v) => u64::from_be_bytes(v.try_into().map_err(|_| bad_key(NEXT_SEQ))?),
        };
        let mut value = vec![VERSION];
        value.extend_from_slice(&seq.to_be_bytes());
        let mut batch = WriteBatch::default();
        batch.put(NEXT_SEQ, (seq + 1).to_be_bytes());
        batch.put(named(PENDING, name), value);
        self.db.write_opt(batch, &self.sync)?;
        Ok(seq)
    }

    /// The open WARC file, if any was started.
    pub(crate) fn open_warc(&self) -> Result<Option<OpenWarc>> {
        match self.db.get(OPEN_WARC)? {
            None => Ok(None),
            Some(v) => OpenWarc::decode(&v)
                .map(Some)
                .ok_or_else(|| bad_key(OPEN_WARC)),
        }
    }

    /// Records a new open WARC file (synced), before it is created.
    pub(crate) fn start_warc(&self, open: &OpenWarc) -> Result<()> {
        self.db.put_opt(OPEN_WARC, open.encode(), &self.sync)?;
        Ok(())
    }

    /// Finishes the ingest of `name` in one synced write: the new digest entries, the
    /// batch record, the pending mark removed, and the open WARC file's new durable
    /// length.
    pub(crate) fn commit(
        &self,
        name: &str,
        record: &BatchRecord,
        captures: &[(Sha1Digest, FirstCapture)],
        open: &OpenWarc,
    ) -> Result<()> {
        let mut batch = WriteBatch::default();
        batch.put(OPEN_WARC, open.encode());
        for (digest, capture) in captures {
            batch.put(digest_key(digest), encode_capture(capture));
        }
        batch.put(named(DONE, name), encode_batch(record));
        batch.delete(named(PENDING, name));
        self.db.write_opt(batch, &self.sync)?;
        Ok(())
    }
}

fn digest_key(d: &Sha1Digest) -> [u8; 21] {
    let mut key = [DIGEST; 21];
    key[1..].copy_from_slice(&d.0);
    key
}

fn named(prefix: u8, name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + name.len());
    key.push(prefix);
    key.extend_from_slice(name.as_bytes());
    key
}

fn bad_key(key: &[u8]) -> StorageError {
    StorageError::BadDigestEntry {
        key: String::from_utf8_lossy(key).escape_debug().to_string(),
    }
}

fn encode_capture(c: &FirstCapture) -> Vec<u8> {
    let mut v = Vec::with_capacity(48 + c.uri.len());
    v.push(VERSION);
    v.extend_from_slice(&c.date.unix_seconds().to_be_bytes());
    v.extend_from_slice(&c.date.nanos().to_be_bytes());
    let uuid = c
        .record_id
        .strip_prefix("<urn:uuid:")
        .and_then(|r| r.strip_suffix('>'))
        .and_then(|u| Uuid::try_parse(u).ok())
        .filter(|u| format!("<urn:uuid:{}>", u.hyphenated()) == c.record_id);
    match uuid {
        Some(u) => {
            v.push(0);
            v.extend_from_slice(u.as_bytes());
        }
        None => {
            v.push(1);
            put_text(&mut v, &c.record_id);
        }
    }
    v.extend_from_slice(c.uri.as_bytes());
    v
}

fn decode_capture(v: &[u8]) -> Option<FirstCapture> {
    let mut r = Reader(v);
    if r.u8()? != VERSION {
        return None;
    }
    let date = WarcDate::from_unix(r.u64()?, r.u32()?)?;
    let record_id = match r.u8()? {
        0 => {
            let u = Uuid::from_slice(r.take(16)?).ok()?;
            format!("<urn:uuid:{}>", u.hyphenated())
        }
        1 => r.text()?,
        _ => return None,
    };
    let uri = String::from_utf8(r.0.to_vec()).ok()?;
    Some(FirstCapture {
        date,
        record_id,
        uri,
    })
}

fn decode_pending(v: &[u8]) -> Option<u64> {
    let mut r = Reader(v);
    if r.u8()? != VERSION {
        return None;
    }
    r.u64()
}

fn encode_batch(b: &BatchRecord) -> Vec<u8> {
    let mut v = vec![BATCH_VERSION];
    for n in [
        b.seq,
        b.records,
        b.responses,
        b.revisits,
        b.index_lines,
        b.bytes,
        b.offset,
        b.not_modified,
    ] {
        v.extend_from_slice(&n.to_be_bytes());
    }
    put_text(&mut v, &b.stored);
    v
}

/// Version 1 (a batch in a file of its own, maybe with a companion file of
/// revisits, not kept), version 2 (without `not_modified`) and version 3.
fn decode_batch(v: &[u8]) -> Option<BatchRecord> {
    let mut r = Reader(v);
    let version = r.u8()?;
    let mut n = [0u64; 8];
    let fields = match version {
        1 => 6,
        2 => 7,
        BATCH_VERSION => 8,
        _ => return None,
    };
    for x in &mut n[..fields] {
        *x = r.u64()?;
    }
    let stored = r.text()?;
    let [
        seq,
        records,
        responses,
        revisits,
        index_lines,
        bytes,
        offset,
        not_modified,
    ] = n;
    Some(BatchRecord {
        seq,
        stored,
        offset,
        records,
        responses,
        revisits,
        not_modified,
        index_lines,
        bytes,
    })
}

fn put_text(v: &mut Vec<u8>, s: &str) {
    let len = u16::try_from(s.len()).unwrap_or(u16::MAX);
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(&s.as_bytes()[..usize::from(len)]);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    fn text(&mut self) -> Option<String> {
        let len = u16::from_be_bytes(self.take(2)?.try_into().ok()?);
        String::from_utf8(self.take(usize::from(len))?.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let date = WarcDate::from_unix(1_795_341_600, 250).unwrap();
        for record_id in [
            "<urn:uuid:6f1c2a3e-0b4d-4e5f-8a9b-0c1d2e3f4002>",
            "<urn:uuid:6F1C2A3E-0B4D-4E5F-8A9B-0C1D2E3F4002>",
            "<urn:other:thing>",
        ] {
            let c = FirstCapture {
                date,
                record_id: record_id.into(),
                uri: "http://example.com/é".into(),
            };
            let v = encode_capture(&c);
            assert_eq!(decode_capture(&v).unwrap(), c);
            assert!(decode_capture(&v[..10]).is_none());
        }
        let uuid_form = encode_capture(&FirstCapture {
            date,
            record_id: "<urn:uuid:6f1c2a3e-0b4d-4e5f-8a9b-0c1d2e3f4002>".into(),
            uri: "http://a.example/".into(),
        });
        assert_eq!(
            uuid_form.len(),
            1 + 12 + 17 + 17,
            "compact form of a UUID id"
        );

        let b = BatchRecord {
            seq: 7,
            stored: "2026/bfs-20261122100000-000001.warc.gz".into(),
            offset: 4096,
            records: 9,
            responses: 3,
            revisits: 1,
            not_modified: 2,
            index_lines: 4,
            bytes: 12345,
        };
        assert_eq!(decode_batch(&encode_batch(&b)).unwrap(), b);
        // A version 2 record: no not_modified count.
        let mut v2 = vec![2u8];
        for n in [7u64, 9, 3, 1, 4, 12345, 4096] {
            v2.extend_from_slice(&n.to_be_bytes());
        }
        put_text(&mut v2, "2026/x.warc.gz");
        let old = decode_batch(&v2).unwrap();
        assert_eq!((old.offset, old.revisits, old.not_modified), (4096, 1, 0));
        // A version 1 record (a repository written before shared WARC files).
        let mut v1 = vec![1u8];
        for n in [7u64, 9, 3, 1, 4, 12345] {
            v1.extend_from_slice(&n.to_be_bytes());
        }
        put_text(&mut v1, "2026/x.warc.gz");
        put_text(&mut v1, "2026/x.revisits.warc.gz");
        let old = decode_batch(&v1).unwrap();
        assert_eq!(
            (old.stored.as_str(), old.offset, old.bytes),
            ("2026/x.warc.gz", 0, 12345)
        );
    }

    #[test]
    fn journal_and_digests() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(&dir.path().join("db"), &CatalogOptions::default()).unwrap();
        assert_eq!(cat.begin("a.warc.gz").unwrap(), 1);
        assert_eq!(cat.begin("b.warc.gz").unwrap(), 2);
        assert_eq!(cat.pending("a.warc.gz").unwrap(), Some(1));
        assert_eq!(cat.all_pending().unwrap().len(), 2);
        let d = Sha1Digest::of(b"body");
        let c = FirstCapture {
            date: WarcDate::from_unix(0, 0).unwrap(),
            record_id: "<urn:uuid:6f1c2a3e-0b4d-4e5f-8a9b-0c1d2e3f4002>".into(),
            uri: "http://a/".into(),
        };
        let rec = BatchRecord {
            seq: 1,
            stored: "2026/a.warc.gz".into(),
            ..Default::default()
        };
        assert_eq!(cat.open_warc().unwrap(), None);
        let mut open = OpenWarc {
            file: "2026/a.warc.gz".into(),
            serial: 1,
            started: 5,
            len: 0,
        };
        cat.start_warc(&open).unwrap();
        assert_eq!(cat.open_warc().unwrap().as_ref(), Some(&open));
        open.len = 777;
        cat.commit("a.warc.gz", &rec, &[(d, c.clone())], &open)
            .unwrap();
        assert_eq!(cat.open_warc().unwrap(), Some(open));
        assert_eq!(cat.pending("a.warc.gz").unwrap(), None);
        assert_eq!(cat.done("a.warc.gz").unwrap(), Some(rec));
        assert_eq!(
            cat.first_captures(&[Sha1Digest::of(b"other"), d]).unwrap(),
            [None, Some(c)]
        );
        let pending = cat.all_pending().unwrap();
        assert_eq!(pending, [("b.warc.gz".to_owned(), 2)]);
    }
}
