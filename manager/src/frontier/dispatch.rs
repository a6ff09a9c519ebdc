//! Handing out jobs: pop the ready heap in order (robots.txt fetches first, then pages
//! by request number), apply the last checks, and build [`FetchJob`]s.
//!
//! Per popped host: blacklisted now -> its URLs end with `blacklisted` (once its
//! requests in flight have ended); address or robots.txt expired -> back to DNS /
//! robots (likewise); its IP at the limit -> parked on the IP (other IPs go on); head
//! URLs robots.txt excludes -> `robots_excluded`, never dispatched; else the head URL
//! is sent. With `connections_per_host` 1 the host is then `InFlight` until the
//! report; above 1 it rests its interval from this start and may start again while
//! fewer than that many of its requests are in flight. The URL stays in RocksDB until
//! its report, so a crash re-dispatches it (see `report`, "URLs in flight").
//!
//! **Chaining** (one connection per host, an interval of at most
//! `chain_max_interval_ms`, an address free to start another request): the host's
//! next URL goes out in the same round as a job chained after the first
//! ([`After`]). The downloader starts it one interval after the first response
//! ends, or hands it back unsent if that one failed or was a 429/503, so the host's
//! next request needs no round trip through the manager, and at most one request
//! per host is on the wire as before. A host whose interval is 0 (politeness off)
//! gets a chain of up to `chain_max_jobs` jobs, each chained after the one before,
//! as long as the round has room for them beside the other ready hosts (pairs
//! otherwise): with no interval to hide it, the round trip through the manager
//! between two pairs was the host's pace whenever few hosts had work (issue 39).
//! The host stays `InFlight` until all of them report.
//!
//! Cost: O(log hosts) per job plus, every `pop_batch` URLs of a host, one RocksDB
//! seek. This module must never send anything: it returns jobs to the service.
//!
//! # Host queues
//!
//! Host queues in RocksDB, seen from the frontier: the read-ahead buffer of a host
//! (one seek exactly to its head, never walking the tombstones of popped URLs), popping
//! the head, saving the host record, and dropping a whole queue with outcomes.
//!
//! The read-ahead holds up to `pop_batch` URLs for hosts dispatched often (interval
//! at most [`READ_AHEAD_MAX_REST_MS`]), one URL for the others, nothing while they
//! rest. Dropping a queue of n URLs costs n reads and writes, in batches of
//! `DROP_CHUNK` (`lifecycle`) so a huge queue never builds one huge batch. This module must never
//! change a host's state: it only moves its URLs.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use spool::protocol::{After, FetchJob, FetchLimits, FetchPurpose, JobId};
use spool::{OutcomeReason, Validators};

use super::borrowed::Busy;
use super::hosts::{HostId, HostState, Out};
use super::jobs::{Held, Holder};
use super::origin::Origin;
use super::ready::ReadyKey;
use super::records::{QueueEntry, queue_key};
use super::store::{Batch, Cf};
use super::{Frontier, FrontierError, JobInfo, politeness};
use crate::robots::path_and_query;

/// Hosts that rest longer than this between requests read one URL at a time and keep
/// no read-ahead while resting: memory goes to the hosts that are dispatched often.
pub(crate) const READ_AHEAD_MAX_REST_MS: u64 = 5_000;

impl Frontier {
    /// Up to `max` jobs to start now, in the order they should start. Runs
    /// [`tick`](Self::tick) first. Empty when no host may be contacted now; ask again
    /// at [`next_wakeup`](Self::next_wakeup) or after the next event.
    pub fn next_jobs(&mut self, now_ms: u64, max: usize) -> Result<Vec<FetchJob>, FrontierError> {
        self.tick(now_ms)?;
        let share = self.chain_share(max);
        let mut jobs = Vec::new();
        let mut batch = Batch::default();
        while jobs.len() < max {
            let Some((key, id)) = self.schedule.pop_ready() else {
                break;
            };
            let expected = if key.is_robots() {
                HostState::NeedsRobots
            } else {
                HostState::Ready
            };
            if self.hosts.get(id).is_none_or(|h| h.state() != expected) {
                continue; // Stale entry.
            }
            if let Some(job) = self.dispatch_host(key, id, now_ms, &mut batch)? {
                let first = job.job;
                let ip = job.addr.ip();
                let job_is_page = job.purpose == FetchPurpose::Page;
                jobs.push(job);
                let mut last = first;
                let mut out = 1;
                while jobs.len() < max && job_is_page {
                    let chained = self.chain(id, ip, last, out, share, now_ms, &mut batch)?;
                    let Some(next) = chained else {
                        break;
                    };
                    last = next.job;
                    out += 1;
                    jobs.push(next);
                }
            }
        }
        self.reserve_job_ids(&mut batch);
        self.commit(batch)?;
        Ok(jobs)
    }

    /// One popped host: a job, or the reason it has none (it moved elsewhere).
    fn dispatch_host(
        &mut self,
        key: ReadyKey,
        id: HostId,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<Option<FetchJob>, FrontierError> {
        let Some(host) = self.hosts.get(id) else {
            return Ok(None);
        };
        if self.blacklist.matches(&host.name) {
            if !host.out.is_empty() {
                // Dropped once its requests in flight have ended (the last report
                // brings it back here).
                self.hosts.set_state(id, HostState::InFlight);
                return Ok(None);
            }
            let detail = format!("{} is blacklisted", host.name);
            self.drop_host(id, OutcomeReason::Blacklisted, &detail, None, now_ms, batch)?;
            return Ok(None);
        }
        let robots_fresh = host.fresh_robots(now_ms).is_some();
        let Some(host_ip) = host.fresh_addr(now_ms) else {
            self.hosts.set_state(id, HostState::Waiting);
            self.advance(id, now_ms, batch)?;
            return Ok(None);
        };
        if key.is_robots() == robots_fresh {
            // Robots fetched meanwhile, or a page host whose robots.txt expired.
            self.hosts.set_state(id, HostState::Waiting);
            self.advance(id, now_ms, batch)?;
            return Ok(None);
        }
        // The origin this job contacts must be free: a robots.txt redirect hop to
        // another origin waits for that origin; any job waits for a hop to its own.
        let busy = match host.chase.origin.clone().filter(|_| key.is_robots()) {
            Some(target) => self.origin_busy(&target, now_ms),
            None => self.schedule.borrowed_busy(&host.origin, now_ms),
        };
        if let Some(busy) = busy {
            self.defer(id, busy, now_ms, batch)?;
            return Ok(None);
        }
        let Some(host) = self.hosts.get(id) else {
            return Ok(None);
        };
        let ip = if key.is_robots() {
            host.chase.addr.unwrap_or(host_ip)
        } else {
            host_ip
        };
        if !self.schedule.ip_can_start(ip, now_ms) {
            self.hosts.set_state(id, HostState::Parked);
            self.schedule.park(ip, key, id);
            return Ok(None);
        }
        if key.is_robots() {
            return self.start_robots(id, ip, now_ms).map(Some);
        }
        self.start_page(id, ip, now_ms, batch)
    }

    /// Starts host `id`'s robots.txt job.
    fn start_robots(
        &mut self,
        id: HostId,
        ip: IpAddr,
        now_ms: u64,
    ) -> Result<FetchJob, FrontierError> {
        self.fill_buffer(id)?;
        let job = self.jobs.new_id();
        let host = self.hosts.get_mut(id).expect("dispatched host exists");
        let url = host
            .chase
            .url
            .clone()
            .unwrap_or_else(|| Origin::robots_url(&host.origin));
        let port = host.chase.port.unwrap_or(host.port);
        // Robots jobs are stored under robots/, but carry the app of the URL waiting.
        let app = host.queue.buffer.front().map(|(_, e)| e.app.clone());
        let borrowed = host.chase.origin.clone();
        let more = host.queued() > 0;
        self.hosts.push_out(
            id,
            Out {
                job,
                ip,
                seq: None,
                tries: 0,
                started_ms: now_ms,
            },
        );
        let keep_alive = more && self.keep_alive(id);
        self.hosts.set_state(id, HostState::FetchingRobots);
        self.schedule.ip_start(ip, now_ms);
        self.jobs.start(
            job,
            JobInfo {
                host: id,
                purpose: FetchPurpose::Robots,
                app: None,
                borrowed: borrowed.clone(),
            },
        );
        if let Some(origin) = borrowed {
            self.schedule.borrow(origin);
        }
        Ok(FetchJob {
            job,
            app: app.unwrap_or_else(|| spool::AppId::new("manager").expect("valid id")),
            url,
            addr: SocketAddr::new(ip, port),
            purpose: FetchPurpose::Robots,
            keep_alive,
            limits: self.limits(self.config.max_robots_bytes, 0),
            depth: None,
            hops: None,
            validators: Validators::default(),
            after: None,
        })
    }

    /// Starts host `id`'s first URL robots.txt allows, ending the excluded ones.
    fn start_page(
        &mut self,
        id: HostId,
        ip: IpAddr,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<Option<FetchJob>, FrontierError> {
        loop {
            self.fill_buffer(id)?;
            let Some(host) = self.hosts.get(id) else {
                return Ok(None);
            };
            let Some((_, head)) = host.queue.buffer.front() else {
                // Everything left was excluded.
                self.save_host(id, batch);
                self.hosts.set_state(id, HostState::Waiting);
                self.advance(id, now_ms, batch)?;
                return Ok(None);
            };
            let allowed = host
                .robots
                .as_ref()
                .is_none_or(|r| r.policy.is_allowed(&path_and_query(&head.url)));
            if !allowed {
                self.end_head(id, OutcomeReason::RobotsExcluded, "", now_ms, batch)?;
                continue;
            }
            let Some((job, entry, keep_alive)) = self.take_page_job(id, ip, now_ms)? else {
                return Ok(None);
            };
            let limit = self.connection_limit();
            // Several at once: the interval runs from start to start (on the wire too:
            // the downloader spaces its writes to the host by it).
            let host_spacing = if limit > 1 {
                self.hosts.get(id).map_or(0, |h| self.interval_of(h))
            } else {
                0
            };
            if limit > 1 {
                let interval = host_spacing;
                if let Some(host) = self.hosts.get_mut(id) {
                    host.timing.next_allowed_ms = host
                        .timing
                        .next_allowed_ms
                        .max(politeness::rest_until(now_ms, interval));
                }
            }
            self.save_host(id, batch);
            if limit > 1 {
                self.hosts.set_state(id, HostState::Waiting);
                self.advance(id, now_ms, batch)?;
            } else {
                self.hosts.set_state(id, HostState::InFlight);
            }
            return Ok(Some(self.page_job(
                id,
                ip,
                job,
                entry,
                keep_alive,
                host_spacing,
                None,
            )));
        }
    }

    /// The longest chain a host with no interval gets in a round that may hand
    /// out `max` jobs: `chain_max_jobs`, but no more than the round's room shared
    /// among the hosts ready now, and never below a pair. Every chained job holds
    /// a place in its downloader's window until it reports, so long chains on a
    /// crawl of many ready hosts would leave fewer hosts fetching at once than
    /// pairs did; they are for rounds with room to spare (few hosts with work, as
    /// at a crawl's end). O(1).
    fn chain_share(&self, max: usize) -> usize {
        let ready = self.hosts.count(HostState::Ready) + self.hosts.count(HostState::NeedsRobots);
        let share = max / ready.max(1);
        (self.config.chain_max_jobs as usize).min(share).max(2)
    }

    /// Host `id`'s next URL as a job chained after `prev`, the last of the `out`
    /// jobs this round sent to the host (its first page job just started on `ip`),
    /// if chaining applies: one connection per host, the host's interval at most
    /// `chain_max_interval_ms`, the chain shorter than its longest (2 jobs, or
    /// `share` with an interval of 0: [`Self::chain_share`]), the address free to
    /// start another request now, and a next URL robots.txt allows. The downloader
    /// starts it one interval after `prev`'s response ends, or hands it back
    /// unsent ([`After`]); until all report, the host stays `InFlight` (one `Out`
    /// each).
    #[allow(clippy::too_many_arguments)]
    fn chain(
        &mut self,
        id: HostId,
        ip: IpAddr,
        prev: JobId,
        out: usize,
        share: usize,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<Option<FetchJob>, FrontierError> {
        let max_interval = self.config.chain_max_interval_ms;
        if max_interval == 0 || self.connection_limit() != 1 {
            return Ok(None);
        }
        let Some(host) = self.hosts.get(id) else {
            return Ok(None);
        };
        let interval = self.interval_of(host);
        let longest = if interval == 0 { share } else { 2 };
        if interval > max_interval
            || out >= longest
            || host.out.len() != out
            || host.queued() == 0
            || !self.schedule.ip_can_start(ip, now_ms)
        {
            return Ok(None);
        }
        self.fill_buffer(id)?;
        let Some(host) = self.hosts.get(id) else {
            return Ok(None);
        };
        let Some((_, head)) = host.queue.buffer.front() else {
            return Ok(None);
        };
        let allowed = host
            .robots
            .as_ref()
            .is_none_or(|r| r.policy.is_allowed(&path_and_query(&head.url)));
        if !allowed {
            return Ok(None); // The next ordinary dispatch ends it as excluded.
        }
        let Some((job, entry, keep_alive)) = self.take_page_job(id, ip, now_ms)? else {
            return Ok(None);
        };
        self.save_host(id, batch);
        let after = After {
            job: prev,
            gap_ms: u32::try_from(interval).unwrap_or(u32::MAX),
        };
        Ok(Some(self.page_job(
            id,
            ip,
            job,
            entry,
            keep_alive,
            0,
            Some(after),
        )))
    }

    /// Takes host `id`'s head URL out of its queue for a page job to `ip` starting
    /// now: the job is in flight from here (the host's `Out`, the IP's count, the
    /// job table). Returns the job, its queue entry and whether to keep the
    /// connection open; `None` if the queue is empty.
    fn take_page_job(
        &mut self,
        id: HostId,
        ip: IpAddr,
        now_ms: u64,
    ) -> Result<Option<(JobId, QueueEntry, bool)>, FrontierError> {
        let Some((seq, entry, tries)) = self.take_head(id)? else {
            return Ok(None);
        };
        let keep_alive = self.hosts.get(id).is_some_and(|h| h.queued() > 0) && self.keep_alive(id);
        let job = self.jobs.new_id();
        self.hosts.push_out(
            id,
            Out {
                job,
                ip,
                seq: Some(seq),
                tries,
                started_ms: now_ms,
            },
        );
        self.schedule.ip_start(ip, now_ms);
        self.jobs.start(
            job,
            JobInfo {
                host: id,
                purpose: FetchPurpose::Page,
                app: Some(entry.app.clone()),
                borrowed: None,
            },
        );
        Ok(Some((job, entry, keep_alive)))
    }

    /// The [`FetchJob`] of page job `job` of host `id` (see [`Self::take_page_job`]).
    #[allow(clippy::too_many_arguments)]
    fn page_job(
        &self,
        id: HostId,
        ip: IpAddr,
        job: JobId,
        entry: QueueEntry,
        keep_alive: bool,
        host_spacing_ms: u64,
        after: Option<After>,
    ) -> FetchJob {
        let port = self.hosts.get(id).map_or(0, |h| h.port);
        FetchJob {
            job,
            app: entry.app,
            url: entry.url,
            addr: SocketAddr::new(ip, port),
            purpose: FetchPurpose::Page,
            keep_alive,
            limits: self.limits(self.config.max_page_bytes, host_spacing_ms),
            depth: entry.depth,
            hops: entry.hops,
            validators: entry.validators,
            after,
        }
    }

    /// Why `origin` (not host `id`'s own) may not be contacted now: a host of that
    /// origin with a request in flight or resting, or a hop to it.
    fn origin_busy(&self, origin: &str, now_ms: u64) -> Option<Busy> {
        if let Some(other) = self.hosts.id_of(origin).and_then(|o| self.hosts.get(o)) {
            if !other.out.is_empty() {
                return Some(Busy::InFlight);
            }
            if other.timing.next_allowed_ms > now_ms {
                return Some(Busy::Until(other.timing.next_allowed_ms));
            }
        }
        self.schedule.borrowed_busy(origin, now_ms)
    }

    /// Host `id` must wait for an origin it contacts: it rests until that origin is
    /// free (for one of its own intervals when the origin's request is in flight).
    fn defer(
        &mut self,
        id: HostId,
        busy: Busy,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        let retry_ms = match busy {
            Busy::Until(until) => until,
            Busy::InFlight => now_ms.saturating_add(self.interval_of(host).max(1)),
        };
        if let Some(host) = self.hosts.get_mut(id) {
            host.timing.next_allowed_ms = host.timing.next_allowed_ms.max(retry_ms);
        }
        self.hosts.set_state(id, HostState::Waiting);
        self.advance(id, now_ms, batch)
    }

    /// Whether the next request to host `id` comes soon enough to keep the
    /// connection open.
    fn keep_alive(&self, id: HostId) -> bool {
        self.hosts
            .get(id)
            .is_some_and(|h| self.interval_of(h) <= self.config.keep_alive_max_interval_ms)
    }

    fn limits(&self, max_body_bytes: u64, host_spacing_ms: u64) -> FetchLimits {
        FetchLimits {
            max_body_bytes,
            connect_timeout_ms: self.config.connect_timeout_ms,
            first_byte_timeout_ms: self.config.first_byte_timeout_ms,
            total_timeout_ms: self.config.total_timeout_ms,
            min_ip_spacing_ms: u32::try_from(self.config.ip_min_interval_ms).unwrap_or(u32::MAX),
            min_host_spacing_ms: u32::try_from(host_spacing_ms).unwrap_or(u32::MAX),
        }
    }

    /// The service handed `job` (from [`next_jobs`](Self::next_jobs)) to downloader
    /// `holder` at `sent`. O(1).
    pub(crate) fn hand_out(&mut self, job: &FetchJob, holder: Holder, sent: Instant) {
        let held = Held {
            holder,
            sent,
            ip: job.addr.ip(),
            purpose: job.purpose,
            app: job.app.clone(),
            url: job.url.clone(),
            depth: job.depth,
            hops: job.hops,
            validators: job.validators.clone(),
        };
        if !self.jobs.hand_out(job.job, held) {
            tracing::debug!(job = %job.job, "hand-out of a job not out ignored");
        }
    }

    /// Request number of host `id`'s head URL (reads the buffer if needed).
    pub(crate) fn head_reqno(&mut self, id: HostId) -> Result<Option<u64>, FrontierError> {
        if let Some(known) = self
            .hosts
            .get(id)
            .filter(|h| h.queue.buffer.is_empty())
            .and_then(|h| h.queue.head_reqno)
        {
            return Ok(Some(known));
        }
        self.fill_buffer(id)?;
        Ok(self.hosts.get(id).and_then(|h| {
            h.queue
                .buffer
                .front()
                .map(|(_, e)| e.reqno)
                .or(h.queue.head_reqno)
        }))
    }

    /// Reads the next `pop_batch` URLs of host `id` if its buffer is empty: one seek
    /// exactly to the head, bounded by the next host's first key.
    pub(crate) fn fill_buffer(&mut self, id: HostId) -> Result<(), FrontierError> {
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        if !host.queue.buffer.is_empty() || host.queued() == 0 {
            return Ok(());
        }
        let batch = if self.interval_of(host) <= READ_AHEAD_MAX_REST_MS {
            self.config.pop_batch
        } else {
            1
        };
        let (head, want) = (host.queue.head, (host.queued() as usize).min(batch));
        let entries: Vec<(u64, QueueEntry)> = self.ledger.store()?.read_queue(id, head, want)?;
        if let Some(host) = self.hosts.get_mut(id) {
            // Only a contiguous run from the head is usable.
            for (expect, (seq, entry)) in (host.queue.head..).zip(entries) {
                if seq != expect {
                    tracing::warn!(host = %host.origin, seq, expect, "gap in host queue");
                    break;
                }
                host.queue.buffer.push_back((seq, entry));
            }
            if host.queue.buffer.is_empty() {
                host.queue.head_reqno = None;
            }
        }
        Ok(())
    }

    /// Removes host `id`'s head URL, which was never dispatched (it ended with an
    /// outcome).
    pub(crate) fn pop_head(
        &mut self,
        id: HostId,
        batch: &mut Batch,
    ) -> Result<Option<QueueEntry>, FrontierError> {
        self.fill_buffer(id)?;
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(None);
        };
        if host.queued() == 0 {
            return Ok(None);
        }
        let popped = host.queue.buffer.pop_front();
        batch.delete(Cf::Queue, queue_key(id, host.queue.head).to_vec());
        let seq = host.queue.head;
        host.trouble.tries.retain(|(s, _)| *s != seq);
        host.queue.head += 1;
        host.queue.head_reqno = None;
        let Some((_, entry)) = popped else {
            return Ok(None);
        };
        self.ledger.counters_mut().app(&entry.app).queued = self
            .ledger
            .counters_mut()
            .app(&entry.app)
            .queued
            .saturating_sub(1);
        Ok(Some(entry))
    }

    /// Writes host `id`'s record (or deletes it when its queue is empty and nothing
    /// is in flight).
    pub(crate) fn save_host(&self, id: HostId, batch: &mut Batch) {
        match self.hosts.get(id) {
            Some(h) if h.has_urls() => batch.put(Cf::Host, id.to_be_bytes().to_vec(), &h.record()),
            _ => batch.delete(Cf::Host, id.to_be_bytes().to_vec()),
        }
    }

    /// `connections_per_host`, as a count.
    pub(crate) fn connection_limit(&self) -> usize {
        self.config.connections_per_host as usize
    }

    /// Takes host `id`'s head URL out of its queue for a dispatch: `(seq, entry,
    /// failed tries so far)`. Its key stays in RocksDB until its report.
    pub(crate) fn take_head(
        &mut self,
        id: HostId,
    ) -> Result<Option<(u64, QueueEntry, u32)>, FrontierError> {
        self.fill_buffer(id)?;
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(None);
        };
        let Some((seq, entry)) = host.queue.buffer.pop_front() else {
            return Ok(None);
        };
        host.queue.head = seq + 1;
        host.queue.head_reqno = None;
        let tries = match host.trouble.tries.iter().position(|(s, _)| *s == seq) {
            Some(i) => host.trouble.tries.swap_remove(i).1,
            None => 0,
        };
        Ok(Some((seq, entry, tries)))
    }
}
