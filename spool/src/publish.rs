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
//! A full file system (`ENOSPC`, [`SpoolError::is_disk_full`]) loses nothing: a
//! [`PendingFile`] can go back to its last complete piece ([`PendingFile::rewind`])
//! and be committed again ([`PendingFile::commit_in_place`]) once space is freed.
//!
//! This module must never write into a spool folder other than through `.tmp/` plus
//! the steps of [`durable_rename`], and never rename onto an existing published file.
//! [`Publisher::new`] lists the folder once (O(files)); publishing is O(1) in the
//! number of files.

use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
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
        self.commit_in_place()
    }

    /// [`commit`](Self::commit) that keeps the file on failure: if it fails before
    /// the rename (say, the file system is full: [`SpoolError::is_disk_full`]),
    /// nothing is published, the temp file and any unwritten buffered bytes are kept,
    /// and it may be called again later (or the file dropped). After the rename the
    /// file is spent, whatever the folder fsync says; calling again is an error.
    pub fn commit_in_place(&mut self) -> Result<PathBuf, SpoolError> {
        let tmp = self.tmp_path.clone();
        let file_err = |source| SpoolError::File {
            path: tmp.clone(),
            source,
        };
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| file_err(io::Error::other("pending file already closed")))?;
        // A failed flush keeps the bytes it could not write in the buffer.
        writer.flush().map_err(file_err)?;
        if fs::symlink_metadata(&self.final_path).is_ok() {
            return Err(SpoolError::NameTaken {
                path: self.final_path.clone(),
            });
        }
        writer
            .get_ref()
            .sync_all()
            .map_err(|source| SpoolError::Sync {
                path: tmp.clone(),
                source,
            })?;
        fs::rename(&tmp, &self.final_path).map_err(|source| SpoolError::Rename {
            from: tmp.clone(),
            to: self.final_path.clone(),
            source,
        })?;
        // Renamed: nothing left for Drop to delete.
        self.writer = None;
        self.tmp_path = PathBuf::new();
        let published = std::mem::take(&mut self.final_path);
        sync_parent(&published)?;
        Ok(published)
    }

    /// Forgets every byte written after the first `len`: after a failed write (the
    /// file system is full), the file goes back to its last complete piece, and
    /// writing may go on from there. The bytes before `len` are kept, whether they
    /// already reached the file or still wait in the buffer; truncating frees the
    /// space of the rest. Fails if fewer than `len` bytes were written.
    pub fn rewind(&mut self, len: u64) -> Result<(), SpoolError> {
        let tmp = self.tmp_path.clone();
        let file_err = |source| SpoolError::File {
            path: tmp.clone(),
            source,
        };
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| file_err(io::Error::other("pending file already closed")))?;
        // The file's offset: what reached it (the buffer holds the rest).
        let on_disk = writer.get_mut().stream_position().map_err(file_err)?;
        let keep = usize::try_from(len.saturating_sub(on_disk)).unwrap_or(usize::MAX);
        if keep > writer.buffer().len() {
            return Err(file_err(io::Error::other(format!(
                "cannot rewind to {len}: only {} bytes written",
                on_disk + writer.buffer().len() as u64
            ))));
        }
        let Some(writer) = self.writer.take() else {
            return Err(file_err(io::Error::other("pending file already closed")));
        };
        let (mut file, buffered) = writer.into_parts();
        let buffered = buffered.unwrap_or_else(|panicked| panicked.into_inner());
        let cut = len.min(on_disk);
        file.set_len(cut).map_err(file_err)?;
        file.seek(SeekFrom::Start(cut)).map_err(file_err)?;
        // Shorter than the capacity: stays in the buffer, no I/O now.
        let mut writer = BufWriter::with_capacity(WRITE_BUFFER.max(keep + 1), file);
        writer.write_all(&buffered[..keep]).map_err(file_err)?;
        self.writer = Some(writer);
        self.written = len;
        Ok(())
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

        let _restarted = Publisher::new(dir, ComponentId::new("app-1").unwrap()).unwrap();
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
    fn rewind_keeps_what_came_before_and_drops_the_rest() {
        let (_t, _dir, publisher) = setup("rewind");
        let mut pending = publisher
            .begin(Priority::NORMAL, FileKind::PageBatch)
            .unwrap();
        // More than the buffer: part of `a` is on disk, part still buffered.
        let a: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        pending.write_all(&a).unwrap();
        pending.write_all(&[0xEE; 30_000]).unwrap();
        pending.rewind(a.len() as u64).unwrap();
        assert_eq!(pending.bytes_written(), a.len() as u64);
        pending.write_all(b"after").unwrap();
        // Rewinding into bytes already on disk truncates the file.
        pending.rewind(10).unwrap();
        pending.write_all(b"+tail").unwrap();
        let err = pending.rewind(1_000_000).unwrap_err();
        assert!(err.to_string().contains("only 15 bytes"), "{err}");
        let path = pending.commit().unwrap();
        let mut want = a[..10].to_vec();
        want.extend_from_slice(b"+tail");
        assert_eq!(fs::read(path).unwrap(), want);
    }

    #[test]
    fn commit_in_place_publishes_once() {
        let (_t, dir, publisher) = setup("in-place");
        let mut pending = publisher
            .begin(Priority::NORMAL, FileKind::Requests)
            .unwrap();
        pending.write_all(b"whole").unwrap();
        let path = pending.commit_in_place().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"whole");
        assert!(pending.commit_in_place().is_err());
        drop(pending);
        assert!(
            path.exists(),
            "a committed file stays after its PendingFile"
        );
        assert!(tmp_files(&dir).is_empty());
    }

    #[test]
    fn disk_full_is_told_apart() {
        let full = |errno| SpoolError::File {
            path: PathBuf::from("x"),
            source: io::Error::from_raw_os_error(errno),
        };
        assert!(full(nix::libc::ENOSPC).is_disk_full());
        assert!(full(nix::libc::EDQUOT).is_disk_full());
        assert!(!full(nix::libc::EIO).is_disk_full());
        let sync = SpoolError::Sync {
            path: PathBuf::from("x"),
            source: io::Error::from_raw_os_error(nix::libc::ENOSPC),
        };
        assert!(!sync.is_disk_full(), "a failed fsync is not retried");
        let wrapped: io::Error = full(nix::libc::ENOSPC).into();
        assert!(crate::layout::is_disk_full_io(&wrapped));
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
