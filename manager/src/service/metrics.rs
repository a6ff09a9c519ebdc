//! The service's counters, in one place: their names (constants, for whatever exports
//! them; the status line uses the same words) and their values ([`Metrics`]). The
//! crawl's fetch totals (requests, bytes, responses per status code, failed attempts
//! per reason) are the frontier's (`manager::FetchTotals`), kept across restarts.
//!
//! The counters live in the core loop, which is single-threaded, so they are plain
//! integers. Labels, when an exporter adds them, are low-cardinality only (role,
//! outcome reason): never a URL, a host name or a component id. They count this
//! process's life; the frontier's own counters (pages, outcomes per application)
//! survive restarts.

/// Page reports `Stored` received from downloaders.
pub const PAGES_STORED: &str = "manager_pages_stored_total";
/// Wire bytes of the stored pages and robots.txt responses reported.
pub const WIRE_BYTES: &str = "manager_wire_bytes_total";
/// Fetch jobs sent to downloaders (pages and robots.txt).
pub const JOBS_DISPATCHED: &str = "manager_jobs_dispatched_total";
/// Unreported jobs taken back from downloaders that went away.
pub const JOBS_RECLAIMED: &str = "manager_jobs_reclaimed_total";
/// Pages reported but never committed, queued again after their downloader went away.
pub const PAGES_REQUEUED: &str = "manager_pages_requeued_total";
/// robots files that could not be read (the host's robots.txt counts as unreachable).
pub const ROBOTS_UNREADABLE: &str = "manager_robots_unreadable_total";
/// `ResolveBatch` messages sent.
pub const DNS_BATCHES_SENT: &str = "manager_dns_batches_sent_total";
/// Resolve batches sent again (resolver gone or too slow).
pub const DNS_BATCHES_RESENT: &str = "manager_dns_batches_resent_total";

/// The counters' values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Metrics {
    /// [`PAGES_STORED`].
    pub pages_stored: u64,
    /// [`WIRE_BYTES`].
    pub wire_bytes: u64,
    /// [`JOBS_DISPATCHED`].
    pub jobs_dispatched: u64,
    /// [`JOBS_RECLAIMED`].
    pub jobs_reclaimed: u64,
    /// [`PAGES_REQUEUED`].
    pub pages_requeued: u64,
    /// [`ROBOTS_UNREADABLE`].
    pub robots_unreadable: u64,
    /// [`DNS_BATCHES_SENT`].
    pub dns_batches_sent: u64,
    /// [`DNS_BATCHES_RESENT`].
    pub dns_batches_resent: u64,
}

impl Metrics {
    /// Every counter with its name, for exporters and the final log line.
    pub fn named(&self) -> [(&'static str, u64); 8] {
        [
            (PAGES_STORED, self.pages_stored),
            (WIRE_BYTES, self.wire_bytes),
            (JOBS_DISPATCHED, self.jobs_dispatched),
            (JOBS_RECLAIMED, self.jobs_reclaimed),
            (PAGES_REQUEUED, self.pages_requeued),
            (ROBOTS_UNREADABLE, self.robots_unreadable),
            (DNS_BATCHES_SENT, self.dns_batches_sent),
            (DNS_BATCHES_RESENT, self.dns_batches_resent),
        ]
    }
}
