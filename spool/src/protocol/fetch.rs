//! Fetch assignments (manager -> downloader) and fetch reports (downloader ->
//! manager).

use std::fmt;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::RetryAfter;
use crate::ids::AppId;
use crate::outcome::OutcomeReason;
use crate::validators::Validators;

/// A fetch job, numbered by the manager; unique for the life of a manager process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct JobId(pub u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job-{}", self.0)
    }
}

/// One URL to fetch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchJob {
    /// Echoed in the report.
    pub job: JobId,
    /// The application the page belongs to (its batch goes to `pages/<app>/`).
    pub app: AppId,
    /// The absolute `http` or `https` URL, as the application requested it.
    pub url: String,
    /// Where to connect: the address the manager resolved and checked politeness
    /// for, and the port (from the URL, or 80/443). The downloader never resolves.
    pub addr: SocketAddr,
    /// Whether this is a page or the host's robots.txt.
    pub purpose: FetchPurpose,
    /// The manager expects to send another job for the same host soon: keep the
    /// connection open if the server allows it.
    pub keep_alive: bool,
    /// Caps and timeouts for this job.
    pub limits: FetchLimits,
    /// The request's `depth` hint, written on the stored response record
    /// (`Polycrawl-Depth`) for the application; `None` for robots.txt.
    pub depth: Option<u32>,
    /// The request's `hops` hint (redirects followed to reach the URL), written on
    /// the stored response record (`Polycrawl-Hops`); `None` is 0.
    pub hops: Option<u32>,
    /// The request's `etag` and `modified` hints: the downloader sends them as
    /// `If-None-Match` and `If-Modified-Since` (a recrawl); empty for an ordinary
    /// request and for robots.txt.
    pub validators: Validators,
    /// A *chained* job: the host's next URL, sent in the same batch right after the
    /// job it follows, so that the downloader can start it the moment that job's
    /// response has ended instead of waiting for the manager's next dispatch. `None`
    /// for an ordinary job. See [`After`].
    pub after: Option<After>,
}

/// When a chained job may start: only after job `job` (same host, same downloader,
/// earlier in the same `FetchBatch`) has ended with a response that is neither
/// 429 nor 503, and then no sooner than `gap_ms` after the end of that response
/// (the host's politeness interval, end to start, as the manager would have kept).
/// If `job` failed, was throttled, or was never run, the chained job is not sent:
/// it is reported `Returned` and the manager decides again. A chained job may be
/// followed by another in turn (a chain, for hosts with no interval): each waits
/// for the one before it, and once one is not sent, neither are those after it.
/// So at most one request per host is on the wire at a time, as with ordinary jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct After {
    /// The job it follows.
    pub job: JobId,
    /// Least time from the end of that job's response to this job's first byte.
    pub gap_ms: u32,
}

/// Why a URL is fetched; decides where the downloader stores the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FetchPurpose {
    /// A page for the application: stored in a batch under `pages/<app>/`.
    Page,
    /// A robots.txt for the manager: stored under `robots/`, and reported only after
    /// that file is published.
    Robots,
}

/// Per-job caps and timeouts, chosen by the manager (robots.txt has its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchLimits {
    /// Largest decoded body kept; longer bodies are truncated and marked.
    pub max_body_bytes: u64,
    /// Timeout for the TCP (and TLS) connection, in milliseconds.
    pub connect_timeout_ms: u32,
    /// Timeout from request sent to first response byte, in milliseconds.
    pub first_byte_timeout_ms: u32,
    /// Timeout for the whole fetch, connect included, in milliseconds.
    pub total_timeout_ms: u32,
    /// The least time between the starts of two requests to this job's IP address,
    /// in milliseconds (0: none). The manager spaces its dispatches by it; the
    /// downloader holds a job that would start sooner after the previous one to that
    /// address (a job can wait in its queue and then start close to the next).
    pub min_ip_spacing_ms: u32,
    /// The least time between the starts of two requests to this job's host
    /// (origin), in milliseconds (0: none). Set when the manager lets several
    /// requests of a host be in flight at once (`connections_per_host` above 1),
    /// whose interval then runs from start to start: the downloader spaces its
    /// request writes to the host by it, as it does per address.
    pub min_host_spacing_ms: u32,
}

/// How one job ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchReport {
    /// The job reported on.
    pub job: JobId,
    /// What happened.
    pub result: FetchResult,
}

/// The result of one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FetchResult {
    /// An HTTP response (of any status, 3xx and 5xx included) was stored.
    Stored(StoredPage),
    /// No response was stored; the URL ends with (or is retried after) this outcome.
    Failed {
        /// The outcome, from the shared vocabulary.
        reason: OutcomeReason,
        /// Human-readable detail ("connection refused", "tls: certificate expired").
        detail: String,
    },
    /// The downloader never started the job (it is draining or over its limit);
    /// the manager queues it again without counting a failure.
    Returned,
}

/// A response that was written to the spool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPage {
    /// HTTP status code.
    pub status: u16,
    /// Response bytes read from the socket, headers included, before decoding.
    pub wire_bytes: u64,
    /// Body bytes stored: the payload as received (chunking removed, content coding
    /// kept: the downloader does not decode what it archives), after truncation.
    pub body_bytes: u64,
    /// The body was cut at `max_body_bytes`, or by the server closing early.
    pub truncated: bool,
    /// How long the fetch took.
    pub timing: Timing,
    /// Name of the spool file holding the record: a page batch in `pages/<app>/`
    /// (possibly not yet published; batches rotate by size and age) or a published
    /// file in `robots/`; empty when the response travels in `response`.
    pub file: String,
    /// The `Location` header of a 3xx response, as sent by the server.
    pub location: Option<String>,
    /// The `Retry-After` header of a 429 or 503 response, when it parses (the
    /// manager backs the host off by it, up to its cap).
    pub retry_after: Option<RetryAfter>,
    /// A robots.txt response of at most [`INLINE_ROBOTS_MAX`] bytes, as received
    /// (head and body, chunked or content-coded as sent: what a robots file's
    /// `response` record would hold). It travels in the report, so no robots file
    /// is written (`file` is empty): a small message, not bulk data. `None` for
    /// pages and for larger robots.txt responses, which go through `robots/`.
    pub response: Option<Vec<u8>>,
}

/// Largest robots.txt response a downloader puts in its report
/// ([`StoredPage::response`]) rather than in a robots file. Nearly every robots.txt
/// is smaller; the report stays far below any sane frame limit.
pub const INLINE_ROBOTS_MAX: usize = 64 * 1024;

/// Fetch timings: durations in milliseconds from the start of the job, and the
/// wire stamps politeness is judged on.
///
/// The stamps are unix microseconds of the downloader's system clock
/// (`CLOCK_REALTIME`), read so that gaps measured from them are never longer than
/// the real ones: `sent_us` right before the request's first byte was written,
/// `written_us` right after its last byte was handed to the kernel, `received_us`
/// right after the response's last byte was read. The request to a host ends at
/// `received_us`: the manager's rest of the host's interval starts no earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// Until the connection was ready (0 when a kept-alive connection was reused).
    pub connect_ms: u32,
    /// Until the first response byte.
    pub first_byte_ms: u32,
    /// Until the response was complete.
    pub total_ms: u32,
    /// Unix µs, before the request's first byte was written.
    pub sent_us: u64,
    /// Unix µs, after the request's last byte was handed to the kernel.
    pub written_us: u64,
    /// Unix µs, after the response's last byte was read.
    pub received_us: u64,
}
