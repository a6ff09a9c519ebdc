//! Politeness arithmetic: how long a host must rest after a request, and how long it
//! is left alone after a failure. Pure functions of the config and the host's facts;
//! the frontier applies them.
//!
//! The interval `d` of a host, measured from the end of one request to the start of
//! the next (DESIGN.md section 4):
//! 1. the per-host override from a request hint (`interval_ms=`) if the application
//!    gave one, else
//! 2. `max(min_interval_ms, adaptive_factor x last fetch time)` if adaptive politeness
//!    is on and the host has been fetched, else
//! 3. `interval_ms` (default 30 s);
//!
//! then raised to robots.txt's `Crawl-delay`, capped at `max_crawl_delay_ms` (a
//! crawl delay only ever slows us down). Per-IP limits are in
//! [`frontier`](crate::frontier)'s IP table, on top of this.
//!
//! The exact rule with `connections_per_host` = N: a request to a host may start
//! only when fewer than N of its requests are in flight, and
//! - N = 1 (the default, Polybot's rule): at least `d` after the *end* of its
//!   previous request (so never two at once, and at least `d` between starts);
//! - N > 1: at least `d` after the *start* of its previous request (ends do not
//!   move the clock), so consecutive starts are always at least `d` apart and at
//!   most N overlap.
//!
//! In both cases a back-off after a failure, the rest after a lost job
//! (`lost_job_rest_ms`), a robots.txt fetch (its end) and a manager restart push the
//! next start further out, and every start must also pass the per-IP limits
//! (`ip_max_in_flight` requests in flight per address, `ip_min_interval_ms` between
//! starts to one address), which bound N in effect when they are tighter.
//!
//! Back-off after the n-th consecutive failure is `backoff_ms[n - 1]`, the last step
//! repeating; a host is given up ([`give_up`]) after `max_failures` failures, or
//! sooner when its next try would start more than `host_retry_window_ms` after
//! its first failing try started. After a 429 or 503 answer it is the server's `Retry-After`, or without
//! one [`throttle_backoff_ms`], both capped at `throttle_max_ms`. This module must never read a clock or do I/O: times are arguments.

use std::time::Duration;

use super::config::FrontierConfig;

/// The facts about one host that its interval depends on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostPace {
    /// Interval requested by the application for this host (already clamped).
    pub override_ms: Option<u64>,
    /// robots.txt `Crawl-delay`, if any.
    pub crawl_delay: Option<Duration>,
    /// Duration of the host's last fetch, if known.
    pub last_fetch_ms: Option<u64>,
}

/// The wall ms at which a rest of `interval_ms` that began at `now_ms` is over.
/// Times here are whole milliseconds, truncated, so a rest counted from a
/// truncated `now_ms` could end up to 1 ms early in real time; one more
/// millisecond makes every non-zero rest at least its interval.
pub fn rest_until(now_ms: u64, interval_ms: u64) -> u64 {
    if interval_ms == 0 {
        return now_ms;
    }
    now_ms.saturating_add(interval_ms).saturating_add(1)
}

/// The interval after a request to a host with `pace`, in milliseconds.
pub fn interval_ms(config: &FrontierConfig, pace: &HostPace) -> u64 {
    let base = match (pace.override_ms, pace.last_fetch_ms) {
        (Some(o), _) => o,
        (None, Some(t)) if config.adaptive => {
            let adaptive = (t as f64 * config.adaptive_factor).min(u64::MAX as f64) as u64;
            adaptive.max(config.min_interval_ms)
        }
        _ => config.interval_ms,
    };
    let delay = pace
        .crawl_delay
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
        .min(config.max_crawl_delay_ms);
    base.max(delay)
}

/// A per-host interval hint clamped to the configured floor.
pub fn clamp_hint(config: &FrontierConfig, hint_ms: u64) -> u64 {
    hint_ms.max(config.min_interval_ms)
}

/// How long a host is left alone after its `failures`-th consecutive failure (>= 1).
pub fn backoff_ms(config: &FrontierConfig, failures: u32) -> u64 {
    let steps = &config.backoff_ms;
    let i = (failures.max(1) as usize - 1).min(steps.len().saturating_sub(1));
    steps.get(i).copied().unwrap_or(0)
}

/// How long a host is left alone after its `n`-th 429 or 503 answer in a row
/// (n >= 1) that carried no usable `Retry-After`: `max(interval, throttle_min_ms)`
/// times `2^(n-1)`, times a jitter factor in `[1, 1.25)` drawn from `jitter` (any
/// 64-bit value; the frontier hashes the host and the time), capped at
/// `throttle_max_ms`. Since each step doubles and the jitter adds at most a quarter,
/// the waits grow strictly until the cap.
pub fn throttle_backoff_ms(config: &FrontierConfig, interval_ms: u64, n: u32, jitter: u64) -> u64 {
    let base = interval_ms.max(config.throttle_min_ms).max(1);
    let doubled = base.saturating_mul(1u64 << n.clamp(1, 40).saturating_sub(1));
    // jitter / 2^64 in [0, 1), a quarter of it on top.
    let extra = ((u128::from(doubled) * u128::from(jitter)) >> 66) as u64;
    doubled.saturating_add(extra).min(config.throttle_max_ms)
}

/// The wait a `Retry-After` asks for, capped at `throttle_max_ms`.
pub fn retry_after_ms(config: &FrontierConfig, asked_ms: u64) -> u64 {
    asked_ms.min(config.throttle_max_ms)
}

/// Whether `failures` consecutive failures make a host dead.
pub fn is_dead(config: &FrontierConfig, failures: u32) -> bool {
    failures >= config.max_failures
}

/// Which bound ends a failing host (see [`give_up`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// It failed `max_failures` (this many) times in a row.
    Failures(u32),
    /// Its next try would start more than `host_retry_window_ms` (this many ms)
    /// after its first failing try started.
    Window(u64),
}

/// Whether a host that has failed `failures` times in a row, the first failing
/// try starting at `since_ms`, is given up rather than tried again at
/// `next_try_ms`, and by which bound (the count first). `None`: try again.
pub fn give_up(
    config: &FrontierConfig,
    failures: u32,
    since_ms: u64,
    next_try_ms: u64,
) -> Option<GiveUp> {
    if is_dead(config, failures) {
        return Some(GiveUp::Failures(config.max_failures));
    }
    let window_end = since_ms.saturating_add(config.host_retry_window_ms);
    (next_try_ms > window_end).then_some(GiveUp::Window(config.host_retry_window_ms))
}

/// The ready-queue size `s = k x r x d` below which request files are loaded (at
/// least 1), for a target of `pages_per_sec`.
pub fn ready_target(config: &FrontierConfig, pages_per_sec: f64) -> usize {
    let d_secs = config.interval_ms.max(1) as f64 / 1000.0;
    let s = config.ready_factor * pages_per_sec * d_secs;
    (s.ceil().min(usize::MAX as f64) as usize).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host whose every try fails, each try taking `try_ms` (0: refused, or a
    /// robots.txt 5xx; 30 s: silence until the first-byte time-out) from the
    /// first try at 0: the tries' start times and when it is given up.
    fn failing_host(c: &FrontierConfig, try_ms: u64) -> (Vec<u64>, u64, GiveUp) {
        let mut starts = vec![0];
        let mut failures = 0;
        loop {
            let start = *starts.last().unwrap();
            let failed_at = start + try_ms;
            failures += 1;
            let next = failed_at + backoff_ms(c, failures);
            if let Some(bound) = give_up(c, failures, 0, next) {
                return (starts, failed_at, bound);
            }
            starts.push(next);
        }
    }

    /// Issue 37: with the defaults a host that refuses connections or answers
    /// robots.txt with a 5xx is tried twice and given up after 1 min; one that
    /// accepts and says nothing is tried twice and given up after 2 min; both
    /// within the promised bound. With Heritrix-like settings it is tried 30 times.
    #[test]
    fn failing_hosts_are_given_up_within_the_window() {
        let c = FrontierConfig::default();
        let window = GiveUp::Window(120_000);
        assert_eq!(failing_host(&c, 0), (vec![0, 60_000], 60_000, window));
        let silent = u64::from(c.first_byte_timeout_ms);
        assert_eq!(failing_host(&c, silent), (vec![0, 90_000], 120_000, window));
        let patient = FrontierConfig {
            host_retry_window_ms: 27_000_000,
            max_failures: 30,
            backoff_ms: vec![900_000],
            ..FrontierConfig::default()
        };
        let (starts, _, bound) = failing_host(&patient, 0);
        assert_eq!((starts.len(), bound), (30, GiveUp::Failures(30)));
        let few = FrontierConfig {
            max_failures: 2,
            backoff_ms: vec![1_000],
            ..FrontierConfig::default()
        };
        assert_eq!(
            failing_host(&few, 0),
            (vec![0, 1_000], 1_000, GiveUp::Failures(2))
        );
        let never = FrontierConfig {
            host_retry_window_ms: 0,
            ..FrontierConfig::default()
        };
        assert_eq!(failing_host(&never, 0), (vec![0], 0, GiveUp::Window(0)));
    }

    #[test]
    fn override_beats_adaptive_and_crawl_delay_only_lengthens() {
        let mut c = FrontierConfig {
            interval_ms: 30_000,
            min_interval_ms: 1_000,
            max_crawl_delay_ms: 60_000,
            ..FrontierConfig::default()
        };
        assert_eq!(interval_ms(&c, &HostPace::default()), 30_000);
        let hinted = HostPace {
            override_ms: Some(clamp_hint(&c, 10)),
            ..HostPace::default()
        };
        assert_eq!(interval_ms(&c, &hinted), 1_000);
        let delayed = HostPace {
            crawl_delay: Some(Duration::from_secs(45)),
            ..HostPace::default()
        };
        assert_eq!(interval_ms(&c, &delayed), 45_000);
        let huge = HostPace {
            crawl_delay: Some(Duration::from_secs(3600)),
            ..HostPace::default()
        };
        assert_eq!(interval_ms(&c, &huge), 60_000);

        c.adaptive = true;
        c.adaptive_factor = 10.0;
        let fetched = HostPace {
            last_fetch_ms: Some(50),
            ..HostPace::default()
        };
        assert_eq!(interval_ms(&c, &fetched), 1_000, "floor");
        let slow = HostPace {
            last_fetch_ms: Some(700),
            ..HostPace::default()
        };
        assert_eq!(interval_ms(&c, &slow), 7_000);
        let slow_hinted = HostPace {
            override_ms: Some(2_000),
            last_fetch_ms: Some(700),
            ..HostPace::default()
        };
        assert_eq!(interval_ms(&c, &slow_hinted), 2_000);
    }

    #[test]
    fn throttle_backoff_doubles_with_bounded_jitter_and_stops_at_the_cap() {
        let c = FrontierConfig {
            throttle_min_ms: 1_000,
            throttle_max_ms: 60_000,
            ..FrontierConfig::default()
        };
        // From the floor when the interval is shorter, from the interval otherwise.
        assert_eq!(throttle_backoff_ms(&c, 0, 1, 0), 1_000);
        assert_eq!(throttle_backoff_ms(&c, 4_000, 1, 0), 4_000);
        assert_eq!(throttle_backoff_ms(&c, 0, 3, 0), 4_000);
        // The jitter adds less than a quarter.
        assert_eq!(throttle_backoff_ms(&c, 0, 1, u64::MAX), 1_249);
        assert_eq!(throttle_backoff_ms(&c, 0, 1, 1 << 63), 1_125);
        // Strictly growing whatever the jitter, until the cap.
        let worst: Vec<u64> = (1..=6)
            .map(|n| throttle_backoff_ms(&c, 0, n, u64::MAX))
            .collect();
        let best: Vec<u64> = (1..=6).map(|n| throttle_backoff_ms(&c, 0, n, 0)).collect();
        for n in 1..6 {
            assert!(best[n] > worst[n - 1], "{best:?} {worst:?}");
        }
        assert_eq!(throttle_backoff_ms(&c, 0, 7, 0), 60_000);
        assert_eq!(throttle_backoff_ms(&c, 0, u32::MAX, u64::MAX), 60_000);
        assert_eq!(retry_after_ms(&c, 5_000), 5_000);
        assert_eq!(retry_after_ms(&c, u64::MAX), 60_000);
    }

    #[test]
    fn backoff_grows_then_repeats_and_s_follows_the_rate() {
        let c = FrontierConfig {
            backoff_ms: vec![60_000, 300_000, 1_800_000],
            max_failures: 4,
            ..FrontierConfig::default()
        };
        let steps: Vec<u64> = (1..=5).map(|n| backoff_ms(&c, n)).collect();
        assert_eq!(steps, [60_000, 300_000, 1_800_000, 1_800_000, 1_800_000]);
        assert!(!is_dead(&c, 3));
        assert!(is_dead(&c, 4));
        let c = FrontierConfig::default();
        assert_eq!(ready_target(&c, 100.0), 6_000);
        assert_eq!(ready_target(&c, 0.001), 1);
    }
}
