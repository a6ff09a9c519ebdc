//! The companion file of revisit records: `<batch stem>.revisits.warc.gz`, beside
//! the batch, holding a `warcinfo` record and one `revisit` record (profile
//! identical-payload-digest) per duplicate response of the batch.
//!
//! Each revisit carries the duplicate's capture (`WARC-Target-URI`, `WARC-Date`,
//! `WARC-IP-Address`), its HTTP response head as the block, `WARC-Refers-To`,
//! `-Target-URI` and `-Date` of the first capture of the payload, and
//! `WARC-Concurrent-To` the duplicate response record in the batch (the same capture
//! event). The file is **deterministic**: record ids are name-based UUIDs (SHA-1 of
//! the batch name and record offset), the warcinfo date is the batch's, and gzip
//! output depends only on the input, so a crash retry rewrites it byte for byte and
//! index lines written by an earlier attempt stay valid.

use std::path::Path;

use spool::warc::{
    Capture, Original, RecordId, RecordLocation, Sha1Digest, WarcDate, WarcHeaders, WarcWriter,
    warc_fields_block,
};

use crate::batch::ScannedBatch;
use crate::dedup::Fate;
use crate::error::{Result, StorageError};
use crate::fsutil::TmpFile;

/// `software` field of the companion's warcinfo record.
const SOFTWARE: &str = concat!("polycrawl-storage/", env!("CARGO_PKG_VERSION"));

/// The companion file name of batch `name` (`x.warc.gz` → `x.revisits.warc.gz`).
pub(crate) fn companion_name(name: &str) -> String {
    let stem = name.strip_suffix(".warc.gz").unwrap_or(name);
    format!("{stem}.revisits.warc.gz")
}

/// A name-based (version 5 layout) record id for `what` in batch `batch`.
fn stable_id(batch: &str, what: &str) -> RecordId {
    let digest = Sha1Digest::of(format!("polycrawl-storage\n{batch}\n{what}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.0[..16]);
    RecordId(uuid::Builder::from_sha1_bytes(bytes).into_uuid())
}

/// Writes the companion of batch `name` to `dest` (through `tmp_dir`); returns the
/// location of each duplicate's revisit record, by record index.
pub(crate) fn write(
    tmp_dir: &Path,
    dest: &Path,
    name: &str,
    batch: &ScannedBatch,
    fates: &[Fate],
) -> Result<Vec<Option<RecordLocation>>> {
    let file_name = companion_name(name);
    // The batch's own date (its warcinfo's), so that a retry writes the same bytes.
    let date = batch.records.first().map_or_else(
        || WarcDate::from_system_time(std::time::UNIX_EPOCH),
        |r| r.date,
    );
    let info_id = stable_id(name, "warcinfo");
    let bad = |e: spool::warc::InvalidField| StorageError::BadStoredRecord {
        file: file_name.clone(),
        offset: 0,
        reason: e.to_string(),
    };
    let description =
        format!("revisit records (identical-payload-digest) for the duplicate responses of {name}");
    let info_block = warc_fields_block(&[
        ("software", SOFTWARE),
        ("format", "WARC File Format 1.1"),
        (
            "conformsTo",
            "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        ),
        ("description", &description),
    ])
    .map_err(bad)?;

    let mut writer = WarcWriter::new(TmpFile::create(tmp_dir, dest)?);
    writer.write_record(
        &WarcHeaders::warcinfo(info_id, date, Some(&file_name)).map_err(bad)?,
        &info_block,
    )?;
    let mut out = vec![None; fates.len()];
    for (i, (r, fate)) in batch.records.iter().zip(fates).enumerate() {
        let (Fate::Duplicate(first), Some(c)) = (fate, &r.capture) else {
            continue;
        };
        let Some(digest) = c.digest else { continue };
        let capture = Capture {
            target_uri: &c.uri,
            date: r.date,
            ip: c.ip,
            warcinfo_id: Some(info_id),
        };
        let original = Original {
            record_id: Some(&first.record_id),
            target_uri: &first.uri,
            date: first.date,
        };
        let id = stable_id(name, &r.location.offset.to_string());
        let mut headers = WarcHeaders::revisit(id, &capture, &original, digest).map_err(bad)?;
        headers
            .push("WARC-Concurrent-To", &r.record_id)
            .map_err(bad)?;
        out[i] = Some(writer.write_record(&headers, &c.head)?);
    }
    writer.finish().map_err(StorageError::io(dest))?.commit()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_are_stable() {
        assert_eq!(
            companion_name("50-dl-1-00001795341600000000.warc.gz"),
            "50-dl-1-00001795341600000000.revisits.warc.gz"
        );
        let a = stable_id("b.warc.gz", "10");
        assert_eq!(a, stable_id("b.warc.gz", "10"));
        assert_ne!(a, stable_id("b.warc.gz", "11"));
        assert_ne!(a, stable_id("c.warc.gz", "10"));
        assert_eq!(a.0.get_version_num(), 5);
        assert!(a.to_string().parse::<RecordId>().is_ok());
    }
}
