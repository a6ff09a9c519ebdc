//! The status line (one INFO line every `status_interval_ms`: speed, its target and
//! what limits it, queues, hosts, request files, components, memory) and the speed figure it shares with the admin
//! status ([`Rate`]: pages per second over the last minute).
//!
//! This module must never log per URL or per host: one line per interval. Cost:
//! one frontier stats snapshot and one read of `/proc/self/status` per line.

use std::collections::VecDeque;
use std::time::Duration;

use spool::protocol::Role;
use tokio::time::Instant;

use super::engine::Engine;

/// The window of [`Rate`].
const WINDOW: Duration = Duration::from_secs(60);
/// Samples closer together than this are merged.
const MIN_SAMPLE_GAP: Duration = Duration::from_millis(250);

/// A counter's rate over the last minute, from samples of its value.
#[derive(Debug, Default)]
pub(crate) struct Rate {
    samples: VecDeque<(Instant, u64)>,
}

impl Rate {
    /// Records the counter's value at `now`.
    pub fn sample(&mut self, now: Instant, value: u64) {
        if let Some((last, v)) = self.samples.back_mut() {
            if now.saturating_duration_since(*last) < MIN_SAMPLE_GAP {
                *v = value;
                return;
            }
        }
        self.samples.push_back((now, value));
        while self
            .samples
            .front()
            .is_some_and(|(t, _)| now.saturating_duration_since(*t) > WINDOW)
        {
            self.samples.pop_front();
        }
    }

    /// Increase per second between the oldest sample of the window and the newest.
    pub fn per_sec(&self, now: Instant) -> f64 {
        let (Some((t0, v0)), Some((_, v1))) = (self.samples.front(), self.samples.back()) else {
            return 0.0;
        };
        let secs = now.saturating_duration_since(*t0).as_secs_f64();
        if secs < 0.5 {
            return 0.0;
        }
        v1.saturating_sub(*v0) as f64 / secs
    }
}

/// The process's resident memory in bytes (Linux), if known.
pub(crate) fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Engine {
    /// Logs the status line.
    pub(crate) fn log_status(&self, now: Instant) {
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
    fn rate_is_the_increase_over_the_window() {
        let t0 = Instant::now();
        let mut r = Rate::default();
        assert_eq!(r.per_sec(t0), 0.0);
        r.sample(t0, 0);
        r.sample(t0 + Duration::from_secs(10), 50);
        assert_eq!(r.per_sec(t0 + Duration::from_secs(10)), 5.0);
        // Old samples leave the window.
        r.sample(t0 + Duration::from_secs(100), 50);
        assert_eq!(r.per_sec(t0 + Duration::from_secs(100)), 0.0);
        assert!(rss_bytes().is_some_and(|b| b > 0));
    }
}
