//! Origins contacted on another host's behalf. A robots.txt redirect to another origin
//! (`http://a/robots.txt` -> `https://a/robots.txt`, `a` -> `www.a`) is fetched as a
//! job of the host that follows it, but it lands on the *target* origin, so the
//! target's politeness applies: the hop waits until the target may be contacted (no
//! request in flight to it, its interval over), and afterwards the target rests its
//! interval before anything else contacts it. When the hop's answer is the robots.txt
//! put in force (the last hop of the chain: usually the target's own file, as in
//! `http -> https`), that rest counts the file's `Crawl-delay`, which the crawler
//! knows from then on (a longer rest than needed costs only time).
//!
//! The target may be a host of the dictionary (then its own `in_flight` and
//! `next_allowed_ms` are checked by the dispatcher) or not; either way this table
//! remembers the hop: in flight, or ended and resting until a time. Entries go once
//! their rest is over. Size: one entry per robots.txt redirect hop in flight or
//! resting, O(1) per lookup. Like every politeness timer, it is not persisted: after a
//! manager restart a target may be contacted up to one interval early.
//!
//! This module must never decide what a host does next; it only keeps the facts.

use std::collections::HashMap;
use std::sync::Arc;

/// When an origin contacted on another host's behalf may be contacted again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Busy {
    /// A hop to it is in flight; its end is not known yet.
    InFlight,
    /// Resting until this wall ms.
    Until(u64),
}

/// The origins contacted on another host's behalf, by origin key.
#[derive(Debug, Default)]
pub(crate) struct BorrowedOrigins {
    map: HashMap<Arc<str>, Busy>,
}

impl BorrowedOrigins {
    /// A hop to `origin` starts.
    pub fn start(&mut self, origin: Arc<str>) {
        self.map.insert(origin, Busy::InFlight);
    }

    /// The hop to `origin` ended; it rests until `until_ms`.
    pub fn finish(&mut self, origin: Arc<str>, until_ms: u64) {
        self.map.insert(origin, Busy::Until(until_ms));
    }

    /// `origin` rests until `until_ms` at least: a longer rest than the one it has
    /// (or none) is taken, a hop in flight to it is left alone.
    pub fn rest_at_least(&mut self, origin: Arc<str>, until_ms: u64) {
        let busy = self.map.entry(origin).or_insert(Busy::Until(until_ms));
        if let Busy::Until(until) = busy {
            *until = (*until).max(until_ms);
        }
    }

    /// Why `origin` may not be contacted at `now_ms`, if it may not.
    pub fn busy(&self, origin: &str, now_ms: u64) -> Option<Busy> {
        match self.map.get(origin)? {
            Busy::Until(until) if *until <= now_ms => None,
            busy => Some(*busy),
        }
    }

    /// Forgets the origins whose rest is over. O(entries).
    pub fn expire(&mut self, now_ms: u64) {
        self.map
            .retain(|_, busy| !matches!(busy, Busy::Until(until) if *until <= now_ms));
    }

    /// Entries kept (hops in flight or resting).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hop_blocks_its_target_while_in_flight_and_resting() {
        let mut b = BorrowedOrigins::default();
        let o: Arc<str> = Arc::from("https://a.test");
        assert_eq!(b.busy(&o, 0), None);
        b.start(o.clone());
        assert_eq!(b.busy(&o, 5), Some(Busy::InFlight));
        assert_eq!(b.busy("http://a.test", 5), None);
        b.finish(o.clone(), 100);
        assert_eq!(b.busy(&o, 99), Some(Busy::Until(100)));
        assert_eq!(b.busy(&o, 100), None);
        b.expire(99);
        assert_eq!(b.len(), 1);
        b.expire(100);
        assert_eq!(b.len(), 0);
    }

    #[test]
    fn a_longer_rest_is_taken_and_a_hop_in_flight_kept() {
        let mut b = BorrowedOrigins::default();
        let o: Arc<str> = Arc::from("https://a.test");
        b.finish(o.clone(), 100);
        b.rest_at_least(o.clone(), 50);
        assert_eq!(b.busy(&o, 0), Some(Busy::Until(100)));
        b.rest_at_least(o.clone(), 1_000);
        assert_eq!(b.busy(&o, 999), Some(Busy::Until(1_000)));
        assert_eq!(b.busy(&o, 1_000), None);
        let other: Arc<str> = Arc::from("https://b.test");
        b.rest_at_least(other.clone(), 10);
        assert_eq!(b.busy(&other, 9), Some(Busy::Until(10)));
        b.start(other.clone());
        b.rest_at_least(other.clone(), 20);
        assert_eq!(b.busy(&other, 30), Some(Busy::InFlight));
    }

    #[test]
    fn expire_keeps_hops_in_flight() {
        let mut b = BorrowedOrigins::default();
        b.start(Arc::from("https://a.test"));
        b.expire(u64::MAX);
        assert_eq!(b.len(), 1);
    }
}
