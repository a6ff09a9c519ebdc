//! The values the frontier keeps in RocksDB, postcard-encoded, and their keys.
//!
//! | column family | key | value |
//! |---|---|---|
//! | `queue` | host id u64 BE ++ seq u64 BE | [`QueueEntry`] |
//! | `host` | host id u64 BE | [`HostRecord`] (only hosts with queued URLs) |
//! | `origin` | origin text (`https://example.com:8443`) | [`OriginRecord`] (robots cache, dead marks) |
//! | `outcome` | seq u64 BE | [`PendingOutcome`] (written, not yet published) |
//! | `meta` | text keys below | counters, id allocators, blacklist, request-file progress |
//!
//! There is no `inflight` family: a dispatched URL stays in `queue` at its host's head
//! (the host record's `head` points at it) until its report deletes it, so after a
//! crash exactly the URLs that were in flight are dispatched again, with no write per
//! dispatch. Job ids come from blocks reserved in `meta` (`job_ceiling`), so a
//! restarted manager never reuses the id of a job a downloader may still report.
//!
//! Big-endian integer keys sort numerically, so one host's queue is one contiguous key
//! range in FIFO order. Field order inside a record is its wire order (postcard):
//! append new fields at the end only, with `#[serde(default)]`.
//!
//! This module must never do I/O; it only names and shapes the records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use spool::{AppId, OutcomeReason};

/// `meta` key: the next request number to hand out (u64).
pub(crate) const META_NEXT_REQNO: &[u8] = b"next_reqno";
/// `meta` key: the next host id to hand out (u64).
pub(crate) const META_NEXT_HOST: &[u8] = b"next_host_id";
/// `meta` key: job ids below this were (possibly) handed out by an earlier run (u64).
pub(crate) const META_JOB_CEILING: &[u8] = b"job_ceiling";
/// `meta` key: the blacklist (`Vec<String>` in its text syntax).
pub(crate) const META_BLACKLIST: &[u8] = b"blacklist";
/// `meta` key: [`Counters`].
pub(crate) const META_COUNTERS: &[u8] = b"counters";
/// `meta` key prefix: `file/<app>/<file name>` -> [`FileProgress`].
pub(crate) const META_FILE_PREFIX: &str = "file/";

/// One queued URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct QueueEntry {
    /// Its place in the global request stream (lower = asked earlier).
    pub reqno: u64,
    /// The application that asked for it.
    pub app: AppId,
    /// The URL as requested.
    pub url: String,
    /// The `depth` hint, handed to the fetch job.
    pub depth: Option<u32>,
    /// The `via` hint, kept for logs.
    pub via: Option<String>,
    /// The `hops` hint; with `depth`, handed to the fetch job (and so written on
    /// the stored page for the application).
    #[serde(default)]
    pub hops: Option<u32>,
}

/// What must survive a crash about a host with queued URLs.
///
/// Its DNS answer and politeness timers are not kept (a restart resolves again and
/// waits one interval at most); its robots verdict lives in [`OriginRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HostRecord {
    /// `scheme://host[:port]` as the `url` crate serializes an origin.
    pub origin: String,
    /// Seq of the first queued URL (the one in flight, if any).
    pub head: u64,
    /// Seq the next URL will get; the queue is `head..tail`.
    pub tail: u64,
    /// Per-host interval from a request hint, already clamped to the floor.
    pub interval_ms: Option<u64>,
    /// Consecutive failures so far.
    pub failures: u32,
}

/// What is remembered about an origin after its host structure is gone (Polybot keeps
/// "certain information in the robots files" the same way).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OriginRecord {
    /// The last robots.txt verdict worth caching.
    pub robots: Option<CachedRobots>,
    /// URLs for the origin are dropped until this wall-clock time...
    pub dropped_until_ms: u64,
    /// ...with this outcome (dead host, name that does not exist, forbidden address).
    pub dropped_reason: Option<OutcomeReason>,
}

/// A cached robots.txt verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CachedRobots {
    /// Trusted until this wall-clock time.
    pub expires_ms: u64,
    /// `None`: allow all (4xx, or redirects gave up). `Some`: the 2xx body, capped at
    /// the parser's limit, parsed again when the host comes back.
    pub body: Option<Vec<u8>>,
}

/// An outcome written durably with the change that caused it, deleted once published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PendingOutcome {
    /// Whose URL it is.
    pub app: AppId,
    /// The URL as requested.
    pub url: String,
    /// Why it produced no page.
    pub reason: OutcomeReason,
    /// Free text for people.
    pub detail: String,
}

/// How far a claimed request file is loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileProgress {
    /// URL lines already turned into queue entries or outcomes.
    pub urls_done: u64,
    /// Every line is done; only `done()` on the claimed file remains.
    pub complete: bool,
}

/// Per-application totals, kept exact across restarts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppCounters {
    /// URLs in host queues (in flight included).
    pub queued: u64,
    /// Page responses stored.
    pub pages: u64,
    /// Outcomes written.
    pub outcomes: u64,
    /// Request files completely loaded.
    pub files_loaded: u64,
    /// URLs read from request files.
    pub urls_loaded: u64,
}

/// Totals written in the same batch as every change they count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counters {
    /// Per application.
    pub apps: BTreeMap<AppId, AppCounters>,
    /// Outcomes by reason, indexed like [`OutcomeReason::ALL`].
    pub outcomes_by_reason: Vec<u64>,
    /// robots.txt verdicts obtained (fetched, or given up on after redirects).
    pub robots_fetched: u64,
    /// Hosts declared dead.
    pub hosts_dead: u64,
}

impl Counters {
    /// The counters of `app`, created at zero.
    pub fn app(&mut self, app: &AppId) -> &mut AppCounters {
        if !self.apps.contains_key(app) {
            self.apps.insert(app.clone(), AppCounters::default());
        }
        self.apps.get_mut(app).expect("just inserted")
    }

    /// Counts one outcome of `app` for `reason`.
    pub fn outcome(&mut self, app: &AppId, reason: OutcomeReason) {
        self.app(app).outcomes += 1;
        let i = OutcomeReason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(0);
        if self.outcomes_by_reason.len() < OutcomeReason::ALL.len() {
            self.outcomes_by_reason.resize(OutcomeReason::ALL.len(), 0);
        }
        self.outcomes_by_reason[i] += 1;
    }
}

/// `queue` key of `(host, seq)`.
pub(crate) fn queue_key(host: u64, seq: u64) -> [u8; 16] {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&host.to_be_bytes());
    key[8..].copy_from_slice(&seq.to_be_bytes());
    key
}

/// Splits a `queue` key into `(host, seq)`.
pub(crate) fn split_queue_key(key: &[u8]) -> Option<(u64, u64)> {
    let host = u64::from_be_bytes(key.get(..8)?.try_into().ok()?);
    let seq = u64::from_be_bytes(key.get(8..16)?.try_into().ok()?);
    Some((host, seq))
}

/// `meta` key of a request file's progress.
pub(crate) fn file_key(app: &AppId, file_name: &str) -> Vec<u8> {
    format!("{META_FILE_PREFIX}{app}/{file_name}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_keys_sort_by_host_then_seq() {
        let mut keys = [
            queue_key(2, 0),
            queue_key(1, 300),
            queue_key(1, 2),
            queue_key(256, 1),
        ];
        keys.sort();
        let split: Vec<_> = keys.iter().map(|k| split_queue_key(k).unwrap()).collect();
        assert_eq!(split, [(1, 2), (1, 300), (2, 0), (256, 1)]);
    }

    #[test]
    fn counters_count_by_reason() {
        let app = AppId::new("bfs").unwrap();
        let mut c = Counters::default();
        c.outcome(&app, OutcomeReason::InvalidUrl);
        c.outcome(&app, OutcomeReason::InvalidUrl);
        let i = OutcomeReason::ALL
            .iter()
            .position(|r| *r == OutcomeReason::InvalidUrl)
            .unwrap();
        assert_eq!(c.outcomes_by_reason[i], 2);
        assert_eq!(c.app(&app).outcomes, 2);
    }
}
