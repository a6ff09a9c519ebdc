//! Reading page batches on a second thread, so that the crawl loop inserts one
//! batch's links (and merges, publishes, ingests) while the next batch is inflated,
//! checked and parsed ([`BatchReader::read_checked`]): the two halves of the
//! application's work then run on two cores.
//!
//! The loop hands over batches it has claimed and takes back, in the same order,
//! each batch's pages and storage's check. The reader thread only reads: it never
//! moves, deletes or writes a file, and never touches the seen set, so the crash
//! argument of the [module docs](super) is unchanged (a batch being read is still in
//! our `.claimed/` and is read again after a restart). Memory: at most `depth`
//! batches' links wait in the channel (the loop keeps at most that many in flight).

use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;

use spool::claim::Claimed;
use spool::discover::Waker;
use storage::{CheckedBatch, StorageError};

use super::error::AppError;
use super::pages::{BatchReader, PageLinksOf};

/// One batch, read.
pub(crate) struct ReadBatch {
    /// The batch file (still claimed).
    pub claimed: Claimed,
    /// Its pages' links and storage's check, or why storage refused it.
    pub read: Result<(Vec<PageLinksOf>, CheckedBatch), StorageError>,
}

/// The loop's handle on the reader thread.
pub(crate) struct ReadAhead {
    to_reader: Option<Sender<Claimed>>,
    from_reader: Receiver<ReadBatch>,
    in_flight: usize,
    thread: Option<JoinHandle<()>>,
}

impl ReadAhead {
    /// Starts the reader thread; it wakes the loop through `waker` after each batch.
    pub(crate) fn spawn(mut reader: BatchReader, waker: Waker) -> Result<Self, AppError> {
        let (to_reader, batches) = mpsc::channel::<Claimed>();
        let (results, from_reader) = mpsc::channel::<ReadBatch>();
        let thread = std::thread::Builder::new()
            .name("app-reader".into())
            .spawn(move || {
                for claimed in batches {
                    let mut pages = Vec::new();
                    let read = reader
                        .read_checked(claimed.path(), |page| pages.push(page))
                        .map(|checked| (pages, checked));
                    if results.send(ReadBatch { claimed, read }).is_err() {
                        return;
                    }
                    waker.wake();
                }
            })
            .map_err(|source| AppError::Thread {
                name: "app-reader",
                source,
            })?;
        Ok(Self {
            to_reader: Some(to_reader),
            from_reader,
            in_flight: 0,
            thread: Some(thread),
        })
    }

    /// Batches handed over and not yet taken back.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Hands a claimed batch to the reader.
    pub(crate) fn submit(&mut self, claimed: Claimed) -> Result<(), AppError> {
        let sent = self
            .to_reader
            .as_ref()
            .is_some_and(|tx| tx.send(claimed).is_ok());
        if !sent {
            return Err(AppError::Panicked);
        }
        self.in_flight += 1;
        Ok(())
    }

    /// The next batch read, if one is ready (`None` when nothing is in flight).
    pub(crate) fn try_next(&mut self) -> Result<Option<ReadBatch>, AppError> {
        self.take(false)
    }

    /// The next batch read, waiting for it (`None` when nothing is in flight).
    pub(crate) fn next(&mut self) -> Result<Option<ReadBatch>, AppError> {
        self.take(true)
    }

    fn take(&mut self, wait: bool) -> Result<Option<ReadBatch>, AppError> {
        if self.in_flight == 0 {
            return Ok(None);
        }
        let batch = if wait {
            self.from_reader.recv().map_err(|_| AppError::Panicked)?
        } else {
            match self.from_reader.try_recv() {
                Ok(batch) => batch,
                Err(TryRecvError::Empty) => return Ok(None),
                Err(TryRecvError::Disconnected) => return Err(AppError::Panicked),
            }
        };
        self.in_flight -= 1;
        Ok(Some(batch))
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // Closing the channel ends the thread after the batch it is reading; what
        // it read is dropped (those batches stay claimed and are read again).
        self.to_reader = None;
        if let Some(thread) = self.thread.take() {
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
    use crate::canon::CanonConfig;

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
            BatchReader::new(CanonConfig::default(), 1 << 20),
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
