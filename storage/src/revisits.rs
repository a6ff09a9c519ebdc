//! The revisit records of a batch, appended to the WARC file right after the batch:
//! a `warcinfo` record and one `revisit` record (profile identical-payload-digest)
//! per duplicate response of the batch, and one (profile server-not-modified) per
//! 304 answer to a conditional request whose earlier capture is stored.
//!
//! A server-not-modified revisit has an empty block (see
//! `spool::warc::WarcHeaders::revisit_not_modified`): the 304's head stays in its
//! response record, which the revisit names in `WARC-Concurrent-To`, and its
//! `WARC-Payload-Digest` is the earlier capture's.
//!
//! Each revisit carries the duplicate's capture (`WARC-Target-URI`, `WARC-Date`,
//! `WARC-IP-Address`), its HTTP response head as the block, `WARC-Refers-To`,
//! `-Target-URI` and `-Date` of the first capture of the payload, and
//! `WARC-Concurrent-To` the duplicate response record in the batch (the same capture
//! event). The bytes are **deterministic**: record ids are name-based UUIDs (SHA-1 of
//! the batch name and record offset), the warcinfo date is the batch's, and gzip
//! output depends only on the input, so a crash retry writes the same records.
//! Rendered in memory: ≈ 0.5 KB per duplicate (WARC header and HTTP head).

use spool::warc::{
    Capture, Original, RecordId, RecordLocation, Sha1Digest, WarcDate, WarcHeaders, WarcWriter,
    warc_fields_block,
};

use crate::batch::ScannedBatch;
use crate::dedup::Fate;
use crate::error::{Result, StorageError};

/// `software` field of the revisits' warcinfo record.
const SOFTWARE: &str = concat!("polycrawl-storage/", env!("CARGO_PKG_VERSION"));

/// A name-based (version 5 layout) record id for `what` in batch `batch`.
fn stable_id(batch: &str, what: &str) -> RecordId {
    let digest = Sha1Digest::of(format!("polycrawl-storage\n{batch}\n{what}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.0[..16]);
    RecordId(uuid::Builder::from_sha1_bytes(bytes).into_uuid())
}

/// The revisit records of batch `name`'s duplicates, for the WARC file `file_name`:
/// their bytes, and the location of each duplicate's revisit record in them, by
/// record index.
pub(crate) fn render(
    file_name: &str,
    name: &str,
    batch: &ScannedBatch,
    fates: &[Fate],
) -> Result<(Vec<u8>, Vec<Option<RecordLocation>>)> {
    // The batch's own date (its warcinfo's), so that a retry writes the same bytes.
    let date = batch.records.first().map_or_else(
        || WarcDate::from_system_time(std::time::UNIX_EPOCH),
        |r| r.date,
    );
    let info_id = stable_id(name, "warcinfo");
    let bad = |e: spool::warc::InvalidField| StorageError::BadStoredRecord {
        file: file_name.to_owned(),
        offset: 0,
        reason: e.to_string(),
    };
    let description = format!(
        "revisit records (identical-payload-digest, server-not-modified) for the duplicate and 304 responses of {name}"
    );
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

    let mut writer = WarcWriter::new(Vec::new());
    writer.write_record(
        &WarcHeaders::warcinfo(info_id, date, Some(file_name)).map_err(bad)?,
        &info_block,
    )?;
    let mut out = vec![None; fates.len()];
    for (i, (r, fate)) in batch.records.iter().zip(fates).enumerate() {
        let Some(c) = &r.capture else { continue };
        let (first, digest, not_modified) = match fate {
            Fate::Duplicate(first) => match c.digest {
                Some(d) => (first, d, false),
                None => continue,
            },
            Fate::NotModified { first, digest } => (first, *digest, true),
            _ => continue,
        };
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
        let (mut headers, block) = if not_modified {
            let h = WarcHeaders::revisit_not_modified(id, &capture, &original, digest);
            (h.map_err(bad)?, &[][..])
        } else {
            let h = WarcHeaders::revisit(id, &capture, &original, digest);
            (h.map_err(bad)?, &c.head[..])
        };
        headers
            .push("WARC-Concurrent-To", &r.record_id)
            .map_err(bad)?;
        out[i] = Some(writer.write_record(&headers, block)?);
    }
    let bytes = writer
        .finish()
        .map_err(|e| StorageError::WarcWrite(e.into()))?;
    Ok((bytes, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable() {
        let a = stable_id("b.warc.gz", "10");
        assert_eq!(a, stable_id("b.warc.gz", "10"));
        assert_ne!(a, stable_id("b.warc.gz", "11"));
        assert_ne!(a, stable_id("c.warc.gz", "10"));
        assert_eq!(a.0.get_version_num(), 5);
        assert!(a.to_string().parse::<RecordId>().is_ok());
    }
}
