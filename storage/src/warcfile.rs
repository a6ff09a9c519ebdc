//! The repository's WARC files: `WarcFiles` appends every ingested batch (and its
//! revisit records) to one open file, and starts a new file when the open one has
//! reached its size or age ([`Rotation`]), so a crawl leaves files of archive size
//! (1 GB by default, Heritrix's `maxFileSizeBytes`) rather than one per batch.
//!
//! # Names
//!
//! `warc/<YYYY>/<prefix>-<YYYYMMDDhhmmss>-<serial>.warc.gz`: the UTC time the file
//! was started and a serial number (6 digits, from 1) that grows with every file of
//! the repository. A file keeps its name for life (the CDXJ index names it), open or
//! closed.
//!
//! # Durable length, and the torn tail
//!
//! The catalog keeps the open file's **durable length** (`OpenWarc`), written in the
//! same synced RocksDB write that commits an ingest: bytes past it belong to an
//! append that did not commit (a crash, a full disk). Every append first truncates
//! the file to the durable length, and `WarcFiles::open` does the same when the
//! repository opens, so a half-appended record is cut exactly at the last committed
//! record: never read by a scanner, never indexed, never left between two good
//! records. A reader that lists the files while a crawl runs may still see the
//! unfinished tail of the open file (between a crash and the next open, or during
//! an append); the index never points there.
//!
//! A new file is recorded in the catalog (synced) with length 0 before its first
//! byte is written, so no file exists that the catalog does not know.
//!
//! This module must never rewrite bytes below the durable length, and never
//! rename or delete a WARC file.
//!
//! Costs: an append is a kernel copy of the batch (`copy_file_range` through
//! `std::io::copy`) and one `fdatasync`; memory is the one open file's state.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use spool::warc::WarcDate;

use crate::error::{Result, StorageError};
use crate::fsutil::{ensure_dir, sync_dir};

/// When the open WARC file is closed and a new one started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// A batch that would take the open file past this size goes to a new file (a
    /// batch larger than this gets a file of its own). Default 1,000,000,000 bytes.
    pub max_bytes: u64,
    /// A file started this many seconds ago takes no more batches, so a slow crawl
    /// still hands finished files to archive tools; 0: no age limit. Checked when a
    /// batch arrives. Default 3600 (one hour).
    pub max_age_secs: u64,
}

impl Default for Rotation {
    fn default() -> Self {
        Self {
            max_bytes: 1_000_000_000,
            max_age_secs: 3600,
        }
    }
}

impl Rotation {
    /// Whether a batch of `add` bytes arriving at `now` (unix seconds) must start a
    /// new file rather than go into `open`. An empty file takes any batch.
    pub(crate) fn rotates(&self, open: &OpenWarc, add: u64, now: u64) -> bool {
        if open.len == 0 {
            return false;
        }
        let full = open.len.saturating_add(add) > self.max_bytes;
        let old = self.max_age_secs > 0 && now.saturating_sub(open.started) >= self.max_age_secs;
        full || old
    }
}

/// The open WARC file as the catalog records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenWarc {
    /// Path relative to `warc/`.
    pub(crate) file: String,
    /// Serial number of the file (1 for the repository's first).
    pub(crate) serial: u64,
    /// When it was started, unix seconds.
    pub(crate) started: u64,
    /// Durable length: the end of the last committed append.
    pub(crate) len: u64,
}

const VERSION: u8 = 1;

impl OpenWarc {
    /// The catalog value: version byte, serial, started, len (u64 big-endian each),
    /// then the path.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(25 + self.file.len());
        v.push(VERSION);
        for n in [self.serial, self.started, self.len] {
            v.extend_from_slice(&n.to_be_bytes());
        }
        v.extend_from_slice(self.file.as_bytes());
        v
    }

    /// Decodes [`Self::encode`]'s bytes; `None` if damaged.
    pub(crate) fn decode(v: &[u8]) -> Option<Self> {
        let (&version, rest) = v.split_first()?;
        if version != VERSION || rest.len() < 24 {
            return None;
        }
        let n = |i: usize| -> Option<u64> {
            Some(u64::from_be_bytes(
                rest.get(i * 8..i * 8 + 8)?.try_into().ok()?,
            ))
        };
        Some(Self {
            serial: n(0)?,
            started: n(1)?,
            len: n(2)?,
            file: String::from_utf8(rest[24..].to_vec()).ok()?,
        })
    }

    /// The file after `self` (or the first), started at `now`.
    fn next(prev: Option<&OpenWarc>, prefix: &str, now: SystemTime) -> Self {
        let serial = prev.map_or(1, |p| p.serial + 1);
        let stamp = WarcDate::from_system_time(now).to_cdx_timestamp();
        let year = &stamp[..4];
        Self {
            file: format!("{year}/{prefix}-{stamp}-{serial:06}.warc.gz"),
            serial,
            started: WarcDate::from_system_time(now).unix_seconds(),
            len: 0,
        }
    }
}

/// The repository's open WARC file and its rotation (the single writer's).
#[derive(Debug)]
pub(crate) struct WarcFiles {
    root: PathBuf,
    prefix: String,
    rotation: Rotation,
    /// The open file as committed; `None` before the first ingest.
    open: Option<OpenWarc>,
    handle: Option<File>,
}

impl WarcFiles {
    /// Takes over the open file the catalog recorded (`open`), cutting whatever lies
    /// past its durable length. An open file shorter than its durable length is an
    /// error: committed records are missing.
    pub(crate) fn open(
        root: PathBuf,
        prefix: String,
        rotation: Rotation,
        open: Option<OpenWarc>,
    ) -> Result<Self> {
        let mut files = Self {
            root,
            prefix,
            rotation,
            open,
            handle: None,
        };
        if let Some(o) = files.open.clone() {
            let path = files.root.join(&o.file);
            let handle = files.handle()?;
            let len = handle.metadata().map_err(StorageError::io(&path))?.len();
            if len < o.len {
                return Err(StorageError::WarcTooShort {
                    path,
                    len,
                    durable: o.len,
                });
            }
            if len > o.len {
                tracing::warn!(file = %path.display(), cut = len - o.len,
                    "cutting the unfinished tail of an append interrupted by a crash");
                cut(handle, &path, o.len)?;
            }
        }
        Ok(files)
    }

    /// The open file, as committed.
    pub(crate) fn current(&self) -> Option<&OpenWarc> {
        self.open.as_ref()
    }

    /// The file a batch of `add` bytes goes to at `now`: the open one, or a new one
    /// (recorded through `record` before it is created, see the module docs).
    pub(crate) fn prepare(
        &mut self,
        add: u64,
        now: SystemTime,
        record: impl FnOnce(&OpenWarc) -> Result<()>,
    ) -> Result<OpenWarc> {
        let secs = WarcDate::from_system_time(now).unix_seconds();
        match &self.open {
            Some(o) if !self.rotation.rotates(o, add, secs) => return Ok(o.clone()),
            _ => {}
        }
        let next = OpenWarc::next(self.open.as_ref(), &self.prefix, now);
        record(&next)?;
        tracing::info!(file = %next.file, "starting a new WARC file");
        self.open = Some(next.clone());
        self.handle = None;
        let path = self.root.join(&next.file);
        if let Some(dir) = path.parent() {
            ensure_dir(dir)?;
        }
        self.handle()?;
        if let Some(dir) = path.parent() {
            sync_dir(dir)?;
        }
        Ok(next)
    }

    /// Appends the batch at `source` and then `tail` to the open file at its durable
    /// length (cutting anything past it first) and syncs the data. Returns the new
    /// end; the append is durable in the repository only once the caller commits it
    /// and calls [`Self::committed`].
    pub(crate) fn append(&mut self, source: &Path, tail: &[u8]) -> Result<u64> {
        let Some(open) = self.open.clone() else {
            return Err(StorageError::Io {
                path: self.root.clone(),
                source: io::Error::other("no open WARC file (prepare was not called)"),
            });
        };
        let path = self.root.join(&open.file);
        let handle = self.handle()?;
        let io = StorageError::io(&path);
        cut(handle, &path, open.len)?;
        let mut out = handle;
        out.seek(SeekFrom::Start(open.len)).map_err(io)?;
        let mut input = File::open(source).map_err(StorageError::io(source))?;
        let copied = io::copy(&mut input, &mut out).map_err(StorageError::io(&path))?;
        out.write_all(tail).map_err(StorageError::io(&path))?;
        handle.sync_data().map_err(StorageError::io(&path))?;
        Ok(open.len + copied + tail.len() as u64)
    }

    /// Records that the catalog committed the open file's new durable length.
    pub(crate) fn committed(&mut self, len: u64) {
        if let Some(o) = &mut self.open {
            o.len = len;
        }
    }

    fn handle(&mut self) -> Result<&File> {
        let Some(open) = &self.open else {
            return Err(StorageError::Io {
                path: self.root.clone(),
                source: io::Error::other("no open WARC file"),
            });
        };
        if self.handle.is_none() {
            let path = self.root.join(&open.file);
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(StorageError::io(&path))?;
            self.handle = Some(file);
        }
        self.handle.as_ref().ok_or_else(|| StorageError::Io {
            path: self.root.clone(),
            source: io::Error::other("no open WARC file"),
        })
    }
}

/// Truncates `file` to `len` if it is longer, and syncs the cut.
fn cut(file: &File, path: &Path, len: u64) -> Result<()> {
    let io = StorageError::io(path);
    if file.metadata().map_err(StorageError::io(path))?.len() > len {
        file.set_len(len).map_err(io)?;
        file.sync_data().map_err(StorageError::io(path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn open(len: u64, started: u64) -> OpenWarc {
        OpenWarc {
            file: "2026/x-20261126000000-000001.warc.gz".into(),
            serial: 1,
            started,
            len,
        }
    }

    #[test]
    fn rotates_by_size_and_age() {
        let r = Rotation {
            max_bytes: 1000,
            max_age_secs: 60,
        };
        assert!(
            !r.rotates(&open(0, 0), 5000, 10_000),
            "an empty file takes anything"
        );
        assert!(!r.rotates(&open(400, 100), 600, 159), "exactly full, young");
        assert!(r.rotates(&open(400, 100), 601, 159), "past the size");
        assert!(r.rotates(&open(400, 100), 1, 160), "old");
        let no_age = Rotation {
            max_age_secs: 0,
            ..r
        };
        assert!(!no_age.rotates(&open(400, 100), 1, u64::MAX));
    }

    #[test]
    fn state_round_trips_and_names_follow_the_serial() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_341_600);
        let first = OpenWarc::next(None, "bfs", t);
        assert_eq!(first.file, "2026/bfs-20261122100000-000001.warc.gz");
        assert_eq!(first.started, 1_795_341_600);
        let second = OpenWarc::next(Some(&first), "bfs", t + Duration::from_secs(61));
        assert_eq!(second.file, "2026/bfs-20261122100101-000002.warc.gz");
        let mut s = second;
        s.len = 12345;
        assert_eq!(OpenWarc::decode(&s.encode()), Some(s.clone()));
        assert_eq!(OpenWarc::decode(&s.encode()[..20]), None);
        let mut bad = s.encode();
        bad[0] = 9;
        assert_eq!(OpenWarc::decode(&bad), None);
    }

    /// An append cut short (a crash, a full disk) leaves a torn tail: the next
    /// append and the next open both cut it at the durable length, exactly.
    #[test]
    fn torn_tail_is_cut_at_the_durable_length() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("warc");
        let batch = t.path().join("b.warc.gz");
        std::fs::write(&batch, b"first-batch").unwrap();
        let mut files =
            WarcFiles::open(root.clone(), "p".into(), Rotation::default(), None).unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_795_341_600);
        let mut recorded = Vec::new();
        let o = files
            .prepare(11, now, |o| {
                recorded.push(o.clone());
                Ok(())
            })
            .unwrap();
        assert_eq!(recorded, std::slice::from_ref(&o));
        let end = files.append(&batch, b"+tail").unwrap();
        assert_eq!(end, 16);
        files.committed(end);
        let path = root.join(&o.file);

        // A torn append: half a record past the durable length.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"torn-half-rec").unwrap();
        drop(f);
        std::fs::write(&batch, b"second").unwrap();
        assert_eq!(files.append(&batch, b"").unwrap(), 22);
        assert_eq!(std::fs::read(&path).unwrap(), b"first-batch+tailsecond");

        // Not committed: a reopen with the catalog's state cuts the second append.
        let mut state = files.current().unwrap().clone();
        assert_eq!(state.len, 16);
        drop(files);
        let files = WarcFiles::open(
            root.clone(),
            "p".into(),
            Rotation::default(),
            Some(state.clone()),
        )
        .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first-batch+tail");
        drop(files);

        // A file shorter than its durable length is refused, not extended.
        state.len = 100;
        let err = WarcFiles::open(root, "p".into(), Rotation::default(), Some(state)).unwrap_err();
        assert!(
            matches!(
                err,
                StorageError::WarcTooShort {
                    len: 16,
                    durable: 100,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_full_file_rotates_into_a_new_one() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("warc");
        let batch = t.path().join("b.warc.gz");
        std::fs::write(&batch, [7u8; 600]).unwrap();
        let rotation = Rotation {
            max_bytes: 1000,
            max_age_secs: 0,
        };
        let mut files = WarcFiles::open(root.clone(), "p".into(), rotation, None).unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_795_341_600);
        let mut names = Vec::new();
        for _ in 0..3 {
            let o = files.prepare(600, now, |_| Ok(())).unwrap();
            let end = files.append(&batch, b"").unwrap();
            files.committed(end);
            names.push(o.file);
        }
        assert!(names[0].ends_with("-000001.warc.gz"), "{names:?}");
        assert!(names[1].ends_with("-000002.warc.gz"), "{names:?}");
        assert!(names[2].ends_with("-000003.warc.gz"), "{names:?}");
        for n in &names {
            assert_eq!(std::fs::metadata(root.join(n)).unwrap().len(), 600);
        }
        // A failed record of the new file leaves the old one open.
        let before = files.current().unwrap().clone();
        let err = files.prepare(600, now, |_| {
            Err(StorageError::Io {
                path: root.clone(),
                source: io::Error::other("no"),
            })
        });
        assert!(err.is_err());
        assert_eq!(files.current(), Some(&before));
    }
}
