//! Chained jobs (`spool::protocol::After`): a job chained after another starts no
//! sooner than its gap after that job's response ended, and is handed back
//! (`Returned`) without a request when that job failed, was answered 429 or 503,
//! or is not pending at this downloader. A chain of several runs in order, one
//! request at a time, and once cut short hands back the rest, the last first.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use spool::protocol::{After, FetchJob, FetchResult, JobId};

use crate::manager::{TestManager, closed_port, config, page, start, stored};
use crate::site::Site;

fn chained(id: u64, url: &str, addr: SocketAddr, after: u64, gap_ms: u32) -> FetchJob {
    FetchJob {
        after: Some(After {
            job: JobId(after),
            gap_ms,
        }),
        ..page(id, url, addr)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chained_job_starts_its_gap_after_the_first_ends_or_is_handed_back() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let mut dl = start(config(), manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;
    let dead = closed_port().await;
    let dead_url = format!("http://dead.test:{}/", dead.port());
    m.fetch(vec![
        // Sent one after the other, 300 ms apart from end to start.
        page(1, &site.url("/slow/100/a"), site.addr),
        chained(2, &site.url("/b"), site.addr, 1, 300),
        // The first fails to connect, or asks for back-off: no second request.
        page(3, &dead_url, dead),
        chained(4, &site.url("/never-4"), site.addr, 3, 0),
        page(5, &site.url("/status/503"), site.addr),
        chained(6, &site.url("/never-6"), site.addr, 5, 0),
        page(7, &site.url("/status/429"), site.addr),
        chained(8, &site.url("/never-8"), site.addr, 7, 0),
        // Follows a job this downloader does not hold.
        chained(9, &site.url("/never-9"), site.addr, 99, 0),
        // A 404 is a response like any: the chained job goes.
        page(10, &site.url("/status/404"), site.addr),
        chained(11, &site.url("/c"), site.addr, 10, 0),
    ])
    .await;
    m.reports_for(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]).await;
    let seen = &m.seen;
    let (first, second) = (stored(seen.result(1)), stored(seen.result(2)));
    assert!(
        second.timing.sent_us >= first.timing.received_us + 300_000,
        "sent {} us after the first response ended, gap 300 ms",
        second.timing.sent_us as i64 - first.timing.received_us as i64
    );
    for handed_back in [4, 6, 8, 9] {
        assert!(
            matches!(seen.result(handed_back), FetchResult::Returned),
            "job {handed_back}: {:?}",
            seen.result(handed_back)
        );
    }
    assert_eq!(stored(seen.result(11)).status, 200);
    assert!(stored(seen.result(11)).timing.sent_us >= stored(seen.result(10)).timing.received_us);
    // Nothing was requested for the jobs handed back: the site saw jobs 1, 2, 5,
    // 7, 10 and 11 only (3 went to the closed port).
    assert_eq!(site.requests.load(Ordering::SeqCst), 6);
    dl.shutdown.cancel();
    dl.join().await.unwrap();
    drop(m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_chain_runs_in_order_and_a_503_hands_back_the_rest_last_first() {
    let site = Site::start().await;
    let manager = TestManager::start().await;
    let mut dl = start(config(), manager.addr());
    let mut m = manager.accept(dl.spool.path()).await;
    m.fetch(vec![
        page(1, &site.url("/slow/20/a"), site.addr),
        chained(2, &site.url("/slow/20/b"), site.addr, 1, 0),
        chained(3, &site.url("/slow/20/c"), site.addr, 2, 0),
        chained(4, &site.url("/status/503"), site.addr, 3, 0),
        chained(5, &site.url("/never-5"), site.addr, 4, 0),
        chained(6, &site.url("/never-6"), site.addr, 5, 0),
        chained(7, &site.url("/never-7"), site.addr, 6, 0),
    ])
    .await;
    m.reports_for(&[1, 2, 3, 4, 5, 6, 7]).await;
    let seen = &m.seen;
    // One request at a time, in the chain's order.
    for (before, after) in [(1, 2), (2, 3), (3, 4)] {
        let (b, a) = (stored(seen.result(before)), stored(seen.result(after)));
        assert!(
            a.timing.sent_us >= b.timing.received_us,
            "job {after} sent before job {before}'s response ended"
        );
    }
    assert_eq!(stored(seen.result(4)).status, 503);
    // The rest handed back without a request, the last first, so that the
    // manager's put-backs at the head of the queue keep the chain's order.
    let returned: Vec<u64> = seen
        .order
        .iter()
        .map(|j| j.0)
        .filter(|j| matches!(seen.result(*j), FetchResult::Returned))
        .collect();
    assert_eq!(returned, [7, 6, 5]);
    assert_eq!(site.requests.load(Ordering::SeqCst), 4);
    dl.shutdown.cancel();
    dl.join().await.unwrap();
    drop(m);
}
