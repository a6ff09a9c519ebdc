//! Test support: a temp spool and database, request-file publishing, outcome reading,
//! and a simulated service that drives a `Frontier` with simulated time.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::net::IpAddr;
use std::path::PathBuf;

use manager::{Frontier, FrontierConfig};
use spool::formats::{Hints, Outcome, OutcomeReader, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::protocol::{FetchJob, FetchPurpose, FetchReport, FetchResult, Resolution};
use spool::publish::Publisher;
use spool::{AppId, ComponentId, OutcomeReason, Spool};

/// Simulated wall clock start (ms since the epoch).
pub const T0: u64 = 1_700_000_000_000;

/// A temp folder with a spool and a database path.
pub struct World {
    pub dir: tempfile::TempDir,
    pub spool: Spool,
    pub db: PathBuf,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let db = dir.path().join("db");
        World { dir, spool, db }
    }

    /// Opens the frontier with `config`, chaining off: these tests play a
    /// downloader that takes one job per host at a time (`chaining.rs` tests
    /// chained jobs, with [`World::open_chaining`]).
    pub fn open(&self, config: &FrontierConfig) -> Frontier {
        let config = FrontierConfig {
            chain_max_interval_ms: 0,
            ..config.clone()
        };
        Frontier::open(&self.db, self.spool.clone(), config).unwrap()
    }

    /// Opens the frontier with `config` as it is (chaining as configured).
    pub fn open_chaining(&self, config: &FrontierConfig) -> Frontier {
        Frontier::open(&self.db, self.spool.clone(), config.clone()).unwrap()
    }

    /// Publishes a request file of `urls` for `app` with `priority`.
    pub fn publish(&self, app: &str, priority: u8, urls: &[String]) {
        self.publish_with(app, priority, urls, &Hints::default());
    }

    pub fn publish_with(&self, app: &str, priority: u8, urls: &[String], hints: &Hints) {
        let app = AppId::new(app).unwrap();
        let dir = self.spool.requests(&app).unwrap();
        let publisher = Publisher::new(dir, ComponentId::new("test").unwrap()).unwrap();
        let priority = Priority::new(priority).unwrap();
        let mut w = RequestWriter::new(Vec::new(), RequestHeader { priority }).unwrap();
        for url in urls {
            w.write(url, hints).unwrap();
        }
        publisher
            .publish(priority, FileKind::Requests, &w.finish().unwrap())
            .unwrap();
    }

    /// Every outcome published for `app` so far.
    pub fn outcomes(&self, app: &str) -> Vec<Outcome> {
        let dir = self.spool.outcomes(&AppId::new(app).unwrap()).unwrap();
        let mut out = Vec::new();
        for name in dir.list().unwrap() {
            let file = File::open(dir.file_path(&name)).unwrap();
            for o in OutcomeReader::new(BufReader::new(file)).unwrap() {
                out.push(o.unwrap());
            }
        }
        out
    }

    pub fn outcome_urls(&self, app: &str, reason: OutcomeReason) -> Vec<String> {
        let mut urls: Vec<String> = self
            .outcomes(app)
            .into_iter()
            .filter(|o| o.reason == reason)
            .map(|o| o.url)
            .collect();
        urls.sort();
        urls
    }
}

/// A config for tests: short intervals, no per-IP limit, loopback allowed.
pub fn test_config() -> FrontierConfig {
    FrontierConfig {
        interval_ms: 1_000,
        min_interval_ms: 0,
        ip_max_in_flight: 0,
        ip_min_interval_ms: 0,
        allow_private_addresses: true,
        outcome_max_age_ms: 0,
        request_scan_interval_ms: 1_000,
        target_pages_per_sec: 1_000.0,
        ..FrontierConfig::default()
    }
}

pub fn urls(host: &str, paths: impl IntoIterator<Item = usize>) -> Vec<String> {
    paths
        .into_iter()
        .map(|p| format!("http://{host}/p{p}"))
        .collect()
}

pub fn addrs(ip: IpAddr) -> Resolution {
    Resolution::Addresses {
        addrs: vec![ip],
        ttl_secs: 86_400,
    }
}

pub fn stored(job: &FetchJob, status: u16, total_ms: u32) -> FetchReport {
    let mut report = test_support::reports::stored(
        job.job,
        status,
        "00-downloader-00000000000000000001.warc.gz",
    );
    let page = test_support::reports::page_mut(&mut report);
    page.wire_bytes = 100;
    page.body_bytes = 10;
    page.timing.total_ms = total_ms;
    report
}

pub fn failed(job: &FetchJob, reason: OutcomeReason) -> FetchReport {
    FetchReport {
        job: job.job,
        result: FetchResult::Failed {
            reason,
            detail: "simulated".into(),
        },
    }
}

/// Answers every pending DNS question with `ip_for(name)`.
pub fn answer_dns(f: &mut Frontier, now: u64, ip_for: &dyn Fn(&str) -> IpAddr) -> usize {
    let names = f.hosts_needing_dns(now);
    for name in &names {
        f.on_dns(name, &addrs(ip_for(name)), now).unwrap();
    }
    names.len()
}

/// A robots.txt response: status, body, Location.
pub type RobotsReply = (u16, Vec<u8>, Option<String>);

/// One dispatch seen by the simulated service.
#[derive(Debug, Clone)]
pub struct Dispatch {
    pub at: u64,
    pub ends: u64,
    pub job: FetchJob,
}

/// A simulated service: instant DNS, robots.txt from `robots`, pages that take
/// `duration(job)`, at most `capacity` jobs in flight.
pub struct Sim<'a> {
    pub now: u64,
    pub capacity: usize,
    pub ip_for: &'a dyn Fn(&str) -> IpAddr,
    pub robots: &'a dyn Fn(&str) -> RobotsReply,
    pub duration: &'a mut dyn FnMut(&FetchJob) -> u64,
    pub in_flight: Vec<Dispatch>,
    pub log: Vec<Dispatch>,
    /// Report time of each job, by job id.
    pub reported: BTreeMap<u64, u64>,
}

impl<'a> Sim<'a> {
    pub fn new(
        capacity: usize,
        ip_for: &'a dyn Fn(&str) -> IpAddr,
        robots: &'a dyn Fn(&str) -> RobotsReply,
        duration: &'a mut dyn FnMut(&FetchJob) -> u64,
    ) -> Self {
        Sim {
            now: T0,
            capacity,
            ip_for,
            robots,
            duration,
            in_flight: Vec::new(),
            log: Vec::new(),
            reported: BTreeMap::new(),
        }
    }

    /// Runs until nothing is left or `stop(self)` says so (checked after each step).
    pub fn run(&mut self, f: &mut Frontier, mut stop: impl FnMut(&Sim<'_>) -> bool) {
        for _ in 0..2_000_000 {
            answer_dns(f, self.now, self.ip_for);
            let room = self.capacity - self.in_flight.len();
            if room > 0 {
                for job in f.next_jobs(self.now, room).unwrap() {
                    // A chained job starts `gap_ms` after the job it follows ends
                    // (this simulated downloader's responses are all 200s).
                    let at = match job.after {
                        Some(after) => {
                            let first = self
                                .in_flight
                                .iter()
                                .find(|d| d.job.job == after.job)
                                .expect("a chained job follows a job in flight");
                            first.ends + u64::from(after.gap_ms)
                        }
                        None => self.now,
                    };
                    let ends = at + (self.duration)(&job);
                    let d = Dispatch { at, ends, job };
                    self.log.push(d.clone());
                    self.in_flight.push(d);
                }
            }
            if stop(self) {
                return;
            }
            if self.in_flight.iter().any(|d| d.ends <= self.now) {
                self.complete_due(f);
                continue;
            }
            if answer_dns(f, self.now, self.ip_for) > 0 {
                continue;
            }
            let stats = f.stats();
            if self.in_flight.is_empty()
                && stats.urls_queued == 0
                && stats.request_files_pending == 0
                && stats.outcomes_pending == 0
            {
                return;
            }
            let next_done = self.in_flight.iter().map(|d| d.ends).min();
            let wake = f.next_wakeup().filter(|w| *w > self.now);
            self.now = [next_done, wake]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(self.now + 1_000);
            self.complete_due(f);
        }
        panic!("simulation did not finish");
    }

    /// Reports every job that has ended by now.
    pub fn complete_due(&mut self, f: &mut Frontier) {
        self.in_flight.sort_by_key(|d| d.ends);
        while self.in_flight.first().is_some_and(|d| d.ends <= self.now) {
            let d = self.in_flight.remove(0);
            self.report(f, &d);
        }
    }

    pub fn report(&mut self, f: &mut Frontier, d: &Dispatch) {
        self.reported.insert(d.job.job.0, self.now);
        match d.job.purpose {
            FetchPurpose::Robots => {
                let (status, body, location) = (self.robots)(&d.job.url);
                assert!(
                    f.on_robots_fetched(
                        d.job.job,
                        status,
                        Some(&body),
                        location.as_deref(),
                        self.now
                    )
                    .unwrap()
                );
            }
            FetchPurpose::Page => {
                assert!(f.on_report(&stored(&d.job, 200, 5), self.now).unwrap());
            }
        }
    }

    pub fn pages(&self) -> Vec<&Dispatch> {
        self.log
            .iter()
            .filter(|d| d.job.purpose == FetchPurpose::Page)
            .collect()
    }
}

/// robots.txt: 404 everywhere.
pub fn no_robots(_: &str) -> RobotsReply {
    (404, Vec::new(), None)
}

/// `a.test` -> 10.0.0.1 style: one IP per distinct name.
pub fn ip_by_name(name: &str) -> IpAddr {
    let h = name
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    IpAddr::from([10, (h >> 16) as u8, (h >> 8) as u8, h as u8])
}

/// Tiny deterministic PRNG (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
