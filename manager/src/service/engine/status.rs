//! The crawl's figures ([`Figures`]): the status line (one INFO line every
//! `status_interval_ms`: speed, its target and what limits it, queues, hosts, request
//! files, components, memory) and the admin status ([`Figures::snapshot`], what
//! `polycrawl status`,
//! `GET /api/stats` and the admin page show). The speed figures come from
//! [`SpeedHistory`](super::super::history).
//!
//! This module must never log per URL or per host: one line per interval. Cost:
//! one frontier stats snapshot and one read of `/proc/self/status` per line; one
//! frontier stats snapshot per admin status.

use spool::protocol::{HostCounts, MAX_BACKED_OFF, ReasonCount, Role, StatusSnapshot};
use tokio::time::Instant;

use super::super::dns::DnsBatches;
use super::super::history::SpeedHistory;
use super::super::metrics::Metrics;
use super::super::registry::Registry;
use super::super::speed::SpeedControl;
use super::super::stages::StageClock;
use crate::HostState;
use crate::frontier::Frontier;

/// The process's resident memory in bytes (Linux), if known.
pub(super) fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The engine's own figures: counters, the speed history, the dispatch stages, and
/// when the status line is due. See the [module docs](self).
#[derive(Debug)]
pub(super) struct Figures {
    /// Counters.
    pub metrics: Metrics,
    /// Pages/s now, over the last minute and hour.
    pub rate: SpeedHistory,
    /// When the engine started.
    pub started: Instant,
    /// Next status line.
    pub next_status: Instant,
    /// How long dispatch starved (see `stages.rs`).
    pub stages: StageClock,
}

impl Figures {
    /// The crawl's figures for `AdminReply::Status`, with the frontier's, the
    /// components', the speed control's and the resolve batches'.
    pub fn snapshot(
        &self,
        now: Instant,
        frontier: &Frontier,
        registry: &Registry,
        speed: &SpeedControl,
        dns: &DnsBatches,
    ) -> StatusSnapshot {
        let stats = frontier.stats();
        let totals = frontier.totals();
        let count = |states: &[HostState]| -> u64 {
            stats
                .hosts_by_state
                .iter()
                .filter(|(s, _)| states.contains(s))
                .map(|(_, n)| *n as u64)
                .sum()
        };
        let hosts = HostCounts {
            resolving: count(&[HostState::NeedsDns, HostState::Resolving]),
            robots: count(&[HostState::NeedsRobots, HostState::FetchingRobots]),
            ready: count(&[HostState::Ready]),
            parked: count(&[HostState::Parked]),
            fetching: count(&[HostState::InFlight]),
            waiting: count(&[HostState::Waiting]),
            backed_off: count(&[HostState::BackedOff]),
            dead: stats.hosts_dead,
        };
        let outcomes = stats
            .outcomes_by_reason
            .iter()
            .map(|(reason, count)| ReasonCount {
                reason: *reason,
                count: *count,
            })
            .collect();
        let millis = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        StatusSnapshot {
            pages_per_sec_now: self.rate.now_per_sec(now) as f32,
            pages_per_sec: self.rate.per_sec(now) as f32,
            pages_per_sec_hour: self.rate.hour_per_sec(now) as f32,
            speed_chart: self.rate.chart(now),
            target_pages_per_sec: frontier.target_rate() as f32,
            pages_total: stats.apps.iter().map(|a| a.pages_total).sum(),
            requests_total: totals.requests,
            bytes_total: totals.wire_bytes,
            robots_fetched: stats.robots_fetched,
            http_status: totals.status_counts(),
            fetch_errors: totals.error_counts(),
            outcomes,
            queued_urls: stats.urls_queued,
            in_flight: stats.in_flight as u64,
            in_flight_per_host: stats.in_flight_per_host.clone(),
            dns_pending: (stats.dns_to_ask + dns.backlog_len()) as u64,
            hosts,
            backed_off: frontier.backed_off_hosts(crate::wall_clock_ms(), MAX_BACKED_OFF),
            request_files_pending: stats.request_files_pending,
            request_files_loaded: stats.request_files_loaded,
            uptime_ms: millis(now.saturating_duration_since(self.started)),
            components: registry.statuses(now),
            speed: speed.status(),
            pause: frontier.disk_pause().cloned(),
        }
    }

    /// Logs the status line.
    pub fn log_status(
        &self,
        now: Instant,
        frontier: &Frontier,
        registry: &Registry,
        speed: &SpeedControl,
        dns: &DnsBatches,
    ) {
        let stats = frontier.stats();
        let rss_mib = rss_bytes().map_or(0, |b| b / (1 << 20));
        let pages_per_sec = (self.rate.per_sec(now) * 10.0).round() / 10.0;
        let status = speed.status();
        tracing::info!(
            pages_per_sec,
            target = stats.target_rate,
            target_source = ?speed.target().source,
            fetches_per_sec = (f64::from(status.fetches_per_sec) * 10.0).round() / 10.0,
            speed_limit = status.limit.describe(),
            pages_stored = self.metrics.pages_stored,
            queued = stats.urls_queued,
            in_flight = stats.in_flight,
            hosts_ready = stats.ready,
            hosts_waiting = stats.waiting,
            hosts_parked = stats.parked,
            request_files_pending = stats.request_files_pending,
            request_files_loaded = stats.request_files_loaded,
            dns_backlog = dns.backlog_len(),
            dns_batches = dns.outstanding(),
            downloaders = registry.count(Role::Downloader),
            resolvers = registry.count(Role::Resolver),
            rss_mib,
            "manager status"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_known() {
        assert!(rss_bytes().is_some_and(|b| b > 0));
    }
}
