//! Servers that ask for less (issue 28): 429 and 503 answers back their host off by
//! `Retry-After` or exponentially, the URL is tried again within
//! `max_url_attempts`, and no other host is slowed.

use manager::{Frontier, FrontierConfig};
use spool::protocol::{
    BackOffReason, FetchJob, FetchPurpose, FetchReport, FetchResult, RetryAfter,
};

use crate::support::*;

/// Answers DNS and robots.txt (404): the page jobs startable at `now`.
fn pages_now(f: &mut Frontier, now: u64) -> Vec<FetchJob> {
    let mut pages = Vec::new();
    for _ in 0..4 {
        answer_dns(f, now, &ip_by_name);
        for job in f.next_jobs(now, 100).unwrap() {
            match job.purpose {
                FetchPurpose::Robots => {
                    f.on_robots_fetched(job.job, 404, Some(b""), None, now)
                        .unwrap();
                }
                FetchPurpose::Page => pages.push(job),
            }
        }
    }
    pages
}

fn throttled(job: &FetchJob, status: u16, retry_after: Option<RetryAfter>) -> FetchReport {
    let mut report = stored(job, status, 1);
    if let FetchResult::Stored(page) = &mut report.result {
        page.retry_after = retry_after;
    }
    report
}

fn config() -> FrontierConfig {
    FrontierConfig {
        interval_ms: 100,
        throttle_min_ms: 1_000,
        throttle_max_ms: 60_000,
        max_url_attempts: 3,
        ..test_config()
    }
}

/// The first time in `from..from + span` (steps of 10 ms) `host`'s next job goes
/// out, with that job; other hosts' jobs are answered 200 on the way.
fn next_of(f: &mut Frontier, host: &str, from: u64, span: u64) -> Option<(u64, FetchJob)> {
    let mut now = from;
    while now < from + span {
        let mut found = None;
        for job in pages_now(f, now) {
            if job.url.contains(host) {
                found = Some((now, job));
            } else {
                f.on_report(&stored(&job, 200, 1), now).unwrap();
            }
        }
        if found.is_some() {
            return found;
        }
        now += 10;
    }
    None
}

#[test]
fn retry_after_holds_the_host_and_the_url_comes_back() {
    let w = World::new();
    let mut f = w.open(&config());
    w.publish("bfs", 10, &urls("slow.test", 0..2));
    w.publish("bfs", 10, &urls("other.test", 0..20));
    let (t, job) = next_of(&mut f, "slow.test", T0, 1_000).unwrap();
    assert!(job.url.ends_with("/p0"));
    f.on_report(&throttled(&job, 429, Some(RetryAfter::Seconds(5))), t)
        .unwrap();
    let listed = f.backed_off_hosts(t, 10);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].origin, "http://slow.test");
    assert_eq!(
        listed[0].reason,
        BackOffReason::Throttled {
            status: 429,
            retry_after_ms: Some(5_000),
            in_row: 1
        }
    );
    assert!(listed[0].until_ms >= t + 5_000);

    // Meanwhile the other host goes on at its own interval (100 ms).
    let mut other = 0;
    let (again, job) = {
        let mut now = t;
        loop {
            let mut found = None;
            for j in pages_now(&mut f, now) {
                if j.url.contains("slow.test") {
                    found = Some(j);
                } else {
                    f.on_report(&stored(&j, 200, 1), now).unwrap();
                    other += 1;
                }
            }
            if let Some(j) = found {
                break (now, j);
            }
            now += 10;
            assert!(now < t + 10_000, "slow.test never came back");
        }
    };
    assert!(again >= t + 5_000, "came back after {} ms", again - t);
    assert!(other >= 19, "other.test slowed down: {other} pages in 5 s");
    assert!(job.url.ends_with("/p0"), "the same URL is tried again");
    f.on_report(&stored(&job, 200, 1), again).unwrap();
    assert!(f.backed_off_hosts(again, 10).is_empty());
    // The throttled answer was not counted as the URL's page; the 200 was.
    let (t2, job) = next_of(&mut f, "slow.test", again, 1_000).unwrap();
    assert!(job.url.ends_with("/p1"));
    assert!(t2 - again < 1_000, "back to the plain interval after a 200");
    f.on_report(&stored(&job, 200, 1), t2).unwrap();
    let stats = f.stats();
    assert_eq!(stats.apps[0].pages_total, 22);
    assert_eq!(stats.urls_queued, 0);
}

#[test]
fn without_retry_after_the_waits_grow_and_the_last_try_is_the_page() {
    let w = World::new();
    let mut f = w.open(&config());
    w.publish("bfs", 10, &urls("busy.test", 0..2));
    let mut now = T0;
    let mut gaps = Vec::new();
    let mut last = None;
    // p0 three times (503), then p1 once (503), then p1 answered.
    let mut seen = Vec::new();
    for round in 0..5 {
        let (t, job) = next_of(&mut f, "busy.test", now, 120_000).unwrap();
        if let Some(prev) = last {
            gaps.push(t - prev);
        }
        seen.push(job.url.clone());
        let report = if round < 4 {
            throttled(&job, 503, None)
        } else {
            stored(&job, 200, 1)
        };
        f.on_report(&report, t).unwrap();
        if round < 4 {
            let listed = f.backed_off_hosts(t, 10);
            assert_eq!(listed.len(), 1, "{listed:?}");
        }
        last = Some(t);
        now = t;
    }
    assert_eq!(
        seen,
        [
            "http://busy.test/p0",
            "http://busy.test/p0",
            "http://busy.test/p0",
            "http://busy.test/p1",
            "http://busy.test/p1"
        ]
    );
    // 1 s, 2 s, 4 s, 8 s, each with up to a quarter of jitter: strictly growing.
    for pair in gaps.windows(2) {
        assert!(pair[1] > pair[0], "gaps {gaps:?}");
    }
    assert!(gaps[0] >= 1_000 && gaps[0] < 1_300, "{gaps:?}");
    assert!(gaps[3] >= 8_000 && gaps[3] < 10_100, "{gaps:?}");
    // p0 ended with its third 503 as its page; p1 with its 200.
    let stats = f.stats();
    assert_eq!(stats.apps[0].pages_total, 2);
    assert_eq!(stats.urls_queued, 0);
}

#[test]
fn a_retry_after_beyond_the_cap_is_capped() {
    let w = World::new();
    let mut f = w.open(&config());
    w.publish("bfs", 10, &urls("greedy.test", 0..1));
    let (t, job) = next_of(&mut f, "greedy.test", T0, 1_000).unwrap();
    f.on_report(&throttled(&job, 429, Some(RetryAfter::Seconds(86_400))), t)
        .unwrap();
    let (again, _) = next_of(&mut f, "greedy.test", t, 120_000).unwrap();
    assert!(
        (t + 60_000..t + 60_100).contains(&again),
        "came back after {} ms",
        again - t
    );
}

/// Issue 28: the fetch totals (requests, bytes, codes, errors) are stored with the
/// report's batch, so a kill -9 (drop without anything else) keeps them exactly.
#[test]
fn fetch_totals_survive_a_crash() {
    let w = World::new();
    let mut f = w.open(&config());
    w.publish("bfs", 10, &urls("a.test", 0..3));
    let mut now = T0;
    let mut answered = 0;
    while answered < 3 {
        for job in pages_now(&mut f, now) {
            let report = match answered {
                0 => stored(&job, 200, 1),
                1 => stored(&job, 404, 1),
                _ => failed(&job, spool::OutcomeReason::BadResponse),
            };
            f.count_report(&report.result, job.purpose);
            f.on_report(&report, now).unwrap();
            answered += 1;
        }
        now += 200;
    }
    let before = f.totals().clone();
    assert_eq!((before.requests, before.wire_bytes), (3, 200));
    drop(f); // kill -9: nothing flushed on purpose

    let f = w.open(&config());
    assert_eq!(f.totals(), &before);
    let codes: Vec<(u16, u64)> = f
        .totals()
        .status_counts()
        .iter()
        .map(|s| (s.code, s.count))
        .collect();
    assert_eq!(codes, [(200, 1), (404, 1)]);
    let bad = f
        .totals()
        .error_counts()
        .into_iter()
        .find(|e| e.reason == spool::OutcomeReason::BadResponse)
        .map(|e| e.count);
    assert_eq!(bad, Some(1));
}
