//! The crawl's figures: the status line (one INFO line every `status_interval_ms`:
//! speed, its target and what limits it, queues, hosts, request files, components,
//! memory) and the admin status ([`Engine::snapshot`], what `polycrawl status`,
//! `GET /api/stats` and the admin page show). The speed figures come from
//! [`SpeedHistory`](super::super::history).
//!
//! This module must never log per URL or per host: one line per interval. Cost:
//! one frontier stats snapshot and one read of `/proc/self/status` per line; one
//! frontier stats snapshot per admin status.

use spool::protocol::{
    ComponentState, HostCounts, MAX_BACKED_OFF, ReasonCount, Role, StatusSnapshot,
};
use tokio::time::Instant;

use super::super::conn::ConnId;
use super::Engine;
use crate::HostState;

/// The process's resident memory in bytes (Linux), if known.
pub(super) fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Engine {
    /// The crawl's figures for `AdminReply::Status`.
    pub(super) fn snapshot(&self, now: Instant) -> StatusSnapshot {
        let stats = self.frontier.stats();
        let totals = self.frontier.totals();
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
            target_pages_per_sec: self.frontier.target_rate() as f32,
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
            dns_pending: (stats.dns_to_ask + self.dns.backlog_len()) as u64,
            hosts,
            backed_off: self
                .frontier
                .backed_off_hosts(crate::wall_clock_ms(), MAX_BACKED_OFF),
            request_files_pending: stats.request_files_pending,
            request_files_loaded: stats.request_files_loaded,
            uptime_ms: millis(now.saturating_duration_since(self.started)),
            components: self.registry.statuses(now, self.heartbeat_timeout),
            speed: self.speed.status(),
            pause: self.frontier.disk_pause().cloned(),
        }
    }

    /// A component said what state it is in (paused on a full disk, or not).
    /// Logged on a change only: an application sends its figures every 2 s.
    pub(super) fn on_state(&mut self, conn: ConnId, state: ComponentState) {
        let role = self.registry.role_of(conn);
        let before = self.registry.state_of(conn).and_then(|s| s.pause.as_ref());
        match (before, &state.pause) {
            (before, Some(p)) if before != Some(p) => tracing::warn!(
                ?role,
                %conn,
                path = %p.path,
                reason = ?p.reason,
                "component paused"
            ),
            (Some(_), None) => tracing::info!(?role, %conn, "component resumed"),
            _ => {}
        }
        self.registry.set_state(conn, state);
    }

    /// Logs the status line.
    pub(super) fn log_status(&self, now: Instant) {
        let stats = self.frontier.stats();
        let rss_mib = rss_bytes().map_or(0, |b| b / (1 << 20));
        let pages_per_sec = (self.rate.per_sec(now) * 10.0).round() / 10.0;
        let speed = self.speed.status();
        tracing::info!(
            pages_per_sec,
            target = stats.target_rate,
            target_source = ?self.speed.target().source,
            fetches_per_sec = (f64::from(speed.fetches_per_sec) * 10.0).round() / 10.0,
            speed_limit = speed.limit.describe(),
            pages_stored = self.metrics.pages_stored,
            queued = stats.urls_queued,
            in_flight = stats.in_flight,
            hosts_ready = stats.ready,
            hosts_waiting = stats.waiting,
            hosts_parked = stats.parked,
            request_files_pending = stats.request_files_pending,
            request_files_loaded = stats.request_files_loaded,
            dns_backlog = self.dns.backlog_len(),
            dns_batches = self.dns.outstanding(),
            downloaders = self.registry.count(Role::Downloader),
            resolvers = self.registry.count(Role::Resolver),
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
