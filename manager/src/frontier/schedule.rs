//! Moving hosts between states: [`Frontier::advance`] decides what a host needs next
//! (rest, DNS, robots.txt, or the ready heap), [`Frontier::tick`] runs the timers,
//! and failures lead to back-off or death.
//!
//! This module must never hand out jobs (that is `dispatch`) or interpret reports
//! (`report`, `robots_fetch`); it only applies the state machine.

use std::sync::Arc;

use spool::OutcomeReason;

use super::hosts::{Host, HostId, HostState, RobotsInForce};
use super::origin::Origin;
use super::ready::ReadyKey;
use super::records::{CachedRobots, HostRecord, OriginRecord};
use super::store::{Batch, Cf};
use super::{Frontier, FrontierError};
use crate::politeness::{self, HostPace};
use crate::robots::RobotsPolicy;

impl Frontier {
    /// Runs the timers due at `now_ms`: rested hosts go back to work, busy IPs release
    /// their parked hosts, overdue DNS questions are asked again; then loads request
    /// files if the ready pipeline is short of `s`, and publishes outcome files that
    /// are full or old enough. Call it at [`next_wakeup`](Self::next_wakeup) (calling
    /// it more often is harmless); [`next_jobs`](Self::next_jobs) calls it too.
    pub fn tick(&mut self, now_ms: u64) -> Result<(), FrontierError> {
        let mut batch = Batch::default();
        while let Some((_, id)) = self.waiting.pop_due(now_ms) {
            let Some(host) = self.hosts.get(id) else {
                continue;
            };
            let resting = matches!(host.state(), HostState::Waiting | HostState::BackedOff);
            if resting && host.next_allowed_ms <= now_ms {
                self.advance(id, now_ms, &mut batch)?;
            }
        }
        for (key, id) in self.ips.due(now_ms) {
            self.unpark(key, id);
        }
        self.dns.expire(now_ms);
        self.borrowed.expire(now_ms);
        self.commit(batch)?;
        self.load_if_needed(now_ms)?;
        self.outcomes.flush(&self.store, now_ms, false)?;
        Ok(())
    }

    /// When [`tick`](Self::tick) has work next: a host's rest ends, an IP interval
    /// ends, a DNS question is overdue, an outcome file is due, or the request folders
    /// should be listed again. `None`: nothing is scheduled (wait for an event).
    pub fn next_wakeup(&self) -> Option<u64> {
        let mut due = [
            self.waiting.next_due(),
            self.ips.next_due(),
            self.dns.next_due(),
            self.outcomes.next_deadline(),
            None,
        ];
        if self.pipeline() < self.ready_target() {
            due[4] = self.requests.next_scan();
        }
        due.into_iter().flatten().min()
    }

    /// Hosts that are ready or on their way to ready (resolving, fetching robots.txt,
    /// parked): what is compared with `s` before loading more URLs. New hosts count
    /// from the moment they are loaded, or a burst of new hosts would make the
    /// frontier load every file before the first DNS answer. A host ready (or parked)
    /// while some of its requests are in flight counts as fetching, as it does with
    /// one connection per host: else with several the pipeline looks full of hosts
    /// that are busy anyway, and no more URLs are loaded.
    pub(crate) fn pipeline(&self) -> usize {
        [
            HostState::NeedsDns,
            HostState::Resolving,
            HostState::NeedsRobots,
            HostState::FetchingRobots,
            HostState::Ready,
            HostState::Parked,
        ]
        .into_iter()
        .map(|s| self.hosts.count(s))
        .sum::<usize>()
        .saturating_sub(self.hosts.ready_busy())
    }

    /// `s = k x r x d`.
    pub(crate) fn ready_target(&self) -> usize {
        politeness::ready_target(&self.config, self.target_rate)
    }

    /// A parked host's IP freed up: back to the ready heap.
    pub(crate) fn unpark(&mut self, key: ReadyKey, id: HostId) {
        let state = if key.is_robots() {
            HostState::NeedsRobots
        } else {
            HostState::Ready
        };
        if self
            .hosts
            .get(id)
            .is_some_and(|h| h.state() == HostState::Parked)
        {
            self.hosts.set_state(id, state);
            self.ready.push(key, id);
        }
    }

    /// Decides what host `id` (not in any heap, fewer than `connections_per_host`
    /// requests in flight, else it waits for a report) needs next. A host with
    /// requests in flight and nothing to start, or whose address or robots.txt must be
    /// refreshed, waits for their reports (`InFlight`).
    pub(crate) fn advance(
        &mut self,
        id: HostId,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let limit = self.connection_limit();
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        let out = host.out.len();
        if out >= limit || (out > 0 && host.queued() == 0) {
            self.hosts.set_state(id, HostState::InFlight);
            return Ok(());
        }
        if host.queued() == 0 {
            return self.idle(id, now_ms, batch);
        }
        let due = host.next_allowed_ms.max(self.restart_rest_until(host));
        if now_ms < due {
            let state = if host.failures > 0 || host.throttle.is_some() {
                HostState::BackedOff
            } else {
                HostState::Waiting
            };
            self.hosts.set_state(id, state);
            self.waiting.push(due, id);
            return Ok(());
        }
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(());
        };
        if out > 0 && (host.fresh_addr(now_ms).is_none() || host.fresh_robots(now_ms).is_none()) {
            self.hosts.set_state(id, HostState::InFlight);
            return Ok(());
        }
        // An address for the host, and for a robots.txt redirect target on another name.
        if host.fresh_addr(now_ms).is_none() {
            let name = host.name.clone();
            return self.need_address(id, name, now_ms, batch);
        }
        if host.fresh_robots(now_ms).is_none() {
            if let Some(target) = host.chase.name.clone() {
                if host.chase.addr.is_none() {
                    return self.need_address(id, target, now_ms, batch);
                }
            }
            let reqno = self.head_reqno(id)?.unwrap_or(0);
            self.hosts.set_state(id, HostState::NeedsRobots);
            self.ready.push(ReadyKey::robots(reqno), id);
            return Ok(());
        }
        match self.head_reqno(id)? {
            Some(reqno) => {
                self.hosts.set_state(id, HostState::Ready);
                self.ready.push(ReadyKey::page(reqno), id);
                Ok(())
            }
            // The record said URLs were queued but none were found: repair.
            None => {
                if let Some(host) = self.hosts.get_mut(id) {
                    tracing::warn!(host = %host.origin, head = host.head, tail = host.tail,
                        "queue shorter than its record; truncating");
                    host.tail = host.head;
                }
                self.idle(id, now_ms, batch)
            }
        }
    }

    /// An empty host rests out its interval, then is forgotten.
    fn idle(&mut self, id: HostId, now_ms: u64, batch: &mut Batch) -> Result<(), FrontierError> {
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        if now_ms < host.next_allowed_ms {
            let due = host.next_allowed_ms;
            self.hosts.set_state(id, HostState::Waiting);
            self.waiting.push(due, id);
        } else {
            self.hosts.remove(id);
            batch.delete(Cf::Host, id.to_be_bytes().to_vec());
        }
        Ok(())
    }

    /// `name` must be resolved before host `id` can go on (the host's own name, or a
    /// robots.txt redirect target). IP literals and cached answers apply at once.
    fn need_address(
        &mut self,
        id: HostId,
        name: Arc<str>,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        if let Some(ip) = Origin::literal_ip(&name) {
            let answer = if self.config.allow_private_addresses || super::dns::is_public(ip) {
                super::dns::DnsAnswer::Addr(ip)
            } else {
                super::dns::DnsAnswer::Forbidden(ip)
            };
            return self.apply_dns(id, &name, answer, u64::MAX, now_ms, batch);
        }
        if let Some((answer, expires)) = self.dns.lookup(&name, now_ms) {
            let answer = answer.clone();
            return self.apply_dns(id, &name, answer, expires, now_ms, batch);
        }
        self.hosts.set_state(id, HostState::NeedsDns);
        self.dns.want(name, id);
        Ok(())
    }

    /// The stored record of `origin` (default if none).
    pub(crate) fn origin_record(&self, origin: &str) -> Result<OriginRecord, FrontierError> {
        Ok(self
            .store
            .get(Cf::Origin, origin.as_bytes())?
            .unwrap_or_default())
    }

    /// The interval host `id` rests after a request.
    pub(crate) fn interval_of(&self, host: &Host) -> u64 {
        let pace = HostPace {
            override_ms: host.interval_override_ms,
            crawl_delay: host.robots.as_ref().and_then(|r| r.policy.crawl_delay()),
            last_fetch_ms: host.last_fetch_ms,
        };
        politeness::interval_ms(&self.config, &pace)
    }

    /// A host failed (connect failure, timeout, DNS failure, unreachable robots.txt):
    /// back off, or drop it when it failed too often. Returns true if it was dropped.
    pub(crate) fn host_failed(
        &mut self,
        id: HostId,
        death_reason: OutcomeReason,
        detail: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<bool, FrontierError> {
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(true);
        };
        host.failures += 1;
        self.after_failure(id, death_reason, detail, now_ms, batch)
    }

    /// What a failure of host `id` (already counted) leads to: back-off, or, after
    /// too many and with nothing of it in flight, death. Returns true if it was
    /// dropped.
    pub(crate) fn after_failure(
        &mut self,
        id: HostId,
        death_reason: OutcomeReason,
        detail: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<bool, FrontierError> {
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(true);
        };
        host.failed_at_ms = now_ms;
        let failures = host.failures;
        if politeness::is_dead(&self.config, failures) && host.out.is_empty() {
            let until = now_ms.saturating_add(self.config.dead_host_ttl_ms);
            self.counters.hosts_dead += 1;
            let detail = format!("{failures} consecutive failures, last: {detail}");
            self.drop_host(id, death_reason, &detail, Some(until), now_ms, batch)?;
            return Ok(true);
        }
        host.next_allowed_ms =
            now_ms.saturating_add(politeness::backoff_ms(&self.config, failures));
        host.buffer.clear(); // Resting long: free the read-ahead.
        self.save_host(id, batch);
        tracing::debug!(host = %self.hosts.get(id).map(|h| h.origin.clone()).unwrap_or_default(),
            failures, detail, "host failure; backing off");
        Ok(false)
    }

    /// Recreates a host from its record at open.
    pub(crate) fn restore_host(
        &mut self,
        id: HostId,
        record: HostRecord,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let Ok(origin) = super::origin::origin_of(&record.origin) else {
            tracing::warn!(origin = %record.origin, "unparseable stored origin skipped");
            return Ok(());
        };
        // The URLs in flight at the crash go back to the head of the queue.
        let head = self.repack_out(id, record.head, record.out, batch)?;
        let mut host = Host::new(
            id,
            Arc::from(origin.key.as_str()),
            Arc::from(origin.name.as_str()),
            origin.port,
            head,
        );
        host.tail = record.tail;
        host.interval_override_ms = record.interval_ms;
        host.failures = record.failures;
        let cached = self.origin_record(&origin.key)?;
        host.robots = self.robots_from_cache(cached.robots.as_ref());
        let name = host.name.clone();
        let repacked = head != record.head;
        self.hosts.insert(host);
        if repacked {
            self.save_host(id, batch);
        }
        self.dns.want(name, id);
        Ok(())
    }

    /// A cached robots verdict, parsed again.
    pub(crate) fn robots_from_cache(&self, cached: Option<&CachedRobots>) -> Option<RobotsInForce> {
        let cached = cached?;
        let policy = match &cached.body {
            None => RobotsPolicy::AllowAll,
            Some(body) => RobotsPolicy::from_fetch(200, body, &self.config.robots_agent),
        };
        Some(RobotsInForce {
            policy: Arc::new(policy),
            expires_ms: cached.expires_ms,
        })
    }
}
