//! Reading page batches on a pool of reader threads, so that the crawl loop inserts
//! one batch's links (and merges, publishes, ingests) while the next batches are
//! inflated, checked and parsed ([`BatchReader::read_checked`]) on the other cores:
//! the per-page work (inflate, storage's check, HTML parse, link extraction,
//! canonicalization) grows with the threads, the loop keeps only ordering and
//! bookkeeping.
//!
//! The loop hands over batches it has claimed and takes back, in the same order,
//! each batch's pages and storage's check: every batch gets a sequence number, the
//! readers take batches from one queue, and the loop's side puts their results back
//! in order (a batch read early waits in a reorder buffer for the ones before it).
//! The readers only read: they never move, delete or write a file, and never touch
//! the seen set, so the crash argument of the [module docs](super) is unchanged (a
//! batch being read is still in our `.claimed/` and is read again after a restart).
//! Memory: at most the batches in flight (the loop keeps at most readers + 1) wait
//! in the queue, the readers and the reorder buffer.

use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use spool::claim::Claimed;
use spool::discover::Waker;
use storage::{CheckedBatch, StorageError};

use app_core::error::AppError;
use pages::links::{BatchReader, PageLinksOf};

/// One batch, read.
pub(crate) struct ReadBatch {
    /// The batch file (still claimed).
    pub claimed: Claimed,
    /// Its pages' links and storage's check, or why storage refused it.
    pub read: Result<(Vec<PageLinksOf>, CheckedBatch), StorageError>,
}

/// The loop's handle on the reader threads.
pub(crate) struct ReadAhead {
    to_readers: Option<Sender<(u64, Claimed)>>,
    from_readers: Receiver<(u64, ReadBatch)>,
    /// Read out of turn: waiting for the batches handed over before them.
    early: BTreeMap<u64, ReadBatch>,
    /// Sequence number of the next batch handed over, and of the next taken back.
    next_in: u64,
    next_out: u64,
    threads: Vec<JoinHandle<()>>,
}

impl ReadAhead {
    /// Starts `readers` reader threads (at least one), each with its own
    /// [`BatchReader`] from `reader`; each wakes the loop through `waker` after a
    /// batch.
    pub(crate) fn spawn(
        readers: usize,
        reader: impl Fn() -> BatchReader,
        waker: Waker,
    ) -> Result<Self, AppError> {
        let (to_readers, batches) = mpsc::channel::<(u64, Claimed)>();
        let batches = Arc::new(Mutex::new(batches));
        let (results, from_readers) = mpsc::channel::<(u64, ReadBatch)>();
        let mut threads = Vec::new();
        for _ in 0..readers.max(1) {
            let mut reader = reader();
            let batches = Arc::clone(&batches);
            let results = results.clone();
            let waker = waker.clone();
            let thread = std::thread::Builder::new()
                .name("app-reader".into())
                .spawn(move || {
                    loop {
                        // The lock is held only to take one batch off the queue.
                        let next = batches
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .recv();
                        let Ok((seq, claimed)) = next else { return };
                        let mut pages = Vec::new();
                        let read = reader
                            .read_checked(claimed.path(), |page| pages.push(page))
                            .map(|checked| (pages, checked));
                        if results.send((seq, ReadBatch { claimed, read })).is_err() {
                            return;
                        }
                        waker.wake();
                    }
                })
                .map_err(|source| AppError::Thread {
                    name: "app-reader",
                    source,
                })?;
            threads.push(thread);
        }
        Ok(Self {
            to_readers: Some(to_readers),
            from_readers,
            early: BTreeMap::new(),
            next_in: 0,
            next_out: 0,
            threads,
        })
    }

    /// The reader threads.
    pub(crate) fn readers(&self) -> usize {
        self.threads.len()
    }

    /// Batches handed over and not yet taken back.
    pub(crate) fn in_flight(&self) -> usize {
        (self.next_in - self.next_out) as usize
    }

    /// Hands a claimed batch to the readers.
    pub(crate) fn submit(&mut self, claimed: Claimed) -> Result<(), AppError> {
        let sent = self
            .to_readers
            .as_ref()
            .is_some_and(|tx| tx.send((self.next_in, claimed)).is_ok());
        if !sent {
            return Err(AppError::Panicked);
        }
        self.next_in += 1;
        Ok(())
    }

    /// The next batch read, in the order handed over, if it is ready (`None` when
    /// nothing is in flight).
    pub(crate) fn try_next(&mut self) -> Result<Option<ReadBatch>, AppError> {
        self.take(false)
    }

    /// The next batch read, in the order handed over, waiting for it (`None` when
    /// nothing is in flight).
    pub(crate) fn next(&mut self) -> Result<Option<ReadBatch>, AppError> {
        self.take(true)
    }

    fn take(&mut self, wait: bool) -> Result<Option<ReadBatch>, AppError> {
        loop {
            if self.in_flight() == 0 {
                return Ok(None);
            }
            if let Some(batch) = self.early.remove(&self.next_out) {
                self.next_out += 1;
                return Ok(Some(batch));
            }
            let (seq, batch) = if wait {
                self.from_readers.recv().map_err(|_| AppError::Panicked)?
            } else {
                match self.from_readers.try_recv() {
                    Ok(got) => got,
                    Err(TryRecvError::Empty) => return Ok(None),
                    Err(TryRecvError::Disconnected) => return Err(AppError::Panicked),
                }
            };
            self.early.insert(seq, batch);
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // Closing the queue ends each thread after the batch it is reading; what
        // they read is dropped (those batches stay claimed and are read again).
        self.to_readers = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use spool::claim::Consumer;
    use spool::discover::Discovery;
    use spool::name::{FileKind, Priority};
    use spool::publish::Publisher;
    use spool::{AppId, ComponentId, Spool};

    use super::*;
    use pages::canon::CanonConfig;

    #[test]
    fn reads_in_order_and_reports_a_refused_batch() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let pages = spool.pages(&AppId::new("t").unwrap()).unwrap();
        let id = ComponentId::new("reader-test").unwrap();
        let publisher = Publisher::new(pages.clone(), id.clone()).unwrap();
        // Two broken batches: storage refuses both, in the order handed over.
        publisher
            .publish(Priority::NORMAL, FileKind::PageBatch, b"not a warc file")
            .unwrap();
        publisher
            .publish(
                Priority::NORMAL,
                FileKind::PageBatch,
                b"still not a warc file",
            )
            .unwrap();
        let consumer = Consumer::new(pages.clone(), id).unwrap();
        let claimed = consumer.claim_batch(8).unwrap();
        assert_eq!(claimed.len(), 2);
        let names: Vec<String> = claimed.iter().map(|c| c.name().to_string()).collect();
        let discovery = Discovery::new(&pages, Duration::from_secs(1), false);
        let mut ahead = ReadAhead::spawn(
            3,
            || BatchReader::new(CanonConfig::default(), 1 << 20),
            discovery.waker(),
        )
        .unwrap();
        assert!(ahead.try_next().unwrap().is_none());
        for c in claimed {
            ahead.submit(c).unwrap();
        }
        assert_eq!(ahead.in_flight(), 2);
        let mut got = Vec::new();
        while let Some(batch) = ahead.next().unwrap() {
            assert!(batch.read.is_err_and(|e| e.is_batch_fault()));
            got.push(batch.claimed.name().to_string());
        }
        assert_eq!(got, names);
        assert_eq!(ahead.in_flight(), 0);
        assert!(ahead.next().unwrap().is_none());
    }
}
