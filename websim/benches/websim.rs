//! websim serving benchmark: how many ~13 KB pages per second websim serves on ONE
//! core, with keep-alive.
//!
//! The server runs on a current-thread tokio runtime on its own thread (one core),
//! listening on the addresses of the plain hosts (http, no gzip, not chunked, not
//! slow) of a 200-host / 20,000-page web, with the request log on (written to a
//! temporary file by its flusher thread). Load comes from another thread: a
//! current-thread runtime with `CONNECTIONS` keep-alive connections, each sending
//! one GET at a time for random pages of the hosts on its address. After a warm-up,
//! it measures for `SECONDS` and prints pages/s, MB/s, mean page bytes, the server
//! thread's CPU time per page (getrusage RUSAGE_THREAD, so it excludes the client
//! and the log flusher), and the machine.
//!
//! Run: `CARGO_TARGET_DIR=$HOME/.cache/polycrawl/target cargo bench -p websim --bench websim`
//! (env `WEBSIM_BENCH_SECONDS`, `WEBSIM_BENCH_CONNECTIONS` override the defaults).
//! Target: 20,000 pages/s or more per server core.

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use websim::html::render_page;
use websim::http::{Server, accept_loop};
use websim::linkform::Scratch;
use websim::listen::{bind_all, raise_nofile_limit};
use websim::log::RequestLog;
use websim::model::{Params, Target, Web};
use websim::rng::Rng;

const HOSTS: u32 = 200;
const PAGES: u32 = 20_000;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn thread_cpu() -> Duration {
    let u = getrusage(UsageWho::RUSAGE_THREAD).expect("getrusage");
    let t =
        |tv: nix::sys::time::TimeVal| Duration::new(tv.tv_sec() as u64, tv.tv_usec() as u32 * 1000);
    t(u.user_time()) + t(u.system_time())
}

fn plain(web: &Web, h: u32) -> bool {
    let x = &web.hosts[h as usize];
    !x.https && !x.gzip && !x.chunked && !x.slow && !x.dead && !x.misbehave
}

/// Commands to the server thread.
enum Probe {
    /// Answer with the server thread's CPU time so far.
    Cpu(oneshot::Sender<Duration>),
}

fn main() {
    let seconds = env_or("WEBSIM_BENCH_SECONDS", 5);
    let connections = env_or("WEBSIM_BENCH_CONNECTIONS", 32) as usize;
    let _ = raise_nofile_limit();
    println!("websim serving benchmark");
    println!("machine: {}", test_support::proc::machine());

    // Render-only figure first (no network): the page generator's own speed.
    let web0 = Web::new(Params::new(1, HOSTS, PAGES));
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut scratch = Scratch::default();
    let started = Instant::now();
    let mut rendered = 0u64;
    let mut bytes = 0u64;
    'outer: for h in 0..HOSTS {
        for p in 0..web0.hosts[h as usize].pages {
            render_page(&web0, h, p, &mut buf, &mut scratch);
            rendered += 1;
            bytes += buf.len() as u64;
            if started.elapsed() > Duration::from_secs(2) {
                break 'outer;
            }
        }
    }
    let t = started.elapsed().as_secs_f64();
    println!(
        "render only: {:.0} pages/s, {:.0} MB/s, mean {:.0} bytes ({rendered} pages)",
        rendered as f64 / t,
        bytes as f64 / t / 1e6,
        bytes as f64 / rendered as f64
    );

    // Server thread.
    let addrs: Vec<(u32, Ipv4Addr)> = {
        let mut v: Vec<(u32, Ipv4Addr)> = (0..HOSTS)
            .filter(|&h| plain(&web0, h))
            .map(|h| {
                (
                    web0.hosts[h as usize].addr_index,
                    web0.hosts[h as usize].addr,
                )
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<(Arc<Web>, u16, mpsc::Sender<Probe>)>();
    let log_dir = tempfile::tempdir().expect("tempdir");
    let log_path = log_dir.path().join("requests.tsv");
    let server_addrs = addrs.clone();
    let server_thread = std::thread::Builder::new()
        .name("websim-server".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let ips: Vec<Ipv4Addr> = server_addrs.iter().map(|&(_, a)| a).collect();
                let (port, listeners) = bind_all(&ips, 0).expect("bind");
                let web = Arc::new(Web::new(Params {
                    http_port: port,
                    https_port: 1,
                    ..Params::new(1, HOSTS, PAGES)
                }));
                let log = RequestLog::create(&log_path).expect("log");
                let _flusher = log.start_flusher();
                let server = Arc::new(Server {
                    web: Arc::clone(&web),
                    log,
                    slow: Duration::from_millis(2000),
                    latency: Duration::ZERO,
                    throttle: None,
                    revision: websim::revision::Revision::default(),
                    pace: None,
                });
                for (&(index, _), l) in server_addrs.iter().zip(listeners) {
                    tokio::spawn(accept_loop(l, Arc::clone(&server), index, None));
                }
                let (probe_tx, mut probe_rx) = mpsc::channel(4);
                ready_tx.send((web, port, probe_tx)).expect("ready");
                while let Some(Probe::Cpu(reply)) = probe_rx.recv().await {
                    let _ = reply.send(thread_cpu());
                }
            });
        })
        .expect("server thread");
    let (web, port, probe) = ready_rx.recv().expect("server ready");

    // Requests per address: GET for every page of the plain hosts there.
    let mut per_addr: Vec<(SocketAddr, Vec<Vec<u8>>)> = Vec::new();
    for &(index, ip) in &addrs {
        let mut reqs = Vec::new();
        for h in (0..HOSTS).filter(|&h| plain(&web, h) && web.hosts[h as usize].addr_index == index)
        {
            let host = &web.hosts[h as usize];
            for page in 0..host.pages {
                let mut path = String::new();
                web.write_path(&mut path, &Target::Page { host: h, page }, true);
                reqs.push(
                    format!("GET {path} HTTP/1.1\r\nHost: {}:{port}\r\nUser-Agent: polycrawl-bench/0.1\r\n\r\n", host.name)
                        .into_bytes(),
                );
            }
        }
        per_addr.push((SocketAddr::from((ip, port)), reqs));
    }
    let total_pages: usize = per_addr.iter().map(|(_, r)| r.len()).sum();
    println!(
        "web: {HOSTS} hosts / {PAGES} pages; serving {} plain hosts' {total_pages} pages on {} addresses; \
         {connections} keep-alive connections; {seconds} s",
        (0..HOSTS).filter(|&h| plain(&web, h)).count(),
        addrs.len()
    );
    let per_addr = Arc::new(per_addr);

    // Client thread.
    let stop = Arc::new(AtomicBool::new(false));
    let pages = Arc::new(AtomicU64::new(0));
    let body_bytes = Arc::new(AtomicU64::new(0));
    let client = {
        let (stop, pages, body_bytes, per_addr) =
            (stop.clone(), pages.clone(), body_bytes.clone(), per_addr);
        std::thread::Builder::new()
            .name("websim-client".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                rt.block_on(async move {
                    let mut tasks = tokio::task::JoinSet::new();
                    // Weight connections by how many pages an address serves.
                    let mut r = Rng::new(42);
                    for c in 0..connections {
                        let k = (c + r.below(per_addr.len() as u64) as usize) % per_addr.len();
                        let (stop, pages, body_bytes, per_addr) = (
                            stop.clone(),
                            pages.clone(),
                            body_bytes.clone(),
                            per_addr.clone(),
                        );
                        tasks.spawn(async move {
                            let (addr, reqs) = &per_addr[k];
                            let mut s = TcpStream::connect(addr).await.expect("connect");
                            s.set_nodelay(true).expect("nodelay");
                            let mut rng = Rng::new(c as u64);
                            let mut buf = Vec::with_capacity(64 * 1024);
                            while !stop.load(Ordering::Relaxed) {
                                let req = &reqs[rng.below(reqs.len() as u64) as usize];
                                s.write_all(req).await.expect("write");
                                let body = read_response(&mut s, &mut buf).await;
                                pages.fetch_add(1, Ordering::Relaxed);
                                body_bytes.fetch_add(body as u64, Ordering::Relaxed);
                            }
                        });
                    }
                    while tasks.join_next().await.is_some() {}
                });
            })
            .expect("client thread")
    };

    let probe_cpu = || {
        let (tx, rx) = oneshot::channel();
        probe.blocking_send(Probe::Cpu(tx)).expect("probe");
        rx.blocking_recv().expect("cpu")
    };
    std::thread::sleep(Duration::from_secs(1)); // warm-up
    let (p0, b0, cpu0, t0) = (
        pages.load(Ordering::Relaxed),
        body_bytes.load(Ordering::Relaxed),
        probe_cpu(),
        Instant::now(),
    );
    std::thread::sleep(Duration::from_secs(seconds));
    let (p1, b1, cpu1, t1) = (
        pages.load(Ordering::Relaxed),
        body_bytes.load(Ordering::Relaxed),
        probe_cpu(),
        Instant::now(),
    );
    stop.store(true, Ordering::Relaxed);
    let _ = client.join();
    drop(probe);
    let _ = server_thread.join();

    let secs = (t1 - t0).as_secs_f64();
    let n = (p1 - p0) as f64;
    let cpu = (cpu1 - cpu0).as_secs_f64();
    println!("pages/s: {:.0}", n / secs);
    println!("MB/s (bodies): {:.1}", (b1 - b0) as f64 / secs / 1e6);
    println!("mean page bytes: {:.0}", (b1 - b0) as f64 / n);
    println!(
        "server thread CPU: {:.1} us/page ({:.0}% of one core) -> {:.0} pages/s per fully used core",
        cpu / n * 1e6,
        cpu / secs * 100.0,
        n / cpu
    );
    let _ = std::io::stdout().flush();
}

/// Reads one Content-Length response into `buf` (keeping any bytes after it);
/// returns the body length.
async fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>) -> usize {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        if let Ok(httparse::Status::Complete(head)) = resp.parse(buf) {
            assert_eq!(
                resp.code,
                Some(200),
                "benchmark requests only existing pages"
            );
            let len: usize = resp
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                .expect("content-length");
            while buf.len() < head + len {
                buf.reserve(64 * 1024);
                assert!(s.read_buf(buf).await.expect("read") > 0, "server closed");
            }
            buf.drain(..head + len);
            return len;
        }
        buf.reserve(64 * 1024);
        assert!(s.read_buf(buf).await.expect("read") > 0, "server closed");
    }
}
