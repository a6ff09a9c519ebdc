//! Fetch reports: what the end of a job does to its host and its URL.
//!
//! - A stored 429 or 503 response: the host backs off (its `Retry-After`, else
//!   exponentially) and the URL is tried again within `max_url_attempts`; see
//!   `throttle`.
//! - Any other stored response (any status: a 5xx page is a page, not a failure): the URL
//!   leaves its queue, the host's failure count resets, and the host rests its
//!   interval, measured from `now_ms`, which the service passes as the end of the
//!   response: the latest of the moments it knows (its own clock when handling the
//!   report, the downloader's stamp of the last byte), never an earlier one.
//!   With `connections_per_host` above 1 the interval runs from start to start
//!   (set at the dispatch), so the end changes nothing but the failure count.
//! - `connect_failure` or `timeout`: a host failure. The host backs off (1 min, 5 min,
//!   30 min, ...); the URL goes back to the head and is tried again, up to
//!   `max_url_attempts` tries, after which it ends with that outcome. After
//!   `max_failures` consecutive failures the host is dead: all its URLs end with
//!   `too_many_failures`. A request that started before the host's last failure was
//!   reported and fails too is not counted again (with several in flight, one outage
//!   fails them all), and a host is declared dead only when nothing of it is in
//!   flight.
//! - Any other failure (`bad_response`, `forbidden_address`, ...): the URL ends with
//!   that outcome; the server was reached, so the host just rests its interval.
//! - Returned (the downloader never started it, or it went away): the URL goes back to
//!   the head of its queue (`out`), no failure counted.
//!
//! This module must never read the page itself: pages go to the application through
//! the spool.

use spool::OutcomeReason;
use spool::protocol::{FetchPurpose, FetchReport, FetchResult, JobId};

use super::hosts::{HostId, Out};
use super::store::Batch;
use super::throttle;
use super::{Frontier, FrontierError};
use crate::politeness;

impl Frontier {
    /// A downloader reported on a job. Returns false (and changes nothing) if the job
    /// is unknown: already reported, or handed out by an earlier run of the manager.
    ///
    /// A stored robots.txt must go to [`on_robots_fetched`](Self::on_robots_fetched)
    /// with its body instead ([`FrontierError::RobotsBodyRequired`]).
    pub fn on_report(&mut self, report: &FetchReport, now_ms: u64) -> Result<bool, FrontierError> {
        let Some(info) = self.jobs.info(report.job) else {
            tracing::debug!(job = %report.job, "report for an unknown job ignored");
            return Ok(false);
        };
        match (&report.result, info.purpose) {
            (FetchResult::Returned, _) => self.on_returned(report.job, now_ms),
            (FetchResult::Stored(_), FetchPurpose::Robots) => {
                Err(FrontierError::RobotsBodyRequired { job: report.job })
            }
            (FetchResult::Failed { detail, .. }, FetchPurpose::Robots) => {
                let Some(done) = self.finish_job(report.job, FetchPurpose::Robots, now_ms) else {
                    return Ok(false);
                };
                let mut batch = Batch::default();
                self.robots_unreachable(done.host, detail, now_ms, &mut batch)?;
                self.commit(batch)?;
                Ok(true)
            }
            (FetchResult::Stored(page), FetchPurpose::Page)
                if throttle::is_throttle(page.status) =>
            {
                let held = self.jobs.held(report.job).cloned();
                let Some(done) = self.finish_job(report.job, FetchPurpose::Page, now_ms) else {
                    return Ok(false);
                };
                if self.page_throttled(&done, page, now_ms)? {
                    if let Some(held) = held {
                        // Its page: durable only once its holder commits the batch.
                        self.jobs.await_commit(report.job, held);
                    }
                }
                Ok(true)
            }
            (FetchResult::Stored(page), FetchPurpose::Page) => {
                let total_ms = u64::from(page.timing.total_ms);
                let held = self.jobs.held(report.job).cloned();
                let Some(done) = self.finish_job(report.job, FetchPurpose::Page, now_ms) else {
                    return Ok(false);
                };
                if let Some(held) = held {
                    // Durable only once its holder commits the batch (`jobs`).
                    self.jobs.await_commit(report.job, held);
                }
                let id = done.host;
                let mut batch = Batch::default();
                if let (Some(seq), Some(app)) = (done.out.seq, &done.app) {
                    self.url_fetched(id, seq, app, &mut batch);
                }
                if let Some(host) = self.hosts.get_mut(id) {
                    host.failures = 0;
                    host.throttle = None;
                    host.last_fetch_ms = Some(total_ms);
                }
                self.rest(id, now_ms, &mut batch)?;
                self.commit(batch)?;
                Ok(true)
            }
            (FetchResult::Failed { reason, detail }, FetchPurpose::Page) => {
                let (reason, detail) = (*reason, detail.clone());
                let Some(done) = self.finish_job(report.job, FetchPurpose::Page, now_ms) else {
                    return Ok(false);
                };
                let mut batch = Batch::default();
                self.page_failed(&done, reason, &detail, now_ms, &mut batch)?;
                self.commit(batch)?;
                Ok(true)
            }
        }
    }

    /// A job comes back unstarted (its downloader is draining, over its limit, or
    /// gone): its URL stays at the head of the queue and the host goes on as if the
    /// job had never been sent. Returns false if the job is unknown.
    pub fn on_returned(&mut self, job: JobId, now_ms: u64) -> Result<bool, FrontierError> {
        let Some(purpose) = self.jobs.info(job).map(|j| j.purpose) else {
            return Ok(false);
        };
        let Some(done) = self.finish_job(job, purpose, now_ms) else {
            return Ok(false);
        };
        if let Some(seq) = done.out.seq {
            self.put_back(done.host, seq, done.out.tries)?;
        }
        let mut batch = Batch::default();
        self.advance(done.host, now_ms, &mut batch)?;
        self.commit(batch)?;
        Ok(true)
    }

    /// A job whose downloader vanished before reporting it (killed, crashed, cut
    /// off): its URL stays at the head of the queue like [`on_returned`], but the
    /// request may have reached the host, even be in its hands still, so the host
    /// rests `max(interval, lost_job_rest_ms)` from `now_ms` before its next
    /// request. Returns false if the job is unknown.
    ///
    /// [`on_returned`]: Frontier::on_returned
    pub fn on_lost(&mut self, job: JobId, now_ms: u64) -> Result<bool, FrontierError> {
        let Some(purpose) = self.jobs.info(job).map(|j| j.purpose) else {
            return Ok(false);
        };
        let Some(done) = self.finish_job(job, purpose, now_ms) else {
            return Ok(false);
        };
        let id = done.host;
        if let Some(seq) = done.out.seq {
            self.put_back(id, seq, done.out.tries)?;
        }
        if let Some(host) = self.hosts.get(id) {
            let rest = self.interval_of(host).max(self.config.lost_job_rest_ms);
            let until = politeness::rest_until(now_ms, rest);
            if let Some(host) = self.hosts.get_mut(id) {
                host.next_allowed_ms = host.next_allowed_ms.max(until);
            }
        }
        let mut batch = Batch::default();
        self.advance(id, now_ms, &mut batch)?;
        self.commit(batch)?;
        Ok(true)
    }

    /// Forgets job `job` (of `purpose`) and frees its host and IP: what it was.
    pub(crate) fn finish_job(
        &mut self,
        job: JobId,
        purpose: FetchPurpose,
        now_ms: u64,
    ) -> Option<Finished> {
        if self.jobs.info(job)?.purpose != purpose {
            return None;
        }
        let (info, _) = self.jobs.finish(job)?;
        if let Some(origin) = info.borrowed {
            // The hop's target rests its own interval (the host's, if it is not known).
            let rester = self.hosts.id_of(&origin).unwrap_or(info.host);
            let interval = self
                .hosts
                .get(rester)
                .map_or(self.config.interval_ms, |h| self.interval_of(h));
            self.borrowed
                .finish(origin, politeness::rest_until(now_ms, interval));
        }
        let out = self.hosts.take_out(info.host, job)?;
        // Neither in a heap nor in flight until `advance` places it. (With several
        // in flight it may still have an entry in a heap: a stale one, or a
        // duplicate that finds it dispatched already; every heap checks the state.)
        self.hosts
            .set_state(info.host, super::hosts::HostState::Waiting);
        for (key, id) in self.ips.finish(out.ip, now_ms) {
            self.unpark(key, id);
        }
        Some(Finished {
            host: info.host,
            out,
            app: info.app,
        })
    }

    /// A page fetch failed with `reason`.
    fn page_failed(
        &mut self,
        done: &Finished,
        reason: OutcomeReason,
        detail: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let id = done.host;
        let Some(seq) = done.out.seq else {
            return Ok(());
        };
        let host_failure = matches!(
            reason,
            OutcomeReason::ConnectFailure | OutcomeReason::Timeout
        );
        if !host_failure {
            self.end_url(id, seq, reason, detail, now_ms, batch)?;
            return self.rest(id, now_ms, batch);
        }
        let tries = done.out.tries + 1;
        if tries >= self.config.max_url_attempts {
            self.end_url(id, seq, reason, detail, now_ms, batch)?;
        } else {
            // Its own batch, committed at once; this one starts after it.
            self.put_back(id, seq, tries)?;
        }
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        // Sent before the last failure was known: the same outage, not a new one.
        let counts = done.out.started_ms >= host.failed_at_ms;
        let dropped = if counts {
            self.host_failed(id, OutcomeReason::TooManyFailures, detail, now_ms, batch)?
        } else {
            self.after_failure(id, OutcomeReason::TooManyFailures, detail, now_ms, batch)?
        };
        if !dropped {
            self.advance(id, now_ms, batch)?;
        }
        Ok(())
    }

    /// The head URL of host `id` ends with an outcome.
    pub(crate) fn end_head(
        &mut self,
        id: HostId,
        reason: OutcomeReason,
        detail: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        if let Some(entry) = self.pop_head(id, batch)? {
            self.entry_ended(entry, reason, detail, now_ms, batch);
        }
        Ok(())
    }

    /// After a request: the host rests its interval from now (with one connection
    /// per host; with more, its rest was set at the start), then goes on.
    fn rest(&mut self, id: HostId, now_ms: u64, batch: &mut Batch) -> Result<(), FrontierError> {
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        let interval = self.interval_of(host);
        let one_at_a_time = self.connection_limit() == 1;
        if let Some(host) = self.hosts.get_mut(id) {
            if one_at_a_time {
                // The latest end it knows: a chained job's report may come before
                // the report of the job it followed.
                host.next_allowed_ms = host
                    .next_allowed_ms
                    .max(politeness::rest_until(now_ms, interval));
            }
            if interval > super::queue::READ_AHEAD_MAX_REST_MS {
                host.buffer.clear(); // Read again when it wakes: no memory while resting.
            }
        }
        self.save_host(id, batch);
        self.advance(id, now_ms, batch)
    }
}

/// What a finished job was, for the report that ends it.
#[derive(Debug)]
pub(crate) struct Finished {
    /// Its host.
    pub host: HostId,
    /// Its entry among the host's requests in flight (now removed).
    pub out: Out,
    /// The application of a page job.
    pub app: Option<spool::AppId>,
}
