//! File helpers of the repository: a temp file moved into place with
//! `spool::publish::durable_rename`, and folder fsyncs.
//!
//! The repository has one writer (the catalog's RocksDB lock guarantees it), so temp
//! files live in `<repo>/.tmp/` under fixed names and whatever is there at open is a
//! leftover of a crash, deleted.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use spool::publish::durable_rename;

use crate::error::{Result, StorageError};

/// A file written in `.tmp/` and renamed to its destination by [`TmpFile::commit`];
/// dropped uncommitted, it deletes itself.
#[derive(Debug)]
pub(crate) struct TmpFile {
    writer: Option<BufWriter<File>>,
    tmp: PathBuf,
    dest: PathBuf,
}

impl TmpFile {
    /// A fresh temp file for `dest`, in `tmp_dir` (same file system).
    pub(crate) fn create(tmp_dir: &Path, dest: &Path) -> Result<Self> {
        let name = dest.file_name().unwrap_or_default().to_string_lossy();
        let tmp = tmp_dir.join(format!("{name}.partial"));
        let file = File::create(&tmp).map_err(StorageError::io(&tmp))?;
        Ok(Self {
            writer: Some(BufWriter::with_capacity(64 * 1024, file)),
            tmp,
            dest: dest.to_owned(),
        })
    }

    /// Flushes, fsyncs, renames to the destination (replacing a file there) and fsyncs
    /// the destination folder.
    pub(crate) fn commit(mut self) -> Result<()> {
        let Some(writer) = self.writer.take() else {
            return Ok(());
        };
        let file = writer
            .into_inner()
            .map_err(|e| StorageError::io(&self.tmp)(e.into_error()))?;
        durable_rename(file, &self.tmp, &self.dest)?;
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Write for TmpFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.writer.as_mut() {
            Some(w) => w.write(buf),
            None => Err(io::Error::other("temp file already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.writer.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for TmpFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Fsyncs a folder, so renames into it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(StorageError::io(dir))
}

/// Creates `dir` if missing, making the new entry durable (fsync of its parent).
pub(crate) fn ensure_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(StorageError::io(dir))?;
    match dir.parent() {
        Some(parent) => sync_dir(parent),
        None => Ok(()),
    }
}

/// Deletes every file in `dir` (leftovers of a crash). Returns how many.
pub(crate) fn empty_dir(dir: &Path) -> Result<usize> {
    let mut removed = 0;
    for entry in fs::read_dir(dir).map_err(StorageError::io(dir))? {
        let path = entry.map_err(StorageError::io(dir))?.path();
        if path.is_file() {
            fs::remove_file(&path).map_err(StorageError::io(&path))?;
            removed += 1;
        }
    }
    Ok(removed)
}
