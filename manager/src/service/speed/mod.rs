//! Speed control (DESIGN.md section 4; Polybot sections 1.3 and 4.2): the manager
//! meets a global pages/s target, which may follow a time-of-day schedule, by
//! pacing dispatch and by setting each downloader's connection count.
//!
//! # The target in force
//!
//! In order: an operator's `SetSpeed` (control port, or the admin page, which goes
//! the same way), which holds until the schedule's next boundary (a window starting
//! or ending), or for the rest of the run when there is no schedule; else the
//! window of `manager.speed.schedule` the UTC time of day is in ([`schedule`](super::config::schedule));
//! else `manager.frontier.target_pages_per_sec`. So an operator who slows the crawl
//! down at 14:00 stays in charge until the next planned change, and the plan then
//! takes over again without anyone remembering to undo the override. An operator's
//! target is not persisted: after a restart the config applies.
//!
//! # What counts
//!
//! Every fetch counts against the target: pages and robots.txt, stored or failed.
//! The target is a promise to the network about requests per second, and a
//! robots.txt request is a request. robots.txt fetches are few in steady state (one
//! per host per 24 h), but come in a burst when many new hosts arrive, and then
//! pages run below the target by that much. The status shows the pages/s figure
//! and, here, the fetches/s the target is compared with.
//!
//! # Meeting it
//!
//! 1. **Pacing** (`pacing.rs`): every job handed to a downloader takes a token of a
//!    bucket refilled at the target rate, with at most one second saved up.
//! 2. **Connections** ([`connections`]): every `adjust_interval_ms`, each
//!    downloader's connection count is set (`SetConcurrency`) to `headroom x its
//!    share of the target x its mean job time` (Little's law), within
//!    `[min_connections, max_connections]`; its job window
//!    (`jobs_per_downloader_factor` x connections) follows. The job time is
//!    measured by the manager from dispatch to report, so it covers failures,
//!    timeouts and transport, not only the fetches that stored a page. Enough
//!    connections that jobs seldom wait in a downloader's queue (a job that waits
//!    starts late, bunching up requests the manager spaced out per IP), and no
//!    more: fewer jobs sit in downloaders, so a crash re-fetches less.
//! 3. **Ready queue**: `s = k x r x d` follows the target
//!    ([`Frontier::set_target_rate`](crate::Frontier::set_target_rate)).
//!
//! There is no feedback loop on the rate. Pacing dispatch alone gives the target
//! to within 1 % on websim (`tests/tests/speed.rs`): a job dispatched is a fetch
//! started a moment later, whatever happens to it, so in-flight jobs only delay
//! the curve. A loop that dispatched more to make up for failures would send more
//! requests than the operator allowed.
//!
//! # Diagnosis
//!
//! Each dispatch round notes what bounded it ([`Round`]). At the end of an
//! interval, if fetches finished below 90 % of the target, the status says why
//! ([`SpeedLimit`]): no host could be contacted (politeness: the crawl is
//! host-limited; the manager then sleeps until a host's interval ends, it never
//! spins), downloaders' windows were full, or nothing is queued.
//!
//! # What this module must never do
//!
//! - ask a downloader for more than `max_connections` or fewer than
//!   `min_connections`;
//! - let dispatch exceed the target (plus one second of saved-up tokens);
//! - read a clock: the engine passes `Instant`s and wall-clock milliseconds.
//!
//! Cost: O(1) per report and dispatch round; O(downloaders log downloaders) per
//! interval.

mod connections;
mod target;

use std::collections::HashMap;
use std::time::Duration;

use spool::protocol::{SpeedLimit, SpeedStatus};
use tokio::time::Instant;

use self::connections::{Bounds, plan};
pub(crate) use self::target::Target;
use self::target::TargetPlan;
use super::config::InvalidConfig;
use super::config::schedule::Schedule;
use super::config::speed::SpeedConfig;
use super::conn::ConnId;

/// Below this share of the target, the status says what holds the crawl back.
const ON_TARGET: f64 = 0.9;
/// Weight of the newest interval in a downloader's mean job time.
const NEW_WEIGHT: f64 = 0.5;

/// What bounded one dispatch round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Round {
    /// The token bucket: the target.
    Tokens,
    /// The frontier had fewer jobs than tokens and room allowed: politeness.
    Hosts,
    /// The downloaders' windows were full while tokens were there.
    Downloaders,
}

/// Speed-control state of the engine. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct SpeedControl {
    /// The target in force (operator, schedule, base).
    plan: TargetPlan,
    bounds: Bounds,
    interval: Duration,
    next_adjust: Instant,
    interval_start: Instant,
    /// Fetches finished in this interval.
    fetches: u64,
    /// Jobs' total time out (µs) and count in this interval, per downloader.
    job_us: HashMap<ConnId, (u64, u32)>,
    /// Mean job time in seconds, per downloader.
    mean_secs: HashMap<ConnId, f64>,
    /// Dispatch rounds in this interval: tokens, hosts, downloaders.
    rounds: [u32; 3],
    limit: SpeedLimit,
    fetches_per_sec: f64,
}

impl SpeedControl {
    /// The control for `config` with base target `base` (pages/s).
    pub fn new(config: &SpeedConfig, base: f64, now: Instant) -> Result<Self, InvalidConfig> {
        config.validate()?;
        let interval = Duration::from_millis(config.adjust_interval_ms);
        Ok(Self {
            plan: TargetPlan::new(Schedule::parse(&config.schedule)?, base),
            bounds: Bounds {
                min: config.min_connections,
                max: config.max_connections,
                headroom: config.connection_headroom,
            },
            interval,
            next_adjust: now + interval,
            interval_start: now,
            fetches: 0,
            job_us: HashMap::new(),
            mean_secs: HashMap::new(),
            rounds: [0; 3],
            limit: SpeedLimit::Target,
            fetches_per_sec: 0.0,
        })
    }

    /// The target in force at `wall`; `Some` when it differs from the last one.
    pub fn refresh(&mut self, wall: u64) -> Option<Target> {
        self.plan.refresh(wall)
    }

    /// An operator's target, from `wall` to the schedule's next boundary.
    pub fn set_operator(&mut self, pages_per_sec: f64, wall: u64) -> Target {
        self.plan.set_operator(pages_per_sec, wall)
    }

    /// The target in force.
    pub fn target(&self) -> Target {
        self.plan.target()
    }

    /// A job of `conn` was reported (stored or failed) `out` after it was sent.
    pub fn note_fetch(&mut self, conn: ConnId, out: Duration) {
        self.fetches += 1;
        let slot = self.job_us.entry(conn).or_default();
        slot.0 += u64::try_from(out.as_micros()).unwrap_or(u64::MAX);
        slot.1 += 1;
    }

    /// A dispatch round was bounded by `round`.
    pub fn note_round(&mut self, round: Round) {
        let i = match round {
            Round::Tokens => 0,
            Round::Hosts => 1,
            Round::Downloaders => 2,
        };
        self.rounds[i] = self.rounds[i].saturating_add(1);
    }

    /// Whether the interval is over.
    pub fn adjust_due(&self, now: Instant) -> bool {
        now >= self.next_adjust
    }

    /// When the next interval ends, or the target may change.
    pub fn next_due(&self, now: Instant, wall: u64) -> Instant {
        let change = Duration::from_millis(self.plan.next_check_ms().saturating_sub(wall));
        self.next_adjust
            .min(now.checked_add(change).unwrap_or(self.next_adjust))
    }

    /// Closes the interval if it is over: the diagnosis, the downloaders' mean
    /// job times, and the connection counts for `downloaders` (connection and
    /// current count) that should change. `idle`: nothing is queued.
    pub fn adjust(
        &mut self,
        now: Instant,
        downloaders: &[(ConnId, u32)],
        idle: impl FnOnce() -> bool,
    ) -> Vec<(ConnId, u32)> {
        if !self.adjust_due(now) {
            return Vec::new();
        }
        let secs = now
            .saturating_duration_since(self.interval_start)
            .as_secs_f64()
            .max(0.001);
        self.fetches_per_sec = self.fetches as f64 / secs;
        let [_, hosts, room] = self.rounds;
        self.limit = if self.fetches_per_sec >= ON_TARGET * self.target().pages_per_sec {
            SpeedLimit::Target
        } else if idle() {
            SpeedLimit::Idle
        } else if room > hosts {
            SpeedLimit::Downloaders
        } else if hosts > 0 {
            SpeedLimit::Hosts
        } else {
            SpeedLimit::Target
        };
        for (conn, (total_us, n)) in self.job_us.drain() {
            if n > 0 {
                let sample = total_us as f64 / f64::from(n) / 1e6;
                let mean = self.mean_secs.entry(conn).or_insert(sample);
                *mean = NEW_WEIGHT * sample + (1.0 - NEW_WEIGHT) * *mean;
            }
        }
        self.mean_secs
            .retain(|conn, _| downloaders.iter().any(|(c, _)| c == conn));
        self.fetches = 0;
        self.rounds = [0; 3];
        self.interval_start = now;
        self.next_adjust = now + self.interval;

        let secs: Vec<Option<f64>> = downloaders
            .iter()
            .map(|(conn, _)| self.mean_secs.get(conn).copied())
            .collect();
        let Some(plan) = plan(self.target().pages_per_sec, self.bounds, &secs) else {
            return Vec::new();
        };
        downloaders
            .iter()
            .zip(plan.connections)
            .filter(|((_, current), new)| worth_changing(*current, *new))
            .map(|((conn, _), new)| (*conn, new))
            .collect()
    }

    /// The figures for the status.
    pub fn status(&self) -> SpeedStatus {
        let means: Vec<f64> = self.mean_secs.values().copied().collect();
        let mean_ms = if means.is_empty() {
            0.0
        } else {
            means.iter().sum::<f64>() / means.len() as f64 * 1000.0
        };
        SpeedStatus {
            source: self.target().source,
            until_ms: self.target().until_ms,
            limit: self.limit,
            fetches_per_sec: self.fetches_per_sec as f32,
            mean_job_ms: mean_ms as f32,
        }
    }
}

/// Whether a connection count should go from `current` to `new`: by at least one
/// eighth (and at least 1), so small wobbles of the mean do not send messages.
fn worth_changing(current: u32, new: u32) -> bool {
    new.abs_diff(current) >= (current / 8).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::config::speed::ScheduleEntry;
    use spool::protocol::TargetSource;

    const DAY_MS: u64 = 86_400_000;

    fn at(hh: u64, mm: u64) -> u64 {
        19_000 * DAY_MS + (hh * 60 + mm) * 60_000
    }

    fn night_control() -> SpeedControl {
        let config = SpeedConfig {
            schedule: vec![ScheduleEntry {
                from: "22:00".into(),
                to: "06:00".into(),
                pages_per_sec: 500.0,
            }],
            ..SpeedConfig::default()
        };
        SpeedControl::new(&config, 100.0, Instant::now()).unwrap()
    }

    #[test]
    fn the_schedule_sets_the_target_and_an_operator_holds_until_the_next_boundary() {
        let mut s = night_control();
        let t = s.refresh(at(12, 0)).expect("first look");
        assert_eq!((t.pages_per_sec, t.source), (100.0, TargetSource::Config));
        assert_eq!(t.until_ms, Some(at(22, 0)));
        assert_eq!(s.refresh(at(21, 59)), None, "nothing changes before 22:00");
        let t = s.refresh(at(22, 0)).expect("the night window");
        assert_eq!((t.pages_per_sec, t.source), (500.0, TargetSource::Schedule));
        assert_eq!(t.until_ms, Some(at(30, 0)), "06:00 the next day");
        // An operator at 23:00 holds until 06:00, then the config's base again.
        let t = s.set_operator(50.0, at(23, 0));
        assert_eq!((t.pages_per_sec, t.source), (50.0, TargetSource::Operator));
        assert_eq!(t.until_ms, Some(at(30, 0)));
        assert_eq!(s.refresh(at(29, 59)), None);
        let t = s.refresh(at(30, 0)).expect("06:00 next day");
        assert_eq!((t.pages_per_sec, t.source), (100.0, TargetSource::Config));
        assert_eq!(s.status().source, TargetSource::Config);
    }

    #[test]
    fn without_a_schedule_an_operator_holds_for_good() {
        let mut s = SpeedControl::new(&SpeedConfig::default(), 100.0, Instant::now()).unwrap();
        assert_eq!(
            s.refresh(at(1, 0)),
            None,
            "the base is in force from the start"
        );
        assert_eq!(s.target().until_ms, None);
        let t = s.set_operator(7.0, at(1, 0));
        assert_eq!((t.pages_per_sec, t.until_ms), (7.0, None));
        assert_eq!(s.refresh(at(100, 0)), None);
        assert_eq!(s.target().pages_per_sec, 7.0);
    }

    #[test]
    fn an_interval_diagnoses_and_plans_connections() {
        let t0 = Instant::now();
        let config = SpeedConfig {
            min_connections: 4,
            ..SpeedConfig::default()
        };
        let mut s = SpeedControl::new(&config, 100.0, t0).unwrap();
        let (a, b) = (1, 2);
        // 2 s: 100 jobs of 100 ms on a, none on b; hosts held dispatch back.
        let ms = Duration::from_millis;
        for _ in 0..100 {
            s.note_fetch(a, ms(100));
        }
        s.note_round(Round::Hosts);
        s.note_round(Round::Tokens);
        assert!(
            s.adjust(t0 + Duration::from_secs(1), &[(a, 8), (b, 8)], || false)
                .is_empty()
        );
        let changes = s.adjust(t0 + Duration::from_secs(2), &[(a, 8), (b, 8)], || false);
        // 50 fetches/s of a 100/s target: host-limited. Each downloader carries 50/s
        // x 0.1 s x 2 = 10 connections (b planned with a's mean).
        assert_eq!(s.status().limit, SpeedLimit::Hosts);
        assert_eq!(s.status().fetches_per_sec, 50.0);
        assert_eq!(s.status().mean_job_ms, 100.0);
        assert_eq!(changes, [(a, 10), (b, 10)]);
        // Next interval: on target, and nothing worth changing.
        for _ in 0..200 {
            s.note_fetch(a, ms(100));
        }
        let changes = s.adjust(t0 + Duration::from_secs(4), &[(a, 10), (b, 10)], || false);
        assert_eq!(s.status().limit, SpeedLimit::Target);
        assert!(changes.is_empty(), "{changes:?}");
        // Nothing queued, nothing fetched: idle; full windows: downloaders.
        s.adjust(t0 + Duration::from_secs(6), &[(a, 10)], || true);
        assert_eq!(s.status().limit, SpeedLimit::Idle);
        s.note_round(Round::Downloaders);
        s.adjust(t0 + Duration::from_secs(8), &[(a, 10)], || false);
        assert_eq!(s.status().limit, SpeedLimit::Downloaders);
    }

    #[test]
    fn small_changes_are_not_sent() {
        assert!(!worth_changing(32, 35));
        assert!(worth_changing(32, 36));
        assert!(worth_changing(8, 9));
        assert!(!worth_changing(8, 8));
        assert!(worth_changing(1000, 8));
    }
}
