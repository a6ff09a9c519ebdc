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
//! Memory per host: the struct (~250 bytes) + its requests in flight (~40 bytes
//! each, at most `connections_per_host`) + its origin and name (~2 x 30 bytes) +
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
    /// Waiting for a report: `connections_per_host` requests in flight (with the
    /// default of 1: one page fetch in flight), or some in flight and nothing else it
    /// may start before they end (queue empty, or its address or robots.txt must be
    /// refreshed once they have ended). In no heap: the next report moves it on.
    InFlight,
    /// Resting for its politeness interval after a fetch.
    Waiting,
    /// Resting after a failure, or a 429/503 answer (growing back-off, or the
    /// server's `Retry-After`).
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

/// A host's queue: URLs `head..tail` are in RocksDB (family `queue`), the next few
/// read ahead in memory.
#[derive(Debug, Default)]
pub(crate) struct HostQueue {
    /// Queue bounds: URLs `head..tail` are in RocksDB.
    pub head: u64,
    pub tail: u64,
    /// The next URLs from `head` on, read ahead (front = head).
    pub buffer: VecDeque<(u64, QueueEntry)>,
    /// Request number of the head URL, when known without reading.
    pub head_reqno: Option<u64>,
}

/// What went wrong with a host lately: failures, failed tries of queued URLs, a run of
/// 429/503 answers.
#[derive(Debug, Default)]
pub(crate) struct Trouble {
    pub failures: u32,
    /// Failed tries (connect failure/timeout) of queued URLs put back after
    /// them, by seq: at most a few entries, at the front of the queue.
    pub tries: Vec<(u64, u32)>,
    /// When the host's last failure was reported (wall ms): a request that started
    /// before it and fails too is not counted as another failure.
    pub failed_at_ms: u64,
    /// Its current run of 429/503 answers (`throttle`), if its last answer was one.
    pub throttle: Option<super::throttle::Throttle>,
    /// When the first failing try of its current run of failures started (wall
    /// ms): `host_retry_window_ms` counts from it. `None` while it has not failed,
    /// and after a restart until it fails again (not stored).
    pub since_ms: Option<u64>,
}

impl Trouble {
    /// The host answered (a page stored, a robots.txt verdict): its run of
    /// failures is over.
    pub fn recovered(&mut self) {
        self.failures = 0;
        self.since_ms = None;
    }
}

/// When a host may be contacted, and what its interval depends on.
#[derive(Debug, Default)]
pub(crate) struct Timing {
    /// The interval the application asked for (already clamped).
    pub interval_override_ms: Option<u64>,
    /// How long its last fetch took, if known (adaptive intervals).
    pub last_fetch_ms: Option<u64>,
    /// Earliest wall ms the host may be contacted again.
    pub next_allowed_ms: u64,
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
    /// Its URLs.
    pub queue: HostQueue,
    /// Resolved address and until when (wall ms) it may be used.
    pub addr: Option<(IpAddr, u64)>,
    pub robots: Option<RobotsInForce>,
    pub chase: RobotsChase,
    pub trouble: Trouble,
    pub timing: Timing,
    /// The requests in flight (pages, or the one robots.txt fetch), in dispatch
    /// order: at most `connections_per_host`.
    pub out: Vec<Out>,
}

/// One request of a host in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Out {
    pub job: JobId,
    /// The address it went to.
    pub ip: IpAddr,
    /// For a page, the seq of its URL, which stays in RocksDB below the host's
    /// `head` until the report (`None`: a robots.txt fetch).
    pub seq: Option<u64>,
    /// Failed tries of this URL before this one.
    pub tries: u32,
    /// When it was dispatched (wall ms).
    pub started_ms: u64,
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
            queue: HostQueue {
                head,
                tail: head,
                ..HostQueue::default()
            },
            addr: None,
            robots: None,
            chase: RobotsChase::default(),
            trouble: Trouble::default(),
            timing: Timing::default(),
            out: Vec::new(),
        }
    }

    /// Where the host is in its life cycle.
    pub fn state(&self) -> HostState {
        self.state
    }

    /// URLs queued and not dispatched (those in flight are below `head`).
    pub fn queued(&self) -> u64 {
        self.queue.tail - self.queue.head
    }

    /// Whether the host has queued URLs or requests in flight, so its record must
    /// be kept.
    pub fn has_urls(&self) -> bool {
        self.queued() > 0 || !self.out.is_empty()
    }

    /// Where job `job` is in [`out`](Self::out).
    pub fn out_index(&self, job: JobId) -> Option<usize> {
        self.out.iter().position(|o| o.job == job)
    }

    /// The durable part of the host.
    pub fn record(&self) -> HostRecord {
        HostRecord {
            origin: self.origin.to_string(),
            head: self.queue.head,
            tail: self.queue.tail,
            interval_ms: self.timing.interval_override_ms,
            failures: self.trouble.failures,
            out: self.out.iter().filter_map(|o| o.seq).collect(),
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
    /// The id the next new host gets (stored as `META_NEXT_HOST` by the callers
    /// that create hosts).
    next_id: HostId,
    by_origin: HashMap<Arc<str>, HostId>,
    by_id: HashMap<HostId, Host>,
    counts: [usize; HostState::ALL.len()],
    /// Hosts by their number of requests in flight (index 0 unused), changed only
    /// through [`Hosts::push_out`] and [`Hosts::take_out`].
    out_counts: Vec<usize>,
    /// Hosts `Ready` or `Parked` with requests in flight (see [`Hosts::ready_busy`]).
    ready_busy: usize,
}

/// Whether `host` is ready (or parked) for another request while some are in flight.
fn is_ready_busy(host: &Host) -> bool {
    !host.out.is_empty() && matches!(host.state, HostState::Ready | HostState::Parked)
}

impl Hosts {
    /// An empty dictionary whose new hosts are numbered from `next_id` on.
    pub fn numbered_from(next_id: HostId) -> Hosts {
        Hosts {
            next_id,
            ..Hosts::default()
        }
    }

    /// A new host id (never given before, restarts included once the caller stored
    /// [`next_id`](Self::next_id)).
    pub fn new_id(&mut self) -> HostId {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// The id the next new host gets, to store.
    pub fn next_id(&self) -> HostId {
        self.next_id
    }

    /// Host `id` exists (rebuilt from its record): new ids come after it.
    pub fn saw_id(&mut self, id: HostId) {
        self.next_id = self.next_id.max(id + 1);
    }

    pub fn id_of(&self, origin: &str) -> Option<HostId> {
        self.by_origin.get(origin).copied()
    }

    pub fn get(&self, id: HostId) -> Option<&Host> {
        self.by_id.get(&id)
    }

    pub fn get_mut(&mut self, id: HostId) -> Option<&mut Host> {
        self.by_id.get_mut(&id)
    }

    /// Every host in memory, in no order.
    pub fn iter(&self) -> impl Iterator<Item = &Host> {
        self.by_id.values()
    }

    pub fn insert(&mut self, host: Host) {
        self.counts[host.state as usize] += 1;
        self.count_out(host.out.len(), true);
        self.ready_busy += usize::from(is_ready_busy(&host));
        self.by_origin.insert(host.origin.clone(), host.id);
        if let Some(old) = self.by_id.insert(host.id, host) {
            self.counts[old.state as usize] -= 1;
            self.count_out(old.out.len(), false);
            self.ready_busy -= usize::from(is_ready_busy(&old));
        }
    }

    pub fn remove(&mut self, id: HostId) -> Option<Host> {
        let host = self.by_id.remove(&id)?;
        self.counts[host.state as usize] -= 1;
        self.count_out(host.out.len(), false);
        self.ready_busy -= usize::from(is_ready_busy(&host));
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
        self.ready_busy -= usize::from(is_ready_busy(host));
        host.state = state;
        self.ready_busy += usize::from(is_ready_busy(host));
        true
    }

    /// A request of host `id` goes out.
    pub fn push_out(&mut self, id: HostId, out: Out) {
        let Some(host) = self.by_id.get_mut(&id) else {
            return;
        };
        let before = host.out.len();
        self.ready_busy -= usize::from(is_ready_busy(host));
        host.out.push(out);
        self.ready_busy += usize::from(is_ready_busy(host));
        self.count_out(before, false);
        self.count_out(before + 1, true);
    }

    /// Job `job` of host `id` is no longer in flight: its entry, if it was.
    /// O(requests of the host in flight).
    pub fn take_out(&mut self, id: HostId, job: JobId) -> Option<Out> {
        let host = self.by_id.get_mut(&id)?;
        let i = host.out_index(job)?;
        let before = host.out.len();
        self.ready_busy -= usize::from(is_ready_busy(host));
        let out = host.out.remove(i);
        self.ready_busy += usize::from(is_ready_busy(host));
        self.count_out(before, false);
        self.count_out(before - 1, true);
        Some(out)
    }

    fn count_out(&mut self, n: usize, add: bool) {
        if n == 0 {
            return;
        }
        if self.out_counts.len() <= n {
            self.out_counts.resize(n + 1, 0);
        }
        if add {
            self.out_counts[n] += 1;
        } else {
            self.out_counts[n] = self.out_counts[n].saturating_sub(1);
        }
    }

    /// Hosts with 1, 2, ... requests in flight (element `i` counts hosts with
    /// `i + 1`), without trailing zeros. O(`connections_per_host`).
    pub fn by_out(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.out_counts.iter().skip(1).copied().collect();
        while v.last() == Some(&0) {
            v.pop();
        }
        v
    }

    /// Hosts `Ready` or `Parked` while some of their requests are in flight (with
    /// `connections_per_host` above 1): fetching as much as ready. O(1).
    pub fn ready_busy(&self) -> usize {
        self.ready_busy
    }

    /// Hosts in `state`. O(1).
    pub fn count(&self, state: HostState) -> usize {
        self.counts[state as usize]
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }
}
