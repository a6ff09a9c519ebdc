//! robots.txt: fetched before any page, at top priority; excluded URLs become
//! outcomes; 4xx, 5xx and redirects.

use manager::{Frontier, FrontierConfig};
use spool::OutcomeReason;
use spool::protocol::{FetchJob, FetchPurpose};

use crate::support::*;

/// Loads the files and answers DNS; returns the first jobs.
fn start(f: &mut Frontier, now: u64) -> Vec<FetchJob> {
    let mut jobs = f.next_jobs(now, 100).unwrap();
    answer_dns(f, now, &ip_by_name);
    jobs.extend(f.next_jobs(now, 100).unwrap());
    jobs
}

#[test]
fn robots_before_pages_and_excluded_urls_become_outcomes() {
    let w = World::new();
    let mut f = w.open(&test_config());
    let list = [
        "http://r.test/private/a",
        "http://r.test/public/b",
        "http://r.test/private/c",
        "http://r.test/public/d",
    ]
    .map(String::from);
    w.publish("bfs", 10, &list);
    let jobs = start(&mut f, T0);
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].purpose, FetchPurpose::Robots);
    assert_eq!(jobs[0].url, "http://r.test/robots.txt");
    assert_eq!(jobs[0].addr.port(), 80);
    assert!(
        f.next_jobs(T0 + 60_000, 10).unwrap().is_empty(),
        "no page before robots"
    );
    let body = b"User-agent: *\nDisallow: /private\n";
    let t = T0 + 60_000;
    assert!(
        f.on_robots_fetched(jobs[0].job, 200, Some(body), None, t)
            .unwrap()
    );
    let mut pages = Vec::new();
    let mut now = t;
    for _ in 0..10 {
        now += 1_000;
        for job in f.next_jobs(now, 10).unwrap() {
            assert_eq!(job.purpose, FetchPurpose::Page);
            pages.push(job.url.clone());
            f.on_report(&stored(&job, 200, 5), now).unwrap();
        }
    }
    assert_eq!(pages, ["http://r.test/public/b", "http://r.test/public/d"]);
    f.flush_outcomes(now).unwrap();
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::RobotsExcluded),
        ["http://r.test/private/a", "http://r.test/private/c"]
    );
    assert_eq!(f.stats().robots_fetched, 1);
}

#[test]
fn robots_jobs_go_ahead_of_pages() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        ..test_config()
    };
    let mut f = w.open(&config);
    w.publish("bfs", 10, &urls("early.test", 0..3));
    let jobs = start(&mut f, T0);
    f.on_robots_fetched(jobs[0].job, 404, Some(b""), None, T0)
        .unwrap();
    // A later file brings a new host: its robots.txt beats early.test's pages.
    w.publish("bfs", 10, &urls("late.test", 0..1));
    f.rescan_requests();
    f.next_jobs(T0, 0).unwrap();
    answer_dns(&mut f, T0, &ip_by_name);
    let jobs = f.next_jobs(T0, 1).unwrap();
    assert_eq!(jobs[0].url, "http://late.test/robots.txt");
}

#[test]
fn status_4xx_allows_all_and_is_cached() {
    let w = World::new();
    let mut f = w.open(&FrontierConfig {
        interval_ms: 0,
        ..test_config()
    });
    w.publish("bfs", 10, &urls("gone.test", 0..2));
    let jobs = start(&mut f, T0);
    f.on_robots_fetched(jobs[0].job, 404, Some(b"Disallow: /"), None, T0)
        .unwrap();
    let jobs = f.next_jobs(T0, 10).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].url, "http://gone.test/p0");
    f.on_report(&stored(&jobs[0], 200, 1), T0).unwrap();
    let jobs = f.next_jobs(T0, 10).unwrap();
    assert_eq!(jobs[0].url, "http://gone.test/p1");
    f.on_report(&stored(&jobs[0], 200, 1), T0).unwrap();
    // The host is forgotten; new URLs reuse the cached verdict: no robots job.
    w.publish("bfs", 10, &urls("gone.test", 2..3));
    f.rescan_requests();
    let jobs = start(&mut f, T0 + 1);
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].purpose, FetchPurpose::Page);
}

#[test]
fn status_5xx_disallows_all_backs_off_and_retries() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        backoff_ms: vec![60_000],
        request_scan_interval_ms: 3_600_000,
        ..test_config()
    };
    let mut f = w.open(&config);
    w.publish("bfs", 10, &urls("down.test", 0..2));
    let jobs = start(&mut f, T0);
    f.on_robots_fetched(jobs[0].job, 503, Some(b""), None, T0)
        .unwrap();
    assert!(
        f.next_jobs(T0 + 59_999, 10).unwrap().is_empty(),
        "backing off"
    );
    assert_eq!(f.next_wakeup(), Some(T0 + 60_000));
    let jobs = f.next_jobs(T0 + 60_000, 10).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        jobs[0].purpose,
        FetchPurpose::Robots,
        "robots.txt again, no page"
    );
    f.on_robots_fetched(jobs[0].job, 200, Some(b""), None, T0 + 60_000)
        .unwrap();
    let jobs = f.next_jobs(T0 + 60_000, 10).unwrap();
    assert_eq!(jobs[0].url, "http://down.test/p0");
}

#[test]
fn network_failure_of_robots_counts_as_unreachable() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        backoff_ms: vec![1_000],
        max_failures: 2,
        ..test_config()
    };
    let mut f = w.open(&config);
    w.publish("bfs", 10, &urls("dead.test", 0..3));
    let jobs = start(&mut f, T0);
    f.on_report(&failed(&jobs[0], OutcomeReason::ConnectFailure), T0)
        .unwrap();
    let jobs = f.next_jobs(T0 + 1_000, 10).unwrap();
    assert_eq!(jobs[0].purpose, FetchPurpose::Robots);
    f.on_report(&failed(&jobs[0], OutcomeReason::Timeout), T0 + 1_000)
        .unwrap();
    f.flush_outcomes(T0 + 1_000).unwrap();
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::TooManyFailures).len(),
        3
    );
    assert_eq!(f.stats().urls_queued, 0);
}

/// Issue 37: with the default bounds, a host whose robots.txt never answers
/// (each try ends at the 30 s first-byte time-out) is tried twice, 1 min apart,
/// and given up 2 min after its first try, when its next try (5 min later)
/// would start past `host_retry_window_ms`; every URL ends with an outcome
/// whose detail names the bound. One that answers 503 is given up after 1 min.
#[test]
fn robots_that_never_answer_or_answer_5xx_end_within_the_window() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        request_scan_interval_ms: 3_600_000,
        ..test_config()
    };
    assert_eq!(
        (
            config.backoff_ms.clone(),
            config.max_failures,
            config.host_retry_window_ms
        ),
        (vec![60_000, 300_000, 1_800_000, 7_200_000], 5, 120_000),
        "the defaults"
    );
    let mut f = w.open(&config);
    let mut list = urls("silent.test", 0..3);
    list.extend(urls("down.test", 0..2));
    w.publish("bfs", 10, &list);
    let jobs = start(&mut f, T0);
    assert_eq!(jobs.len(), 2);
    assert!(jobs.iter().all(|j| j.purpose == FetchPurpose::Robots));
    let silent = jobs.iter().find(|j| j.url.contains("silent")).unwrap();
    let down = jobs.iter().find(|j| j.url.contains("down")).unwrap();
    f.on_robots_fetched(down.job, 503, Some(b""), None, T0)
        .unwrap();
    f.on_report(&failed(silent, OutcomeReason::Timeout), T0 + 30_000)
        .unwrap();
    assert!(f.next_jobs(T0 + 59_999, 10).unwrap().is_empty());
    let again = f.next_jobs(T0 + 60_000, 10).unwrap();
    assert_eq!(again.len(), 1);
    assert!(again[0].url.contains("down") && again[0].purpose == FetchPurpose::Robots);
    f.on_robots_fetched(again[0].job, 500, Some(b""), None, T0 + 60_000)
        .unwrap();
    f.flush_outcomes(T0 + 60_000).unwrap();
    let given_up = w.outcomes("bfs");
    assert_eq!(given_up.len(), 2, "down.test is given up: {given_up:?}");
    assert!(
        given_up
            .iter()
            .all(|o| o.reason == OutcomeReason::TooManyFailures
                && o.detail
                    == "given up after 2 failed tries in 60.000 s (next try past \
                host_retry_window_ms 120000); last: robots.txt unreachable: robots.txt \
                status 500")
    );
    assert!(f.next_jobs(T0 + 89_999, 10).unwrap().is_empty());
    let again = f.next_jobs(T0 + 90_000, 10).unwrap();
    assert_eq!(again.len(), 1);
    assert!(again[0].url.contains("silent") && again[0].purpose == FetchPurpose::Robots);
    f.on_report(&failed(&again[0], OutcomeReason::Timeout), T0 + 120_000)
        .unwrap();
    f.flush_outcomes(T0 + 120_000).unwrap();
    let silent: Vec<_> = w
        .outcomes("bfs")
        .into_iter()
        .filter(|o| o.url.contains("silent"))
        .collect();
    assert_eq!(silent.len(), 3, "{silent:?}");
    assert!(
        silent
            .iter()
            .all(|o| o.reason == OutcomeReason::TooManyFailures
                && o.detail
                    == "given up after 2 failed tries in 120.000 s (next try past \
                host_retry_window_ms 120000); last: robots.txt unreachable: simulated")
    );
    let stats = f.stats();
    assert_eq!(
        (stats.urls_queued, stats.hosts, stats.hosts_dead),
        (0, 0, 2)
    );
}

#[test]
fn same_origin_redirects_are_followed() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        ..test_config()
    };
    let mut f = w.open(&config);
    w.publish(
        "bfs",
        10,
        &["http://m.test/a/x", "http://m.test/b/y"].map(String::from),
    );
    let jobs = start(&mut f, T0);
    f.on_robots_fetched(jobs[0].job, 301, Some(b""), Some("/real-robots.txt"), T0)
        .unwrap();
    let jobs = f.next_jobs(T0, 10).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].url, "http://m.test/real-robots.txt");
    assert_eq!(jobs[0].purpose, FetchPurpose::Robots);
    let body = b"User-agent: *\nDisallow: /a/\n";
    f.on_robots_fetched(jobs[0].job, 200, Some(body), None, T0)
        .unwrap();
    let jobs = f.next_jobs(T0, 10).unwrap();
    assert_eq!(jobs[0].url, "http://m.test/b/y");
    f.flush_outcomes(T0).unwrap();
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::RobotsExcluded),
        ["http://m.test/a/x"]
    );
}

#[test]
fn cross_host_redirects_resolve_the_target_and_apply_its_rules() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        ..test_config()
    };
    let mut f = w.open(&config);
    w.publish(
        "bfs",
        10,
        &["http://x.test/no/1", "http://x.test/yes/2"].map(String::from),
    );
    let jobs = start(&mut f, T0);
    let loc = "https://www.x.test:8443/robots.txt";
    f.on_robots_fetched(jobs[0].job, 301, Some(b""), Some(loc), T0)
        .unwrap();
    assert!(
        f.next_jobs(T0, 10).unwrap().is_empty(),
        "target name not resolved yet"
    );
    assert_eq!(f.hosts_needing_dns(T0), ["www.x.test"]);
    let ip = "10.7.7.7".parse().unwrap();
    f.on_dns("www.x.test", &addrs(ip), T0).unwrap();
    let jobs = f.next_jobs(T0, 10).unwrap();
    assert_eq!(jobs[0].url, loc);
    assert_eq!(jobs[0].addr, std::net::SocketAddr::new(ip, 8443));
    f.on_robots_fetched(
        jobs[0].job,
        200,
        Some(b"User-agent: *\nDisallow: /no\n"),
        None,
        T0,
    )
    .unwrap();
    let jobs = f.next_jobs(T0, 10).unwrap();
    assert_eq!(jobs[0].url, "http://x.test/yes/2");
    assert_eq!(
        jobs[0].addr.ip(),
        ip_by_name("x.test"),
        "pages go to the host's own address"
    );
}

#[test]
fn too_many_redirects_mean_allow_all() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        robots_max_redirects: 5,
        ..test_config()
    };
    let mut f = w.open(&config);
    w.publish("bfs", 10, &urls("loop.test", 0..1));
    let mut jobs = start(&mut f, T0);
    for hop in 0..6 {
        assert_eq!(jobs[0].purpose, FetchPurpose::Robots, "hop {hop}");
        let next = format!("/robots-{hop}.txt");
        f.on_robots_fetched(jobs[0].job, 302, None, Some(&next), T0)
            .unwrap();
        jobs = f.next_jobs(T0, 10).unwrap();
    }
    // Five redirects followed (six robots fetches), the sixth gave up: allow all.
    assert_eq!(jobs[0].purpose, FetchPurpose::Page);
    assert_eq!(jobs[0].url, "http://loop.test/p0");
}

#[test]
fn unknown_and_misrouted_reports_are_refused() {
    let w = World::new();
    let mut f = w.open(&test_config());
    w.publish("bfs", 10, &urls("q.test", 0..1));
    let jobs = start(&mut f, T0);
    let err = f.on_report(&stored(&jobs[0], 200, 1), T0).unwrap_err();
    assert!(
        matches!(err, manager::FrontierError::RobotsBodyRequired { .. }),
        "{err}"
    );
    let mut bogus = jobs[0].clone();
    bogus.job = spool::protocol::JobId(u64::MAX);
    assert!(!f.on_report(&stored(&bogus, 200, 1), T0).unwrap());
    assert!(
        !f.on_robots_fetched(bogus.job, 200, Some(b""), None, T0)
            .unwrap()
    );
}

#[test]
fn a_redirect_hop_to_another_origin_keeps_that_origins_politeness() {
    let w = World::new();
    let mut f = w.open(&test_config()); // interval 1,000 ms (rests 1,001: rest_until)
    w.publish(
        "bfs",
        10,
        &["http://h.test/a", "https://h.test/b", "https://h.test/c"].map(String::from),
    );
    let jobs = start(&mut f, T0);
    let robots = |url: &str| {
        jobs.iter()
            .find(|j| j.url == url)
            .unwrap_or_else(|| panic!("no job for {url} in {jobs:?}"))
            .job
    };
    let (plain, secure) = (
        robots("http://h.test/robots.txt"),
        robots("https://h.test/robots.txt"),
    );
    f.on_robots_fetched(secure, 404, Some(b""), None, T0 + 10)
        .unwrap();
    let loc = "https://h.test/robots.txt";
    f.on_robots_fetched(plain, 301, Some(b""), Some(loc), T0 + 20)
        .unwrap();
    // The https origin's first page goes first (its rest ends at +1011) ...
    let jobs = f.next_jobs(T0 + 1_015, 10).unwrap();
    assert_eq!(
        jobs.iter().map(|j| j.url.as_str()).collect::<Vec<_>>(),
        ["https://h.test/b"]
    );
    // ... and the hop, due at +1021 on the http origin's own schedule, waits while
    // the https request is in flight and while that origin rests.
    assert!(f.next_jobs(T0 + 1_025, 10).unwrap().is_empty());
    f.on_report(&stored(&jobs[0], 200, 5), T0 + 1_030).unwrap();
    assert!(f.next_jobs(T0 + 1_500, 10).unwrap().is_empty());
    assert!(f.next_jobs(T0 + 2_030, 10).unwrap().is_empty());
    let hop = f.next_jobs(T0 + 2_031, 10).unwrap();
    assert_eq!(
        hop.iter().map(|j| j.url.as_str()).collect::<Vec<_>>(),
        [loc],
        "the hop once the https origin has rested"
    );
    // The https origin then rests after the hop before its next page.
    f.on_robots_fetched(hop[0].job, 404, Some(b""), None, T0 + 2_040)
        .unwrap();
    assert!(f.next_jobs(T0 + 2_500, 10).unwrap().is_empty());
    assert!(f.next_jobs(T0 + 3_040, 10).unwrap().is_empty());
    let jobs = f.next_jobs(T0 + 3_041, 10).unwrap();
    let mut got: Vec<&str> = jobs.iter().map(|j| j.url.as_str()).collect();
    got.sort_unstable();
    assert_eq!(got, ["http://h.test/a", "https://h.test/c"]);
}

/// Issue 28: the `Sitemap:` URLs of a fetched robots.txt go to the application of
/// the host's head URL as `sitemap` lines (depth of that URL + 1), resolved against
/// the robots.txt URL, http(s) only; they are not counted as outcomes, and a
/// robots.txt without them reports nothing.
#[test]
fn robots_sitemaps_are_reported_to_the_application() {
    let w = World::new();
    let mut f = w.open(&test_config());
    let hints = spool::formats::Hints {
        depth: Some(3),
        ..Default::default()
    };
    w.publish_with("bfs", 10, &urls("s.test", 0..2), &hints);
    w.publish("bfs", 10, &urls("plain.test", 0..1));
    let jobs = start(&mut f, T0);
    assert_eq!(jobs.len(), 2, "two robots jobs: {jobs:?}");
    let body = b"User-agent: *\nDisallow: /private\n\
        Sitemap: http://s.test/sitemap_index.xml\n\
        sitemap: /relative.xml.gz\n\
        Sitemap: ftp://s.test/no.xml\n";
    for job in &jobs {
        let body: &[u8] = if job.url.contains("s.test") && !job.url.contains("plain") {
            body
        } else {
            b"User-agent: *\nDisallow: /x\n"
        };
        assert!(
            f.on_robots_fetched(job.job, 200, Some(body), None, T0)
                .unwrap()
        );
    }
    f.flush_outcomes(T0 + 60_000).unwrap();
    let lines: Vec<(String, String)> = w
        .outcomes("bfs")
        .into_iter()
        .filter(|o| o.reason == OutcomeReason::Sitemap)
        .map(|o| (o.url, o.detail))
        .collect();
    assert_eq!(
        lines,
        [
            (
                "http://s.test/sitemap_index.xml".to_owned(),
                "depth=4".to_owned()
            ),
            (
                "http://s.test/relative.xml.gz".to_owned(),
                "depth=4".to_owned()
            ),
        ]
    );
    let stats = f.stats();
    assert!(
        stats.outcomes_by_reason.iter().all(|(_, n)| *n == 0),
        "sitemap lines are no outcomes: {:?}",
        stats.outcomes_by_reason
    );
}

/// `http://HOST/a` is published and its robots.txt answered `301` to
/// `https://HOST/robots.txt` (at `T0 + 10`): the hop's job, started at `T0 + 200`.
fn hop_to_https(w: &World, f: &mut Frontier, host: &str) -> FetchJob {
    w.publish("bfs", 10, &[format!("http://{host}/a")]);
    let jobs = start(f, T0);
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    let loc = format!("https://{host}/robots.txt");
    f.on_robots_fetched(jobs[0].job, 301, Some(b""), Some(&loc), T0 + 10)
        .unwrap();
    let mut hop = f.next_jobs(T0 + 200, 10).unwrap();
    assert_eq!(
        hop.iter().map(|j| j.url.as_str()).collect::<Vec<_>>(),
        [loc.as_str()]
    );
    hop.remove(0)
}

/// The CI failure of fdff122 (`tests::machines`): the http origin's robots.txt
/// redirects to the https origin's, whose robots.txt asks for `Crawl-delay: 1`.
/// The hop fetched the https origin's robots.txt, so its crawl delay is known when
/// the hop ends: the https origin rests that long before anything else contacts it
/// (here its own page: the hop's file is its verdict too), not only the configured
/// interval.
#[test]
fn a_redirect_hop_rests_its_target_by_the_crawl_delay_it_fetched() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 100,
        ..test_config()
    };
    let mut f = w.open(&config);
    let hop = hop_to_https(&w, &mut f, "h.test");
    // The https origin's own URL comes while the hop is in flight.
    w.publish("bfs", 11, &["https://h.test/b"].map(String::from));
    let mut now = T0 + 200;
    let mut seen = f.next_jobs(now, 10).unwrap();
    assert!(seen.is_empty(), "the hop is in flight: {seen:?}");
    let body = b"User-agent: *\nCrawl-delay: 1\n";
    f.on_robots_fetched(hop.job, 200, Some(body), None, now + 10)
        .unwrap();
    let ended = now + 10;
    // Nothing contacts https://h.test before the hop's end plus its crawl delay.
    while now < ended + 999 {
        now += 1;
        seen = f.next_jobs(now, 10).unwrap();
        let early: Vec<&str> = seen
            .iter()
            .map(|j| j.url.as_str())
            .filter(|u| u.starts_with("https://"))
            .collect();
        assert!(
            early.is_empty(),
            "{early:?} {} ms after the hop ended",
            now - ended
        );
        answer_dns(&mut f, now, &ip_by_name);
    }
    // Then it is contacted: its page, not its robots.txt a second time (the http
    // origin's page, which rests the same crawl delay, may come in the same call).
    let mut later = Vec::new();
    while later.is_empty() && now < ended + 5_000 {
        now += 1;
        later = f.next_jobs(now, 10).unwrap();
        later.retain(|j| j.url.starts_with("https://"));
        answer_dns(&mut f, now, &ip_by_name);
    }
    assert_eq!(
        later.iter().map(|j| j.url.as_str()).collect::<Vec<_>>(),
        ["https://h.test/b"],
        "{} ms after the hop ended",
        now - ended
    );
    assert_eq!(f.stats().robots_fetched, 1, "one file for both origins");
}

/// `http://g.test/robots.txt` redirects to `https://g.test/robots.txt`, which the
/// hop fetches: that is the https origin's own robots.txt, so when the https
/// origin's URLs come later it does not fetch it again, and its rules apply (also
/// after a restart: the verdict is in the origin's stored record).
#[test]
fn a_redirect_chase_answers_for_the_origin_whose_file_it_fetched() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 100,
        ..test_config()
    };
    let mut f = w.open(&config);
    let hop = hop_to_https(&w, &mut f, "g.test");
    let body = b"User-agent: *\nDisallow: /private/\n";
    f.on_robots_fetched(hop.job, 200, Some(body), None, T0 + 210)
        .unwrap();
    // The https origin's URLs arrive only now; after a restart too.
    drop(f);
    let mut f = w.open(&config);
    w.publish(
        "bfs",
        11,
        &["https://g.test/private/x", "https://g.test/ok"].map(String::from),
    );
    let mut fetched = Vec::new();
    let mut now = T0 + 300;
    while now < T0 + 10_000 {
        now += 10;
        for job in f.next_jobs(now, 10).unwrap() {
            assert_eq!(job.purpose, FetchPurpose::Page, "{}", job.url);
            fetched.push(job.url.clone());
            f.on_report(&stored(&job, 200, 5), now).unwrap();
        }
        answer_dns(&mut f, now, &ip_by_name);
    }
    fetched.sort_unstable();
    assert_eq!(fetched, ["http://g.test/a", "https://g.test/ok"]);
    f.flush_outcomes(now).unwrap();
    assert_eq!(
        w.outcome_urls("bfs", OutcomeReason::RobotsExcluded),
        ["https://g.test/private/x"]
    );
}
