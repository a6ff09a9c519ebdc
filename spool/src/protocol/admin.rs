//! Operator commands over the control port (`polycrawl status` and scripts). The
//! browser admin page is HTTP and served by the manager; these are its scriptable
//! twin.

use serde::{Deserialize, Serialize};

use super::message::{Load, Role};
use crate::ids::ComponentId;

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
    /// The answer to [`AdminCommand::Status`].
    Status(StatusSnapshot),
}

/// The crawl's state in a few numbers (the admin page shows more).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusSnapshot {
    /// Pages per second over the last minute.
    pub pages_per_sec: f32,
    /// The current speed target, in pages per second.
    pub target_pages_per_sec: f32,
    /// Pages stored since the crawl state was created.
    pub pages_total: u64,
    /// Response bytes received since the crawl state was created.
    pub bytes_total: u64,
    /// URLs waiting in host queues.
    pub queued_urls: u64,
    /// Hosts ready to be contacted.
    pub hosts_ready: u64,
    /// Hosts waiting for their politeness interval, DNS or robots.txt.
    pub hosts_waiting: u64,
    /// Request files published and not yet loaded.
    pub request_files_pending: u64,
    /// Every connected component.
    pub components: Vec<ComponentStatus>,
    /// How the speed target is set and met.
    pub speed: SpeedStatus,
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

/// One connected component, as the manager sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentStatus {
    /// What it is.
    pub role: Role,
    /// Its id.
    pub id: ComponentId,
    /// Its last reported load.
    pub load: Load,
    /// Milliseconds since anything was heard from it.
    pub last_heard_ms: u64,
}
