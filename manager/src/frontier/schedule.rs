//! [`Schedule`]: when each host may be contacted, as the frontier's four timetables
//! seen as one: the ready heap (hosts that may go now, in request order, `ready`),
//! the waiting timers (hosts resting until a time, `waiting`), the per-IP slots
//! (hosts parked on a busy address, `ip`) and the origins contacted on another
//! host's behalf (`borrowed`).
//!
//! All four delete lazily: an entry names a host id, and the frontier checks the
//! host's state when the entry comes out. So the schedule never looks at a host,
//! and a host changes state without telling it. This module must never decide what
//! a host does next, nor read the store: it orders ids and keeps the facts.
//!
//! Cost: O(log n) per push and pop; memory: at most a few entries per host in memory,
//! one slot per busy IP, one entry per robots.txt redirect hop in flight or resting.

use std::net::IpAddr;
use std::sync::Arc;

use super::borrowed::{BorrowedOrigins, Busy};
use super::hosts::HostId;
use super::ip::IpTable;
use super::ready::{ReadyHeap, ReadyKey};
use super::waiting::TimerHeap;

/// When each host may go next. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Schedule {
    ready: ReadyHeap,
    waiting: TimerHeap<HostId>,
    ips: IpTable,
    borrowed: BorrowedOrigins,
}

impl Schedule {
    /// An empty schedule with the per-IP limits (0: no limit).
    pub fn new(ip_max_in_flight: u32, ip_min_interval_ms: u64) -> Schedule {
        Schedule {
            ready: ReadyHeap::default(),
            waiting: TimerHeap::default(),
            ips: IpTable::new(ip_max_in_flight, ip_min_interval_ms),
            borrowed: BorrowedOrigins::default(),
        }
    }

    /// Host `id` may go now, in line at `key`.
    pub fn ready(&mut self, key: ReadyKey, id: HostId) {
        self.ready.push(key, id);
    }

    /// The first host in line (possibly stale: the caller checks its state).
    pub fn pop_ready(&mut self) -> Option<(ReadyKey, HostId)> {
        self.ready.pop()
    }

    /// Host `id` rests until `due_ms`.
    pub fn rest(&mut self, due_ms: u64, id: HostId) {
        self.waiting.push(due_ms, id);
    }

    /// A host whose rest is over at `now_ms` (possibly stale).
    pub fn pop_rested(&mut self, now_ms: u64) -> Option<(u64, HostId)> {
        self.waiting.pop_due(now_ms)
    }

    /// Whether a request to `ip` may start at `now_ms`.
    pub fn ip_can_start(&self, ip: IpAddr, now_ms: u64) -> bool {
        self.ips.can_start(ip, now_ms)
    }

    /// Host `id`, in line at `key`, waits for `ip` to be free.
    pub fn park(&mut self, ip: IpAddr, key: ReadyKey, id: HostId) {
        self.ips.park(ip, key, id);
    }

    /// A request to `ip` starts.
    pub fn ip_start(&mut self, ip: IpAddr, now_ms: u64) {
        self.ips.start(ip, now_ms);
    }

    /// A request to `ip` ended: the hosts parked on it that may start now.
    pub fn ip_finish(&mut self, ip: IpAddr, now_ms: u64) -> Vec<(ReadyKey, HostId)> {
        self.ips.finish(ip, now_ms)
    }

    /// Hosts parked on IPs whose interval ended by `now_ms`.
    pub fn ips_due(&mut self, now_ms: u64) -> Vec<(ReadyKey, HostId)> {
        self.ips.due(now_ms)
    }

    /// A hop to `origin` on another host's behalf starts.
    pub fn borrow(&mut self, origin: Arc<str>) {
        self.borrowed.start(origin);
    }

    /// The hop to `origin` ended; the origin rests until `until_ms`.
    pub fn give_back(&mut self, origin: Arc<str>, until_ms: u64) {
        self.borrowed.finish(origin, until_ms);
    }

    /// `origin`, contacted by a hop that has ended, rests until `until_ms` at least.
    pub fn rest_borrowed_at_least(&mut self, origin: Arc<str>, until_ms: u64) {
        self.borrowed.rest_at_least(origin, until_ms);
    }

    /// Why `origin` may not be contacted at `now_ms` for a hop it was borrowed by.
    pub fn borrowed_busy(&self, origin: &str, now_ms: u64) -> Option<Busy> {
        self.borrowed.busy(origin, now_ms)
    }

    /// Forgets the borrowed origins whose rest is over. O(entries).
    pub fn expire(&mut self, now_ms: u64) {
        self.borrowed.expire(now_ms);
    }

    /// The next time a rest or an IP interval ends.
    pub fn next_due(&self) -> Option<u64> {
        [self.waiting.next_due(), self.ips.next_due()]
            .into_iter()
            .flatten()
            .min()
    }

    /// IP addresses with a slot (admin page).
    pub fn ips_tracked(&self) -> usize {
        self.ips.len()
    }
}
