//! A running `polycrawl websim`, started in a temporary directory and killed when
//! the handle is dropped.
//!
//! [`Websim::start`] runs the real binary with the given flags plus `--out <tmp>`
//! and `--exit-with-parent`, waits for the ready line (see `websim::cli`) and
//! parses it. The readers parse websim's documented output files; the address
//! helpers map a URL to the socket address websim serves it on (from `hosts.tsv`,
//! so tests need no DNS unless they test DNS).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hickory_resolver::config::{NameServerConfig, ResolveHosts, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::{Resolver, TokioResolver};

use crate::bin;
use crate::process::ProcessGuard;

/// How long websim may take to print its ready line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// One line of `hosts.tsv`.
#[derive(Debug, Clone, PartialEq)]
pub struct HostRow {
    /// Host name.
    pub name: String,
    /// Registered domain.
    pub domain: String,
    /// Address its name resolves to.
    pub addr: Ipv4Addr,
    /// `http` or `https`.
    pub scheme: String,
    /// Port of its scheme.
    pub port: u16,
    /// Number of pages.
    pub pages: u32,
    /// Popularity rank.
    pub rank: u32,
    /// robots.txt variant name.
    pub robots: String,
    /// Status of `/robots.txt`.
    pub robots_status: u16,
    /// `Crawl-delay` for polycrawl, seconds.
    pub crawl_delay: Option<f64>,
    /// Flags (`https`, `slow`, `gzip`, `chunked`, `dead`, `loops`, `seed`,
    /// `misbehave`, `shared`).
    pub flags: Vec<String>,
}

impl HostRow {
    /// True if the host has `flag`.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Where its canonical scheme is served.
    pub fn socket(&self) -> SocketAddr {
        SocketAddr::from((self.addr, self.port))
    }
}

/// One line of `manifest.tsv`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ManifestRow {
    /// Canonical URL.
    pub url: String,
    /// Status websim answers.
    pub status: u16,
    /// Link distance from a seed.
    pub depth: u32,
    /// Where it was first found (`None` for seeds).
    pub parent: Option<String>,
}

/// One line of `unreachable.tsv`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutcomeRow {
    /// Canonical URL.
    pub url: String,
    /// Outcome name (`dns_failure`, `connect_failure`, `too_many_failures`,
    /// `robots_excluded`).
    pub outcome: String,
    /// Link distance from a seed.
    pub depth: u32,
}

/// One line of the request log, read by websim's own reader (`websim::log`).
pub use websim::log::Line as LogLine;

/// Target prefix of the flush probes of [`Websim::flushed_log`]; [`Websim::log`]
/// leaves their lines out.
const FLUSH_PROBE: &str = "/__polycrawl-tests-flush-probe/";

/// How long a flush probe may take to show in the log (websim writes every 100 ms).
const FLUSH_TIMEOUT: Duration = Duration::from_secs(20);

/// A running websim.
#[derive(Debug)]
pub struct Websim {
    /// The process.
    pub process: ProcessGuard,
    /// DNS server address (UDP and TCP).
    pub dns: SocketAddr,
    /// Port of every http listener.
    pub http_port: u16,
    /// Port of every https listener.
    pub https_port: u16,
    /// Every `key=value` of the ready line (paths: `out`, `seeds`, `manifest`,
    /// `never`, `unreachable`, `hosts`, `log`, `ca`).
    pub ready: HashMap<String, String>,
    dir: tempfile::TempDir,
}

impl Websim {
    /// Starts `polycrawl websim ARGS --out <tmp> --exit-with-parent` and waits until
    /// it is ready.
    ///
    /// # Panics
    /// If it does not start, with its stdout and stderr.
    pub fn start(args: &[&str]) -> Websim {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let out = dir.path().join("out");
        let mut cmd = Command::new(bin::polycrawl());
        cmd.arg("websim")
            .args(args)
            .arg("--out")
            .arg(&out)
            .arg("--exit-with-parent");
        cmd.env("RUST_LOG", "warn");
        let mut process =
            ProcessGuard::spawn("websim", cmd, dir.path()).expect("starting polycrawl websim");
        let line = match process.wait_for_line(|l| l.starts_with("websim ready "), READY_TIMEOUT) {
            Ok(l) => l,
            Err(report) => panic!("{report}"),
        };
        let ready = parse_ready(&line);
        let get = |k: &str| {
            ready
                .get(k)
                .unwrap_or_else(|| panic!("ready line lacks {k}: {line}"))
        };
        let dns = get("dns").parse().expect("dns=ADDR");
        let http_port = get("http_port").parse().expect("http_port=N");
        let https_port = get("https_port").parse().expect("https_port=N");
        Websim {
            process,
            dns,
            http_port,
            https_port,
            ready,
            dir,
        }
    }

    /// A hickory resolver that asks only websim's DNS (no hosts file, 3 s timeout,
    /// 2 attempts): an independent check of what websim answers.
    pub fn resolver(&self) -> TokioResolver {
        let mut ns = NameServerConfig::udp(self.dns.ip());
        for c in &mut ns.connections {
            c.port = self.dns.port();
        }
        let mut builder = Resolver::builder_with_config(
            ResolverConfig::from_name_servers(vec![ns]),
            TokioRuntimeProvider::default(),
        );
        let opts = builder.options_mut();
        opts.use_hosts_file = ResolveHosts::Never;
        opts.timeout = Duration::from_secs(3);
        opts.attempts = 2;
        builder.build().expect("resolver")
    }

    /// A path from the ready line (`out`, `seeds`, `manifest`, `never`,
    /// `unreachable`, `hosts`, `log`, `ca`).
    pub fn path(&self, key: &str) -> PathBuf {
        PathBuf::from(
            self.ready
                .get(key)
                .unwrap_or_else(|| panic!("no {key} in the ready line")),
        )
    }

    /// The temporary directory (holds `out/` and `websim.stderr`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The CA certificate (PEM).
    pub fn ca_pem(&self) -> String {
        read(&self.path("ca"))
    }

    /// The seed URLs.
    pub fn seeds(&self) -> Vec<String> {
        read(&self.path("seeds"))
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `hosts.tsv`.
    pub fn hosts(&self) -> Vec<HostRow> {
        rows(&self.path("hosts"))
            .map(|f| HostRow {
                name: f[0].clone(),
                domain: f[1].clone(),
                addr: f[2].parse().expect("address"),
                scheme: f[3].clone(),
                port: f[4].parse().expect("port"),
                pages: f[5].parse().expect("pages"),
                rank: f[6].parse().expect("rank"),
                robots: f[7].clone(),
                robots_status: f[8].parse().expect("robots_status"),
                crawl_delay: f[9].parse().ok(),
                flags: if f[10] == "-" {
                    vec![]
                } else {
                    f[10].split(',').map(str::to_owned).collect()
                },
            })
            .collect()
    }

    /// The first host for which `pred` holds.
    ///
    /// # Panics
    /// If there is none.
    pub fn host_where(&self, what: &str, pred: impl Fn(&HostRow) -> bool) -> HostRow {
        self.hosts()
            .into_iter()
            .find(|h| pred(h))
            .unwrap_or_else(|| panic!("no host that is {what}"))
    }

    /// `manifest.tsv`.
    pub fn manifest(&self) -> Vec<ManifestRow> {
        rows(&self.path("manifest"))
            .map(|f| ManifestRow {
                url: f[0].clone(),
                status: f[1].parse().expect("status"),
                depth: f[2].parse().expect("depth"),
                parent: (f[3] != "-").then(|| f[3].clone()),
            })
            .collect()
    }

    /// `changes.tsv`: each manifest URL and what a recrawl at the served revision
    /// gets (`changed`, `not_modified`, `unchanged`, `fixed`; see `websim::revision`).
    pub fn changes(&self) -> Vec<(String, String)> {
        rows(&self.path("changes"))
            .map(|f| (f[0].clone(), f[1].clone()))
            .collect()
    }

    /// `unreachable.tsv`.
    pub fn unreachable(&self) -> Vec<OutcomeRow> {
        rows(&self.path("unreachable"))
            .map(|f| OutcomeRow {
                url: f[0].clone(),
                outcome: f[1].clone(),
                depth: f[2].parse().expect("depth"),
            })
            .collect()
    }

    /// `never.txt`.
    pub fn never(&self) -> Vec<String> {
        read(&self.path("never"))
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The request log so far (lines are flushed at least every 100 ms; use
    /// [`Websim::flushed_log`] for every request served until now).
    pub fn log(&self) -> Vec<LogLine> {
        let path = self.path("log");
        let text = read(&path);
        let lines = LogLine::parse_all(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        lines
            .into_iter()
            .filter(|l| !l.target.starts_with(FLUSH_PROBE))
            .collect()
    }

    /// The request log holding every request websim served before this call
    /// (see [`Websim::flush_log`]).
    pub fn flushed_log(&self) -> Vec<LogLine> {
        self.flush_log();
        self.log()
    }

    /// Waits until the log file holds every request websim served before this
    /// call: sends websim one probe request (a Host it does not serve, answered 421 and
    /// logged like any request, after every request already answered) and waits
    /// until the probe's line is in the file, so every line logged before it is
    /// too. [`Websim::log`] leaves the probe's line out.
    ///
    /// # Panics
    /// If websim cannot be reached or the probe is not logged within 20 s.
    pub fn flush_log(&self) {
        static PROBES: AtomicU64 = AtomicU64::new(0);
        let target = format!(
            "{FLUSH_PROBE}{}-{}",
            std::process::id(),
            PROBES.fetch_add(1, Ordering::Relaxed)
        );
        let host = self
            .hosts()
            .into_iter()
            .find(|h| !h.has("dead"))
            .expect("a host that answers");
        let addr = SocketAddr::from((host.addr, self.http_port));
        let request = format!(
            "GET {target} HTTP/1.1\r\nHost: flush-probe.invalid\r\nConnection: close\r\n\r\n"
        );
        let mut stream = TcpStream::connect_timeout(&addr, FLUSH_TIMEOUT)
            .unwrap_or_else(|e| panic!("connecting to websim at {addr}: {e}"));
        stream
            .set_read_timeout(Some(FLUSH_TIMEOUT))
            .expect("a read timeout");
        stream
            .write_all(request.as_bytes())
            .unwrap_or_else(|e| panic!("sending the flush probe to {addr}: {e}"));
        let mut reply = Vec::new();
        let _ = stream.read_to_end(&mut reply);
        let path = self.path("log");
        test_support::wait::until_some("websim to log its flush probe", FLUSH_TIMEOUT, || {
            let text = read(&path);
            let lines =
                LogLine::parse_all(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            lines.iter().any(|l| l.target == target).then_some(())
        });
    }

    /// The socket address websim serves `url` on (by its host's address and the
    /// URL's scheme), or `None` if the host is not websim's.
    pub fn socket_for(&self, url: &str) -> Option<SocketAddr> {
        let (scheme, rest) = url.split_once("://")?;
        let authority = rest.split(['/', '?', '#']).next()?;
        let name = authority
            .rsplit_once(':')
            .map_or(authority, |(n, _)| n)
            .to_ascii_lowercase();
        let host = self.hosts().into_iter().find(|h| h.name == name)?;
        let port = if scheme.eq_ignore_ascii_case("https") {
            self.https_port
        } else {
            self.http_port
        };
        Some(SocketAddr::from((host.addr, port)))
    }
}

/// Parses the `key=value` words of a ready line.
pub fn parse_ready(line: &str) -> HashMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The tab-separated fields of each non-comment line of a file.
fn rows(path: &Path) -> impl Iterator<Item = Vec<String>> {
    read(path)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split('\t').map(str::to_owned).collect::<Vec<_>>())
        .collect::<Vec<_>>()
        .into_iter()
}
