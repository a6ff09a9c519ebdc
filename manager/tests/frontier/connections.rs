//! `connections_per_host` above 1: several requests of one host in flight, never
//! more than N, the interval between starts, the per-IP limits on top, and the
//! URLs in flight put back with nothing lost and nothing doubled (loss, return,
//! crash).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use manager::{Frontier, FrontierConfig};
use spool::OutcomeReason;
use spool::protocol::{FetchJob, FetchPurpose};

use crate::support::*;

fn config(n: u32, interval_ms: u64) -> FrontierConfig {
    FrontierConfig {
        connections_per_host: n,
        interval_ms,
        ..test_config()
    }
}

/// The most dispatches of `pages` overlapping at once, by `key` (host or IP).
fn max_overlap(pages: &[&Dispatch], key: impl Fn(&FetchJob) -> String) -> BTreeMap<String, usize> {
    let mut events: BTreeMap<String, Vec<(u64, i32)>> = BTreeMap::new();
    for d in pages {
        let e = events.entry(key(&d.job)).or_default();
        e.push((d.at, 1));
        e.push((d.ends, -1));
    }
    events
        .into_iter()
        .map(|(k, mut e)| {
            // An end at the same ms as a start comes first: the report is handled
            // before the next dispatch.
            e.sort();
            let (mut now, mut max) = (0i32, 0i32);
            for (_, step) in e {
                now += step;
                max = max.max(now);
            }
            (k, max as usize)
        })
        .collect()
}

fn host_of(job: &FetchJob) -> String {
    job.url.split('/').nth(2).unwrap_or_default().to_owned()
}

/// Starts of each host's pages, in order.
fn starts_by_host(pages: &[&Dispatch]) -> BTreeMap<String, Vec<u64>> {
    let mut starts: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for d in pages {
        starts.entry(host_of(&d.job)).or_default().push(d.at);
    }
    starts
}

#[test]
fn up_to_n_requests_of_a_host_overlap_never_more() {
    let w = World::new();
    let mut f = w.open(&config(4, 0));
    w.publish("bfs", 10, &urls("a.test", 0..40));
    w.publish("bfs", 10, &urls("b.test", 0..40));
    let mut rng = Rng(3);
    let mut dur = move |_: &FetchJob| 200 + rng.below(800);
    let mut sim = Sim::new(64, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    let pages = sim.pages();
    assert_eq!(pages.len(), 80, "every URL once");
    let distinct: BTreeSet<&str> = pages.iter().map(|d| d.job.url.as_str()).collect();
    assert_eq!(distinct.len(), 80, "no URL twice");
    let overlap = max_overlap(&pages, host_of);
    assert_eq!(
        overlap["a.test"], 4,
        "four at once, never more: {overlap:?}"
    );
    assert_eq!(
        overlap["b.test"], 4,
        "four at once, never more: {overlap:?}"
    );
    // FIFO per host still holds for the starts.
    for host in ["a.test", "b.test"] {
        let got: Vec<&str> = pages
            .iter()
            .filter(|d| host_of(&d.job) == host)
            .map(|d| d.job.url.as_str())
            .collect();
        let want = urls(host, 0..40);
        assert_eq!(got, want.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let stats = f.stats();
    assert_eq!((stats.urls_queued, stats.in_flight, stats.hosts), (0, 0, 0));
    assert_eq!(stats.apps[0].pages_total, 80);
}

#[test]
fn the_interval_holds_between_starts() {
    let w = World::new();
    let d = 1_000;
    let mut f = w.open(&config(4, d));
    w.publish("bfs", 10, &urls("a.test", 0..30));
    // Each fetch takes 5 intervals: without the limit 5 would overlap.
    let mut dur = |_: &FetchJob| 5_000;
    let mut sim = Sim::new(64, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    let pages = sim.pages();
    assert_eq!(pages.len(), 30);
    for (host, starts) in starts_by_host(&pages) {
        for pair in starts.windows(2) {
            assert!(
                pair[1] - pair[0] >= d,
                "{host}: starts {pair:?} closer than {d} ms"
            );
        }
    }
    assert_eq!(max_overlap(&pages, host_of)["a.test"], 4);
}

#[test]
fn one_connection_per_host_keeps_the_interval_from_the_end() {
    let w = World::new();
    let d = 1_000;
    let mut f = w.open(&config(1, d));
    w.publish("bfs", 10, &urls("a.test", 0..10));
    let mut dur = |_: &FetchJob| 300;
    let mut sim = Sim::new(64, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    let pages = sim.pages();
    assert_eq!(pages.len(), 10);
    for pair in pages.windows(2) {
        assert!(
            pair[1].at >= pair[0].ends + d,
            "{} then {}",
            pair[0].at,
            pair[1].at
        );
    }
}

#[test]
fn per_ip_limits_still_bind_hosts_that_share_an_ip() {
    let w = World::new();
    let shared = IpAddr::from([10, 9, 9, 9]);
    let same_ip = move |_: &str| shared;
    for host in ["a.test", "b.test", "c.test"] {
        w.publish("bfs", 10, &urls(host, 0..20));
    }
    // In-flight limit per IP below 3 hosts x 4 connections.
    let limited = FrontierConfig {
        ip_max_in_flight: 3,
        ..config(4, 0)
    };
    let mut f = w.open(&limited);
    let mut dur = |_: &FetchJob| 700;
    let mut sim = Sim::new(64, &same_ip, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    let pages = sim.pages();
    assert_eq!(pages.len(), 60);
    let per_ip = max_overlap(&pages, |j| j.addr.ip().to_string());
    assert_eq!(per_ip[&shared.to_string()], 3, "{per_ip:?}");

    // A start interval per IP: starts to the IP at least that far apart.
    let w = World::new();
    for host in ["a.test", "b.test"] {
        w.publish("bfs", 10, &urls(host, 0..10));
    }
    let spacing = 250;
    let spaced = FrontierConfig {
        ip_min_interval_ms: spacing,
        ..config(4, 0)
    };
    let mut f = w.open(&spaced);
    let mut dur = |_: &FetchJob| 2_000;
    let mut sim = Sim::new(64, &same_ip, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    let starts: Vec<u64> = sim.log.iter().map(|d| d.at).collect();
    assert_eq!(sim.pages().len(), 20);
    for pair in starts.windows(2) {
        assert!(pair[1] - pair[0] >= spacing, "IP starts {pair:?}");
    }
    assert!(
        max_overlap(&sim.pages(), host_of)["a.test"] >= 2,
        "hosts still overlap"
    );
}

/// Dispatches until `n` pages of the frontier are out (robots.txt answered 404).
fn dispatch_pages(f: &mut Frontier, now: u64, n: usize) -> Vec<FetchJob> {
    let mut pages = Vec::new();
    for _ in 0..10 {
        answer_dns(f, now, &ip_by_name);
        for job in f.next_jobs(now, 64).unwrap() {
            match job.purpose {
                FetchPurpose::Robots => {
                    assert!(f.on_robots_fetched(job.job, 404, None, None, now).unwrap());
                }
                FetchPurpose::Page => pages.push(job),
            }
        }
        if pages.len() >= n {
            break;
        }
    }
    pages
}

/// Runs the frontier to the end from `now`, reporting every page stored.
fn finish(f: &mut Frontier, now: u64) -> Vec<String> {
    let mut dur = |_: &FetchJob| 100;
    let mut sim = Sim::new(64, &ip_by_name, &no_robots, &mut dur);
    sim.now = now;
    sim.run(f, |_| false);
    sim.pages().iter().map(|d| d.job.url.clone()).collect()
}

#[test]
fn lost_and_returned_jobs_go_back_with_nothing_lost_or_doubled() {
    let w = World::new();
    let all = urls("a.test", 0..12);
    w.publish("bfs", 10, &all);
    let mut f = w.open(&FrontierConfig {
        lost_job_rest_ms: 0,
        ..config(4, 0)
    });
    let out = dispatch_pages(&mut f, T0, 4);
    assert_eq!(out.len(), 4, "four out at once");
    assert!(dispatch_pages(&mut f, T0, 1).is_empty(), "never a fifth");
    assert_eq!(f.stats().in_flight_per_host, vec![0, 0, 0, 1]);
    // The first is returned while the last one (at the key before the head) is
    // still out; the second is stored; the last two are lost.
    assert!(f.on_returned(out[0].job, T0 + 1).unwrap());
    let stats = f.stats();
    assert_eq!(stats.ready, 1, "ready for a fourth");
    assert_eq!(
        stats.pipeline, 0,
        "but busy: loading is not held back by it"
    );
    assert!(f.on_report(&stored(&out[1], 200, 5), T0 + 2).unwrap());
    assert!(f.on_lost(out[2].job, T0 + 3).unwrap());
    assert!(f.on_lost(out[3].job, T0 + 4).unwrap());
    assert!(!f.on_lost(out[3].job, T0 + 4).unwrap(), "an unknown job");
    assert_eq!(f.stats().in_flight, 0);
    assert_eq!(f.stats().urls_queued, 11);

    let mut fetched = vec![out[1].url.clone()];
    let again = finish(&mut f, T0 + 5);
    // The three that did not end go out again first.
    let first: BTreeSet<&str> = again[..3].iter().map(String::as_str).collect();
    let want: BTreeSet<&str> = [&out[0], &out[2], &out[3]]
        .iter()
        .map(|j| j.url.as_str())
        .collect();
    assert_eq!(first, want);
    fetched.extend(again);
    let mut sorted = fetched.clone();
    sorted.sort();
    let mut expected = all;
    expected.sort();
    assert_eq!(sorted, expected, "every URL stored exactly once");
    let stats = f.stats();
    assert_eq!((stats.urls_queued, stats.apps[0].pages_total), (0, 12));
}

#[test]
fn a_crash_puts_back_exactly_the_urls_in_flight() {
    let w = World::new();
    let all = urls("a.test", 0..10);
    w.publish("bfs", 10, &all);
    let four = config(4, 0);
    let mut f = w.open(&four);
    let out = dispatch_pages(&mut f, T0, 4);
    assert_eq!(out.len(), 4);
    // Reported out of order: the second and the fourth; then kill -9.
    assert!(f.on_report(&stored(&out[1], 200, 5), T0 + 1).unwrap());
    assert!(f.on_report(&stored(&out[3], 200, 5), T0 + 2).unwrap());
    drop(f);

    let mut f = w.open(&four);
    assert_eq!(
        f.stats().urls_queued,
        8,
        "the two stored are gone, the rest kept"
    );
    let again = finish(&mut f, T0 + 10_000);
    assert_eq!(
        again[..2],
        [out[0].url.clone(), out[2].url.clone()],
        "in flight first"
    );
    let mut fetched: Vec<String> = vec![out[1].url.clone(), out[3].url.clone()];
    fetched.extend(again);
    fetched.sort();
    let mut expected = all;
    expected.sort();
    assert_eq!(fetched, expected, "nothing lost, nothing doubled");
    assert_eq!(f.stats().apps[0].pages_total, 10);
}

#[test]
fn one_outage_failing_all_n_counts_once_and_urls_are_retried() {
    let w = World::new();
    let all = urls("a.test", 0..8);
    w.publish("bfs", 10, &all);
    let failing = FrontierConfig {
        max_failures: 2,
        max_url_attempts: 2,
        backoff_ms: vec![1_000],
        ..config(4, 0)
    };
    let mut f = w.open(&failing);
    let out = dispatch_pages(&mut f, T0, 4);
    assert_eq!(out.len(), 4);
    for (i, job) in out.iter().enumerate() {
        let report = failed(job, OutcomeReason::ConnectFailure);
        assert!(f.on_report(&report, T0 + 10 + i as u64).unwrap());
    }
    assert_eq!(f.stats().hosts_dead, 0, "one outage, one failure");
    assert!(
        dispatch_pages(&mut f, T0 + 500, 1).is_empty(),
        "backing off"
    );
    let again = finish(&mut f, T0 + 1_100);
    assert_eq!(again.len(), 8, "the four retried and the rest");
    let mut sorted = again;
    sorted.sort();
    let mut expected = all;
    expected.sort();
    assert_eq!(sorted, expected);
    assert!(w.outcomes("bfs").is_empty());
}
