//! What the manager controls: concurrency, drain, shutdown, reconnects, refusal.

use std::sync::atomic::Ordering;
use std::time::Duration;

use downloader::DownloaderError;
use spool::protocol::{ByeReason, FetchResult, JobId, Message};
use test_support::wait::until_async;

use crate::manager::{
    TestManager, WAIT, config, page, published, records, start, start_with_token,
};
use crate::site::Site;

fn is_stored(result: &FetchResult) -> bool {
    matches!(result, FetchResult::Stored(_))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_concurrency_takes_effect() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let one = downloader::DownloaderConfig {
        concurrency: 1,
        ..config()
    };
    let mut dl = start(one, manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;

    let slow = |i: u64| page(i, &site.url(&format!("/slow/150/{i}")), site.addr);
    m.fetch((1..=3).map(slow).collect()).await;
    m.reports_for(&[1, 2, 3]).await;
    assert_eq!(site.max_active.load(Ordering::SeqCst), 1);
    assert!(m.seen.heartbeats.iter().all(|l| l.concurrency == 1));

    m.send(Message::SetConcurrency { limit: 4 }).await;
    m.fetch((11..=14).map(slow).collect()).await;
    m.reports_for(&[11, 12, 13, 14]).await;
    assert_eq!(site.max_active.load(Ordering::SeqCst), 4);
    let beats = m.seen.heartbeats.len();
    m.until("a heartbeat", |s| s.heartbeats.len() > beats).await;
    let load = m.seen.heartbeats.last().unwrap();
    assert_eq!(load.concurrency, 4);
    assert!(m.seen.heartbeats.iter().any(|l| l.done_per_sec > 0.0));
    assert!(m.seen.heartbeats.iter().any(|l| l.bytes_per_sec > 0));
    dl.shutdown.cancel();
    dl.join().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_returns_unstarted_jobs_publishes_and_says_bye() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let slow_batches = downloader::DownloaderConfig {
        concurrency: 1,
        max_batch_age_ms: 60_000,
        ..config()
    };
    let mut dl = start(slow_batches, manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;

    let slow = |i: u64| page(i, &site.url(&format!("/slow/400/{i}")), site.addr);
    m.fetch((1..=3).map(slow).collect()).await;
    m.until("a heartbeat with a fetch in flight", |s| {
        s.heartbeats
            .iter()
            .any(|l| l.in_flight == 1 && l.queued == 2)
    })
    .await;
    m.send(Message::Drain { grace_ms: 5000 }).await;
    m.fetch(vec![slow(4)]).await;
    m.until("Bye", |s| s.bye.is_some()).await;

    let seen = &m.seen;
    assert!(is_stored(seen.result(1)), "{seen:#?}");
    for j in [2, 3, 4] {
        assert_eq!(seen.result(j), &FetchResult::Returned, "job {j}");
    }
    assert_eq!(seen.committed_jobs(), [JobId(1)]);
    assert!(seen.committed[0].2, "Committed after publishing");
    assert_eq!(seen.bye.as_ref().unwrap().0, ByeReason::Drained);
    dl.join().await.unwrap();
    assert_eq!(published(&dl.pages()).len(), 1);
    assert_eq!(
        site.requests.load(Ordering::SeqCst),
        1,
        "returned jobs never ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_stops_running_jobs_after_the_grace() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let mut dl = start(config(), manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;

    m.fetch(vec![
        page(1, &site.url("/a"), site.addr),
        page(2, &site.url("/slow/4000/b"), site.addr),
    ])
    .await;
    m.reports_for(&[1]).await;
    let n = m.seen.heartbeats.len();
    m.until("job 2 running", |s| {
        s.heartbeats[n..].iter().any(|l| l.in_flight == 1)
    })
    .await;
    let drained = std::time::Instant::now();
    m.send(Message::Drain { grace_ms: 200 }).await;
    m.until("Bye", |s| s.bye.is_some()).await;
    let took = drained.elapsed();
    assert!(
        (Duration::from_millis(200)..Duration::from_millis(2000)).contains(&took),
        "{took:?}"
    );
    assert!(is_stored(m.seen.result(1)));
    assert_eq!(m.seen.result(2), &FetchResult::Returned);
    assert_eq!(m.seen.committed_jobs(), [JobId(1)]);
    dl.join().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_token_drains_with_bye_shutting_down() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let long_batches = downloader::DownloaderConfig {
        max_batch_age_ms: 60_000,
        ..config()
    };
    let mut dl = start(long_batches, manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;
    m.fetch(vec![page(1, &site.url("/a"), site.addr)]).await;
    m.reports_for(&[1]).await;
    dl.shutdown.cancel();
    m.until("Bye", |s| s.bye.is_some()).await;
    assert_eq!(m.seen.committed_jobs(), [JobId(1)]);
    assert_eq!(m.seen.bye.as_ref().unwrap().0, ByeReason::ShuttingDown);
    // The manager heard first that no new job should come.
    assert!(
        matches!(m.seen.states.as_slice(), [(s, 1)] if s.draining),
        "{:?}",
        m.seen.states
    );
    dl.join().await.unwrap();
    assert_eq!(published(&dl.pages()).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_after_the_connection_drops() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let mut dl = start(config(), manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;

    // Job 1 is in flight when the manager goes away.
    m.fetch(vec![page(1, &site.url("/slow/500/one"), site.addr)])
        .await;
    let requests = site.requests.clone();
    until_async("job 1 to reach the site", WAIT, || {
        requests.load(Ordering::SeqCst) >= 1
    })
    .await;
    drop(m);

    let mut m = manager.accept(dl.spool.path()).await;
    m.fetch(vec![page(2, &site.url("/two"), site.addr)]).await;
    m.committed(&[2]).await;
    // Job 1 finishes and is published in the background. The new connection gets
    // no report of it (a manager that did not restart dispatches it again), but
    // the batch's `Committed` names it: a manager that restarted meanwhile kept
    // its page as awaiting a commit and takes this one instead of fetching it
    // again.
    let slow = site.url("/slow/500/one");
    let pages = dl.pages();
    until_async("job 1's page to be published", WAIT, || {
        published(&pages)
            .iter()
            .flat_map(|f| records(f))
            .any(|r| r.headers.target_uri() == Some(slow.as_str()))
    })
    .await;
    m.committed(&[1, 2]).await;
    // Everything the downloader says from now on is read: up to a heartbeat sent
    // after job 1 was committed.
    let beats = m.seen.heartbeats.len();
    m.until("a heartbeat after job 1 was committed", |s| {
        s.heartbeats.len() > beats
    })
    .await;
    assert!(is_stored(m.seen.result(2)));
    assert!(!m.seen.reports.contains_key(&JobId(1)));
    assert_eq!(m.seen.committed_jobs(), [JobId(1), JobId(2)], "each once");

    dl.shutdown.cancel();
    dl.join().await.unwrap();
    let uris: Vec<String> = published(&dl.pages())
        .iter()
        .flat_map(|f| records(f))
        .filter_map(|r| r.headers.target_uri().map(str::to_owned))
        .collect();
    assert!(uris.contains(&site.url("/slow/500/one")), "{uris:?}");
    assert!(uris.contains(&site.url("/two")), "{uris:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_ends_run_with_the_managers_reason() {
    let manager = TestManager::with_token("another-secret").await;
    let mut dl = start_with_token(config(), manager.addr(), "s3cret");
    let accept = manager.accept_refused();
    let (err, ()) = tokio::join!(dl.join(), accept);
    let err = err.unwrap_err();
    assert!(matches!(err, DownloaderError::Refused { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("wrong token for downloader dl-test"),
        "{text}"
    );
    assert!(!text.contains('\n'), "one line: {text}");
}
