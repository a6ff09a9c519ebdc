//! The caller's end of the merge thread ([`super::merge::Worker`]): it starts the
//! thread, hands it full buffers (blocking while it merges the previous one:
//! back-pressure), takes its results back in generation order, and stops it on
//! drop (abandoning a merge in progress, exactly like a crash).
//!
//! It must never touch the set's files or decide when to merge: [`super::SeenSet`]
//! does. Memory: at most one buffer in the thread and the batches not yet taken.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::batch::NewBatch;
use super::error::SeenError;
use super::merge::{DiskState, Job, OnMerged, Worker};

/// The merge thread, seen from the set.
pub(super) struct MergeThread {
    jobs: Option<SyncSender<Job>>,
    results: Receiver<Result<NewBatch, SeenError>>,
    worker: Option<JoinHandle<()>>,
    cancel: Arc<AtomicBool>,
    on_merged: OnMerged,
    /// Jobs handed off whose result has not been taken from `results`.
    in_flight: u64,
    /// Results taken but not yet asked for.
    ready: VecDeque<NewBatch>,
    /// Time spent waiting for the thread to take a job.
    blocked: Duration,
    /// The thread failed or is gone: no job is taken any more.
    stopped: bool,
}

impl MergeThread {
    /// Starts the thread merging into `dir`, keeping `state` up to date.
    pub(super) fn start(
        dir: &Path,
        restart_interval: u32,
        state: Arc<Mutex<DiskState>>,
    ) -> Result<Self, SeenError> {
        let cancel = Arc::new(AtomicBool::new(false));
        let (jobs_tx, jobs_rx) = mpsc::sync_channel(0);
        let (results_tx, results) = mpsc::channel();
        let on_merged = OnMerged::default();
        let worker = Worker {
            dir: dir.to_owned(),
            restart_interval,
            cancel: cancel.clone(),
            state,
            on_merged: on_merged.clone(),
        };
        let handle = thread::Builder::new()
            .name("seen-merge".into())
            .spawn(move || worker.run(jobs_rx, results_tx))
            .map_err(SeenError::io(dir))?;
        Ok(MergeThread {
            jobs: Some(jobs_tx),
            results,
            worker: Some(handle),
            cancel,
            on_merged,
            in_flight: 0,
            ready: VecDeque::new(),
            blocked: Duration::ZERO,
            stopped: false,
        })
    }

    /// The thread failed or is gone.
    #[inline]
    pub(super) fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// A merge is running (handed off, result not taken).
    pub(super) fn is_busy(&self) -> bool {
        self.in_flight > 0
    }

    /// A merge runs or a finished merge's batch waits to be taken.
    pub(super) fn is_merging(&self) -> bool {
        self.in_flight > 0 || !self.ready.is_empty()
    }

    /// Time spent waiting for the thread to take a job.
    pub(super) fn blocked(&self) -> Duration {
        self.blocked
    }

    /// See [`super::SeenSet::wake_on_merge`].
    pub(super) fn wake_on_merge(&self, wake: impl Fn() + Send + Sync + 'static) {
        let _ = self.on_merged.set(Box::new(wake));
    }

    /// Gives `job` to the thread, blocking while it is busy. When the thread has
    /// stopped, takes its error (returned) and the batches before it.
    pub(super) fn hand_off(&mut self, job: Job) -> Result<(), SeenError> {
        let started = Instant::now();
        let sent = self
            .jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok());
        self.blocked += started.elapsed();
        if sent {
            self.in_flight += 1;
            return Ok(());
        }
        // The merge thread has stopped: its error is in the channel.
        self.stopped = true;
        loop {
            match self.receive(true)? {
                Some(batch) => self.ready.push_back(batch),
                None => return Err(SeenError::Stopped),
            }
        }
    }

    /// Waits for every merge handed off; their batches wait in `ready`.
    pub(super) fn wait_all(&mut self) -> Result<(), SeenError> {
        while self.in_flight > 0 {
            if let Some(batch) = self.receive(true)? {
                self.ready.push_back(batch);
            }
        }
        Ok(())
    }

    /// The next batch: one taken before, else one from the thread (waiting for
    /// the running merge when `block`).
    pub(super) fn next(&mut self, block: bool) -> Result<Option<NewBatch>, SeenError> {
        match self.ready.pop_front() {
            Some(batch) => Ok(Some(batch)),
            None => self.receive(block),
        }
    }

    /// Every batch taken and not yet asked for.
    pub(super) fn drain_ready(&mut self) -> Vec<NewBatch> {
        self.ready.drain(..).collect()
    }

    /// Takes one result from the merge thread, if one is due.
    fn receive(&mut self, block: bool) -> Result<Option<NewBatch>, SeenError> {
        if self.in_flight == 0 {
            return Ok(None);
        }
        let result = if block {
            self.results.recv().ok()
        } else {
            match self.results.try_recv() {
                Ok(result) => Some(result),
                Err(TryRecvError::Empty) => return Ok(None),
                Err(TryRecvError::Disconnected) => None,
            }
        };
        match result {
            Some(Ok(batch)) => {
                self.in_flight -= 1;
                Ok(Some(batch))
            }
            Some(Err(e)) => {
                self.in_flight -= 1;
                self.stopped = true;
                Err(e)
            }
            None => {
                self.in_flight = 0;
                self.stopped = true;
                Err(SeenError::WorkerPanicked)
            }
        }
    }
}

impl Drop for MergeThread {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        self.jobs = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}
