//! Checks over websim's request log ([`crate::websim::LogLine`]): which URLs were
//! fetched how often, and the timing figures politeness is judged by.
//!
//! Times are websim's: `start` read after the request head was parsed, `end` after
//! the response's last byte was handed to the kernel, in unix microseconds. Both
//! can be late by however long websim's task was not scheduled, so gaps and
//! spacings measured here alone are no proof of politeness either way: the
//! politeness of a crawl is judged by [`crate::politeness`], on the downloaders'
//! own stamps, with websim's as a cross-check.
//!
//! Grouping keys: an *origin* is `scheme://Host-header` (what the manager schedules
//! as one host), a *name* is the Host header without its port, lower-case, and a
//! *server* is the listener's IP address.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use crate::websim::LogLine;

/// robots.txt paths (websim's list, beside its log reader).
pub use websim::log::ROBOTS_PATHS;

/// A `host[:port]` without its port, lower-case.
pub fn host_name(authority: &str) -> String {
    authority
        .rsplit_once(':')
        .map_or(authority, |(n, _)| n)
        .to_ascii_lowercase()
}

/// The host name of a URL, lower-case, without port.
pub fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    host_name(rest.split(['/', '?', '#']).next().unwrap_or(""))
}

/// How often each URL was requested (robots.txt fetches included).
pub fn url_counts(log: &[LogLine]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for l in log {
        *counts.entry(l.url()).or_insert(0) += 1;
    }
    counts
}

/// robots.txt requests ([`ROBOTS_PATHS`]) per host name.
pub fn robots_per_name(log: &[LogLine]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for l in log.iter().filter(|l| l.is_robots()) {
        *counts.entry(l.name()).or_insert(0) += 1;
    }
    counts
}

/// Timing figures of one group of requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pace {
    /// Requests in the group.
    pub requests: usize,
    /// Most requests in flight at once (intervals `[start, end]`).
    pub max_in_flight: usize,
    /// Smallest `start(next) - end(previous)` over consecutive requests, in µs
    /// (negative when they overlap); `None` for a single request.
    pub min_gap_us: Option<i64>,
    /// Smallest `start(next) - start(previous)`, in µs.
    pub min_start_spacing_us: Option<i64>,
    /// Smallest `start(i + SPAN) - start(i)`, in µs: the rate over [`SPAN`]
    /// consecutive starts, which the jitter of one request cannot shorten by more
    /// than that one request's delay; `None` for fewer than `SPAN + 1` requests.
    pub min_span_us: Option<i64>,
}

/// Starts per window of [`Pace::min_span_us`].
pub const SPAN: usize = 10;

/// The figures of every group of `log` under `key`.
pub fn pace_by<K: Ord>(log: &[LogLine], key: impl Fn(&LogLine) -> K) -> BTreeMap<K, Pace> {
    let mut groups: BTreeMap<K, Vec<(u64, u64)>> = BTreeMap::new();
    for l in log {
        groups
            .entry(key(l))
            .or_default()
            .push((l.start_us, l.end_us));
    }
    groups
        .into_iter()
        .map(|(k, mut spans)| {
            spans.sort_unstable();
            (k, pace(&spans))
        })
        .collect()
}

/// Figures of one group's `(start, end)` spans, sorted by start.
fn pace(spans: &[(u64, u64)]) -> Pace {
    let mut p = Pace {
        requests: spans.len(),
        ..Pace::default()
    };
    for w in spans.windows(2) {
        let gap = w[1].0 as i64 - w[0].1 as i64;
        let spacing = w[1].0 as i64 - w[0].0 as i64;
        p.min_gap_us = Some(p.min_gap_us.map_or(gap, |g| g.min(gap)));
        p.min_start_spacing_us = Some(p.min_start_spacing_us.map_or(spacing, |s| s.min(spacing)));
    }
    for w in spans.windows(SPAN + 1) {
        let span = w[SPAN].0 as i64 - w[0].0 as i64;
        p.min_span_us = Some(p.min_span_us.map_or(span, |s| s.min(span)));
    }
    // Sweep: +1 at a start, -1 after an end; a start at the very time of an end
    // counts as overlapping (ends sort after starts at equal times).
    let mut events: Vec<(u64, i32)> = Vec::with_capacity(spans.len() * 2);
    for &(s, e) in spans {
        events.push((s, 1));
        events.push((e.max(s), 2));
    }
    events.sort_unstable();
    let mut now = 0usize;
    for (_, kind) in events {
        if kind == 1 {
            now += 1;
            p.max_in_flight = p.max_in_flight.max(now);
        } else {
            now -= 1;
        }
    }
    p
}

/// The two consecutive requests of `key`'s group `group` with the smallest
/// `start(next) - end(previous)`, for a failure message.
pub fn closest_pair<'a, K: PartialEq>(
    log: &'a [LogLine],
    key: impl Fn(&LogLine) -> K,
    group: &K,
) -> Option<(&'a LogLine, &'a LogLine)> {
    let mut lines: Vec<&LogLine> = log.iter().filter(|l| key(l) == *group).collect();
    lines.sort_by_key(|l| (l.start_us, l.end_us));
    lines
        .windows(2)
        .min_by_key(|w| w[1].start_us as i64 - w[0].end_us as i64)
        .map(|w| (w[0], w[1]))
}

/// Figures per origin.
pub fn pace_by_origin(log: &[LogLine]) -> BTreeMap<String, Pace> {
    pace_by(log, LogLine::origin)
}

/// Figures per server address.
pub fn pace_by_server_ip(log: &[LogLine]) -> BTreeMap<IpAddr, Pace> {
    pace_by(log, |l| l.server.ip())
}

/// The first `n` entries of `items` whose figure breaks a rule, for a message.
pub fn worst<K: std::fmt::Debug>(
    items: impl IntoIterator<Item = (K, Pace)>,
    n: usize,
) -> Vec<String> {
    items
        .into_iter()
        .take(n)
        .map(|(k, p)| format!("{k:?}: {p:?}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pace_counts_overlap_gaps_and_spacing() {
        let p = pace(&[(0, 10), (5, 20), (30, 40), (100, 100)]);
        assert_eq!(p.requests, 4);
        assert_eq!(p.max_in_flight, 2);
        assert_eq!(p.min_gap_us, Some(-5));
        assert_eq!(p.min_start_spacing_us, Some(5));
        assert_eq!(p.min_span_us, None);
        let even: Vec<(u64, u64)> = (0..12).map(|i| (i * 100, i * 100 + 10)).collect();
        assert_eq!(pace(&even).min_span_us, Some(1_000));
        let single = pace(&[(3, 4)]);
        assert_eq!((single.max_in_flight, single.min_gap_us), (1, None));
        // Touching intervals count as overlapping.
        assert_eq!(pace(&[(0, 10), (10, 20)]).max_in_flight, 2);
    }

    #[test]
    fn names_and_hosts() {
        assert_eq!(host_name("WWW.A.test:8080"), "www.a.test");
        assert_eq!(url_host("https://b.example:443/x?y"), "b.example");
    }
}
