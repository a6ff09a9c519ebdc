//! Timing figures of a crawl from websim's request log: the fetch rate over the
//! run and, for the politeness-bound regime, the gaps per origin and the start
//! spacing per IP address, counted against the configured intervals.
//!
//! Times are websim's (`start`: request head received; `write_from`: before the
//! response's first byte was handed to the kernel; `end`: after its last byte was).
//! Per origin the gap judged is `start(next) - write_from(prev)`, as the
//! crawling-system test's server side judges it (`tests/src/politeness.rs`): the
//! crawler cannot have had the previous response before websim began writing it,
//! nor sent the next request after websim read it, so a gap under the interval is
//! a violation whatever the crawler's clock says. `start(next) - end(prev)` proves
//! nothing: websim's `end` is late by however long its task was not scheduled
//! (13.3 ms once in 143,926 responses, issue 39 session 35, a false violation then).
//! Two starts to one IP can come closer at websim than the crawler spaced them by
//! one request's connect and TLS set-up ([`IP_JITTER_US`]).
//!
//! Cost: O(requests log requests) time (sorting), O(requests) memory.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;

use super::{HostRow, Request};

/// Allowance on the start spacing of two requests to one IP, microseconds.
pub const IP_JITTER_US: i64 = 30_000;
/// The window of the peak rate, microseconds.
pub const PEAK_WINDOW_US: u64 = 10_000_000;

/// How fast the crawl fetched.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    /// The first request's start, unix microseconds (0 without requests).
    pub first_start_us: u64,
    /// The last response's end, unix microseconds.
    pub last_end_us: u64,
    /// Requests per second between the starts of the 10 % and the 90 % request
    /// (the run without its ramp-up and its tail).
    pub mid80_per_s: f64,
    /// Most request starts in any [`PEAK_WINDOW_US`] window, per second.
    pub peak_per_s: f64,
}

/// Rates of `requests` (any order).
pub fn rates(requests: &[Request]) -> Rates {
    let mut starts: Vec<u64> = requests.iter().map(|r| r.start_us).collect();
    starts.sort_unstable();
    let (Some(&first), Some(last_end)) = (starts.first(), requests.iter().map(|r| r.end_us).max())
    else {
        return Rates::default();
    };
    let (a, b) = mid80(&starts);
    let mid80_per_s = if b > a && starts[b] > starts[a] {
        (b - a) as f64 * 1e6 / (starts[b] - starts[a]) as f64
    } else {
        0.0
    };
    let mut best = 0usize;
    let mut lo = 0usize;
    for (hi, &t) in starts.iter().enumerate() {
        while t - starts[lo] >= PEAK_WINDOW_US {
            lo += 1;
        }
        best = best.max(hi + 1 - lo);
    }
    Rates {
        first_start_us: first,
        last_end_us: last_end,
        mid80_per_s,
        peak_per_s: best as f64 * 1e6 / PEAK_WINDOW_US as f64,
    }
}

/// The fetch rate against what per-IP politeness allowed *while work was left*: an
/// address counts from its first request's start to its last one's, and allows one
/// start per `ip_interval_us` meanwhile. Over the middle 80 % of the run (the starts
/// of the 10 % and the 90 % request), the requests started divided by the starts
/// those addresses allowed. The static bound (every address busy all the time) is
/// out of reach near a crawl's end, when only the largest virtual-hosting groups
/// (many hosts, one address) have pages left; this share is not. `None` without an
/// interval or requests. O(requests log requests).
pub fn work_bound_share(requests: &[Request], ip_interval_us: u64) -> Option<f64> {
    if ip_interval_us == 0 || requests.is_empty() {
        return None;
    }
    let mut starts: Vec<u64> = requests.iter().map(|r| r.start_us).collect();
    starts.sort_unstable();
    let (a, b) = mid80(&starts);
    let (lo, hi) = (starts[a], starts[b]);
    if hi <= lo {
        return None;
    }
    let mut spans: BTreeMap<IpAddr, (u64, u64)> = BTreeMap::new();
    for r in requests {
        let e = spans.entry(r.server_ip).or_insert((r.start_us, r.start_us));
        e.0 = e.0.min(r.start_us);
        e.1 = e.1.max(r.start_us);
    }
    // An address with work left during [from, to] (its span cut to [lo, hi]) allows
    // one start at `from` and one per interval after it.
    let allowed: u64 = spans
        .values()
        .filter(|&&(a, b)| b >= lo && a <= hi)
        .map(|&(a, b)| (b.min(hi) - a.max(lo)) / ip_interval_us + 1)
        .sum();
    let started = starts.iter().filter(|&&t| t >= lo && t <= hi).count();
    (allowed > 0).then(|| started as f64 / allowed as f64)
}

/// The middle 80 % of a run: the indices of the 10 % and the 90 % request in
/// `starts` (sorted, not empty).
fn mid80(starts: &[u64]) -> (usize, usize) {
    (starts.len() / 10, starts.len() * 9 / 10)
}

/// Politeness figures of one kind of group (origins or IP addresses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupPace {
    /// Groups with at least one request.
    pub groups: usize,
    /// Consecutive pairs closer than the interval (minus [`IP_JITTER_US`] for IPs).
    pub violations: usize,
    /// Smallest gap (origins: `start - previous write_from`; IPs: `start -
    /// previous start`), microseconds; `None` without two requests in one group.
    pub min_us: Option<i64>,
    /// Most requests of one group in flight at once.
    pub max_in_flight: usize,
}

/// Per-origin figures: gaps `start(next) - write_from(previous)` against
/// `interval_us` (see the module docs).
pub fn by_origin(requests: &[Request], interval_us: u64) -> GroupPace {
    let groups = group(requests, |r| r.origin.clone());
    judge(
        &groups,
        |prev, next| next.start as i64 - prev.write_from as i64,
        interval_us as i64,
    )
}

/// Per-IP figures: start spacing `start(next) - start(previous)` against
/// `interval_us`.
pub fn by_ip(requests: &[Request], interval_us: u64) -> GroupPace {
    let groups = group(requests, |r| r.server_ip);
    judge(
        &groups,
        |prev, next| next.start as i64 - prev.start as i64,
        interval_us as i64 - IP_JITTER_US,
    )
}

/// One request's stamps, as the judges read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Span {
    start: u64,
    end: u64,
    write_from: u64,
}

/// Spans per group, sorted by start.
fn group<K: Ord>(requests: &[Request], key: impl Fn(&Request) -> K) -> BTreeMap<K, Vec<Span>> {
    let mut groups: BTreeMap<K, Vec<Span>> = BTreeMap::new();
    for r in requests {
        groups.entry(key(r)).or_default().push(Span {
            start: r.start_us,
            end: r.end_us,
            write_from: r.write_from_us,
        });
    }
    for spans in groups.values_mut() {
        spans.sort_unstable();
    }
    groups
}

fn judge<K>(
    groups: &BTreeMap<K, Vec<Span>>,
    gap: impl Fn(Span, Span) -> i64,
    least: i64,
) -> GroupPace {
    let mut p = GroupPace {
        groups: groups.len(),
        ..GroupPace::default()
    };
    for spans in groups.values() {
        for w in spans.windows(2) {
            let g = gap(w[0], w[1]);
            p.min_us = Some(p.min_us.map_or(g, |m| m.min(g)));
            if g < least {
                p.violations += 1;
            }
        }
        p.max_in_flight = p.max_in_flight.max(max_in_flight(spans));
    }
    p
}

/// Most spans overlapping at one time (`start` to `end`); touching spans count as
/// overlapping.
fn max_in_flight(spans: &[Span]) -> usize {
    let mut events: Vec<(u64, u8)> = Vec::with_capacity(spans.len() * 2);
    for &Span {
        start: s, end: e, ..
    } in spans
    {
        events.push((s, 0));
        events.push((e.max(s), 1));
    }
    events.sort_unstable();
    let (mut now, mut most) = (0usize, 0usize);
    for (_, kind) in events {
        if kind == 0 {
            now += 1;
            most = most.max(now);
        } else {
            now = now.saturating_sub(1);
        }
    }
    most
}

/// The most fetches per second politeness allows on this web: every live host
/// once per `interval_ms` and every live address once per `ip_interval_ms`,
/// whichever is fewer (dead hosts and the misbehaving host, never linked, left
/// out). `None` when neither interval is set.
pub fn bound_per_s(
    hosts: &[HostRow],
    interval_ms: Option<u64>,
    ip_interval_ms: Option<u64>,
) -> Option<f64> {
    let live: Vec<&HostRow> = hosts.iter().filter(|h| !h.dead && !h.misbehave).collect();
    let addrs: HashSet<IpAddr> = live.iter().map(|h| h.addr).collect();
    let per =
        |n: usize, ms: Option<u64>| ms.filter(|&m| m > 0).map(|m| n as f64 * 1000.0 / m as f64);
    match (
        per(live.len(), interval_ms),
        per(addrs.len(), ip_interval_ms),
    ) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_bound_share_counts_addresses_only_while_they_have_work() {
        // Address 1: 11 requests 1 s apart (busy at the interval all along);
        // address 2: 3 requests, 1 s apart, then nothing. Interval 1 s.
        let mut r = Vec::new();
        for i in 0..11 {
            r.push(req(
                "http://a.test",
                "127.0.0.1",
                i * 1_000_000,
                i * 1_000_000 + 10,
            ));
        }
        for i in 0..3 {
            r.push(req(
                "http://b.test",
                "127.0.0.2",
                i * 1_000_000,
                i * 1_000_000 + 10,
            ));
        }
        let share = work_bound_share(&r, 1_000_000).unwrap();
        assert!((0.95..=1.05).contains(&share), "{share}");
        // Half the rate on address 1 (2 s apart): about half the share.
        let slow: Vec<Request> = (0..11)
            .map(|i| {
                req(
                    "http://a.test",
                    "127.0.0.1",
                    i * 2_000_000,
                    i * 2_000_000 + 10,
                )
            })
            .collect();
        let share = work_bound_share(&slow, 1_000_000).unwrap();
        assert!((0.45..=0.55).contains(&share), "{share}");
        assert_eq!(work_bound_share(&slow, 0), None);
    }

    fn req(origin: &str, ip: &str, start: u64, end: u64) -> Request {
        late_end(origin, ip, start, end, end)
    }

    /// A request whose response websim began writing at `write_from` and stamped
    /// as written at `end`.
    fn late_end(origin: &str, ip: &str, start: u64, write_from: u64, end: u64) -> Request {
        Request {
            start_us: start,
            end_us: end,
            write_from_us: write_from,
            origin: origin.to_owned(),
            name: "a.test".to_owned(),
            server_ip: ip.parse().unwrap(),
            target: "/".to_owned(),
            status: 200,
        }
    }

    #[test]
    fn gaps_spacing_and_overlap() {
        let s = 1_000_000;
        let log = [
            req("http://a.test:1", "127.1.0.1", 0, 10),
            req("http://a.test:1", "127.1.0.1", 2 * s + 10, 2 * s + 20),
            // 1 s after the previous end: a violation of a 2 s interval.
            req("http://a.test:1", "127.1.0.1", 3 * s + 20, 3 * s + 30),
            req("http://b.test:1", "127.1.0.2", 5, 50),
            req("http://b.test:1", "127.1.0.2", 40, 60),
        ];
        let o = by_origin(&log, 2_000_000);
        assert_eq!((o.groups, o.violations, o.max_in_flight), (2, 2, 2));
        assert_eq!(o.min_us, Some(-10));
        let i = by_ip(&log, 2_000_000);
        assert_eq!((i.groups, i.violations), (2, 2));
        assert_eq!(i.min_us, Some(35));
        // websim stamped the first response's end 13 ms late (its task was not
        // scheduled): the gap runs from when it began writing, so no violation ...
        let ok = [
            late_end("http://a.test:1", "127.1.0.1", 0, 10, 13_010),
            req("http://a.test:1", "127.1.0.1", 2 * s + 10, 2 * s + 20),
        ];
        let o = by_origin(&ok, 2_000_000);
        assert_eq!((o.violations, o.min_us), (0, Some(2 * s as i64)));
        // ... and 1 us less is one.
        let early = [
            ok[0].clone(),
            req("http://a.test:1", "127.1.0.1", 2 * s + 9, 2 * s + 20),
        ];
        assert_eq!(by_origin(&early, 2_000_000).violations, 1);
    }

    #[test]
    fn rates_of_a_steady_run() {
        // 100 requests, one every 100 ms: 10 per second.
        let log: Vec<Request> = (0..100)
            .map(|i| req("http://a.test:1", "127.1.0.1", i * 100_000, i * 100_000 + 5))
            .collect();
        let r = rates(&log);
        assert!((r.mid80_per_s - 10.0).abs() < 1e-9, "{r:?}");
        assert!((r.peak_per_s - 10.0).abs() < 1e-9, "{r:?}");
        assert_eq!((r.first_start_us, r.last_end_us), (0, 9_900_005));
        assert_eq!(rates(&[]), Rates::default());
    }

    #[test]
    fn bound_counts_live_hosts_and_addresses() {
        let h = |addr: &str, dead: bool| HostRow {
            addr: addr.parse().unwrap(),
            robots: None,
            dead,
            misbehave: false,
        };
        let hosts = [
            h("127.1.0.1", false),
            h("127.1.0.1", false),
            h("127.1.0.2", false),
            h("127.1.0.3", true),
        ];
        assert_eq!(bound_per_s(&hosts, Some(2000), None), Some(1.5));
        assert_eq!(bound_per_s(&hosts, Some(2000), Some(2000)), Some(1.0));
        assert_eq!(bound_per_s(&hosts, None, None), None);
    }
}
