//! One downloader service end to end: pages per second and CPU milliseconds per
//! page, with jobs injected by a test-side manager (the real control protocol on
//! 127.0.0.1) and pages served by an in-process keep-alive HTTP server (13 KB HTML
//! pages of word soup, which gzip shrinks about as much as real HTML). Every page
//! goes through the whole service: job queue, fetch, WARC record pair, gzip, batch
//! file, publish (fsync, rename), `FetchReports` and `Committed`. Politeness plays
//! no part (that is the manager's job): every URL is on one host.
//!
//! `cargo bench -p downloader --bench service [-- PAGES [CONCURRENCY...]]`
//! (defaults: 30000 pages, concurrency 64 and 256). Bounded: a few seconds per run.
//!
//! Figures printed per run:
//! - pages/s: pages reported `Stored` (records written) per wall second, from the
//!   first `FetchBatch` to the last report; CPU is counted over the same span. The
//!   last batch is committed up to `max_batch_age_ms` (2 s) later: durability
//!   lags by at most that, throughput does not;
//! - CPU ms/page of the downloader alone: user + system time of its threads (its
//!   tokio workers, named `dl-*`, and the `warc-writer` thread), from
//!   `/proc/self/task/*/stat` (USER_HZ ticks, 10 ms resolution, summed over
//!   seconds);
//! - CPU ms/page of the whole process (`getrusage(RUSAGE_SELF)`): downloader plus
//!   the in-process HTTP server and manager.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use downloader::{ControlSettings, DownloaderConfig};
use nix::sys::resource::{UsageWho, getrusage};
use spool::protocol::{
    FetchJob, FetchLimits, FetchPurpose, FetchResult, JobId, Message, Role, ServerConfig, Token,
    server_handshake,
};
use spool::{AppId, ComponentId};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

const PAGE_BYTES: usize = 13 * 1024;
const TOKEN: &str = "bench-token";
/// Jobs per `FetchBatch`.
const BATCH: usize = 500;

/// A 13 KB HTML page of pseudo-random words.
fn page() -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "crawler",
        "the",
        "of",
        "politeness",
        "<a href=\"/x\">",
        "archive",
        "and",
        "web",
        "</a>",
        "page",
        "robots",
        "<p>",
        "queue",
        "host",
        "batch",
        "link",
    ];
    let mut body = String::from("<html><body>");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while body.len() < PAGE_BYTES - 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        body.push_str(WORDS[(x % 16) as usize]);
        body.push(' ');
    }
    body.truncate(PAGE_BYTES - 14);
    body.push_str("</body></html>");
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body.as_bytes());
    r
}

/// The keep-alive server: answers every request head with the page.
async fn server() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let response: &'static [u8] = Box::leak(page().into_boxed_slice());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut have = 0;
                loop {
                    match s.read(&mut buf[have..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => have += n,
                    }
                    while let Some(end) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.copy_within(end + 4..have, 0);
                        have -= end + 4;
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

/// CPU time of this process's threads whose name starts with one of `prefixes`.
fn thread_cpu(prefixes: &[&str]) -> Duration {
    let mut ticks = 0u64;
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = &stat[open + 1..close];
        if !prefixes.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // After "(comm)": state is field 3, utime 14, stime 15.
        let get = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0)
        };
        ticks += get(11) + get(12);
    }
    Duration::from_millis(ticks * 10) // USER_HZ = 100 on Linux
}

fn process_cpu() -> Duration {
    let u = getrusage(UsageWho::RUSAGE_SELF).unwrap();
    let tv =
        |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    tv(u.user_time()) + tv(u.system_time())
}

fn machine() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|m| m.trim_start_matches([' ', '\t', ':']))
        })
        .unwrap_or("unknown CPU")
        .to_owned();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cores} cores")
}

/// One run: `pages` jobs at `concurrency`, with a fresh downloader and spool;
/// prints its figures.
fn run(pages: usize, concurrency: u32, site: SocketAddr, site_rt: &tokio::runtime::Runtime) {
    let spool = tempfile::tempdir().unwrap();
    let listener = site_rt
        .block_on(TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .unwrap();
    let manager_addr = listener.local_addr().unwrap();

    // The downloader, on a runtime of its own (as `polycrawl downloader` runs it).
    let dl_rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("dl-worker")
        .enable_all()
        .build()
        .unwrap();
    let config = DownloaderConfig {
        allow_private: true,
        concurrency,
        pool_max_idle_per_key: 4096,
        pool_max_idle: 4096,
        ..DownloaderConfig::default()
    };
    let control = ControlSettings::new(
        manager_addr.to_string(),
        Token::new(TOKEN).unwrap(),
        ComponentId::new("dl-bench").unwrap(),
    );
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let root = spool::Spool::new(spool.path());
    let service = dl_rt.spawn(async move { downloader::run(&config, control, root, stop).await });

    // The manager: a window of jobs in flight, topped up as reports come back.
    let (elapsed, durable, cpu_dl, cpu_all, batches) = site_rt.block_on(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let server = ServerConfig::new(
            Role::Manager,
            ComponentId::new("manager").unwrap(),
            Token::new(TOKEN).unwrap(),
        );
        let (conn, _) = server_handshake(stream, &server).await.unwrap();
        let (mut reader, writer) = conn.into_split();
        let window = Arc::new(Semaphore::new(4 * concurrency as usize + BATCH));
        let app = AppId::new("bench").unwrap();
        let url = format!("http://bench.test:{}/page", site.port());
        let limits = FetchLimits {
            max_body_bytes: 0,
            connect_timeout_ms: 0,
            first_byte_timeout_ms: 0,
            total_timeout_ms: 0,
        };
        let (dl0, all0, start) = (
            thread_cpu(&["dl-", "warc-writer"]),
            process_cpu(),
            Instant::now(),
        );
        let sender = {
            let window = window.clone();
            tokio::spawn(async move {
                for first in (0..pages).step_by(BATCH) {
                    let n = BATCH.min(pages - first);
                    window.acquire_many(n as u32).await.unwrap().forget();
                    let jobs = (first..first + n)
                        .map(|i| FetchJob {
                            job: JobId(i as u64),
                            app: app.clone(),
                            url: url.clone(),
                            addr: site,
                            purpose: FetchPurpose::Page,
                            keep_alive: true,
                            limits,
                        })
                        .collect();
                    writer.send(&Message::FetchBatch { jobs }).await.unwrap();
                }
                writer
            })
        };
        let (mut stored, mut committed, mut batches) = (0, 0, 0);
        let mut reported = None;
        while committed < pages {
            match reader.recv().await.unwrap().expect("the downloader stays") {
                Message::FetchReports { reports } => {
                    for r in &reports {
                        match &r.result {
                            FetchResult::Stored(_) => stored += 1,
                            other => panic!("job {}: {other:?}", r.job),
                        }
                    }
                    window.add_permits(reports.len());
                    if stored == pages {
                        reported = Some((
                            start.elapsed(),
                            thread_cpu(&["dl-", "warc-writer"]) - dl0,
                            process_cpu() - all0,
                        ));
                    }
                }
                Message::Committed { jobs, .. } => {
                    committed += jobs.len();
                    batches += 1;
                }
                _ => {}
            }
        }
        let durable = start.elapsed();
        assert_eq!(stored, pages);
        drop(sender.await.unwrap());
        let (elapsed, cpu_dl, cpu_all) = reported.expect("every page reported");
        (elapsed, durable, cpu_dl, cpu_all, batches)
    });
    shutdown.cancel();
    dl_rt.block_on(service).unwrap().unwrap();
    let rate = pages as f64 / elapsed.as_secs_f64();
    let per_page = |cpu: Duration| cpu.as_secs_f64() * 1000.0 / pages as f64;
    println!(
        "service/keep-alive/13KB concurrency={concurrency:<4} {rate:>7.0} pages/s  \
         downloader {:.3} CPU-ms/page  whole process {:.3} CPU-ms/page  \
         ({pages} pages reported in {:.2} s, all committed after {:.2} s, {batches} batches)",
        per_page(cpu_dl),
        per_page(cpu_all),
        elapsed.as_secs_f64(),
        durable.as_secs_f64(),
    );
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<usize>().ok());
    let pages = args.next().unwrap_or(30_000);
    let levels: Vec<u32> = args.map(|c| c as u32).collect();
    let levels = if levels.is_empty() {
        vec![64, 256]
    } else {
        levels
    };
    println!("machine: {}", machine());
    // The site and the manager share one runtime with one worker thread.
    let site_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("site")
        .enable_all()
        .build()
        .unwrap();
    let site = site_rt.block_on(server());
    run(2000, 64, site, &site_rt); // warm-up
    for concurrency in levels {
        run(pages, concurrency, site, &site_rt);
    }
}
