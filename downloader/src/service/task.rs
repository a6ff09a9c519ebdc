//! One fetch job, from the manager's [`protocol::FetchJob`] to its report: map it
//! onto the engine's [`FetchJob`], fetch, then hand the response to the batch
//! writer (which reports it once its records are written) or report the failure at
//! once.
//!
//! Mapping: the URL goes through [`Target::parse`] (an invalid one is reported
//! `Failed { invalid_url }` without any network traffic); `addr` is used as is (the
//! downloader never resolves); every non-zero [`FetchLimits`] value lowers the
//! config's limit for this job (zero means "the config's"); robots jobs get the
//! same treatment, so the manager's robots cap applies. `min_ip_spacing_ms` and
//! `min_host_spacing_ms` go to the engine's gates, which space the request writes
//! to one address and to one host (see `ip_gate`). The request's wire stamps go into the report's [`Timing`] and, if
//! the config names one, the wire log. `keep_alive` needs nothing:
//! the engine keeps every connection the server allows, and idle ones expire after
//! `pool_idle_timeout_ms`.
//!
//! A fetched response's digest and deflate are done here, on the runtime's worker
//! threads ([`crate::service::prepare`]), before it queues for the writer.
//!
//! This module must never report a job twice (the session keeps one entry per job
//! and drops any later report), nor write anything but through the writer.
//! O(response bytes) per job, no copy of the body.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use spool::OutcomeReason;
use spool::protocol::{
    self, FetchLimits, FetchPurpose, FetchReport, FetchResult, JobId, RetryAfter, StoredPage,
    Timing,
};
use spool::warc::WarcDate;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::error::FetchError;
use crate::fetched::{Fetched, WireTimes, unix_us};
use crate::fetcher::Fetcher;
use crate::job::{FetchJob, JobLimits, Method, Target};
use crate::limit::Permit;
use crate::service::batch::{Exchange, FetchTime, JobTag};
use crate::service::metrics::Metrics;
use crate::service::prepare::prepare;
use crate::service::wire_log::{Line, WireLog};
use crate::service::writer::{Command, Destination, Event, Store};

/// Longest failure detail sent to the manager, in bytes.
const MAX_DETAIL: usize = 512;
/// Longest `Location` value reported, in bytes; longer ones are left out.
const MAX_LOCATION: usize = 4096;

/// What every job task shares.
#[derive(Debug)]
pub(crate) struct JobEnv {
    pub fetcher: Fetcher,
    pub writer: mpsc::Sender<Command>,
    pub events: mpsc::UnboundedSender<Event>,
    pub metrics: Arc<Metrics>,
    /// Where every request's wire stamps go, if anywhere.
    pub wire_log: Option<WireLog>,
    /// Gzip level of the WARC records.
    pub gzip_level: u32,
    /// Largest robots.txt response sent in its report rather than published as a
    /// robots file (`StoredPage::response`).
    pub inline_robots_max: usize,
}

/// The engine job for a manager job.
pub(crate) fn engine_job(job: &protocol::FetchJob) -> Result<FetchJob, FetchError> {
    let target = Target::parse(&job.url)?;
    Ok(FetchJob {
        target,
        addr: job.addr,
        method: Method::Get,
        limits: job_limits(&job.limits),
        validators: job.validators.clone(),
    })
}

fn job_limits(l: &FetchLimits) -> JobLimits {
    let ms = |v: u32| (v > 0).then(|| Duration::from_millis(v.into()));
    JobLimits {
        max_body_bytes: (l.max_body_bytes > 0)
            .then(|| usize::try_from(l.max_body_bytes).unwrap_or(usize::MAX)),
        connect_timeout: ms(l.connect_timeout_ms),
        first_byte_timeout: ms(l.first_byte_timeout_ms),
        total_timeout: ms(l.total_timeout_ms),
        min_ip_spacing: ms(l.min_ip_spacing_ms),
        min_host_spacing: ms(l.min_host_spacing_ms),
    }
}

/// The jobs chained after the one a task runs (`spool::protocol::After`), each
/// after the one before, which the same task runs next: no hop through the
/// session or the manager between two of them.
#[derive(Debug)]
pub(crate) struct Chain {
    /// The chained jobs, in order (empty: none).
    pub next: Vec<protocol::FetchJob>,
    /// Cancelled when the session drains or loses its connection: the chained jobs
    /// not started are then handed back (or dropped with the connection).
    pub stop: CancellationToken,
}

/// Runs one job in the concurrency slot `permit` (released when the fetch ends),
/// then the jobs chained after it in order: each only if the fetch before it got a
/// response other than 429 or 503 and the session still runs, its `gap_ms` after
/// that response ended, in a slot of its own. Once one does not run, it and the
/// rest are reported `Returned` without a request, the last first, so that the
/// manager, putting each back at the head of its host's queue, keeps their order.
pub(crate) async fn run(
    env: Arc<JobEnv>,
    session: u64,
    job: protocol::FetchJob,
    permit: Permit,
    chain: Chain,
) {
    let mut ended = run_one(&env, session, job, permit).await;
    let Chain { next, stop } = chain;
    let mut next = next.into_iter();
    while let Some(job) = next.next() {
        let started = match ended {
            Some(at) if !stop.is_cancelled() => {
                let gap = Duration::from_millis(job.after.map_or(0, |a| a.gap_ms).into());
                if !gap.is_zero() {
                    tokio::time::sleep_until(at + gap).await;
                }
                let permit = env.fetcher.acquire().await;
                if stop.is_cancelled() {
                    None
                } else {
                    Some(permit)
                }
            }
            _ => None,
        };
        let Some(permit) = started else {
            let rest: Vec<JobId> = std::iter::once(job.job)
                .chain(next.map(|j| j.job))
                .collect();
            for job in rest.into_iter().rev() {
                hand_back(&env, session, job);
            }
            return;
        };
        ended = run_one(&env, session, job, permit).await;
    }
}

/// Reports `job` `Returned`: it was never started.
fn hand_back(env: &JobEnv, session: u64, job: JobId) {
    env.metrics.returned(1);
    let report = FetchReport {
        job,
        result: FetchResult::Returned,
    };
    let _ = env.events.send(Event::Report {
        session,
        report,
        in_batch: false,
    });
}

/// Runs one job; when its fetch got a response other than 429 or 503, the moment
/// the response ended (a job chained after it may follow).
async fn run_one(
    env: &Arc<JobEnv>,
    session: u64,
    job: protocol::FetchJob,
    permit: Permit,
) -> Option<Instant> {
    let tag = JobTag {
        session,
        job: job.job,
    };
    let engine = match engine_job(&job) {
        Ok(engine) => engine,
        Err(e) => {
            fail(env, tag, &job.url, &e);
            return None;
        }
    };
    let clock = Clock::start();
    let mut times = WireTimes::default();
    let fetched = env.fetcher.fetch_stamped(&engine, permit, &mut times).await;
    let ended = Instant::now();
    let go = fetched
        .as_ref()
        .is_ok_and(|f| !matches!(f.status(), 429 | 503));
    log_wire(env, &job, &engine, &fetched, &mut times);
    let fetched = match fetched {
        Ok(fetched) => fetched,
        Err(e) => {
            fail(env, tag, &job.url, &e);
            return None;
        }
    };
    debug!(job = %job.job, url = %job.url, status = fetched.status(), "downloader: fetched");
    if job.purpose == FetchPurpose::Robots && fetched.raw.len() <= env.inline_robots_max {
        report_robots(env, session, job.job, &fetched);
        return go.then_some(ended);
    }
    let precompressed = has_content_coding(&fetched);
    // The entity as stored in the record (chunks kept): the payload the spool's
    // `payload_digest` contract, storage and `warcio check` digest.
    let payload = fetched.raw.slice(fetched.head_len.min(fetched.raw.len())..);
    let prepared = prepare(&fetched.raw, &payload, precompressed, env.gzip_level).await;
    let store = Store {
        tag,
        app: job.app,
        destination: match job.purpose {
            FetchPurpose::Page => Destination::Page,
            FetchPurpose::Robots => Destination::Robots,
        },
        page: stored_page(&fetched),
        exchange: Exchange {
            precompressed,
            target_uri: engine.target.to_string(),
            date: clock.date(),
            ip: fetched.target_ip,
            request: fetched.request,
            payload_digest: prepared.payload_digest,
            deflated: prepared.deflated,
            raw: fetched.raw,
            truncated: fetched.truncated,
            depth: job.depth,
            hops: job.hops,
            fetch: clock.until(ended),
            protocols: fetched.protocols,
        },
    };
    if env
        .writer
        .send(Command::Store(Box::new(store)))
        .await
        .is_err()
    {
        // The writer is gone: the service is stopping. Hand the job back.
        let report = FetchReport {
            job: tag.job,
            result: FetchResult::Returned,
        };
        let _ = env.events.send(Event::Report {
            session,
            report,
            in_batch: false,
        });
        return None;
    }
    go.then_some(ended)
}

/// Reports a small robots.txt response with the response in the report: no robots
/// file, no record, no fsync; the manager reads it from the message (a new host's
/// first request waits for nothing else). Robots files are deleted once read and
/// never archived, so nothing is lost by not writing one.
fn report_robots(env: &JobEnv, session: u64, job: JobId, fetched: &Fetched) {
    let mut page = stored_page(fetched);
    page.response = Some(fetched.raw.to_vec());
    env.metrics.robots_stored(page.wire_bytes);
    let report = FetchReport {
        job,
        result: FetchResult::Stored(page),
    };
    let _ = env.events.send(Event::Report {
        session,
        report,
        in_batch: false,
    });
}

/// Appends the request's line to the wire log, if there is one.
fn log_wire(
    env: &JobEnv,
    job: &protocol::FetchJob,
    engine: &FetchJob,
    fetched: &Result<Fetched, FetchError>,
    times: &mut WireTimes,
) {
    let Some(log) = &env.wire_log else {
        return;
    };
    let result = match fetched {
        Ok(f) => f.status().to_string(),
        Err(e) => e.class().as_str().to_owned(),
    };
    if fetched.is_err() {
        times.received_us = unix_us(); // When it gave up.
    }
    let line = Line {
        job: job.job.0,
        purpose: match job.purpose {
            FetchPurpose::Page => "page",
            FetchPurpose::Robots => "robots",
        },
        addr: job.addr,
        url: &engine.target.to_string(),
        result: &result,
    };
    log.write(times, &line);
}

/// When a fetch started: its `WARC-Date` (whole seconds) and, with the moment
/// it ended, its [`FetchTime`].
struct Clock {
    wall: SystemTime,
    began: Instant,
}

impl Clock {
    fn start() -> Self {
        Self {
            wall: SystemTime::now(),
            began: Instant::now(),
        }
    }

    fn date(&self) -> WarcDate {
        WarcDate::from_system_time(self.wall)
    }

    fn until(&self, ended: Instant) -> FetchTime {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        FetchTime {
            start_ms: self
                .wall
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, ms),
            ms: ms(ended.duration_since(self.began)),
        }
    }
}

/// Reports a failed job at once.
fn fail(env: &JobEnv, tag: JobTag, url: &str, e: &FetchError) {
    let reason: OutcomeReason = e.class();
    env.metrics.failed(reason);
    debug!(job = %tag.job, url, %reason, error = %e, "downloader: fetch failed");
    let mut detail = e.to_string();
    cut(&mut detail, MAX_DETAIL);
    let report = FetchReport {
        job: tag.job,
        result: FetchResult::Failed { reason, detail },
    };
    // The receiver is gone only when the service is over.
    let _ = env.events.send(Event::Report {
        session: tag.session,
        report,
        in_batch: false,
    });
}

/// The body came with a content coding (gzip, br...): already compressed, so its
/// record is stored, not deflated again.
fn has_content_coding(f: &Fetched) -> bool {
    f.head
        .tokens("content-encoding")
        .iter()
        .any(|t| !t.eq_ignore_ascii_case("identity"))
}

/// The report of a stored response; the writer fills in `file`.
pub(crate) fn stored_page(f: &Fetched) -> StoredPage {
    let status = f.status();
    let ms = |d: Duration| u32::try_from(d.as_millis()).unwrap_or(u32::MAX);
    let connect = f.timings.connect.unwrap_or_default();
    let location = if (300..400).contains(&status) {
        f.header("location")
            .filter(|v| v.len() <= MAX_LOCATION)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    } else {
        None
    };
    let retry_after = if status == 429 || status == 503 {
        f.header("retry-after").and_then(RetryAfter::parse)
    } else {
        None
    };
    StoredPage {
        status,
        wire_bytes: f.bytes_received,
        body_bytes: f.payload.len() as u64,
        truncated: f.truncated.is_some(),
        timing: Timing {
            connect_ms: ms(connect),
            first_byte_ms: ms(connect + f.timings.first_byte),
            total_ms: ms(f.timings.total),
            sent_us: f.wire.sent_us,
            written_us: f.wire.written_us,
            received_us: f.wire.received_us,
        },
        file: String::new(),
        location,
        retry_after,
        response: None,
    }
}

/// Cuts `s` to at most `max` bytes on a char boundary.
fn cut(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_of_zero_keep_the_config() {
        let l = job_limits(&FetchLimits {
            max_body_bytes: 0,
            connect_timeout_ms: 0,
            first_byte_timeout_ms: 250,
            total_timeout_ms: 0,
            min_ip_spacing_ms: 100,
            min_host_spacing_ms: 200,
        });
        assert_eq!(
            l,
            JobLimits {
                first_byte_timeout: Some(Duration::from_millis(250)),
                min_ip_spacing: Some(Duration::from_millis(100)),
                min_host_spacing: Some(Duration::from_millis(200)),
                ..JobLimits::default()
            }
        );
    }

    #[test]
    fn cuts_on_char_boundaries() {
        let mut s = "aé".repeat(300);
        cut(&mut s, 512);
        assert!(s.len() <= 512 && s.len() >= 510);
        let mut short = "ok".to_owned();
        cut(&mut short, 512);
        assert_eq!(short, "ok");
    }
}
