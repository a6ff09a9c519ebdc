//! The crawl manager's scheduling core: everything that decides which URL goes to a
//! downloader next (DESIGN.md section 4, Polybot sections 3.4-3.5), with its durable
//! state in RocksDB.
//!
//! [`Frontier`] is event-driven and owns no thread, socket or clock. The service
//! around it calls a method when something happens and asks it for work:
//!
//! | event | call |
//! |---|---|
//! | time passed | [`tick`](Frontier::tick) (when [`next_wakeup`](Frontier::next_wakeup) says) |
//! | a downloader has room | [`next_jobs`](Frontier::next_jobs) |
//! | resolvers have room | [`hosts_needing_dns`](Frontier::hosts_needing_dns) |
//! | a resolver answered | [`on_dns`](Frontier::on_dns) |
//! | a fetch report arrived | [`on_report`](Frontier::on_report) (pages, failures, returns) |
//! | a robots.txt was stored | [`on_robots_fetched`](Frontier::on_robots_fetched) (with the body read from `robots/`) |
//! | jobs went to a downloader | `hand_out` (the one table of jobs out: `jobs`) |
//! | a downloader committed pages | `on_committed` |
//! | a downloader vanished | `on_holder_lost`: its jobs out back to their queues, its pages never committed queued again |
//! | a request file appeared | [`rescan_requests`](Frontier::rescan_requests) (a hint; folders are also listed periodically) |
//! | an operator acted | [`set_target_rate`](Frontier::set_target_rate), [`blacklist_add`](Frontier::blacklist_add), [`checkpoint`](Frontier::checkpoint) |
//!
//! Time is an argument everywhere: `now_ms` is wall-clock milliseconds since the UNIX
//! epoch ([`wall_clock_ms`] for the service; tests pass their own), because robots.txt
//! verdicts and dead-host marks are kept across restarts.
//!
//! # Life of a host
//!
//! A URL loaded from a request file joins its host's FIFO queue (RocksDB). A new host
//! needs its name resolved (`NeedsDns` -> `Resolving`), then a fresh robots.txt,
//! fetched through a downloader at top priority (`NeedsRobots` -> `FetchingRobots`).
//! Then it is `Ready`: in the ready heap keyed by its head URL's request number. The
//! dispatcher pops the lowest, parks it on its IP if that IP is at its limit
//! (`Parked`), drops head URLs robots.txt excludes (outcome `robots_excluded`) and
//! sends the first allowed one. With `connections_per_host` 1 (the default) the host
//! is then `InFlight` until the report, which puts it to rest for its interval
//! (`Waiting`) or, on failure or a 429/503 answer, for a growing back-off or the
//! server's `Retry-After` (`BackedOff`, see `throttle`); after `max_failures`
//! failures, or when its next try would start past `host_retry_window_ms` from its
//! first failing try, its URLs become outcomes (`too_many_failures`), so a host
//! that never answers holds a crawl's end for a bounded time
//! ([`FrontierConfig::give_up_bound_ms`]). With N > 1 the host rests its interval
//! from the start instead and may be dispatched again while fewer than N of its
//! requests are in flight (`InFlight` only at N, or with nothing else to start). A
//! host whose queue empties is forgotten once its interval has passed and nothing of
//! it is in flight.
//!
//! # Durability
//!
//! Every change is one RocksDB batch (WAL on). A dispatched URL stays in RocksDB
//! until its report, below its host's head, and the host record names it, so after
//! a crash exactly the URLs in flight are put back at the head of their queues and
//! dispatched again (no separate `inflight` family is needed: see `report`). A page
//! reported `Stored` moves from its queue to the `awaiting` family in the report's
//! batch and leaves it at its batch's `Committed` (or is queued again when its
//! downloader is gone, at once, or after a restart when no downloader claims it:
//! see `jobs`), so no combination of process deaths loses a URL. Request
//! files are loaded in chunks,
//! each batch recording the file's progress, and deleted from the spool only after
//! their last chunk is durable. Outcomes are written with the change that causes them
//! and published afterwards (`outcomes`).
//!
//! # What it must never do
//!
//! No network I/O (DNS and fetches go through the service); never load a request file
//! before the ready pipeline needs URLs; never hold a crawl's URLs in memory (only
//! each dispatching host's next `pop_batch` URLs, one file chunk, and the URLs of
//! the jobs out at downloaders or awaiting their commit, bounded by the
//! downloaders' windows and open batches: `jobs`; a host has at most
//! `connections_per_host` of them).
//!
//! # Where things are
//!
//! `Frontier` coordinates; each part owns its state: `hosts` (the host dictionary and
//! each host's queue, trouble and timing), `schedule` (ready and waiting heaps, IP
//! slots, borrowed origins), `jobs` (the jobs out and the job ids), `ledger` (the
//! store with the counters and totals every batch carries), `requests` (request files
//! and request numbers), `outcomes`, `dns`, `config`, `politeness`. The events are in
//! four files: this one (open, operator calls, figures), `dispatch` (jobs going
//! out, host queue reads), `report` (reports, robots.txt verdicts, commits, losses,
//! requeues) and `lifecycle` (loading, DNS, timers, a host's states and end).
//!
//! # Memory and cost
//!
//! Per host in memory: see the `hosts` module. Hosts in memory are those with queued URLs
//! (bounded by lazy loading to about `s` plus the ones resting), plus DNS entries and
//! IP slots for recent hosts. Every heap operation is O(log hosts); a dispatch is
//! O(log hosts) plus one RocksDB seek per `pop_batch` URLs; a report is one batch
//! plus O(`connections_per_host`) to find the job among its host's.

mod borrowed;
pub mod config;
mod dispatch;
mod dns;
mod error;
pub(crate) mod hosts;
mod ip;
mod jobs;
mod ledger;
mod lifecycle;
mod origin;
mod outcomes;
pub mod politeness;
mod ready;
pub(crate) mod records;
mod report;
mod requests;
mod schedule;
mod stats;
pub(crate) mod store;
mod throttle;
mod totals;
mod waiting;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use spool::protocol::{
    AppProgress, BackOffReason, BackedOffHost, FetchPurpose, FetchResult, JobId,
};
use spool::{AppId, OutcomeReason, Spool};

use crate::blacklist::{Blacklist, BlacklistEntry};
use outcomes::OutcomeSink;
use requests::{RequestFiles, progress_keys};

pub use config::FrontierConfig;
pub use error::FrontierError;
pub use hosts::{HostId, HostState};
pub use records::AppCounters;
pub use stats::FrontierStats;
pub use totals::FetchTotals;

use dns::Dns;
use hosts::Hosts;
use jobs::{Held, Holder, JobInfo, JobTable};
use ledger::Ledger;
use records::{
    AwaitingPage, HostRecord, META_BLACKLIST, META_JOB_CEILING, META_NEXT_HOST, META_NEXT_REQNO,
    split_job_key,
};
use schedule::Schedule;
use store::{Batch, Cf, Store};

/// The wall clock in milliseconds since the UNIX epoch: the `now_ms` the service
/// passes to every call.
pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

// The service moves the frontier into its task (behind a mutex if shared).
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Frontier>();
};

/// The crawl manager's scheduling core. See the [module docs](self).
#[derive(Debug)]
pub struct Frontier {
    config: FrontierConfig,
    /// The database, with the counters and fetch totals every batch carries.
    ledger: Ledger,
    hosts: Hosts,
    /// When each host may go next: ready and waiting heaps, IP slots, borrowed origins.
    schedule: Schedule,
    dns: Dns,
    blacklist: Blacklist,
    requests: RequestFiles,
    outcomes: OutcomeSink,
    /// Every job out at a downloader or awaiting its commit (`jobs`).
    jobs: JobTable,
    target_rate: f64,
    /// When this frontier reopened an earlier run's state (wall-clock ms), 0 for a
    /// fresh one: see [`Frontier::rest_after_restart`].
    reopened_ms: u64,
}

impl Frontier {
    /// Opens the frontier whose RocksDB lives at `db_path` (created if missing; a
    /// [`checkpoint`](Self::checkpoint) folder works too), taking request files from
    /// and publishing outcomes to `spool`.
    ///
    /// After a crash: hosts with queued URLs are rebuilt from their records (they
    /// resolve again; a cached robots.txt verdict is reused while fresh), the URLs
    /// that were in flight are at the head of their queues and are dispatched again,
    /// a partly loaded request file resumes where its last batch ended, and outcomes
    /// not yet published are published.
    pub fn open(
        db_path: &Path,
        spool: Spool,
        config: FrontierConfig,
    ) -> Result<Frontier, FrontierError> {
        config.validate()?;
        if config.ip_max_in_flight != 0 && config.connections_per_host > config.ip_max_in_flight {
            tracing::warn!(
                connections_per_host = config.connections_per_host,
                ip_max_in_flight = config.ip_max_in_flight,
                "connections_per_host is above ip_max_in_flight, which bounds it"
            );
        }
        let component = config.component()?;
        let store = Store::open(db_path)?;
        let next_reqno: u64 = store.get(Cf::Meta, META_NEXT_REQNO)?.unwrap_or(0);
        let next_host_id: u64 = store.get(Cf::Meta, META_NEXT_HOST)?.unwrap_or(1);
        let next_job: u64 = store.get(Cf::Meta, META_JOB_CEILING)?.unwrap_or(1);
        let mut blacklist = Blacklist::new();
        let entries: Vec<String> = store.get(Cf::Meta, META_BLACKLIST)?.unwrap_or_default();
        for entry in entries {
            match entry.parse::<BlacklistEntry>() {
                Ok(e) => {
                    blacklist.insert(e);
                }
                Err(e) => tracing::warn!(error = %e, "stored blacklist entry skipped"),
            }
        }
        // Entries from the config file (checked by `validate`) apply at every start.
        for entry in config.blacklist.iter().filter_map(|e| e.parse().ok()) {
            blacklist.insert(entry);
        }
        let requests = RequestFiles::open(
            spool.clone(),
            component.clone(),
            config.request_scan_interval_ms,
            next_reqno,
        )?;
        let outcomes = OutcomeSink::open(
            &store,
            spool,
            component,
            config.outcome_batch_lines,
            config.outcome_max_age_ms,
        )?;
        let target_rate = config.target_pages_per_sec;
        let mut frontier = Frontier {
            schedule: Schedule::new(config.ip_max_in_flight, config.ip_min_interval_ms),
            config,
            ledger: Ledger::open(store)?,
            hosts: Hosts::numbered_from(next_host_id),
            dns: Dns::default(),
            blacklist,
            requests,
            outcomes,
            jobs: JobTable::starting_at(next_job),
            target_rate,
            reopened_ms: 0,
        };
        frontier.rebuild_hosts()?;
        frontier.restore_awaiting()?;
        let mut batch = Batch::default();
        // Progress of files that are gone (a crash between `done()` and the cleanup).
        let live = frontier.requests.claimed_keys();
        for key in progress_keys(frontier.ledger.store()?)? {
            if !live.contains(&key) {
                batch.delete(Cf::Meta, key);
            }
        }
        frontier.reserve_job_ids(&mut batch);
        frontier.ledger.store()?.write(batch)?;
        tracing::info!(
            hosts = frontier.hosts.len(),
            next_reqno = frontier.requests.next_reqno(),
            "frontier opened"
        );
        Ok(frontier)
    }

    /// Rebuilds the host dictionary from the `host` records: every host with queued
    /// URLs needs DNS again; its robots verdict comes from the `origin` cache.
    fn rebuild_hosts(&mut self) -> Result<(), FrontierError> {
        let mut records = Vec::new();
        self.ledger
            .store()?
            .scan(Cf::Host, &[], |key, record: HostRecord| {
                let id = key
                    .get(..8)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_be_bytes)
                    .unwrap_or(0);
                records.push((id, record));
                Ok(true)
            })?;
        let mut batch = Batch::default();
        for (id, record) in records {
            if record.head >= record.tail && record.out.is_empty() {
                batch.delete(Cf::Host, id.to_be_bytes().to_vec());
                continue;
            }
            self.hosts.saw_id(id);
            self.restore_host(id, record, &mut batch)?;
        }
        self.ledger.store()?.write(batch)
    }

    /// Reads back the pages that awaited their commit when the earlier run stopped
    /// (`awaiting`): restored in the job table, where a downloader's commit claims
    /// them; the deadline for that is set by
    /// [`rest_after_restart`](Self::rest_after_restart). O(records).
    fn restore_awaiting(&mut self) -> Result<(), FrontierError> {
        let mut pages = Vec::new();
        self.ledger
            .store()?
            .scan(Cf::Awaiting, &[], |key, page: AwaitingPage| {
                if let Some(job) = split_job_key(key) {
                    pages.push((JobId(job), page));
                }
                Ok(true)
            })?;
        if !pages.is_empty() {
            tracing::info!(
                pages = pages.len(),
                "pages stored but not committed before the restart: waiting for their downloaders' commits"
            );
        }
        for (job, page) in pages {
            self.jobs.restore(job, page);
        }
        Ok(())
    }

    /// Reserves a new block of job ids when the current one is used up.
    fn reserve_job_ids(&mut self, batch: &mut Batch) {
        if let Some(ceiling) = self.jobs.reserve_ids() {
            batch.put(Cf::Meta, META_JOB_CEILING.to_vec(), &ceiling);
        }
    }

    /// Applies `batch` with the counters (every batch carries them, so they are
    /// exact after a crash).
    fn commit(&mut self, batch: Batch) -> Result<(), FrontierError> {
        self.commit_opt(batch, false)
    }

    /// [`commit`](Self::commit), synced when `sync`.
    fn commit_opt(&mut self, batch: Batch, sync: bool) -> Result<(), FrontierError> {
        self.ledger.commit(batch, sync)
    }

    /// Holds the changes from now on, to write them as one batch at
    /// [`release_changes`](Self::release_changes) (or earlier, before the frontier
    /// reads its database): for the reports of one message. See `ledger`.
    pub fn hold_changes(&mut self) {
        self.ledger.hold();
    }

    /// Writes the changes held since [`hold_changes`](Self::hold_changes) and stops
    /// holding. Call it before sending anything that depends on them.
    pub fn release_changes(&mut self) -> Result<(), FrontierError> {
        self.ledger.release()
    }

    /// Politeness across a restart: when the frontier reopened an earlier run's
    /// state (`open` found dispatched requests), no host is contacted before one
    /// interval (its own, crawl delay included when its robots.txt is cached) after
    /// `now_ms`. The last request of the earlier run to a host may have ended just
    /// before the crash, and when it did is not stored. The service calls this once,
    /// right after [`Frontier::open`]; a fresh state has nothing to wait for.
    ///
    /// It also starts the wait for the commits of the pages restored from the
    /// earlier run: those no downloader claims by `now_ms +
    /// restored_commit_wait_ms` are queued again at the next [`tick`](Self::tick).
    pub fn rest_after_restart(&mut self, now_ms: u64) {
        if self.requests.next_reqno() > 0 {
            self.reopened_ms = now_ms;
        }
        let wait = self.config.restored_commit_wait_ms;
        self.jobs.wait_for_claims(now_ms.saturating_add(wait));
    }

    /// The earliest time host `host` may be contacted after a restart (0 if no
    /// restart, see [`Frontier::rest_after_restart`]).
    pub(crate) fn restart_rest_until(&self, host: &hosts::Host) -> u64 {
        if self.reopened_ms == 0 {
            return 0;
        }
        politeness::rest_until(self.reopened_ms, self.interval_of(host))
    }

    /// The config in force.
    pub fn config(&self) -> &FrontierConfig {
        &self.config
    }

    /// Sets the target speed `r` (pages/s), which sizes the ready queue `s = k r d`.
    /// Values that are not positive and finite are ignored.
    pub fn set_target_rate(&mut self, pages_per_sec: f64) {
        if pages_per_sec.is_finite() && pages_per_sec > 0.0 {
            self.target_rate = pages_per_sec;
        }
    }

    /// The target speed in force.
    pub fn target_rate(&self) -> f64 {
        self.target_rate
    }

    /// Lists the request folders again at the next chance (a hint from discovery).
    pub fn rescan_requests(&mut self) {
        self.requests.rescan();
    }

    /// Adds a blacklist entry (persisted). URLs of matching hosts already queued are
    /// dropped with the `blacklisted` outcome when their host next comes up.
    pub fn blacklist_add(&mut self, entry: BlacklistEntry) -> Result<bool, FrontierError> {
        let added = self.blacklist.insert(entry);
        self.save_blacklist()?;
        Ok(added)
    }

    /// Removes a blacklist entry (persisted).
    pub fn blacklist_remove(&mut self, entry: &BlacklistEntry) -> Result<bool, FrontierError> {
        let removed = self.blacklist.remove(entry);
        self.save_blacklist()?;
        Ok(removed)
    }

    /// The blacklist in force.
    pub fn blacklist(&self) -> &Blacklist {
        &self.blacklist
    }

    fn save_blacklist(&mut self) -> Result<(), FrontierError> {
        let entries: Vec<String> = self
            .blacklist
            .entries()
            .iter()
            .map(|e| e.to_string())
            .collect();
        let mut batch = Batch::default();
        batch.put(Cf::Meta, META_BLACKLIST.to_vec(), &entries);
        self.ledger.store()?.write(batch)
    }

    /// Writes a consistent, hard-linked snapshot of the frontier's database into `dir`
    /// (which must not exist yet); [`Frontier::open`] on `dir` restarts from it.
    ///
    /// The spool is not part of the snapshot: request files loaded after the
    /// checkpoint are already deleted, so restarting from an old checkpoint loses
    /// them. Take checkpoints often, restart from the live database when it is intact.
    pub fn checkpoint(&mut self, dir: &Path) -> Result<(), FrontierError> {
        self.ledger.store()?.checkpoint(dir)
    }

    /// Publishes every pending outcome now (before a clean shutdown; never required
    /// for safety, since pending outcomes are durable).
    pub fn flush_outcomes(&mut self, now_ms: u64) -> Result<usize, FrontierError> {
        self.outcomes.flush(self.ledger.store()?, now_ms, true)
    }

    /// The pause of outcome publishing on a full spool, if any (admin page).
    pub fn disk_pause(&self) -> Option<&spool::protocol::Pause> {
        self.outcomes.pause()
    }

    /// Publishes the outcomes pending for `app` now; whether a file was published.
    pub fn flush_outcomes_of(&mut self, app: &AppId) -> Result<bool, FrontierError> {
        self.outcomes.flush_app(self.ledger.store()?, app)
    }

    /// Counts a downloader's report in the crawl's totals; call it right before
    /// [`on_report`](Self::on_report) (or, for a stored robots.txt, before
    /// [`on_robots_fetched`](Self::on_robots_fetched)), whose batch stores them.
    pub fn count_report(&mut self, result: &FetchResult, purpose: FetchPurpose) {
        self.ledger.count_report(result, purpose);
    }

    /// The crawl's fetch figures since its state was created.
    pub fn totals(&self) -> &FetchTotals {
        self.ledger.totals()
    }

    /// Lists the request folders now, so that the next progress counts every file
    /// published before this call.
    pub fn list_requests_now(&mut self, now_ms: u64) -> Result<(), FrontierError> {
        self.requests.list_now(now_ms)
    }

    /// URLs in host queues that are not in flight: the work politeness, DNS or
    /// robots.txt holds back when no host is ready. O(apps).
    pub fn urls_waiting(&self) -> u64 {
        let queued: u64 = self.ledger.counters().apps.values().map(|c| c.queued).sum();
        queued.saturating_sub(self.jobs.out_len() as u64)
    }

    /// The frontier's figures now.
    pub fn stats(&self) -> FrontierStats {
        let hosts_by_state = HostState::ALL
            .iter()
            .map(|s| (*s, self.hosts.count(*s)))
            .collect();
        let mut outcomes_by_reason: Vec<(OutcomeReason, u64)> =
            OutcomeReason::ALL.iter().map(|r| (*r, 0)).collect();
        for (i, n) in self.ledger.counters().outcomes_by_reason.iter().enumerate() {
            if let Some(slot) = outcomes_by_reason.get_mut(i) {
                slot.1 = *n;
            }
        }
        // A sitemap line ends no URL: never counted, not shown.
        outcomes_by_reason.retain(|(r, _)| *r != OutcomeReason::Sitemap);
        let pending = self.requests.pending_by_app();
        let mut in_flight: BTreeMap<&AppId, u64> = BTreeMap::new();
        for (app, n) in self.jobs.out_by_app() {
            in_flight.insert(app, *n);
        }
        let mut apps: BTreeMap<AppId, AppProgress> = BTreeMap::new();
        let names = self
            .ledger
            .counters()
            .apps
            .keys()
            .chain(pending.keys())
            .cloned()
            .collect::<Vec<_>>();
        for app in names {
            let c = self
                .ledger
                .counters()
                .apps
                .get(&app)
                .copied()
                .unwrap_or_default();
            apps.insert(
                app.clone(),
                AppProgress {
                    request_files_pending: pending.get(&app).copied().unwrap_or(0),
                    queued_urls: c.queued,
                    in_flight: in_flight.get(&app).copied().unwrap_or(0),
                    pages_total: c.pages,
                    outcomes_total: c.outcomes,
                    outcomes_pending: self.outcomes.pending_of(&app) as u64,
                    ..AppProgress::new(app)
                },
            );
        }
        let total =
            |f: fn(&AppCounters) -> u64| self.ledger.counters().apps.values().map(f).sum::<u64>();
        FrontierStats {
            hosts_by_state,
            hosts: self.hosts.len(),
            urls_queued: total(|c| c.queued),
            request_files_pending: pending.values().sum(),
            request_files_loaded: total(|c| c.files_loaded),
            request_files_quarantined: self.requests.quarantined(),
            in_flight: self.jobs.out_len(),
            in_flight_per_host: self.hosts.by_out().into_iter().map(|n| n as u64).collect(),
            outcomes_by_reason,
            outcomes_pending: self.outcomes.pending_lines(),
            outcome_files_published: self.outcomes.published_files(),
            robots_fetched: self.ledger.counters().robots_fetched,
            hosts_dead: self.ledger.counters().hosts_dead,
            ready: self.hosts.count(HostState::Ready) + self.hosts.count(HostState::NeedsRobots),
            parked: self.hosts.count(HostState::Parked),
            waiting: self.hosts.count(HostState::Waiting) + self.hosts.count(HostState::BackedOff),
            pipeline: self.pipeline(),
            ready_target: self.ready_target(),
            target_rate: self.target_rate,
            dns_to_ask: self.dns.to_ask_len(),
            dns_cached: self.dns.cached(),
            ips_tracked: self.schedule.ips_tracked(),
            apps: apps.into_values().collect(),
        }
    }

    /// The progress of one application (zeros if the frontier never saw it).
    /// O(request files listed).
    pub fn app_progress(&self, app: &AppId) -> AppProgress {
        let c = self
            .ledger
            .counters()
            .apps
            .get(app)
            .copied()
            .unwrap_or_default();
        let in_flight = if c.queued == 0 {
            0
        } else {
            self.jobs.out_of_app(app)
        };
        AppProgress {
            request_files_pending: self.requests.pending_of(app),
            queued_urls: c.queued,
            in_flight,
            pages_total: c.pages,
            outcomes_total: c.outcomes,
            outcomes_pending: self.outcomes.pending_of(app) as u64,
            ..AppProgress::new(app.clone())
        }
    }

    /// Whether `app` has no URL queued (in flight included) and no request file
    /// waiting, as of the last listing. O(1) when it has URLs queued, else
    /// O(request files listed).
    pub fn app_drained(&self, app: &AppId) -> bool {
        let queued = self.ledger.counters().apps.get(app).map_or(0, |c| c.queued);
        queued == 0 && self.requests.pending_of(app) == 0
    }

    /// The facts about `job` if it is out at `holder` (`None`: not out, or held by
    /// another downloader). O(1).
    pub(crate) fn held_by(&self, holder: Holder, job: JobId) -> Option<Held> {
        self.jobs.held(job).filter(|h| h.holder == holder).cloned()
    }

    /// Jobs out at `holder`. O(1).
    pub(crate) fn jobs_held(&self, holder: Holder) -> usize {
        self.jobs.out_of_holder(holder)
    }

    /// Pages of `app` stored and not committed yet, over all downloaders. O(1).
    pub(crate) fn awaiting_commit_of(&self, app: &AppId) -> u64 {
        self.jobs.awaiting_of(app)
    }

    /// Hosts resting longer than their interval at `now_ms` (throttled or failing),
    /// those whose rest ends last first, at most `limit`. O(hosts in memory).
    pub fn backed_off_hosts(&self, now_ms: u64, limit: usize) -> Vec<BackedOffHost> {
        let mut out: Vec<BackedOffHost> = self
            .hosts
            .iter()
            .filter(|h| h.state() == HostState::BackedOff && h.timing.next_allowed_ms > now_ms)
            .filter_map(|h| {
                let reason = match (h.trouble.throttle, h.trouble.failures) {
                    (_, count) if count > 0 => BackOffReason::Failures { count },
                    (Some(t), _) => BackOffReason::Throttled {
                        status: t.status,
                        retry_after_ms: t.retry_after_ms,
                        in_row: t.in_row,
                    },
                    (None, _) => return None,
                };
                Some(BackedOffHost {
                    origin: h.origin.to_string(),
                    reason,
                    until_ms: h.timing.next_allowed_ms,
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.until_ms
                .cmp(&a.until_ms)
                .then_with(|| a.origin.cmp(&b.origin))
        });
        out.truncate(limit);
        out
    }
}
