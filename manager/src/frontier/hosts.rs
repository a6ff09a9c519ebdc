//! The host dictionary: origin -> [`HostId`] -> [`Host`], for the hosts the frontier
//! currently works on, with each host's [`HostState`].
//!
//! A host is an origin (scheme, host, port): queues, robots.txt and per-host
//! politeness are per origin. A host lives in memory while it has queued URLs, a job
//! in flight, or a politeness interval still running after its last URL (so a URL that
//! arrives just after the queue emptied still waits its turn); then it is forgotten,
//! and what is worth remembering (robots verdict, dead mark) stays in RocksDB's
//! `origin` family.
//!
//! Memory per host: the struct (~250 bytes) + its origin and name (~2 x 30 bytes) +
//! two map entries (~60 bytes) + its parsed robots rules (typically a few hundred
//! bytes) + its read-ahead buffer: up to `pop_batch` URLs (~200 bytes each) for hosts
//! whose interval is at most 5 s (they are dispatched often), one URL otherwise, and
//! nothing while such a host rests. Lookups are O(1). The number of hosts is bounded by
//! the lazy loading of request files (about `s` ready + those waiting), never by the
//! number of URLs.
//!
//! This module must never touch RocksDB or the network; it only keeps the facts.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;

use spool::protocol::JobId;

use super::records::{HostRecord, QueueEntry};
use crate::robots::RobotsPolicy;

/// A host's id: its key prefix in the `queue` family. Never reused.
pub type HostId = u64;

/// Where a host is in its life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostState {
    /// Its name must be resolved before anything else.
    NeedsDns,
    /// Its name was handed to the service for a resolver; waiting for the answer.
    Resolving,
    /// Needs a fresh robots.txt: in the ready heap at top priority.
    NeedsRobots,
    /// Its robots.txt fetch is in flight.
    FetchingRobots,
    /// Has URLs, an address and robots rules: in the ready heap, keyed by its head
    /// URL's request number.
    Ready,
    /// Ready, but its IP address is at its limit: parked on that IP (not blocking
    /// hosts on other IPs) until the IP frees.
    Parked,
    /// One page fetch in flight (never more than one per host).
    InFlight,
    /// Resting for its politeness interval after a fetch.
    Waiting,
    /// Resting after a failure (growing back-off).
    BackedOff,
}

impl HostState {
    /// Every state, in life-cycle order.
    pub const ALL: [HostState; 9] = [
        HostState::NeedsDns,
        HostState::Resolving,
        HostState::NeedsRobots,
        HostState::FetchingRobots,
        HostState::Ready,
        HostState::Parked,
        HostState::InFlight,
        HostState::Waiting,
        HostState::BackedOff,
    ];

    /// Stable lower-case name for stats.
    pub fn as_str(self) -> &'static str {
        match self {
            HostState::NeedsDns => "needs_dns",
            HostState::Resolving => "resolving",
            HostState::NeedsRobots => "needs_robots",
            HostState::FetchingRobots => "fetching_robots",
            HostState::Ready => "ready",
            HostState::Parked => "parked",
            HostState::InFlight => "in_flight",
            HostState::Waiting => "waiting",
            HostState::BackedOff => "backed_off",
        }
    }
}

/// A robots.txt verdict in force for a host.
#[derive(Debug, Clone)]
pub(crate) struct RobotsInForce {
    pub policy: Arc<RobotsPolicy>,
    /// Wall-clock ms after which it must be fetched again.
    pub expires_ms: u64,
}

/// A robots.txt fetch being chased through redirects.
#[derive(Debug, Clone, Default)]
pub(crate) struct RobotsChase {
    /// The URL to fetch next (`None`: `<origin>/robots.txt`).
    pub url: Option<String>,
    /// Redirects followed so far.
    pub redirects: u32,
    /// The host name of `url` when it differs from the host's own name...
    pub name: Option<Arc<str>>,
    /// ...and its address, once resolved.
    pub addr: Option<IpAddr>,
    /// The port of `url`, when `url` is set.
    pub port: Option<u16>,
    /// The origin key of `url` when it differs from the host's own origin: the hop
    /// contacts that origin on the host's behalf (see `borrowed`).
    pub origin: Option<Arc<str>>,
}

/// One host (origin) the frontier works on.
#[derive(Debug)]
pub(crate) struct Host {
    pub id: HostId,
    /// `scheme://host[:port]`, the dictionary key.
    pub origin: Arc<str>,
    /// The host name to resolve (lower-case; IPv6 literals without brackets).
    pub name: Arc<str>,
    /// Port from the URL or the scheme's default.
    pub port: u16,
    /// Changed only through [`Hosts::set_state`], which keeps the per-state counts.
    state: HostState,
    /// Queue bounds: URLs `head..tail` are in RocksDB.
    pub head: u64,
    pub tail: u64,
    /// The next URLs from `head` on, read ahead (front = head).
    pub buffer: VecDeque<(u64, QueueEntry)>,
    /// Request number of the head URL, when known without reading.
    pub head_reqno: Option<u64>,
    /// Resolved address and until when (wall ms) it may be used.
    pub addr: Option<(IpAddr, u64)>,
    pub robots: Option<RobotsInForce>,
    pub chase: RobotsChase,
    pub interval_override_ms: Option<u64>,
    pub failures: u32,
    /// Tries of the current head URL that failed (connect failure/timeout).
    pub head_attempts: u32,
    pub last_fetch_ms: Option<u64>,
    /// Earliest wall ms the host may be contacted again.
    pub next_allowed_ms: u64,
    /// The job in flight (page or robots) and the IP it went to.
    pub in_flight: Option<(JobId, IpAddr)>,
}

impl Host {
    /// A new host with an empty queue starting at seq `head`.
    pub fn new(id: HostId, origin: Arc<str>, name: Arc<str>, port: u16, head: u64) -> Host {
        Host {
            id,
            origin,
            name,
            port,
            state: HostState::NeedsDns,
            head,
            tail: head,
            buffer: VecDeque::new(),
            head_reqno: None,
            addr: None,
            robots: None,
            chase: RobotsChase::default(),
            interval_override_ms: None,
            failures: 0,
            head_attempts: 0,
            last_fetch_ms: None,
            next_allowed_ms: 0,
            in_flight: None,
        }
    }

    /// Where the host is in its life cycle.
    pub fn state(&self) -> HostState {
        self.state
    }

    /// URLs queued (the one in flight included).
    pub fn queued(&self) -> u64 {
        self.tail - self.head
    }

    /// The durable part of the host.
    pub fn record(&self) -> HostRecord {
        HostRecord {
            origin: self.origin.to_string(),
            head: self.head,
            tail: self.tail,
            interval_ms: self.interval_override_ms,
            failures: self.failures,
        }
    }

    /// The resolved address if still valid at `now_ms`.
    pub fn fresh_addr(&self, now_ms: u64) -> Option<IpAddr> {
        self.addr
            .filter(|(_, until)| now_ms < *until)
            .map(|(ip, _)| ip)
    }

    /// The robots verdict if still valid at `now_ms`.
    pub fn fresh_robots(&self, now_ms: u64) -> Option<&Arc<RobotsPolicy>> {
        self.robots
            .as_ref()
            .filter(|r| now_ms < r.expires_ms)
            .map(|r| &r.policy)
    }
}

/// The dictionary of hosts in memory.
#[derive(Debug, Default)]
pub(crate) struct Hosts {
    by_origin: HashMap<Arc<str>, HostId>,
    by_id: HashMap<HostId, Host>,
    counts: [usize; HostState::ALL.len()],
}

impl Hosts {
    pub fn id_of(&self, origin: &str) -> Option<HostId> {
        self.by_origin.get(origin).copied()
    }

    pub fn get(&self, id: HostId) -> Option<&Host> {
        self.by_id.get(&id)
    }

    pub fn get_mut(&mut self, id: HostId) -> Option<&mut Host> {
        self.by_id.get_mut(&id)
    }

    pub fn insert(&mut self, host: Host) {
        self.counts[host.state as usize] += 1;
        self.by_origin.insert(host.origin.clone(), host.id);
        if let Some(old) = self.by_id.insert(host.id, host) {
            self.counts[old.state as usize] -= 1;
        }
    }

    pub fn remove(&mut self, id: HostId) -> Option<Host> {
        let host = self.by_id.remove(&id)?;
        self.counts[host.state as usize] -= 1;
        self.by_origin.remove(&host.origin);
        Some(host)
    }

    /// Moves host `id` to `state`; returns false if there is no such host.
    pub fn set_state(&mut self, id: HostId, state: HostState) -> bool {
        let Some(host) = self.by_id.get_mut(&id) else {
            return false;
        };
        self.counts[host.state as usize] -= 1;
        self.counts[state as usize] += 1;
        host.state = state;
        true
    }

    /// Hosts in `state`. O(1).
    pub fn count(&self, state: HostState) -> usize {
        self.counts[state as usize]
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }
}
