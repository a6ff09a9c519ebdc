//! The concurrency limit, changed while fetches wait.
//!
//! Whether a fetch waits for a slot is judged on one poll of it ([`poll_once`]), not
//! by waiting a while for a request that should not come: the slot is the fetch's
//! first await (`Fetcher::fetch`), so one turn either takes a slot or leaves the
//! fetch waiting for one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use downloader::{Fetcher, FetcherConfig};
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

use crate::support::{Server, config, read_request, response};

/// Waits until `cond` holds, for at most a second.
async fn eventually(cond: impl FnMut() -> bool) {
    test_support::wait::until_async("the condition", Duration::from_secs(1), cond).await;
}

/// Polls `fut` once, as a runtime's first turn of it would (a waker that does
/// nothing: whoever polls it next registers its own).
fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(Waker::noop()))
}

/// A server that logs each request, then holds its answer until `gate` gives a
/// permit.
async fn gated_server(gate: &Arc<Semaphore>) -> Server {
    let server_gate = gate.clone();
    Server::start(move |mut s, log| {
        let gate = server_gate.clone();
        async move {
            while let Some(req) = read_request(&mut s).await {
                log.lock().unwrap().push(req);
                gate.acquire().await.unwrap().forget();
                let _ = s.write_all(&response("", b"done")).await;
            }
        }
    })
    .await
}

#[tokio::test]
async fn third_fetch_waits_until_the_limit_is_raised() {
    let gate = Arc::new(Semaphore::new(0));
    let server = gated_server(&gate).await;
    let f = Fetcher::new(FetcherConfig {
        concurrency: 2,
        ..config()
    })
    .unwrap();
    let fetch = |i: usize| {
        let (f, job) = (f.clone(), server.job(&format!("/{i}")));
        Box::pin(async move { f.fetch(&job).await })
    };
    let mut tasks: Vec<_> = (0..2).map(|i| tokio::spawn(fetch(i))).collect();
    eventually(|| server.request_count() == 2).await;

    let mut third = fetch(2);
    assert!(poll_once(&mut third).is_pending());
    assert_eq!(f.in_flight(), 2, "the third fetch waits for a permit");
    assert_eq!(server.request_count(), 2);
    tasks.push(tokio::spawn(third));

    f.set_concurrency(3);
    assert_eq!(f.concurrency(), 3);
    eventually(|| server.request_count() == 3).await;

    gate.add_permits(3);
    for t in tasks {
        let got = t.await.unwrap().unwrap();
        assert_eq!(&got.payload[..], b"done");
    }
    assert_eq!(f.in_flight(), 0);
}

#[tokio::test]
async fn lowering_the_limit_lets_running_fetches_finish() {
    let gate = Arc::new(Semaphore::new(0));
    let server = gated_server(&gate).await;
    let f = Fetcher::new(FetcherConfig {
        concurrency: 2,
        ..config()
    })
    .unwrap();
    let spawn = |i: usize| {
        let (f, job) = (f.clone(), server.job(&format!("/{i}")));
        tokio::spawn(async move { f.fetch(&job).await })
    };
    let running = [spawn(0), spawn(1)];
    eventually(|| server.request_count() == 2).await;
    f.set_concurrency(1);
    // Two more fetches queue for a slot (first come, first served).
    let mut claims = [Box::pin(f.acquire()), Box::pin(f.acquire())];
    for c in &mut claims {
        assert!(poll_once(c).is_pending(), "a slot over the limit");
    }
    gate.add_permits(2);
    for t in running {
        t.await.unwrap().unwrap();
    }
    // Both earlier fetches finished; the limit is now 1: exactly one more may run.
    let [mut first, mut second] = claims;
    let Poll::Ready(permit) = poll_once(&mut first) else {
        panic!("the first waiting fetch got no slot once the running ones finished");
    };
    assert!(
        poll_once(&mut second).is_pending(),
        "two fetches may run under a limit of 1"
    );
    assert_eq!(f.in_flight(), 1);
    let third = {
        let (f, job) = (f.clone(), server.job("/2"));
        tokio::spawn(async move { f.fetch_with_permit(&job, permit).await })
    };
    eventually(|| server.request_count() == 3).await;
    gate.add_permits(1);
    third.await.unwrap().unwrap();
    // Its slot goes to the one still waiting.
    let permit = second.await;
    gate.add_permits(1);
    f.fetch_with_permit(&server.job("/3"), permit)
        .await
        .unwrap();
    assert_eq!(server.request_count(), 4);
    assert_eq!(f.in_flight(), 0);
}

#[tokio::test]
async fn a_permit_taken_by_the_caller_counts_and_is_released() {
    let server = Server::respond(response("", b"ok")).await;
    let f = Fetcher::new(FetcherConfig {
        concurrency: 1,
        ..config()
    })
    .unwrap();
    let permit = f.acquire().await;
    assert_eq!(f.in_flight(), 1);
    assert!(
        poll_once(&mut Box::pin(f.acquire())).is_pending(),
        "the only slot is taken"
    );
    let got = f.fetch_with_permit(&server.job("/"), permit).await.unwrap();
    assert_eq!(&got.payload[..], b"ok");
    assert_eq!(f.in_flight(), 0, "the slot is released with the fetch");
    drop(f.acquire().await);
}
