//! The values the frontier keeps in RocksDB, postcard-encoded, and their keys.
//!
//! | column family | key | value |
//! |---|---|---|
//! | `queue` | host id u64 BE ++ seq u64 BE | [`QueueEntry`] |
//! | `host` | host id u64 BE | [`HostRecord`] (only hosts with queued URLs) |
//! | `origin` | origin text (`https://example.com:8443`) | [`OriginRecord`] (robots cache, dead marks) |
//! | `outcome` | seq u64 BE | [`PendingOutcome`] (written, not yet published) |
//! | `awaiting` | job id u64 BE | [`AwaitingPage`] (page reported `Stored`, its batch not committed yet) |
//! | `meta` | text keys below | counters, id allocators, blacklist, request-file progress |
//!
//! There is no `inflight` family: a dispatched URL stays in `queue` under its seq,
//! now below its host's `head`, until its report deletes it, and the host record
//! names the seqs in flight (`out`, written with the dispatch, as the record is
//! anyway). After a crash `open` puts exactly those URLs back at the head of their
//! queue, in seq order, so exactly the URLs that were in flight are dispatched again
//! (first), with no write per dispatch beyond the host record. Job ids come from blocks reserved in `meta` (`job_ceiling`), so a
//! restarted manager never reuses the id of a job a downloader may still report.
//!
//! A page reported `Stored` leaves its queue at once, but its batch is durable only
//! once its downloader publishes it (`Committed`). Until then the URL lives in
//! `awaiting` under its job id, written in the same batch that deletes its queue key
//! and deleted by the `Committed` that names the job (or by the requeue, when its
//! downloader goes away first): so a URL is always in `queue` or in `awaiting` until
//! its page is in a published batch, whatever dies when (see `jobs` and `report`).
//!
//! Big-endian integer keys sort numerically, so one host's queue is one contiguous key
//! range in FIFO order. Field order inside a record is its wire order (postcard):
//! append new fields at the end only. Postcard does not default a missing field
//! (`#[serde(default)]` has no effect on it), so a record that gains a field needs a
//! reader that takes its absence, as [`QueueEntry`]'s does for `hops`.
//!
//! This module must never do I/O; it only names and shapes the records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use spool::{AppId, OutcomeReason, Validators};

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

/// One queued URL. Its reader accepts entries written before `hops` existed (see
/// [`QueueEntry`]'s `Deserialize`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// the stored page for the application). Absent from entries written before it
    /// existed (read as `None`).
    pub hops: Option<u32>,
    /// The `etag` and `modified` hints, handed to the fetch job (a conditional
    /// request). Absent from entries written before it existed (read as empty).
    pub validators: Validators,
}

/// Postcard cannot default a missing field (`#[serde(default)]` does nothing for
/// it), so the entry is read by hand: the fields in order, and `hops` and
/// `validators`, the last two, as `None` and empty when the record ends before them.
impl<'de> Deserialize<'de> for QueueEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, SeqAccess, Visitor};
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = QueueEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a queue entry")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<QueueEntry, A::Error> {
                let short = |i| A::Error::invalid_length(i, &"a queue entry");
                Ok(QueueEntry {
                    reqno: seq.next_element()?.ok_or_else(|| short(0))?,
                    app: seq.next_element()?.ok_or_else(|| short(1))?,
                    url: seq.next_element()?.ok_or_else(|| short(2))?,
                    depth: seq.next_element()?.ok_or_else(|| short(3))?,
                    via: seq.next_element()?.ok_or_else(|| short(4))?,
                    // Written before the field existed: the record ends here.
                    hops: seq.next_element::<Option<u32>>().ok().flatten().flatten(),
                    validators: seq
                        .next_element::<Validators>()
                        .ok()
                        .flatten()
                        .unwrap_or_default(),
                })
            }
        }
        const FIELDS: &[&str] = &["reqno", "app", "url", "depth", "via", "hops", "validators"];
        d.deserialize_struct("QueueEntry", FIELDS, Fields)
    }
}

/// What must survive a crash about a host with queued URLs or URLs in flight.
///
/// Its DNS answer and politeness timers are not kept (a restart resolves again and
/// waits one interval at most); its robots verdict lives in [`OriginRecord`]. Its
/// reader accepts records written before `out` existed (see its `Deserialize`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct HostRecord {
    /// `scheme://host[:port]` as the `url` crate serializes an origin.
    pub origin: String,
    /// Seq of the first queued URL not dispatched yet.
    pub head: u64,
    /// Seq the next URL will get; the queue is `head..tail`.
    pub tail: u64,
    /// Per-host interval from a request hint, already clamped to the floor.
    pub interval_ms: Option<u64>,
    /// Consecutive failures so far.
    pub failures: u32,
    /// Seqs (below `head`) of the URLs in flight, at most `connections_per_host`.
    /// Absent from records written before it existed, whose URL in flight was the
    /// one at `head` (read as empty: that URL is simply queued).
    pub out: Vec<u64>,
}

/// Like [`QueueEntry`]'s: the fields in order, `out` empty when the record ends
/// before it.
impl<'de> Deserialize<'de> for HostRecord {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, SeqAccess, Visitor};
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = HostRecord;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a host record")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<HostRecord, A::Error> {
                let short = |i| A::Error::invalid_length(i, &"a host record");
                Ok(HostRecord {
                    origin: seq.next_element()?.ok_or_else(|| short(0))?,
                    head: seq.next_element()?.ok_or_else(|| short(1))?,
                    tail: seq.next_element()?.ok_or_else(|| short(2))?,
                    interval_ms: seq.next_element()?.ok_or_else(|| short(3))?,
                    failures: seq.next_element()?.ok_or_else(|| short(4))?,
                    // Written before the field existed: the record ends here.
                    out: seq
                        .next_element::<Vec<u64>>()
                        .ok()
                        .flatten()
                        .unwrap_or_default(),
                })
            }
        }
        const FIELDS: &[&str] = &["origin", "head", "tail", "interval_ms", "failures", "out"];
        d.deserialize_struct("HostRecord", FIELDS, Fields)
    }
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

/// A page reported `Stored` whose batch was not committed yet: what queuing its URL
/// again needs (the request's hints; `via`, a log hint, is not kept). Keyed by its
/// job id ([`job_key`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AwaitingPage {
    /// The application that asked for it.
    pub app: AppId,
    /// The URL as requested.
    pub url: String,
    /// The `depth` hint.
    pub depth: Option<u32>,
    /// The `hops` hint.
    pub hops: Option<u32>,
    /// The `etag` and `modified` hints.
    pub validators: Validators,
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

/// `awaiting` key of job `job`.
pub(crate) fn job_key(job: u64) -> [u8; 8] {
    job.to_be_bytes()
}

/// The job id of an `awaiting` key, if it is one.
pub(crate) fn split_job_key(key: &[u8]) -> Option<u64> {
    key.try_into().ok().map(u64::from_be_bytes)
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

#[cfg(test)]
mod compat_tests {
    use super::*;

    /// A queue entry as written before the `hops` field existed.
    #[derive(Serialize)]
    struct QueueEntryV1 {
        reqno: u64,
        app: AppId,
        url: String,
        depth: Option<u32>,
        via: Option<String>,
    }

    /// A host record as written before the `out` field existed.
    #[derive(Serialize)]
    struct HostRecordV1 {
        origin: String,
        head: u64,
        tail: u64,
        interval_ms: Option<u64>,
        failures: u32,
    }

    #[test]
    fn a_host_record_written_before_out_reads_with_nothing_out() {
        let old = HostRecordV1 {
            origin: "http://a.test".into(),
            head: 4,
            tail: 9,
            interval_ms: Some(2_000),
            failures: 1,
        };
        let bytes = postcard::to_allocvec(&old).unwrap();
        let new: HostRecord = postcard::from_bytes(&bytes).unwrap();
        assert_eq!((new.head, new.tail, new.failures), (4, 9, 1));
        assert!(new.out.is_empty());
        let now = HostRecord {
            out: vec![2, 3],
            ..new
        };
        let bytes = postcard::to_allocvec(&now).unwrap();
        assert_eq!(postcard::from_bytes::<HostRecord>(&bytes).unwrap(), now);
        assert!(postcard::from_bytes::<HostRecord>(&bytes[..3]).is_err());
    }

    #[test]
    fn a_queue_entry_written_before_hops_reads_with_none() {
        let old = QueueEntryV1 {
            reqno: 7,
            app: AppId::new("bfs").unwrap(),
            url: "http://a.test/".into(),
            depth: Some(2),
            via: None,
        };
        let bytes = postcard::to_allocvec(&old).unwrap();
        let new: QueueEntry = postcard::from_bytes(&bytes).unwrap();
        assert_eq!((new.reqno, new.depth, new.hops), (7, Some(2), None));
        assert!(new.validators.is_empty());
        let now = QueueEntry {
            hops: Some(3),
            ..new
        };
        let bytes = postcard::to_allocvec(&now).unwrap();
        assert_eq!(postcard::from_bytes::<QueueEntry>(&bytes).unwrap(), now);
        // Written with hops, before validators: read as empty validators.
        let with_hops = postcard::to_allocvec(&(
            7u64,
            "bfs",
            "http://a.test/",
            Some(2u32),
            None::<String>,
            Some(3u32),
        ))
        .unwrap();
        let read: QueueEntry = postcard::from_bytes(&with_hops).unwrap();
        assert_eq!((read.hops, read.validators.is_empty()), (Some(3), true));
        let conditional = QueueEntry {
            validators: Validators {
                etag: Some("\"e\"".into()),
                modified: Some(1),
            },
            ..now
        };
        let bytes = postcard::to_allocvec(&conditional).unwrap();
        assert_eq!(
            postcard::from_bytes::<QueueEntry>(&bytes).unwrap(),
            conditional
        );
        assert!(postcard::from_bytes::<QueueEntry>(&bytes[..4]).is_err());
    }
}
