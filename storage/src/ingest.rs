//! [`Repository::ingest`]: a parsed page batch is appended to the repository's open
//! WARC file (module [`crate::warcfile`]).
//!
//! # Steps, and what a crash at each one leaves
//!
//! 1. **Journal check.** A batch recorded as done returns its summary again
//!    (`already_stored`), and a copy still at the source (a crash between the commit
//!    and its removal) is removed once its bytes are found equal to the stored ones.
//! 2. **Read the whole batch** (module `batch`): a corrupt batch or an unusable
//!    record is refused with [`StorageError::CorruptBatch`] / [`StorageError::BadRecord`]
//!    before anything changes ([`StorageError::is_batch_fault`]: quarantine it).
//! 3. **Pending mark** in the catalog (synced): the batch's sequence number.
//!    *Crash after:* the batch is still at the source; the caller's retry reuses it.
//! 4. **Dedup plan** against the digest index (module `dedup`), and the revisit
//!    records of the duplicates and of the 304s of conditional requests rendered in
//!    memory (module `revisits`).
//! 5. **Append** the batch, then its revisit records, to the open WARC file at its
//!    durable length (a new file when the open one is full or old), and sync.
//!    *Crash after:* the bytes lie past the durable length: [`Repository::open`] cuts
//!    them and the retry appends them again.
//! 6. **Index file** `index/<seq>-<seq>.cdxj`, sorted, renamed in. *Crash after:*
//!    [`Repository::open`] deletes it (its lines point at cut bytes); so does the
//!    next append of another batch in a process that goes on after a failed commit;
//!    a retry replaces it under the same name: no line is indexed twice.
//! 7. **Commit**: digest entries, the done record, the removal of the pending mark
//!    and the WARC file's new durable length, in one synced RocksDB write. Until this
//!    point the digest index does not know the batch, so a retry plans the same
//!    dedup decisions.
//! 8. **Remove** the batch from the source (a failure is logged: the next ingest of
//!    it finds it done and removes it).
//! 9. Size-tiered index merge (a failure is logged; the batch is stored).
//!
//! # Why duplicates get revisit records beside their batch
//!
//! The batch is appended unchanged (a kernel copy, no recompression); rewriting it
//! without its duplicate responses would mean inflating and re-deflating it. The
//! revisit records cost ≈ 0.5 KB per duplicate (WARC header and HTTP head). The
//! price is space: a duplicate's full response stays in the file, unindexed (the
//! index points at the revisit). Reclaiming it is a later, offline pass (rewrite
//! old files without their unindexed duplicate responses), not done yet.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use spool::warc::RecordLocation;

use crate::batch::{self, Digests, FetchFields, ScannedBatch};
use crate::catalog::BatchRecord;
use crate::cdxj::{CdxjLine, REVISIT_MIME};
use crate::dedup::{self, Fate};
use crate::error::{Result, StorageError};
use crate::repository::{CrashPoint, Repository};
use crate::revisits;

/// What an ingest did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestSummary {
    /// The batch's file name.
    pub name: String,
    /// The WARC file it was appended to.
    pub stored_as: PathBuf,
    /// Where the batch starts in that file (its revisit records follow it).
    pub offset: u64,
    /// Ingest sequence number.
    pub seq: u64,
    /// Records in the batch.
    pub records: u64,
    /// Responses indexed as they are (new payloads, and payloads too short to dedup).
    pub responses: u64,
    /// Duplicate responses, indexed through revisit records (identical-payload-digest).
    pub revisits: u64,
    /// 304 answers to conditional requests, indexed through revisit records
    /// (server-not-modified).
    pub not_modified: u64,
    /// CDXJ lines written.
    pub index_lines: u64,
    /// Size of the batch file.
    pub bytes: u64,
    /// True when the batch had been stored by an earlier call: nothing was done now.
    pub already_stored: bool,
}

/// A page batch read and checked by [`check_batch`], not yet stored: what
/// [`Repository::ingest_checked`] needs of it, so that the batch is read (inflated,
/// digests computed) once, not once by its reader and again by storage.
#[derive(Debug)]
pub struct CheckedBatch {
    path: PathBuf,
    /// Device, inode and size of the file checked: a different file at `path` by the
    /// time of the ingest is read again.
    identity: (u64, u64, u64),
    scanned: ScannedBatch,
}

impl CheckedBatch {
    /// The batch file that was checked.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its records, every kind.
    pub fn records(&self) -> usize {
        self.scanned.records.len()
    }
}

/// Reads and checks the batch at `path` as [`Repository::ingest`] does (step 2),
/// handing every record that passes the checks to `visit`, in file order, so a caller
/// can read the pages (their links, say) in the same pass. With [`Digests::Trust`]
/// the stated payload digests are taken as they are (see [`Digests`]); `ingest`
/// verifies them. Errors are those of `ingest`'s step 2
/// ([`StorageError::is_batch_fault`]: quarantine the batch); `visit` has then seen
/// the records before the bad one. Holds per record what the index needs (URL, SURT
/// key, HTTP head), never a body: O(records) memory.
pub fn check_batch(
    path: &Path,
    digests: Digests,
    visit: impl FnMut(&spool::warc::Record),
) -> Result<CheckedBatch> {
    let scanned = batch::scan_with(path, digests, visit)?;
    Ok(CheckedBatch {
        path: path.to_owned(),
        identity: identity(path)?,
        scanned,
    })
}

/// What [`Repository::ingest_checked`] will make of one capture record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureFate {
    /// A response stored and indexed where it is.
    Original,
    /// A response whose payload the repository holds already: indexed through an
    /// identical-payload-digest revisit record.
    Duplicate,
    /// A 304 answer to a conditional request: indexed through a
    /// server-not-modified revisit record.
    NotModified,
    /// A revisit record that was in the batch.
    Revisit,
}

/// One response or revisit record of a checked batch, as a crawl log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureNote {
    /// `WARC-Target-URI`.
    pub uri: String,
    /// `WARC-Date`.
    pub date: spool::warc::WarcDate,
    /// The HTTP status code (`"-"` when the head has none).
    pub status: String,
    /// The `Content-Type` without parameters, lowercased (`"-"` when absent).
    pub mime: String,
    /// Bytes after the HTTP head, as stored.
    pub payload_len: u64,
    /// `WARC-Payload-Digest` (verified or computed for a response).
    pub digest: Option<spool::warc::Sha1Digest>,
    /// What the ingest does with it.
    pub fate: CaptureFate,
    /// The downloader's extension fields.
    pub fetch: FetchFields,
}

impl Repository {
    /// The capture records of `batch` in file order, each with the fate that
    /// [`Repository::ingest_checked`] gives it when called next: the same dedup
    /// plan, computed read-only (the digest index changes only at an ingest's
    /// commit, so the two agree while nothing is ingested in between). Costs what
    /// the plan costs: one digest lookup per response, one URL lookup per 304.
    pub fn capture_notes(&self, batch: &CheckedBatch) -> Result<Vec<CaptureNote>> {
        let plan = dedup::plan(
            &self.catalog,
            &self.reader,
            &batch.scanned,
            self.options.min_dedup_payload,
        )?;
        let mut notes = Vec::new();
        for (r, fate) in batch.scanned.records.iter().zip(&plan.fates) {
            let Some(c) = &r.capture else { continue };
            let fate = match fate {
                Fate::NotIndexed => continue,
                Fate::Original => CaptureFate::Original,
                Fate::Duplicate(_) => CaptureFate::Duplicate,
                Fate::NotModified { .. } => CaptureFate::NotModified,
                Fate::Revisit => CaptureFate::Revisit,
            };
            notes.push(CaptureNote {
                uri: c.uri.clone(),
                date: r.date,
                status: c.status.clone(),
                mime: c.mime.clone(),
                payload_len: c.payload_len,
                digest: c.digest,
                fate,
                fetch: c.fetch.clone(),
            });
        }
        Ok(notes)
    }
}

fn identity(path: &Path) -> Result<(u64, u64, u64)> {
    let m = std::fs::metadata(path).map_err(StorageError::io(path))?;
    Ok((m.dev(), m.ino(), m.len()))
}

impl Repository {
    /// Stores the batch at `batch_path` (see the module docs for the steps). The file
    /// is removed once stored: afterwards it is no longer at `batch_path` (a spool
    /// `Claimed` handle for it needs no `done`). Idempotent: calling again after a
    /// crash or a success finishes or reports the same ingest.
    pub fn ingest(&mut self, batch_path: &Path) -> Result<IngestSummary> {
        self.ingest_inner(batch_path, None)
    }

    /// [`Repository::ingest`] of a batch already read by [`check_batch`]: the same
    /// steps, without reading the batch again (unless the file changed since).
    pub fn ingest_checked(&mut self, batch: CheckedBatch) -> Result<IngestSummary> {
        let path = batch.path.clone();
        self.ingest_inner(&path, Some(batch))
    }

    fn ingest_inner(
        &mut self,
        batch_path: &Path,
        checked: Option<CheckedBatch>,
    ) -> Result<IngestSummary> {
        let name = batch_name(batch_path)?;
        if let Some(done) = self.catalog.done(&name)? {
            if batch_path.exists() {
                let stored = self.reader.warc.join(&done.stored);
                if !same_bytes(batch_path, &stored, done.offset, done.bytes)? {
                    return Err(StorageError::NameCollision {
                        name,
                        path: batch_path.to_owned(),
                    });
                }
                remove_source(batch_path);
            }
            return Ok(self.summary(name, &done, true));
        }
        if !batch_path.is_file() {
            return Err(StorageError::BatchNotFound {
                path: batch_path.to_owned(),
            });
        }
        let scanned = match checked {
            Some(c) if identity(batch_path)? == c.identity => c.scanned,
            _ => batch::scan(batch_path)?,
        };
        let seq = match self.catalog.pending(&name)? {
            Some(seq) => seq,
            None => self.catalog.begin(&name)?,
        };
        self.crash_point(CrashPoint::AfterPendingMark)?;

        // Another pending ingest's index file (one that failed after writing it, in
        // this process) points at bytes this append is about to replace.
        for (_, other) in self.catalog.all_pending()? {
            if other != seq {
                self.reader.index.forget_batch(other)?;
            }
        }
        let plan = dedup::plan(
            &self.catalog,
            &self.reader,
            &scanned,
            self.options.min_dedup_payload,
        )?;
        let catalog = &self.catalog;
        // The revisit bytes name the file they go to, and the file depends on their
        // size: rendered for the open file, again if that one is full.
        let mut revisits = Revisits::render(self.warcs.current(), &name, &scanned, &plan.fates)?;
        let open = self
            .warcs
            .prepare(scanned.bytes + revisits.len(), SystemTime::now(), |o| {
                catalog.start_warc(o)
            })?;
        if revisits.file != open.file {
            revisits = Revisits::render(Some(&open), &name, &scanned, &plan.fates)?;
        }
        let end = self.warcs.append(batch_path, &revisits.bytes)?;
        if end != open.len + scanned.bytes + revisits.len() {
            return Err(StorageError::Io {
                path: batch_path.to_owned(),
                source: std::io::Error::other("the batch changed size while being appended"),
            });
        }
        self.crash_point(CrashPoint::AfterAppend)?;

        let lines = index_lines(
            &scanned,
            &plan.fates,
            &open.file,
            open.len,
            open.len + scanned.bytes,
            &revisits.locations,
        );
        let record = BatchRecord {
            seq,
            stored: open.file.clone(),
            offset: open.len,
            records: scanned.records.len() as u64,
            responses: count(&plan.fates, |f| *f == Fate::Original),
            revisits: plan.duplicates() as u64,
            not_modified: plan.not_modified() as u64,
            index_lines: lines.len() as u64,
            bytes: scanned.bytes,
        };
        self.reader.index.write_batch(seq, lines, &self.tmp)?;
        self.crash_point(CrashPoint::AfterIndex)?;
        let committed = crate::warcfile::OpenWarc { len: end, ..open };
        self.catalog
            .commit(&name, &record, &plan.new_captures, &committed)?;
        self.warcs.committed(end);
        remove_source(batch_path);
        if let Err(error) = self.compact_tiered() {
            tracing::warn!(%error, "index merge failed; the next ingest tries again");
        }
        Ok(self.summary(name, &record, false))
    }

    fn summary(&self, name: String, r: &BatchRecord, already_stored: bool) -> IngestSummary {
        IngestSummary {
            name,
            stored_as: self.reader.warc.join(&r.stored),
            offset: r.offset,
            seq: r.seq,
            records: r.records,
            responses: r.responses,
            revisits: r.revisits,
            not_modified: r.not_modified,
            index_lines: r.index_lines,
            bytes: r.bytes,
            already_stored,
        }
    }
}

/// The revisit records of a batch, rendered for one WARC file.
struct Revisits {
    file: String,
    bytes: Vec<u8>,
    locations: Vec<Option<RecordLocation>>,
}

impl Revisits {
    /// Renders them for `open` (empty when the batch has no duplicate).
    fn render(
        open: Option<&crate::warcfile::OpenWarc>,
        name: &str,
        batch: &ScannedBatch,
        fates: &[Fate],
    ) -> Result<Self> {
        let file = open.map(|o| o.file.clone()).unwrap_or_default();
        if !fates
            .iter()
            .any(|f| matches!(f, Fate::Duplicate(_) | Fate::NotModified { .. }))
        {
            return Ok(Self {
                file,
                bytes: Vec::new(),
                locations: vec![None; fates.len()],
            });
        }
        let base = file.rsplit('/').next().unwrap_or_default();
        let (bytes, locations) = revisits::render(base, name, batch, fates)?;
        Ok(Self {
            file,
            bytes,
            locations,
        })
    }

    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
}

fn count(fates: &[Fate], pred: impl Fn(&Fate) -> bool) -> u64 {
    fates.iter().filter(|f| pred(f)).count() as u64
}

/// The CDXJ lines of a batch appended to `file` at `start`, its revisit records at
/// `revisits_start` (unsorted; each ends in `\n`).
fn index_lines(
    batch: &ScannedBatch,
    fates: &[Fate],
    file: &str,
    start: u64,
    revisits_start: u64,
    revisit_locations: &[Option<RecordLocation>],
) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, (r, fate)) in batch.records.iter().zip(fates).enumerate() {
        let Some(c) = &r.capture else { continue };
        let (mime, location, base) = match fate {
            Fate::NotIndexed => continue,
            Fate::Original => (c.mime.as_str(), Some(r.location), start),
            Fate::Revisit => (REVISIT_MIME, Some(r.location), start),
            Fate::Duplicate(_) | Fate::NotModified { .. } => {
                (REVISIT_MIME, revisit_locations[i], revisits_start)
            }
        };
        // A not-modified revisit stands for its original's payload.
        let digest = match fate {
            Fate::NotModified { digest, .. } => Some(*digest),
            _ => c.digest,
        };
        let Some(location) = location else { continue };
        let mut text = String::with_capacity(256 + 2 * c.uri.len());
        CdxjLine {
            key: c.key.clone(),
            timestamp: r.date.to_cdx_timestamp(),
            url: c.uri.clone(),
            mime: mime.to_owned(),
            status: c.status.clone(),
            digest: digest.map_or_else(|| "-".to_owned(), |d| d.to_string()),
            length: location.length,
            offset: base + location.offset,
            filename: file.to_owned(),
        }
        .encode(&mut text);
        lines.push(text);
    }
    lines
}

/// The file name of a batch path: a plain name ending in `.warc.gz`.
fn batch_name(path: &Path) -> Result<String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let ok = name.len() > ".warc.gz".len()
        && name.ends_with(".warc.gz")
        && !name.ends_with(".revisits.warc.gz")
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'/' && b != b'\\');
    if ok {
        Ok(name.to_owned())
    } else {
        Err(StorageError::BadBatchName(
            path.display().to_string().chars().take(200).collect(),
        ))
    }
}

/// True when the file at `source` holds exactly the `len` bytes at `offset` of
/// `stored`. O(len) reads; only on the rare repeat of a stored batch.
fn same_bytes(source: &Path, stored: &Path, offset: u64, len: u64) -> Result<bool> {
    let mut a = File::open(source).map_err(StorageError::io(source))?;
    if a.metadata().map_err(StorageError::io(source))?.len() != len {
        return Ok(false);
    }
    let mut b = File::open(stored).map_err(StorageError::io(stored))?;
    b.seek(SeekFrom::Start(offset))
        .map_err(StorageError::io(stored))?;
    let (mut x, mut y) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    let mut left = len;
    while left > 0 {
        let n = usize::try_from(left.min(x.len() as u64)).unwrap_or(x.len());
        a.read_exact(&mut x[..n])
            .map_err(StorageError::io(source))?;
        if b.read_exact(&mut y[..n]).is_err() || x[..n] != y[..n] {
            return Ok(false);
        }
        left -= n as u64;
    }
    Ok(true)
}

/// Removes a stored batch from where it came from; a failure is logged (the next
/// ingest of the batch finds it done and removes it).
fn remove_source(path: &Path) {
    if let Err(error) = std::fs::remove_file(path) {
        if error.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(batch = %path.display(), %error, "stored, but not removed from the spool");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_names() {
        for ok in ["50-dl-1-00001795341600000000.warc.gz", "x.warc.gz"] {
            assert_eq!(batch_name(Path::new(&format!("/spool/{ok}"))).unwrap(), ok);
        }
        for bad in [
            "/spool/x.warc",
            "/spool/.warc.gz",
            "/spool/.hidden.warc.gz",
            "/spool/a b.warc.gz",
            "/spool/x.revisits.warc.gz",
            "/",
        ] {
            assert!(batch_name(Path::new(bad)).is_err(), "{bad}");
        }
    }
}
