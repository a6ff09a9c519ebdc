//! Per-IP politeness: many hosts (origins) often share one server, which per-host
//! intervals alone would overload. Each IP address has a count of requests in flight
//! (at most `ip_max_in_flight`) and a time before which no new request may start
//! (`ip_min_interval_ms` after the previous start).
//!
//! A ready host whose IP is at its limit is *parked on that IP* rather than put back in
//! the ready heap, so it never blocks hosts on other IPs (no head-of-line blocking) and
//! is not popped again and again while the IP is busy. When a request to the IP ends, or
//! its start interval passes, as many parked hosts as could start now are released
//! (best request number first) and go back to the ready heap.
//!
//! Memory: one slot per IP that has a request in flight, parked hosts, or an interval
//! still running (~100 bytes + 24 bytes per parked host); slots are dropped as soon as
//! none of that holds. O(log n) per operation. This module must never look at hosts or
//! do I/O: it counts and orders ids.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::IpAddr;

use super::hosts::HostId;
use super::ready::ReadyKey;
use super::waiting::TimerHeap;

/// How soon an IP with parked hosts is looked at again after a release.
const RECHECK_MS: u64 = 1_000;

#[derive(Debug, Default)]
struct IpSlot {
    in_flight: u32,
    next_start_ms: u64,
    parked: BinaryHeap<Reverse<(ReadyKey, HostId)>>,
}

/// The per-IP limits and the hosts parked on busy IPs.
#[derive(Debug)]
pub(crate) struct IpTable {
    slots: HashMap<IpAddr, IpSlot>,
    timers: TimerHeap<IpAddr>,
    max_in_flight: u32,
    min_interval_ms: u64,
}

impl IpTable {
    /// `max_in_flight` 0 and `min_interval_ms` 0 mean no limit.
    pub fn new(max_in_flight: u32, min_interval_ms: u64) -> Self {
        Self {
            slots: HashMap::new(),
            timers: TimerHeap::default(),
            max_in_flight,
            min_interval_ms,
        }
    }

    fn unlimited(&self) -> bool {
        self.max_in_flight == 0 && self.min_interval_ms == 0
    }

    /// Whether a request to `ip` may start at `now_ms`.
    pub fn can_start(&self, ip: IpAddr, now_ms: u64) -> bool {
        let Some(slot) = self.slots.get(&ip) else {
            return true;
        };
        let count_ok = self.max_in_flight == 0 || slot.in_flight < self.max_in_flight;
        count_ok && now_ms >= slot.next_start_ms
    }

    /// Parks a ready host on `ip` (which [`can_start`](Self::can_start) refused).
    pub fn park(&mut self, ip: IpAddr, key: ReadyKey, host: HostId) {
        let max = self.max_in_flight;
        let slot = self.slots.entry(ip).or_default();
        slot.parked.push(Reverse((key, host)));
        if max == 0 || slot.in_flight < max {
            // Blocked by time only: wake when the interval has passed.
            self.timers.push(slot.next_start_ms, ip);
        }
    }

    /// A request to `ip` starts at `now_ms`.
    pub fn start(&mut self, ip: IpAddr, now_ms: u64) {
        if self.unlimited() {
            return;
        }
        let interval = self.min_interval_ms;
        let slot = self.slots.entry(ip).or_default();
        slot.in_flight += 1;
        slot.next_start_ms = super::politeness::rest_until(now_ms, interval);
        let max = self.max_in_flight;
        if !slot.parked.is_empty() && (max == 0 || slot.in_flight < max) {
            self.timers.push(slot.next_start_ms, ip);
        }
    }

    /// A request to `ip` ended at `now_ms`; returns the parked hosts that may try now.
    pub fn finish(&mut self, ip: IpAddr, now_ms: u64) -> Vec<(ReadyKey, HostId)> {
        if let Some(slot) = self.slots.get_mut(&ip) {
            slot.in_flight = slot.in_flight.saturating_sub(1);
        }
        self.release(ip, now_ms)
    }

    /// The parked hosts of IPs whose interval has passed by `now_ms`.
    pub fn due(&mut self, now_ms: u64) -> Vec<(ReadyKey, HostId)> {
        let mut out = Vec::new();
        while let Some((_, ip)) = self.timers.pop_due(now_ms) {
            out.extend(self.release(ip, now_ms));
        }
        out
    }

    /// When the next IP interval ends (for the service's wake-up).
    pub fn next_due(&self) -> Option<u64> {
        self.timers.next_due()
    }

    fn release(&mut self, ip: IpAddr, now_ms: u64) -> Vec<(ReadyKey, HostId)> {
        let Some(slot) = self.slots.get_mut(&ip) else {
            return Vec::new();
        };
        if slot.parked.is_empty() {
            if slot.in_flight == 0 {
                if now_ms >= slot.next_start_ms {
                    self.slots.remove(&ip);
                } else {
                    self.timers.push(slot.next_start_ms, ip);
                }
            }
            return Vec::new();
        }
        let free = if self.max_in_flight == 0 {
            slot.parked.len()
        } else {
            self.max_in_flight.saturating_sub(slot.in_flight) as usize
        };
        if free == 0 {
            return Vec::new(); // The next finish releases.
        }
        if now_ms < slot.next_start_ms {
            self.timers.push(slot.next_start_ms, ip);
            return Vec::new();
        }
        // With a start interval only one request can start now; its start schedules
        // the next release.
        let n = if self.min_interval_ms > 0 { 1 } else { free };
        let released: Vec<_> = (0..n.min(slot.parked.len()))
            .filter_map(|_| slot.parked.pop().map(|Reverse(e)| e))
            .collect();
        if !slot.parked.is_empty() {
            // A released host may not start after all (its DNS expired, it was
            // blacklisted): look again later, so no parked host waits forever.
            let again = slot
                .next_start_ms
                .max(now_ms.saturating_add(RECHECK_MS.max(self.min_interval_ms)));
            self.timers.push(again, ip);
        }
        released
    }

    /// Hosts parked over all IPs.
    #[cfg(test)]
    pub fn parked(&self) -> usize {
        self.slots.values().map(|s| s.parked.len()).sum()
    }

    /// IPs with a slot.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn count_limit_parks_and_finish_releases_best_first() {
        let mut t = IpTable::new(1, 0);
        assert!(t.can_start(ip(1), 0));
        t.start(ip(1), 0);
        assert!(!t.can_start(ip(1), 0));
        assert!(t.can_start(ip(2), 0), "other IPs are not blocked");
        t.park(ip(1), ReadyKey::page(9), 7);
        t.park(ip(1), ReadyKey::page(3), 8);
        assert_eq!(t.parked(), 2);
        assert!(t.due(1_000).is_empty(), "count-blocked IPs need a finish");
        assert_eq!(t.finish(ip(1), 10), vec![(ReadyKey::page(3), 8)]);
        assert_eq!(t.parked(), 1);
    }

    #[test]
    fn interval_limit_wakes_by_timer_and_slots_are_dropped() {
        let mut t = IpTable::new(0, 500);
        t.start(ip(1), 1_000);
        assert!(!t.can_start(ip(1), 1_499));
        t.park(ip(1), ReadyKey::page(1), 1);
        // 500 ms and one more for the whole-millisecond clock (`rest_until`).
        assert_eq!(t.next_due(), Some(1_501));
        assert!(t.due(1_500).is_empty());
        assert_eq!(t.due(1_501), vec![(ReadyKey::page(1), 1)]);
        assert!(t.can_start(ip(1), 1_501));
        t.finish(ip(1), 1_600);
        assert_eq!(t.len(), 0, "idle slot dropped");
    }
}
