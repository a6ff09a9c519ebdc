//! The ready queue: a min-heap of hosts that may be contacted now, keyed by the request
//! number of their head URL (Polybot section 3.4), so the next job is always the URL
//! asked for earliest among all ready hosts.
//!
//! Hosts that need their robots.txt are keyed ahead of every page ([`ReadyKey::robots`]):
//! a robots fetch unblocks a whole host, so it goes first.
//!
//! Entries are not removed when a host changes state some other way: the frontier
//! checks the host's state when it pops and skips stale entries (lazy deletion), so
//! every operation is O(log n) and the heap holds at most one live entry per host.
//! This module must never look at hosts itself; it only orders ids.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::hosts::HostId;

/// A ready host's place in line: robots fetches first, then pages by request number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ReadyKey {
    /// 0 for a robots fetch, 1 for a page.
    class: u8,
    /// Request number of the host's head URL.
    reqno: u64,
}

impl ReadyKey {
    /// The key of a host whose robots.txt must be fetched; `reqno` breaks ties.
    pub fn robots(reqno: u64) -> Self {
        Self { class: 0, reqno }
    }

    /// The key of a host whose head page has request number `reqno`.
    pub fn page(reqno: u64) -> Self {
        Self { class: 1, reqno }
    }

    /// Whether this is a robots.txt fetch's key.
    pub fn is_robots(self) -> bool {
        self.class == 0
    }
}

/// Min-heap of `(key, host)`.
#[derive(Debug, Default)]
pub(crate) struct ReadyHeap {
    heap: BinaryHeap<Reverse<(ReadyKey, HostId)>>,
}

impl ReadyHeap {
    pub fn push(&mut self, key: ReadyKey, host: HostId) {
        self.heap.push(Reverse((key, host)));
    }

    pub fn pop(&mut self) -> Option<(ReadyKey, HostId)> {
        self.heap.pop().map(|Reverse(e)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robots_first_then_lowest_request_number() {
        let mut h = ReadyHeap::default();
        h.push(ReadyKey::page(5), 1);
        h.push(ReadyKey::page(2), 2);
        h.push(ReadyKey::robots(9), 3);
        h.push(ReadyKey::page(7), 4);
        let order: Vec<HostId> = std::iter::from_fn(|| h.pop().map(|(_, id)| id)).collect();
        assert_eq!(order, [3, 2, 1, 4]);
    }
}
