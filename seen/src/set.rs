//! [`SeenSet`]: the caller's side. Inserts go into a buffer; a full buffer goes to the
//! merge thread; the merge thread's new batches come back through a channel.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::batch::NewBatch;
use super::buffer::Buffer;
use super::config::SeenConfig;
use super::error::SeenError;
use super::files;
use super::format::MAX_KEY_LEN;
use super::handoff::MergeThread;
use super::merge::{self, DiskState, Job};
use super::stats::SeenStats;

/// Longest payload, in bytes.
pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize;

/// The exact URL-seen set of one application part (see the [module docs](super)).
///
/// One `SeenSet` per folder at a time. Dropping it abandons a merge in progress and
/// the keys buffered since the last hand-off, exactly like a crash; [`SeenSet::close`]
/// merges them first.
pub struct SeenSet {
    dir: PathBuf,
    config: SeenConfig,
    buffer: Buffer,
    /// The generation the keys in `buffer` will be merged into.
    pending: u64,
    /// The newest generation handed to the caller (or opened).
    delivered: u64,
    /// What the merge thread keeps up to date: the newest generation on disk.
    state: Arc<Mutex<DiskState>>,
    merges: MergeThread,
    inserts: u64,
}

impl SeenSet {
    /// Opens (creating if needed) the set in folder `dir` at its newest generation.
    /// Temp files of interrupted merges are deleted.
    pub fn open(dir: &Path, config: SeenConfig) -> Result<SeenSet, SeenError> {
        SeenSet::open_inner(dir, None, config)
    }

    /// Opens the set at `generation` (0: empty) and deletes the files of newer
    /// generations: after a crash, the caller names the last generation whose new
    /// keys it had published, and replays its inputs since then.
    pub fn open_at(dir: &Path, generation: u64, config: SeenConfig) -> Result<SeenSet, SeenError> {
        SeenSet::open_inner(dir, Some(generation), config)
    }

    fn open_inner(dir: &Path, at: Option<u64>, config: SeenConfig) -> Result<SeenSet, SeenError> {
        config.validate()?;
        fs::create_dir_all(dir).map_err(SeenError::io(dir))?;
        let listing = files::list(dir)?;
        for tmp in &listing.tmps {
            files::remove_if_present(tmp)?;
        }
        let newest = listing.generations.last().copied().unwrap_or(0);
        let generation = at.unwrap_or(newest);
        if generation != 0 && !listing.generations.contains(&generation) {
            return Err(SeenError::MissingGeneration {
                dir: dir.to_owned(),
                generation,
            });
        }
        let mut disk = DiskState {
            generation,
            ..DiskState::default()
        };
        if generation != 0 {
            let summary = merge::open_generation(dir, generation)?.summary();
            disk.keys_on_disk = summary.count;
            disk.bytes_on_disk = summary.bytes;
        }
        if generation < newest {
            files::remove_generations(dir, |g| g > generation)?;
        }
        let state = Arc::new(Mutex::new(disk));
        let merges = MergeThread::start(dir, config.restart_interval, state.clone())?;
        Ok(SeenSet {
            dir: dir.to_owned(),
            buffer: Buffer::new(config.buffer_bytes),
            config,
            pending: generation + 1,
            delivered: generation,
            state,
            merges,
            inserts: 0,
        })
    }

    /// Adds `key` with `payload` (carried back with the key if it turns out new; of
    /// several inserts of a key before it is merged, the first one's payload wins).
    ///
    /// Never waits for a merge, except when the buffer is full while the previous
    /// buffer's merge is still running: then it blocks until that merge completes
    /// (back-pressure; counted in [`SeenStats::blocked`]).
    pub fn insert(&mut self, key: &[u8], payload: &[u8]) -> Result<(), SeenError> {
        if self.merges.is_stopped() {
            return Err(SeenError::Stopped);
        }
        if key.len() > MAX_KEY_LEN {
            return Err(SeenError::KeyTooLong {
                len: key.len(),
                max: MAX_KEY_LEN,
            });
        }
        if payload.len() > MAX_PAYLOAD_LEN {
            return Err(SeenError::PayloadTooLong {
                len: payload.len(),
                max: MAX_PAYLOAD_LEN,
            });
        }
        self.buffer.push(key, payload);
        self.inserts += 1;
        if self.buffer.bytes() >= self.config.buffer_bytes {
            self.hand_off()?;
        }
        Ok(())
    }

    /// Merges what is buffered now and waits for every merge to complete (end of
    /// crawl, checkpoint). Their batches wait for [`SeenSet::try_recv_new`].
    pub fn flush(&mut self) -> Result<(), SeenError> {
        if self.merges.is_stopped() {
            return Err(SeenError::Stopped);
        }
        if !self.buffer.is_empty() {
            self.hand_off()?;
        }
        self.merges.wait_all()
    }

    /// Starts merging what is buffered now, unless a merge is running (then the
    /// buffer keeps growing and goes next): eager when idle, batched when busy.
    /// Never waits. Returns whether a merge started.
    pub fn merge_now(&mut self) -> Result<bool, SeenError> {
        if self.merges.is_stopped() {
            return Err(SeenError::Stopped);
        }
        if self.buffer.is_empty() || self.merges.is_busy() {
            return Ok(false);
        }
        // The worker is idle, so the rendezvous hand-off does not wait.
        self.hand_off()?;
        Ok(true)
    }

    /// Has the merge thread call `wake` each time a merge's result is ready (or
    /// the thread stopped with an error), so a caller can sleep until then instead
    /// of polling [`SeenSet::try_recv_new`]. Set once; a second call is ignored.
    /// `wake` runs on the merge thread: it must be quick and must not block.
    pub fn wake_on_merge(&self, wake: impl Fn() + Send + Sync + 'static) {
        self.merges.wake_on_merge(wake);
    }

    /// True while a merge runs or a finished merge's batch waits to be received.
    pub fn is_merging(&self) -> bool {
        self.merges.is_merging()
    }

    /// Keys buffered that no merge has taken yet (repeats counted).
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// True when keys are buffered that no merge has taken yet.
    pub fn has_buffered(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// [`SeenSet::flush`], then returns the batches not received yet and stops the
    /// merge thread.
    pub fn close(mut self) -> Result<Vec<NewBatch>, SeenError> {
        self.flush()?;
        Ok(self.merges.drain_ready())
    }

    /// The next batch of new keys if a merge has completed; never blocks. Batches
    /// come in generation order. A merge's error is returned once, here or from
    /// `insert`/`flush`; after it the set is stopped.
    pub fn try_recv_new(&mut self) -> Result<Option<NewBatch>, SeenError> {
        let batch = self.merges.next(false)?;
        Ok(self.deliver(batch))
    }

    /// The next batch of new keys, waiting for the running merge if there is one;
    /// `None` when no merge is running and none is waiting.
    pub fn recv_new(&mut self) -> Result<Option<NewBatch>, SeenError> {
        let batch = self.merges.next(true)?;
        Ok(self.deliver(batch))
    }

    /// Says that the new keys of `generation` (and of all before it) are durably
    /// published: the files of older generations are deleted. Until then they are
    /// kept for [`SeenSet::open_at`].
    pub fn release(&mut self, generation: u64) -> Result<(), SeenError> {
        if generation > self.delivered {
            return Err(SeenError::ReleaseAhead {
                requested: generation,
                delivered: self.delivered,
            });
        }
        files::remove_generations(&self.dir, |g| g < generation)?;
        Ok(())
    }

    /// Keys on disk after the newest completed merge (buffered keys not counted).
    pub fn len(&self) -> u64 {
        merge::lock(&self.state).keys_on_disk
    }

    /// True if no key is on disk yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The newest completed merge (0: none).
    pub fn generation(&self) -> u64 {
        merge::lock(&self.state).generation
    }

    /// The generation that keys inserted now will be merged into: a caller records it
    /// with each input it has fully inserted, and knows the input is covered once
    /// that generation's batch is published.
    pub fn pending_generation(&self) -> u64 {
        self.pending
    }

    /// The set's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The newest completed generation's file (`None` before the first merge).
    pub fn file_path(&self) -> Option<PathBuf> {
        match self.generation() {
            0 => None,
            g => Some(files::path(&self.dir, g)),
        }
    }

    /// Which of `keys` (sorted, ascending) the newest completed generation holds:
    /// one sequential read of its file, O(set + keys). Keys still buffered or
    /// being merged are not looked at (call it when no merge is pending).
    pub fn contains_sorted(&self, keys: &[&[u8]]) -> Result<Vec<bool>, SeenError> {
        let mut found = vec![false; keys.len()];
        let (Some(path), false) = (self.file_path(), keys.is_empty()) else {
            return Ok(found);
        };
        let mut reader = super::reader::FileReader::open(&path)?;
        let mut i = 0;
        while i < keys.len() && reader.advance()? {
            let key = reader.key();
            while i < keys.len() && keys[i] < key {
                i += 1;
            }
            while i < keys.len() && keys[i] == key {
                found[i] = true;
                i += 1;
            }
        }
        Ok(found)
    }

    /// Counters and sizes.
    pub fn stats(&self) -> SeenStats {
        let disk = *merge::lock(&self.state);
        SeenStats {
            generation: disk.generation,
            keys_on_disk: disk.keys_on_disk,
            bytes_on_disk: disk.bytes_on_disk,
            merges_done: disk.merges_done,
            merges_in_flight: self.pending - 1 - disk.generation,
            last_merge: disk.last_merge,
            last_sort: disk.last_sort,
            total_merge: disk.total_merge,
            total_sort: disk.total_sort,
            inserts: self.inserts,
            buffered_inserts: self.buffer.len() as u64,
            buffered_bytes: self.buffer.bytes() as u64,
            blocked: self.merges.blocked(),
        }
    }

    fn deliver(&mut self, batch: Option<NewBatch>) -> Option<NewBatch> {
        if let Some(b) = &batch {
            self.delivered = b.generation();
        }
        batch
    }

    /// Gives the full buffer to the merge thread, blocking while it is busy.
    fn hand_off(&mut self) -> Result<(), SeenError> {
        let buffer = std::mem::replace(&mut self.buffer, Buffer::new(self.config.buffer_bytes));
        let job = Job {
            generation: self.pending,
            buffer,
        };
        self.merges.hand_off(job)?;
        self.pending += 1;
        Ok(())
    }
}
