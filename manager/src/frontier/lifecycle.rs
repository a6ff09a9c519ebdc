//! A host's life, from its first URL to its end: request files are loaded into host
//! queues (new hosts are created), DNS answers come in, [`Frontier::advance`]
//! decides what a host needs next (rest, DNS, robots.txt, or the ready heap, via the
//! [`Schedule`](super::schedule::Schedule)), [`Frontier::tick`] runs the timers,
//! failures lead to back-off or death, and a host whose queue is dropped or empty is
//! forgotten. After a restart hosts are rebuilt from their records here too.
//!
//! This module must never hand out jobs (that is `dispatch`) or interpret reports
//! (`report`); it only applies the state machine.
//!
//! # Loading request files
//!
//! Loading request files into host queues, lazily: only while fewer than `s = k r d`
//! hosts are ready or on their way to ready (Polybot section 3.5).
//!
//! Each URL gets the next request number (its place in the global request stream),
//! then: unparseable or not http(s) -> outcome `invalid_url`; blacklisted host ->
//! `blacklisted`; an origin marked dropped (dead host, name that does not exist,
//! forbidden address) -> that outcome; else it is appended to its host's queue,
//! creating the host if needed. One chunk (`load_chunk_urls` URLs) is one RocksDB
//! batch holding the queue entries, outcomes, host records, id allocators, counters
//! and the file's progress, so a crash never loads a URL twice nor loses one.
//!
//! Memory: one chunk, plus a map of the origins first seen in it. This module must
//! never load a chunk when the pipeline already holds `s` hosts.
//!
//! # DNS
//!
//! DNS events: the names the frontier needs resolved, and what an answer does to the
//! hosts that waited for it.
//!
//! - An address: the host goes on (to robots.txt, or to ready).
//! - Only private/loopback addresses while they are forbidden: the host's URLs end
//!   with `forbidden_address`, and so do new ones for the answer's TTL.
//! - NXDOMAIN or no address: the host's URLs end with `dns_failure`, and so do new
//!   ones for the answer's TTL.
//! - A failed lookup (SERVFAIL, timeout): a host failure (back-off, then ask again;
//!   after `max_failures` the URLs end with `dns_failure`).
//!
//! For a robots.txt redirect to another host name the same answers decide whether
//! the redirect can be followed (a name that does not resolve counts as "robots.txt
//! unavailable"). This module must never resolve anything itself.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use spool::formats::Request;
use spool::protocol::{NegativeKind, Resolution};
use spool::{AppId, OutcomeReason};

use super::dns::DnsAnswer;
use super::hosts::{Host, HostId, HostState, RobotsInForce};
use super::origin::{Origin, origin_of};
use super::politeness::{self, HostPace};
use super::ready::ReadyKey;
use super::records::{
    CachedRobots, HostRecord, META_NEXT_HOST, META_NEXT_REQNO, OriginRecord, PendingOutcome,
    QueueEntry, file_key, queue_key,
};
use super::requests::Chunk;
use super::store::{Batch, Cf};
use super::{Frontier, FrontierError};
use crate::robots::RobotsPolicy;

/// Outcomes written per batch when a host's whole queue is dropped.
const DROP_CHUNK: usize = 4_096;

impl Frontier {
    /// Runs the timers due at `now_ms`: rested hosts go back to work, busy IPs release
    /// their parked hosts, overdue DNS questions are asked again, restored pages no
    /// downloader claimed in time are queued again; then loads request
    /// files if the ready pipeline is short of `s`, and publishes outcome files that
    /// are full or old enough. Call it at [`next_wakeup`](Self::next_wakeup) (calling
    /// it more often is harmless); [`next_jobs`](Self::next_jobs) calls it too.
    pub fn tick(&mut self, now_ms: u64) -> Result<(), FrontierError> {
        let mut batch = Batch::default();
        while let Some((_, id)) = self.schedule.pop_rested(now_ms) {
            let Some(host) = self.hosts.get(id) else {
                continue;
            };
            let resting = matches!(host.state(), HostState::Waiting | HostState::BackedOff);
            if resting && host.timing.next_allowed_ms <= now_ms {
                self.advance(id, now_ms, &mut batch)?;
            }
        }
        for (key, id) in self.schedule.ips_due(now_ms) {
            self.unpark(key, id);
        }
        self.dns.expire(now_ms);
        self.schedule.expire(now_ms);
        self.commit(batch)?;
        self.requeue_unclaimed(now_ms)?;
        self.load_if_needed(now_ms)?;
        self.outcomes.flush(self.ledger.store()?, now_ms, false)?;
        Ok(())
    }

    /// When [`tick`](Self::tick) has work next: a host's rest ends, an IP interval
    /// ends, a DNS question is overdue, an outcome file is due, the pages restored
    /// at open are given up on, or the request folders should be listed again.
    /// `None`: nothing is scheduled (wait for an event).
    pub fn next_wakeup(&self) -> Option<u64> {
        let mut due = [
            self.schedule.next_due(),
            self.dns.next_due(),
            self.outcomes.next_deadline(),
            self.jobs.restored_deadline(),
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
            self.schedule.ready(key, id);
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
        let due = host
            .timing
            .next_allowed_ms
            .max(self.restart_rest_until(host));
        if now_ms < due {
            let state = if host.trouble.failures > 0 || host.trouble.throttle.is_some() {
                HostState::BackedOff
            } else {
                HostState::Waiting
            };
            self.hosts.set_state(id, state);
            self.schedule.rest(due, id);
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
            self.schedule.ready(ReadyKey::robots(reqno), id);
            return Ok(());
        }
        match self.head_reqno(id)? {
            Some(reqno) => {
                self.hosts.set_state(id, HostState::Ready);
                self.schedule.ready(ReadyKey::page(reqno), id);
                Ok(())
            }
            // The record said URLs were queued but none were found: repair.
            None => {
                if let Some(host) = self.hosts.get_mut(id) {
                    tracing::warn!(host = %host.origin, head = host.queue.head, tail = host.queue.tail,
                        "queue shorter than its record; truncating");
                    host.queue.tail = host.queue.head;
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
        if now_ms < host.timing.next_allowed_ms {
            let due = host.timing.next_allowed_ms;
            self.hosts.set_state(id, HostState::Waiting);
            self.schedule.rest(due, id);
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
                DnsAnswer::Addr(ip)
            } else {
                DnsAnswer::Forbidden(ip)
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
    pub(crate) fn origin_record(&mut self, origin: &str) -> Result<OriginRecord, FrontierError> {
        Ok(self
            .ledger
            .store()?
            .get(Cf::Origin, origin.as_bytes())?
            .unwrap_or_default())
    }

    /// The interval host `id` rests after a request.
    pub(crate) fn interval_of(&self, host: &Host) -> u64 {
        let pace = HostPace {
            override_ms: host.timing.interval_override_ms,
            crawl_delay: host.robots.as_ref().and_then(|r| r.policy.crawl_delay()),
            last_fetch_ms: host.timing.last_fetch_ms,
        };
        politeness::interval_ms(&self.config, &pace)
    }

    /// A host failed (connect failure, timeout, DNS failure, unreachable robots.txt):
    /// back off, or drop it when it failed too often or too long. Returns true if
    /// it was dropped.
    pub(crate) fn host_failed(
        &mut self,
        id: HostId,
        failure: &Failure<'_>,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<bool, FrontierError> {
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(true);
        };
        host.trouble.failures += 1;
        self.after_failure(id, failure, now_ms, batch)
    }

    /// What a failure of host `id` (already counted) leads to: back-off, or, with
    /// nothing of it in flight, death after `max_failures` failures or when its
    /// next try would start past `host_retry_window_ms` from its first failing
    /// try. Returns true if it was dropped.
    pub(crate) fn after_failure(
        &mut self,
        id: HostId,
        failure: &Failure<'_>,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<bool, FrontierError> {
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(true);
        };
        host.trouble.failed_at_ms = now_ms;
        let failures = host.trouble.failures;
        // A run of failures starts with its first counted one (an uncounted one
        // after a success is the outage the success outlived).
        let since = match failures {
            0 => now_ms,
            _ => *host
                .trouble
                .since_ms
                .get_or_insert(failure.started_ms.min(now_ms)),
        };
        let next_try = now_ms.saturating_add(politeness::backoff_ms(&self.config, failures));
        let verdict = politeness::give_up(&self.config, failures, since, next_try);
        if let Some(bound) = verdict.filter(|_| host.out.is_empty()) {
            let until = now_ms.saturating_add(self.config.dead_host_ttl_ms);
            self.ledger.counters_mut().hosts_dead += 1;
            let detail = give_up_detail(failures, now_ms.saturating_sub(since), bound, failure);
            self.drop_host(id, failure.death, &detail, Some(until), now_ms, batch)?;
            return Ok(true);
        }
        host.timing.next_allowed_ms = next_try;
        host.queue.buffer.clear(); // Resting long: free the read-ahead.
        self.save_host(id, batch);
        tracing::debug!(host = %self.hosts.get(id).map(|h| h.origin.clone()).unwrap_or_default(),
            failures, detail = failure.detail, "host failure; backing off");
        Ok(false)
    }

    /// Recreates a host from its record at open.
    pub(crate) fn restore_host(
        &mut self,
        id: HostId,
        record: HostRecord,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let Ok(origin) = origin_of(&record.origin) else {
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
        host.queue.tail = record.tail;
        host.timing.interval_override_ms = record.interval_ms;
        host.trouble.failures = record.failures;
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

    /// Ends every queued URL of host `id` with `reason` and forgets the host; with
    /// `mark_ms`, the origin stays dropped (new URLs end the same way) until then.
    /// Its URLs in flight are left to their reports: a host with requests in
    /// flight stays (`InFlight`, its queue empty) until they end. Callers wait for
    /// them where they can (`dispatch`, `host_failed`).
    pub(crate) fn drop_host(
        &mut self,
        id: HostId,
        reason: OutcomeReason,
        detail: &str,
        mark_until_ms: Option<u64>,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        loop {
            let Some(host) = self.hosts.get_mut(id) else {
                return Ok(());
            };
            if host.queued() == 0 {
                break;
            }
            host.queue.buffer.clear();
            let (head, n) = (host.queue.head, (host.queued() as usize).min(DROP_CHUNK));
            let entries: Vec<(u64, QueueEntry)> = self.ledger.store()?.read_queue(id, head, n)?;
            let last = entries.last().map(|(seq, _)| *seq + 1).unwrap_or(u64::MAX);
            for (_, entry) in entries {
                let app = &entry.app;
                self.ledger.counters_mut().app(app).queued =
                    self.ledger.counters_mut().app(app).queued.saturating_sub(1);
                self.entry_ended(entry, reason, detail, now_ms, batch);
            }
            let Some(host) = self.hosts.get_mut(id) else {
                return Ok(());
            };
            let end = last.min(host.queue.tail);
            batch.delete_range(
                Cf::Queue,
                queue_key(id, head).to_vec(),
                queue_key(id, end).to_vec(),
            );
            host.queue.head = end;
            self.save_host(id, batch);
            if batch.len() >= DROP_CHUNK {
                let full = std::mem::take(batch);
                self.commit(full)?;
            }
        }
        let Some(origin) = self.hosts.get(id).map(|h| h.origin.clone()) else {
            return Ok(());
        };
        if let Some(until) = mark_until_ms {
            let mut record = self.origin_record(&origin)?;
            record.dropped_until_ms = until;
            record.dropped_reason = Some(reason);
            batch.put(Cf::Origin, origin.as_bytes().to_vec(), &record);
        }
        if self.hosts.get(id).is_some_and(|h| !h.out.is_empty()) {
            self.hosts.set_state(id, HostState::InFlight);
            self.save_host(id, batch);
            tracing::info!(host = %origin, %reason, detail, "host dropped; its requests in flight end first");
            return Ok(());
        }
        self.hosts.remove(id);
        batch.delete(Cf::Host, id.to_be_bytes().to_vec());
        tracing::info!(host = %origin, %reason, detail, "host dropped");
        Ok(())
    }

    /// At open, host `id` (from its record) had the URLs at `out` in flight: they go
    /// back to the head of its queue in seq order (to `head - k .. head`). Keys
    /// below `head` hold only URLs in flight or nothing, so those slots are free or
    /// hold one of these URLs. Returns the new head.
    pub(crate) fn repack_out(
        &mut self,
        id: HostId,
        head: u64,
        mut out: Vec<u64>,
        batch: &mut Batch,
    ) -> Result<u64, FrontierError> {
        out.sort_unstable();
        out.dedup();
        let mut entries = Vec::with_capacity(out.len());
        for seq in out.into_iter().filter(|s| *s < head) {
            let entry: Option<QueueEntry> =
                self.ledger.store()?.get(Cf::Queue, &queue_key(id, seq))?;
            match entry {
                Some(entry) => entries.push((seq, entry)),
                None => tracing::warn!(host = id, seq, "URL in flight missing from its queue"),
            }
        }
        let Some(first) = head.checked_sub(entries.len() as u64) else {
            return Ok(head);
        };
        // Deletes first: a target slot may be one of the old keys.
        for (seq, _) in &entries {
            batch.delete(Cf::Queue, queue_key(id, *seq).to_vec());
        }
        for (to, (_, entry)) in (first..).zip(&entries) {
            batch.put(Cf::Queue, queue_key(id, to).to_vec(), entry);
        }
        Ok(first)
    }

    /// Host names to hand to resolvers now (lower-case, punycode, no port). Each name
    /// is handed out once; if no answer comes within `dns_retry_ms` it is handed out
    /// again. The hosts waiting for them become `Resolving`.
    pub fn hosts_needing_dns(&mut self, now_ms: u64) -> Vec<String> {
        let names = self.dns.take_to_ask(now_ms, self.config.dns_retry_ms);
        for name in &names {
            for id in self.dns.waiters_of(name) {
                if self
                    .hosts
                    .get(id)
                    .is_some_and(|h| h.state() == HostState::NeedsDns)
                {
                    self.hosts.set_state(id, HostState::Resolving);
                }
            }
        }
        names
    }

    /// A resolver answered for `name` (exactly as it was handed out).
    pub fn on_dns(
        &mut self,
        name: &str,
        resolution: &Resolution,
        now_ms: u64,
    ) -> Result<(), FrontierError> {
        let allow = self.config.allow_private_addresses;
        let (answer, waiters) = self.dns.answer(name, resolution, allow, now_ms);
        let expires = self
            .dns
            .lookup(name, now_ms)
            .map(|(_, e)| e)
            .unwrap_or(now_ms);
        let mut batch = Batch::default();
        for id in waiters {
            let waiting = self
                .hosts
                .get(id)
                .is_some_and(|h| matches!(h.state(), HostState::NeedsDns | HostState::Resolving));
            if waiting {
                self.apply_dns(id, name, answer.clone(), expires, now_ms, &mut batch)?;
            }
        }
        self.commit(batch)
    }

    /// Applies a DNS answer for `name` to host `id`, whose own name or robots.txt
    /// redirect target it is.
    pub(crate) fn apply_dns(
        &mut self,
        id: HostId,
        name: &str,
        answer: DnsAnswer,
        expires_ms: u64,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(());
        };
        let for_chase = &*host.name != name && host.chase.name.as_deref() == Some(name);
        if for_chase {
            match answer {
                DnsAnswer::Addr(ip) => {
                    host.chase.addr = Some(ip);
                    return self.advance(id, now_ms, batch);
                }
                DnsAnswer::Negative(NegativeKind::Failure, detail) => {
                    let detail = format!("robots.txt redirect target {name}: {detail}");
                    return self.robots_unreachable(id, &detail, now_ms, now_ms, batch);
                }
                DnsAnswer::Negative(_, _) | DnsAnswer::Forbidden(_) => {
                    // The redirect leads nowhere we may go: robots.txt is unavailable.
                    return self.install_robots(id, RobotsPolicy::AllowAll, None, now_ms, batch);
                }
            }
        }
        match answer {
            DnsAnswer::Addr(ip) => {
                host.addr = Some((ip, expires_ms));
                self.advance(id, now_ms, batch)
            }
            DnsAnswer::Forbidden(ip) => {
                let detail = format!("{name} resolves to {ip}, which is not a public address");
                let until = expires_ms.min(now_ms.saturating_add(self.config.dead_host_ttl_ms));
                self.drop_host(
                    id,
                    OutcomeReason::ForbiddenAddress,
                    &detail,
                    Some(until),
                    now_ms,
                    batch,
                )
            }
            DnsAnswer::Negative(NegativeKind::Failure, detail) => {
                let detail = format!("lookup of {name} failed: {detail}");
                let failure = Failure {
                    death: OutcomeReason::DnsFailure,
                    detail: &detail,
                    started_ms: now_ms,
                };
                if !self.host_failed(id, &failure, now_ms, batch)? {
                    self.advance(id, now_ms, batch)?;
                }
                Ok(())
            }
            DnsAnswer::Negative(kind, detail) => {
                let what = match kind {
                    NegativeKind::NxDomain => "does not exist",
                    _ => "has no address",
                };
                let detail = format!("{name} {what}: {detail}");
                let until = expires_ms.min(now_ms.saturating_add(self.config.dead_host_ttl_ms));
                self.drop_host(
                    id,
                    OutcomeReason::DnsFailure,
                    &detail,
                    Some(until),
                    now_ms,
                    batch,
                )
            }
        }
    }

    /// Loads chunks while the pipeline is short of `s`, at most
    /// `max_load_chunks_per_call` of them. Returns the URLs read.
    pub(crate) fn load_if_needed(&mut self, now_ms: u64) -> Result<u64, FrontierError> {
        let mut loaded = 0;
        for _ in 0..self.config.max_load_chunks_per_call {
            if self.pipeline() >= self.ready_target() {
                break;
            }
            let max = self.config.load_chunk_urls;
            let Some(chunk) = self
                .requests
                .next_chunk(self.ledger.store()?, max, now_ms)?
            else {
                break;
            };
            loaded += chunk.requests.len() as u64;
            self.load_chunk(chunk, now_ms)?;
        }
        Ok(loaded)
    }

    /// Loads one chunk: each URL gets its request number and joins its host's queue
    /// or ends with an outcome; one batch holds it all with the file's progress;
    /// then the new hosts start their way to ready.
    fn load_chunk(&mut self, chunk: Chunk, now_ms: u64) -> Result<(), FrontierError> {
        let mut load = ChunkLoad::default();
        for request in &chunk.requests {
            let reqno = self.requests.take_reqno();
            self.ledger.counters_mut().app(&chunk.app).urls_loaded += 1;
            if let Some(id) = self.host_for_load(&request.url, &chunk.app, &mut load, now_ms)? {
                self.queue_loaded(id, reqno, &chunk.app, request, &mut load.batch);
                load.touched.insert(id);
            }
        }
        self.commit_chunk(&chunk, &mut load)?;
        self.wake_loaded(load, now_ms)
    }

    /// The host a loaded URL joins, created if new; `None` when the URL ended with
    /// an outcome instead (invalid, blacklisted, its origin dropped).
    fn host_for_load(
        &mut self,
        url: &str,
        app: &AppId,
        load: &mut ChunkLoad,
        now_ms: u64,
    ) -> Result<Option<HostId>, FrontierError> {
        let origin = match origin_of(url) {
            Ok(o) => o,
            Err(detail) => {
                let reason = OutcomeReason::InvalidUrl;
                self.load_outcome(&mut load.batch, url, app, reason, &detail, now_ms);
                return Ok(None);
            }
        };
        if self.blacklist.matches(&origin.name) {
            let detail = format!("{} is blacklisted", origin.name);
            let reason = OutcomeReason::Blacklisted;
            self.load_outcome(&mut load.batch, url, app, reason, &detail, now_ms);
            return Ok(None);
        }
        if let Some((reason, detail)) = load.dropped.get(&origin.key) {
            let (reason, detail) = (*reason, detail.clone());
            self.load_outcome(&mut load.batch, url, app, reason, &detail, now_ms);
            return Ok(None);
        }
        if let Some(id) = self.hosts.id_of(&origin.key) {
            return Ok(Some(id));
        }
        let record = self.origin_record(&origin.key)?;
        if let Some(reason) = live_drop(&record, now_ms) {
            let detail = format!("{} was dropped earlier: {reason}", origin.key);
            load.dropped.insert(origin.key, (reason, detail.clone()));
            self.load_outcome(&mut load.batch, url, app, reason, &detail, now_ms);
            return Ok(None);
        }
        let id = self.create_host(&origin, &record);
        load.created.push(id);
        Ok(Some(id))
    }

    /// A new host for `origin`, with the robots.txt its stored record caches (the
    /// one place hosts are made, for loading and for reported links); O(1).
    pub(crate) fn create_host(&mut self, origin: &Origin, record: &OriginRecord) -> HostId {
        let id = self.hosts.new_id();
        let mut host = Host::new(
            id,
            Arc::from(origin.key.as_str()),
            Arc::from(origin.name.as_str()),
            origin.port,
            0,
        );
        host.robots = self.robots_from_cache(record.robots.as_ref());
        self.hosts.insert(host);
        id
    }

    /// Appends `request` (request number `reqno`) to host `id`'s queue.
    fn queue_loaded(
        &mut self,
        id: HostId,
        reqno: u64,
        app: &AppId,
        request: &Request,
        batch: &mut Batch,
    ) {
        let Some(host) = self.hosts.get_mut(id) else {
            return;
        };
        let seq = host.queue.tail;
        if host.queued() == 0 {
            host.queue.head_reqno = Some(reqno);
        }
        host.queue.tail += 1;
        if let Some(hint) = request.hints.interval_ms {
            host.timing.interval_override_ms = Some(politeness::clamp_hint(&self.config, hint));
        }
        let entry = QueueEntry {
            reqno,
            app: app.clone(),
            url: request.url.clone(),
            depth: request.hints.depth,
            via: request.hints.via.clone(),
            hops: request.hints.hops,
            validators: request.hints.validators.clone(),
        };
        batch.put(Cf::Queue, queue_key(id, seq).to_vec(), &entry);
        self.ledger.counters_mut().app(app).queued += 1;
    }

    /// Writes the chunk's batch with the touched hosts' records, the id allocators
    /// and the file's progress (synced for the file's last chunk, which is deleted
    /// right after), then forgets the progress of a file done.
    fn commit_chunk(&mut self, chunk: &Chunk, load: &mut ChunkLoad) -> Result<(), FrontierError> {
        let mut batch = std::mem::take(&mut load.batch);
        for id in &load.touched {
            self.save_host(*id, &mut batch);
        }
        let app = &chunk.app;
        if chunk.progress.complete && !chunk.was_complete {
            self.ledger.counters_mut().app(app).files_loaded += 1;
        }
        batch.put(
            Cf::Meta,
            META_NEXT_REQNO.to_vec(),
            &self.requests.next_reqno(),
        );
        batch.put(Cf::Meta, META_NEXT_HOST.to_vec(), &self.hosts.next_id());
        batch.put(Cf::Meta, file_key(app, &chunk.file_name), &chunk.progress);
        self.commit_opt(batch, chunk.progress.complete)?;
        if let Some(key) = self.requests.committed(chunk)? {
            let mut cleanup = Batch::default();
            cleanup.delete(Cf::Meta, key);
            self.ledger.store()?.write(cleanup)?;
        }
        Ok(())
    }

    /// Once a chunk's URLs are durable: new hosts start their way to ready (DNS
    /// first), and a host waiting for reports only because its queue was empty may
    /// start one of its new URLs now (with `connections_per_host` above 1).
    fn wake_loaded(&mut self, load: ChunkLoad, now_ms: u64) -> Result<(), FrontierError> {
        let mut batch = Batch::default();
        for id in load.created {
            self.advance(id, now_ms, &mut batch)?;
        }
        if self.connection_limit() > 1 {
            for id in load.touched {
                let waits = self.hosts.get(id).is_some_and(|h| {
                    h.state() == HostState::InFlight && h.out.len() < self.connection_limit()
                });
                if waits {
                    self.hosts.set_state(id, HostState::Waiting);
                    self.advance(id, now_ms, &mut batch)?;
                }
            }
        }
        self.commit(batch)
    }

    pub(super) fn load_outcome(
        &mut self,
        batch: &mut Batch,
        url: &str,
        app: &AppId,
        reason: OutcomeReason,
        detail: &str,
        now_ms: u64,
    ) {
        self.ledger.counters_mut().outcome(app, reason);
        let outcome = PendingOutcome {
            app: app.clone(),
            url: url.to_owned(),
            reason,
            detail: detail.to_owned(),
        };
        self.outcomes.add(batch, outcome, now_ms);
    }
}

/// What loading one chunk gathers before its batch is written.
#[derive(Default)]
struct ChunkLoad {
    /// Queue entries, outcomes and counters of the chunk.
    batch: Batch,
    /// Hosts that got URLs.
    touched: BTreeSet<HostId>,
    /// Hosts created for the chunk, in order.
    created: Vec<HostId>,
    /// Origins not in memory found dropped, looked up once per chunk.
    dropped: HashMap<String, (OutcomeReason, String)>,
}

/// One failure of a host, as [`Frontier::host_failed`] takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Failure<'a> {
    /// The outcome its URLs end with if this failure makes the host dead
    /// (`too_many_failures`, or `dns_failure` when its lookups fail).
    pub death: OutcomeReason,
    /// What failed, for the log and the outcomes' detail.
    pub detail: &'a str,
    /// When the failing try started (wall ms): for a fetch its dispatch, for a
    /// lookup its answer.
    pub started_ms: u64,
}

/// The detail of the outcomes of a host given up after `failures` failures over
/// `span_ms` (from its first failing try's start), ended by `bound`: it names
/// the bound and the setting, so a summary can say why.
pub(crate) fn give_up_detail(
    failures: u32,
    span_ms: u64,
    bound: politeness::GiveUp,
    failure: &Failure<'_>,
) -> String {
    let why = match bound {
        politeness::GiveUp::Failures(max) => format!("max_failures {max}"),
        politeness::GiveUp::Window(ms) => {
            format!("next try past host_retry_window_ms {ms}")
        }
    };
    format!(
        "given up after {failures} failed tries in {}.{:03} s ({why}); last: {}",
        span_ms / 1000,
        span_ms % 1000,
        failure.detail
    )
}

/// The outcome new URLs of an origin get, if it is marked dropped at `now_ms`.
pub(super) fn live_drop(record: &OriginRecord, now_ms: u64) -> Option<OutcomeReason> {
    record
        .dropped_reason
        .filter(|_| now_ms < record.dropped_until_ms)
}
