//! The merge thread: sorts a full buffer and merges it into the newest set file with
//! one sequential scan-and-copy, writing the next generation's file; the buffer keys
//! that were not in the old file are the new batch.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::batch::NewBatch;
use super::buffer::Buffer;
use super::error::{Corruption, SeenError};
use super::files;
use super::format::FileSummary;
use super::reader::FileReader;
use super::writer::FileWriter;

/// How often (in keys written) a merge checks whether the set was dropped.
const CANCEL_CHECK_EVERY: u64 = 1 << 16;

/// A full buffer handed to the merge thread.
pub(crate) struct Job {
    /// The generation the merge writes.
    pub(crate) generation: u64,
    /// The keys.
    pub(crate) buffer: Buffer,
}

/// What the merge thread reports, shared with the set.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DiskState {
    pub(crate) generation: u64,
    pub(crate) keys_on_disk: u64,
    pub(crate) bytes_on_disk: u64,
    pub(crate) merges_done: u64,
    pub(crate) last_merge: Duration,
    pub(crate) last_sort: Duration,
    pub(crate) total_merge: Duration,
    pub(crate) total_sort: Duration,
}

/// A completed merge.
struct Merged {
    batch: NewBatch,
    summary: FileSummary,
    /// Sorting time.
    sort: Duration,
    /// Whole merge, sorting included.
    total: Duration,
}

/// The merge thread's fixed context.
pub(crate) struct Worker {
    pub(crate) dir: PathBuf,
    pub(crate) restart_interval: u32,
    pub(crate) cancel: Arc<AtomicBool>,
    pub(crate) state: Arc<Mutex<DiskState>>,
    /// Called after each result is sent (see [`super::SeenSet::wake_on_merge`]).
    pub(crate) on_merged: OnMerged,
}

/// What the merge thread calls when a result is ready, once the caller set it.
pub(crate) type OnMerged = Arc<OnceLock<Box<dyn Fn() + Send + Sync>>>;

impl Worker {
    /// Merges jobs one at a time until the set is dropped or a merge fails.
    pub(crate) fn run(self, jobs: Receiver<Job>, results: Sender<Result<NewBatch, SeenError>>) {
        while let Ok(job) = jobs.recv() {
            let current = lock(&self.state).generation;
            match self.merge(current, job) {
                Ok(Some(Merged {
                    batch,
                    summary,
                    sort,
                    total,
                })) => {
                    let mut s = lock(&self.state);
                    s.generation = summary.generation;
                    s.keys_on_disk = summary.count;
                    s.bytes_on_disk = summary.bytes;
                    s.merges_done += 1;
                    s.last_sort = sort;
                    s.last_merge = total;
                    s.total_sort += sort;
                    s.total_merge += total;
                    drop(s);
                    if results.send(Ok(batch)).is_err() {
                        return;
                    }
                    self.merged();
                }
                Ok(None) => return,
                Err(e) => {
                    let _ = results.send(Err(e));
                    self.merged();
                    return;
                }
            }
        }
    }

    /// Tells the caller a result waits, if it asked to be told.
    fn merged(&self) {
        if let Some(wake) = self.on_merged.get() {
            wake();
        }
    }

    /// One merge: `None` if cancelled.
    fn merge(&self, current: u64, job: Job) -> Result<Option<Merged>, SeenError> {
        let started = Instant::now();
        let mut buffer = job.buffer;
        buffer.sort_dedup();
        let sort = started.elapsed();
        let mut tmp = TmpFile {
            path: files::tmp_path(&self.dir, job.generation),
            armed: true,
        };
        let mut writer = FileWriter::create(&tmp.path, job.generation, self.restart_interval)?;
        let mut old = match current {
            0 => None,
            g => Some(open_generation(&self.dir, g)?),
        };
        let entries = buffer.entries();
        let mut batch =
            NewBatch::with_capacity(job.generation, entries.len() / 4, buffer.bytes() / 4);
        let mut have_old = match &mut old {
            Some(r) => r.advance()?,
            None => false,
        };
        let mut next = 0;
        loop {
            let new = entries.get(next).copied();
            let take_old = match (have_old, new) {
                (false, None) => break,
                (true, None) => true,
                (false, Some(_)) => false,
                (true, Some(e)) => {
                    let old = old.as_ref().expect("have_old");
                    match old.key().cmp(buffer.key(e)) {
                        Ordering::Less => true,
                        Ordering::Equal => {
                            next += 1;
                            true
                        }
                        Ordering::Greater => false,
                    }
                }
            };
            if take_old {
                let reader = old.as_mut().expect("have_old");
                writer.push(reader.key())?;
                have_old = reader.advance()?;
            } else if let Some(e) = new {
                writer.push(buffer.key(e))?;
                batch.push(buffer.key(e), buffer.payload(e));
                next += 1;
            }
            if writer.count() % CANCEL_CHECK_EVERY == 0 && self.cancel.load(AtomicOrdering::Relaxed)
            {
                return Ok(None);
            }
        }
        if let Some(reader) = old {
            reader.finish()?;
        }
        drop(buffer);
        batch.shrink();
        let (file, summary) = writer.finish()?;
        spool::publish::durable_rename(file, &tmp.path, &files::path(&self.dir, job.generation))?;
        tmp.armed = false;
        Ok(Some(Merged {
            batch,
            summary,
            sort,
            total: started.elapsed(),
        }))
    }
}

/// Opens the file of `generation` and checks that it says so.
pub(crate) fn open_generation(dir: &Path, generation: u64) -> Result<FileReader, SeenError> {
    let path = files::path(dir, generation);
    let reader = FileReader::open(&path)?;
    let found = reader.summary().generation;
    if found != generation {
        let what = Corruption::GenerationMismatch {
            expected: generation,
            found,
        };
        return Err(SeenError::Corrupt { path, what });
    }
    Ok(reader)
}

/// A temp file removed when dropped while armed (a failed or cancelled merge
/// leaves nothing behind).
struct TmpFile {
    path: PathBuf,
    armed: bool,
}

impl Drop for TmpFile {
    fn drop(&mut self) {
        if self.armed {
            let _ = files::remove_if_present(&self.path);
        }
    }
}

/// Locks the shared state, also after a panic elsewhere (it is plain numbers).
pub(crate) fn lock(state: &Mutex<DiskState>) -> std::sync::MutexGuard<'_, DiskState> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
