//! Publishing files into a spool folder so that readers never see a partial file.
//!
//! A [`Publisher`] (one per folder and producer id) writes each file to
//! `<dir>/.tmp/<name>.<producer>.<nonce>`, fsyncs it, renames it to `<dir>/<name>` and
//! fsyncs the folder; [`durable_rename`] is the one function that does the hand-off
//! (fsync, rename, fsync folder), and everything that must survive a crash goes
//! through it. Rename is the only atomic operation NFS offers, so a file is either
//! absent from the folder or complete; a published file is never modified again.
//!
//! Small files go through [`Publisher::publish`]; big ones (page batches) through
//! [`Publisher::begin`], which returns a [`PendingFile`] to write to incrementally and
//! [`PendingFile::commit`]. A `PendingFile` dropped without commit deletes its temp file.
//! A producer that crashed leaves temp files behind: the next [`Publisher::new`] with the
//! same producer id deletes them (others' are left alone; see
//! [`SpoolDir::remove_stale_tmp`](crate::layout::SpoolDir::remove_stale_tmp)).
//!
//! Producer ids must be unique among live processes: names carry the producer id so
//! two producers never race for one name, and a second live producer with the same id
//! is detected at commit ([`SpoolError::NameTaken`]) or has its temp files removed.
//!
//! This module must never write into a spool folder other than through `.tmp/` plus
//! [`durable_rename`], and never rename onto an existing published file.
//! [`Publisher::new`] lists the folder once (O(files)); publishing is O(1) in the
//! number of files.

use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::ids::ComponentId;
use crate::layout::{SpoolDir, SpoolError, list_names, read_dir, sync_parent};
use crate::name::{FileKind, Priority, SeqClock, SpoolName};

/// Buffer in front of a [`PendingFile`]'s temp file.
const WRITE_BUFFER: usize = 64 * 1024;

/// Fsyncs `file` (already written at `tmp`), renames `tmp` to `dest` and fsyncs the
/// folder of `dest`: the crash-safe hand-off. After it returns `Ok`, `dest` is complete
/// and survives a crash; if it fails before the rename, `dest` was not touched. A failed
/// final folder fsync leaves `dest` visible but perhaps not durable.
///
/// `tmp` and `dest` must be on one file system (sibling folders of one spool folder).
pub fn durable_rename(file: File, tmp: &Path, dest: &Path) -> Result<(), SpoolError> {
    file.sync_all().map_err(|source| SpoolError::Sync {
        path: tmp.to_owned(),
        source,
    })?;
    drop(file);
    fs::rename(tmp, dest).map_err(|source| SpoolError::Rename {
        from: tmp.to_owned(),
        to: dest.to_owned(),
        source,
    })?;
    sync_parent(dest)
}

/// Creates a fresh temp file `<tmp_dir>/<final_name>.<owner>.<nonce>` for writing.
pub(crate) fn create_tmp(
    tmp_dir: &Path,
    final_name: &str,
    owner: &ComponentId,
) -> Result<(File, PathBuf), SpoolError> {
    let nonce = RandomState::new().build_hasher().finish();
    let path = tmp_dir.join(format!("{final_name}.{owner}.{nonce:016x}"));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|source| SpoolError::File {
            path: path.clone(),
            source,
        })?;
    Ok((file, path))
}

/// Splits a temp file name `<final_name>.<owner>.<nonce>` into `(final_name, owner)`.
fn split_tmp_name(file_name: &str) -> Option<(&str, &str)> {
    let (rest, nonce) = file_name.rsplit_once('.')?;
    if nonce.len() != 16 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    rest.rsplit_once('.')
}

/// Deletes `owner`'s temp files in `tmp_dir` whose final name satisfies `is_mine`.
/// Returns how many were deleted.
pub(crate) fn remove_own_tmp(
    tmp_dir: &Path,
    owner: &ComponentId,
    is_mine: impl Fn(&str) -> bool,
) -> Result<usize, SpoolError> {
    let mut removed = 0;
    for entry in read_dir(tmp_dir)? {
        let file_name = entry.file_name();
        let Some((final_name, who)) = file_name.to_str().and_then(split_tmp_name) else {
            continue;
        };
        if who != owner.as_str() || !is_mine(final_name) {
            continue;
        }
        let path = entry.path();
        match fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(SpoolError::Remove { path, source }),
        }
    }
    Ok(removed)
}

/// Publishes files into one spool folder under one producer id. `Send + Sync`: share it
/// between threads; sequence numbers stay strictly increasing.
#[derive(Debug)]
pub struct Publisher {
    dir: SpoolDir,
    producer: ComponentId,
    clock: SeqClock,
}

impl Publisher {
    /// A publisher for `dir`. Deletes the temp files a previous run of `producer` left
    /// in `.tmp/` and starts its sequence numbers above the highest one of `producer`
    /// still in the folder or in a consumer's `.claimed/` (guards against a clock that
    /// stepped back across a restart). O(files in the folder).
    pub fn new(dir: SpoolDir, producer: ComponentId) -> Result<Self, SpoolError> {
        let removed = remove_own_tmp(&dir.tmp_dir(), &producer, |name| {
            name.parse::<SpoolName>().is_ok()
        })?;
        if removed > 0 {
            tracing::info!(
                dir = %dir.path().display(),
                producer = %producer,
                removed,
                "removed temp files left by a previous run"
            );
        }
        let mut floor = 0;
        let mut scan = |folder: &Path| -> Result<(), SpoolError> {
            for name in list_names(folder)? {
                if name.producer == producer {
                    floor = floor.max(name.seq);
                }
            }
            Ok(())
        };
        scan(dir.path())?;
        for entry in read_dir(&dir.claimed_root())? {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                scan(&entry.path())?;
            }
        }
        Ok(Self {
            dir,
            producer,
            clock: SeqClock::starting_above(floor),
        })
    }

    /// The folder this publisher writes to.
    pub fn dir(&self) -> &SpoolDir {
        &self.dir
    }

    /// The producer id written into every name.
    pub fn producer(&self) -> &ComponentId {
        &self.producer
    }

    /// Publishes `data` as one file; returns the published path.
    pub fn publish(
        &self,
        priority: Priority,
        kind: FileKind,
        data: &[u8],
    ) -> Result<PathBuf, SpoolError> {
        let mut pending = self.begin(priority, kind)?;
        pending.write_all(data).map_err(|source| SpoolError::File {
            path: pending.tmp_path.clone(),
            source,
        })?;
        pending.commit()
    }

    /// Starts a file to be written incrementally; its name (and so its place in FIFO
    /// order) is fixed now. Nothing is visible in the folder until
    /// [`PendingFile::commit`].
    pub fn begin(&self, priority: Priority, kind: FileKind) -> Result<PendingFile, SpoolError> {
        let name = SpoolName::new(priority, self.producer.clone(), self.clock.next(), kind);
        let final_name = name.to_string();
        let (file, tmp_path) = create_tmp(&self.dir.tmp_dir(), &final_name, &self.producer)?;
        Ok(PendingFile {
            writer: Some(BufWriter::with_capacity(WRITE_BUFFER, file)),
            final_path: self.dir.path().join(final_name),
            tmp_path,
            name,
            written: 0,
        })
    }
}

/// A file being written in `.tmp/`. Write to it with [`std::io::Write`], then
/// [`commit`](PendingFile::commit). Dropped without commit, it deletes its temp file.
#[derive(Debug)]
pub struct PendingFile {
    writer: Option<BufWriter<File>>,
    tmp_path: PathBuf,
    final_path: PathBuf,
    name: SpoolName,
    written: u64,
}

impl PendingFile {
    /// The name the file will be published under.
    pub fn name(&self) -> &SpoolName {
        &self.name
    }

    /// The temp file being written.
    pub fn tmp_path(&self) -> &Path {
        &self.tmp_path
    }

    /// Bytes written so far (for rotating batches by size).
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Publishes the file: flush, fsync, rename into the folder, fsync the folder.
    /// Returns the published path. On error before the rename the temp file is deleted
    /// and nothing is published.
    pub fn commit(mut self) -> Result<PathBuf, SpoolError> {
        let writer = self.writer.take().ok_or_else(|| SpoolError::File {
            path: self.tmp_path.clone(),
            source: io::Error::other("pending file already closed"),
        })?;
        let file = writer.into_inner().map_err(|e| SpoolError::File {
            path: self.tmp_path.clone(),
            source: e.into_error(),
        })?;
        if fs::symlink_metadata(&self.final_path).is_ok() {
            return Err(SpoolError::NameTaken {
                path: self.final_path.clone(),
            });
        }
        durable_rename(file, &self.tmp_path, &self.final_path)?;
        // Renamed: nothing left for Drop to delete.
        self.tmp_path = PathBuf::new();
        Ok(std::mem::take(&mut self.final_path))
    }

    /// Gives the file up: deletes the temp file (the same as dropping it).
    pub fn abort(self) {}
}

impl Write for PendingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| io::Error::other("pending file already closed"))?;
        let n = writer.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.writer.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            // Do not flush a file we are about to delete.
            let (file, _unflushed) = writer.into_parts();
            drop(file);
        }
        if self.tmp_path.as_os_str().is_empty() {
            return;
        }
        if let Err(error) = fs::remove_file(&self.tmp_path) {
            if error.kind() != io::ErrorKind::NotFound {
                tracing::warn!(path = %self.tmp_path.display(), %error, "cannot delete abandoned temp file");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::test_support::TestDir;

    fn setup(label: &str) -> (TestDir, SpoolDir, Publisher) {
        let t = TestDir::new(label);
        let dir = SpoolDir::open(t.path().join("requests")).unwrap();
        let publisher = Publisher::new(dir.clone(), ComponentId::new("app-1").unwrap()).unwrap();
        (t, dir, publisher)
    }

    fn tmp_files(dir: &SpoolDir) -> Vec<String> {
        fs::read_dir(dir.tmp_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    }

    #[test]
    fn publish_writes_a_complete_named_file() {
        let (_t, dir, publisher) = setup("publish");
        let path = publisher
            .publish(Priority::new(3).unwrap(), FileKind::Requests, b"hello")
            .unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"hello");
        let names = dir.list().unwrap();
        assert_eq!(names.len(), 1);
        assert_eq!(dir.file_path(&names[0]), path);
        assert_eq!(names[0].priority.get(), 3);
        assert_eq!(names[0].producer.as_str(), "app-1");
        assert!(tmp_files(&dir).is_empty());
    }

    #[test]
    fn pending_file_is_invisible_until_commit() {
        let (_t, dir, publisher) = setup("pending");
        let mut pending = publisher
            .begin(Priority::NORMAL, FileKind::PageBatch)
            .unwrap();
        pending.write_all(&[7; 100_000]).unwrap();
        assert_eq!(pending.bytes_written(), 100_000);
        assert!(dir.list().unwrap().is_empty());
        let tmp = tmp_files(&dir);
        assert_eq!(tmp.len(), 1);
        assert!(
            tmp[0].starts_with(&format!("{}.app-1.", pending.name())),
            "{tmp:?}"
        );
        let path = pending.commit().unwrap();
        assert_eq!(fs::read(path).unwrap().len(), 100_000);
        assert!(tmp_files(&dir).is_empty());
    }

    #[test]
    fn dropped_pending_file_leaves_nothing() {
        let (_t, dir, publisher) = setup("drop");
        let mut pending = publisher
            .begin(Priority::NORMAL, FileKind::Outcomes)
            .unwrap();
        pending.write_all(b"partial").unwrap();
        drop(pending);
        publisher
            .begin(Priority::NORMAL, FileKind::Outcomes)
            .unwrap()
            .abort();
        assert!(tmp_files(&dir).is_empty());
        assert!(dir.list().unwrap().is_empty());
    }

    #[test]
    fn new_publisher_removes_only_its_own_stale_tmp_files() {
        let (_t, dir, publisher) = setup("stale");
        let mut mine = publisher
            .begin(Priority::NORMAL, FileKind::Requests)
            .unwrap();
        mine.write_all(b"half").unwrap();
        let mine_path = mine.tmp_path().to_owned();
        std::mem::forget(mine); // as if the process died
        let other = Publisher::new(dir.clone(), ComponentId::new("app-2").unwrap()).unwrap();
        let theirs = other.begin(Priority::NORMAL, FileKind::Requests).unwrap();
        let why = dir
            .tmp_dir()
            .join("50-x-00000000000000000001.requests.why.app-1.0123456789abcdef");
        fs::write(&why, b"a consumer's note").unwrap();
        assert!(mine_path.exists());

        let _restarted = Publisher::new(dir.clone(), ComponentId::new("app-1").unwrap()).unwrap();
        assert!(!mine_path.exists());
        assert!(theirs.tmp_path().exists());
        assert!(
            why.exists(),
            "a consumer's .why temp file is not the publisher's"
        );
    }

    #[test]
    fn sequence_numbers_increase_and_survive_restart() {
        let (_t, dir, publisher) = setup("seq");
        let far_future = SpoolName::new(
            Priority::NORMAL,
            ComponentId::new("app-1").unwrap(),
            u64::MAX - 10,
            FileKind::Requests,
        );
        fs::write(dir.file_path(&far_future), b"").unwrap();
        let a = publisher
            .begin(Priority::NORMAL, FileKind::Requests)
            .unwrap();
        let b = publisher
            .begin(Priority::NORMAL, FileKind::Requests)
            .unwrap();
        assert!(b.name().seq > a.name().seq);
        let restarted = Publisher::new(dir, ComponentId::new("app-1").unwrap()).unwrap();
        let c = restarted
            .begin(Priority::NORMAL, FileKind::Requests)
            .unwrap();
        assert_eq!(c.name().seq, u64::MAX - 9);
    }

    #[test]
    fn commit_refuses_to_overwrite() {
        let (_t, dir, publisher) = setup("taken");
        let pending = publisher
            .begin(Priority::NORMAL, FileKind::Requests)
            .unwrap();
        fs::write(dir.file_path(pending.name()), b"first").unwrap();
        let tmp = pending.tmp_path().to_owned();
        let err = pending.commit().unwrap_err();
        assert!(matches!(err, SpoolError::NameTaken { .. }), "{err}");
        assert!(!tmp.exists());
        assert_eq!(
            fs::read(dir.file_path(&dir.list().unwrap()[0])).unwrap(),
            b"first"
        );
    }
}
