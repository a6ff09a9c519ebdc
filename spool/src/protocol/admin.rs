//! Operator commands over the control port (`polycrawl status` and scripts). The
//! browser admin page is HTTP and served by the manager; these are its scriptable
//! twin: every route of the manager's JSON API is one [`AdminCommand`], and
//! `GET /api/stats` is a [`StatusSnapshot`] as JSON (field names as here; enum
//! values by their lower-case names, e.g. `"robots_excluded"`, `"downloader"`).

use serde::{Deserialize, Serialize};

use super::message::{Load, Role};
use super::state::{ComponentState, Pause};
use crate::ids::ComponentId;
use crate::outcome::OutcomeReason;

/// An operator command, admin -> manager. Answered by one
/// [`AdminReply`](super::Message::AdminReply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AdminCommand {
    /// Report the crawl's state ([`AdminReply::Status`]).
    Status,
    /// Set the global speed target, in pages per second. It holds until the
    /// manager's time-of-day schedule next changes the target (or, without a
    /// schedule, until changed again); downloaders' connections stay under their
    /// absolute cap (`manager.speed.max_connections`).
    SetSpeed {
        /// The new target.
        pages_per_sec: f32,
    },
    /// Add a host or a domain suffix (`.example.com`) to the blacklist.
    BlacklistAdd {
        /// The host or suffix.
        entry: String,
    },
    /// Remove an entry from the blacklist.
    BlacklistRemove {
        /// The host or suffix, exactly as added.
        entry: String,
    },
    /// Write a checkpoint of the manager's state now.
    Checkpoint,
    /// Drain every component within `grace_ms`, then shut the crawling system down.
    Shutdown {
        /// How long components may take to finish in-flight work.
        grace_ms: u64,
    },
    /// List the blacklist ([`AdminReply::Blacklist`]); allowed without the admin token.
    Blacklist,
}

/// The manager's answer to an [`AdminCommand`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AdminReply {
    /// The command was carried out.
    Done {
        /// What was done ("blacklist now has 12 entries").
        detail: String,
    },
    /// The command was refused or failed; nothing changed.
    Failed {
        /// Why, for the operator.
        detail: String,
    },
    /// The answer to [`AdminCommand::Status`] (boxed: the other answers are small).
    Status(Box<StatusSnapshot>),
    /// The answer to [`AdminCommand::Blacklist`].
    Blacklist {
        /// Every entry in its text form (`host.name` or `*.domain`), sorted.
        entries: Vec<String>,
    },
    /// The answer to [`AdminCommand::Checkpoint`]: it was written.
    Checkpointed {
        /// The checkpoint's folder (absolute), on the manager's machine.
        path: String,
    },
}

/// The crawl's figures: what the admin page, `GET /api/stats` and `polycrawl status`
/// show. Totals marked *persistent* count since the crawl state was created; the
/// others count this manager process's life.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusSnapshot {
    /// Pages per second over the last few seconds ([`Speed::NOW_SECS`]).
    pub pages_per_sec_now: f32,
    /// Pages per second over the last minute (less if the manager is younger).
    pub pages_per_sec: f32,
    /// Pages per second over the last hour (less if the manager is younger).
    pub pages_per_sec_hour: f32,
    /// Pages per second in each [`Speed::CHART_STEP_SECS`] step of the last hour,
    /// oldest first, complete steps only (at most [`Speed::CHART_STEPS`]).
    pub speed_chart: Vec<f32>,
    /// The current speed target, in pages per second.
    pub target_pages_per_sec: f32,
    /// Pages stored (persistent).
    pub pages_total: u64,
    /// Fetches answered or failed, pages and robots.txt (persistent; jobs handed
    /// back unstarted are not requests).
    pub requests_total: u64,
    /// Response bytes received, pages and robots.txt, as read from the socket
    /// (persistent).
    pub bytes_total: u64,
    /// robots.txt verdicts obtained (persistent).
    pub robots_fetched: u64,
    /// Stored page responses per HTTP status code, ascending by code (persistent).
    pub http_status: Vec<StatusCount>,
    /// Fetch attempts that produced no response, per reason (persistent; every
    /// reason listed).
    pub fetch_errors: Vec<ReasonCount>,
    /// URLs that ended without a page, per reason (persistent; every reason listed).
    pub outcomes: Vec<ReasonCount>,
    /// URLs waiting in host queues, in flight included.
    pub queued_urls: u64,
    /// Fetch jobs handed to downloaders and not yet reported.
    pub in_flight: u64,
    /// Hosts by their number of requests in flight: element `i` counts the hosts
    /// with `i + 1` (at most the manager's `connections_per_host`), no trailing
    /// zeros.
    pub in_flight_per_host: Vec<u64>,
    /// Host names waiting to be sent to a resolver (names sent count as hosts
    /// `resolving`).
    pub dns_pending: u64,
    /// Hosts by state.
    pub hosts: HostCounts,
    /// Hosts backed off now, with why and until when: those whose rest ends last
    /// first, at most [`MAX_BACKED_OFF`] (`hosts.backed_off` counts them all).
    pub backed_off: Vec<BackedOffHost>,
    /// Request files published and not yet completely loaded.
    pub request_files_pending: u64,
    /// Request files completely loaded (persistent).
    pub request_files_loaded: u64,
    /// How long the manager process has been running, in milliseconds.
    pub uptime_ms: u64,
    /// Every connected component (admin connections left out).
    pub components: Vec<ComponentStatus>,
    /// How the speed target is set and met.
    pub speed: SpeedStatus,
    /// The manager's own pause (it cannot write outcome files: the spool is full),
    /// if any. Components' pauses are in [`ComponentStatus::state`].
    pub pause: Option<Pause>,
}

/// Most hosts listed in [`StatusSnapshot::backed_off`].
pub const MAX_BACKED_OFF: usize = 20;

/// A host left alone for longer than its interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackedOffHost {
    /// The host's origin (`scheme://name[:port]`).
    pub origin: String,
    /// Why.
    pub reason: BackOffReason,
    /// When it may be contacted again (Unix milliseconds).
    pub until_ms: u64,
}

/// Why a host is backed off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackOffReason {
    /// It answered 429 or 503 (`in_row` times in a row).
    Throttled {
        /// The last answer's status (429 or 503).
        status: u16,
        /// The wait its `Retry-After` asked for, in milliseconds (before the cap);
        /// `None`: no usable header, the back-off is exponential.
        retry_after_ms: Option<u64>,
        /// Such answers in a row.
        in_row: u32,
    },
    /// It failed (connect failure, timeout, DNS, unreachable robots.txt).
    Failures {
        /// Consecutive failures.
        count: u32,
    },
}

impl std::fmt::Display for BackOffReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            BackOffReason::Throttled {
                status,
                retry_after_ms: Some(ms),
                in_row,
            } => write!(
                f,
                "{status} x{in_row}, Retry-After {:.1} s",
                ms as f64 / 1000.0
            ),
            BackOffReason::Throttled {
                status,
                retry_after_ms: None,
                in_row,
            } => write!(f, "{status} x{in_row}, exponential back-off"),
            BackOffReason::Failures { count } => write!(f, "{count} failures in a row"),
        }
    }
}

/// How the speed target is set and met: where the target in force comes from and
/// what holds the crawl back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeedStatus {
    /// Where the target in force comes from.
    pub source: TargetSource,
    /// When (Unix milliseconds) the time-of-day schedule may next change the target;
    /// `None`: only an operator will.
    pub until_ms: Option<u64>,
    /// What held the speed back over the last adjustment interval.
    pub limit: SpeedLimit,
    /// Fetches finished per second over the last adjustment interval: pages and
    /// robots.txt, stored or failed (what the target counts).
    pub fetches_per_sec: f32,
    /// Mean time from dispatch to report of the jobs of the last intervals, in
    /// milliseconds (0 before the first): what downloaders' connection counts are
    /// planned with.
    pub mean_job_ms: f32,
}

/// Where the speed target in force comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TargetSource {
    /// The config's `target_pages_per_sec` (outside every schedule window).
    #[default]
    Config,
    /// A window of the config's time-of-day schedule.
    Schedule,
    /// An operator's `SetSpeed`, until the schedule's next boundary.
    Operator,
}

/// What held the crawl's speed back, as the manager judges it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SpeedLimit {
    /// Nothing: fetches go out at the target (or not measured yet).
    #[default]
    Target,
    /// Politeness: the target allowed more, but no more hosts could be contacted
    /// (the crawl is host-limited: more hosts or shorter intervals would help).
    Hosts,
    /// Downloaders: their job windows were full (too few downloaders, or their
    /// connection counts at the cap).
    Downloaders,
    /// Nothing to fetch: no URL queued and no request file pending.
    Idle,
}

impl SpeedLimit {
    /// A few words for an operator.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Target => "on target",
            Self::Hosts => "host-limited (politeness allows no more)",
            Self::Downloaders => "downloader-limited (their job windows are full)",
            Self::Idle => "idle (nothing queued)",
        }
    }
}

/// The sizes behind the speed figures of [`StatusSnapshot`].
#[derive(Debug)]
pub struct Speed;

impl Speed {
    /// The window of `pages_per_sec_now`, in seconds.
    pub const NOW_SECS: u64 = 5;
    /// The width of one step of `speed_chart`, in seconds.
    pub const CHART_STEP_SECS: u64 = 10;
    /// The number of steps of `speed_chart`: one hour.
    pub const CHART_STEPS: usize = 360;
}

/// Responses with one HTTP status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCount {
    /// The status code.
    pub code: u16,
    /// How many.
    pub count: u64,
}

/// URLs or attempts that ended for one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonCount {
    /// The reason.
    pub reason: OutcomeReason,
    /// How many.
    pub count: u64,
}

/// Hosts the manager holds in memory, by where they are on their way to a fetch,
/// and hosts given up on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCounts {
    /// Waiting for their name to be resolved.
    pub resolving: u64,
    /// Waiting for a fresh robots.txt (queued for it or fetching it).
    pub robots: u64,
    /// Ready to be dispatched.
    pub ready: u64,
    /// Ready, but their IP address is at its limit.
    pub parked: u64,
    /// Waiting for the reports of their fetches in flight: as many as the manager's
    /// `connections_per_host` allows (one by default), or some and nothing else to
    /// start.
    pub fetching: u64,
    /// Resting for their politeness interval.
    pub waiting: u64,
    /// Resting after failures (growing back-off).
    pub backed_off: u64,
    /// Declared dead after too many failures (persistent; not in memory).
    pub dead: u64,
}

impl HostCounts {
    /// Hosts in memory (every state but `dead`).
    pub fn total(&self) -> u64 {
        self.resolving
            + self.robots
            + self.ready
            + self.parked
            + self.fetching
            + self.waiting
            + self.backed_off
    }
}

/// One connected component, as the manager sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentStatus {
    /// What it is.
    pub role: Role,
    /// Its id.
    pub id: ComponentId,
    /// Its last reported load: `concurrency`, `in_flight` and `done_per_sec` (its
    /// rate) are what the admin page shows.
    pub load: Load,
    /// Milliseconds since anything was heard from it.
    pub last_heard_ms: u64,
    /// Heard from within half the heartbeat timeout (a component silent for the
    /// whole timeout is dropped).
    pub healthy: bool,
    /// What it last said about itself ([`Message::Status`](super::Message::Status)):
    /// paused or not, and why.
    pub state: ComponentState,
}
