//! [`Engine`]: the service's coordinator. It owns the [`Frontier`] and the service's
//! other owners, receives events from connection tasks and its own timers, and
//! calls their methods; it holds no state of theirs itself.
//!
//! The owners, each with private fields and narrow methods: the [`Frontier`]
//! (scheduling, and the one table of jobs out at downloaders or awaiting their
//! commit), the [`Registry`] (components, their subscriptions, draining), [`SpeedControl`] (the target,
//! connection counts, the diagnosis), the [`TokenBucket`] (pacing), [`IpOwners`],
//! [`DnsBatches`], [`Checkpoints`], [`SpeedHistory`]. What is left here is the
//! engine's own: counters, timers, connections to drop, the shutdown.
//!
//! Each turn of the loop in [`run`](fn@crate::run) handles a burst of events
//! ([`Engine::handle`]) and then [`Engine::step`]: drop the connections that
//! failed, run the frontier's timers, dispatch jobs, hand out DNS names, and the
//! periodic work (application progress, status line, checkpoints).
//! [`Engine::next_wake`] says when the next turn is due if no event comes first.
//!
//! The coordinator's steps that need several owners at once live in this module's
//! files, by what they are about: `downloaders.rs` (dispatch, reports, commits, a
//! downloader's loss, connection counts), `apps.rs` (subscriptions, progress,
//! hints), `admin.rs` (operator commands), `status.rs` (the figures); resolvers
//! and checkpoints, a few lines each, are here. No other file of the service
//! changes another type's state.
//!
//! This module must never await: a frontier call runs on the loop's task and is
//! short (a RocksDB batch; loading a request-file chunk is the longest). Cost per
//! event: O(1) owner calls plus what the frontier does; per step: O(downloaders +
//! resolvers + subscriptions) plus the frontier's dispatch.

mod admin;
mod apps;
mod downloaders;
mod status;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use spool::ComponentId;
use spool::protocol::{
    ByeReason, ComponentState, HostAnswer, Message, RequestId, Role, StatusSnapshot,
};
use tokio::time::Instant;

use super::checkpoint::Checkpoints;
use super::config::schedule::hhmm_of;
use super::config::{InvalidConfig, ManagerConfig};
use super::conn::{ConnId, Event, Queued};
use super::dns::DnsBatches;
use super::error::ManagerError;
use super::history::SpeedHistory;
use super::ip_owner::IpOwners;
use super::metrics::Metrics;
use super::pacing::TokenBucket;
use super::registry::{Component, Registry};
use super::speed::SpeedControl;
use super::speed::Target;
use super::stages::{StageClock, StageTimes};
use crate::frontier::{Frontier, wall_clock_ms};

/// The longest the loop sleeps without an event, whatever the timers say.
const MAX_SLEEP: Duration = Duration::from_secs(1);
/// The shortest sleep until a frontier timer, so a timer that stays due cannot spin.
const MIN_FRONTIER_SLEEP: Duration = Duration::from_millis(2);
/// Extra time after a drain's grace for the last reports and `Bye`s to arrive.
const DRAIN_MARGIN: Duration = Duration::from_secs(2);

/// A shutdown in progress.
#[derive(Debug)]
struct Stopping {
    /// Stop at this time even if downloaders are still connected.
    deadline: Instant,
}

/// The service's state around the frontier. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Engine {
    /// The scheduling core.
    frontier: Frontier,
    /// The settings.
    config: ManagerConfig,
    /// Connected components (and the connections to drop at the next step).
    registry: Registry,
    /// The global speed limit and the IP owners: who may get a job, and when.
    pacing: downloaders::Pacing,
    /// The speed target in force, connection counts, the speed diagnosis.
    speed: SpeedControl,
    /// Resolve batches.
    dns: DnsBatches,
    /// Periodic and on-demand checkpoints.
    checkpoints: Checkpoints,
    /// Counters, speed history, dispatch stages, the status line's timer.
    figures: status::Figures,
    /// Whether admin connections may change things (an admin token is configured,
    /// so the handshake checked it).
    admin_writes: bool,
    /// Application progress rounds, and the applications told they ran dry.
    progress: apps::Progress,
    /// Set once a shutdown began.
    stopping: Option<Stopping>,
    /// Stored robots.txt files and those not visible yet (see `downloaders.rs`).
    robots: downloaders::RobotsFiles,
}

impl Engine {
    /// The core around an open frontier.
    pub fn new(
        frontier: Frontier,
        config: ManagerConfig,
        robots_dir: PathBuf,
        admin_writes: bool,
        heartbeat_timeout: Duration,
    ) -> Result<Self, InvalidConfig> {
        let now = Instant::now();
        let rate = frontier.target_rate();
        Ok(Self {
            registry: Registry::new(config.jobs_per_downloader_factor, heartbeat_timeout),
            pacing: downloaders::Pacing {
                bucket: TokenBucket::new(rate, now),
                owners: IpOwners::new(owner_spacing_ms(&config.frontier)),
            },
            speed: SpeedControl::new(&config.speed, config.frontier.target_pages_per_sec, now)?,
            dns: DnsBatches::new(
                config.dns_batch_size,
                Duration::from_millis(config.dns_batch_timeout_ms),
            ),
            checkpoints: Checkpoints::new(
                config.state_dir.join("checkpoints"),
                config.checkpoints_kept,
                config.checkpoint_interval_ms,
                now,
            ),
            figures: status::Figures {
                metrics: Metrics::default(),
                rate: SpeedHistory::new(now),
                started: now,
                next_status: now + Duration::from_millis(config.status_interval_ms),
                stages: StageClock::new(now),
            },
            admin_writes,
            progress: apps::Progress {
                next: now,
                idle: BTreeSet::new(),
            },
            stopping: None,
            robots: downloaders::RobotsFiles {
                dir: robots_dir,
                waiting: Vec::new(),
            },
            frontier,
            config,
        })
    }

    /// Handles one event.
    pub fn handle(&mut self, event: Event) -> Result<(), ManagerError> {
        let now = Instant::now();
        match event {
            Event::Joined {
                conn,
                hello,
                outbox,
            } => {
                let (role, id) = (hello.role, hello.id.clone());
                if self.stopping.is_some() {
                    outbox.close(ByeReason::ShuttingDown, "the manager is shutting down");
                    return Ok(());
                }
                if let Some((old, component)) = self.registry.join(conn, hello, outbox, now) {
                    tracing::warn!(%role, %id, "component registered again: replacing its older connection");
                    let detail = "another connection registered with this id";
                    component.close(ByeReason::Replaced, detail);
                    self.release(old, component, "replaced")?;
                }
                if role == Role::Admin {
                    tracing::debug!(%role, %id, "component registered");
                } else {
                    tracing::info!(%role, %id, "component registered");
                }
                if role == Role::Application {
                    self.send_progress_to(conn);
                }
                Ok(())
            }
            Event::Received { conn, msg } => {
                let load = match &msg {
                    Message::Heartbeat { load } => Some(*load),
                    _ => None,
                };
                self.registry.heard(conn, load, now);
                if self.registry.role_of(conn).is_none() {
                    return Ok(()); // Replaced or dropped meanwhile.
                }
                self.on_message(conn, msg)
            }
            Event::Left { conn, why } => match self.registry.leave(conn) {
                Some(component) => self.release(conn, component, &why),
                None => Ok(()),
            },
            Event::Web(ask) => self.on_web(ask),
        }
    }

    /// One message from a registered component.
    fn on_message(&mut self, conn: ConnId, msg: Message) -> Result<(), ManagerError> {
        let wall = wall_clock_ms();
        match msg {
            Message::Heartbeat { .. } => Ok(()),
            Message::FetchReports { reports } => self.on_reports(conn, reports, wall),
            Message::Committed { file, jobs } => {
                if self.registry.role_of(conn) != Some(Role::Downloader) {
                    tracing::warn!(
                        file,
                        "commit from a component that is not a downloader ignored"
                    );
                    return Ok(());
                }
                self.on_committed(conn, &file, &jobs)
            }
            Message::ResolveAnswers { request, answers } => {
                if self.registry.role_of(conn) != Some(Role::Resolver) {
                    tracing::warn!(%request, "resolve answers from a component that is not a resolver ignored");
                    return Ok(());
                }
                self.on_answers(request, &answers, wall)
            }
            Message::Subscribe { app } => {
                self.on_subscribe(conn, app);
                Ok(())
            }
            Message::Published { area, name } => {
                self.on_published(conn, area, &name);
                Ok(())
            }
            Message::SyncProgress { app, seq } => self.on_sync(conn, app, seq, wall),
            Message::Status(state) => {
                self.on_state(conn, *state);
                Ok(())
            }
            Message::Admin(command) => self.on_admin(conn, command),
            Message::Bye { .. } => match self.registry.leave(conn) {
                Some(component) => self.release(conn, component, "said bye"),
                None => Ok(()),
            },
            other => {
                let role = self.registry.role_of(conn);
                tracing::warn!(?role, kind = other.kind(), "unexpected message ignored");
                Ok(())
            }
        }
    }

    /// Takes back what an unregistered component held.
    fn release(
        &mut self,
        conn: ConnId,
        component: Component,
        why: &str,
    ) -> Result<(), ManagerError> {
        let (role, id) = (component.role(), component.id().clone());
        match role {
            Role::Downloader => self.downloader_lost(conn, &id, why)?,
            Role::Resolver => self.resolver_lost(conn, &id, why),
            Role::Application | Role::Admin | Role::Manager => {
                tracing::debug!(%role, %id, why, "component left");
            }
        }
        Ok(())
    }

    /// Sends `msg` to `conn`; a connection too slow to take it is dropped at the
    /// next step. Returns whether it was queued.
    ///
    /// A connection whose task has ended is not dropped here: the messages it
    /// read before it ended (a downloader's last reports and `Committed`) may
    /// still wait in the event queue, and its `Left` comes after them. Dropping
    /// it now would put its stored pages back in the queues and ignore their
    /// commit, so they would be fetched again.
    fn send(&mut self, conn: ConnId, msg: Message) -> bool {
        let Some(outbox) = self.registry.outbox(conn) else {
            return false;
        };
        match outbox.send(msg) {
            Queued::Yes => true,
            Queued::Closed => false,
            Queued::Full => {
                self.registry
                    .doom(conn, "too slow: its outbox is full".to_owned());
                false
            }
        }
    }

    /// The crawl's figures for `AdminReply::Status`.
    pub(super) fn snapshot(&self, now: Instant) -> StatusSnapshot {
        self.figures
            .snapshot(now, &self.frontier, &self.registry, &self.speed, &self.dns)
    }

    /// A component said what state it is in (paused on a full disk, or not;
    /// draining). Logged on a change only: an application sends its figures
    /// every 2 s. A downloader that drains gets no more jobs (`Registry::room`).
    fn on_state(&mut self, conn: ConnId, state: ComponentState) {
        let role = self.registry.role_of(conn);
        let last = self.registry.state_of(conn);
        if state.draining && !last.is_some_and(|s| s.draining) {
            tracing::info!(?role, %conn, "component draining: it takes no new jobs");
        }
        let before = last.and_then(|s| s.pause.as_ref());
        match (before, &state.pause) {
            (before, Some(p)) if before != Some(p) => tracing::warn!(
                ?role,
                %conn,
                path = %p.path,
                reason = ?p.reason,
                "component paused"
            ),
            (Some(_), None) => tracing::info!(?role, %conn, "component resumed"),
            _ => {}
        }
        self.registry.set_state(conn, state);
    }

    /// The dispatch stage's figures so far (see `stages.rs`).
    pub fn stage_times(&mut self) -> StageTimes {
        self.figures.stages.times(Instant::now())
    }

    /// The periodic and follow-up work of one loop turn.
    pub fn step(&mut self) -> Result<(), ManagerError> {
        self.reap()?;
        let now = Instant::now();
        let wall = wall_clock_ms();
        if self.stopping.is_none() {
            if self.frontier.next_wakeup().is_some_and(|w| w <= wall) {
                self.frontier.tick(wall)?;
            }
            self.speed_step(now, wall);
            if !self.robots.waiting.is_empty() {
                self.robots_wait_step()?;
            }
            self.dispatch(now, wall)?;
            self.dns_step(now, wall);
            self.apps_step()?;
        }
        if now >= self.progress.next {
            self.send_progress();
            self.progress.next = now + Duration::from_millis(self.config.progress_interval_ms);
        }
        if now >= self.figures.next_status {
            self.figures
                .log_status(now, &self.frontier, &self.registry, &self.speed, &self.dns);
            self.figures.next_status = now + Duration::from_millis(self.config.status_interval_ms);
        }
        if self.stopping.is_none() {
            self.checkpoints.periodic(&mut self.frontier, now);
        }
        self.figures
            .rate
            .sample(now, self.figures.metrics.pages_stored);
        self.reap()
    }

    /// Drops the connections that failed a send.
    fn reap(&mut self) -> Result<(), ManagerError> {
        for (conn, why) in self.registry.take_doomed() {
            if let Some(component) = self.registry.leave(conn) {
                tracing::warn!(role = %component.role(), id = %component.id(), why, "dropping component");
                component.close(ByeReason::ShuttingDown, why.clone());
                self.release(conn, component, &why)?;
            }
        }
        Ok(())
    }

    /// When the loop should run its next step if no event comes.
    pub fn next_wake(&self) -> Instant {
        let now = Instant::now();
        let mut wake = now + MAX_SLEEP;
        if let Some(stopping) = &self.stopping {
            return wake.min(stopping.deadline);
        }
        let wall = wall_clock_ms();
        if let Some(due) = self.frontier.next_wakeup() {
            let delay = Duration::from_millis(due.saturating_sub(wall));
            wake = wake.min(now + delay.max(MIN_FRONTIER_SLEEP));
        }
        for due in [
            self.pacing.bucket.wake(),
            Some(self.speed.next_due(now, wall)),
            self.dns.next_deadline(),
            Some(self.progress.next),
            Some(self.figures.next_status),
            self.checkpoints.next_due(),
            self.robots.next_try(),
        ]
        .into_iter()
        .flatten()
        {
            wake = wake.min(due.max(now + Duration::from_millis(1)));
        }
        wake
    }

    /// Whether a shutdown is under way.
    pub fn is_stopping(&self) -> bool {
        self.stopping.is_some()
    }

    /// Starts a clean shutdown: downloaders (and with `everyone`, resolvers) are
    /// asked to drain within `grace`; no new work goes out; reports still count.
    pub fn begin_shutdown(&mut self, grace: Duration, everyone: bool) {
        if self.stopping.is_some() {
            return;
        }
        tracing::info!(
            grace_ms = grace.as_millis() as u64,
            everyone,
            "manager shutting down: draining downloaders"
        );
        self.stopping = Some(Stopping {
            deadline: Instant::now() + grace + DRAIN_MARGIN,
        });
        let grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
        for conn in self.registry.start_draining(everyone) {
            self.send(conn, Message::Drain { grace_ms });
        }
    }

    /// Whether the shutdown is complete: every downloader drained (or the grace
    /// ran out).
    pub fn finished(&self) -> bool {
        match &self.stopping {
            None => false,
            Some(s) => self.registry.count(Role::Downloader) == 0 || Instant::now() >= s.deadline,
        }
    }

    /// The end of a clean shutdown: takes back what downloaders still hold, says
    /// `Bye` to everyone, publishes pending outcomes.
    pub fn close(&mut self) -> Result<(), ManagerError> {
        self.reap()?;
        for conn in self.registry.conns() {
            if let Some(component) = self.registry.leave(conn) {
                component.close(ByeReason::ShuttingDown, "the manager is shutting down");
                self.release(conn, component, "manager shutting down")?;
            }
        }
        let published = self.frontier.flush_outcomes(wall_clock_ms())?;
        let stats = self.frontier.stats();
        tracing::info!(
            urls_queued = stats.urls_queued,
            outcomes_published = published,
            pages_stored = self.figures.metrics.pages_stored,
            "manager stopped cleanly"
        );
        Ok(())
    }

    /// Hands the names the frontier needs to the resolvers.
    fn dns_step(&mut self, now: Instant, wall: u64) {
        let resolvers = self.registry.conns_of(Role::Resolver);
        if resolvers.is_empty() {
            return;
        }
        let resent = self.dns.expire(now);
        if resent > 0 {
            self.figures.metrics.dns_batches_resent += resent as u64;
            tracing::warn!(
                batches = resent,
                "resolve batches unanswered in time: sending them again"
            );
        }
        self.dns.want(self.frontier.hosts_needing_dns(wall));
        for (conn, request, hosts) in self.dns.assign(&resolvers, now) {
            self.figures.metrics.dns_batches_sent += 1;
            // On failure the resolver is dropped and the batch is sent again.
            self.send(conn, Message::ResolveBatch { request, hosts });
        }
    }

    /// A resolver answered (part of) a batch.
    fn on_answers(
        &mut self,
        request: RequestId,
        answers: &[HostAnswer],
        wall: u64,
    ) -> Result<(), ManagerError> {
        for a in answers {
            self.frontier.on_dns(&a.host, &a.result, wall)?;
        }
        self.dns
            .answered(request, answers.iter().map(|a| a.host.as_str()));
        Ok(())
    }

    /// A resolver is gone: its unanswered batches are sent again.
    fn resolver_lost(&mut self, conn: ConnId, id: &ComponentId, why: &str) {
        let batches = self.dns.resolver_lost(conn);
        self.figures.metrics.dns_batches_resent += batches as u64;
        if batches > 0 {
            tracing::warn!(role = %Role::Resolver, %id, why, batches,
                "resolver gone: its unanswered batches will be sent again");
        } else {
            tracing::info!(role = %Role::Resolver, %id, why, "resolver left");
        }
    }

    /// The speed work of one loop turn: apply the target in force, and at the end
    /// of an interval the diagnosis and the connection counts.
    fn speed_step(&mut self, now: Instant, wall: u64) {
        if let Some(target) = self.speed.refresh(wall) {
            self.apply_target(target);
        }
        if !self.speed.adjust_due(now) {
            return;
        }
        let downloaders = self.registry.concurrencies();
        let frontier = &self.frontier;
        let idle = || {
            let stats = frontier.stats();
            stats.urls_queued == 0 && stats.request_files_pending == 0
        };
        for (conn, limit) in self.speed.adjust(now, &downloaders, idle) {
            tracing::debug!(conn, limit, "downloader connection count changed");
            if self.send(conn, Message::SetConcurrency { limit }) {
                self.registry.set_concurrency(conn, limit);
            }
        }
    }

    /// An operator's `SetSpeed`: applied now; returns the reply's detail.
    fn set_operator_speed(&mut self, pages_per_sec: f64, wall: u64) -> String {
        let target = self.speed.set_operator(pages_per_sec, wall);
        self.apply_target(target);
        match target.until_ms {
            Some(until) => format!(
                "speed target now {pages_per_sec} pages/s, until the schedule's next \
                 boundary at {} UTC",
                hhmm_of(until)
            ),
            None => format!(
                "speed target now {pages_per_sec} pages/s (no schedule: until changed \
                 again or the manager restarts)"
            ),
        }
    }

    /// Makes `target` the frontier's `r` and the bucket's rate.
    fn apply_target(&mut self, target: Target) {
        let was = self.frontier.target_rate();
        self.frontier.set_target_rate(target.pages_per_sec);
        self.pacing.bucket.set_rate(target.pages_per_sec);
        let until = target.until_ms.map_or_else(|| "-".to_owned(), hhmm_of);
        tracing::info!(
            pages_per_sec = target.pages_per_sec,
            was,
            source = ?target.source,
            until_utc = until,
            "speed target in force"
        );
    }
}
/// How long an address stays with the downloader of its last job after the report
/// (see `ip_owner`): the per-IP start spacing, and, when several requests of a host
/// may be in flight at once, the host interval `interval_ms` too, since each
/// downloader spaces only its own writes to a host. A longer interval of one host
/// (its `Crawl-delay`, a hint) is kept across downloaders by the manager's dispatch
/// spacing alone.
fn owner_spacing_ms(frontier: &crate::FrontierConfig) -> u64 {
    if frontier.connections_per_host > 1 {
        frontier.ip_min_interval_ms.max(frontier.interval_ms)
    } else {
        frontier.ip_min_interval_ms
    }
}
