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
//! its report, so a crash re-dispatches it (`out`).
//!
//! **Chaining** (one connection per host, an interval of at most
//! `chain_max_interval_ms`, an address free to start another request): the host's
//! next URL goes out in the same round as a job chained after the first
//! ([`After`]). The downloader starts it one interval after the first response
//! ends, or hands it back unsent if that one failed or was a 429/503, so the host's
//! next request needs no round trip through the manager, and at most one request
//! per host is on the wire as before. The host stays `InFlight` until both report.
//!
//! Cost: O(log hosts) per job plus, every `pop_batch` URLs of a host, one RocksDB
//! seek. This module must never send anything: it returns jobs to the service.

use std::net::{IpAddr, SocketAddr};

use spool::protocol::{After, FetchJob, FetchLimits, FetchPurpose, JobId};
use spool::{OutcomeReason, Validators};

use super::borrowed::Busy;
use super::hosts::{HostId, HostState, Out};
use super::origin::Origin;
use super::ready::ReadyKey;
use super::records::QueueEntry;
use super::store::Batch;
use super::{Frontier, FrontierError, JobInfo};
use crate::politeness;
use crate::robots::path_and_query;

impl Frontier {
    /// Up to `max` jobs to start now, in the order they should start. Runs
    /// [`tick`](Self::tick) first. Empty when no host may be contacted now; ask again
    /// at [`next_wakeup`](Self::next_wakeup) or after the next event.
    pub fn next_jobs(&mut self, now_ms: u64, max: usize) -> Result<Vec<FetchJob>, FrontierError> {
        self.tick(now_ms)?;
        let mut jobs = Vec::new();
        let mut batch = Batch::default();
        while jobs.len() < max {
            let Some((key, id)) = self.ready.pop() else {
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
                if jobs.len() < max && job_is_page {
                    if let Some(next) = self.chain(id, ip, first, now_ms, &mut batch)? {
                        jobs.push(next);
                    }
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
            None => self.borrowed.busy(&host.origin, now_ms),
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
        if !self.ips.can_start(ip, now_ms) {
            self.hosts.set_state(id, HostState::Parked);
            self.ips.park(ip, key, id);
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
        let job = self.new_job_id();
        let host = self.hosts.get_mut(id).expect("dispatched host exists");
        let url = host
            .chase
            .url
            .clone()
            .unwrap_or_else(|| Origin::robots_url(&host.origin));
        let port = host.chase.port.unwrap_or(host.port);
        // Robots jobs are stored under robots/, but carry the app of the URL waiting.
        let app = host.buffer.front().map(|(_, e)| e.app.clone());
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
        self.ips.start(ip, now_ms);
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
            self.borrowed.start(origin);
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
            let Some((_, head)) = host.buffer.front() else {
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
                    host.next_allowed_ms = host
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

    /// Host `id`'s next URL as a job chained after `first` (its page job just
    /// started on `ip`), if chaining applies: one connection per host, the host's
    /// interval at most `chain_max_interval_ms`, its address free to start another
    /// request now, and a next URL robots.txt allows. The downloader starts it one
    /// interval after `first`'s response ends, or hands it back unsent
    /// ([`After`]); until both report, the host stays `InFlight` (two `Out`s).
    fn chain(
        &mut self,
        id: HostId,
        ip: IpAddr,
        first: JobId,
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
        if interval > max_interval
            || host.out.len() != 1
            || host.queued() == 0
            || !self.ips.can_start(ip, now_ms)
        {
            return Ok(None);
        }
        self.fill_buffer(id)?;
        let Some(host) = self.hosts.get(id) else {
            return Ok(None);
        };
        let Some((_, head)) = host.buffer.front() else {
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
            job: first,
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
        let job = self.new_job_id();
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
        self.ips.start(ip, now_ms);
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
            if other.next_allowed_ms > now_ms {
                return Some(Busy::Until(other.next_allowed_ms));
            }
        }
        self.borrowed.busy(origin, now_ms)
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
            host.next_allowed_ms = host.next_allowed_ms.max(retry_ms);
        }
        self.hosts.set_state(id, HostState::Waiting);
        self.advance(id, now_ms, batch)
    }

    fn new_job_id(&mut self) -> JobId {
        let id = JobId(self.next_job);
        self.next_job += 1;
        id
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
}
