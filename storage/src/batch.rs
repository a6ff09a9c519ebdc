//! Reading a page batch before it is stored: [`scan`] checks every record with
//! `spool`'s strict [`WarcReader`] (gzip CRCs included) and keeps, per record, what
//! the index and the dedup step need — never the bodies.
//!
//! Beyond what the reader checks, a response must have an http(s) target URI and a
//! `WARC-Payload-Digest` equal to the SHA-1 of its stored payload (computed here;
//! absent, it is filled in). A wrong digest would make dedup serve another page's
//! body, so it refuses the batch. The cost per 13 KB page is one SHA-1 (≈ 20 µs)
//! on top of the inflate the reader does anyway; the figures are in the crate docs.
//! A caller that knows the batch's producer computed the digests from the very bytes
//! it wrote (the crawl's own downloaders) may skip that SHA-1 ([`Digests::Trust`]):
//! the gzip CRC-32 of every member, which the reader always checks, still guards
//! those bytes against damage since; only a stated digest is trusted, an absent
//! one is computed.

use std::fs::File;
use std::io::BufReader;
use std::net::IpAddr;
use std::path::Path;

use spool::warc::{
    Record, RecordLocation, RecordType, Sha1Digest, WarcDate, WarcReader, payload_digest,
};

use crate::error::{RecordProblem, Result, StorageError};
use crate::http::{head_len, status_and_mime};
use crate::surt::surt;

/// Whether a scan verifies the stated payload digests of responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Digests {
    /// Compute every response's payload SHA-1 and refuse a batch whose stated digest
    /// differs: for a batch from anywhere.
    Verify,
    /// Take a stated `WARC-Payload-Digest` as it is (computing only absent ones): for
    /// batches whose writer digested the bytes it wrote (see the module docs).
    Trust,
}

/// What storage keeps of one record of a batch.
#[derive(Debug, Clone)]
pub(crate) struct Scanned {
    /// `WARC-Type` (`None` for a non-standard type: stored, not indexed).
    pub(crate) kind: Option<RecordType>,
    /// Where the record's gzip member is.
    pub(crate) location: RecordLocation,
    /// `WARC-Date`.
    pub(crate) date: WarcDate,
    /// `WARC-Record-ID`.
    pub(crate) record_id: String,
    /// For responses and revisits: the target URI, its SURT key, and the rest.
    pub(crate) capture: Option<CaptureInfo>,
}

/// The indexable part of a response or revisit record.
#[derive(Debug, Clone)]
pub(crate) struct CaptureInfo {
    pub(crate) uri: String,
    pub(crate) key: String,
    pub(crate) ip: Option<IpAddr>,
    /// Payload digest: verified for a response; as stated (if at all) for a revisit.
    pub(crate) digest: Option<Sha1Digest>,
    pub(crate) payload_len: u64,
    pub(crate) status: String,
    pub(crate) mime: String,
    /// The HTTP head (blank line included): the block of a revisit written for it.
    pub(crate) head: Vec<u8>,
    /// The downloader's extension fields (for the application's crawl log; storage
    /// itself never uses them).
    pub(crate) fetch: FetchFields,
}

/// A page record's extension fields as the crawl's downloader writes them (see
/// `spool::warc::DEPTH_FIELD` and its neighbours) and its `WARC-Truncated`; each
/// `None` when absent or not a number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchFields {
    /// `Polycrawl-Depth`: link depth from the seeds.
    pub depth: Option<u32>,
    /// `Polycrawl-Hops`: redirects followed to reach the URL (absent is 0).
    pub hops: u32,
    /// `Polycrawl-Fetch-Start`: when the fetch started, Unix milliseconds.
    pub start_ms: Option<u64>,
    /// `Polycrawl-Fetch-Ms`: how long it took, milliseconds.
    pub duration_ms: Option<u64>,
    /// `WARC-Truncated`, as written (`length`, `disconnect`, ...).
    pub truncated: Option<String>,
}

impl FetchFields {
    fn of(h: &spool::warc::WarcHeaders) -> Self {
        use spool::warc::{DEPTH_FIELD, FETCH_MS_FIELD, FETCH_START_FIELD, HOPS_FIELD};
        Self {
            depth: h.get(DEPTH_FIELD).and_then(|v| v.trim().parse().ok()),
            hops: h
                .get(HOPS_FIELD)
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0),
            start_ms: h.get(FETCH_START_FIELD).and_then(|v| v.trim().parse().ok()),
            duration_ms: h.get(FETCH_MS_FIELD).and_then(|v| v.trim().parse().ok()),
            truncated: h.truncated().map(str::to_owned),
        }
    }
}

/// A whole batch, checked.
#[derive(Debug)]
pub(crate) struct ScannedBatch {
    pub(crate) records: Vec<Scanned>,
    /// File size.
    pub(crate) bytes: u64,
}

/// Reads and checks the batch at `path`.
pub(crate) fn scan(path: &Path) -> Result<ScannedBatch> {
    scan_with(path, Digests::Verify, |_| {})
}

/// Reads and checks the batch at `path`, handing each record to `visit` once it has
/// passed the checks (in file order). On an error, `visit` has seen the records
/// before the bad one: its caller must drop what it made of them.
pub(crate) fn scan_with(
    path: &Path,
    digests: Digests,
    mut visit: impl FnMut(&Record),
) -> Result<ScannedBatch> {
    let file = File::open(path).map_err(StorageError::io(path))?;
    let bytes = file.metadata().map_err(StorageError::io(path))?.len();
    let mut reader = WarcReader::new(BufReader::with_capacity(256 * 1024, file));
    let mut rec = Record::default();
    let mut records = Vec::new();
    loop {
        match reader.read_into(&mut rec) {
            Ok(true) => {}
            Ok(false) => break,
            Err(source) => {
                return Err(StorageError::CorruptBatch {
                    path: path.to_owned(),
                    source,
                });
            }
        }
        let bad = |problem| StorageError::BadRecord {
            path: path.to_owned(),
            offset: rec.location.offset,
            problem,
        };
        records.push(check(&rec, digests).map_err(bad)?);
        visit(&rec);
    }
    if records.is_empty() {
        return Err(StorageError::BadRecord {
            path: path.to_owned(),
            offset: 0,
            problem: RecordProblem::Empty,
        });
    }
    Ok(ScannedBatch { records, bytes })
}

fn check(rec: &Record, digests: Digests) -> Result<Scanned, RecordProblem> {
    let h = &rec.headers;
    let kind = h.record_type();
    // The reader checked that these mandatory fields are present and well-formed.
    let date = h
        .date()
        .unwrap_or_else(|| WarcDate::from_system_time(std::time::UNIX_EPOCH));
    let record_id = h.record_id().unwrap_or_default().to_owned();
    let capture = match kind {
        Some(RecordType::Response) => Some(capture(rec, Some(digests))?),
        Some(RecordType::Revisit) => Some(capture(rec, None)?),
        _ => None,
    };
    Ok(Scanned {
        kind,
        location: rec.location,
        date,
        record_id,
        capture,
    })
}

/// `response`: how to treat the payload digest of a response (`None` for a revisit,
/// whose digest is as stated: its payload is elsewhere).
fn capture(rec: &Record, response: Option<Digests>) -> Result<CaptureInfo, RecordProblem> {
    let h = &rec.headers;
    let uri = h.target_uri().ok_or(RecordProblem::NoTargetUri)?;
    let key =
        surt(uri).map_err(|_| RecordProblem::BadTargetUri(uri.chars().take(200).collect()))?;
    let stated = match h.get("WARC-Payload-Digest") {
        None => None,
        Some(text) => Some(
            text.parse::<Sha1Digest>()
                .map_err(|_| RecordProblem::BadPayloadDigest(text.chars().take(80).collect()))?,
        ),
    };
    let n = head_len(&rec.block);
    let (head, payload) = rec.block.split_at(n);
    let digest = match (response, stated) {
        (None, _) | (Some(Digests::Trust), Some(_)) => stated,
        (Some(_), _) => {
            let computed = payload_digest(payload);
            if let Some(stated) = stated.filter(|s| *s != computed) {
                return Err(RecordProblem::PayloadDigestMismatch {
                    stated: stated.to_string(),
                    computed: computed.to_string(),
                });
            }
            Some(computed)
        }
    };
    let (status, mime) = status_and_mime(head);
    Ok(CaptureInfo {
        uri: uri.to_owned(),
        key,
        ip: h.get("WARC-IP-Address").and_then(|ip| ip.parse().ok()),
        digest,
        payload_len: payload.len() as u64,
        status,
        mime,
        head: head.to_vec(),
        fetch: FetchFields::of(h),
    })
}
