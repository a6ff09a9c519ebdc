//! First-byte, total and connect timeouts.

use std::time::{Duration, Instant};

use downloader::{FetchError, Fetcher, FetcherConfig, JobLimits};
use spool::OutcomeReason;
use tokio::net::{TcpSocket, TcpStream};

use crate::support::{Server, config, fetcher, job_for, read_request, send};

#[tokio::test]
async fn silent_server_hits_first_byte_timeout() {
    let server = Server::start(|mut s, _| async move {
        read_request(&mut s).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await;
    let f = Fetcher::new(FetcherConfig {
        first_byte_timeout: Duration::from_millis(200),
        ..config()
    })
    .unwrap();
    let start = Instant::now();
    let err = f.fetch(&server.job("/")).await.unwrap_err();
    assert!(matches!(err, FetchError::FirstByteTimeout { .. }), "{err}");
    assert_eq!(err.class(), OutcomeReason::Timeout);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_millis(1500),
        "{took:?}"
    );
}

#[tokio::test]
async fn job_limit_lowers_the_first_byte_timeout() {
    let server = Server::start(|mut s, _| async move {
        read_request(&mut s).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await;
    let mut job = server.job("/");
    job.limits = JobLimits {
        first_byte_timeout: Some(Duration::from_millis(150)),
        ..JobLimits::default()
    };
    let start = Instant::now();
    let err = fetcher().fetch(&job).await.unwrap_err();
    assert!(
        matches!(err, FetchError::FirstByteTimeout { after } if after == Duration::from_millis(150)),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_millis(400));
}

#[tokio::test]
async fn stall_mid_body_hits_total_timeout() {
    let server = Server::start(|mut s, _| async move {
        read_request(&mut s).await;
        send(
            &mut s,
            b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nthe first bytes",
        )
        .await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await;
    let mut job = server.job("/");
    job.limits = JobLimits {
        total_timeout: Some(Duration::from_millis(300)),
        ..JobLimits::default()
    };
    let start = Instant::now();
    let err = fetcher().fetch(&job).await.unwrap_err();
    assert!(
        matches!(err, FetchError::TotalTimeout { after } if after == Duration::from_millis(300)),
        "{err}"
    );
    assert_eq!(err.class(), OutcomeReason::Timeout);
    assert!(start.elapsed() < Duration::from_millis(1500));
}

#[tokio::test]
async fn full_backlog_hits_connect_timeout() {
    // A listener that never accepts, with a backlog of one: once its queue is full the
    // kernel drops further SYNs, so a connect hangs (Linux behaviour on loopback).
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..4 {
        if let Ok(Ok(s)) =
            tokio::time::timeout(Duration::from_millis(100), TcpStream::connect(addr)).await
        {
            fillers.push(s);
        }
    }
    let f = Fetcher::new(FetcherConfig {
        connect_timeout: Duration::from_millis(200),
        ..config()
    })
    .unwrap();
    let err = f
        .fetch(&job_for(
            &format!("http://site.test:{}/", addr.port()),
            addr,
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::ConnectTimeout { .. }), "{err}");
    assert_eq!(err.class(), OutcomeReason::Timeout);
    drop(listener);
}
