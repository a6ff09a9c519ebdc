//! Resolvers: the host names the frontier needs resolved go out in batches of
//! `dns_batch_size`, round-robin over the connected resolvers (at most
//! [`MAX_BATCHES_PER_RESOLVER`] outstanding each), and the answers go to
//! [`Frontier::on_dns`](crate::Frontier::on_dns).
//!
//! A resolver answers each batch with one `ResolveAnswers` (rarely several with the
//! same id), on the connection the batch came on, or not at all: when a resolver
//! goes away, or does not answer a batch within `dns_batch_timeout_ms`, the names
//! still unanswered are sent again (to any resolver). Late answers are still used:
//! an answer for a name nobody waits for only fills the frontier's cache.
//!
//! Names wait in a backlog while no resolver is connected; the frontier is asked
//! for names only when one is. This module must never resolve anything itself.
//! Memory: the names in the backlog and in outstanding batches (bounded by the
//! frontier's pipeline of hosts). [`DnsBatches`] keeps its state private; the
//! core (`engine/`) feeds it names and resolvers and sends what it assigns.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use spool::protocol::RequestId;
use tokio::time::Instant;

use super::conn::ConnId;

/// Batches outstanding per resolver; more names wait in the backlog.
pub(crate) const MAX_BATCHES_PER_RESOLVER: usize = 32;

/// A batch sent and not completely answered.
#[derive(Debug)]
struct Pending {
    resolver: ConnId,
    hosts: HashSet<String>,
    sent: Instant,
}

/// Names to resolve and batches in flight.
#[derive(Debug)]
pub(crate) struct DnsBatches {
    batch_size: usize,
    timeout: Duration,
    backlog: VecDeque<String>,
    queued: HashSet<String>,
    pending: HashMap<RequestId, Pending>,
    next_id: u64,
    turn: usize,
}

impl DnsBatches {
    /// No names yet.
    pub fn new(batch_size: usize, timeout: Duration) -> Self {
        Self {
            batch_size: batch_size.max(1),
            timeout,
            backlog: VecDeque::new(),
            queued: HashSet::new(),
            pending: HashMap::new(),
            next_id: 1,
            turn: 0,
        }
    }

    /// Adds names to the backlog (each name once).
    pub fn want(&mut self, names: impl IntoIterator<Item = String>) {
        for name in names {
            if self.queued.insert(name.clone()) {
                self.backlog.push_back(name);
            }
        }
    }

    /// Cuts the backlog into batches for `resolvers` (round-robin, skipping those
    /// with [`MAX_BATCHES_PER_RESOLVER`] outstanding) and records them as sent.
    pub fn assign(
        &mut self,
        resolvers: &[ConnId],
        now: Instant,
    ) -> Vec<(ConnId, RequestId, Vec<String>)> {
        let mut out = Vec::new();
        if resolvers.is_empty() {
            return out;
        }
        let mut busy: HashMap<ConnId, usize> = HashMap::new();
        for p in self.pending.values() {
            *busy.entry(p.resolver).or_default() += 1;
        }
        let mut idle_turns = 0;
        while !self.backlog.is_empty() && idle_turns < resolvers.len() {
            let resolver = resolvers[self.turn % resolvers.len()];
            self.turn = self.turn.wrapping_add(1);
            let load = busy.entry(resolver).or_default();
            if *load >= MAX_BATCHES_PER_RESOLVER {
                idle_turns += 1;
                continue;
            }
            idle_turns = 0;
            *load += 1;
            let n = self.batch_size.min(self.backlog.len());
            let hosts: Vec<String> = self.backlog.drain(..n).collect();
            for h in &hosts {
                self.queued.remove(h);
            }
            let id = RequestId(self.next_id);
            self.next_id += 1;
            let pending = Pending {
                resolver,
                hosts: hosts.iter().cloned().collect(),
                sent: now,
            };
            self.pending.insert(id, pending);
            out.push((resolver, id, hosts));
        }
        out
    }

    /// Notes answers for batch `id` (several messages may answer one batch).
    pub fn answered<'a>(&mut self, id: RequestId, hosts: impl IntoIterator<Item = &'a str>) {
        if let Some(p) = self.pending.get_mut(&id) {
            for h in hosts {
                p.hosts.remove(h);
            }
            if p.hosts.is_empty() {
                self.pending.remove(&id);
            }
        }
    }

    /// Puts back the unanswered names of `resolver`'s batches; returns how many
    /// batches that was.
    pub fn resolver_lost(&mut self, resolver: ConnId) -> usize {
        self.take_back(|p| p.resolver == resolver)
    }

    /// Puts back the unanswered names of batches older than the timeout.
    pub fn expire(&mut self, now: Instant) -> usize {
        let timeout = self.timeout;
        self.take_back(|p| now.saturating_duration_since(p.sent) >= timeout)
    }

    fn take_back(&mut self, which: impl Fn(&Pending) -> bool) -> usize {
        let mut ids: Vec<RequestId> = self
            .pending
            .iter()
            .filter(|(_, p)| which(p))
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        for id in &ids {
            if let Some(p) = self.pending.remove(id) {
                let mut hosts: Vec<String> = p.hosts.into_iter().collect();
                hosts.sort_unstable();
                self.want(hosts);
            }
        }
        ids.len()
    }

    /// When the oldest outstanding batch times out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.sent + self.timeout).min()
    }

    /// Names waiting for a resolver.
    pub fn backlog_len(&self) -> usize {
        self.backlog.len()
    }

    /// Batches sent and not completely answered.
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("h{i}.test")).collect()
    }

    #[test]
    fn batches_go_round_robin_and_come_back_when_a_resolver_is_lost() {
        let now = Instant::now();
        let mut d = DnsBatches::new(2, Duration::from_secs(5));
        d.want(names(5));
        d.want(names(1)); // Duplicates are dropped.
        let sent = d.assign(&[10, 20], now);
        let shape: Vec<(ConnId, usize)> = sent.iter().map(|(c, _, h)| (*c, h.len())).collect();
        assert_eq!(shape, [(10, 2), (20, 2), (10, 1)]);
        assert_eq!(d.outstanding(), 3);
        // Partial answers, then the rest.
        let (_, id, hosts) = &sent[1];
        d.answered(*id, [hosts[0].as_str()]);
        assert_eq!(d.outstanding(), 3);
        d.answered(*id, [hosts[1].as_str()]);
        assert_eq!(d.outstanding(), 2);
        // Resolver 10 goes away: its three names are asked of 20.
        assert_eq!(d.resolver_lost(10), 2);
        assert_eq!(d.backlog_len(), 3);
        let again = d.assign(&[20], now);
        let mut asked: Vec<String> = again.into_iter().flat_map(|(_, _, h)| h).collect();
        asked.sort();
        assert_eq!(asked, ["h0.test", "h1.test", "h4.test"]);
    }

    #[test]
    fn unanswered_batches_expire_and_busy_resolvers_are_skipped() {
        let now = Instant::now();
        let mut d = DnsBatches::new(1, Duration::from_secs(5));
        d.want(names(MAX_BATCHES_PER_RESOLVER + 3));
        let sent = d.assign(&[1], now);
        assert_eq!(sent.len(), MAX_BATCHES_PER_RESOLVER);
        assert_eq!(d.backlog_len(), 3);
        assert_eq!(d.next_deadline(), Some(now + Duration::from_secs(5)));
        assert_eq!(d.expire(now + Duration::from_secs(4)), 0);
        assert_eq!(
            d.expire(now + Duration::from_secs(5)),
            MAX_BATCHES_PER_RESOLVER
        );
        assert_eq!(d.backlog_len(), MAX_BATCHES_PER_RESOLVER + 3);
    }
}
