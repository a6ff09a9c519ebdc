//! A running `polycrawl websim`, started in a temporary directory and killed when
//! the handle is dropped.
//!
//! [`Websim::start`] runs the real binary with the given flags plus `--out <tmp>`
//! and `--exit-with-parent`, waits for the ready line (see `websim::cli`) and
//! parses it. The readers parse websim's documented output files; the address
//! helpers map a URL to the socket address websim serves it on (from `hosts.tsv`,
//! so tests need no DNS unless they test DNS).

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
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

/// One line of the request log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Unix microseconds (`CLOCK_REALTIME`), read after the request head was parsed:
    /// the request arrived at or before it.
    pub start_us: u64,
    /// Unix microseconds, read after the response's last byte was handed to the
    /// kernel: an upper bound of that moment (late when websim's task was
    /// descheduled).
    pub end_us: u64,
    /// Unix microseconds, read before the response's first byte was handed to the
    /// kernel: a lower bound of that moment.
    pub write_from_us: u64,
    /// Microseconds from `start_us` to `end_us` on websim's monotonic clock.
    pub service_us: u64,
    /// `http` or `https`.
    pub scheme: String,
    /// Host header.
    pub host: String,
    /// Listener address.
    pub server: SocketAddr,
    /// Client address.
    pub client: SocketAddr,
    /// Method.
    pub method: String,
    /// Request target.
    pub target: String,
    /// Status.
    pub status: u16,
    /// Body bytes sent.
    pub bytes: u64,
    /// User agent.
    pub user_agent: String,
}

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

    /// The request log so far (lines are flushed at least every 100 ms).
    pub fn log(&self) -> Vec<LogLine> {
        rows(&self.path("log"))
            .map(|f| LogLine {
                start_us: f[0].parse().expect("start"),
                end_us: f[1].parse().expect("end"),
                scheme: f[2].clone(),
                host: f[3].clone(),
                server: f[4].parse().expect("server"),
                client: f[5].parse().expect("client"),
                method: f[6].clone(),
                target: f[7].clone(),
                status: f[8].parse().expect("status"),
                bytes: f[9].parse().expect("bytes"),
                user_agent: f[10].clone(),
                write_from_us: f[11].parse().expect("write from"),
                service_us: f[12].parse().expect("service time"),
            })
            .collect()
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
