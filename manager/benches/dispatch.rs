//! Frontier throughput: 1,000,000 queued URLs over 100,000 hosts, interval 0 and no
//! per-IP limit, driven like the service would with instant DNS, robots.txt 404 and
//! instant reports. Prints load, dispatch + report throughput and peak RSS.
//!
//! ```sh
//! cargo bench -p manager --bench dispatch            # 1,000,000 URLs, 100,000 hosts
//! cargo bench -p manager --bench dispatch -- 200000 20000
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

const URLS_PER_FILE: usize = 10_000;

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let urls: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let hosts: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    println!("machine: {} ({} cores)", cpu_model(), cores());
    println!("workload: {urls} URLs over {hosts} hosts, interval 0, no per-IP limit");

    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::new(dir.path().join("spool"));
    let started = Instant::now();
    publish(&spool, urls, hosts);
    println!(
        "request files written: {:.2} s",
        started.elapsed().as_secs_f64()
    );

    let config = FrontierConfig {
        interval_ms: 0,
        min_interval_ms: 0,
        ip_max_in_flight: 0,
        ip_min_interval_ms: 0,
        allow_private_addresses: true,
        target_pages_per_sec: 1e9,
        max_load_chunks_per_call: 1_000,
        outcome_max_age_ms: 1_000,
        ..FrontierConfig::default()
    };
    let mut f = Frontier::open(&dir.path().join("db"), spool, config).expect("open");
    let mut now = 1_700_000_000_000u64;

    let t = Instant::now();
    f.tick(now).expect("tick");
    let load_s = t.elapsed().as_secs_f64();
    let stats = f.stats();
    assert_eq!(stats.urls_queued, urls as u64, "everything loaded");
    println!(
        "load: {} URLs into {} hosts in {:.2} s = {:.0} URLs/s",
        urls,
        stats.hosts,
        load_s,
        urls as f64 / load_s
    );

    println!("RSS after load: {}", proc_status("VmRSS"));

    let t = Instant::now();
    let (mut robots, mut pages, mut page_time, mut pages_before) = (0u64, 0u64, 0f64, 0u64);
    let mut page_start: Option<Instant> = None;
    while pages < urls as u64 {
        for name in f.hosts_needing_dns(now) {
            let ip = ip_of(&name);
            let answer = Resolution::Addresses {
                addrs: vec![ip],
                ttl_secs: 86_400,
            };
            f.on_dns(&name, &answer, now).expect("dns");
        }
        let jobs = f.next_jobs(now, 1_024).expect("next_jobs");
        if jobs.is_empty() {
            now += 1;
            continue;
        }
        for job in jobs {
            match job.purpose {
                FetchPurpose::Robots => {
                    robots += 1;
                    f.on_robots_fetched(job.job, 404, Some(b""), None, now)
                        .expect("robots");
                }
                FetchPurpose::Page => {
                    if page_start.is_none() && robots as usize >= hosts {
                        page_start = Some(Instant::now());
                        pages_before = pages;
                    }
                    pages += 1;
                    f.on_report(&stored(job.job), now).expect("report");
                }
            }
        }
        now += 1;
    }
    let total_s = t.elapsed().as_secs_f64();
    if let Some(s) = page_start {
        page_time = s.elapsed().as_secs_f64();
    }
    f.flush_outcomes(now).expect("flush");
    let jobs = robots + pages;
    println!(
        "dispatch + report: {jobs} jobs ({robots} robots.txt, {pages} pages) in {total_s:.2} s = {:.0} jobs/s",
        jobs as f64 / total_s
    );
    if page_time > 0.0 {
        println!(
            "  pages only, once every robots.txt was in: {} jobs in {page_time:.2} s = {:.0} jobs/s",
            pages - pages_before,
            (pages - pages_before) as f64 / page_time
        );
    }
    println!("RSS at the end: {}", proc_status("VmRSS"));
    println!("peak RSS (VmHWM): {}", proc_status("VmHWM"));
}

/// Writes `urls` URLs over `hosts` hosts into request files, hosts interleaved.
fn publish(spool: &Spool, urls: usize, hosts: usize) {
    let app = AppId::new("bench").expect("app");
    let dir = spool.requests(&app).expect("requests dir");
    let publisher = Publisher::new(dir, ComponentId::new("bench").expect("id")).expect("pub");
    let priority = Priority::new(10).expect("priority");
    let hints = Hints::default();
    let mut i = 0;
    while i < urls {
        let mut w = RequestWriter::new(Vec::new(), RequestHeader { priority }).expect("writer");
        for _ in 0..URLS_PER_FILE.min(urls - i) {
            let host = i % hosts;
            w.write(&format!("http://h{host}.bench.test/page/{i}"), &hints)
                .expect("write");
            i += 1;
        }
        publisher
            .publish(priority, FileKind::Requests, &w.finish().expect("finish"))
            .expect("publish");
    }
}
