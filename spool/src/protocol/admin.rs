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
    /// Set the global speed target, in pages per second (still under the absolute cap).
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
