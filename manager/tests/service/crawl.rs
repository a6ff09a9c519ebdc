//! A small crawl end to end: request file -> DNS through a resolver -> robots.txt
//! first (one in its report, as a downloader sends a small one; one read from the
//! robots file a downloader publishes for a large one) -> pages, one request
//! per host at a time and the interval between -> outcomes -> the application sees
//! its crawl finish; then a clean shutdown drains the downloader.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use spool::protocol::{AdminCommand, AdminReply, ByeReason, FetchPurpose, Message, Role};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_fetches_robots_first_then_pages_one_per_host_and_finishes() {
    let mut h = Harness::start(|_| {}).await;
    let all = urls(&["a.test", "b.test"], 3);
    h.publish_requests("bfs", &all);
    let mut app = App::join(&h, "bfs").await;

    // DNS: both names in one batch to the only resolver.
    let mut resolver = Resolver::join(&h, "res-1").await;
    let (request, mut hosts) = resolver.batch().await;
    hosts.sort();
    assert_eq!(hosts, ["a.test", "b.test"]);
    resolver.answer(request, &hosts).await;
    let resolver = resolver.serve();

    // robots.txt before any page of a host.
    let mut dl = Downloader::join(&h, "dl-1", 4).await;
    let mut robots = Vec::new();
    while robots.len() < 2 {
        for job in dl.batch().await {
            assert_eq!(job.purpose, FetchPurpose::Robots, "{}", job.url);
            robots.push(job);
        }
    }
    for job in &robots {
        if job.url == "http://a.test/robots.txt" {
            let body = "User-agent: *\nDisallow: /p2\n";
            dl.robots_inline(job, &robots_response(body)).await;
        } else {
            assert_eq!(job.url, "http://b.test/robots.txt");
            dl.robots_stored(job, ROBOTS_404).await;
        }
    }

    // Pages: never two unreported jobs for one host, and the interval between.
    let mut fetched = BTreeSet::new();
    let mut last_report: HashMap<String, Instant> = HashMap::new();
    let mut seq = 0;
    while fetched.len() < 5 {
        let mut outstanding = dl.batch().await;
        // More batches may come while these are unreported: none for their hosts.
        while let Some(more) = dl.batch_within(Duration::from_millis(300)).await {
            outstanding.extend(more);
        }
        let mut busy = BTreeSet::new();
        for job in &outstanding {
            assert_eq!(job.purpose, FetchPurpose::Page);
            let host = host_of(&job.url);
            assert!(
                busy.insert(host.clone()),
                "two requests in flight to {host}"
            );
            if let Some(at) = last_report.get(&host) {
                assert!(
                    at.elapsed() >= Duration::from_millis(150),
                    "{host} contacted again {:?} after its last request",
                    at.elapsed()
                );
            }
        }
        seq += 1;
        let file = format!("50-dl-1-{seq:020}.warc.gz");
        let reports = outstanding.iter().map(|j| stored(j, 200, &file)).collect();
        dl.report(reports).await;
        dl.commit(&file, outstanding.iter().map(|j| j.job).collect())
            .await;
        for job in outstanding {
            last_report.insert(host_of(&job.url), Instant::now());
            assert!(fetched.insert(job.url.clone()), "{} fetched twice", job.url);
        }
    }
    let expected: BTreeSet<String> = all
        .iter()
        .filter(|u| *u != "http://a.test/p2")
        .cloned()
        .collect();
    assert_eq!(fetched, expected);

    // The application learns its crawl is over: 5 pages and 1 robots outcome.
    let done = app
        .progress_until(|p| p.is_idle() && p.pages_total + p.outcomes_total == 6)
        .await;
    assert_eq!((done.pages_total, done.outcomes_total), (5, 1));
    assert!(
        h.robots_files().is_empty(),
        "robots files are deleted once read"
    );

    let AdminReply::Status(status) = admin(&h, ADMIN_TOKEN, AdminCommand::Status).await.unwrap()
    else {
        panic!("not a status reply");
    };
    assert_eq!(status.pages_total, 5);
    assert_eq!(status.queued_urls, 0);
    let roles: Vec<(Role, String)> = status
        .components
        .iter()
        .map(|c| (c.role, c.id.to_string()))
        .collect();
    for want in [(Role::Downloader, "dl-1"), (Role::Resolver, "res-1")] {
        assert!(roles.contains(&(want.0, want.1.to_owned())), "{roles:?}");
    }
    let dl_status = status
        .components
        .iter()
        .find(|c| c.role == Role::Downloader)
        .unwrap();
    assert_eq!(dl_status.load.concurrency, 4);

    // SIGTERM: the downloader is asked to drain, says so, and the manager stops.
    h.shutdown.cancel();
    loop {
        match within("Drain", dl.client.next()).await {
            Some(Message::Drain { grace_ms }) => {
                assert_eq!(grace_ms, 500);
                break;
            }
            Some(_) => continue,
            None => panic!("closed before Drain"),
        }
    }
    let bye = Message::Bye {
        reason: ByeReason::Drained,
        detail: String::new(),
    };
    dl.client.send(bye).await;
    let started = Instant::now();
    let task = h.task.take().unwrap();
    within("the manager to stop", task).await.unwrap().unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(1_500),
        "did not wait for the grace"
    );
    within("the resolver to be let go", resolver).await.unwrap();
}
