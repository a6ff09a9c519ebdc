//! The downloader's counters, in one place: their names (constants, for whatever
//! exports them) and their values ([`Metrics`], atomics shared by the fetch tasks,
//! the batch writer and the session that reads them for heartbeats).
//!
//! Labels are low-cardinality only: the failure counters are split by
//! [`OutcomeReason`] (nine values), never by URL, host or application. This module
//! must never allocate per fetch; every update is one relaxed atomic add.

use std::sync::atomic::{AtomicU64, Ordering};

use spool::OutcomeReason;

/// Pages (any HTTP status) written to a page batch.
pub const PAGES_STORED: &str = "downloader_pages_stored_total";
/// robots.txt responses published to `robots/`.
pub const ROBOTS_STORED: &str = "downloader_robots_stored_total";
/// Fetches that ended without a response, labelled `reason` = an [`OutcomeReason`].
pub const FETCH_FAILURES: &str = "downloader_fetch_failures_total";
/// Jobs handed back to the manager unstarted or unfinished (drain, shutdown).
pub const JOBS_RETURNED: &str = "downloader_jobs_returned_total";
/// Bytes read from the network for stored responses (TLS overhead included).
pub const WIRE_BYTES: &str = "downloader_wire_bytes_total";
/// Page batches published to `pages/<app>/`.
pub const BATCHES_PUBLISHED: &str = "downloader_batches_published_total";
/// Bytes of page batches published (compressed, as on disk).
pub const BATCH_BYTES: &str = "downloader_batch_bytes_total";

/// The counters; share one `Arc<Metrics>` per process.
#[derive(Debug, Default)]
pub struct Metrics {
    pages_stored: AtomicU64,
    robots_stored: AtomicU64,
    failures: [AtomicU64; OutcomeReason::ALL.len()],
    returned: AtomicU64,
    wire_bytes: AtomicU64,
    batches_published: AtomicU64,
    batch_bytes: AtomicU64,
}

/// The counters' values at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// [`PAGES_STORED`].
    pub pages_stored: u64,
    /// [`ROBOTS_STORED`].
    pub robots_stored: u64,
    /// [`FETCH_FAILURES`], indexed like [`OutcomeReason::ALL`].
    pub failures: [u64; OutcomeReason::ALL.len()],
    /// [`JOBS_RETURNED`].
    pub returned: u64,
    /// [`WIRE_BYTES`].
    pub wire_bytes: u64,
    /// [`BATCHES_PUBLISHED`].
    pub batches_published: u64,
    /// [`BATCH_BYTES`].
    pub batch_bytes: u64,
}

impl MetricsSnapshot {
    /// Fetches that ended (stored or failed): what heartbeats count as done.
    pub fn fetches_done(&self) -> u64 {
        self.pages_stored + self.robots_stored + self.failures.iter().sum::<u64>()
    }

    /// Failures of one class.
    pub fn failures_of(&self, reason: OutcomeReason) -> u64 {
        self.failures[index(reason)]
    }
}

fn index(reason: OutcomeReason) -> usize {
    OutcomeReason::ALL
        .iter()
        .position(|r| *r == reason)
        .unwrap_or_default()
}

impl Metrics {
    /// A page record pair was written to a batch.
    pub(crate) fn page_stored(&self, wire_bytes: u64) {
        self.pages_stored.fetch_add(1, Ordering::Relaxed);
        self.wire_bytes.fetch_add(wire_bytes, Ordering::Relaxed);
    }

    /// A robots.txt response was stored: published as a robots file, or sent in its
    /// report.
    pub(crate) fn robots_stored(&self, wire_bytes: u64) {
        self.robots_stored.fetch_add(1, Ordering::Relaxed);
        self.wire_bytes.fetch_add(wire_bytes, Ordering::Relaxed);
    }

    /// A fetch failed with `reason`.
    pub(crate) fn failed(&self, reason: OutcomeReason) {
        self.failures[index(reason)].fetch_add(1, Ordering::Relaxed);
    }

    /// `n` jobs were handed back.
    pub(crate) fn returned(&self, n: u64) {
        self.returned.fetch_add(n, Ordering::Relaxed);
    }

    /// A batch of `bytes` was published.
    pub(crate) fn batch_published(&self, bytes: u64) {
        self.batches_published.fetch_add(1, Ordering::Relaxed);
        self.batch_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The current values.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        MetricsSnapshot {
            pages_stored: get(&self.pages_stored),
            robots_stored: get(&self.robots_stored),
            failures: std::array::from_fn(|i| get(&self.failures[i])),
            returned: get(&self.returned),
            wire_bytes: get(&self.wire_bytes),
            batches_published: get(&self.batches_published),
            batch_bytes: get(&self.batch_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_class() {
        let m = Metrics::default();
        m.page_stored(100);
        m.robots_stored(10);
        m.failed(OutcomeReason::Timeout);
        m.failed(OutcomeReason::ForbiddenAddress);
        m.failed(OutcomeReason::Timeout);
        let s = m.snapshot();
        assert_eq!(s.fetches_done(), 5);
        assert_eq!(s.failures_of(OutcomeReason::Timeout), 2);
        assert_eq!(s.failures_of(OutcomeReason::ForbiddenAddress), 1);
        assert_eq!(s.wire_bytes, 110);
    }
}
