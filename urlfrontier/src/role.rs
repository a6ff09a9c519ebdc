//! The frontier toward the manager: registered as a downloader, it takes the
//! manager's `FetchBatch`es, keeps page jobs in the [`Queues`] for `GetURLs`, runs
//! robots.txt jobs itself (the downloader's library: `downloader::fetch_robots`,
//! published in `robots/` before the report), and sends each job's one report.
//!
//! A page job's report is `Stored` once a fetcher says the URL is done (a
//! `KnownURLItem`), with the status it gives (`fetch.statusCode` or `status` in the
//! metadata, else 200) and the lease's times as the fetch's: the manager rests the
//! host from then, and a 429 or 503 backs it off as from a downloader. Its
//! `Committed` follows at once: the page is stored by the external fetcher, not in
//! the spool, so there is no batch to wait for ([`crate::EXTERNAL_FILE`]).
//!
//! This module must never report a job twice or on another connection than the
//! one it came on (a report of an earlier session is dropped: the manager took
//! that job back when the session ended), nor block the session driver. O(1) per
//! message plus the queues' costs.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use downloader::Fetcher;
use spool::OutcomeReason;
use spool::protocol::client::{ClientRole, Link, Step};
use spool::protocol::{
    FetchJob, FetchPurpose, FetchReport, FetchResult, Load, Message, ProtocolError, Role, Welcome,
};
use spool::publish::Publisher;
use tokio::sync::mpsc;
use tokio::time::{Interval, MissedTickBehavior};

use crate::queues::{Held, Queues};
use crate::{EXTERNAL_FILE, unix_ms};

/// How often leases are checked for expiry.
pub const TICK: Duration = Duration::from_millis(250);

/// A report on its way to the manager, tagged with the session of its job.
#[derive(Debug)]
pub struct Outbound {
    /// The session the job came on.
    pub session: u64,
    /// The report.
    pub report: FetchReport,
}

/// What the gRPC side and the role share.
#[derive(Debug)]
pub struct Shared {
    /// The jobs and leases.
    pub queues: Mutex<Queues>,
    /// Reports to send.
    pub outbox: mpsc::UnboundedSender<Outbound>,
}

impl Shared {
    /// Runs `f` on the queues (a poisoned lock is taken as is: the table has no
    /// invariant a panic in between could break worse than losing a lease).
    pub fn with<T>(&self, f: impl FnOnce(&mut Queues) -> T) -> T {
        let mut q = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut q)
    }

    /// Queues a report for the manager.
    pub fn report(&self, session: u64, report: FetchReport) {
        let _ = self.outbox.send(Outbound { session, report });
    }

    /// Ends `held`'s URL at the manager without a page: outcome `blacklisted`
    /// (the operator, through the API, excluded its queue), with `why`. A URL
    /// without a host ends `invalid_url`.
    pub fn end(&self, held: &Held, why: String) {
        let reason = if crate::queues::key_of(&held.url).is_none() {
            OutcomeReason::InvalidUrl
        } else {
            OutcomeReason::Blacklisted
        };
        let report = FetchReport {
            job: held.job,
            result: FetchResult::Failed {
                reason,
                detail: why,
            },
        };
        self.report(held.session, report);
    }
}

/// What runs robots.txt jobs.
#[derive(Debug, Clone)]
pub struct RobotsFetch {
    /// The engine, from the `downloader:` settings.
    pub fetcher: Fetcher,
    /// The `robots/` publisher.
    pub publisher: Arc<Publisher>,
    /// Gzip level of the robots file.
    pub gzip_level: u32,
}

/// One turn's work for the session driver.
#[derive(Debug)]
pub enum Work {
    /// A report to send.
    Out(Outbound),
    /// Time to expire leases.
    Tick,
}

/// The downloader role of the frontier. See the [module docs](self).
#[derive(Debug)]
pub struct FrontierRole {
    shared: Arc<Shared>,
    inbox: mpsc::UnboundedReceiver<Outbound>,
    robots: RobotsFetch,
    session: u64,
    tick: Interval,
    max_jobs: u32,
}

impl FrontierRole {
    /// A role over `shared`, whose outbox's receiver is `inbox`.
    pub fn new(
        shared: Arc<Shared>,
        inbox: mpsc::UnboundedReceiver<Outbound>,
        robots: RobotsFetch,
        max_jobs: u32,
    ) -> Self {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self {
            shared,
            inbox,
            robots,
            session: 0,
            tick,
            max_jobs,
        }
    }

    fn take_job(&self, job: FetchJob) {
        match job.purpose {
            FetchPurpose::Robots => {
                let (robots, shared, session) =
                    (self.robots.clone(), Arc::clone(&self.shared), self.session);
                tokio::spawn(async move {
                    let report = downloader::service::fetch_robots(
                        &robots.fetcher,
                        &robots.publisher,
                        &job,
                        robots.gzip_level,
                    )
                    .await;
                    shared.report(session, report);
                });
            }
            FetchPurpose::Page => {
                let held = Held {
                    job: job.job,
                    url: job.url,
                    session: self.session,
                    not_before_ms: 0,
                };
                let after = job.after.map(|a| (a.job, a.gap_ms));
                if let Err((held, why)) = self.shared.with(|q| q.add(held, after)) {
                    self.shared.end(&held, why);
                }
            }
        }
    }

    async fn send(&self, link: &Link, out: Outbound) -> Step<ProtocolError> {
        if out.session != self.session {
            return Step::Continue; // The manager took that job back already.
        }
        let job = out.report.job;
        let stored =
            matches!(&out.report.result, FetchResult::Stored(p) if p.file == EXTERNAL_FILE);
        let msg = Message::FetchReports {
            reports: vec![out.report],
        };
        if let Err(e) = link.send(&msg).await {
            return Step::Lost(e.to_string());
        }
        if stored {
            let msg = Message::Committed {
                file: EXTERNAL_FILE.to_owned(),
                jobs: vec![job],
            };
            if let Err(e) = link.send(&msg).await {
                return Step::Lost(e.to_string());
            }
        }
        Step::Continue
    }

    /// Hands every job not leased back to the manager (a drain).
    async fn hand_back(&self, link: &Link) -> Step<ProtocolError> {
        let held = self.shared.with(Queues::take_unleased);
        if held.is_empty() {
            return Step::Continue;
        }
        let reports = held
            .into_iter()
            .filter(|h| h.session == self.session)
            .map(|h| FetchReport {
                job: h.job,
                result: FetchResult::Returned,
            })
            .collect();
        match link.send(&Message::FetchReports { reports }).await {
            Ok(()) => Step::Continue,
            Err(e) => Step::Lost(e.to_string()),
        }
    }
}

impl ClientRole for FrontierRole {
    type Work = Work;
    type Error = ProtocolError;
    const ROLE: Role = Role::Downloader;
    const NAME: &'static str = "frontier";

    async fn on_connected(
        &mut self,
        _link: &Link,
        _welcome: &Welcome,
        session: u64,
    ) -> Result<(), ProtocolError> {
        self.session = session;
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.shared.with(|q| q.held())
    }

    fn load(&mut self) -> Load {
        let held = u32::try_from(self.in_flight()).unwrap_or(u32::MAX);
        Load {
            in_flight: held,
            concurrency: self.max_jobs,
            ..Load::default()
        }
    }

    async fn next_work(&mut self) -> Work {
        tokio::select! {
            Some(out) = self.inbox.recv() => Work::Out(out),
            _ = self.tick.tick() => Work::Tick,
        }
    }

    async fn on_work(&mut self, link: &Link, work: Work) -> Step<ProtocolError> {
        match work {
            Work::Out(out) => self.send(link, out).await,
            Work::Tick => {
                let expired = self.shared.with(|q| q.expire(unix_ms()));
                if expired > 0 {
                    tracing::info!(expired, "frontier: leases expired; URLs handed out again");
                }
                Step::Continue
            }
        }
    }

    async fn on_message(&mut self, _link: &Link, msg: Message) -> Step<ProtocolError> {
        match msg {
            Message::FetchBatch { jobs } => {
                for job in jobs {
                    self.take_job(job);
                }
                Step::Continue
            }
            Message::SetConcurrency { .. } | Message::Published { .. } => Step::Continue,
            other => Step::Unexpected(other.kind()),
        }
    }

    async fn begin_drain(&mut self, link: &Link) -> Step<ProtocolError> {
        self.hand_back(link).await
    }

    async fn wind_down(&mut self, link: &Link) -> Step<ProtocolError> {
        match self.hand_back(link).await {
            Step::Continue => {}
            other => return other,
        }
        // Leased URLs may be on the wire: unreported, the manager rests their
        // hosts one interval when we leave, as for a downloader that goes away.
        while let Ok(out) = self.inbox.try_recv() {
            if let Step::Lost(why) = self.send(link, out).await {
                return Step::Lost(why);
            }
        }
        Step::Leave("frontier drained".to_owned())
    }

    async fn grace_over(&mut self, _link: &Link) -> Step<ProtocolError> {
        Step::Leave("frontier grace over".to_owned())
    }

    fn on_disconnected(&mut self) {
        let dropped = self.shared.with(|q| q.drop_session(self.session));
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "frontier: manager connection lost; its jobs are the manager's again"
            );
        }
    }
}
