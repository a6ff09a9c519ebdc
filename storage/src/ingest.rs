//! [`Repository::ingest`]: a parsed page batch moves into the repository.
//!
//! # Steps, and what a crash at each one leaves
//!
//! 1. **Journal check.** A batch recorded as done returns its summary again
//!    (`already_stored`): calling twice is harmless.
//! 2. **Read the whole batch** (module `batch`): a corrupt batch or an unusable
//!    record is refused with [`StorageError::CorruptBatch`] / [`StorageError::BadRecord`]
//!    before anything changes ([`StorageError::is_batch_fault`]: quarantine it).
//! 3. **Pending mark** in the catalog (synced): the batch's sequence number and
//!    destination. *Crash after:* the batch is still in the spool; the caller's retry
//!    reuses the mark.
//! 4. **Move** the batch with a crash-safe rename (`spool::publish::durable_rename`)
//!    to `warc/<YYYY>/<name>` (a copy, fsync, rename and removal of the source when
//!    the spool is on another file system). *Crash after:* [`Repository::open`] finds the pending
//!    mark and the moved file and finishes the ingest itself; a caller retrying with
//!    the old path does the same.
//! 5. **Dedup plan** against the digest index (module `dedup`).
//! 6. **Revisit companion** (only if there are duplicates), written to `.tmp/` and
//!    renamed in; deterministic, so a retry rewrites identical bytes.
//! 7. **Index file** `index/<seq>-<seq>.cdxj`, sorted, renamed in. A retry replaces
//!    it under the same name: no line is ever indexed twice.
//! 8. **Commit**: digest entries, the done record and the removal of the pending mark,
//!    in one synced RocksDB write. Until this point the digest index does not know the
//!    batch, so a retry plans the same dedup decisions.
//! 9. Size-tiered index merge (a failure is logged; the batch is stored).
//!
//! # Why duplicates get a companion file instead of a rewritten batch
//!
//! A published batch is immutable, and DESIGN.md says batches are moved, not copied.
//! Rewriting a batch that holds duplicates would copy it whole (gzip members can be
//! copied without recompression, but it is still every byte read and written again,
//! twice the disk or NFS traffic), and most batches of a real crawl hold some
//! duplicate (error pages, mirrors, boilerplate). The companion costs one small file
//! (≈ 0.5 KB per duplicate: WARC header and HTTP head) and no copy. The price is
//! space: a duplicate's full response stays in its batch, unindexed (the index points
//! at the revisit). Reclaiming it is a later, offline pass (rewrite old batches
//! without their unindexed duplicate responses), not done yet.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use spool::SpoolError;
use spool::publish::durable_rename;

use crate::batch::{self, Digests, ScannedBatch};
use crate::catalog::BatchRecord;
use crate::cdxj::{CdxjLine, REVISIT_MIME};
use crate::dedup::{self, Fate};
use crate::error::{Result, StorageError};
use crate::fsutil::ensure_dir;
use crate::repository::{CrashPoint, Repository};
use crate::revisits;

/// What an ingest did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestSummary {
    /// The batch's file name.
    pub name: String,
    /// Where it is now.
    pub stored_as: PathBuf,
    /// The companion file of revisit records, if the batch had duplicates.
    pub revisit_file: Option<PathBuf>,
    /// Ingest sequence number.
    pub seq: u64,
    /// Records in the batch.
    pub records: u64,
    /// Responses indexed as they are (new payloads, and payloads too short to dedup).
    pub responses: u64,
    /// Duplicate responses, indexed through revisit records.
    pub revisits: u64,
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

fn identity(path: &Path) -> Result<(u64, u64, u64)> {
    let m = std::fs::metadata(path).map_err(StorageError::io(path))?;
    Ok((m.dev(), m.ino(), m.len()))
}

impl Repository {
    /// Stores the batch at `batch_path` (see the module docs for the steps). The file
    /// is moved: afterwards it is no longer at `batch_path` (a spool `Claimed` handle
    /// for it needs no `done`). Idempotent: calling again after a crash or a success
    /// finishes or reports the same ingest.
    pub fn ingest(&mut self, batch_path: &Path) -> Result<IngestSummary> {
        self.ingest_inner(batch_path, None)
    }

    /// [`Repository::ingest`] of a batch already read by [`check_batch`]: the same
    /// steps, without reading the batch again (unless it has moved since, as after a
    /// crash between this call's move and its end: then it is read again).
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
            let stored = self.reader.warc.join(&done.stored);
            if batch_path.exists() && !same_file(batch_path, &stored) {
                return Err(StorageError::NameCollision {
                    name,
                    path: batch_path.to_owned(),
                });
            }
            return Ok(self.summary(name, &done, true));
        }
        let pending = self.catalog.pending(&name)?;
        let source = if batch_path.is_file() {
            batch_path.to_owned()
        } else {
            match &pending {
                Some((_, stored)) if self.reader.warc.join(stored).is_file() => {
                    self.reader.warc.join(stored)
                }
                _ => {
                    return Err(StorageError::BatchNotFound {
                        path: batch_path.to_owned(),
                    });
                }
            }
        };
        let scanned = match checked {
            Some(c) if c.path == source && identity(&source)? == c.identity => c.scanned,
            _ => batch::scan(&source)?,
        };

        let (seq, stored) = match pending {
            Some(p) => p,
            None => {
                let stored = format!("{:04}/{name}", scanned.year());
                (self.catalog.begin(&name, &stored)?, stored)
            }
        };
        self.crash_point(CrashPoint::AfterPendingMark)?;
        let dest = self.reader.warc.join(&stored);
        if !same_file(&source, &dest) {
            move_into(&source, &dest, &self.tmp)?;
        }
        self.crash_point(CrashPoint::AfterMove)?;

        let plan = dedup::plan(&self.catalog, &scanned, self.options.min_dedup_payload)?;
        let revisit_file = (plan.duplicates() > 0).then(|| {
            let parent = stored.rsplit_once('/').map_or("", |(dir, _)| dir);
            format!("{parent}/{}", revisits::companion_name(&name))
        });
        let revisit_locations = match &revisit_file {
            Some(rel) => revisits::write(
                &self.tmp,
                &self.reader.warc.join(rel),
                &name,
                &scanned,
                &plan.fates,
            )?,
            None => vec![None; scanned.records.len()],
        };
        self.crash_point(CrashPoint::AfterRevisits)?;
        let lines = index_lines(
            &scanned,
            &plan.fates,
            &stored,
            &revisit_file,
            &revisit_locations,
        );
        let record = BatchRecord {
            seq,
            stored,
            records: scanned.records.len() as u64,
            responses: count(&plan.fates, |f| *f == Fate::Original),
            revisits: plan.duplicates() as u64,
            index_lines: lines.len() as u64,
            bytes: scanned.bytes,
            revisit_file,
        };
        self.reader.index.write_batch(seq, lines, &self.tmp)?;
        self.crash_point(CrashPoint::AfterIndex)?;
        self.catalog.commit(&name, &record, &plan.new_captures)?;
        if let Err(error) = self.compact_tiered() {
            tracing::warn!(%error, "index merge failed; the next ingest tries again");
        }
        Ok(self.summary(name, &record, false))
    }

    fn summary(&self, name: String, r: &BatchRecord, already_stored: bool) -> IngestSummary {
        IngestSummary {
            name,
            stored_as: self.reader.warc.join(&r.stored),
            revisit_file: r.revisit_file.as_ref().map(|f| self.reader.warc.join(f)),
            seq: r.seq,
            records: r.records,
            responses: r.responses,
            revisits: r.revisits,
            index_lines: r.index_lines,
            bytes: r.bytes,
            already_stored,
        }
    }
}

fn count(fates: &[Fate], pred: impl Fn(&Fate) -> bool) -> u64 {
    fates.iter().filter(|f| pred(f)).count() as u64
}

/// The CDXJ lines of a batch (unsorted; each ends in `\n`).
fn index_lines(
    batch: &ScannedBatch,
    fates: &[Fate],
    stored: &str,
    revisit_file: &Option<String>,
    revisit_locations: &[Option<spool::warc::RecordLocation>],
) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, (r, fate)) in batch.records.iter().zip(fates).enumerate() {
        let Some(c) = &r.capture else { continue };
        let (mime, location, filename) = match fate {
            Fate::NotIndexed => continue,
            Fate::Original => (c.mime.as_str(), Some(r.location), stored),
            Fate::Revisit => (REVISIT_MIME, Some(r.location), stored),
            Fate::Duplicate(_) => (
                REVISIT_MIME,
                revisit_locations[i],
                revisit_file.as_deref().unwrap_or(stored),
            ),
        };
        let Some(location) = location else { continue };
        let mut text = String::with_capacity(256 + 2 * c.uri.len());
        CdxjLine {
            key: c.key.clone(),
            timestamp: r.date.to_cdx_timestamp(),
            url: c.uri.clone(),
            mime: mime.to_owned(),
            status: c.status.clone(),
            digest: c.digest.map_or_else(|| "-".to_owned(), |d| d.to_string()),
            length: location.length,
            offset: location.offset,
            filename: filename.to_owned(),
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

/// True when both paths name one existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.metadata(), b.metadata()) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Moves `source` to `dest` (creating its folder) with a crash-safe rename, or,
/// when the spool is on another file system (an NFS spool and the repository on a
/// local disk, as on an application machine), with [`copy_into`].
fn move_into(source: &Path, dest: &Path, tmp: &Path) -> Result<()> {
    if let Some(parent) = dest.parent() {
        ensure_dir(parent)?;
    }
    let file = File::open(source).map_err(StorageError::io(source))?;
    match durable_rename(file, source, dest) {
        Err(SpoolError::Rename { source: e, .. }) if e.kind() == io::ErrorKind::CrossesDevices => {
            copy_into(source, dest, tmp)
        }
        other => Ok(other?),
    }
}

/// Copies `source` into `tmp`, fsyncs it, renames it to `dest` and removes
/// `source`. A crash before the removal leaves both (and the pending mark): the
/// retry, given `source` again, copies the same bytes again and removes it.
fn copy_into(source: &Path, dest: &Path, tmp: &Path) -> Result<()> {
    let name = dest.file_name().unwrap_or_default();
    let part = tmp.join(name);
    std::fs::copy(source, &part).map_err(StorageError::io(&part))?;
    let file = File::open(&part).map_err(StorageError::io(&part))?;
    durable_rename(file, &part, dest)?;
    std::fs::remove_file(source).map_err(StorageError::io(source))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cross-file-system path (an NFS spool, a local repository): the batch
    /// arrives whole, through `.tmp/`, and leaves the spool.
    #[test]
    fn copy_into_moves_the_bytes_and_removes_the_source() {
        let t = tempfile::tempdir().unwrap();
        let (spool, tmp, warc) = (
            t.path().join("spool"),
            t.path().join("tmp"),
            t.path().join("warc"),
        );
        for d in [&spool, &tmp, &warc] {
            std::fs::create_dir_all(d).unwrap();
        }
        let source = spool.join("b.warc.gz");
        std::fs::write(&source, b"batch bytes").unwrap();
        let dest = warc.join("b.warc.gz");
        copy_into(&source, &dest, &tmp).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"batch bytes");
        assert!(!source.exists());
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    }

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
