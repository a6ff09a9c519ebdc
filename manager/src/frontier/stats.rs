//! [`FrontierStats`]: what the admin page and `polycrawl status` show about the
//! frontier. Counters that must survive a restart (URLs queued, outcomes, pages,
//! files loaded) are persisted with every change; the rest describes this process.
//!
//! [`Frontier::stats`] costs O(applications + request files listed);
//! it never touches RocksDB or the spool (request files pending are as of the last
//! folder listing).

use std::collections::BTreeMap;

use spool::protocol::AppProgress;
use spool::{AppId, OutcomeReason};

use super::Frontier;
use super::hosts::HostState;
use super::records::AppCounters;

/// A snapshot of the frontier's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierStats {
    /// Hosts in memory, per state (every state listed, zeros included).
    pub hosts_by_state: Vec<(HostState, usize)>,
    /// Hosts in memory.
    pub hosts: usize,
    /// URLs in host queues (in flight included).
    pub urls_queued: u64,
    /// Request files waiting or partly loaded.
    pub request_files_pending: u64,
    /// Request files completely loaded (since the database was created).
    pub request_files_loaded: u64,
    /// Request files quarantined by this process.
    pub request_files_quarantined: u64,
    /// Jobs handed out and not yet reported.
    pub in_flight: usize,
    /// Hosts by their number of requests in flight: element `i` counts the hosts
    /// with `i + 1` (at most `connections_per_host`), no trailing zeros.
    pub in_flight_per_host: Vec<u64>,
    /// Outcomes written, per reason (every reason listed).
    pub outcomes_by_reason: Vec<(OutcomeReason, u64)>,
    /// Outcomes written and not yet published in an outcome file.
    pub outcomes_pending: usize,
    /// Outcome files published by this process.
    pub outcome_files_published: u64,
    /// robots.txt verdicts obtained (since the database was created).
    pub robots_fetched: u64,
    /// Hosts declared dead (since the database was created).
    pub hosts_dead: u64,
    /// Hosts ready to be dispatched (pages or robots.txt), parked ones excluded.
    pub ready: usize,
    /// Hosts parked on a busy IP.
    pub parked: usize,
    /// Hosts resting (politeness interval or back-off).
    pub waiting: usize,
    /// Hosts ready or on their way to ready: compared with `ready_target`.
    pub pipeline: usize,
    /// `s = k r d`: request files are loaded while `pipeline` is below it.
    pub ready_target: usize,
    /// The speed target `r` in force (pages/s).
    pub target_rate: f64,
    /// Host names waiting to be handed to resolvers.
    pub dns_to_ask: usize,
    /// DNS answers cached.
    pub dns_cached: usize,
    /// IP addresses with a politeness slot.
    pub ips_tracked: usize,
    /// Per application, in the protocol's shape.
    pub apps: Vec<AppProgress>,
}

impl Frontier {
    /// URLs in host queues that are not in flight: the work politeness, DNS or
    /// robots.txt holds back when no host is ready. O(apps).
    pub fn urls_waiting(&self) -> u64 {
        let queued: u64 = self.counters.apps.values().map(|c| c.queued).sum();
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
        for (i, n) in self.counters.outcomes_by_reason.iter().enumerate() {
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
            .counters
            .apps
            .keys()
            .chain(pending.keys())
            .cloned()
            .collect::<Vec<_>>();
        for app in names {
            let c = self.counters.apps.get(&app).copied().unwrap_or_default();
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
        let total = |f: fn(&AppCounters) -> u64| self.counters.apps.values().map(f).sum::<u64>();
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
            robots_fetched: self.counters.robots_fetched,
            hosts_dead: self.counters.hosts_dead,
            ready: self.hosts.count(HostState::Ready) + self.hosts.count(HostState::NeedsRobots),
            parked: self.hosts.count(HostState::Parked),
            waiting: self.hosts.count(HostState::Waiting) + self.hosts.count(HostState::BackedOff),
            pipeline: self.pipeline(),
            ready_target: self.ready_target(),
            target_rate: self.target_rate,
            dns_to_ask: self.dns.to_ask_len(),
            dns_cached: self.dns.cached(),
            ips_tracked: self.ips.len(),
            apps: apps.into_values().collect(),
        }
    }

    /// The progress of one application (zeros if the frontier never saw it).
    /// O(request files listed).
    pub fn app_progress(&self, app: &AppId) -> AppProgress {
        let c = self.counters.apps.get(app).copied().unwrap_or_default();
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
        let queued = self.counters.apps.get(app).map_or(0, |c| c.queued);
        queued == 0 && self.requests.pending_of(app) == 0
    }
}
