//! One registered connection to the manager, from `Welcome` to its end: take
//! `FetchBatch`es, run each job as a task, send `FetchReports` and `Committed`,
//! heartbeats, obey `SetConcurrency` and `Drain`.
//!
//! One task reads and writes the connection (a `select!` loop). Jobs wait in a
//! FIFO queue of the session, in the order the manager sent them; whenever the
//! fetcher's concurrency limit has a free slot ([`Fetcher::acquire`]), the loop
//! takes the first job and starts it as a task of a [`JoinSet`] holding that slot.
//! So "not started" simply means "still in the queue". Reports and commits come
//! back through the writer's ordered [`Event`] stream; the loop coalesces whatever
//! is ready into one `FetchReports` message. Past [`MAX_QUEUED`] waiting jobs the
//! loop stops reading the connection (TCP back-pressure) until the queue shrinks.
//!
//! [`Fetcher::acquire`]: crate::Fetcher::acquire
//!
//! Rules (also in the crate docs):
//! - every job gets exactly one report on the connection it came on: the session
//!   keeps one entry per unreported job and drops any later report for it;
//! - a `Committed` names only jobs of this session already reported `Stored`, and
//!   is sent after their reports;
//! - `Drain { grace_ms }` (or the shutdown token, with [`SHUTDOWN_GRACE`]): new
//!   jobs are answered `Returned` at once; jobs not started yet are handed back
//!   `Returned` at once; running ones get the grace to finish, then are stopped and
//!   handed back `Returned`; the open batches are published and their `Committed`
//!   sent; then `Bye { Drained }` (or `ShuttingDown`);
//! - connection lost: jobs not started are dropped, running ones finish in the
//!   background (their pages are written and published with the next batches) but
//!   their reports are dropped: the manager re-dispatches every job it has no
//!   report and no commit for, so only URLs that were in flight can be fetched
//!   twice;
//! - nothing heard from the manager for its heartbeat timeout: `Bye { TimedOut }`
//!   and the connection counts as lost.
//!
//! This module must never block the loop on anything but a bounded send (every
//! send has the heartbeat timeout) or a bounded wait for the writer, nor report a
//! job twice. Cost per message: O(1) plus the size of the batch.

use std::collections::{HashMap, HashSet, VecDeque};

use std::sync::Arc;
use std::time::Duration;

use spool::protocol::{
    ByeReason, ConnReader, ConnWriter, Connection, FetchJob, FetchReport, FetchResult, JobId, Load,
    Message, ProtocolError, Welcome,
};
use tokio::sync::mpsc;
use tokio::task::{Id, JoinError, JoinSet};
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until, timeout};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::service::error::WriteError;
use crate::service::metrics::MetricsSnapshot;
use crate::service::pending::Pending;
use crate::service::task::{self, JobEnv};
use crate::service::writer::{Command, Event};

/// How long running jobs get to finish when the process is asked to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Shortest heartbeat period used, whatever the `Welcome` says.
const MIN_HEARTBEAT: Duration = Duration::from_millis(10);
/// Events handled before the reports they produced are sent.
const EVENTS_PER_SEND: usize = 1024;
/// Jobs waiting for a slot past which the session stops reading the connection.
pub const MAX_QUEUED: usize = 65_536;

/// How a session ended.
#[derive(Debug)]
pub(crate) enum End {
    /// Drained on the manager's request: the process should exit.
    Drained,
    /// Stopped by the cancellation token: the process should exit.
    ShutDown,
    /// The connection is gone (closed, broken, timed out): reconnect.
    Lost(String),
    /// The manager registered another downloader with our id: stop.
    Replaced,
    /// Writing to the spool failed: stop.
    Failed(WriteError),
}

/// Why the session is winding down, and until when jobs may still run.
#[derive(Debug)]
struct Ending {
    deadline: Instant,
    reason: ByeReason,
    /// The writer was asked to publish everything; waiting for `Flushed`.
    flushing: bool,
}

pub(crate) struct Session<'a> {
    reader: ConnReader,
    writer: ConnWriter,
    env: &'a Arc<JobEnv>,
    events: &'a mut mpsc::UnboundedReceiver<Event>,
    shutdown: &'a CancellationToken,
    session: u64,
    tasks: JoinSet<()>,
    task_jobs: HashMap<Id, JobId>,
    /// Every job of this session without a report yet (queued or running).
    pending: Pending,
    /// Jobs waiting for a slot, in the manager's order.
    queue: VecDeque<FetchJob>,
    /// Jobs reported `Stored` into a page batch that is not published yet.
    uncommitted: HashSet<JobId>,
    reports: Vec<FetchReport>,
    heartbeat: Duration,
    silence_limit: Duration,
    rate: (Instant, MetricsSnapshot),
}

impl<'a> Session<'a> {
    pub(crate) fn new(
        conn: Connection,
        welcome: &Welcome,
        session: u64,
        env: &'a Arc<JobEnv>,
        events: &'a mut mpsc::UnboundedReceiver<Event>,
        shutdown: &'a CancellationToken,
    ) -> Self {
        let (reader, writer) = conn.into_split();
        let heartbeat = Duration::from_millis(welcome.heartbeat_interval_ms).max(MIN_HEARTBEAT);
        let silence_limit = Duration::from_millis(welcome.heartbeat_timeout_ms).max(heartbeat * 2);
        Self {
            reader,
            writer,
            env,
            events,
            shutdown,
            session,
            tasks: JoinSet::new(),
            task_jobs: HashMap::new(),
            pending: Pending::default(),
            queue: VecDeque::new(),
            uncommitted: HashSet::new(),
            reports: Vec::new(),
            heartbeat,
            silence_limit,
            rate: (Instant::now(), env.metrics.snapshot()),
        }
    }

    /// Serves the connection until it ends.
    pub(crate) async fn run(mut self) -> End {
        let mut ticker = interval(self.heartbeat);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut last_heard = Instant::now();
        let mut ending: Option<Ending> = None;
        loop {
            if let Some(e) = ending
                .as_mut()
                .filter(|e| !e.flushing && self.pending.is_empty())
            {
                if let Err(end) = self.flush(e).await {
                    return end;
                }
            }
            let reading = self.queue.len() < MAX_QUEUED;
            if !reading {
                // Not reading is our choice, not the manager's silence.
                last_heard = Instant::now();
            }
            let dispatching = !self.queue.is_empty() && ending.is_none();
            let far = Instant::now() + Duration::from_secs(86_400);
            let running = ending.as_ref().filter(|e| !e.flushing);
            let grace_end = running.map_or(far, |e| e.deadline);
            let in_grace = running.is_some();
            tokio::select! {
                () = self.shutdown.cancelled(), if ending.is_none() => {
                    info!(jobs = self.pending.len(), "downloader: stopping, finishing running jobs");
                    let e = self.begin_ending(SHUTDOWN_GRACE, ByeReason::ShuttingDown);
                    ending = Some(e);
                    if let Err(lost) = self.send_reports().await {
                        return self.lost(&ending, lost);
                    }
                }
                permit = self.env.fetcher.acquire(), if dispatching => {
                    if let Some(job) = self.queue.pop_front() {
                        let id = job.job;
                        let env = Arc::clone(self.env);
                        let task = self.tasks.spawn(task::run(env, self.session, job, permit));
                        self.task_jobs.insert(task.id(), id);
                    }
                }
                () = sleep_until(grace_end), if in_grace => {
                    warn!(jobs = self.tasks.len(), "downloader: grace period over, stopping running jobs");
                    self.tasks.abort_all();
                    while self.tasks.join_next().await.is_some() {}
                    self.task_jobs.clear();
                    if let Some(e) = ending.as_mut() {
                        if let Err(end) = self.flush(e).await {
                            return end;
                        }
                    }
                }
                Some(joined) = self.tasks.join_next_with_id(), if !self.tasks.is_empty() => {
                    self.reap(joined);
                }
                Some(event) = self.events.recv() => {
                    match self.on_events(event, &ending).await {
                        Ok(None) => {}
                        Ok(Some(end)) => return end,
                        Err(lost) => return self.lost(&ending, lost),
                    }
                }
                _ = ticker.tick() => {
                    let load = self.load();
                    if let Err(e) = self.send(&Message::Heartbeat { load }).await {
                        return self.lost(&ending, format!("cannot send a heartbeat: {e}"));
                    }
                }
                () = sleep_until(last_heard + self.silence_limit), if reading => {
                    let detail = format!("nothing from the manager for {} ms", self.silence_limit.as_millis());
                    let _ = self.writer.close(ByeReason::TimedOut, &detail).await;
                    return self.lost(&ending, detail);
                }
                received = self.reader.recv(), if reading => {
                    last_heard = Instant::now();
                    let msg = match received {
                        Ok(Some(msg)) => msg,
                        Ok(None) => return self.lost(&ending, "the manager closed the connection".into()),
                        Err(e) => return self.lost(&ending, e.to_string()),
                    };
                    match self.handle(msg, &mut ending).await {
                        Ok(None) => {}
                        Ok(Some(end)) => return end,
                        Err(lost) => return self.lost(&ending, lost),
                    }
                }
            }
        }
    }

    /// Acts on one message from the manager; `Ok(Some)` ends the session, `Err`
    /// means the connection is lost.
    async fn handle(
        &mut self,
        msg: Message,
        ending: &mut Option<Ending>,
    ) -> Result<Option<End>, String> {
        match msg {
            Message::FetchBatch { jobs } => {
                if ending.is_some() {
                    info!(
                        jobs = jobs.len(),
                        "downloader: jobs received while draining, returned"
                    );
                    self.env.metrics.returned(jobs.len() as u64);
                    self.reports.extend(jobs.iter().map(|j| returned(j.job)));
                    self.send_reports().await?;
                } else {
                    jobs.into_iter().for_each(|job| self.start(job));
                }
            }
            Message::SetConcurrency { limit } => {
                self.env.fetcher.set_concurrency(limit as usize);
                info!(limit, "downloader: concurrency changed by the manager");
            }
            Message::Heartbeat { .. } => {}
            Message::Drain { grace_ms } => {
                info!(grace_ms, jobs = self.pending.len(), "downloader: draining");
                let grace = Duration::from_millis(grace_ms);
                match ending {
                    Some(e) => {
                        e.deadline = e.deadline.min(Instant::now() + grace);
                        e.reason = ByeReason::Drained;
                    }
                    None => *ending = Some(self.begin_ending(grace, ByeReason::Drained)),
                }
                self.send_reports().await?;
            }
            Message::Bye { reason, detail } => {
                if reason == ByeReason::Replaced {
                    self.abandon();
                    return Ok(Some(End::Replaced));
                }
                return Err(format!("the manager said goodbye: {reason} ({detail})"));
            }
            other => {
                let detail = format!("a downloader does not take {} messages", other.kind());
                let _ = self
                    .writer
                    .close(ByeReason::ProtocolViolation, &detail)
                    .await;
                return Err(format!(
                    "the manager sent {}; closed the connection",
                    other.kind()
                ));
            }
        }
        Ok(None)
    }

    /// Queues one job; it starts when a slot is free.
    fn start(&mut self, job: FetchJob) {
        if !self.pending.insert(job.job, &job.app) {
            warn!(job = %job.job, "downloader: the manager sent a job that is still pending; ignored");
            return;
        }
        self.queue.push_back(job);
    }

    /// A job task ended. A panic (a bug) hands its job back.
    fn reap(&mut self, joined: Result<(Id, ()), JoinError>) {
        let (id, panicked) = match joined {
            Ok((id, ())) => (id, None),
            Err(e) => (e.id(), e.is_panic().then_some(e)),
        };
        let job = self.task_jobs.remove(&id);
        if let (Some(e), Some(job)) = (panicked, job) {
            error!(%job, error = %e, "downloader: job task panicked");
            if self.pending.remove(job).is_some() {
                self.env.metrics.returned(1);
                self.reports.push(returned(job));
            }
        }
    }

    /// Handles `first` and whatever else is ready, then sends the reports.
    async fn on_events(
        &mut self,
        first: Event,
        ending: &Option<Ending>,
    ) -> Result<Option<End>, String> {
        let mut next = Some(first);
        let mut handled = 0;
        while let Some(event) = next.take() {
            if let Some(end) = self.on_event(event, ending).await? {
                return Ok(Some(end));
            }
            handled += 1;
            if handled < EVENTS_PER_SEND {
                next = self.events.try_recv().ok();
            }
        }
        self.send_reports().await?;
        if ending.is_none() {
            self.publish_idle().await?;
        }
        Ok(None)
    }

    async fn on_event(
        &mut self,
        event: Event,
        ending: &Option<Ending>,
    ) -> Result<Option<End>, String> {
        match event {
            Event::Report {
                session,
                report,
                in_batch,
            } => {
                let app = (session == self.session)
                    .then(|| self.pending.remove(report.job))
                    .flatten();
                if let Some(app) = app {
                    if in_batch {
                        self.uncommitted.insert(report.job);
                        self.pending.stored(app);
                    }
                    self.reports.push(report);
                }
            }
            Event::Committed { file, jobs } => {
                let mine: Vec<JobId> = jobs
                    .iter()
                    .filter(|t| t.session == self.session && self.uncommitted.remove(&t.job))
                    .map(|t| t.job)
                    .collect();
                if !mine.is_empty() {
                    self.send_reports().await?;
                    let msg = Message::Committed { file, jobs: mine };
                    self.send(&msg)
                        .await
                        .map_err(|e| format!("cannot send Committed: {e}"))?;
                }
            }
            Event::Flushed { session } if session == self.session => {
                let reason = ending
                    .as_ref()
                    .map_or(ByeReason::ShuttingDown, |e| e.reason);
                return Ok(Some(self.finish(reason).await));
            }
            Event::Flushed { .. } => {}
            Event::Failed(e) => {
                let detail = format!("cannot write to the spool: {e}");
                let _ = self.writer.close(ByeReason::ShuttingDown, &detail).await;
                self.abandon();
                return Ok(Some(End::Failed(e)));
            }
        }
        Ok(None)
    }

    /// Starts winding down: jobs not started yet are handed back now.
    fn begin_ending(&mut self, grace: Duration, reason: ByeReason) -> Ending {
        let waiting = self.queue.len();
        for job in self.queue.drain(..) {
            self.pending.remove(job.job);
            self.reports.push(returned(job.job));
        }
        self.env.metrics.returned(waiting as u64);
        Ending {
            deadline: Instant::now() + grace,
            reason,
            flushing: false,
        }
    }

    /// Asks the writer to publish the batch of every application that has no job
    /// pending here any more (eager when idle: see [`Pending`]).
    async fn publish_idle(&mut self) -> Result<(), String> {
        for app in self.pending.take_idle() {
            if self
                .env
                .writer
                .send(Command::Publish { app })
                .await
                .is_err()
            {
                return Err("the batch writer is gone".into());
            }
        }
        Ok(())
    }

    /// Asks the writer to publish every open batch (answered by `Flushed`).
    async fn flush(&mut self, ending: &mut Ending) -> Result<(), End> {
        ending.flushing = true;
        let flush = Command::Flush {
            session: self.session,
        };
        if self.env.writer.send(flush).await.is_err() {
            self.abandon();
            return Err(End::Failed(WriteError::Panicked));
        }
        Ok(())
    }

    /// Hands back what is left, says goodbye and ends.
    async fn finish(&mut self, reason: ByeReason) -> End {
        let left: Vec<JobId> = self.pending.drain();
        self.env.metrics.returned(left.len() as u64);
        self.reports.extend(left.iter().map(|id| returned(*id)));
        if let Err(e) = self.send_reports().await {
            warn!(error = %e, "downloader: could not send the last reports");
        }
        let detail = format!("{} running jobs handed back", left.len());
        if let Err(e) = self.writer.close(reason, &detail).await {
            info!(error = %e, "downloader: could not send Bye to the manager");
        }
        info!(%reason, detail, "downloader: left the manager");
        if reason == ByeReason::Drained {
            End::Drained
        } else {
            End::ShutDown
        }
    }

    /// The connection is gone; while ending that just means "done".
    fn lost(&mut self, ending: &Option<Ending>, why: String) -> End {
        self.abandon();
        match ending {
            Some(e) if e.reason == ByeReason::Drained => End::Drained,
            Some(_) => End::ShutDown,
            None => End::Lost(why),
        }
    }

    /// Drops the jobs not started yet and lets the running ones finish on their
    /// own (their reports go nowhere; their pages are still written).
    fn abandon(&mut self) {
        self.queue.clear();
        self.pending.drain();
        self.task_jobs.clear();
        self.tasks.detach_all();
    }

    /// Sends the reports collected so far, in one message (split only if it would
    /// exceed the frame limit).
    async fn send_reports(&mut self) -> Result<(), String> {
        if self.reports.is_empty() {
            return Ok(());
        }
        let mut parts = vec![std::mem::take(&mut self.reports)];
        while let Some(reports) = parts.pop() {
            let msg = Message::FetchReports { reports };
            match self.send(&msg).await {
                Ok(()) => {}
                Err(ProtocolError::MessageTooLarge { size, .. }) => {
                    let Message::FetchReports { mut reports } = msg else {
                        continue;
                    };
                    if reports.len() > 1 {
                        let second = reports.split_off(reports.len() / 2);
                        parts.push(second);
                        parts.push(reports);
                    } else {
                        // Only a frame limit below one report's size gets here.
                        error!(
                            size,
                            "downloader: a report exceeds the frame limit, not sent"
                        );
                    }
                }
                Err(e) => return Err(format!("cannot send reports: {e}")),
            }
        }
        Ok(())
    }

    /// Sends one message, giving up after the heartbeat timeout. (Borrows only the
    /// writer: a future holding `&Session` would not be `Send`.)
    fn send<'s>(
        &self,
        msg: &'s Message,
    ) -> impl Future<Output = Result<(), ProtocolError>> + Send + 's {
        let (writer, limit) = (self.writer.clone(), self.silence_limit);
        async move {
            match timeout(limit, writer.send(msg)).await {
                Ok(sent) => sent,
                Err(_) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into()),
            }
        }
    }

    /// The load figures for a heartbeat; rates over the time since the last one.
    fn load(&mut self) -> Load {
        let now_snapshot = self.env.metrics.snapshot();
        let now = Instant::now();
        let (then, before) = std::mem::replace(&mut self.rate, (now, now_snapshot));
        let secs = now.duration_since(then).as_secs_f64();
        let per_sec = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let fetcher = &self.env.fetcher;
        let done = now_snapshot.fetches_done() - before.fetches_done();
        Load {
            in_flight: u32::try_from(fetcher.in_flight()).unwrap_or(u32::MAX),
            concurrency: u32::try_from(fetcher.concurrency()).unwrap_or(u32::MAX),
            queued: u32::try_from(self.queue.len()).unwrap_or(u32::MAX),
            done_per_sec: per_sec(done) as f32,
            bytes_per_sec: per_sec(now_snapshot.wire_bytes - before.wire_bytes) as u64,
        }
    }
}

fn returned(job: JobId) -> FetchReport {
    FetchReport {
        job,
        result: FetchResult::Returned,
    }
}
