//! Fetches per second against an in-process keep-alive server with 13 KB bodies, on
//! one core (a current-thread runtime runs client and server).
//!
//! `cargo bench --release -p downloader` (or `cargo bench -p downloader -- N` for N
//! fetches per round). Bounded: a few thousand fetches, a few seconds.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::net::SocketAddr;
use std::time::Instant;

use downloader::{FetchJob, Fetcher, FetcherConfig, Target};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const BODY_BYTES: usize = 13 * 1024;

async fn server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let body = "x".repeat(BODY_BYTES);
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let response: &'static [u8] = Box::leak(response.into_bytes().into_boxed_slice());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut have = 0;
                loop {
                    match s.read(&mut buf[have..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => have += n,
                    }
                    if buf[..have].windows(4).any(|w| w == b"\r\n\r\n") {
                        have = 0;
                        if s.write_all(response).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

async fn round(fetcher: &Fetcher, job: &FetchJob, fetches: usize, parallel: usize) -> f64 {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..parallel {
        let (f, job) = (fetcher.clone(), job.clone());
        let n = fetches / parallel + usize::from(w < fetches % parallel);
        tasks.push(tokio::spawn(async move {
            for _ in 0..n {
                let got = f.fetch(&job).await.expect("fetch");
                assert_eq!(got.payload.len(), BODY_BYTES);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    fetches as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let fetches: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let addr = server().await;
        let fetcher = Fetcher::new(FetcherConfig {
            allow_private: true,
            pool_max_idle_per_key: 64,
            ..FetcherConfig::default()
        })
        .unwrap();
        let target = Target::parse(&format!("http://bench.test:{}/page", addr.port())).unwrap();
        let job = FetchJob::get(target, addr);
        round(&fetcher, &job, 200, 8).await; // warm-up: fill the pool
        for parallel in [1, 8, 64] {
            let rate = round(&fetcher, &job, fetches, parallel).await;
            println!(
                "fetch/keep-alive/13KB parallel={parallel:<3} {rate:>9.0} fetches/s ({fetches} fetches, one core)"
            );
        }
    });
}
