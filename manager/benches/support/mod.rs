//! Helpers the manager benchmarks share: simulated addresses and reports, and the
//! machine and memory figures every benchmark prints.

use std::net::IpAddr;

use spool::protocol::FetchReport;

/// Host `hN` gets its own address 10.x.y.z, so the per-IP limit never binds.
pub fn ip_of(name: &str) -> IpAddr {
    let n: u32 = name
        .trim_start_matches('h')
        .split('.')
        .next()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    IpAddr::from((10u32 << 24 | n).to_be_bytes())
}

pub fn stored(job: spool::protocol::JobId) -> FetchReport {
    let mut report =
        test_support::reports::stored(job, 200, "10-bench-00000000000000000001.warc.gz");
    test_support::reports::page_mut(&mut report).body_bytes = 800;
    report
}

pub use test_support::proc::{cores, cpu_model};

/// A `kB` field of /proc/self/status (`VmHWM` is the peak resident set size).
pub fn proc_status(key: &str) -> String {
    test_support::proc::status_kib(None, key)
        .map_or_else(|| "unknown".to_owned(), |k| format!("{k} kB"))
}
