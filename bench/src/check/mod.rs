//! `polycrawl-bench check --websim DIR`: what a crawler, any crawler, fetched from
//! websim, judged by websim's oracle files, from websim's request log alone (so a
//! crawler that stores nothing websim can read, like wget2, is judged the same
//! way as polycrawl).
//!
//! The comparison with the manifest (coverage, duplicate URLs, URLs of
//! `never.txt`) is [`WebsimCheck`], the demo's check, with "stored" taken to be the
//! URLs websim answered with status 200. On top of it:
//! - **pages**: distinct URLs answered 200 (robots.txt fetches aside);
//! - **robots-disallowed**: distinct URLs fetched that the host's robots.txt
//!   forbids for `--agent`, by websim's own matcher (`websim::robots`, the
//!   manifest's oracle), or any URL of a host whose robots.txt answers 5xx;
//! - **never (other)**: URLs of `never.txt` fetched that robots.txt allows (trap
//!   links in comments and scripts, stylesheets, images, links of nofollow pages);
//! - **unexpected**: URLs in none of websim's files (not in the manifest, not
//!   unreachable, not in `never.txt`);
//! - the timing figures of [`pace`].
//!
//! The log must hold one crawler's run only: the benchmark starts a fresh websim
//! for every run. robots.txt fetches are the requests whose path starts with
//! `/robots` (as in [`WebsimCheck`]).
//!
//! Output: one line `check key=value ...` on stdout; sample URLs of each kind of
//! problem on stderr. Cost: O(log lines + manifest rows) time and memory.

pub mod pace;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use polycrawl::orchestrate::websim_check::{WebsimCheck, log_origin, tsv};
use websim::outfiles::OutPaths;
use websim::paths::encode_non_ascii;
use websim::robots::{RobotsVariant, Rules};

/// Flags of `polycrawl-bench check`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// websim's output directory (manifest.tsv, never.txt, unreachable.tsv,
    /// hosts.tsv, requests.tsv).
    #[arg(long, value_name = "DIR")]
    pub websim: PathBuf,
    /// The robots.txt product token whose rules judge the fetches.
    #[arg(long, value_name = "TOKEN", default_value = "polycrawl")]
    pub agent: String,
    /// Check the gaps per origin (scheme://host:port) against this interval, ms.
    #[arg(long, value_name = "MS")]
    pub interval_ms: Option<u64>,
    /// Check the start spacing per IP address against this interval, ms.
    #[arg(long, value_name = "MS")]
    pub ip_interval_ms: Option<u64>,
    /// Sample URLs printed (stderr) for each kind of problem.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub samples: usize,
}

/// One line of websim's request log (`websim::log` documents the columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Unix microseconds, request head received.
    pub start_us: u64,
    /// Unix microseconds, response written (read after its last byte was handed to
    /// the kernel: late by however long websim's task was not scheduled).
    pub end_us: u64,
    /// Unix microseconds, read before the response's first byte was handed to the
    /// kernel: the response was not complete before it. `end_us` for a log written
    /// before websim logged it.
    pub write_from_us: u64,
    /// `scheme://host:port`, the Host header lower-cased (with the listener's port
    /// when the header has none).
    pub origin: String,
    /// The Host header without its port, lower-case.
    pub name: String,
    /// The listener's address.
    pub server_ip: IpAddr,
    /// Request target (path and query) as sent.
    pub target: String,
    /// Status sent (0: none).
    pub status: u16,
}

impl Request {
    /// The URL as websim's files write it.
    pub fn url(&self) -> String {
        format!("{}{}", self.origin, self.target)
    }

    /// A robots.txt fetch (websim's `/robots.txt` or its redirect target).
    pub fn is_robots(&self) -> bool {
        self.target.starts_with("/robots")
    }
}

/// Reads websim's request log.
pub fn read_log(path: &Path) -> anyhow::Result<Vec<Request>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let parsed = (|| {
            anyhow::ensure!(f.len() >= 9, "{} columns, want 11", f.len());
            let server: std::net::SocketAddr = f[4].parse().context("server address")?;
            let origin = log_origin(f[2], f[3], f[4]);
            let authority = origin.split_once("://").map_or("", |(_, a)| a);
            let end_us = f[1].parse().context("end")?;
            Ok(Request {
                start_us: f[0].parse().context("start")?,
                end_us,
                write_from_us: match f.get(11) {
                    Some(w) => w.parse().context("write from")?,
                    None => end_us,
                },
                name: authority
                    .rsplit_once(':')
                    .map_or(authority, |(n, _)| n)
                    .to_owned(),
                origin,
                server_ip: server.ip(),
                target: f[7].to_owned(),
                status: f[8].parse().context("status")?,
            })
        })();
        out.push(parsed.with_context(|| format!("{} line {}", path.display(), i + 1))?);
    }
    Ok(out)
}

/// What the checker needs of one line of `hosts.tsv`.
#[derive(Debug, Clone, PartialEq)]
pub struct HostRow {
    /// The address its name resolves to.
    pub addr: IpAddr,
    /// Its robots.txt rules for the agent; `None` when robots.txt answers 5xx
    /// (nothing may be fetched).
    pub robots: Option<Rules>,
    /// Nothing listens on its address.
    pub dead: bool,
    /// websim's misbehaving host (never linked).
    pub misbehave: bool,
}

/// Reads `hosts.tsv` into name -> row, with robots rules for `agent`.
pub fn read_hosts(path: &Path, agent: &str) -> anyhow::Result<HashMap<String, HostRow>> {
    let mut hosts = HashMap::new();
    for f in tsv(path)? {
        anyhow::ensure!(
            f.len() >= 11,
            "{}: a line with {} columns",
            path.display(),
            f.len()
        );
        let variant = RobotsVariant::ALL
            .into_iter()
            .find(|v| v.name() == f[7])
            .with_context(|| format!("{}: unknown robots variant {:?}", path.display(), f[7]))?;
        let flags: HashSet<&str> = f[10].split(',').collect();
        let row = HostRow {
            addr: f[2]
                .parse()
                .with_context(|| format!("{}: address {:?}", path.display(), f[2]))?,
            robots: (!variant.is_server_error()).then(|| Rules::parse(variant.rules_text(), agent)),
            dead: flags.contains("dead"),
            misbehave: flags.contains("misbehave"),
        };
        hosts.insert(f[0].clone(), row);
    }
    Ok(hosts)
}

/// The whole judgement of one run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Coverage, duplicates and `never.txt` fetches, as the demo computes them.
    pub oracle: WebsimCheck,
    /// robots.txt requests.
    pub robots_requests: u64,
    /// Distinct URLs requested (robots.txt aside).
    pub urls: u64,
    /// Distinct URLs answered 200 (robots.txt aside).
    pub pages: u64,
    /// Requests beyond the first of each URL (robots.txt aside).
    pub duplicate_fetches: u64,
    /// Distinct URLs fetched that robots.txt forbids.
    pub robots_disallowed: Vec<String>,
    /// URLs of `never.txt` fetched that robots.txt allows.
    pub never_other: Vec<String>,
    /// URLs in none of websim's files.
    pub unexpected: Vec<String>,
    /// Fetch rates.
    pub rates: pace::Rates,
    /// How the fetches kept the politeness intervals given.
    pub politeness: Politeness,
}

/// How a run kept the politeness intervals it was given (each figure only when
/// its interval was given).
#[derive(Debug, Clone, Default)]
pub struct Politeness {
    /// Per-origin politeness, when an interval was given.
    pub origins: Option<pace::GroupPace>,
    /// Per-IP politeness, when an interval was given.
    pub ips: Option<pace::GroupPace>,
    /// Fetches per second politeness allows, when an interval was given.
    pub bound_per_s: Option<f64>,
    /// Requests started over what per-IP politeness allowed while addresses had
    /// work left ([`pace::work_bound_share`]), when an IP interval was given.
    pub work_bound_share: Option<f64>,
}

impl Politeness {
    /// Judges `log` against the per-origin and per-IP intervals, over the hosts
    /// `hosts` (for the bound).
    fn judge(
        log: &[Request],
        hosts: &[HostRow],
        interval_ms: Option<u64>,
        ip_interval_ms: Option<u64>,
    ) -> Politeness {
        Politeness {
            origins: interval_ms.map(|ms| pace::by_origin(log, ms * 1000)),
            ips: ip_interval_ms.map(|ms| pace::by_ip(log, ms * 1000)),
            work_bound_share: ip_interval_ms.and_then(|ms| pace::work_bound_share(log, ms * 1000)),
            bound_per_s: pace::bound_per_s(hosts, interval_ms, ip_interval_ms),
        }
    }

    /// Appends its ` key=value` fields to the check line `s`.
    fn write_fields(&self, s: &mut String) {
        let ms =
            |us: Option<i64>| us.map_or("-".to_owned(), |u| format!("{:.1}", u as f64 / 1000.0));
        for (name, p) in [("origin", &self.origins), ("ip", &self.ips)] {
            if let Some(p) = p {
                let _ = write!(
                    s,
                    " {name}s={} {name}_violations={} {name}_min_ms={} {name}_max_in_flight={}",
                    p.groups,
                    p.violations,
                    ms(p.min_us),
                    p.max_in_flight
                );
            }
        }
        if let Some(b) = self.bound_per_s {
            let _ = write!(s, " bound_per_s={b:.1}");
        }
        if let Some(w) = self.work_bound_share {
            let _ = write!(s, " work_bound_share={w:.3}");
        }
    }
}

/// Judges the run in websim's output directory `dir`.
pub fn judge(
    dir: &Path,
    agent: &str,
    interval_ms: Option<u64>,
    ip_interval_ms: Option<u64>,
) -> anyhow::Result<Report> {
    let paths = OutPaths::in_dir(dir);
    let log = read_log(&paths.log)?;
    let hosts = read_hosts(&paths.hosts, agent)?;
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut ok: HashSet<String> = HashSet::new();
    let mut robots_requests = 0;
    for r in &log {
        if r.is_robots() {
            robots_requests += 1;
            continue;
        }
        let url = r.url();
        if r.status == 200 {
            ok.insert(url.clone());
        }
        *counts.entry(url).or_default() += 1;
    }
    let oracle = WebsimCheck::run(&ok, &paths.manifest, &paths.never, &paths.log)?;
    let known: HashSet<String> = tsv(&paths.manifest)?
        .into_iter()
        .chain(tsv(&paths.unreachable)?)
        .filter_map(|f| f.into_iter().next())
        .collect();
    let never: HashSet<&String> = oracle.never_fetched.iter().collect();
    let never_all: HashSet<String> = std::fs::read_to_string(&paths.never)
        .with_context(|| format!("reading {}", paths.never.display()))?
        .lines()
        .map(str::to_owned)
        .collect();

    let mut report = Report {
        robots_requests,
        urls: counts.len() as u64,
        pages: ok.len() as u64,
        duplicate_fetches: counts.values().map(|n| n - 1).sum(),
        rates: pace::rates(&log),
        ..Report::default()
    };
    let mut seen = HashSet::new();
    for r in log.iter().filter(|r| !r.is_robots()) {
        let url = r.url();
        if !seen.insert(url.clone()) {
            continue;
        }
        if disallowed(&hosts, r) {
            report.robots_disallowed.push(url);
        } else if never.contains(&url) {
            report.never_other.push(url);
        } else if !known.contains(&url) && !never_all.contains(&url) {
            report.unexpected.push(url);
        }
    }
    for v in [
        &mut report.robots_disallowed,
        &mut report.never_other,
        &mut report.unexpected,
    ] {
        v.sort();
    }
    let rows: Vec<HostRow> = hosts.into_values().collect();
    report.politeness = Politeness::judge(&log, &rows, interval_ms, ip_interval_ms);
    report.oracle = oracle;
    Ok(report)
}

/// True if the host's robots.txt forbids the request's target.
fn disallowed(hosts: &HashMap<String, HostRow>, r: &Request) -> bool {
    let Some(host) = hosts.get(&r.name) else {
        return false;
    };
    match &host.robots {
        None => true,
        Some(rules) => {
            let mut path = String::with_capacity(r.target.len());
            encode_non_ascii(&mut path, &r.target);
            !rules.allowed(&path)
        }
    }
}

impl Report {
    /// The `check key=value ...` line.
    pub fn line(&self) -> String {
        let o = &self.oracle;
        let mut s = format!(
            "check requests={} robots_requests={} urls={} pages={} expected={} covered={} \
             coverage_pct={:.2} duplicate_urls={} duplicate_fetches={} robots_disallowed={} \
             never_other={} unexpected={} first_start_us={} last_end_us={} span_s={:.3} \
             rate_mid80={:.1} rate_peak10s={:.1}",
            o.requests,
            self.robots_requests,
            self.urls,
            self.pages,
            o.expected,
            o.fetched,
            o.percent(),
            o.duplicates.len(),
            self.duplicate_fetches,
            self.robots_disallowed.len(),
            self.never_other.len(),
            self.unexpected.len(),
            self.rates.first_start_us,
            self.rates.last_end_us,
            self.rates
                .last_end_us
                .saturating_sub(self.rates.first_start_us) as f64
                / 1e6,
            self.rates.mid80_per_s,
            self.rates.peak_per_s,
        );
        self.politeness.write_fields(&mut s);
        s
    }

    /// Up to `n` sample URLs of each kind of problem, one a line.
    pub fn samples(&self, n: usize) -> String {
        let mut s = String::new();
        for (what, urls) in [
            ("not fetched", &self.oracle.missing_sample),
            ("fetched more than once", &self.oracle.duplicates),
            ("robots-disallowed", &self.robots_disallowed),
            ("in never.txt", &self.never_other),
            ("unexpected", &self.unexpected),
        ] {
            for u in urls.iter().take(n) {
                let _ = writeln!(s, "  {what}: {u}");
            }
        }
        s
    }
}

/// Runs `polycrawl-bench check`.
pub fn run(args: &CheckArgs) -> anyhow::Result<()> {
    let report = judge(
        &args.websim,
        &args.agent,
        args.interval_ms,
        args.ip_interval_ms,
    )?;
    eprint!("{}", report.samples(args.samples));
    println!("{}", report.line());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_line(start: u64, scheme: &str, host: &str, target: &str, status: u16) -> String {
        format!(
            "{start}\t{}\t{scheme}\t{host}\t127.1.0.1:80\t127.0.0.1:5\tGET\t{target}\t{status}\t10\twget2\n",
            start + 100
        )
    }

    #[test]
    fn judges_any_crawler_by_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(
            p("manifest.tsv"),
            "#url\tstatus\tdepth\tparent\n\
             http://a.test:80/\t200\t0\t-\n\
             http://a.test:80/x\t200\t1\thttp://a.test:80/\n\
             http://a.test:80/gone\t404\t1\thttp://a.test:80/\n\
             http://b.test:80/\t200\t1\thttp://a.test:80/\n",
        )
        .unwrap();
        std::fs::write(
            p("unreachable.tsv"),
            "#url\toutcome\tdepth\tparent\nhttp://a.test:80/private/1\trobots_excluded\t1\thttp://a.test:80/\n",
        )
        .unwrap();
        std::fs::write(
            p("never.txt"),
            "http://a.test:80/private/1\nhttp://a.test:80/static/site.css\n",
        )
        .unwrap();
        std::fs::write(
            p("hosts.tsv"),
            "#host\tdomain\taddress\tscheme\tport\tpages\trank\trobots\trobots_status\tcrawl_delay\tflags\n\
             a.test\ta.test\t127.1.0.1\thttp\t80\t3\t0\tdisallow\t200\t-\tseed\n\
             b.test\tb.test\t127.1.0.2\thttp\t80\t1\t1\tserver_error\t503\t-\t-\n",
        )
        .unwrap();
        let log: String = [
            log_line(1_000_000, "http", "A.test:80", "/robots.txt", 200),
            log_line(1_100_000, "http", "a.test:80", "/", 200),
            log_line(1_200_000, "http", "a.test:80", "/", 200),
            log_line(1_300_000, "http", "a.test:80", "/gone", 404),
            log_line(1_400_000, "http", "a.test:80", "/private/1", 200),
            log_line(1_500_000, "http", "a.test:80", "/private/2", 200),
            log_line(1_600_000, "http", "a.test:80", "/static/site.css", 200),
            log_line(1_700_000, "http", "a.test:80", "/made-up", 404),
            log_line(1_800_000, "http", "b.test:80", "/", 200),
        ]
        .concat();
        std::fs::write(p("requests.tsv"), log).unwrap();

        let r = judge(dir.path(), "polycrawl", None, None).unwrap();
        assert_eq!((r.oracle.expected, r.oracle.fetched), (3, 2));
        assert_eq!(r.oracle.missing_sample, ["http://a.test:80/x"]);
        assert_eq!(r.oracle.requests, 9);
        assert_eq!(
            (r.robots_requests, r.urls, r.pages, r.duplicate_fetches),
            (1, 7, 5, 1)
        );
        assert_eq!(
            r.robots_disallowed,
            [
                "http://a.test:80/private/1",
                "http://a.test:80/private/2",
                "http://b.test:80/"
            ]
        );
        assert_eq!(r.never_other, ["http://a.test:80/static/site.css"]);
        assert_eq!(r.unexpected, ["http://a.test:80/made-up"]);
        assert!(r.politeness.origins.is_none() && r.politeness.bound_per_s.is_none());
        let line = r.line();
        assert!(
            line.starts_with(
                "check requests=9 robots_requests=1 urls=7 pages=5 expected=3 covered=2"
            ),
            "{line}"
        );
        assert!(line.contains(" duplicate_urls=1 duplicate_fetches=1 robots_disallowed=3 never_other=1 unexpected=1 "), "{line}");
        assert!(r.samples(5).contains("  not fetched: http://a.test:80/x\n"));

        let r = judge(dir.path(), "polycrawl", Some(2000), Some(2000)).unwrap();
        let o = r.politeness.origins.unwrap();
        assert_eq!((o.groups, o.violations), (2, 7));
        assert_eq!(r.politeness.ips.unwrap().groups, 1);
        assert_eq!(r.politeness.bound_per_s, Some(1.0));
        assert!(
            r.line().contains(" origins=2 origin_violations=7 "),
            "{}",
            r.line()
        );
    }

    #[test]
    fn a_short_log_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("requests.tsv");
        std::fs::write(&path, "1\t2\thttp\n").unwrap();
        let err = read_log(&path).unwrap_err();
        assert!(format!("{err:#}").contains("line 1"), "{err:#}");
    }
}
