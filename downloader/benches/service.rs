//! One downloader service end to end: pages per second and CPU milliseconds per
//! page, with jobs injected by a bench-side manager (the real control protocol on
//! 127.0.0.1). Every page goes through the whole service: job queue, fetch, WARC
//! record pair, gzip, batch file, publish (fsync, rename), `FetchReports` and
//! `Committed`. Politeness plays no part (that is the manager's job): the bench
//! sends jobs as fast as the downloader takes them, so the downloader's own
//! concurrency is the only limit.
//!
//! Two sources of pages:
//! - in-process (default): one keep-alive HTTP server on one host, 13 KB HTML pages
//!   of word soup (which gzip shrinks about as much as real HTML), on a one-thread
//!   runtime shared with the manager.
//!   `cargo bench -p downloader --bench service [-- [--runs R] [PAGES [CONCURRENCY...]]]`
//!   (defaults: 30000 pages, concurrency 64 and 256). A few seconds per run.
//! - websim (`--websim`): `polycrawl websim` in its own process (2,000 hosts,
//!   100,000 pages, seed 7, `--slow-ms 5`, one websim thread by default), and one
//!   job for every URL of its manifest (about 125,000: 200s, 301/302 redirects,
//!   404s; http and https with websim's CA as extra CA file; gzip and chunked
//!   hosts), in manifest (breadth-first) order, with the address from `hosts.tsv`.
//!   `cargo bench -p downloader --bench service -- --websim [--hosts H] [--pages N]
//!   [--seed S] [--slow-ms MS] [--websim-threads T] [--websim-out DIR] [--runs R]
//!   [CONCURRENCY...]` (`--websim-out`: keep websim's files, the request log among
//!   them, in DIR)
//!   (defaults: concurrency 64 and 256). It needs the `polycrawl` binary next to
//!   the bench's directory (`cargo build --release -p polycrawl --bin polycrawl`, same
//!   target dir) or `POLYCRAWL_BIN`. About 10-30 s per run.
//!
//! Each mode first runs 2,000 jobs at concurrency 64 as a warm-up; then `--runs`
//! rounds over the concurrency levels (interleaved, so machine noise spreads over
//! all levels), each run with a fresh downloader and spool, and with more than one
//! round a summary (median, min, max per level).
//!
//! Figures printed per run:
//! - pages/s: pages reported `Stored` (records written, any HTTP status) per wall
//!   second, from the first `FetchBatch` to the last report; CPU is counted over
//!   the same span. The last batch is committed up to `max_batch_age_ms` (2 s)
//!   later: durability lags by at most that, throughput does not;
//! - CPU ms/page of the downloader alone: user + system time of its threads (its
//!   tokio workers, named `dl-*`, and the `warc-writer` thread), from
//!   `/proc/self/task/*/stat` (USER_HZ ticks, 10 ms resolution, summed over
//!   seconds);
//! - CPU ms/page of the whole process (`getrusage(RUSAGE_SELF)`): downloader plus
//!   the manager (and the in-process HTTP server in that mode);
//! - websim mode: websim's CPU ms/page (`/proc/<pid>/stat`, all its threads, not
//!   part of the above), the status mix, statuses that differ from the manifest,
//!   failures by reason (with one detail each), jobs returned, wire and body bytes,
//!   the https share, cores busy (CPU time over wall time: downloader, its WARC
//!   writer thread, whole process, websim), and from websim's request log the
//!   requests it served and the connections they came on (distinct client sockets);
//! - the load average (`/proc/loadavg`) when the run started.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::{BTreeMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use downloader::{ControlSettings, DownloaderConfig};
use nix::sys::resource::{Resource, UsageWho, getrlimit, getrusage, setrlimit};
use spool::protocol::{FetchJob, FetchLimits, FetchPurpose, FetchResult, JobId, Message, Token};
use spool::{AppId, ComponentId};
use test_support::manager::FakeManager;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

mod websim;

use websim::{SimUrl, Websim};

const PAGE_BYTES: usize = 13 * 1024;
const TOKEN: &str = "bench-token";
/// Jobs per `FetchBatch`.
const BATCH: usize = 500;
/// Jobs of the warm-up run.
const WARM_UP: usize = 2000;

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
    test_support::proc::threads(std::process::id())
        .into_iter()
        .filter(|(_, stat)| prefixes.iter().any(|p| stat.name.starts_with(p)))
        .map(|(_, stat)| stat.cpu)
        .sum()
}

/// CPU time of another process (all its threads).
fn pid_cpu(pid: u32) -> Duration {
    test_support::proc::cpu_time(pid).unwrap_or_default()
}

fn process_cpu() -> Duration {
    let u = getrusage(UsageWho::RUSAGE_SELF).unwrap();
    let tv =
        |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    tv(u.user_time()) + tv(u.system_time())
}

/// Raises the soft file-descriptor limit to the hard one: thousands of hosts mean
/// thousands of pooled connections.
fn raise_nofile_limit() {
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// websim's request log, read run by run.
struct LogTail {
    path: PathBuf,
    offset: u64,
}

impl LogTail {
    /// Requests logged since the last call, and the connections they came on
    /// (distinct server and client socket pairs), all and https ones. The log is
    /// flushed every 100 ms.
    fn take(&mut self) -> Served {
        std::thread::sleep(Duration::from_millis(300));
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.path) {
            let _ = f.seek(SeekFrom::Start(self.offset));
            let _ = f.read_to_string(&mut text);
        }
        // Only whole lines; a partial last one is read next time.
        let whole = text.rfind('\n').map_or(0, |i| i + 1);
        self.offset += whole as u64;
        let mut connections = HashSet::new();
        let mut requests = 0;
        let lines =
            ::websim::log::Line::parse_all(&text[..whole]).unwrap_or_else(|e| panic!("{e}"));
        for line in &lines {
            connections.insert((line.scheme == "https", line.server, line.client));
            requests += 1;
        }
        Served {
            requests,
            connections: connections.len(),
            https_connections: connections.iter().filter(|c| c.0).count(),
        }
    }
}

/// What websim's request log says about one run.
struct Served {
    requests: usize,
    connections: usize,
    https_connections: usize,
}

/// What the runs fetch.
struct Workload {
    /// Printed at the start of each result line.
    label: &'static str,
    /// Job `i` fetches `urls[i]`; a run takes the first N.
    urls: Arc<Vec<SimUrl>>,
    extra_ca_file: Option<PathBuf>,
    /// websim's pid (its CPU is counted apart) and request log.
    sim: Option<(u32, LogTail)>,
    /// Every job must be stored with the expected status (in-process mode): anything
    /// else panics instead of being counted.
    strict: bool,
}

/// The figures of one run.
#[derive(Default)]
struct Figures {
    concurrency: u32,
    jobs: usize,
    stored: usize,
    /// First `FetchBatch` to the last report.
    elapsed: Duration,
    /// First `FetchBatch` to the last `Committed`.
    durable: Duration,
    cpu_dl: Duration,
    /// Of `cpu_dl`: the WARC writer thread.
    cpu_writer: Duration,
    cpu_all: Duration,
    cpu_sim: Option<Duration>,
    batches: usize,
    statuses: BTreeMap<u16, usize>,
    /// Stored with a status other than the manifest's.
    unexpected: usize,
    /// Failures by reason, with the first detail.
    failures: BTreeMap<String, (usize, String)>,
    returned: usize,
    wire_bytes: u64,
    body_bytes: u64,
    https: usize,
    /// From websim's log.
    served: Option<Served>,
    load: String,
}

impl Figures {
    fn pages_per_s(&self) -> f64 {
        self.stored as f64 / self.elapsed.as_secs_f64()
    }

    fn per_page(&self, cpu: Duration) -> f64 {
        cpu.as_secs_f64() * 1000.0 / self.stored.max(1) as f64
    }

    fn print(&self, label: &str) {
        let sim = self.cpu_sim.map_or(String::new(), |c| {
            format!("  websim {:.3} CPU-ms/page", self.per_page(c))
        });
        println!(
            "{label} concurrency={:<4} {:>7.0} pages/s  downloader {:.3} CPU-ms/page  \
             whole process {:.3} CPU-ms/page{sim}  ({} pages reported in {:.2} s, all \
             committed after {:.2} s, {} batches; load {})",
            self.concurrency,
            self.pages_per_s(),
            self.per_page(self.cpu_dl),
            self.per_page(self.cpu_all),
            self.stored,
            self.elapsed.as_secs_f64(),
            self.durable.as_secs_f64(),
            self.batches,
            self.load,
        );
        if self.cpu_sim.is_none() {
            return;
        }
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(s, n)| format!("{s}:{n}"))
            .collect();
        let failures: Vec<String> = self
            .failures
            .iter()
            .map(|(r, (n, detail))| format!("{r}:{n} ({detail})"))
            .collect();
        let mb = |b: u64| b as f64 / 1e6;
        println!(
            "    {} jobs, status {} ({} differ from the manifest), failures {}, returned {}; \
             wire {:.1} MB ({:.0} B/page), body {:.1} MB; https {} ({:.1} %)",
            self.jobs,
            statuses.join(" "),
            self.unexpected,
            if failures.is_empty() {
                "none".to_owned()
            } else {
                failures.join(", ")
            },
            self.returned,
            mb(self.wire_bytes),
            self.wire_bytes as f64 / self.stored.max(1) as f64,
            mb(self.body_bytes),
            self.https,
            100.0 * self.https as f64 / self.jobs.max(1) as f64,
        );
        let cores = |cpu: Duration| cpu.as_secs_f64() / self.elapsed.as_secs_f64();
        println!(
            "    cores busy: downloader {:.2} (its WARC writer thread {:.2}), whole process \
             {:.2}, websim {:.2}",
            cores(self.cpu_dl),
            cores(self.cpu_writer),
            cores(self.cpu_all),
            cores(self.cpu_sim.unwrap_or_default()),
        );
        if let Some(s) = &self.served {
            println!(
                "    websim served {} requests on {} connections ({} https; {:.1} requests \
                 per connection)",
                s.requests,
                s.connections,
                s.https_connections,
                s.requests as f64 / s.connections.max(1) as f64
            );
        }
    }
}

/// One run: the first `jobs` URLs of `work` at `concurrency`, with a fresh
/// downloader and spool.
fn run(
    work: &mut Workload,
    jobs: usize,
    concurrency: u32,
    site_rt: &tokio::runtime::Runtime,
) -> Figures {
    let spool = tempfile::tempdir().unwrap();
    let manager = site_rt.block_on(FakeManager::start(FakeManager::config(TOKEN)));
    let manager_addr = manager.addr();
    let load = test_support::proc::load_average();

    // The downloader, on a runtime of its own (as `polycrawl downloader` runs it).
    let dl_rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("dl-worker")
        .enable_all()
        .build()
        .unwrap();
    let config = DownloaderConfig {
        allow_private: true,
        extra_ca_file: work.extra_ca_file.clone(),
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

    let urls = Arc::clone(&work.urls);
    let strict = work.strict;
    let sim_pid = work.sim.as_ref().map(|(pid, _)| *pid);
    // The manager: a window of jobs in flight, topped up as reports come back.
    let mut fig = site_rt.block_on(async move {
        let (conn, _) = manager.accept().await;
        let (mut reader, writer) = conn.into_split();
        let window = Arc::new(Semaphore::new(4 * concurrency as usize + BATCH));
        let app = AppId::new("bench").unwrap();
        let limits = FetchLimits {
            max_body_bytes: 0,
            connect_timeout_ms: 0,
            first_byte_timeout_ms: 0,
            total_timeout_ms: 0,
            min_ip_spacing_ms: 0,
            min_host_spacing_ms: 0,
        };
        let mut fig = Figures {
            concurrency,
            jobs,
            https: urls[..jobs].iter().filter(|u| u.https).count(),
            ..Figures::default()
        };
        let (dl0, writer0, all0, sim0, start) = (
            thread_cpu(&["dl-", "warc-writer"]),
            thread_cpu(&["warc-writer"]),
            process_cpu(),
            sim_pid.map(pid_cpu),
            Instant::now(),
        );
        let sender = {
            let (window, urls) = (window.clone(), Arc::clone(&urls));
            tokio::spawn(async move {
                for first in (0..jobs).step_by(BATCH) {
                    let n = BATCH.min(jobs - first);
                    window.acquire_many(n as u32).await.unwrap().forget();
                    let jobs = (first..first + n)
                        .map(|i| FetchJob {
                            job: JobId(i as u64),
                            app: app.clone(),
                            url: urls[i].url.clone(),
                            addr: urls[i].addr,
                            purpose: FetchPurpose::Page,
                            keep_alive: true,
                            limits,
                            depth: None,
                            hops: None,
                            validators: Default::default(),
                            after: None,
                        })
                        .collect();
                    writer.send(&Message::FetchBatch { jobs }).await.unwrap();
                }
                writer
            })
        };
        let (mut reported, mut committed) = (0, 0);
        while reported < jobs || committed < fig.stored {
            match reader.recv().await.unwrap().expect("the downloader stays") {
                Message::FetchReports { reports } => {
                    for r in &reports {
                        let want = &urls[r.job.0 as usize];
                        match &r.result {
                            FetchResult::Stored(page) if !strict || page.status == want.status => {
                                fig.stored += 1;
                                *fig.statuses.entry(page.status).or_default() += 1;
                                fig.unexpected += usize::from(page.status != want.status);
                                fig.wire_bytes += page.wire_bytes;
                                fig.body_bytes += page.body_bytes;
                            }
                            FetchResult::Failed { reason, detail } if !strict => {
                                let e = fig
                                    .failures
                                    .entry(reason.to_string())
                                    .or_insert_with(|| (0, format!("{}: {detail}", want.url)));
                                e.0 += 1;
                            }
                            FetchResult::Returned if !strict => fig.returned += 1,
                            other => panic!("job {} ({}): {other:?}", r.job, want.url),
                        }
                    }
                    reported += reports.len();
                    window.add_permits(reports.len());
                    if reported == jobs {
                        fig.elapsed = start.elapsed();
                        fig.cpu_dl = thread_cpu(&["dl-", "warc-writer"]) - dl0;
                        fig.cpu_writer = thread_cpu(&["warc-writer"]) - writer0;
                        fig.cpu_all = process_cpu() - all0;
                        fig.cpu_sim = sim_pid.zip(sim0).map(|(pid, c0)| pid_cpu(pid) - c0);
                    }
                }
                Message::Committed { jobs, .. } => {
                    committed += jobs.len();
                    fig.batches += 1;
                }
                _ => {}
            }
        }
        fig.durable = start.elapsed();
        drop(sender.await.unwrap());
        fig
    });
    shutdown.cancel();
    dl_rt.block_on(service).unwrap().unwrap();
    fig.load = load;
    fig.served = work.sim.as_mut().map(|(_, log)| log.take());
    fig
}

/// Runs the warm-up, then `runs` rounds over `levels`, printing every run and,
/// with more than one round, a summary.
fn measure(
    work: &mut Workload,
    jobs: usize,
    levels: &[u32],
    runs: usize,
    rt: &tokio::runtime::Runtime,
) {
    run(work, WARM_UP.min(jobs), 64, rt);
    let mut all: BTreeMap<u32, Vec<Figures>> = BTreeMap::new();
    for _ in 0..runs {
        for &concurrency in levels {
            let fig = run(work, jobs, concurrency, rt);
            fig.print(work.label);
            all.entry(concurrency).or_default().push(fig);
        }
    }
    if runs < 2 {
        return;
    }
    println!(
        "summary over {runs} runs: median (min-max); load average now {}",
        test_support::proc::load_average()
    );
    println!(
        "| concurrency | pages/s | downloader CPU-ms/page | whole process CPU-ms/page |{}",
        if work.sim.is_some() {
            " websim CPU-ms/page |"
        } else {
            ""
        }
    );
    for (concurrency, figs) in &all {
        let stat = |f: &dyn Fn(&Figures) -> f64, digits: usize| {
            let mut v: Vec<f64> = figs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            format!(
                "{:.digits$} ({:.digits$}-{:.digits$})",
                v[v.len() / 2],
                v[0],
                v[v.len() - 1]
            )
        };
        let sim = if work.sim.is_some() {
            format!(
                " {} |",
                stat(&|f| f.per_page(f.cpu_sim.unwrap_or_default()), 3)
            )
        } else {
            String::new()
        };
        println!(
            "| {concurrency} | {} | {} | {} |{sim}",
            stat(&|f| f.pages_per_s(), 0),
            stat(&|f| f.per_page(f.cpu_dl), 3),
            stat(&|f| f.per_page(f.cpu_all), 3),
        );
    }
}

const USAGE: &str = "usage: service [--runs R] [PAGES [CONCURRENCY...]]\n       \
    service --websim [--hosts H] [--pages N] [--seed S] [--slow-ms MS] \
    [--websim-threads T] [--websim-out DIR] [--runs R] [CONCURRENCY...]";

struct Opts {
    websim: Option<websim::Args>,
    runs: usize,
    numbers: Vec<usize>,
}

fn parse_args() -> Result<Opts, String> {
    let mut opts = Opts {
        websim: None,
        runs: 1,
        numbers: Vec::new(),
    };
    let mut sim = websim::Args::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            let v = args.next().ok_or(format!("{name} needs a value"))?;
            v.parse().map_err(|_| format!("{name} {v}: not a number"))
        };
        let narrow = |name: &str, v: u64| -> Result<u32, String> {
            u32::try_from(v).map_err(|_| format!("{name} {v}: too large"))
        };
        match arg.as_str() {
            "--bench" => {} // added by `cargo bench`
            "--websim" => opts.websim = Some(websim::Args::default()),
            "--runs" => opts.runs = value("--runs")?.max(1) as usize,
            "--hosts" => sim.hosts = narrow("--hosts", value("--hosts")?)?,
            "--pages" => sim.pages = narrow("--pages", value("--pages")?)?,
            "--seed" => sim.seed = value("--seed")?,
            "--slow-ms" => sim.slow_ms = value("--slow-ms")?,
            "--websim-out" => {
                sim.out = Some(args.next().ok_or("--websim-out needs a value")?.into());
            }
            "--websim-threads" => {
                let t = value("--websim-threads")?;
                sim.threads = u16::try_from(t.max(1)).map_err(|_| "--websim-threads: too large")?;
            }
            other => match other.parse() {
                Ok(n) => opts.numbers.push(n),
                Err(_) => return Err(format!("unknown argument {other:?}")),
            },
        }
    }
    if let Some(s) = opts.websim.as_mut() {
        *s = sim;
    }
    Ok(opts)
}

fn main() {
    let opts = parse_args().unwrap_or_else(|e| {
        eprintln!("service bench: {e}\n{USAGE}");
        std::process::exit(2)
    });
    raise_nofile_limit();
    println!(
        "machine: {}; load average {}",
        test_support::proc::machine(),
        test_support::proc::load_average()
    );
    // The manager (and the in-process site) run on one runtime with one worker thread.
    let site_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("site")
        .enable_all()
        .build()
        .unwrap();
    let levels_or_default = |levels: Vec<u32>| {
        if levels.is_empty() {
            vec![64, 256]
        } else {
            levels
        }
    };
    match opts.websim {
        None => {
            let mut numbers = opts.numbers.into_iter();
            let pages = numbers.next().unwrap_or(30_000);
            let levels = levels_or_default(numbers.map(|c| c as u32).collect());
            let site = site_rt.block_on(server());
            let url = format!("http://bench.test:{}/page", site.port());
            let page = SimUrl {
                url,
                addr: site,
                status: 200,
                https: false,
            };
            let mut work = Workload {
                label: "service/keep-alive/13KB",
                urls: Arc::new(vec![page; pages.max(WARM_UP)]),
                extra_ca_file: None,
                sim: None,
                strict: true,
            };
            measure(&mut work, pages, &levels, opts.runs, &site_rt);
        }
        Some(args) => {
            let levels = levels_or_default(opts.numbers.iter().map(|&c| c as u32).collect());
            let bin = websim::polycrawl_bin().unwrap_or_else(|e| {
                eprintln!("service bench --websim: {e}");
                std::process::exit(1)
            });
            println!(
                "websim: {} --hosts {} --pages {} --seed {} --slow-ms {} --threads {}",
                bin.display(),
                args.hosts,
                args.pages,
                args.seed,
                args.slow_ms,
                args.threads
            );
            let sim = Websim::start(&bin, &args);
            let urls = sim.urls();
            let https = urls.iter().filter(|u| u.https).count();
            let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
            for u in &urls {
                *statuses.entry(u.status).or_default() += 1;
            }
            println!(
                "websim: pid {}, manifest {} URLs ({https} https), status {:?}",
                sim.pid(),
                urls.len(),
                statuses
            );
            let jobs = urls.len();
            let mut work = Workload {
                label: "service/websim",
                urls: Arc::new(urls),
                extra_ca_file: Some(sim.path("ca")),
                sim: Some((
                    sim.pid(),
                    LogTail {
                        path: sim.path("log"),
                        offset: 0,
                    },
                )),
                strict: false,
            };
            measure(&mut work, jobs, &levels, opts.runs, &site_rt);
            drop(sim); // kills websim
        }
    }
}
