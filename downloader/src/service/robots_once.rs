//! One robots.txt job run on its own, outside a downloader session: for a process
//! that takes jobs from the manager without running the whole downloader (the URL
//! Frontier service, crate `urlfrontier`, which hands page jobs to external fetchers
//! but must fetch each host's robots.txt itself, as every downloader does).
//!
//! The job goes through the same engine mapping, fetch, record pair and robots
//! file as in a session ([`super::task`], [`super::batch`]): the file is published
//! in `robots/` before the report that names it is returned. This module must never
//! run a page job (pages go into batches, which only a session writes). O(response
//! bytes) per job.

use spool::protocol::{self, FetchPurpose, FetchReport, FetchResult};
use spool::publish::Publisher;
use std::time::SystemTime;

use crate::fetched::WireTimes;
use crate::fetcher::Fetcher;
use crate::service::batch::{Exchange, FetchTime, publish_robots};
use crate::service::prepare::prepare;
use crate::service::task::{engine_job, stored_page};

/// Fetches the robots.txt of `job` (its purpose must be [`FetchPurpose::Robots`]),
/// publishes it through `publisher` (a [`Publisher`] of `robots/`) at `gzip_level`,
/// and returns the job's report: `Stored` naming the published file, `Failed`
/// with the fetch's outcome, or `Returned` (the manager asks again) for a job that
/// is not a robots job or whose file cannot be written.
pub async fn fetch_robots(
    fetcher: &Fetcher,
    publisher: &Publisher,
    job: &protocol::FetchJob,
    gzip_level: u32,
) -> FetchReport {
    let failed = |reason: spool::OutcomeReason, detail: String| FetchReport {
        job: job.job,
        result: FetchResult::Failed { reason, detail },
    };
    let returned = FetchReport {
        job: job.job,
        result: FetchResult::Returned,
    };
    if job.purpose != FetchPurpose::Robots {
        return returned;
    }
    let engine = match engine_job(job) {
        Ok(engine) => engine,
        Err(e) => return failed(e.class(), e.to_string()),
    };
    let wall = SystemTime::now();
    let began = tokio::time::Instant::now();
    let permit = fetcher.acquire().await;
    let mut times = WireTimes::default();
    let fetched = match fetcher.fetch_stamped(&engine, permit, &mut times).await {
        Ok(f) => f,
        Err(e) => return failed(e.class(), e.to_string()),
    };
    let payload = fetched.raw.slice(fetched.head_len.min(fetched.raw.len())..);
    let prepared = prepare(&fetched.raw, &payload, false, gzip_level).await;
    let mut page = stored_page(&fetched);
    let start_ms = wall
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let exchange = Exchange {
        precompressed: false,
        target_uri: engine.target.to_string(),
        date: spool::warc::WarcDate::from_system_time(wall),
        ip: fetched.target_ip,
        request: fetched.request,
        payload_digest: prepared.payload_digest,
        deflated: prepared.deflated,
        raw: fetched.raw,
        truncated: fetched.truncated,
        protocols: fetched.protocols,
        depth: None,
        hops: None,
        fetch: FetchTime {
            start_ms,
            ms: u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
        },
    };
    match publish_robots(publisher, &exchange, gzip_level) {
        Ok(name) => {
            page.file = name;
            FetchReport {
                job: job.job,
                result: FetchResult::Stored(page),
            }
        }
        Err(e) => {
            tracing::warn!(job = %job.job, error = %e, "robots file not written; job handed back");
            returned
        }
    }
}
