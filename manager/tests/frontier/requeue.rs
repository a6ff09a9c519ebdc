//! Requeued URLs (a downloader lost with pages it never committed): durable, and
//! dispatched again after a restart, politely.

use std::net::{IpAddr, Ipv4Addr};

use spool::formats::{Hints, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::protocol::{FetchJob, FetchPurpose, FetchReport, Resolution};
use spool::publish::Publisher;
use spool::{ComponentId, Spool, Validators};

use manager::{Frontier, FrontierConfig};

const T0: u64 = 1_700_000_000_000;

fn config() -> FrontierConfig {
    FrontierConfig {
        interval_ms: 0,
        min_interval_ms: 0,
        ip_max_in_flight: 0,
        ip_min_interval_ms: 0,
        allow_private_addresses: true,
        chain_max_interval_ms: 0, // These tests take one job per host at a time.
        ..FrontierConfig::default()
    }
}

/// Answers DNS and robots.txt (404) until page jobs come out.
fn pages(f: &mut Frontier, now: u64) -> Vec<FetchJob> {
    let mut pages = Vec::new();
    for _ in 0..4 {
        for name in f.hosts_needing_dns(now) {
            let answer = Resolution::Addresses {
                addrs: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
                ttl_secs: 3600,
            };
            f.on_dns(&name, &answer, now).unwrap();
        }
        for job in f.next_jobs(now, 10).unwrap() {
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

fn stored(job: &FetchJob) -> FetchReport {
    let mut report =
        test_support::reports::stored(job.job, 200, "50-dl-00000000000000000001.warc.gz");
    let page = test_support::reports::page_mut(&mut report);
    page.wire_bytes = 100;
    page.body_bytes = 10;
    page.timing.first_byte_ms = 1;
    page.timing.total_ms = 1;
    report
}

/// Publishes one request file of `urls` for `app`.
fn publish_requests(spool: &Spool, app: &spool::AppId, urls: &[&str]) {
    let urls: Vec<_> = urls.iter().map(|u| (*u, None, None)).collect();
    publish_hinted(spool, app, &urls);
}

/// Publishes one request file of `(url, depth, hops)` for `app`; a URL with a
/// depth gets the validators `etag="d<depth>"`, `modified=<depth>` too.
fn publish_hinted(spool: &Spool, app: &spool::AppId, urls: &[(&str, Option<u32>, Option<u32>)]) {
    let publisher = Publisher::new(
        spool.requests(app).unwrap(),
        ComponentId::new("test").unwrap(),
    )
    .unwrap();
    let priority = Priority::NORMAL;
    let mut w = RequestWriter::new(Vec::new(), RequestHeader { priority }).unwrap();
    for &(url, depth, hops) in urls {
        let hints = Hints {
            depth,
            hops,
            validators: Validators {
                etag: depth.map(|d| format!("\"d{d}\"")),
                modified: depth.map(u64::from),
            },
            ..Hints::default()
        };
        w.write(url, &hints).unwrap();
    }
    let bytes = w.finish().unwrap();
    publisher
        .publish(priority, FileKind::Requests, &bytes)
        .unwrap();
}

#[test]
fn a_requeued_url_survives_a_restart_and_is_dispatched_again() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::new(dir.path().join("spool"));
    let db = dir.path().join("db");
    let app = spool::AppId::new("bfs").unwrap();
    publish_hinted(
        &spool,
        &app,
        &[
            ("http://a.test/1", Some(3), Some(1)),
            ("http://a.test/2", Some(4), None),
        ],
    );

    let mut f = Frontier::open(&db, spool.clone(), config()).unwrap();
    let first = pages(&mut f, T0);
    assert_eq!(first.len(), 1, "one request per host in flight");
    assert_eq!(first[0].url, "http://a.test/1");
    assert!(f.on_report(&stored(&first[0]), T0).unwrap());
    assert_eq!(f.app_progress(&app).pages_total, 1);
    assert_eq!(f.stats().urls_queued, 1);

    // The downloader died before committing the page: put it back.
    assert_eq!((first[0].depth, first[0].hops), (Some(3), Some(1)));
    assert!(
        f.requeue(
            &app,
            "http://a.test/1",
            (first[0].depth, first[0].hops, first[0].validators.clone()),
            T0 + 1
        )
        .unwrap()
    );
    let progress = f.app_progress(&app);
    assert_eq!((progress.pages_total, progress.queued_urls), (0, 2));
    // A URL of a blacklisted host ends with an outcome instead.
    f.blacklist_add("b.test".parse().unwrap()).unwrap();
    assert!(
        !f.requeue(
            &app,
            "http://b.test/x",
            (None, None, Validators::default()),
            T0 + 1
        )
        .unwrap()
    );
    drop(f); // kill -9

    let mut f = Frontier::open(&db, spool, config()).unwrap();
    let mut fetched = Vec::new();
    for step in 0..4 {
        let now = T0 + 10 + step;
        for job in pages(&mut f, now) {
            assert!(f.on_report(&stored(&job), now).unwrap());
            assert_eq!(job.validators.modified, job.depth.map(u64::from));
            fetched.push((job.url, job.depth, job.hops, job.validators.etag));
        }
    }
    // The requeued URL keeps its depth, hops and validators hints.
    let etag = |s: &str| Some(s.to_owned());
    assert_eq!(
        fetched,
        [
            ("http://a.test/2".to_owned(), Some(4), None, etag("\"d4\"")),
            (
                "http://a.test/1".to_owned(),
                Some(3),
                Some(1),
                etag("\"d3\"")
            ),
        ]
    );
    let progress = f.app_progress(&app);
    assert_eq!(progress.pages_total, 2);
    assert_eq!(progress.outcomes_total, 1);
    assert!(progress.is_idle());
}

/// Issue 11: the earlier run's last request to a host may have ended just before
/// the crash; after a restart the host rests one interval before its next one.
#[test]
fn after_a_restart_no_host_is_contacted_before_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::new(dir.path().join("spool"));
    let db = dir.path().join("db");
    let app = spool::AppId::new("bfs").unwrap();
    publish_requests(
        &spool,
        &app,
        &["http://a.test/1", "http://a.test/2", "http://a.test/3"],
    );
    let polite = || FrontierConfig {
        interval_ms: 1000,
        min_interval_ms: 1000,
        ..config()
    };

    let mut f = Frontier::open(&db, spool.clone(), polite()).unwrap();
    f.rest_after_restart(T0); // A fresh state: nothing to wait for.
    // robots.txt at T0, then the first page one interval later.
    let mut first = Vec::new();
    for step in 0..3 {
        first.extend(pages(&mut f, T0 + step * 1001));
    }
    assert_eq!(first.len(), 1);
    let sent = T0 + 2002;
    assert!(f.on_report(&stored(&first[0]), sent).unwrap());
    drop(f); // kill -9 right after the request ended

    let restart = sent + 100;
    let mut f = Frontier::open(&db, spool, polite()).unwrap();
    f.rest_after_restart(restart);
    for now in [restart, restart + 500, restart + 1000] {
        let early = pages(&mut f, now);
        assert!(
            early.is_empty(),
            "contacted {} ms after the restart: {early:?}",
            now - restart
        );
    }
    let due = f.next_wakeup().expect("the host waits for a timer");
    assert_eq!(due, restart + 1001);
    let jobs = pages(&mut f, due);
    assert_eq!(jobs.len(), 1, "the host is ready once its interval is over");
}

/// Issue 11 (found by the chaos test): a downloader killed right after its
/// request was answered never reports it; the host must still rest one interval
/// (or `lost_job_rest_ms`, if longer: the server may still be serving it) before
/// the URL goes out again. A job handed back unstarted needs no rest.
#[test]
fn a_job_lost_with_its_downloader_rests_its_host_but_a_returned_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::new(dir.path().join("spool"));
    let app = spool::AppId::new("bfs").unwrap();
    publish_requests(&spool, &app, &["http://a.test/1"]);
    let config = FrontierConfig {
        interval_ms: 1000,
        min_interval_ms: 1000,
        lost_job_rest_ms: 3000,
        ..config()
    };
    let mut f = Frontier::open(&dir.path().join("db"), spool, config).unwrap();
    let mut jobs = Vec::new();
    for step in 0..3 {
        jobs.extend(pages(&mut f, T0 + step * 1001));
    }
    assert_eq!(jobs.len(), 1);
    let t = T0 + 2002;

    // Handed back unstarted: out again at once.
    assert!(f.on_returned(jobs[0].job, t).unwrap());
    let again = pages(&mut f, t);
    assert_eq!(again.len(), 1, "a returned job goes out again at once");

    // Its downloader vanished: the host rests lost_job_rest_ms (longer than its
    // interval here) from then.
    let lost = t + 5;
    assert!(f.on_lost(again[0].job, lost).unwrap());
    for now in [lost, lost + 1001, lost + 2000, lost + 3000] {
        assert!(
            pages(&mut f, now).is_empty(),
            "sent {} ms after the loss",
            now - lost
        );
    }
    let third = pages(&mut f, lost + 3001);
    assert_eq!(third.len(), 1);
    assert_eq!(third[0].url, "http://a.test/1");
    assert!(!f.on_lost(again[0].job, lost).unwrap(), "an unknown job");
}
