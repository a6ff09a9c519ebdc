//! Chained jobs (`chain_max_interval_ms`, `spool::protocol::After`): with one
//! connection per host and a short interval, a host's next URL goes out with the
//! current one and starts one interval after it ends; never two of a host on the
//! wire, every URL once, and a chained job handed back loses nothing. With no
//! interval a host gets a chain of up to `chain_max_jobs`, each after the one before.

use std::collections::BTreeSet;

use manager::FrontierConfig;
use spool::OutcomeReason;
use spool::protocol::{FetchJob, FetchPurpose, FetchReport, FetchResult};

use crate::support::*;

fn config(interval_ms: u64) -> FrontierConfig {
    FrontierConfig {
        connections_per_host: 1,
        interval_ms,
        ..test_config()
    }
}

#[test]
fn a_hosts_next_url_is_chained_and_starts_one_interval_after_the_end() {
    let w = World::new();
    let d = 500;
    let mut f = w.open_chaining(&config(d));
    w.publish("bfs", 10, &urls("a.test", 0..12));
    w.publish("bfs", 10, &urls("b.test", 0..12));
    let mut dur = |_: &FetchJob| 300;
    let mut sim = Sim::new(64, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    let pages = sim.pages();
    assert_eq!(pages.len(), 24, "every URL once");
    let distinct: BTreeSet<&str> = pages.iter().map(|p| p.job.url.as_str()).collect();
    assert_eq!(distinct.len(), 24, "no URL twice");
    let chained = pages.iter().filter(|p| p.job.after.is_some()).count();
    assert!(chained >= 8, "{chained} of 24 chained");
    for host in ["a.test", "b.test"] {
        let mut mine: Vec<_> = pages.iter().filter(|p| p.job.url.contains(host)).collect();
        mine.sort_by_key(|p| p.at);
        // FIFO, and each start one interval after the previous end.
        let got: Vec<&str> = mine.iter().map(|p| p.job.url.as_str()).collect();
        let want = urls(host, 0..12);
        assert_eq!(got, want.iter().map(String::as_str).collect::<Vec<_>>());
        for pair in mine.windows(2) {
            assert!(
                pair[1].at >= pair[0].ends + d,
                "{host}: {} started at {} but {} ended at {}",
                pair[1].job.url,
                pair[1].at,
                pair[0].job.url,
                pair[0].ends
            );
        }
    }
    // Half the round trips: 12 URLs in about 6 dispatch rounds per host, and
    // the host's URLs took no longer than one interval after each fetch.
    let last = pages.iter().map(|p| p.ends).max().unwrap();
    let first = pages.iter().map(|p| p.at).min().unwrap();
    assert!(last - first <= 12 * (300 + d), "{} ms", last - first);
    let stats = f.stats();
    assert_eq!((stats.urls_queued, stats.in_flight), (0, 0));
}

#[test]
fn no_chain_over_the_interval_cap_per_ip_spacing_or_several_connections() {
    for (label, config) in [
        ("interval over the cap", config(2_000)),
        (
            "per-IP spacing",
            FrontierConfig {
                ip_min_interval_ms: 100,
                ..config(500)
            },
        ),
        (
            "chaining off",
            FrontierConfig {
                chain_max_interval_ms: 0,
                ..config(500)
            },
        ),
        (
            "two connections",
            FrontierConfig {
                connections_per_host: 2,
                ..config(500)
            },
        ),
    ] {
        let w = World::new();
        let mut f = w.open_chaining(&config);
        w.publish("bfs", 10, &urls("a.test", 0..6));
        let mut dur = |_: &FetchJob| 300;
        let mut sim = Sim::new(64, &ip_by_name, &no_robots, &mut dur);
        sim.run(&mut f, |_| false);
        let pages = sim.pages();
        assert_eq!(pages.len(), 6, "{label}");
        assert!(
            pages.iter().all(|p| p.job.after.is_none()),
            "{label}: a chained job"
        );
    }
}

/// Drives `f` (DNS answered, robots.txt 404) until a round hands out page jobs,
/// `max` jobs at most a round: those page jobs.
fn first_page_round(f: &mut manager::Frontier, now: &mut u64, max: usize) -> Vec<FetchJob> {
    for _ in 0..20 {
        answer_dns(f, *now, &ip_by_name);
        let jobs = f.next_jobs(*now, max).unwrap();
        for job in &jobs {
            if job.purpose == FetchPurpose::Robots {
                f.on_robots_fetched(job.job, 404, Some(b""), None, *now)
                    .unwrap();
            }
        }
        let pages: Vec<FetchJob> = jobs
            .into_iter()
            .filter(|j| j.purpose == FetchPurpose::Page)
            .collect();
        if !pages.is_empty() {
            return pages;
        }
        *now += 1_000;
    }
    panic!("no page job came out");
}

/// Drives `f` until a page job chained after another comes out: (first, chained).
fn chained_pair(f: &mut manager::Frontier, now: &mut u64) -> (FetchJob, FetchJob) {
    let pages = first_page_round(f, now, 16);
    assert_eq!(pages.len(), 2, "{pages:?}");
    assert_eq!(pages[1].after.map(|a| a.job), Some(pages[0].job));
    (pages[0].clone(), pages[1].clone())
}

#[test]
fn a_chained_job_handed_back_after_a_failure_loses_nothing() {
    let w = World::new();
    let mut f = w.open_chaining(&config(500));
    w.publish("bfs", 10, &urls("a.test", 0..3));
    let mut now = T0;
    let (first, second) = chained_pair(&mut f, &mut now);
    // The first one fails to connect: the downloader never sends the second and
    // hands it back, in the same message before the first one's report (as its
    // session does).
    now += 100;
    let returned = FetchReport {
        job: second.job,
        result: FetchResult::Returned,
    };
    assert!(f.on_report(&returned, now).unwrap());
    assert!(
        f.on_report(&failed(&first, OutcomeReason::ConnectFailure), now)
            .unwrap()
    );
    assert_eq!(f.stats().in_flight, 0);
    // Both come back, in order, after the host's back-off; each fetched once.
    let mut dur = |_: &FetchJob| 300;
    let mut sim = Sim::new(64, &ip_by_name, &no_robots, &mut dur);
    sim.now = now;
    sim.run(&mut f, |_| false);
    let got: Vec<&str> = sim.pages().iter().map(|p| p.job.url.as_str()).collect();
    assert_eq!(
        got,
        ["http://a.test/p0", "http://a.test/p1", "http://a.test/p2"]
    );
    assert!(sim.pages()[0].at >= now + 60_000, "the back-off was kept");
}

#[test]
fn reports_in_either_order_keep_the_interval_from_the_later_end() {
    let w = World::new();
    let d = 500;
    let mut f = w.open_chaining(&config(d));
    w.publish("bfs", 10, &urls("a.test", 0..4));
    let mut now = T0;
    let (first, second) = chained_pair(&mut f, &mut now);
    // The chained job's report comes first (its failure overtook the first's
    // stored page, which waited for the writer), then the first's.
    let end_second = now + 900;
    assert!(
        f.on_report(&failed(&second, OutcomeReason::BadResponse), end_second)
            .unwrap()
    );
    assert!(f.on_report(&stored(&first, 200, 5), now + 400).unwrap());
    // Nothing of the host before one interval after the later end (`rest_until`:
    // the interval and one millisecond for the truncated stamp).
    assert!(f.next_jobs(end_second + d, 16).unwrap().is_empty());
    let next = f.next_jobs(end_second + d + 1, 16).unwrap();
    assert_eq!(
        next.first().map(|j| j.url.as_str()),
        Some("http://a.test/p2")
    );
}

#[test]
fn with_no_interval_a_chain_holds_up_to_chain_max_jobs() {
    let w = World::new();
    let cfg = FrontierConfig {
        chain_max_jobs: 4,
        ..config(0)
    };
    let mut f = w.open_chaining(&cfg);
    w.publish("bfs", 10, &urls("a.test", 0..10));
    let mut dur = |_: &FetchJob| 5;
    let mut sim = Sim::new(64, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    let pages = sim.pages();
    let got: Vec<&str> = pages.iter().map(|p| p.job.url.as_str()).collect();
    let want = urls("a.test", 0..10);
    assert_eq!(got, want.iter().map(String::as_str).collect::<Vec<_>>());
    // Rounds of 4, 4 and 2: each job after the first of a round follows the one
    // before it, and never two of the host on the wire.
    let starts: Vec<bool> = pages.iter().map(|p| p.job.after.is_none()).collect();
    let mut want_starts = vec![false; 10];
    for i in [0, 4, 8] {
        want_starts[i] = true;
    }
    assert_eq!(starts, want_starts);
    for pair in pages.windows(2) {
        if let Some(after) = pair[1].job.after {
            assert_eq!(after.job, pair[0].job.job);
        }
        assert!(pair[1].at >= pair[0].ends, "two on the wire at once");
    }
    let stats = f.stats();
    assert_eq!((stats.urls_queued, stats.in_flight), (0, 0));
}

#[test]
fn a_long_chain_cut_short_loses_nothing_and_keeps_the_order() {
    let w = World::new();
    let cfg = FrontierConfig {
        chain_max_jobs: 8,
        ..config(0)
    };
    let mut f = w.open_chaining(&cfg);
    w.publish("bfs", 10, &urls("a.test", 0..12));
    let mut now = T0;
    let chain = first_page_round(&mut f, &mut now, 64);
    assert_eq!(chain.len(), 8, "chain_max_jobs");
    // The first three were stored; the fourth got a 503, so the downloader hands
    // the other four back, the last first (before the fourth's report, as its
    // session does).
    now += 10;
    for job in &chain[..3] {
        assert!(f.on_report(&stored(job, 200, 1), now).unwrap());
    }
    for job in chain[4..].iter().rev() {
        let back = FetchReport {
            job: job.job,
            result: FetchResult::Returned,
        };
        assert!(f.on_report(&back, now).unwrap());
    }
    assert!(f.on_report(&stored(&chain[3], 503, 1), now).unwrap());
    assert_eq!(f.stats().in_flight, 0);
    let mut dur = |_: &FetchJob| 5;
    let mut sim = Sim::new(64, &ip_by_name, &no_robots, &mut dur);
    sim.now = now;
    sim.run(&mut f, |_| false);
    let mut got: Vec<String> = chain[..3].iter().map(|j| j.url.clone()).collect();
    got.extend(sim.pages().iter().map(|p| p.job.url.clone()));
    // Every URL once, in the queue's order: the 503's URL first, then the ones
    // handed back.
    assert_eq!(got, urls("a.test", 0..12));
    let stats = f.stats();
    assert_eq!((stats.urls_queued, stats.in_flight), (0, 0));
}

#[test]
fn long_chains_only_take_room_the_other_ready_hosts_do_not_need() {
    let w = World::new();
    let mut f = w.open_chaining(&config(0));
    // One request file: its load brings every host at once.
    let all: Vec<String> = (0..16)
        .flat_map(|i| urls(&format!("h{i}.test"), 0..10))
        .collect();
    w.publish("bfs", 10, &all);
    // Robots first, then a round with room for two jobs per ready host.
    let mut now = T0;
    let pages = first_page_round(&mut f, &mut now, 32);
    // Every host got its pair; none took the room of the others with a long chain.
    let served: BTreeSet<&str> = pages
        .iter()
        .filter(|j| j.after.is_none())
        .map(|j| j.url.split('/').nth(2).unwrap())
        .collect();
    assert_eq!(served.len(), 16, "{served:?}");
    assert_eq!(pages.len(), 32);
}
