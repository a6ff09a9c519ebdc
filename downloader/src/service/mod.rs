//! The downloader service (`polycrawl downloader`): registers with the crawl
//! manager, runs the fetch jobs it is sent on the [`Fetcher`], writes the pages as
//! WARC into page batches published to `pages/<app>/` (robots.txt into `robots/`),
//! and reports every job back.
//!
//! # Contract with the manager
//!
//! - **Registration**: TCP to `control.manager_addr`, `Hello` with role
//!   `Downloader`, this downloader's id and the token. A refusal (wrong token,
//!   other protocol version) ends [`run`] with the manager's reason; a lost or
//!   unreachable manager is retried with exponential back-off (200 ms doubling to
//!   10 s, with jitter), because the manager may restart. Heartbeats go out every
//!   `heartbeat_interval_ms` of the `Welcome` with fetches in flight, the
//!   concurrency limit, jobs waiting for a slot, fetches done per second and wire
//!   bytes per second.
//! - **Jobs**: each job of a `FetchBatch` becomes a task; at most `concurrency`
//!   fetch at once (the engine's resizable limit; `SetConcurrency` changes it at
//!   once, lowering never interrupts a running fetch). Every job gets exactly one
//!   report on the connection it came on:
//!   - page fetched (any status): its `response` and `request` records are written
//!     into the open batch of its application, then `Stored` is reported at once
//!     (with status, wire and body bytes, truncation, timing, the batch's name and
//!     the `Location` of a 3xx) so the manager can apply politeness; the page is
//!     durable only once the batch is published, which `Committed { file, jobs }`
//!     announces right after the rename;
//!   - robots.txt fetched: a file of its own in `robots/` is published first, then
//!     `Stored` names it (the manager reads the body from it);
//!   - no response: `Failed { reason, detail }` at once, the reason from
//!     [`FetchError::class`](crate::FetchError::class) (`invalid_url` for a URL the
//!     engine cannot parse, `forbidden_address` for a non-public address unless
//!     `allow_private`, ...);
//!   - not run (draining, stopping): `Returned`.
//! - **Chained jobs** (`FetchJob::after`): a host's next URL sent with the job it
//!   follows, in the same batch. The task that runs that job takes it along and,
//!   if the answer was a response other than 429 or 503, runs it `gap_ms` after
//!   that response ended, in a concurrency slot of its own; otherwise (a failure,
//!   a back-off answer, no fetch at all, a drain or a lost connection) it is
//!   reported `Returned` without a request. One request per host on the wire, as
//!   before; what it saves is the round trip through the session and the manager
//!   between the two.
//! - **Drain { grace_ms }**: new jobs are answered `Returned`; jobs still waiting
//!   for a slot are returned at once; running ones get `grace_ms` to finish and
//!   are then stopped and returned; open batches are published and committed;
//!   then `Bye { Drained }` and [`run`] returns `Ok(())`. Cancelling the shutdown
//!   token (SIGINT/SIGTERM in `polycrawl`) does the same with `control.shutdown_grace` ([`SHUTDOWN_GRACE`] by default) and
//!   `Bye { ShuttingDown }`. Either way a `Status` saying `draining` goes out
//!   first, and the manager sends this downloader no more jobs.
//! - **Connection lost**: the manager treats every job it has no report for, and
//!   every page it has no `Committed` for, as not done and dispatches it again. So
//!   the downloader starts each connection fresh: jobs not started are dropped,
//!   running ones finish and their pages are written and published (the
//!   application may get them twice), their reports are dropped. Only URLs that
//!   were in flight can be fetched twice. When such a batch is published, its
//!   `Committed` goes out on the next connection, naming the earlier connection's
//!   jobs too: a manager that restarted in between (job ids are unique across its
//!   restarts on the same state) keeps their pages as awaiting a commit from any
//!   downloader for a while, and takes this one instead of fetching them again.
//! - **Spool full**: the writer pauses (no new fetch starts, nothing fetched is
//!   dropped), says so in the log and to the manager (`Message::Status`, sent when
//!   it changes and after every `Welcome`; the admin page shows it), retries with a
//!   back-off and resumes by itself (design in `writer.rs`).
//! - `Bye { Replaced }` (another downloader registered with our id) and any other
//!   spool write failure end [`run`] with an error: retrying cannot help.
//!
//! # Threads and memory
//!
//! Sockets run on the caller's tokio runtime; all file I/O and WARC compression
//! run on one dedicated writer thread fed by a bounded channel (`writer.rs`, design
//! in its docs), so writing a batch never blocks the runtime. Memory is bounded by
//! (concurrency + [`WRITER_QUEUE`]) × `max_body_bytes`, plus one write buffer per
//! open batch.
//!
//! # Modules
//!
//! [`config`] (the `downloader:` config section; the manager address, id and
//! back-off are `spool::protocol::client`), `session.rs` (the downloader's role on a manager connection, for the shared
//! session driver `spool::protocol::client::run`), `task.rs` (one job),
//! `wire_log.rs` (the per-request stamps, if configured),
//! `writer.rs` (the writer thread), `batch.rs` (WARC files: what the records and
//! files hold), [`metrics`] (counters), [`error`].
//!
//! # What this service must never do
//!
//! - resolve a crawled name (the manager sends addresses), follow a redirect, or
//!   connect to a non-public address without `allow_private`;
//! - make a batch visible before it is complete (only `PendingFile::commit`
//!   publishes: temp file, fsync, rename, fsync folder);
//! - send `Committed` for a job before its report, or report a job twice;
//! - block a tokio worker on disk I/O, or let work pile up unbounded.

mod batch;
pub mod config;
pub mod error;
mod jobs;
pub mod metrics;
mod pending;
mod prepare;
mod robots_once;
mod session;
mod task;
mod unsent;
mod wire_log;
mod writer;

use std::sync::Arc;

use spool::Spool;
use spool::protocol::client::{self, ControlSettings, Stop};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::fetcher::Fetcher;
use config::DownloaderConfig;
use error::DownloaderError;
use metrics::Metrics;
pub use robots_once::fetch_robots;
use session::DownloaderRole;
pub use session::MAX_QUEUED;
pub use spool::protocol::client::SHUTDOWN_GRACE;
use task::JobEnv;
use wire_log::WireLog;
pub use writer::QUEUE as WRITER_QUEUE;
use writer::{Event, WriterHandle, WriterSettings};

/// Runs the downloader until `shutdown` is cancelled or the manager drains it
/// (`Ok(())` in both cases, after publishing every open batch); `Err` when it
/// cannot start or must stop (see [`DownloaderError`]).
pub async fn run(
    config: &DownloaderConfig,
    control: ControlSettings,
    spool: Spool,
    shutdown: CancellationToken,
) -> Result<(), DownloaderError> {
    config.validate()?;
    let fetcher = Fetcher::new(config.fetcher_config()?)?;
    let metrics = Arc::new(Metrics::default());
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let settings = WriterSettings {
        spool,
        producer: control.id.clone(),
        gzip_level: config.gzip_level,
        max_batch_bytes: config.max_batch_bytes,
        max_batch_age: config.max_batch_age(),
        user_agent: config.user_agent(),
    };
    let wire_log = match &config.wire_log {
        Some(path) => {
            Some(WireLog::open(path, control.id.as_str()).map_err(DownloaderError::WireLog)?)
        }
        None => None,
    };
    let writer = WriterHandle::spawn(
        settings,
        events_tx.clone(),
        Arc::clone(&metrics),
        shutdown.child_token(),
    )?;
    let env = Arc::new(JobEnv {
        fetcher,
        writer: writer.sender(),
        events: events_tx,
        metrics: Arc::clone(&metrics),
        wire_log,
        gzip_level: config.gzip_level,
        // A report with a robots.txt in it stays within an eighth of a frame.
        inline_robots_max: spool::protocol::INLINE_ROBOTS_MAX
            .min(usize::try_from(control.max_frame / 8).unwrap_or(usize::MAX)),
    });
    info!(
        id = %control.id,
        manager = %control.manager_addr,
        concurrency = config.concurrency,
        "downloader: starting"
    );
    let served = serve(&env, &control, &mut events, &shutdown).await;
    let stopped = writer.shutdown().await;
    // A publish that failed while stopping is reported as an event.
    let mut late = None;
    while let Ok(event) = events.try_recv() {
        if let Event::Failed(e) = event {
            late.get_or_insert(e);
        }
    }
    let m = metrics.snapshot();
    info!(
        pages = m.pages_stored,
        robots = m.robots_stored,
        failures = m.failures.iter().sum::<u64>(),
        returned = m.returned,
        batches = m.batches_published,
        "downloader: stopped"
    );
    served?;
    stopped?;
    late.map_or(Ok(()), |e| Err(e.into()))
}

/// Registers and serves connections through the shared session driver,
/// reconnecting, until the service must stop.
async fn serve(
    env: &Arc<JobEnv>,
    control: &ControlSettings,
    events: &mut mpsc::UnboundedReceiver<Event>,
    shutdown: &CancellationToken,
) -> Result<(), DownloaderError> {
    let mut role = DownloaderRole::new(env, events);
    match client::run(control, &mut role, shutdown).await {
        Ok(_) => Ok(()),
        Err(Stop::Refused(source)) => Err(DownloaderError::Refused {
            manager: control.manager_addr.clone(),
            source,
        }),
        Err(Stop::Replaced) => Err(DownloaderError::Replaced {
            id: control.id.to_string(),
        }),
        Err(Stop::Role(e)) => Err(e.into()),
    }
}
