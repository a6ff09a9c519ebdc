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
//!   `max_failures` consecutive failures, or sooner when its next try would start
//!   more than `host_retry_window_ms` after its first failing try started, the
//!   host is dead: all its URLs end with `too_many_failures`, the detail naming
//!   the bound, the tries and the last failure. A request that started before the host's last failure was
//!   reported and fails too is not counted again (with several in flight, one outage
//!   fails them all), and a host is declared dead only when nothing of it is in
//!   flight.
//! - Any other failure (`bad_response`, `forbidden_address`, ...): the URL ends with
//!   that outcome; the server was reached, so the host just rests its interval.
//! - Returned (the downloader never started it, or it went away): the URL goes back to
//!   the head of its queue (see "URLs in flight" below), no failure counted.
//!
//! This module must never read the page itself: pages go to the application through
//! the spool.
//!
//! # robots.txt fetches
//!
//! robots.txt fetches: what their results mean for a host (RFC 9309 section 2.3.1,
//! through [`RobotsPolicy::from_fetch`]).
//!
//! - 2xx: the body (read from `robots/` by the service) is parsed; cached 24 h, also
//!   in RocksDB (`origin`), so a host that comes back or a restarted manager does not
//!   fetch it again.
//! - 3xx with a `Location`: followed, up to `robots_max_redirects` (5). Each hop is a
//!   new robots job, subject to the host's politeness. A target on the same host name
//!   uses the host's address; a target on another name is resolved first, and its
//!   robots.txt then applies to *this* host (RFC 9309 section 2.3.1.2 says redirects
//!   are followed across hosts too; `http://a/robots.txt -> https://a/robots.txt` and
//!   `a -> www.a` are the common cases). Too many hops, a missing or unparseable
//!   `Location`, or a target that does not resolve: robots.txt is unavailable, i.e.
//!   allow all (as RFC 9309 lets us). A hop to another origin is paced by that
//!   origin's politeness, not only the host's (see `borrowed`). A chase that ends
//!   on another origin's own `/robots.txt` (`http -> https`) answers for that
//!   origin too (`share_robots`): it does not fetch the same file again.
//! - 4xx (but 429): allow all, cached.
//! - 5xx, 429, a network failure, or a 2xx whose body the service could not read:
//!   unreachable. Nothing of the host is fetched (complete disallow), the host backs
//!   off as after any failure and robots.txt is fetched again; after `max_failures`,
//!   or past `host_retry_window_ms`, its URLs end with `too_many_failures`. A
//!   robots.txt that never answers fails at the downloader's first-byte time-out,
//!   a host that refuses connections at once: both are failures like a 5xx.
//!
//! A fetched 2xx robots.txt's `Sitemap:` URLs (at most [`MAX_SITEMAPS_PER_HOST`],
//! resolved against the robots.txt URL, http(s) only) are reported to the
//! application of the host's head URL as `sitemap` lines of its outcome file, with
//! the depth of that URL plus one, in the same RocksDB batch as the verdict (so a
//! crash loses none and repeats none); see [`OutcomeReason::Sitemap`]. What to do
//! with them (request them as links, or not) is the application's business. A
//! verdict read back from the cache reports nothing again; a refetch after the TTL
//! reports them again (the application's seen set drops the repeats).
//!
//! This module must never do I/O other than through the store; the body arrives as
//! bytes.
//!
//! # URLs in flight
//!
//! URLs in flight: up to `connections_per_host` page jobs of one host out at once,
//! each tracked until its report, and put back when it did not end.
//!
//! The scheme: a dispatch takes the host's head URL *out of the queue* (`head` moves
//! past it) but leaves it in RocksDB under its seq, now below `head`; the host's
//! [`Out`] entries and its record (`out`, written in the dispatch's batch, as the
//! record is anyway) name those seqs. Every key of a host below its `head` is
//! therefore either a URL in flight or deleted. Then:
//!
//! - a report that ends the URL (page stored, or an outcome) deletes its key;
//! - a job that did not end (returned unstarted, lost with its downloader, or to be
//!   tried again after a connect failure) is *put back* at seq `head - 1`, which
//!   becomes the head: that key is free, or holds another URL in flight, which then
//!   swaps keys with it (its `Out` follows). Dispatched again first, as with one
//!   connection per host, where the put-back URL is always the one at `head - 1`;
//! - after a crash, [`Frontier::open`](super::Frontier::open) puts every URL a host
//!   record names as out back at the head of its queue, in seq order
//!   ([`Frontier::repack_out`]): exactly the URLs in flight are dispatched again,
//!   none is lost and none is queued twice. A record written before `out` existed
//!   had its URL in flight at `head`, so it is simply queued.
//!
//! Cost: a dispatch writes nothing beyond the host record; a report deletes one key;
//! finding a job among its host's is O(`connections_per_host`). A put-back reads one
//! or two keys and writes two or three, in a batch of its own (rare: returns,
//! losses, retries); the restart reads one key per URL in flight. This module must
//! never decide when a host may be contacted: `dispatch` and `lifecycle` do.
//!
//! # Requeues
//!
//! Putting a URL back: a page a downloader reported `Stored` but never announced in a
//! `Committed` batch is not durable, so when that downloader goes away the service
//! hands the URL back with [`Frontier::requeue`] and it is fetched again. The same
//! holds after a restart for a page restored from the `awaiting` family that no
//! downloader claims by its deadline (`requeue_unclaimed`; see `jobs`): the
//! report moved the URL from its queue to `awaiting` in one batch, and the
//! requeue moves it back in one batch, so it is always in one of them until a
//! commit deletes it.
//!
//! The report already removed the URL from its queue (politeness needs the report at
//! once), so the URL is queued again as a *new request*: a new request number, at the
//! tail of its host's queue, written in one batch with the counters (the page counted
//! at the report is uncounted, so every URL still ends exactly once in
//! `pages + outcomes`). It keeps its `depth` and `hops` hints (the application
//! reads them back from the stored page); `via`, a log hint, is not kept. A URL that can no longer be fetched (its host blacklisted or
//! dropped meanwhile) ends with that outcome instead, as it would when loaded.
//!
//! This module must never touch a host's state beyond what loading does: a known host
//! just gets a longer queue; a new one starts its way to ready (DNS first).

use std::collections::BTreeSet;
use std::sync::Arc;

use spool::protocol::{FetchPurpose, FetchReport, FetchResult, JobId, StoredPage};
use spool::{AppId, OutcomeReason, Validators};
use url::Url;

use super::hosts::{HostId, HostState, Out, RobotsChase, RobotsInForce};
use super::jobs::{Held, Holder};
use super::lifecycle::{Failure, live_drop};
use super::origin::{Origin, origin_of, origin_of_parsed};
use super::records::{
    AwaitingPage, CachedRobots, META_NEXT_HOST, META_NEXT_REQNO, PendingOutcome, QueueEntry,
    job_key, queue_key,
};
use super::store::{Batch, Cf};
use super::throttle::{Throttle, mix};
use super::{Frontier, FrontierError, politeness, throttle};
use crate::robots::{MAX_ROBOTS_BYTES, RobotsPolicy};

/// Most `Sitemap:` URLs of one robots.txt reported (the rest are ignored).
pub const MAX_SITEMAPS_PER_HOST: usize = 100;

/// Longest `Sitemap:` URL reported, in bytes (a longer one is ignored).
const MAX_SITEMAP_URL_BYTES: usize = 4096;

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
                let started_ms = done.out.started_ms;
                self.robots_unreachable(done.host, detail, started_ms, now_ms, &mut batch)?;
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
                let awaiting = held.as_ref().map(|h| (report.job, h));
                if self.page_throttled(&done, page, awaiting, now_ms)? {
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
                let id = done.host;
                let mut batch = Batch::default();
                if let (Some(seq), Some(app)) = (done.out.seq, &done.app) {
                    let awaiting = held.as_ref().map(|h| (report.job, h));
                    self.url_fetched(id, seq, app, awaiting, &mut batch);
                }
                if let Some(held) = held {
                    // Durable only once its holder commits the batch (`jobs`).
                    self.jobs.await_commit(report.job, held);
                }
                if let Some(host) = self.hosts.get_mut(id) {
                    host.trouble.recovered();
                    host.trouble.throttle = None;
                    host.timing.last_fetch_ms = Some(total_ms);
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
                host.timing.next_allowed_ms = host.timing.next_allowed_ms.max(until);
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
        if let Some(origin) = info.borrowed.clone() {
            // The hop's target rests its own interval (the host's, if it is not known).
            let rester = self.hosts.id_of(&origin).unwrap_or(info.host);
            let interval = self
                .hosts
                .get(rester)
                .map_or(self.config.interval_ms, |h| self.interval_of(h));
            self.schedule
                .give_back(origin, politeness::rest_until(now_ms, interval));
        }
        let out = self.hosts.take_out(info.host, job)?;
        // Neither in a heap nor in flight until `advance` places it. (With several
        // in flight it may still have an entry in a heap: a stale one, or a
        // duplicate that finds it dispatched already; every heap checks the state.)
        self.hosts.set_state(info.host, HostState::Waiting);
        for (key, id) in self.schedule.ip_finish(out.ip, now_ms) {
            self.unpark(key, id);
        }
        Some(Finished {
            host: info.host,
            out,
            app: info.app,
            borrowed: info.borrowed,
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
        let counts = done.out.started_ms >= host.trouble.failed_at_ms;
        let failure = Failure {
            death: OutcomeReason::TooManyFailures,
            detail,
            started_ms: done.out.started_ms,
        };
        let dropped = if counts {
            self.host_failed(id, &failure, now_ms, batch)?
        } else {
            self.after_failure(id, &failure, now_ms, batch)?
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
                host.timing.next_allowed_ms = host
                    .timing
                    .next_allowed_ms
                    .max(politeness::rest_until(now_ms, interval));
            }
            if interval > super::dispatch::READ_AHEAD_MAX_REST_MS {
                host.queue.buffer.clear(); // Read again when it wakes: no memory while resting.
            }
        }
        self.save_host(id, batch);
        self.advance(id, now_ms, batch)
    }

    /// Downloader `holder` committed `jobs` in batch `file`: returns the
    /// applications of the pages that awaited it (from `holder`, or restored from an
    /// earlier run: see `jobs`). Their `awaiting` records go in one batch (no
    /// fsync: a lost delete only fetches a page again). O(jobs).
    pub(crate) fn on_committed(
        &mut self,
        holder: Holder,
        file: &str,
        jobs: &[JobId],
    ) -> Result<BTreeSet<AppId>, FrontierError> {
        let mut apps = BTreeSet::new();
        let mut batch = Batch::default();
        for job in jobs {
            match self.jobs.commit(holder, *job) {
                Some(app) => {
                    batch.delete(Cf::Awaiting, job_key(job.0).to_vec());
                    apps.insert(app);
                }
                None => tracing::debug!(%job, file, "commit of a job not awaiting one ignored"),
            }
        }
        self.commit(batch)?;
        Ok(apps)
    }

    /// The pages restored at open ([`JobTable::restore`](super::jobs::JobTable))
    /// that no downloader claimed by their deadline died with their downloader:
    /// their URLs are queued again ([`requeue`](Self::requeue)), in job order.
    /// Returns how many. Does nothing before the deadline. O(entries of the table)
    /// plus a batch per page.
    pub(crate) fn requeue_unclaimed(&mut self, now_ms: u64) -> Result<usize, FrontierError> {
        if !self.jobs.restored_due(now_ms) {
            return Ok(0);
        }
        let pages = self.jobs.take_restored();
        for (job, page) in &pages {
            let hints = (page.depth, page.hops, page.validators.clone());
            self.requeue_job(Some(*job), &page.app, &page.url, hints, now_ms)?;
        }
        if !pages.is_empty() {
            tracing::warn!(
                pages = pages.len(),
                "pages stored before the restart and never committed by a downloader: queued again"
            );
        }
        Ok(pages.len())
    }

    /// Downloader `holder` is gone: its jobs out go back to the head of their
    /// queues ([`on_lost`](Self::on_lost): their hosts rest one interval), then its
    /// pages never committed are queued again ([`requeue`](Self::requeue)), each in
    /// job order. Returns how many of each. O(entries of the table) plus a batch
    /// per job.
    pub(crate) fn on_holder_lost(
        &mut self,
        holder: Holder,
        now_ms: u64,
    ) -> Result<(usize, usize), FrontierError> {
        let (out, pages) = self.jobs.take_holder(holder);
        for job in &out {
            self.on_lost(*job, now_ms)?;
        }
        for (job, page) in &pages {
            let hints = (page.depth, page.hops, page.validators.clone());
            self.requeue_job(Some(*job), &page.app, &page.url, hints, now_ms)?;
        }
        Ok((out.len(), pages.len()))
    }

    /// Page job `done` was answered 429 or 503 (`page`): back the host off and try
    /// the URL again later, or keep the answer as its page at the last try. Returns
    /// whether the answer became the URL's page (counted; its batch must be
    /// committed, or the URL is queued again: `requeue`).
    pub(crate) fn page_throttled(
        &mut self,
        done: &Finished,
        page: &StoredPage,
        awaiting: Option<(JobId, &Held)>,
        now_ms: u64,
    ) -> Result<bool, FrontierError> {
        let id = done.host;
        let mut batch = Batch::default();
        let mut is_page = false;
        if let Some(seq) = done.out.seq {
            let tries = done.out.tries + 1;
            match &done.app {
                Some(app) if tries >= self.config.max_url_attempts => {
                    self.url_fetched(id, seq, app, awaiting, &mut batch);
                    is_page = true;
                }
                // Its own batch, committed at once; this one starts after it.
                _ => self.put_back(id, seq, tries)?,
            }
        }
        let Some(host) = self.hosts.get(id) else {
            self.commit(batch)?;
            return Ok(is_page);
        };
        let interval = self.interval_of(host);
        let in_row = host
            .trouble
            .throttle
            .map_or(0, |t| t.in_row)
            .saturating_add(1);
        let retry_after_ms = page.retry_after.map(|r| r.wait_ms(now_ms));
        let wait = match retry_after_ms {
            Some(asked) => politeness::retry_after_ms(&self.config, asked),
            None => {
                let jitter = mix(id ^ now_ms.rotate_left(20) ^ u64::from(in_row));
                politeness::throttle_backoff_ms(&self.config, interval, in_row, jitter)
            }
        };
        let until = politeness::rest_until(now_ms, wait.max(interval));
        if let Some(host) = self.hosts.get_mut(id) {
            host.timing.next_allowed_ms = host.timing.next_allowed_ms.max(until);
            host.trouble.throttle = Some(Throttle {
                status: page.status,
                retry_after_ms,
                in_row,
            });
            if wait > super::dispatch::READ_AHEAD_MAX_REST_MS {
                host.queue.buffer.clear(); // Resting long: free the read-ahead.
            }
            tracing::debug!(host = %host.origin, status = page.status, ?retry_after_ms,
                in_row, wait_ms = wait, "server asks for less; backing off");
        }
        self.save_host(id, &mut batch);
        self.advance(id, now_ms, &mut batch)?;
        self.commit(batch)?;
        Ok(is_page)
    }

    /// The URL at `seq` (in flight) of host `id`, of `app`, stored a page: it leaves
    /// its queue and is counted as a page. With `awaiting` (its job and holder: a
    /// page in a batch not committed yet) it moves to the `awaiting` family in the
    /// same batch, so a crash of everything never loses it (see `records`).
    pub(crate) fn url_fetched(
        &mut self,
        id: HostId,
        seq: u64,
        app: &AppId,
        awaiting: Option<(JobId, &Held)>,
        batch: &mut Batch,
    ) {
        batch.delete(Cf::Queue, queue_key(id, seq).to_vec());
        if let Some((job, held)) = awaiting {
            let record = AwaitingPage {
                app: held.app.clone(),
                url: held.url.clone(),
                depth: held.depth,
                hops: held.hops,
                validators: held.validators.clone(),
            };
            batch.put(Cf::Awaiting, job_key(job.0).to_vec(), &record);
        }
        let counters = self.ledger.counters_mut().app(app);
        counters.queued = counters.queued.saturating_sub(1);
        counters.pages += 1;
    }

    /// The URL at `seq` (in flight) of host `id` ends with `reason`.
    pub(crate) fn end_url(
        &mut self,
        id: HostId,
        seq: u64,
        reason: OutcomeReason,
        detail: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let entry: Option<QueueEntry> = self.ledger.store()?.get(Cf::Queue, &queue_key(id, seq))?;
        let Some(entry) = entry else {
            tracing::warn!(host = id, seq, "URL in flight missing from its queue");
            return Ok(());
        };
        batch.delete(Cf::Queue, queue_key(id, seq).to_vec());
        let app = &entry.app;
        self.ledger.counters_mut().app(app).queued =
            self.ledger.counters_mut().app(app).queued.saturating_sub(1);
        self.entry_ended(entry, reason, detail, now_ms, batch);
        Ok(())
    }

    /// Counts the outcome of `entry`, a URL of a queue that ends with `reason`, and
    /// queues it for its application's outcome file.
    pub(crate) fn entry_ended(
        &mut self,
        entry: QueueEntry,
        reason: OutcomeReason,
        detail: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) {
        self.ledger.counters_mut().outcome(&entry.app, reason);
        let outcome = PendingOutcome {
            app: entry.app,
            url: entry.url,
            reason,
            detail: detail.to_owned(),
        };
        self.outcomes.add(batch, outcome, now_ms);
    }

    /// Puts the URL at `seq` of host `id`, whose job did not end, back at the head of
    /// the queue (seq `head - 1`) with `tries` failed tries, and commits that at
    /// once (later reads of the queue in the same call must see it). The job must
    /// already be gone from the host's `out`.
    pub(crate) fn put_back(
        &mut self,
        id: HostId,
        seq: u64,
        tries: u32,
    ) -> Result<(), FrontierError> {
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        let Some(to) = host.queue.head.checked_sub(1).filter(|to| *to >= seq) else {
            tracing::warn!(host = %host.origin, seq, head = host.queue.head, "put-back below its head");
            return Ok(());
        };
        let entry: Option<QueueEntry> = self.ledger.store()?.get(Cf::Queue, &queue_key(id, seq))?;
        let Some(entry) = entry else {
            tracing::warn!(host = %host.origin, seq, "URL in flight missing from its queue");
            return Ok(());
        };
        let mut batch = Batch::default();
        if to != seq {
            // `to` holds another URL in flight (it swaps keys with this one), or
            // nothing (its job ended).
            match host.out.iter().position(|o| o.seq == Some(to)) {
                Some(i) => {
                    let other: Option<QueueEntry> =
                        self.ledger.store()?.get(Cf::Queue, &queue_key(id, to))?;
                    let Some(other) = other else {
                        tracing::warn!(host = %host.origin, seq = to, "URL in flight missing from its queue");
                        return Ok(());
                    };
                    batch.put(Cf::Queue, queue_key(id, seq).to_vec(), &other);
                    if let Some(host) = self.hosts.get_mut(id) {
                        host.out[i].seq = Some(seq);
                    }
                }
                None => batch.delete(Cf::Queue, queue_key(id, seq).to_vec()),
            }
            batch.put(Cf::Queue, queue_key(id, to).to_vec(), &entry);
        }
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(());
        };
        host.queue.head = to;
        host.queue.head_reqno = None;
        // The buffer stays contiguous from the head.
        host.queue.buffer.push_front((to, entry));
        if tries > 0 {
            host.trouble.tries.push((to, tries));
        }
        self.save_host(id, &mut batch);
        self.commit(batch)
    }

    /// A robots.txt response was stored: `status`, the body (the service reads it from
    /// the `robots/` file named in the report; `None` if it could not), and the
    /// `Location` of a 3xx. Returns false if `job` is not a robots job in flight.
    pub fn on_robots_fetched(
        &mut self,
        job: JobId,
        status: u16,
        body: Option<&[u8]>,
        location: Option<&str>,
        now_ms: u64,
    ) -> Result<bool, FrontierError> {
        let Some((id, started_ms, borrowed)) = self
            .finish_job(job, FetchPurpose::Robots, now_ms)
            .map(|d| (d.host, d.out.started_ms, d.borrowed))
        else {
            return Ok(false);
        };
        let mut batch = Batch::default();
        let redirect = (300..400).contains(&status).then_some(location).flatten();
        match (redirect, body) {
            (Some(location), _) => self.follow_redirect(id, location, now_ms, &mut batch)?,
            (None, None) if (200..300).contains(&status) => {
                let detail = format!("robots.txt body of status {status} could not be read");
                self.robots_unreachable(id, &detail, started_ms, now_ms, &mut batch)?;
            }
            (None, body) => {
                let body = body.unwrap_or_default();
                let body = &body[..body.len().min(MAX_ROBOTS_BYTES)];
                let mut policy = RobotsPolicy::from_fetch(status, body, &self.config.robots_agent);
                if let RobotsPolicy::Rules(robots) = &mut policy {
                    // The cache keeps only the rules.
                    let sitemaps = robots.take_sitemaps();
                    self.report_sitemaps(id, &sitemaps, now_ms, &mut batch)?;
                }
                if policy == RobotsPolicy::DisallowAll {
                    let detail = format!("robots.txt status {status}");
                    self.robots_unreachable(id, &detail, started_ms, now_ms, &mut batch)?;
                } else {
                    let keep = matches!(policy, RobotsPolicy::Rules(_)).then(|| body.to_vec());
                    let own = self.hop_target_own_file(id);
                    if let Some(target) = &own {
                        self.share_robots(target, &policy, keep.clone(), now_ms, &mut batch)?;
                    }
                    self.install_robots(id, policy, keep, now_ms, &mut batch)?;
                    if let Some(target) = borrowed {
                        self.rest_hop_target(id, target, now_ms);
                    }
                }
            }
        }
        self.commit(batch)?;
        Ok(true)
    }

    /// Reports the `Sitemap:` URLs of host `id`'s robots.txt to the application of
    /// its head URL (see the module docs). O(sitemaps).
    fn report_sitemaps(
        &mut self,
        id: HostId,
        sitemaps: &[String],
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        if sitemaps.is_empty() {
            return Ok(());
        }
        self.fill_buffer(id)?;
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        let Some((_, head)) = host.queue.buffer.front() else {
            return Ok(());
        };
        let (app, depth) = (head.app.clone(), head.depth.unwrap_or(0));
        let base = host
            .chase
            .url
            .clone()
            .unwrap_or_else(|| Origin::robots_url(&host.origin));
        let Ok(base) = Url::parse(&base) else {
            return Ok(());
        };
        let detail = spool::outcome::sitemap_detail(depth.saturating_add(1));
        for listed in sitemaps.iter().take(MAX_SITEMAPS_PER_HOST) {
            let Ok(url) = base.join(listed.trim()) else {
                continue;
            };
            if !matches!(url.scheme(), "http" | "https")
                || url.as_str().len() > MAX_SITEMAP_URL_BYTES
            {
                continue;
            }
            let outcome = PendingOutcome {
                app: app.clone(),
                url: url.into(),
                reason: OutcomeReason::Sitemap,
                detail: detail.clone(),
            };
            self.outcomes.add(batch, outcome, now_ms);
        }
        Ok(())
    }

    /// A redirect hop to the other origin `target` fetched the robots.txt now in
    /// force for host `id` (usually the target's own, as in `http -> https`): the
    /// target rests host `id`'s interval, which now counts the file's `Crawl-delay`,
    /// if that is longer than the rest it got when the hop ended (its interval
    /// before the file was known).
    fn rest_hop_target(&mut self, id: HostId, target: Arc<str>, now_ms: u64) {
        let Some(host) = self.hosts.get(id) else {
            return;
        };
        let until = politeness::rest_until(now_ms, self.interval_of(host));
        self.schedule.rest_borrowed_at_least(target, until);
    }

    /// The origin whose own robots.txt host `id`'s redirect chase fetched last
    /// (`http://a/robots.txt -> https://a/robots.txt`: `https://a`), if the chase
    /// ended on another origin's `/robots.txt`. O(1).
    fn hop_target_own_file(&self, id: HostId) -> Option<Arc<str>> {
        let chase = &self.hosts.get(id)?.chase;
        let (url, origin) = (chase.url.as_deref()?, chase.origin.clone()?);
        (url == Origin::robots_url(&origin)).then_some(origin)
    }

    /// A redirect chase fetched `origin`'s own robots.txt, answered with `policy`
    /// (`body`: the rules' text, kept as `install_robots` keeps it): it is that
    /// origin's verdict too, so the origin does not fetch the same file again. The
    /// file goes into the origin's cached record and, when its host is in memory
    /// without a fresh verdict and is not chasing or fetching its own robots.txt,
    /// into the host (a host waiting to fetch it then takes its pages instead, at
    /// its next dispatch). Not counted as a fetch. O(1) plus one read of the
    /// origin's record.
    fn share_robots(
        &mut self,
        origin: &str,
        policy: &RobotsPolicy,
        body: Option<Vec<u8>>,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let expires_ms = now_ms.saturating_add(self.config.robots_ttl_ms);
        let mut record = self.origin_record(origin)?;
        record.robots = Some(CachedRobots { expires_ms, body });
        batch.put(Cf::Origin, origin.as_bytes().to_vec(), &record);
        let Some(target) = self.hosts.id_of(origin) else {
            return Ok(());
        };
        let Some(host) = self.hosts.get_mut(target) else {
            return Ok(());
        };
        let fetching = host.state() == HostState::FetchingRobots || host.chase.url.is_some();
        if host.fresh_robots(now_ms).is_none() && !fetching {
            host.robots = Some(RobotsInForce {
                policy: Arc::new(policy.clone()),
                expires_ms,
            });
        }
        Ok(())
    }

    /// Follows a robots.txt redirect, or gives up (allow all).
    fn follow_redirect(
        &mut self,
        id: HostId,
        location: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let max = self.config.robots_max_redirects;
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(());
        };
        let current = host
            .chase
            .url
            .clone()
            .unwrap_or_else(|| Origin::robots_url(&host.origin));
        let target = Url::parse(&current)
            .and_then(|base| base.join(location))
            .ok()
            .and_then(|url| origin_of_parsed(&url).ok().map(|o| (url, o)));
        let Some((url, origin)) = target.filter(|_| host.chase.redirects < max) else {
            tracing::debug!(host = %host.origin, location, "robots.txt redirect not followed");
            return self.install_robots(id, RobotsPolicy::AllowAll, None, now_ms, batch);
        };
        let other_name =
            (origin.name != *host.name).then(|| Arc::<str>::from(origin.name.as_str()));
        let other_origin =
            (origin.key != *host.origin).then(|| Arc::<str>::from(origin.key.as_str()));
        host.chase = RobotsChase {
            url: Some(url.to_string()),
            redirects: host.chase.redirects + 1,
            name: other_name,
            addr: None,
            port: Some(origin.port),
            origin: other_origin,
        };
        // The next hop is another request, possibly to the same server: rest first.
        let interval = self.interval_of(self.hosts.get(id).expect("checked above"));
        if let Some(host) = self.hosts.get_mut(id) {
            host.timing.next_allowed_ms = politeness::rest_until(now_ms, interval);
        }
        self.advance(id, now_ms, batch)
    }

    /// robots.txt could not be fetched (the try started at `started_ms`): complete
    /// disallow for now, back off, retry, or give the host up.
    pub(crate) fn robots_unreachable(
        &mut self,
        id: HostId,
        detail: &str,
        started_ms: u64,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        if let Some(host) = self.hosts.get_mut(id) {
            host.robots = None;
            host.chase = RobotsChase::default();
        }
        let detail = format!("robots.txt unreachable: {detail}");
        let failure = Failure {
            death: OutcomeReason::TooManyFailures,
            detail: &detail,
            started_ms,
        };
        if !self.host_failed(id, &failure, now_ms, batch)? {
            self.advance(id, now_ms, batch)?;
        }
        Ok(())
    }

    /// A robots.txt verdict for host `id`: in force for `robots_ttl_ms`, cached in the
    /// `origin` family with the 2xx `body`; the host then rests its interval.
    pub(crate) fn install_robots(
        &mut self,
        id: HostId,
        policy: RobotsPolicy,
        body: Option<Vec<u8>>,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let expires_ms = now_ms.saturating_add(self.config.robots_ttl_ms);
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(());
        };
        host.robots = Some(RobotsInForce {
            policy: Arc::new(policy),
            expires_ms,
        });
        host.chase = RobotsChase::default();
        host.trouble.recovered();
        let origin = host.origin.clone();
        self.ledger.counters_mut().robots_fetched += 1;
        let mut record = self.origin_record(&origin)?;
        record.robots = Some(CachedRobots { expires_ms, body });
        batch.put(Cf::Origin, origin.as_bytes().to_vec(), &record);
        let interval = self.interval_of(self.hosts.get(id).expect("checked above"));
        if let Some(host) = self.hosts.get_mut(id) {
            host.timing.next_allowed_ms = host
                .timing
                .next_allowed_ms
                .max(politeness::rest_until(now_ms, interval));
        }
        self.save_host(id, batch);
        self.advance(id, now_ms, batch)
    }

    /// Queues `url` of `app` again, durably, as a new request at the tail of its
    /// host's queue: for a page whose report arrived but whose batch was never
    /// committed (its downloader died). Returns false if the URL ended with an
    /// outcome instead (invalid, blacklisted, or its host dropped meanwhile).
    /// `(depth, hops, validators)` are the job's hints, queued again with the URL.
    pub fn requeue(
        &mut self,
        app: &AppId,
        url: &str,
        hints: (Option<u32>, Option<u32>, Validators),
        now_ms: u64,
    ) -> Result<bool, FrontierError> {
        self.requeue_job(None, app, url, hints, now_ms)
    }

    /// [`requeue`](Self::requeue) of the page of `job`, if given, whose `awaiting`
    /// record goes in the same batch as the new queue entry (or the outcome).
    fn requeue_job(
        &mut self,
        job: Option<JobId>,
        app: &AppId,
        url: &str,
        (depth, hops, validators): (Option<u32>, Option<u32>, Validators),
        now_ms: u64,
    ) -> Result<bool, FrontierError> {
        let mut batch = Batch::default();
        if let Some(job) = job {
            batch.delete(Cf::Awaiting, job_key(job.0).to_vec());
        }
        let reqno = self.requests.take_reqno();
        batch.put(
            Cf::Meta,
            META_NEXT_REQNO.to_vec(),
            &self.requests.next_reqno(),
        );
        // Counted as a page at its report; it is counted again when fetched again.
        let counters = self.ledger.counters_mut().app(app);
        counters.pages = counters.pages.saturating_sub(1);
        let origin = match origin_of(url) {
            Ok(origin) => origin,
            Err(detail) => {
                let reason = OutcomeReason::InvalidUrl;
                self.load_outcome(&mut batch, url, app, reason, &detail, now_ms);
                self.commit(batch)?;
                return Ok(false);
            }
        };
        if self.blacklist.matches(&origin.name) {
            let detail = format!("{} is blacklisted", origin.name);
            let reason = OutcomeReason::Blacklisted;
            self.load_outcome(&mut batch, url, app, reason, &detail, now_ms);
            self.commit(batch)?;
            return Ok(false);
        }
        let (id, created) = match self.hosts.id_of(&origin.key) {
            Some(id) => (id, false),
            None => {
                let record = self.origin_record(&origin.key)?;
                if let Some(reason) = live_drop(&record, now_ms) {
                    let detail = format!("{} was dropped earlier: {reason}", origin.key);
                    self.load_outcome(&mut batch, url, app, reason, &detail, now_ms);
                    self.commit(batch)?;
                    return Ok(false);
                }
                let id = self.create_host(&origin, &record);
                batch.put(Cf::Meta, META_NEXT_HOST.to_vec(), &self.hosts.next_id());
                (id, true)
            }
        };
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(false);
        };
        let seq = host.queue.tail;
        if host.queued() == 0 {
            host.queue.head_reqno = Some(reqno);
        }
        host.queue.tail += 1;
        let entry = QueueEntry {
            reqno,
            app: app.clone(),
            url: url.to_owned(),
            depth,
            via: None,
            hops,
            validators,
        };
        batch.put(Cf::Queue, queue_key(id, seq).to_vec(), &entry);
        self.ledger.counters_mut().app(app).queued += 1;
        self.save_host(id, &mut batch);
        self.commit(batch)?;
        if created {
            // Like a loaded host: on its way to ready once its URL is durable.
            let mut batch = Batch::default();
            self.advance(id, now_ms, &mut batch)?;
            self.commit(batch)?;
        }
        tracing::debug!(%app, url, "URL queued again");
        Ok(true)
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
    pub app: Option<AppId>,
    /// The origin a robots.txt redirect hop contacted, when not the host's own.
    pub borrowed: Option<Arc<str>>,
}
