//! The DNS cache and the names waiting for a resolver's answer.
//!
//! The frontier never resolves: it hands host names to the service
//! (`hosts_needing_dns`), which batches them to resolvers, and takes the answers back
//! (`on_dns`). Answers are cached by name (so `http://` and `https://` of one name
//! share one lookup) for their TTL, which resolvers already clamp; the frontier adds a
//! floor of [`MIN_TTL_MS`] so a zero TTL cannot make a host re-resolve forever. A name
//! handed out and not answered within `dns_retry_ms` is handed out again.
//!
//! Memory: one entry per name answered within its TTL (~80 bytes + the name), plus one
//! per name being resolved with the ids of the hosts waiting for it. Expired entries
//! are dropped by [`Dns::expire`] in time order; all operations are O(log n). This
//! module must never do network I/O.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;

use spool::protocol::{NegativeKind, Resolution};

use super::hosts::HostId;

/// The shortest time an answer is cached, whatever its TTL.
pub(crate) const MIN_TTL_MS: u64 = 10_000;

/// A cached answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DnsAnswer {
    /// The address to connect to.
    Addr(IpAddr),
    /// Every address is private/loopback/link-local and the config forbids them.
    Forbidden(IpAddr),
    /// No usable address.
    Negative(NegativeKind, String),
}

#[derive(Debug)]
struct Entry {
    answer: DnsAnswer,
    expires_ms: u64,
}

/// Cache, waiters and the names to ask.
#[derive(Debug, Default)]
pub(crate) struct Dns {
    cache: HashMap<Arc<str>, Entry>,
    expiry: BinaryHeap<Reverse<(u64, Arc<str>)>>,
    waiters: HashMap<Arc<str>, Vec<HostId>>,
    to_ask: VecDeque<Arc<str>>,
    asked: BinaryHeap<Reverse<(u64, Arc<str>)>>,
}

impl Dns {
    /// The cached answer for `name` if still valid at `now_ms`.
    pub fn lookup(&self, name: &str, now_ms: u64) -> Option<(&DnsAnswer, u64)> {
        self.cache
            .get(name)
            .filter(|e| now_ms < e.expires_ms)
            .map(|e| (&e.answer, e.expires_ms))
    }

    /// Host `host` needs `name` resolved; the name is asked unless it already is.
    pub fn want(&mut self, name: Arc<str>, host: HostId) {
        let waiting = self.waiters.entry(name.clone()).or_default();
        if waiting.is_empty() {
            self.to_ask.push_back(name);
        }
        if !waiting.contains(&host) {
            waiting.push(host);
        }
    }

    /// The names to hand to resolvers now; each is handed out again if not answered
    /// within `retry_ms`.
    pub fn take_to_ask(&mut self, now_ms: u64, retry_ms: u64) -> Vec<String> {
        let mut out = Vec::with_capacity(self.to_ask.len());
        while let Some(name) = self.to_ask.pop_front() {
            if self.waiters.contains_key(&name) {
                out.push(name.to_string());
                self.asked
                    .push(Reverse((now_ms.saturating_add(retry_ms), name)));
            }
        }
        out
    }

    /// The hosts waiting for `name`.
    pub fn waiters_of(&self, name: &str) -> Vec<HostId> {
        self.waiters.get(name).cloned().unwrap_or_default()
    }

    /// Names waiting to be handed out.
    pub fn to_ask_len(&self) -> usize {
        self.to_ask.len()
    }

    /// Records the answer for `name`; returns the hosts that waited for it.
    pub fn answer(
        &mut self,
        name: &str,
        resolution: &Resolution,
        allow_private: bool,
        now_ms: u64,
    ) -> (DnsAnswer, Vec<HostId>) {
        let (answer, ttl_secs) = match resolution {
            Resolution::Addresses { addrs, ttl_secs } => {
                let usable = addrs.iter().find(|a| allow_private || is_public(**a));
                let answer = match (usable, addrs.first()) {
                    (Some(a), _) => DnsAnswer::Addr(*a),
                    (None, Some(a)) => DnsAnswer::Forbidden(*a),
                    (None, None) => {
                        DnsAnswer::Negative(NegativeKind::NoAddresses, "empty answer".into())
                    }
                };
                (answer, *ttl_secs)
            }
            Resolution::Negative {
                kind,
                ttl_secs,
                detail,
            } => (DnsAnswer::Negative(*kind, detail.clone()), *ttl_secs),
        };
        let expires_ms = now_ms.saturating_add((u64::from(ttl_secs) * 1000).max(MIN_TTL_MS));
        let key: Arc<str> = Arc::from(name);
        // A failed lookup is not cached: the host backs off and asks again.
        if !matches!(answer, DnsAnswer::Negative(NegativeKind::Failure, _)) {
            self.cache.insert(
                key.clone(),
                Entry {
                    answer: answer.clone(),
                    expires_ms,
                },
            );
            self.expiry.push(Reverse((expires_ms, key)));
        }
        let hosts = self.waiters.remove(name).unwrap_or_default();
        (answer, hosts)
    }

    /// Drops expired answers and re-queues names whose answer is overdue.
    pub fn expire(&mut self, now_ms: u64) {
        while let Some(Reverse((due, _))) = self.expiry.peek() {
            if *due > now_ms {
                break;
            }
            let Some(Reverse((_, name))) = self.expiry.pop() else {
                break;
            };
            if self
                .cache
                .get(&name)
                .is_some_and(|e| e.expires_ms <= now_ms)
            {
                self.cache.remove(&name);
            }
        }
        while let Some(Reverse((due, _))) = self.asked.peek() {
            if *due > now_ms {
                break;
            }
            let Some(Reverse((_, name))) = self.asked.pop() else {
                break;
            };
            if self.waiters.contains_key(&name) && !self.to_ask.contains(&name) {
                tracing::debug!(name = %name, "no DNS answer in time; asking again");
                self.to_ask.push_back(name);
            }
        }
    }

    /// When [`expire`](Self::expire) has work next.
    pub fn next_due(&self) -> Option<u64> {
        let a = self.asked.peek().map(|Reverse((d, _))| *d);
        let b = self.expiry.peek().map(|Reverse((d, _))| *d);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Cached answers.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }
}

/// Whether `ip` is a public (globally routable) unicast address.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || s[0] == 0x2001 && s[1] == 0x0db8)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(list: &[&str]) -> Resolution {
        Resolution::Addresses {
            addrs: list.iter().map(|a| a.parse().unwrap()).collect(),
            ttl_secs: 60,
        }
    }

    #[test]
    fn waiters_are_asked_once_answered_together_and_cached() {
        let mut d = Dns::default();
        d.want("a.example".into(), 1);
        d.want("a.example".into(), 2);
        assert_eq!(d.take_to_ask(0, 1_000), ["a.example"]);
        assert!(d.take_to_ask(0, 1_000).is_empty());
        d.expire(1_000);
        assert_eq!(d.take_to_ask(1_000, 1_000), ["a.example"], "re-asked");
        let (answer, hosts) = d.answer(
            "a.example",
            &addrs(&["10.0.0.1", "93.184.216.34"]),
            false,
            0,
        );
        assert_eq!(answer, DnsAnswer::Addr("93.184.216.34".parse().unwrap()));
        assert_eq!(hosts, [1, 2]);
        assert!(d.lookup("a.example", 59_999).is_some());
        d.expire(60_000);
        assert!(d.lookup("a.example", 60_000).is_none());
        assert_eq!(d.cached(), 0);
    }

    #[test]
    fn private_addresses_are_forbidden_unless_allowed() {
        let mut d = Dns::default();
        let (a, _) = d.answer("l", &addrs(&["127.0.0.1"]), false, 0);
        assert!(matches!(a, DnsAnswer::Forbidden(_)));
        let (a, _) = d.answer("l", &addrs(&["127.0.0.1"]), true, 0);
        assert!(matches!(a, DnsAnswer::Addr(_)));
        for ip in [
            "10.1.2.3",
            "192.168.0.1",
            "169.254.1.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "100.64.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
