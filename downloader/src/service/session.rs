//! The downloader's role on a manager connection: take `FetchBatch`es, run each job
//! as a task, send `FetchReports` and `Committed`, obey `SetConcurrency` and
//! `Drain`. The connection itself (connect, heartbeats, silence, drain grace,
//! reconnect) is the shared driver's (`spool::protocol::client::run`).
//!
//! The driver's loop reads the connection; [`DownloaderRole::next_work`] is its
//! other input (a free slot, a finished task, a writer event). Jobs wait in a
//! FIFO queue of the session, in the order the manager sent them; whenever the
//! fetcher's concurrency limit has a free slot ([`Fetcher::acquire`]), the loop
//! takes the first job and starts it as a task of a
//! [`JoinSet`](tokio::task::JoinSet) (in `jobs.rs`) holding that slot.
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
//! - a `Committed` names jobs of this session already reported `Stored`, sent after
//!   their reports, and jobs of earlier sessions (connections) stored in the batch:
//!   their connection was lost before the batch was published, so they were never
//!   named. A manager that restarted keeps such pages until a downloader claims
//!   them this way (or queues their URLs again after a wait); one that did not
//!   restart queued them again when the connection was lost and ignores the
//!   names. Each batch is announced once, on the connection up when its
//!   publication is handled (events wait while no connection is up);
//! - `Drain { grace_ms }` (or the shutdown token, with `control.shutdown_grace`): a
//!   `Status` saying `draining` goes out first, so the manager sends no more jobs;
//!   new jobs are answered `Returned` at once; jobs not started yet are handed back
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

use std::sync::Arc;

use spool::protocol::client::{ClientRole, Link, Step};
use spool::protocol::{
    ByeReason, ComponentState, FetchJob, JobId, Load, Message, ProtocolError, Role, Welcome,
};
use tokio::sync::mpsc;
use tokio::task::{Id, JoinError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use crate::limit::Permit;
use crate::service::error::WriteError;
use crate::service::jobs::{Running, Waiting};
use crate::service::metrics::MetricsSnapshot;
use crate::service::pending::Pending;
use crate::service::task::{self, Chain, JobEnv};
use crate::service::unsent::Unsent;
use crate::service::writer::{Command, Event};

/// Events handled before the reports they produced are sent.
const EVENTS_PER_SEND: usize = 1024;
/// Jobs waiting for a slot past which the session stops reading the connection.
pub const MAX_QUEUED: usize = 65_536;

/// The downloader's own inputs besides the connection.
pub(crate) enum Work {
    /// A concurrency slot is free for the first queued job.
    Slot(Permit),
    /// A job task ended.
    Joined(Result<(Id, ()), JoinError>),
    /// The writer reported something.
    Event(Event),
}

/// What a downloader does on a manager connection; per-connection state is reset
/// in [`ClientRole::on_connected`].
pub(crate) struct DownloaderRole<'a> {
    env: &'a Arc<JobEnv>,
    events: &'a mut mpsc::UnboundedReceiver<Event>,
    /// The connection's number (job ids are only unique within one connection).
    session: u64,
    /// Job tasks running.
    running: Running,
    /// Every job of this session without a report yet (queued or running).
    pending: Pending,
    /// Jobs not started: queued for a slot, or chained after a job (pending too).
    waiting: Waiting,
    /// Cancelled when this connection drains or is lost: chained jobs inside
    /// running tasks are then not started.
    chain_stop: CancellationToken,
    /// Reports not sent yet, and stored jobs whose commit is not sent yet.
    unsent: Unsent,
    /// Winding down: no job is started any more.
    draining: bool,
    /// The writer was asked to publish everything; waiting for `Flushed`.
    flushing: bool,
    rate: (Instant, MetricsSnapshot),
    /// What the writer last said about its state (told to every new connection).
    state: ComponentState,
}

impl<'a> DownloaderRole<'a> {
    pub(crate) fn new(
        env: &'a Arc<JobEnv>,
        events: &'a mut mpsc::UnboundedReceiver<Event>,
    ) -> Self {
        Self {
            env,
            events,
            session: 0,
            running: Running::default(),
            pending: Pending::default(),
            waiting: Waiting::default(),
            chain_stop: CancellationToken::new(),
            unsent: Unsent::default(),
            draining: false,
            flushing: false,
            rate: (Instant::now(), env.metrics.snapshot()),
            state: ComponentState::default(),
        }
    }
}

impl ClientRole for DownloaderRole<'_> {
    type Work = Work;
    type Error = WriteError;
    const ROLE: Role = Role::Downloader;
    const NAME: &'static str = "downloader";

    async fn on_connected(
        &mut self,
        link: &Link,
        _welcome: &Welcome,
        session: u64,
    ) -> Result<(), ProtocolError> {
        self.session = session;
        self.chain_stop = CancellationToken::new();
        self.unsent.clear();
        self.draining = false;
        self.flushing = false;
        self.rate = (Instant::now(), self.env.metrics.snapshot());
        self.state.draining = false;
        if self.state != ComponentState::default() {
            link.send(&Message::Status(Box::new(self.state.clone())))
                .await?;
        }
        Ok(())
    }

    fn reading(&self) -> bool {
        self.waiting.queued() < MAX_QUEUED
    }

    fn in_flight(&self) -> usize {
        self.pending.len()
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
            queued: u32::try_from(self.waiting.queued()).unwrap_or(u32::MAX),
            done_per_sec: per_sec(done) as f32,
            bytes_per_sec: per_sec(now_snapshot.wire_bytes - before.wire_bytes) as u64,
        }
    }

    async fn next_work(&mut self) -> Work {
        let dispatching = self.waiting.queued() > 0 && !self.draining;
        let running = !self.running.is_empty();
        tokio::select! {
            permit = self.env.fetcher.acquire(), if dispatching => Work::Slot(permit),
            Some(joined) = self.running.join_next(), if running => Work::Joined(joined),
            Some(event) = self.events.recv() => Work::Event(event),
            // The events sender lives in `env`: the channel never closes.
            else => std::future::pending().await,
        }
    }

    async fn on_work(&mut self, link: &Link, work: Work) -> Step<WriteError> {
        match work {
            Work::Slot(permit) => {
                if let Some((job, chained)) = self.waiting.next() {
                    let mut ids = vec![job.job];
                    ids.extend(chained.iter().map(|j| j.job));
                    let chain = Chain {
                        next: chained,
                        stop: self.chain_stop.clone(),
                    };
                    let env = Arc::clone(self.env);
                    let task = task::run(env, self.session, job, permit, chain);
                    self.running.spawn(ids, task);
                }
                Step::Continue
            }
            Work::Joined(joined) => {
                self.reap(joined);
                Step::Continue
            }
            Work::Event(event) => self.on_events(link, event).await,
        }
    }

    async fn on_message(&mut self, link: &Link, msg: Message) -> Step<WriteError> {
        match msg {
            Message::FetchBatch { jobs } => {
                if self.draining {
                    info!(
                        jobs = jobs.len(),
                        "downloader: jobs received while draining, returned"
                    );
                    self.env.metrics.returned(jobs.len() as u64);
                    jobs.iter().for_each(|j| self.unsent.returned(j.job));
                    return self.send_reports(link).await;
                }
                jobs.into_iter().for_each(|job| self.start(job));
                Step::Continue
            }
            Message::SetConcurrency { limit } => {
                self.env.fetcher.set_concurrency(limit as usize);
                info!(limit, "downloader: concurrency changed by the manager");
                Step::Continue
            }
            other => Step::Unexpected(other.kind()),
        }
    }

    /// Jobs not started yet are handed back now, and the manager is told that
    /// this downloader takes no new jobs: without that, a downloader that stops
    /// on its own (SIGTERM) is sent jobs until it leaves, hands each back, and is
    /// sent them again.
    async fn begin_drain(&mut self, link: &Link) -> Step<WriteError> {
        self.draining = true;
        self.chain_stop.cancel(); // Chained jobs in running tasks come back too.
        self.state.draining = true;
        if let lost @ Step::Lost(_) = self.send_state(link).await {
            return lost;
        }
        let waiting = self.waiting.drain();
        for job in &waiting {
            self.pending.remove(job.job);
            self.unsent.returned(job.job);
        }
        self.env.metrics.returned(waiting.len() as u64);
        self.send_reports(link).await
    }

    /// Once no job is pending, the writer publishes every open batch.
    async fn wind_down(&mut self, _link: &Link) -> Step<WriteError> {
        if !self.flushing && self.pending.is_empty() {
            return self.flush().await;
        }
        Step::Continue
    }

    /// Running jobs are stopped (handed back once the batches are published).
    async fn grace_over(&mut self, _link: &Link) -> Step<WriteError> {
        if self.flushing {
            return Step::Continue;
        }
        self.running.abort_all().await;
        self.flush().await
    }

    /// Drops the jobs not started yet and lets the running ones finish on their
    /// own (their reports go nowhere; their pages are still written).
    fn on_disconnected(&mut self) {
        self.chain_stop.cancel();
        self.waiting.clear();
        self.pending.drain();
        self.running.detach_all();
    }
}

impl DownloaderRole<'_> {
    /// Queues one job; it starts when a slot is free. A chained job waits for the
    /// job it follows (earlier in the same batch) to end; if that one is not
    /// pending here, or already has a job chained after it, it is handed back.
    fn start(&mut self, job: FetchJob) {
        if !self.pending.insert(job.job, &job.app) {
            warn!(job = %job.job, "downloader: the manager sent a job that is still pending; ignored");
            return;
        }
        match job.after {
            None => self.waiting.push(job),
            Some(after) => {
                // If the job it follows started already (not the manager's way:
                // both come in one batch), its report hands this one back.
                let refused = if self.pending.contains(after.job) {
                    self.waiting.hold(after.job, job)
                } else {
                    Some(job)
                };
                if let Some(job) = refused {
                    debug!(job = %job.job, after = %after.job, "downloader: chained job with no job to follow, returned");
                    self.hand_back(job.job);
                }
            }
        }
    }

    /// A job is handed back unstarted (`Returned`).
    fn hand_back(&mut self, job: JobId) {
        if self.pending.remove(job).is_some() {
            self.env.metrics.returned(1);
            self.unsent.returned(job);
        }
    }

    /// Job `job` was reported while a job chained after it is still held here (it
    /// started before that one came, or never ran): that one is handed back.
    fn release(&mut self, job: JobId) {
        if let Some(next) = self.waiting.release(job) {
            self.hand_back(next.job);
        }
    }

    /// A job task ended. A panic (a bug) hands back its jobs not reported yet,
    /// the last of its chain first (so the manager queues them in order).
    fn reap(&mut self, joined: Result<(Id, ()), JoinError>) {
        if let Some((jobs, e)) = self.running.reap(joined) {
            let first = jobs.first().copied();
            error!(job = ?first, error = %e, "downloader: job task panicked");
            for job in jobs.into_iter().rev() {
                self.release(job);
                self.hand_back(job);
            }
        }
    }

    /// Handles `first` and whatever else is ready, then sends the reports.
    async fn on_events(&mut self, link: &Link, first: Event) -> Step<WriteError> {
        let mut next = Some(first);
        let mut handled = 0;
        while let Some(event) = next.take() {
            match self.on_event(link, event).await {
                Step::Continue => {}
                other => return other,
            }
            handled += 1;
            if handled < EVENTS_PER_SEND {
                next = self.events.try_recv().ok();
            }
        }
        match self.send_reports(link).await {
            Step::Continue if !self.draining => self.publish_idle().await,
            other => other,
        }
    }

    async fn on_event(&mut self, link: &Link, event: Event) -> Step<WriteError> {
        match event {
            Event::Report {
                session,
                report,
                in_batch,
            } => {
                if session == self.session {
                    self.release(report.job);
                }
                let app = (session == self.session)
                    .then(|| self.pending.remove(report.job))
                    .flatten();
                if let Some(app) = app {
                    if in_batch {
                        self.pending.stored(app);
                    }
                    self.unsent.report(report, in_batch);
                }
            }
            Event::Committed { file, jobs } => {
                // This connection's jobs once reported; an earlier connection's all:
                // that connection is gone, so no `Committed` named them, and a
                // manager that restarted meanwhile waits for it (see the module
                // docs). The writer announces each batch once.
                let mine: Vec<JobId> = jobs
                    .iter()
                    .filter(|t| t.session != self.session || self.unsent.commit(t.job))
                    .map(|t| t.job)
                    .collect();
                if !mine.is_empty() {
                    if let lost @ Step::Lost(_) = self.send_reports(link).await {
                        return lost;
                    }
                    let msg = Message::Committed { file, jobs: mine };
                    if let Err(e) = link.send(&msg).await {
                        return Step::Lost(format!("cannot send Committed: {e}"));
                    }
                }
            }
            Event::Flushed { session } if session == self.session => {
                return self.finish(link).await;
            }
            Event::Flushed { .. } => {}
            Event::Pause(pause) => {
                self.state.pause = pause;
                if let lost @ Step::Lost(_) = self.send_state(link).await {
                    return lost;
                }
            }
            Event::Failed(e) => {
                let detail = format!("cannot write to the spool: {e}");
                let _ = link.close(ByeReason::ShuttingDown, &detail).await;
                return Step::Fail(e);
            }
        }
        Step::Continue
    }

    /// Asks the writer to publish the batch of every application that has no job
    /// pending here any more (eager when idle: see [`Pending`]).
    async fn publish_idle(&mut self) -> Step<WriteError> {
        for app in self.pending.take_idle() {
            match self.env.writer.try_send(Command::Publish { app }) {
                Ok(()) => {}
                // The writer is busy or paused (spool full): never wait for it
                // here (that would stop heartbeats); the hint follows later.
                Err(mpsc::error::TrySendError::Full(hint)) => {
                    let writer = self.env.writer.clone();
                    tokio::spawn(async move { writer.send(hint).await });
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    return Step::Lost("the batch writer is gone".into());
                }
            }
        }
        Step::Continue
    }

    /// Asks the writer to publish every open batch (answered by `Flushed`).
    async fn flush(&mut self) -> Step<WriteError> {
        self.flushing = true;
        let flush = Command::Flush {
            session: self.session,
        };
        match self.env.writer.send(flush).await {
            Ok(()) => Step::Continue,
            Err(_) => Step::Fail(WriteError::Stopped),
        }
    }

    /// Hands back what is left; the driver says goodbye.
    async fn finish(&mut self, link: &Link) -> Step<WriteError> {
        let left: Vec<JobId> = self.pending.drain();
        self.env.metrics.returned(left.len() as u64);
        left.iter().for_each(|id| self.unsent.returned(*id));
        if let Step::Lost(e) = self.send_reports(link).await {
            warn!(error = %e, "downloader: could not send the last reports");
        }
        Step::Leave(format!("{} running jobs handed back", left.len()))
    }

    /// Tells the manager this downloader's state (paused, draining).
    async fn send_state(&self, link: &Link) -> Step<WriteError> {
        match link
            .send(&Message::Status(Box::new(self.state.clone())))
            .await
        {
            Ok(()) => Step::Continue,
            Err(e) => Step::Lost(format!("cannot send Status: {e}")),
        }
    }

    /// Sends the reports collected so far, in one message (split only if it would
    /// exceed the frame limit).
    async fn send_reports(&mut self, link: &Link) -> Step<WriteError> {
        let reports = self.unsent.take_reports();
        if reports.is_empty() {
            return Step::Continue;
        }
        let mut parts = vec![reports];
        while let Some(reports) = parts.pop() {
            let msg = Message::FetchReports { reports };
            match link.send(&msg).await {
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
                Err(e) => return Step::Lost(format!("cannot send reports: {e}")),
            }
        }
        Step::Continue
    }
}
