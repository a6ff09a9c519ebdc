//! Outcome files: the URLs that ended without a page, batched per application into
//! outcome files published to `outcomes/<app>/` (spool format v1, see
//! `spool::formats::outcomes`).
//!
//! Durability: an outcome is first written to RocksDB (`outcome` family) *in the same
//! batch* as the queue change that caused it (a URL dropped, a host declared dead), so
//! a crash never loses one. A file is published when an application has
//! `outcome_batch_lines` pending or its oldest pending line is `outcome_max_age_ms`
//! old; only after the publish are the lines deleted from RocksDB. A crash between the
//! two publishes those lines again on restart: outcomes are delivered at least once,
//! and readers tolerate duplicates.
//!
//! Spool full (`ENOSPC`, `EDQUOT`): the lines stay pending (they are durable in
//! RocksDB anyway), the sink logs one line (`spool full at PATH: pausing outcome
//! files, retrying every N s at most`), reports the pause ([`OutcomeSink::pause`],
//! shown on the admin page), tries again with a back-off from [`RETRY_MIN_MS`]
//! doubling to [`RETRY_MAX_MS`], and logs `resumed` when a file goes through. The
//! rest of the manager goes on: nothing else it does writes to the spool.
//!
//! Memory: the pending lines of each application (at most `outcome_batch_lines`, plus
//! what one call adds), O(1) per line added; publishing is O(lines). This module must
//! never publish a line that is not yet durable in RocksDB, and never block on
//! anything but the local spool write.

use std::collections::BTreeMap;

use spool::formats::OutcomeWriter;
use spool::name::{FileKind, Priority};
use spool::protocol::Pause;
use spool::publish::Publisher;
use spool::{AppId, ComponentId, Spool};

use super::FrontierError;
use super::records::PendingOutcome;
use super::store::{Batch, Cf, Store};

/// Priority written into outcome file names (there is only one kind of outcome file).
const OUTCOME_PRIORITY: u8 = 0;

/// First wait before retrying a publish that failed because the spool is full.
pub(crate) const RETRY_MIN_MS: u64 = 50;
/// Longest wait between two retries while the spool is full.
pub(crate) const RETRY_MAX_MS: u64 = 1000;

/// The sink's pause on a full spool.
#[derive(Debug)]
struct Paused {
    state: Pause,
    backoff_ms: u64,
    retry_at_ms: u64,
}

#[derive(Debug, Default)]
struct AppPending {
    lines: Vec<(u64, PendingOutcome)>,
    oldest_ms: u64,
}

/// Outcomes waiting to be published, per application.
#[derive(Debug)]
pub(crate) struct OutcomeSink {
    spool: Spool,
    producer: ComponentId,
    publishers: BTreeMap<AppId, Publisher>,
    pending: BTreeMap<AppId, AppPending>,
    next_seq: u64,
    batch_lines: usize,
    max_age_ms: u64,
    published_files: u64,
    paused: Option<Paused>,
}

impl OutcomeSink {
    /// A sink publishing as `producer`; reloads the outcomes a previous run wrote and
    /// did not publish (they are published on the next [`flush`](Self::flush)).
    pub fn open(
        store: &Store,
        spool: Spool,
        producer: ComponentId,
        batch_lines: usize,
        max_age_ms: u64,
    ) -> Result<Self, FrontierError> {
        let mut sink = Self {
            spool,
            producer,
            publishers: BTreeMap::new(),
            pending: BTreeMap::new(),
            next_seq: 0,
            batch_lines,
            max_age_ms,
            published_files: 0,
            paused: None,
        };
        store.scan(Cf::Outcome, &[], |key, outcome: PendingOutcome| {
            let seq = seq_of(key);
            sink.next_seq = sink.next_seq.max(seq + 1);
            // Age 0: published on the first flush after a restart.
            sink.pending
                .entry(outcome.app.clone())
                .or_default()
                .lines
                .push((seq, outcome));
            Ok(true)
        })?;
        if let Some(key) = store.last_key(Cf::Outcome)? {
            sink.next_seq = sink.next_seq.max(seq_of(&key) + 1);
        }
        Ok(sink)
    }

    /// Records `outcome`: durably in `batch`, and in memory for the next file.
    pub fn add(&mut self, batch: &mut Batch, outcome: PendingOutcome, now_ms: u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        batch.put(Cf::Outcome, seq.to_be_bytes().to_vec(), &outcome);
        let app = self.pending.entry(outcome.app.clone()).or_default();
        if app.lines.is_empty() {
            app.oldest_ms = now_ms;
        }
        app.lines.push((seq, outcome));
    }

    /// Lines waiting in memory over all applications.
    pub fn pending_lines(&self) -> usize {
        self.pending.values().map(|p| p.lines.len()).sum()
    }

    /// Lines waiting in memory for `app`.
    pub fn pending_of(&self, app: &AppId) -> usize {
        self.pending.get(app).map_or(0, |p| p.lines.len())
    }

    /// Publishes the lines pending for `app` now (eager when idle: the application
    /// has nothing else coming). Returns whether a file was published.
    pub fn flush_app(&mut self, store: &Store, app: &AppId) -> Result<bool, FrontierError> {
        let Some(pending) = self.pending.remove(app) else {
            return Ok(false);
        };
        if pending.lines.is_empty() {
            return Ok(false);
        }
        if self.waiting(wall_ms()) {
            self.pending.insert(app.clone(), pending);
            return Ok(false);
        }
        self.publish_and_forget(store, app, pending)
    }

    /// The pause on a full spool, if the sink is paused.
    pub fn pause(&self) -> Option<&Pause> {
        self.paused.as_ref().map(|p| &p.state)
    }

    /// Paused, and the next retry is not due at `now_ms`.
    fn waiting(&self, now_ms: u64) -> bool {
        self.paused.as_ref().is_some_and(|p| now_ms < p.retry_at_ms)
    }

    /// Outcome files published by this process.
    pub fn published_files(&self) -> u64 {
        self.published_files
    }

    /// When the oldest pending line must be published, if any line is pending.
    pub fn next_deadline(&self) -> Option<u64> {
        if let Some(p) = &self.paused {
            return Some(p.retry_at_ms);
        }
        self.pending
            .values()
            .filter(|p| !p.lines.is_empty())
            .map(|p| p.oldest_ms.saturating_add(self.max_age_ms))
            .min()
    }

    /// Publishes the files that are full or old enough (all of them if `force`), then
    /// deletes their lines from RocksDB. Returns how many files were published.
    pub fn flush(
        &mut self,
        store: &Store,
        now_ms: u64,
        force: bool,
    ) -> Result<usize, FrontierError> {
        if self.waiting(now_ms) {
            return Ok(0);
        }
        let due: Vec<AppId> = self
            .pending
            .iter()
            .filter(|(_, p)| {
                !p.lines.is_empty()
                    && (force
                        || p.lines.len() >= self.batch_lines
                        || now_ms >= p.oldest_ms.saturating_add(self.max_age_ms))
            })
            .map(|(app, _)| app.clone())
            .collect();
        let mut published = 0;
        for app in &due {
            if self.waiting(wall_ms()) {
                break;
            }
            let Some(pending) = self.pending.remove(app) else {
                continue;
            };
            published += usize::from(self.publish_and_forget(store, app, pending)?);
        }
        Ok(published)
    }

    /// The spool is full: start or prolong the pause.
    fn spool_full(&mut self, error: &FrontierError) {
        let now = wall_ms();
        match &mut self.paused {
            Some(p) => {
                p.backoff_ms = (p.backoff_ms * 2).min(RETRY_MAX_MS);
                p.retry_at_ms = now + p.backoff_ms;
            }
            None => {
                let path = error.spool_path().unwrap_or(self.spool.root());
                tracing::warn!(
                    %error,
                    "spool full at {}: pausing outcome files, retrying every {} s at most",
                    path.display(),
                    RETRY_MAX_MS as f64 / 1000.0
                );
                self.paused = Some(Paused {
                    state: Pause::disk_full(path, RETRY_MAX_MS),
                    backoff_ms: RETRY_MIN_MS,
                    retry_at_ms: now + RETRY_MIN_MS,
                });
            }
        }
    }

    /// Publishes `pending` as one file of `app`, then deletes its lines from RocksDB;
    /// whether it was published. On a publish error the lines are kept (they are
    /// durable anyway) for the next flush; a full spool pauses the sink instead of
    /// failing.
    fn publish_and_forget(
        &mut self,
        store: &Store,
        app: &AppId,
        pending: AppPending,
    ) -> Result<bool, FrontierError> {
        if let Err(e) = self.publish(app, &pending) {
            self.pending.insert(app.clone(), pending);
            if e.is_disk_full() {
                self.spool_full(&e);
                return Ok(false);
            }
            return Err(e);
        }
        if let Some(p) = self.paused.take() {
            tracing::info!(
                path = %p.state.path,
                paused_ms = wall_ms().saturating_sub(p.state.since_ms),
                "spool has room again: outcome files resumed"
            );
        }
        let mut batch = Batch::default();
        for (seq, _) in &pending.lines {
            batch.delete(Cf::Outcome, seq.to_be_bytes().to_vec());
        }
        store.write(batch)?;
        self.published_files += 1;
        Ok(true)
    }

    fn publish(&mut self, app: &AppId, pending: &AppPending) -> Result<(), FrontierError> {
        let mut writer = OutcomeWriter::new(Vec::with_capacity(pending.lines.len() * 96))
            .map_err(|e| format_bug(app, e))?;
        for (_, o) in &pending.lines {
            if let Err(e) = writer.write(&o.url, o.reason, &o.detail) {
                // A URL the outcome format cannot carry (it came from a request file,
                // which uses the same URL rules, so this is not expected): log, skip.
                tracing::warn!(app = %app, url = %o.url, error = %e, "outcome line skipped");
            }
        }
        let bytes = writer.finish().map_err(|e| format_bug(app, e))?;
        if !self.publishers.contains_key(app) {
            let dir = self
                .spool
                .outcomes(app)
                .map_err(|e| FrontierError::spool(format!("open outcomes/{app}"), e))?;
            let publisher = Publisher::new(dir, self.producer.clone())
                .map_err(|e| FrontierError::spool(format!("publisher for outcomes/{app}"), e))?;
            self.publishers.insert(app.clone(), publisher);
        }
        let publisher = &self.publishers[app];
        let priority = Priority::new(OUTCOME_PRIORITY).unwrap_or_else(|_| unreachable!());
        publisher
            .publish(priority, FileKind::Outcomes, &bytes)
            .map_err(|e| FrontierError::spool(format!("publish outcomes/{app}"), e))?;
        tracing::debug!(app = %app, lines = pending.lines.len(), "published outcome file");
        Ok(())
    }
}

/// Wall-clock time, Unix milliseconds.
fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn seq_of(key: &[u8]) -> u64 {
    key.get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
        .unwrap_or(0)
}

fn format_bug(app: &AppId, e: spool::formats::FormatError) -> FrontierError {
    FrontierError::spool(
        format!("write outcome file for {app}"),
        spool::SpoolError::File {
            path: std::path::PathBuf::from(format!("outcomes/{app}")),
            source: std::io::Error::other(e.to_string()),
        },
    )
}
