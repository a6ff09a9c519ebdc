//! Lazy loading: N request files of 2,000 URLs each are queued in a temp spool, a
//! frontier with a realistic config (target 100 pages/s, interval 1 s, so
//! `s = 2 x 100 x 1 = 200` hosts) runs a fixed number of jobs in simulated time (one
//! job every 10 ms = 100 jobs/s, instant DNS, robots.txt 404 and instant reports),
//! then prints files loaded vs pending, hosts in memory, URLs in the RocksDB queues
//! and the process's VmRSS / VmHWM. Only the files the pipeline needs are loaded, so
//! memory should be about the same for every N. VmHWM is per process: run one N per
//! process.
//!
//! ```sh
//! cargo bench -p manager --bench lazy_load -- 200
//! cargo bench -p manager --bench lazy_load -- 2000
//! cargo bench -p manager --bench lazy_load -- 20000
//! cargo bench -p manager --bench lazy_load -- 20000 20000 1000   # N JOBS URLS_PER_FILE
//! ```

use std::time::Instant;

use manager::{Frontier, FrontierConfig};
use spool::formats::{Hints, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::protocol::{FetchPurpose, Resolution};
use spool::publish::Publisher;
use spool::{AppId, ComponentId, Spool};

mod support;
use support::{cores, cpu_model, ip_of, proc_status, stored};

/// Distinct hosts over the whole request stream: URL `i` goes to host `i % HOSTS`,
/// so each file spreads its URLs over 2,000 hosts and every host recurs every 50
/// files.
const HOSTS: usize = 100_000;
/// Simulated time between two dispatched jobs: 10 ms = 100 jobs/s.
const STEP_MS: u64 = 10;

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let target_jobs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let per_file: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000);
    println!("machine: {} ({} cores)", cpu_model(), cores());
    println!(
        "workload: {files} request files x {per_file} URLs = {} URLs over {HOSTS} hosts; \
         {target_jobs} jobs at 100 jobs/s simulated; target 100 pages/s, interval 1 s",
        files * per_file
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::new(dir.path().join("spool"));
    let started = Instant::now();
    publish(&spool, files, per_file);
    println!(
        "request files written: {:.1} s, {:.0} MiB on disk",
        started.elapsed().as_secs_f64(),
        dir_bytes(&dir.path().join("spool")) as f64 / (1024.0 * 1024.0)
    );
    println!(
        "RSS before the frontier opens: VmRSS {}, VmHWM {}",
        proc_status("VmRSS"),
        proc_status("VmHWM")
    );

    let config = FrontierConfig {
        target_pages_per_sec: 100.0,
        interval_ms: 1_000,
        min_interval_ms: 1_000,
        allow_private_addresses: true,
        ..FrontierConfig::default()
    };
    let mut f = Frontier::open(&dir.path().join("db"), spool, config).expect("open");
    let mut now = 1_700_000_000_000u64;

    let t = Instant::now();
    let (mut robots, mut pages) = (0u64, 0u64);
    let mut peak_hosts = 0usize;
    let mut peak_queued = 0u64;
    let mut steps = 0u64;
    while robots + pages < target_jobs {
        for name in f.hosts_needing_dns(now) {
            let answer = Resolution::Addresses {
                addrs: vec![ip_of(&name)],
                ttl_secs: 86_400,
            };
            f.on_dns(&name, &answer, now).expect("dns");
        }
        for job in f.next_jobs(now, 1).expect("next_jobs") {
            match job.purpose {
                FetchPurpose::Robots => {
                    robots += 1;
                    f.on_robots_fetched(job.job, 404, Some(b""), None, now)
                        .expect("robots");
                }
                FetchPurpose::Page => {
                    pages += 1;
                    f.on_report(&stored(job.job), now).expect("report");
                }
            }
        }
        steps += 1;
        if steps % 1_000 == 0 {
            let s = f.stats();
            peak_hosts = peak_hosts.max(s.hosts);
            peak_queued = peak_queued.max(s.urls_queued);
        }
        now += STEP_MS;
    }
    let wall_s = t.elapsed().as_secs_f64();
    f.flush_outcomes(now).expect("flush");
    let s = f.stats();
    println!(
        "ran {} jobs ({robots} robots.txt, {pages} pages) in {:.0} s simulated, {wall_s:.1} s wall",
        robots + pages,
        (now - 1_700_000_000_000) as f64 / 1_000.0
    );
    println!(
        "status: request files loaded {}, pending {} (of {files}); ready target s = {}, pipeline {}",
        s.request_files_loaded, s.request_files_pending, s.ready_target, s.pipeline
    );
    println!(
        "status: hosts in memory {} (peak {}), URLs in RocksDB queues {} (peak {})",
        s.hosts,
        peak_hosts.max(s.hosts),
        s.urls_queued,
        peak_queued.max(s.urls_queued)
    );
    println!(
        "memory: VmRSS {}, VmHWM {}",
        proc_status("VmRSS"),
        proc_status("VmHWM")
    );
    println!(
        "RESULT | {files} | {} | {} | {} | {} | {} | {} |",
        s.request_files_loaded,
        s.request_files_pending,
        s.hosts,
        s.urls_queued,
        proc_status("VmRSS"),
        proc_status("VmHWM")
    );
    drop(f);
    dir.close().expect("remove temp spool");
}

/// Writes `files` request files of `per_file` URLs, URL `i` on host `i % HOSTS`.
fn publish(spool: &Spool, files: usize, per_file: usize) {
    let app = AppId::new("bench").expect("app");
    let dir = spool.requests(&app).expect("requests dir");
    let publisher = Publisher::new(dir, ComponentId::new("bench").expect("id")).expect("pub");
    let priority = Priority::new(10).expect("priority");
    let hints = Hints::default();
    let mut i = 0usize;
    let mut url = String::with_capacity(64);
    for _ in 0..files {
        let header = RequestHeader { priority };
        let mut w = RequestWriter::new(Vec::with_capacity(per_file * 48), header).expect("writer");
        for _ in 0..per_file {
            use std::fmt::Write as _;
            url.clear();
            let _ = write!(url, "http://h{}.bench.test/page/{i}", i % HOSTS);
            w.write(&url, &hints).expect("write");
            i += 1;
        }
        publisher
            .publish(priority, FileKind::Requests, &w.finish().expect("finish"))
            .expect("publish");
    }
}

/// Bytes of the regular files under `path`.
fn dir_bytes(path: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}
