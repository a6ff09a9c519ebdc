//! [`withhold`]: keeps the bodies of some responses of a page batch out of the
//! archive before the batch is stored, for pages whose robots directives
//! (`X-Robots-Tag`, meta robots: `noarchive`) ask that no copy be kept.
//!
//! The batch is rewritten in place: every gzip member is copied as it is, except the
//! named `response` records, each replaced by a `metadata` record of the same
//! capture (`WARC-Target-URI`, `WARC-Date`, `WARC-Concurrent-To` the response's id,
//! which its `request` record names too) whose `application/warc-fields` block says
//! the body was withheld, why, and the HTTP status. The URL stays in the archive
//! (not indexed: a metadata record is no capture, so nothing can be replayed), the
//! body does not. The new file is written beside the batch under a dot name (which
//! no spool listing takes), synced and renamed over it, so a crash leaves the old
//! batch or the new one, never a mix; rewriting a rewritten batch changes nothing.
//! The record ids are name-based (the response's id), so a retry writes the same
//! bytes. It must never drop a record that was not named, nor touch any file but
//! the batch. O(batch bytes): only batches with a withheld page pay it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use spool::publish::durable_rename;
use spool::warc::{
    Record, RecordId, RecordType, Sha1Digest, WARC_FIELDS_TYPE, WarcHeaders, WarcReader,
    WarcWriter, warc_fields_block,
};

use crate::error::{Result, StorageError};

/// `WARC-Type` field value of the records written in place of a withheld response.
const METADATA: &str = "metadata";

/// Rewrites the batch at `path` so that the `response` records whose
/// `WARC-Record-ID` is a key of `withheld` keep no body (see the module docs); each
/// value is the reason written into its metadata record (the directives, say
/// `noarchive`). Returns how many records were replaced: 0 leaves the file as it
/// was. A batch that does not read is an error ([`StorageError::is_batch_fault`]).
pub fn withhold(path: &Path, withheld: &BTreeMap<String, String>) -> Result<u64> {
    if withheld.is_empty() {
        return Ok(0);
    }
    let file = File::open(path).map_err(StorageError::io(path))?;
    let mut reader = WarcReader::new(BufReader::with_capacity(256 * 1024, file));
    let mut source = File::open(path).map_err(StorageError::io(path))?;
    let mut rec = Record::default();
    // (offset, length) to copy, or the replacement's bytes, in file order.
    let mut plan: Vec<Piece> = Vec::new();
    let mut replaced = 0;
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
        let reason = rec
            .headers
            .record_id()
            .filter(|_| rec.headers.record_type() == Some(RecordType::Response))
            .and_then(|id| withheld.get(id));
        match reason {
            Some(reason) => {
                plan.push(Piece::New(metadata_record(path, &rec, reason)?));
                replaced += 1;
            }
            None => plan.push(Piece::Copy(rec.location.offset, rec.location.length)),
        }
    }
    if replaced == 0 {
        return Ok(0);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.withhold"));
    let written = (|| -> Result<File> {
        let out = File::create(&tmp).map_err(StorageError::io(&tmp))?;
        let mut out = BufWriter::with_capacity(256 * 1024, out);
        for piece in &plan {
            match piece {
                Piece::Copy(offset, length) => {
                    source
                        .seek(SeekFrom::Start(*offset))
                        .map_err(StorageError::io(path))?;
                    let copied = std::io::copy(&mut (&mut source).take(*length), &mut out)
                        .map_err(StorageError::io(&tmp))?;
                    if copied != *length {
                        return Err(StorageError::io(path)(std::io::Error::other(
                            "the batch shrank while being rewritten",
                        )));
                    }
                }
                Piece::New(bytes) => out.write_all(bytes).map_err(StorageError::io(&tmp))?,
            }
        }
        out.into_inner()
            .map_err(|e| StorageError::io(&tmp)(e.into_error()))
    })();
    let result = written.and_then(|file| Ok(durable_rename(file, &tmp, path)?));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| replaced)
}

/// One piece of the rewritten batch.
enum Piece {
    /// The bytes at (offset, length) of the batch, as they are.
    Copy(u64, u64),
    /// A replacement record, one gzip member.
    New(Vec<u8>),
}

/// The metadata record standing for the withheld response `rec`.
fn metadata_record(path: &Path, rec: &Record, reason: &str) -> Result<Vec<u8>> {
    let bad = |e: spool::warc::InvalidField| StorageError::BadRecord {
        path: path.to_owned(),
        offset: rec.location.offset,
        problem: crate::error::RecordProblem::Field(e.to_string()),
    };
    let h = &rec.headers;
    let original = h.record_id().unwrap_or_default();
    let digest = Sha1Digest::of(format!("polycrawl-withheld\n{original}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.0[..16]);
    let id = RecordId(uuid::Builder::from_sha1_bytes(bytes).into_uuid());
    let (status, _) = crate::http::status_and_mime(&rec.block);
    let mut out = WarcHeaders::new();
    out.push("WARC-Type", METADATA).map_err(bad)?;
    out.push("WARC-Record-ID", &id.to_string()).map_err(bad)?;
    for field in [
        "WARC-Date",
        "WARC-Target-URI",
        "WARC-IP-Address",
        "WARC-Warcinfo-ID",
    ] {
        if let Some(value) = h.get(field) {
            out.push(field, value).map_err(bad)?;
        }
    }
    if !original.is_empty() {
        out.push("WARC-Concurrent-To", original).map_err(bad)?;
    }
    out.push("Content-Type", WARC_FIELDS_TYPE).map_err(bad)?;
    let block = warc_fields_block(&[
        ("withheld", "response body not archived"),
        ("robots", reason),
        ("http-status", &status),
    ])
    .map_err(bad)?;
    let mut writer = WarcWriter::new(Vec::new());
    writer.write_record(&out, &block)?;
    writer.finish().map_err(StorageError::io(path))
}
