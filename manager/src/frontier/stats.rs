//! [`FrontierStats`]: what the admin page and `polycrawl status` show about the
//! frontier. Counters that must survive a restart (URLs queued, outcomes, pages,
//! files loaded) are persisted with every change; the rest describes this process.
//!
//! [`Frontier::stats`](super::Frontier::stats) costs O(applications + request files listed);
//! it never touches RocksDB or the spool (request files pending are as of the last
//! folder listing).

use spool::OutcomeReason;
use spool::protocol::AppProgress;

use super::hosts::HostState;

/// A snapshot of the frontier's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierStats {
    /// Hosts in memory, per state (every state listed, zeros included).
    pub hosts_by_state: Vec<(HostState, usize)>,
    /// Hosts in memory.
    pub hosts: usize,
    /// URLs in host queues (in flight included).
    pub urls_queued: u64,
    /// Request files waiting or partly loaded.
    pub request_files_pending: u64,
    /// Request files completely loaded (since the database was created).
    pub request_files_loaded: u64,
    /// Request files quarantined by this process.
    pub request_files_quarantined: u64,
    /// Jobs handed out and not yet reported.
    pub in_flight: usize,
    /// Hosts by their number of requests in flight: element `i` counts the hosts
    /// with `i + 1` (at most `connections_per_host`), no trailing zeros.
    pub in_flight_per_host: Vec<u64>,
    /// Outcomes written, per reason (every reason listed).
    pub outcomes_by_reason: Vec<(OutcomeReason, u64)>,
    /// Outcomes written and not yet published in an outcome file.
    pub outcomes_pending: usize,
    /// Outcome files published by this process.
    pub outcome_files_published: u64,
    /// robots.txt verdicts obtained (since the database was created).
    pub robots_fetched: u64,
    /// Hosts declared dead (since the database was created).
    pub hosts_dead: u64,
    /// Hosts ready to be dispatched (pages or robots.txt), parked ones excluded.
    pub ready: usize,
    /// Hosts parked on a busy IP.
    pub parked: usize,
    /// Hosts resting (politeness interval or back-off).
    pub waiting: usize,
    /// Hosts ready or on their way to ready: compared with `ready_target`.
    pub pipeline: usize,
    /// `s = k r d`: request files are loaded while `pipeline` is below it.
    pub ready_target: usize,
    /// The speed target `r` in force (pages/s).
    pub target_rate: f64,
    /// Host names waiting to be handed to resolvers.
    pub dns_to_ask: usize,
    /// DNS answers cached.
    pub dns_cached: usize,
    /// IP addresses with a politeness slot.
    pub ips_tracked: usize,
    /// Per application, in the protocol's shape.
    pub apps: Vec<AppProgress>,
}
