//! The WARC 1.1 record codec for page batches (`pages/<app>/`, downloader →
//! application) and for the storage repository.
//!
//! # Format
//!
//! A page batch is a `.warc.gz` file of WARC 1.1 records (ISO 28500:2017), **one
//! gzip member per record**, as warcio, pywb, Heritrix and every archive tool
//! expect. A CDXJ index entry points at one record by the (offset, length) of its
//! member; [`WarcWriter`] returns that [`RecordLocation`] for each record it writes
//! and [`WarcReader`] reports it for each record it reads. `zcat batch.warc.gz`
//! shows the whole file as text; `warcio index` and `warcio check` accept it.
//! Each member's gzip header carries the member's own length in an extra field
//! (subfield `PL`, RFC 1952 `FEXTRA`; see the writer's `GZIP_HEADER`), which other
//! readers skip and [`WarcReader`] uses to inflate a member in one piece.
//!
//! Each record is:
//!
//! ```text
//! WARC/1.1<CRLF>
//! Name: value<CRLF>          (one line per field)
//! ...
//! Content-Length: N<CRLF>
//! <CRLF>
//! N bytes of block<CRLF><CRLF>
//! ```
//!
//! `WARC-Type`, `WARC-Record-ID` (`<urn:uuid:…>`), `WARC-Date` (UTC,
//! `2026-11-22T10:00:00Z`) and `Content-Length` are mandatory. A batch starts with a
//! `warcinfo` record, then for every fetch a `response` (block: the raw HTTP
//! response head and body, `WARC-Payload-Digest` = SHA-1 of the body) and the
//! `request` that produced it (block: the HTTP request bytes, `WARC-Concurrent-To`
//! the response). Storage writes `revisit` records (profile identical-payload-digest,
//! block: the response head only) for bodies it has seen before, and (profile
//! server-not-modified, empty block) for 304 answers to a recrawl's conditional
//! requests. The writer adds
//! `Content-Length` and, unless told not to ([`WriterOptions::block_digest`]),
//! `WARC-Block-Digest` (SHA-1 of the block; optional in WARC 1.1, and the downloader
//! leaves it out: the payload digest is what dedup and indexes use). Digests are
//! `sha1:` + base32 ([`Sha1Digest`]).
//!
//! The reader also reads uncompressed `.warc` files and `WARC/1.0` records, and is
//! strict about everything else: a version line other than `WARC/1.0` or `WARC/1.1`,
//! a header line not ending in CRLF, a malformed or duplicated mandatory field, a
//! header over 64 KiB, a block shorter than `Content-Length`, a missing CRLF CRLF,
//! a corrupt gzip member or one holding more than one record: each is a typed
//! [`WarcErrorKind`], and the consumer quarantines the batch.
//!
//! # Example
//!
//! An uncompressed batch of three records (every line ends in CRLF; this file is
//! `spool/src/warc/examples/example.warc` in the source tree, written by the default
//! [`WarcWriter`]; the downloader publishes the gzip form of such records, without
//! their `WARC-Block-Digest` fields):
//!
#![doc = concat!("```text\n", include_str!("examples/example.warc"), "```")]
//!
//! # Use
//!
//! ```
//! use spool::warc::{Capture, RecordId, WarcDate, WarcHeaders, WarcReader, WarcWriter, payload_digest};
//!
//! let (head, body) = (&b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"[..], &b"hi"[..]);
//! let capture = Capture {
//!     target_uri: "http://example.com/",
//!     date: WarcDate::now(),
//!     ip: None,
//!     warcinfo_id: None,
//! };
//! let headers = WarcHeaders::response(RecordId::random(), &capture, payload_digest(body))?;
//! let mut writer = WarcWriter::new(Vec::new());
//! let at = writer.write_record_parts(&headers, &[head, body])?;
//! let file = writer.finish()?;
//!
//! let record = WarcReader::new(&file[..]).next().unwrap()?;
//! assert_eq!(record.location, at);
//! assert_eq!(record.headers.target_uri(), Some("http://example.com/"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod date;
mod digest;
mod headers;
mod reader;
mod records;
mod writer;

pub use date::{InvalidDate, WarcDate};
pub use digest::{Digester, InvalidDigest, Sha1Digest, payload_digest};
pub use headers::{
    InvalidField, InvalidRecordId, RecordId, RecordType, Truncated, WarcHeaders, WarcVersion,
};
pub use reader::{
    DEFAULT_MAX_BLOCK, DEFAULT_MAX_HEADER, Record, WarcError, WarcErrorKind, WarcReader,
};
pub use records::{
    Capture, DEPTH_FIELD, FETCH_MS_FIELD, FETCH_START_FIELD, HOPS_FIELD, HTTP_REQUEST_TYPE,
    HTTP_RESPONSE_TYPE, IDENTICAL_PAYLOAD_PROFILE, Original, SERVER_NOT_MODIFIED_PROFILE,
    WARC_FIELDS_TYPE, warc_fields_block,
};
pub use writer::{
    BlockDeflater, DeflatedBlock, RecordLocation, SMALL_RECORD, WarcWriteError, WarcWriter,
    WriterOptions,
};
