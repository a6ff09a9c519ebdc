//! The concurrency limit, changed while fetches wait.

use std::sync::Arc;
use std::time::{Duration, Instant};

use downloader::{Fetcher, FetcherConfig};
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

use crate::support::{Server, config, read_request, response};

/// Waits until `cond` holds, for at most a second.
async fn eventually(mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "condition never held"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn third_fetch_waits_until_the_limit_is_raised() {
    // The server logs each request, then holds its answer until the gate opens.
    let gate = Arc::new(Semaphore::new(0));
    let server_gate = gate.clone();
    let server = Server::start(move |mut s, log| {
        let gate = server_gate.clone();
        async move {
            while let Some(req) = read_request(&mut s).await {
                log.lock().unwrap().push(req);
                gate.acquire().await.unwrap().forget();
                let _ = s.write_all(&response("", b"done")).await;
            }
        }
    })
    .await;
    let f = Fetcher::new(FetcherConfig {
        concurrency: 2,
        ..config()
    })
    .unwrap();
    let tasks: Vec<_> = (0..3)
        .map(|i| {
            let (f, job) = (f.clone(), server.job(&format!("/{i}")));
            tokio::spawn(async move { f.fetch(&job).await })
        })
        .collect();

    eventually(|| server.request_count() == 2).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        server.request_count(),
        2,
        "the third fetch waits for a permit"
    );
    assert_eq!(f.in_flight(), 2);

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
    let server_gate = gate.clone();
    let server = Server::start(move |mut s, log| {
        let gate = server_gate.clone();
        async move {
            while let Some(req) = read_request(&mut s).await {
                log.lock().unwrap().push(req);
                gate.acquire().await.unwrap().forget();
                let _ = s.write_all(&response("", b"done")).await;
            }
        }
    })
    .await;
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
    let waiting = [spawn(2), spawn(3)];
    gate.add_permits(2);
    for t in running {
        t.await.unwrap().unwrap();
    }
    // Both earlier fetches finished; the limit is now 1: exactly one more may run.
    eventually(|| server.request_count() == 3).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.request_count(), 3);
    assert_eq!(f.in_flight(), 1);
    gate.add_permits(2);
    for t in waiting {
        t.await.unwrap().unwrap();
    }
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
    let blocked = tokio::time::timeout(Duration::from_millis(50), f.acquire()).await;
    assert!(blocked.is_err(), "the only slot is taken");
    let got = f.fetch_with_permit(&server.job("/"), permit).await.unwrap();
    assert_eq!(&got.payload[..], b"ok");
    assert_eq!(f.in_flight(), 0, "the slot is released with the fetch");
    drop(f.acquire().await);
}
