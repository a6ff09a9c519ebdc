//! URLs that never reach a downloader, and hosts that fail: blacklist, invalid URLs,
//! DNS answers, back-off, dead hosts, returned jobs.

use manager::{BlacklistEntry, Frontier, FrontierConfig, HostState};
use spool::OutcomeReason;
use spool::protocol::{FetchJob, FetchPurpose, NegativeKind, Resolution};

use crate::support::*;

/// Loads, answers DNS, answers robots.txt 404: returns the page jobs startable now.
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

fn zero_interval() -> FrontierConfig {
    FrontierConfig {
        interval_ms: 0,
        ..test_config()
    }
}

#[test]
fn blacklist_entries_from_the_config_apply_from_the_start() {
    let w = World::new();
    let config = FrontierConfig {
        blacklist: vec!["spam.test".into(), ".bad.test".into()],
        ..zero_interval()
    };
    let mut f = w.open(&config);
    let list = [
        "http://spam.test/1",
        "http://deep.bad.test/2",
        "http://good.test/3",
    ]
    .map(String::from);
    w.publish("bfs", 10, &list);
    let pages = pages_now(&mut f, T0);
    let got: Vec<&str> = pages.iter().map(|j| j.url.as_str()).collect();
    assert_eq!(got, ["http://good.test/3"]);
    f.flush_outcomes(T0).unwrap();
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::Blacklisted),
        ["http://deep.bad.test/2", "http://spam.test/1"]
    );
    let bad = FrontierConfig {
        blacklist: vec!["not a host".into()],
        ..zero_interval()
    };
    let err = bad.validate().unwrap_err().to_string();
    assert!(err.contains("blacklist"), "{err}");
}

#[test]
fn blacklisted_hosts_and_domains_are_dropped_with_outcomes() {
    let w = World::new();
    let mut f = w.open(&zero_interval());
    f.blacklist_add("spam.test".parse().unwrap()).unwrap();
    f.blacklist_add("*.bad.test".parse().unwrap()).unwrap();
    let list = [
        "http://spam.test/1",
        "http://www.spam.test/2",
        "http://bad.test/3",
        "https://deep.sub.bad.test/4",
        "http://good.test/5",
    ]
    .map(String::from);
    w.publish("bfs", 10, &list);
    let pages = pages_now(&mut f, T0);
    let got: Vec<&str> = pages.iter().map(|j| j.url.as_str()).collect();
    assert_eq!(got, ["http://www.spam.test/2", "http://good.test/5"]);
    f.flush_outcomes(T0).unwrap();
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::Blacklisted),
        [
            "http://bad.test/3",
            "http://spam.test/1",
            "https://deep.sub.bad.test/4"
        ]
    );
    // Added at run time: URLs already queued are dropped when their host comes up.
    for job in &pages {
        f.on_report(&stored(job, 200, 1), T0).unwrap();
    }
    w.publish("bfs", 10, &urls("later.test", 0..3));
    f.rescan_requests();
    let first = pages_now(&mut f, T0 + 1);
    assert_eq!(first.len(), 1);
    f.blacklist_add(BlacklistEntry::Domain("later.test".into()))
        .unwrap();
    f.on_report(&stored(&first[0], 200, 1), T0 + 1).unwrap();
    assert!(pages_now(&mut f, T0 + 2).is_empty());
    f.flush_outcomes(T0 + 2).unwrap();
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::Blacklisted).len(),
        3 + 2,
        "the two queued later.test URLs"
    );
    assert_eq!(f.stats().urls_queued, 0);
    // The blacklist is persisted.
    drop(f);
    let f = w.open(&zero_interval());
    assert_eq!(f.blacklist().len(), 3);
}

#[test]
fn invalid_urls_become_outcomes() {
    let w = World::new();
    let mut f = w.open(&zero_interval());
    let list = [
        "ftp://files.test/x",
        "http://ok.test/",
        "mailto:someone@x.test",
        "http://[::1/",
    ]
    .map(String::from);
    w.publish("bfs", 10, &list);
    let pages = pages_now(&mut f, T0);
    assert_eq!(pages.len(), 1);
    f.flush_outcomes(T0).unwrap();
    let invalid = w.outcome_urls("bfs", OutcomeReason::InvalidUrl);
    assert_eq!(invalid.len(), 3, "{invalid:?}");
    let o = w.outcomes("bfs");
    assert!(
        o.iter().any(|o| o.detail.contains("unsupported scheme")),
        "{o:?}"
    );
}

#[test]
fn connect_failures_back_off_then_kill_the_host() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        backoff_ms: vec![60_000, 300_000],
        max_failures: 3,
        // The count ends this host, not the time window.
        host_retry_window_ms: 3_600_000,
        max_url_attempts: 2,
        request_scan_interval_ms: 3_600_000,
        ..test_config()
    };
    let mut f = w.open(&config);
    w.publish("bfs", 10, &urls("flaky.test", 0..4));
    let mut now = T0;
    let jobs = pages_now(&mut f, now);
    assert_eq!(jobs[0].url, "http://flaky.test/p0");
    f.on_report(&failed(&jobs[0], OutcomeReason::ConnectFailure), now)
        .unwrap();
    assert_eq!(
        f.stats()
            .hosts_by_state
            .iter()
            .find(|s| s.0 == HostState::BackedOff)
            .unwrap()
            .1,
        1
    );
    assert_eq!(f.next_wakeup(), Some(now + 60_000));
    assert!(f.next_jobs(now + 59_999, 10).unwrap().is_empty());
    now += 60_000;
    let jobs = f.next_jobs(now, 10).unwrap();
    assert_eq!(
        jobs[0].url, "http://flaky.test/p0",
        "the URL is tried again"
    );
    f.on_report(&failed(&jobs[0], OutcomeReason::Timeout), now)
        .unwrap();
    f.tick(now).unwrap(); // publishes the outcome, whose deadline is now
    assert_eq!(f.next_wakeup(), Some(now + 300_000), "back-off grows");
    // Its second try failed: p0 ends with the failure's outcome.
    now += 300_000;
    let jobs = f.next_jobs(now, 10).unwrap();
    assert_eq!(jobs[0].url, "http://flaky.test/p1");
    f.on_report(&failed(&jobs[0], OutcomeReason::ConnectFailure), now)
        .unwrap();
    // Third consecutive failure: dead, every remaining URL ends.
    f.flush_outcomes(now).unwrap();
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::Timeout),
        ["http://flaky.test/p0"]
    );
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::TooManyFailures),
        [
            "http://flaky.test/p1",
            "http://flaky.test/p2",
            "http://flaky.test/p3"
        ]
    );
    let stats = f.stats();
    assert_eq!(
        (stats.urls_queued, stats.hosts, stats.hosts_dead),
        (0, 0, 1)
    );
    // New URLs for the dead host end at once.
    w.publish("bfs", 10, &urls("flaky.test", 9..10));
    f.rescan_requests();
    assert!(pages_now(&mut f, now + 1).is_empty());
    f.flush_outcomes(now + 1).unwrap();
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::TooManyFailures).len(),
        4
    );
}

#[test]
fn a_success_resets_the_failure_count_and_5xx_pages_are_pages() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        backoff_ms: vec![1_000],
        max_failures: 2,
        ..test_config()
    };
    let mut f = w.open(&config);
    w.publish("bfs", 10, &urls("ok.test", 0..4));
    let mut now = T0;
    let mut pages = 0;
    let mut fail_next = true;
    for _ in 0..50 {
        for job in pages_now(&mut f, now) {
            if fail_next {
                f.on_report(&failed(&job, OutcomeReason::ConnectFailure), now)
                    .unwrap();
            } else {
                // 500, not 503: a 503 asks for less (`throttle`).
                f.on_report(&stored(&job, 500, 1), now).unwrap();
                pages += 1;
            }
            fail_next = !fail_next;
        }
        now += 1_000;
    }
    assert_eq!(
        pages, 4,
        "one failure between successes never kills the host"
    );
    assert_eq!(f.stats().apps[0].pages_total, 4);
}

#[test]
fn other_failures_end_the_url_only() {
    let w = World::new();
    let mut f = w.open(&zero_interval());
    w.publish("bfs", 10, &urls("b.test", 0..2));
    let jobs = pages_now(&mut f, T0);
    f.on_report(&failed(&jobs[0], OutcomeReason::BadResponse), T0)
        .unwrap();
    let jobs = f.next_jobs(T0, 10).unwrap();
    assert_eq!(jobs[0].url, "http://b.test/p1");
    f.flush_outcomes(T0).unwrap();
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::BadResponse),
        ["http://b.test/p0"]
    );
}

#[test]
fn returned_jobs_are_requeued_at_the_head_without_a_failure() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        max_failures: 1,
        ..test_config()
    };
    let mut f = w.open(&config);
    w.publish("bfs", 10, &urls("r.test", 0..2));
    let jobs = pages_now(&mut f, T0);
    let mut current = jobs[0].clone();
    for _ in 0..3 {
        assert!(f.on_returned(current.job, T0).unwrap());
        assert!(!f.on_returned(current.job, T0).unwrap(), "already returned");
        let again = f.next_jobs(T0, 10).unwrap();
        assert_eq!(again[0].url, "http://r.test/p0");
        current = again[0].clone();
    }
    assert_eq!(f.stats().hosts_dead, 0);
    assert_eq!(f.stats().urls_queued, 2);
}

#[test]
fn dns_answers_nxdomain_failure_and_forbidden() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        allow_private_addresses: false,
        backoff_ms: vec![1_000],
        max_failures: 2,
        ..test_config()
    };
    let mut f = w.open(&config);
    let mut list = urls("nx.test", 0..2);
    list.extend(urls("private.test", 0..2));
    list.extend(urls("servfail.test", 0..2));
    list.push("http://127.0.0.1:8080/literal".into());
    w.publish("bfs", 10, &list);
    f.next_jobs(T0, 10).unwrap();
    let mut names = f.hosts_needing_dns(T0);
    names.sort();
    assert_eq!(
        names,
        ["nx.test", "private.test", "servfail.test"],
        "literals need no DNS"
    );
    let neg = |kind| Resolution::Negative {
        kind,
        ttl_secs: 300,
        detail: "sim".into(),
    };
    f.on_dns("nx.test", &neg(NegativeKind::NxDomain), T0)
        .unwrap();
    f.on_dns("private.test", &addrs("192.168.1.1".parse().unwrap()), T0)
        .unwrap();
    f.on_dns("servfail.test", &neg(NegativeKind::Failure), T0)
        .unwrap();
    assert!(
        f.hosts_needing_dns(T0).is_empty(),
        "servfail backs off first"
    );
    assert!(f.next_jobs(T0 + 999, 10).unwrap().is_empty());
    f.next_jobs(T0 + 1_000, 10).unwrap();
    assert_eq!(f.hosts_needing_dns(T0 + 1_000), ["servfail.test"]);
    f.on_dns("servfail.test", &neg(NegativeKind::Failure), T0 + 1_000)
        .unwrap();
    f.flush_outcomes(T0 + 1_000).unwrap();
    let dns = w.outcome_urls("bfs", OutcomeReason::DnsFailure);
    assert_eq!(dns.len(), 4, "{dns:?}");
    let forbidden = w.outcome_urls("bfs", OutcomeReason::ForbiddenAddress);
    assert_eq!(forbidden.len(), 3, "{forbidden:?}");
    assert_eq!(f.stats().urls_queued, 0);
}

#[test]
fn unanswered_dns_questions_are_asked_again() {
    let w = World::new();
    let config = FrontierConfig {
        dns_retry_ms: 5_000,
        ..zero_interval()
    };
    let mut f = w.open(&config);
    w.publish("bfs", 10, &urls("slowdns.test", 0..1));
    f.next_jobs(T0, 10).unwrap();
    assert_eq!(f.hosts_needing_dns(T0), ["slowdns.test"]);
    f.tick(T0 + 4_999).unwrap();
    assert!(f.hosts_needing_dns(T0 + 4_999).is_empty());
    f.tick(T0 + 5_000).unwrap();
    assert_eq!(f.hosts_needing_dns(T0 + 5_000), ["slowdns.test"]);
}
