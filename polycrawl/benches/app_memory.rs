//! `cargo bench -p polycrawl --bench app_memory -- [--urls N,M ...]`: the application's
//! memory with many URLs outstanding (issue 11: memory flat in the crawl's size).
//! A bench of the `polycrawl` binary's package, not a subcommand of it, so that the
//! manager stand-in (`test_support::manager`) stays out of the shipping binary.
//!
//! For each size N it builds a spool in a fresh directory holding synthetic page
//! batches (WARC, as the downloader writes them: `pages_per_batch` pages of depth 1,
//! each with `links_per_page` links to new URLs spread over `hosts` hosts), so the
//! pages' links are N distinct new URLs. It then runs the real application (`polycrawl
//! app`, the package's binary, as a child process) against a manager stand-in that registers
//! it, never dispatches anything and always reports the crawl busy: every URL the app
//! publishes stays outstanding (requested, no page yet) in `requests/<app>/`.
//!
//! It samples the app's `VmRSS` every 100 ms until every page batch has been
//! consumed (its links published, the batch stored in the repository) and the
//! request files hold exactly N URLs, then for `steady_secs` more. It prints, per
//! size, one `key=value` line: `urls`, `published` (URLs counted in the request
//! files), `seconds` (to publish them all), `peak_rss_kib` (`VmHWM`),
//! `steady_rss_kib` (the largest `VmRSS` of the steady window) and, for two sizes or
//! more, the ratio of the last to the first.
//!
//! Per-host budgets are off (`host_budget_base: 0`): the hosts are fixed whatever N,
//! so the budget table would not grow anyway, and no link is cut.
//!
//! This module only talks to 127.0.0.1 (the stand-in's port) and signals only the
//! app process it started, by its pid; it deletes its directories unless `--keep`.

use std::fmt::Write as _;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser as _;
use spool::formats::{Request, RequestReader};
use spool::name::{FileKind, Priority};
use spool::publish::Publisher;
use spool::warc::{
    Capture, DEPTH_FIELD, RecordId, WarcDate, WarcHeaders, WarcWriter, payload_digest,
};
use spool::{AppId, ComponentId, Spool};
use test_support::manager::FakeManager;

/// The application id the benchmark's app runs as.
const APP: &str = "bfs";
/// The control token between the app and the stand-in.
const TOKEN: &str = "app-memory-bench-token";

/// The bench's arguments.
#[derive(Debug, clap::Parser)]
pub struct AppMemoryArgs {
    /// Outstanding URLs per run (comma-separated); the ratio compares the last to
    /// the first.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000_000u64, 10_000_000])]
    pub urls: Vec<u64>,
    /// Links (new URLs) per synthetic page.
    #[arg(long, default_value_t = 1000)]
    pub links_per_page: u64,
    /// Pages per page batch.
    #[arg(long, default_value_t = 100)]
    pub pages_per_batch: u64,
    /// Hosts the URLs are spread over (the same for every size).
    #[arg(long, default_value_t = 1000)]
    pub hosts: u64,
    /// Seconds of sampling after everything is published.
    #[arg(long, default_value_t = 5)]
    pub steady_secs: u64,
    /// Give up on a size after this many seconds.
    #[arg(long, default_value_t = 3600)]
    pub timeout_secs: u64,
    /// The app's `seen_buffer_bytes` (default: the app's default, 64 MiB). The
    /// seen set holds at most two such buffers, so the peak stops growing once a
    /// run's links fill them.
    #[arg(long)]
    pub seen_buffer_bytes: Option<usize>,
    /// Where to build the runs' directories (default: the system's temp dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the runs' directories.
    #[arg(long)]
    pub keep: bool,
}

/// One size's figures.
#[derive(Debug, Clone, Copy)]
pub struct AppMemory {
    /// URLs the page batches link to.
    pub urls: u64,
    /// URLs counted in the published request files.
    pub published: u64,
    /// From the app's start to the last URL published.
    pub seconds: f64,
    /// `VmHWM` of the app, KiB.
    pub peak_rss_kib: u64,
    /// Largest `VmRSS` in the steady window, KiB.
    pub steady_rss_kib: u64,
}

impl AppMemory {
    /// The `key=value` line.
    pub fn line(&self) -> String {
        format!(
            "app_memory urls={} published={} seconds={:.1} peak_rss_kib={} steady_rss_kib={}",
            self.urls, self.published, self.seconds, self.peak_rss_kib, self.steady_rss_kib
        )
    }
}

/// Runs every size and prints the lines.
fn main() -> anyhow::Result<()> {
    // cargo bench passes `--bench`; every other flag is ours.
    let args = AppMemoryArgs::parse_from(std::env::args().filter(|a| a != "--bench"));
    run(&args)
}

fn run(args: &AppMemoryArgs) -> anyhow::Result<()> {
    let mut results = Vec::new();
    for &n in &args.urls {
        let r = measure(n, args)?;
        println!("{}", r.line());
        results.push(r);
    }
    if let (Some(first), Some(last)) = (results.first(), results.last()) {
        if results.len() > 1 {
            println!(
                "app_memory_ratio urls={}/{} peak={:.3} steady={:.3}",
                last.urls,
                first.urls,
                last.peak_rss_kib as f64 / first.peak_rss_kib.max(1) as f64,
                last.steady_rss_kib as f64 / first.steady_rss_kib.max(1) as f64,
            );
        }
    }
    Ok(())
}

/// Builds, runs and measures one size.
pub fn measure(n: u64, args: &AppMemoryArgs) -> anyhow::Result<AppMemory> {
    if args.links_per_page == 0 || args.pages_per_batch == 0 || args.hosts == 0 {
        bail!("--links-per-page, --pages-per-batch and --hosts must be at least 1");
    }
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("polycrawl-app-memory-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = measure_in(n, args, &dir);
    if !args.keep {
        // Best effort: a failed run's directory is worth keeping only with --keep.
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn measure_in(n: u64, args: &AppMemoryArgs, dir: &Path) -> anyhow::Result<AppMemory> {
    let spool = dir.join("spool");
    let app = AppId::new(APP)?;
    write_batches(&Spool::new(&spool), &app, n, args)?;
    let config = dir.join("config.ron");
    let buffer = args
        .seen_buffer_bytes
        .map(|b| format!("        seen_buffer_bytes: {b},\n"))
        .unwrap_or_default();
    std::fs::write(
        &config,
        format!(
            "(\n    app: (\n        app: {APP:?},\n        scope: open,\n        allowed_domains: [],\n        \
             host_budget_base: 0,\n        scan_interval_ms: 200,\n{buffer}    ),\n)\n"
        ),
    )?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let addr = runtime.block_on(stand_in(app.clone()))?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_polycrawl"))
        .arg("app")
        .arg("--config")
        .arg(&config)
        .args(["--manager", &addr, "--id", "app-bench", "--app", APP])
        .arg("--spool")
        .arg(&spool)
        .arg("--state")
        .arg(dir.join("state"))
        .arg("--repo")
        .arg(dir.join("repo"))
        .env("POLYCRAWL_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("app.stdout"))?)
        .stderr(std::fs::File::create(dir.join("app.stderr"))?)
        .spawn()
        .context("starting polycrawl app")?;
    let result = watch(&mut child, n, args, &spool, &app, dir);
    // Our own child, by its pid; then reaped.
    let _ = child.kill();
    let _ = child.wait();
    runtime.shutdown_background();
    result
}

/// Samples the app until everything is published and then for the steady window.
fn watch(
    child: &mut Child,
    n: u64,
    args: &AppMemoryArgs,
    spool: &Path,
    app: &AppId,
    dir: &Path,
) -> anyhow::Result<AppMemory> {
    let pid = child.id();
    let started = Instant::now();
    let pages = Spool::new(spool).pages(app)?.path().to_path_buf();
    let requests = Spool::new(spool).requests(app)?;
    let mut next_count = Instant::now();
    let (published, seconds) = loop {
        if let Some(status) = child.try_wait()? {
            let stderr = std::fs::read_to_string(dir.join("app.stderr")).unwrap_or_default();
            bail!("the app exited ({status}) before publishing {n} URLs:\n{stderr}");
        }
        if started.elapsed() > Duration::from_secs(args.timeout_secs) {
            bail!("{n} URLs not published within {} s", args.timeout_secs);
        }
        if Instant::now() >= next_count && !has_files(&pages)? {
            let published = count_urls(&requests)?;
            if published >= n {
                break (published, started.elapsed().as_secs_f64());
            }
            next_count = Instant::now() + Duration::from_secs(2);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut steady = 0;
    let until = Instant::now() + Duration::from_secs(args.steady_secs);
    while Instant::now() < until {
        steady = steady.max(status_kib(pid, "VmRSS")?);
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(AppMemory {
        urls: n,
        published,
        seconds,
        peak_rss_kib: status_kib(pid, "VmHWM")?,
        steady_rss_kib: steady,
    })
}

/// A field of `/proc/PID/status`, in KiB.
fn status_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    test_support::proc::status_kib(Some(pid), field)
        .with_context(|| format!("no {field} in /proc/{pid}/status"))
}

/// Whether `dir` or a directory below it holds a file (a batch not yet consumed).
fn has_files(dir: &Path) -> anyhow::Result<bool> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_file() || (kind.is_dir() && has_files(&entry.path())?) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// URLs in the published request files.
fn count_urls(requests: &spool::SpoolDir) -> anyhow::Result<u64> {
    let mut urls = 0;
    let mut request = Request::new("");
    for name in requests.list()? {
        let path = requests.file_path(&name);
        let file = std::fs::File::open(&path)?;
        let mut reader = RequestReader::new(BufReader::new(file))?;
        while reader.read_into(&mut request)? {
            urls += 1;
        }
    }
    Ok(urls)
}

/// Page batches whose links are `n` distinct new URLs.
fn write_batches(spool: &Spool, app: &AppId, n: u64, args: &AppMemoryArgs) -> anyhow::Result<()> {
    let publisher = Publisher::new(spool.pages(app)?, ComponentId::new("dl-bench")?)?;
    let pages = n.div_ceil(args.links_per_page);
    let mut link = 0u64;
    let mut page = 0u64;
    let mut html = String::new();
    while page < pages {
        let mut warc = WarcWriter::new(Vec::new());
        for _ in 0..args.pages_per_batch.min(pages - page) {
            let url = format!("http://h{}.bench.test/page/{page}", page % args.hosts);
            html.clear();
            html.push_str("<html><body>");
            let end = (link + args.links_per_page).min(n);
            while link < end {
                let host = link % args.hosts;
                write!(html, "<a href=\"http://h{host}.bench.test/u/{link}\">u</a>")?;
                link += 1;
            }
            html.push_str("</body></html>");
            let raw = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{html}",
                html.len()
            );
            let capture = Capture {
                target_uri: &url,
                date: WarcDate::now(),
                ip: None,
                warcinfo_id: None,
            };
            let head = raw.find("\r\n\r\n").map_or(0, |i| i + 4);
            let digest = payload_digest(&raw.as_bytes()[head..]);
            let mut headers = WarcHeaders::response(RecordId::random(), &capture, digest)?;
            headers.push(DEPTH_FIELD, "1")?;
            warc.write_record(&headers, raw.as_bytes())?;
            page += 1;
        }
        let data = warc.finish()?;
        publisher.publish(Priority::NORMAL, FileKind::PageBatch, &data)?;
    }
    Ok(())
}

/// A manager stand-in on 127.0.0.1 (test-support's fake manager): registers
/// applications, reads and drops what they send, and every 100 ms reports the crawl
/// busy, so nothing is ever dispatched and the app never finishes. Returns its
/// address.
async fn stand_in(app: AppId) -> anyhow::Result<String> {
    let manager = FakeManager::bind(FakeManager::config(TOKEN)).await?;
    let addr = manager.addr().to_string();
    let never_idle = Arc::new(AtomicBool::new(false));
    manager.report_progress(app, never_idle, Duration::from_millis(100));
    Ok(addr)
}
