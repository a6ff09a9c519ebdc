//! `polycrawl websim`: flags, start-up and shutdown.
//!
//! Start-up: raise `RLIMIT_NOFILE` to the hard limit, generate the web, bind one
//! http and one https listener on every address that has a live host (same ports
//! everywhere), write the output files and the CA, start the DNS server and the
//! request log, print what it serves and finally one machine-readable line:
//!
//! ```text
//! websim ready dns=127.0.0.1:PORT http_port=P https_port=Q out=DIR seeds=FILE manifest=FILE never=FILE unreachable=FILE hosts=FILE log=FILE ca=FILE addresses=FIRST-LAST changes=FILE revision=N
//! ```
//!
//! (space-separated `key=value`; paths are absolute and must not contain spaces for a
//! parser that splits on them). Then it serves until SIGINT or SIGTERM (or, with
//! `--exit-with-parent`, until its parent process exits), flushes the request log,
//! prints `websim stopped` and exits 0.
//!
//! websim never binds or answers outside 127.0.0.0/8: `--dns-addr` must be a
//! 127.0.0.0/8 IPv4 address, and every HTTP address is 127.1.0.0 or above.
//!
//! Errors are [`CliError`]: a flag value that makes no sense, or the start-up or
//! shutdown step that failed with its cause.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::dns::{DnsServer, Zone};
use super::hosts::MIN_HOSTS;
use super::http::{Server, accept_loop};
use super::listen::{bind_all, raise_nofile_limit};
use super::log::{Flusher, RequestLog};
use super::model::{Params, Web};
use super::outfiles::{self, OutPaths};
use super::pace::Pacer;
use super::revision::Revision;
use super::throttle::Throttled;
use super::tls::{SimCa, TlsError};

/// Why `polycrawl websim` did not start or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// `--hosts` is below [`MIN_HOSTS`].
    #[error(
        "--hosts must be at least {MIN_HOSTS} (every special behaviour needs a host), got {got}"
    )]
    TooFewHosts {
        /// The value given.
        got: u32,
    },
    /// `--hosts` is above 1,000,000.
    #[error("--hosts must be at most 1000000, got {got}")]
    TooManyHosts {
        /// The value given.
        got: u32,
    },
    /// `--pages` is below `--hosts`.
    #[error("--pages must be at least --hosts ({hosts}), got {got}")]
    TooFewPages {
        /// `--hosts`.
        hosts: u32,
        /// The value given.
        got: u32,
    },
    /// `--size-skew` is outside 0..=3.
    #[error("--size-skew must be between 0 and 3, got {got}")]
    SizeSkew {
        /// The value given.
        got: f64,
    },
    /// `--communities` is above `--hosts`.
    #[error("--communities must be at most --hosts ({hosts}), got {got}")]
    Communities {
        /// `--hosts`.
        hosts: u32,
        /// The value given.
        got: u32,
    },
    /// `--change-share` is outside 0..=1.
    #[error("--change-share must be between 0 and 1, got {got}")]
    ChangeShare {
        /// The value given.
        got: f64,
    },
    /// `--revision` with `--export-static` (the static export is revision 0).
    #[error("--revision cannot be combined with --export-static (the export is revision 0)")]
    RevisionExport,
    /// `--orphans` with `--traps`, `--sitemaps` or `--components`.
    #[error(
        "--orphans cannot be combined with --traps, --sitemaps or --components \
         (their hosts are not sites with one root; see orphans.rs)"
    )]
    OrphansWith,
    /// `--component-seeds` other than 1 without `--components`.
    #[error("--component-seeds {got} needs --components (and at least 1)")]
    ComponentSeeds {
        /// The value given.
        got: u32,
    },
    /// `--dns-addr` is not a 127.0.0.0/8 IPv4 address.
    #[error("--dns-addr must be a 127.0.0.0/8 IPv4 address, got {got}")]
    DnsAddr {
        /// The value given.
        got: SocketAddr,
    },
    /// `--http-port` and `--https-port` name the same port.
    #[error("--http-port and --https-port must differ, both are {port}")]
    SamePorts {
        /// The port given twice.
        port: u16,
    },
    /// The static export failed.
    #[error(transparent)]
    Export(#[from] crate::export::ExportError),
    /// `--from-repository` with a flag of the generated web that it cannot honour.
    #[error("--from-repository cannot be combined with {flag} ({why})")]
    FromRepository {
        /// The flag.
        flag: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// The repository of `--from-repository` cannot be served.
    #[error(transparent)]
    DiskWeb(#[from] crate::diskweb::LoadError),
    /// `RLIMIT_NOFILE` is too low for the listeners this web needs.
    #[error(
        "websim needs about {need} file descriptors for {addresses} addresses, but RLIMIT_NOFILE is {nofile}; \
         use fewer --hosts or raise the hard limit"
    )]
    TooFewFiles {
        /// Descriptors needed.
        need: u64,
        /// Addresses that get listeners.
        addresses: usize,
        /// The limit.
        nofile: u64,
    },
    /// A start-up or shutdown step failed on I/O.
    #[error("{what}: {source}")]
    Io {
        /// The step, such as "binding the http listeners".
        what: String,
        /// The I/O error.
        source: io::Error,
    },
    /// Generating the CA or building the TLS config failed.
    #[error("{what}: {source}")]
    Tls {
        /// The step, such as "generating the CA".
        what: &'static str,
        /// The TLS error.
        source: TlsError,
    },
}

/// Wraps an I/O error with the step that failed.
pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> CliError {
    let what = what.into();
    move |source| CliError::Io { what, source }
}

/// Wraps a TLS error with the step that failed.
pub(crate) fn tls_err(what: &'static str) -> impl FnOnce(TlsError) -> CliError {
    move |source| CliError::Tls { what, source }
}

/// TTL of every DNS answer, seconds.
pub const DNS_TTL: u32 = 300;

/// Command-line flags of `polycrawl websim`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Seed of the generated web: the same seed and flags give the same web.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Number of generated hosts (at least 20; the misbehaving host comes on top).
    #[arg(long, default_value_t = 200)]
    pub hosts: u32,
    /// Number of pages over all hosts (at least one per host).
    #[arg(long, default_value_t = 20_000)]
    pub pages: u32,
    /// Exponent of the Zipf law host sizes follow (host of popularity rank r gets a
    /// share proportional to 1/r^S): 1 is the web's usual skew, 0 gives every host
    /// the same number of pages (a crawl then is not bounded by one huge host).
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub size_skew: f64,
    /// Only well-behaved hosts, as a static web server serves them: no dead or slow
    /// host, no robots.txt answering 5xx or asking for a crawl delay (redirects,
    /// 404s, https, gzip and the other robots.txt variants stay). For throughput
    /// benchmarks against other crawlers.
    #[arg(long)]
    pub plain: bool,
    /// A web every mainstream crawler reads alike (implies `--plain`): links only as
    /// `<a href="...">` with lower-case, double-quoted, percent-encoded absolute
    /// paths, relative paths or absolute URLs (no `<base>`, frames, refreshes,
    /// character references or fragments), no `<img>`, stylesheet or `<textarea>`
    /// URLs, and robots.txt files of plain `Disallow` prefixes only (no agent
    /// groups, wildcards, `Allow` or redirects); no redirect loops, and https pages
    /// linked by their https URLs (never through http's redirect). The web a peer
    /// such as wget2 crawls exactly, for the throughput benchmark of record.
    #[arg(long)]
    pub simple: bool,
    /// Add six trap hosts linked from the most popular host's home page: a
    /// session-id trap, an endless year/month calendar, a chain of 50 redirects,
    /// endless page-number sequences, endless counters and a maze (see `traps.rs`;
    /// flagged `trap` in hosts.tsv). Ignored with `--plain`.
    #[arg(long)]
    pub traps: bool,
    /// Add the sitemap host, linked from the most popular host's home page: its
    /// robots.txt names a sitemap index of a plain and a gzip sitemap, which list
    /// pages no link reaches, a robots-excluded page and URLs out of the default
    /// scope (see `sitemaps.rs`; flagged `sitemaps` in hosts.tsv). Ignored with
    /// `--plain`.
    #[arg(long)]
    pub sitemaps: bool,
    /// Add five stuck hosts, every page of which the most popular host's home page
    /// links: one refuses connections, one accepts and never answers, one never
    /// answers robots.txt, one answers it 500, one 503 (see `stuck.rs`; flagged
    /// `stuck` in hosts.tsv). A correct crawl retries them a bounded number of
    /// times and ends their URLs with outcomes (`unreachable.tsv`). Never seeds.
    /// Ignored with `--plain`.
    #[arg(long)]
    pub stuck_hosts: bool,
    /// Give 6 % of the non-home pages robots directives of their own, in the
    /// `X-Robots-Tag` header or a `<meta>` element (nofollow, none, noarchive,
    /// noindex, for polycrawl or another agent; see `robots_tags.rs`), and write
    /// `robots-tags.tsv`. Ignored with `--plain`.
    #[arg(long)]
    pub robots_tags: bool,
    /// Skew in-links to deep pages: half of each page's same-host filler links go
    /// to one of 8 hub pages of its host at fixed random places (the first hubs
    /// linked most), for importance-ordered crawls to find (`links.rs`).
    #[arg(long)]
    pub hubs: bool,
    /// Make the three most popular hosts ask for less: popularity rank 0 answers
    /// its 2nd and 4th page requests 429 with `Retry-After: 5`, rank 1 its 2nd to
    /// 4th 429 without it, rank 2 its 2nd to 4th 503 (see `throttle.rs`).
    #[arg(long)]
    pub throttle: bool,
    /// Every host on an address of its own (no virtual-hosting groups), so that
    /// per-IP politeness binds no tighter than per-host politeness: for
    /// politeness benchmarks whose bound is hosts / interval. Pages, links and
    /// robots.txt stay the same web.
    #[arg(long)]
    pub own_addresses: bool,
    /// Make every host's home page a seed, the trap hosts' too (not the
    /// misbehaving host's), as an open-web crawl is seeded from a list of sites
    /// nobody vetted; the manifest is the crawl from all of them. Without it the
    /// seeds are the max(3, hosts/20) most popular hosts.
    #[arg(long)]
    pub all_seeds: bool,
    /// Make only the N most popular hosts' home pages seeds (0, the default:
    /// max(3, hosts/20)), so that a crawl finds the other sites only through
    /// links: the home-page ring reaches every host. Ignored with --all-seeds.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed_hosts: u32,
    /// Split every generated host into K locally disconnected components, each
    /// its own tree with its own root, and make every component root of a seed
    /// host a seed (for seed-by-seed crawls: a site has several parties). The
    /// manifest folder gains `parties.tsv`: what each seed's party holds. 0 (the
    /// default): no components, the web is exactly what it was without the flag.
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub components: u32,
    /// With `--components`: make the first N pages of every component of a seed
    /// host seeds (its root and the root's first children), so a site has
    /// several parties that overlap (each child's party is mostly its
    /// component's); `parties.tsv` lists each. 1 (the default): the roots only.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub component_seeds: u32,
    /// Give every site with at least 4N pages N orphan pages: pages its own
    /// pages never link but the home page of another site (the one before it in
    /// the ring) does, the coverage problem of a two-level crawl (FC2L-UDC,
    /// Figure 2). The manifest is unchanged in meaning (orphans are reachable);
    /// `orphans.tsv` lists the manifest's pages that only links from other sites
    /// reach, what a two-level crawl without the fix misses (see `orphans.rs`).
    /// Not with `--traps`, `--sitemaps` or `--components`. 0 (the default): the
    /// web is exactly what it was without the flag.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub orphans: u32,
    /// Give the hosts a community structure: deal them into N communities of equal
    /// size, and make 90 % of the cross-host links a page draws (and of redirect
    /// hops, and http-to-https upgrade links) go to hosts of the linking host's own
    /// community, as real sites link mostly to related sites. 0 (the default): no
    /// communities, the web is exactly what it was without the flag. Site
    /// assignment (`polycrawl assign`) can only beat the hash on a web with
    /// locality; see `model.rs`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub communities: u32,
    /// Serve revision N of the web (0, the default: the original): a share of the
    /// generated pages (`--change-share`) differ from revision 0 in content,
    /// `ETag` and `Last-Modified`; `changes.tsv` lists what a recrawl gets for
    /// each manifest URL (see `revision.rs`). Links are the same at every revision.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub revision: u32,
    /// Share of the generated pages changed at a revision above 0, from 0 to 1
    /// (rounded down to per mille).
    #[arg(long, value_name = "S", default_value_t = 0.2)]
    pub change_share: f64,
    /// Where the DNS server listens (UDP and TCP; a 127.0.0.0/8 address, port 0 picks one).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub dns_addr: SocketAddr,
    /// Port of the http listeners on every address (0 picks one free on all).
    #[arg(long, default_value_t = 0)]
    pub http_port: u16,
    /// Port of the https listeners on every address (0 picks one free on all).
    #[arg(long, default_value_t = 0)]
    pub https_port: u16,
    /// Output directory: seeds, manifest, never, unreachable, hosts, log, CA.
    #[arg(long, default_value = "websim-out")]
    pub out: PathBuf,
    /// Write the manifest here instead of OUT/manifest.tsv.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Write the seeds here instead of OUT/seeds.txt.
    #[arg(long)]
    pub seeds: Option<PathBuf>,
    /// Write the request log here instead of OUT/requests.tsv.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// First-byte delay of slow hosts, milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub slow_ms: u64,
    /// Network latency of every host, milliseconds: no response's first byte goes
    /// out sooner than this after its request head arrived (a slow host waits the
    /// longer of this and --slow-ms). For benchmarks where the network, not the
    /// cores, is the bound: a fetcher with N requests in flight gets at most
    /// N / latency pages a second. 0 (the default): answer at once.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub latency_ms: u64,
    /// Give every client address (the peer IP of a connection) a fixed share of
    /// bandwidth over all its connections: response bytes (head and body) go out
    /// at most at this many bytes per second per address, after a burst of
    /// max(16 KiB, 50 ms of the rate) (see `pace.rs`). Off by default.
    #[arg(long, value_name = "BYTES_PER_SEC", value_parser = clap::value_parser!(u64).range(1..))]
    pub pace_per_client: Option<u64>,
    /// Tokio worker threads (default: the number of cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Write the web as static files and an nginx configuration into DIR and exit
    /// instead of serving it (see `export.rs`); needs fixed --http-port and
    /// --https-port, since URLs carry them. The manifest, seeds, hosts and CA go to
    /// --out as usual; the ready line starts `websim exported`.
    #[arg(long, value_name = "DIR")]
    pub export_static: Option<PathBuf>,
    /// Serve the stored crawl in this WARC repository as the web instead of a
    /// generated one (the disk web, `diskweb/`): every stored response at its
    /// URL as stored, on the ports the stored URLs name; seeds, manifest and hosts
    /// from the repository. The flags of the generated web are ignored;
    /// `--pace-per-client`, `--dns-addr`, `--out`, `--threads` apply.
    #[arg(long, value_name = "REPO")]
    pub from_repository: Option<PathBuf>,
    /// Exit (like on SIGTERM) when the parent process exits; test harnesses use it so
    /// that no websim outlives a killed test.
    #[arg(long)]
    pub exit_with_parent: bool,
}

impl Args {
    /// The revision to serve.
    pub fn revision(&self) -> Revision {
        Revision {
            number: self.revision,
            // In 0..=1 after `validate`: the cast cannot overflow.
            change_per_mille: (self.change_share * 1000.0).floor() as u32,
        }
    }
    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<(), CliError> {
        if self.hosts < MIN_HOSTS {
            return Err(CliError::TooFewHosts { got: self.hosts });
        }
        if self.hosts > 1_000_000 {
            return Err(CliError::TooManyHosts { got: self.hosts });
        }
        if self.pages < self.hosts {
            return Err(CliError::TooFewPages {
                hosts: self.hosts,
                got: self.pages,
            });
        }
        if !(0.0..=3.0).contains(&self.size_skew) {
            return Err(CliError::SizeSkew {
                got: self.size_skew,
            });
        }
        if self.communities > self.hosts {
            return Err(CliError::Communities {
                hosts: self.hosts,
                got: self.communities,
            });
        }
        if !(0.0..=1.0).contains(&self.change_share) {
            return Err(CliError::ChangeShare {
                got: self.change_share,
            });
        }
        if self.from_repository.is_some() {
            let ports = "the stored URLs carry their ports";
            for (given, flag, why) in [
                (
                    self.export_static.is_some(),
                    "--export-static",
                    "it exports the generated web",
                ),
                (
                    self.revision > 0,
                    "--revision",
                    "the stored crawl has one revision",
                ),
                (self.http_port != 0, "--http-port", ports),
                (self.https_port != 0, "--https-port", ports),
            ] {
                if given {
                    return Err(CliError::FromRepository { flag, why });
                }
            }
        }
        if self.orphans > 0 && (self.traps || self.sitemaps || self.components > 1) {
            return Err(CliError::OrphansWith);
        }
        if self.component_seeds == 0 || (self.component_seeds > 1 && self.components == 0) {
            return Err(CliError::ComponentSeeds {
                got: self.component_seeds,
            });
        }
        if self.revision > 0 && self.export_static.is_some() {
            return Err(CliError::RevisionExport);
        }
        match self.dns_addr {
            SocketAddr::V4(a) if a.ip().is_loopback() => {}
            other => return Err(CliError::DnsAddr { got: other }),
        }
        if self.http_port != 0 && self.http_port == self.https_port {
            return Err(CliError::SamePorts {
                port: self.http_port,
            });
        }
        Ok(())
    }
}

/// Runs websim until interrupted.
pub fn run(args: Args) -> Result<(), CliError> {
    args.validate()?;
    let threads = match args.threads {
        Some(n) => usize::from(n),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("websim")
        .enable_all()
        .build()
        .map_err(io_err("starting the tokio runtime"))?;
    let result = runtime.block_on(serve(args));
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

fn absolute(p: &Path) -> Result<PathBuf, CliError> {
    std::path::absolute(p).map_err(io_err(format!("resolving {}", p.display())))
}

fn out_paths(args: &Args) -> Result<OutPaths, CliError> {
    std::fs::create_dir_all(&args.out).map_err(io_err(format!(
        "creating the output directory {}",
        args.out.display()
    )))?;
    let mut paths = OutPaths::in_dir(&absolute(&args.out)?);
    // An earlier run's crawl config names a name server that is gone.
    match std::fs::remove_file(&paths.crawl_config) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            return Err(io_err(format!("removing {}", paths.crawl_config.display()))(e));
        }
        _ => {}
    }
    for (over, slot) in [
        (&args.manifest, &mut paths.manifest),
        (&args.seeds, &mut paths.seeds),
        (&args.log, &mut paths.log),
    ] {
        if let Some(p) = over {
            *slot = absolute(p)?;
            if let Some(parent) = slot.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(io_err(format!("creating {}", parent.display())))?;
            }
        }
    }
    Ok(paths)
}

async fn serve(args: Args) -> Result<(), CliError> {
    let nofile = match raise_nofile_limit() {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, "websim: could not raise RLIMIT_NOFILE");
            1024
        }
    };
    let paths = out_paths(&args)?;
    if let Some(repo) = &args.from_repository {
        let repo = absolute(repo)?;
        return crate::diskweb::serve_repository(&args, &repo, &paths, nofile).await;
    }
    let mut params = Params {
        size_skew: args.size_skew,
        plain: args.plain || args.simple,
        simple: args.simple,
        traps: args.traps,
        http_port: 0,
        https_port: 0,
        communities: args.communities,
        own_addresses: args.own_addresses,
        all_seeds: args.all_seeds,
        seed_hosts: args.seed_hosts,
        sitemaps: args.sitemaps,
        components: args.components,
        component_seeds: args.component_seeds,
        stuck_hosts: args.stuck_hosts,
        robots_tags: args.robots_tags,
        hubs: args.hubs,
        ..Params::new(args.seed, args.hosts, args.pages)
    };
    if let Some(dir) = &args.export_static {
        return export_static(params, &args, &paths, dir);
    }
    let live = live_addresses(&Web::new(params).with_orphans(args.orphans));
    let need = 2 * live.len() as u64 + 256;
    if need > nofile {
        return Err(CliError::TooFewFiles {
            need,
            addresses: live.len(),
            nofile,
        });
    }
    let addrs: Vec<Ipv4Addr> = live.iter().map(|&(_, a)| a).collect();
    let (http_port, http_listeners) =
        bind_all(&addrs, args.http_port).map_err(io_err("binding the http listeners"))?;
    let (https_port, https_listeners) =
        bind_all(&addrs, args.https_port).map_err(io_err("binding the https listeners"))?;
    params.http_port = http_port;
    params.https_port = https_port;
    let web = Arc::new(Web::new(params).with_orphans(args.orphans));

    let summary = outfiles::write_all(&web, &args.revision(), &paths)
        .map_err(io_err("writing the manifest files"))?;
    let services = Services::start(
        args.dns_addr,
        &paths,
        web.hosts.iter().map(|h| (h.name.as_str(), h.addr, h.https)),
    )
    .await?;
    let (acceptor, log) = (services.acceptor.clone(), Arc::clone(&services.log));
    let dns = services.dns.local_addr();

    let server = Arc::new(Server {
        web: Arc::clone(&web),
        log,
        slow: Duration::from_millis(args.slow_ms),
        latency: Duration::from_millis(args.latency_ms),
        throttle: args.throttle.then(|| Throttled::new(&web)),
        revision: args.revision(),
        pace: args.pace_per_client.map(Pacer::new),
    });
    let mut tasks = JoinSet::new();
    for (&(index, _), l) in live.iter().zip(http_listeners) {
        tasks.spawn(accept_loop(l, Arc::clone(&server), index, None));
    }
    for (&(index, _), l) in live.iter().zip(https_listeners) {
        tasks.spawn(accept_loop(
            l,
            Arc::clone(&server),
            index,
            Some(acceptor.clone()),
        ));
    }

    outfiles::write_crawl_config(&paths, dns).map_err(io_err("writing the crawl config"))?;
    print_ready(&args, &web, &addrs, dns, &paths, &summary);
    services
        .serve_until_stopped(tasks, args.exit_with_parent)
        .await
}

/// The addresses (index, address) with at least one host that is not dead: they
/// get listeners.
fn live_addresses(plan: &Web) -> Vec<(u32, Ipv4Addr)> {
    let mut live: Vec<(u32, Ipv4Addr)> = plan
        .hosts
        .iter()
        .filter(|h| !h.dead)
        .map(|h| (h.addr_index, h.addr))
        .collect();
    live.sort_unstable();
    live.dedup();
    live
}

/// The generated web's start-up lines and its ready line (see the module docs).
fn print_ready(
    args: &Args,
    web: &Web,
    addrs: &[Ipv4Addr],
    dns: SocketAddr,
    paths: &OutPaths,
    summary: &outfiles::Summary,
) {
    let (http_port, https_port) = (web.params.http_port, web.params.https_port);
    let first = addrs.first().copied().unwrap_or(Ipv4Addr::LOCALHOST);
    let last = addrs.last().copied().unwrap_or(Ipv4Addr::LOCALHOST);
    let d = |p: &Path| p.display().to_string();
    println!(
        "websim: seed {}, {} hosts (+1 misbehaving) on {} addresses {first}-{last}, {} pages",
        args.seed,
        args.hosts,
        web.addrs.len(),
        args.pages
    );
    println!("websim: dns {dns}  http port {http_port}  https port {https_port}");
    println!("websim: seeds     {}", d(&paths.seeds));
    println!("websim: CA        {}", d(&paths.ca));
    println!(
        "websim: crawl it  polycrawl crawl --seeds {} --config {} --out OUT",
        d(&paths.seeds),
        d(&paths.crawl_config)
    );
    println!(
        "websim: manifest  {} ({} fetches, {} pages; {} outcomes; {} never)",
        d(&paths.manifest),
        summary.fetched,
        summary.pages,
        summary.outcomes,
        summary.never
    );
    println!("websim: hosts     {}", d(&paths.hosts));
    println!("websim: log       {}", d(&paths.log));
    println!(
        "websim ready dns={dns} http_port={http_port} https_port={https_port} out={} seeds={} manifest={} never={} unreachable={} hosts={} log={} ca={} addresses={first}-{last} changes={} revision={}",
        d(&paths.dir),
        d(&paths.seeds),
        d(&paths.manifest),
        d(&paths.never),
        d(&paths.unreachable),
        d(&paths.hosts),
        d(&paths.log),
        d(&paths.ca),
        d(&paths.changes),
        args.revision,
    );
}

/// What a running websim serves besides its web, whichever web that is (the
/// generated one, or the disk web): the CA and the TLS acceptor, the request log
/// and its flusher, the DNS server, and the SIGTERM and SIGINT handlers (in place
/// before the ready line, so a SIGTERM right after it is handled, not the
/// default action).
pub(crate) struct Services {
    /// The TLS acceptor of every https host.
    pub acceptor: TlsAcceptor,
    /// The request log.
    pub log: Arc<RequestLog>,
    /// The DNS server.
    pub dns: DnsServer,
    flusher: Flusher,
    term: Signal,
    int: Signal,
}

impl Services {
    /// Writes the CA to `paths.ca`, opens the request log at `paths.log`, and
    /// starts the DNS server on `dns_addr` for `hosts` (name, address, whether it
    /// serves https).
    pub(crate) async fn start<'a>(
        dns_addr: SocketAddr,
        paths: &OutPaths,
        hosts: impl Iterator<Item = (&'a str, Ipv4Addr, bool)> + Clone,
    ) -> Result<Services, CliError> {
        let ca = SimCa::generate().map_err(tls_err("generating the CA"))?;
        ca.write_ca_pem(&paths.ca)
            .map_err(tls_err("writing the CA"))?;
        let https_names = hosts
            .clone()
            .filter(|&(_, _, https)| https)
            .map(|(name, _, _)| name.to_owned());
        let acceptor = TlsAcceptor::from(
            ca.server_config(https_names)
                .map_err(tls_err("building the TLS config"))?,
        );
        let log = RequestLog::create(&paths.log).map_err(io_err("creating the request log"))?;
        let flusher = log.start_flusher();
        let mut zone = Zone::new(DNS_TTL);
        for (name, addr, _) in hosts {
            zone.insert(name, addr);
        }
        let dns = DnsServer::start(dns_addr, Arc::new(zone))
            .await
            .map_err(io_err(format!("starting the DNS server on {dns_addr}")))?;
        let term =
            signal(SignalKind::terminate()).map_err(io_err("installing the SIGTERM handler"))?;
        let int =
            signal(SignalKind::interrupt()).map_err(io_err("installing the SIGINT handler"))?;
        Ok(Services {
            acceptor,
            log,
            dns,
            flusher,
            term,
            int,
        })
    }

    /// After the ready line: flushes stdout, serves `tasks` (the listeners) until
    /// SIGTERM or SIGINT (or the parent's exit, with `exit_with_parent`), then
    /// stops them, the DNS server and the log (flushed), and says so.
    pub(crate) async fn serve_until_stopped(
        mut self,
        mut tasks: JoinSet<()>,
        exit_with_parent: bool,
    ) -> Result<(), CliError> {
        use std::io::Write as _;
        io::stdout().flush().map_err(io_err("writing to stdout"))?;
        let why = wait_for_stop(&mut self.term, &mut self.int, exit_with_parent).await;
        tracing::info!(reason = why, "websim: stopping");
        tasks.abort_all();
        drop(self.dns);
        self.log
            .flush()
            .map_err(io_err("flushing the request log"))?;
        drop(self.flusher);
        println!("websim stopped ({why})");
        Ok(())
    }
}

/// `--export-static DIR`: the manifest files, the CA and the static web, then exit.
fn export_static(
    mut params: Params,
    args: &Args,
    paths: &OutPaths,
    dir: &Path,
) -> Result<(), CliError> {
    params.http_port = args.http_port;
    params.https_port = args.https_port;
    if params.http_port == 0 || params.https_port == 0 {
        return Err(crate::export::ExportError::PortsNotFixed.into());
    }
    let web = Web::new(params).with_orphans(args.orphans);
    let summary = outfiles::write_all(&web, &args.revision(), paths)
        .map_err(io_err("writing the manifest files"))?;
    let ca = SimCa::generate().map_err(tls_err("generating the CA"))?;
    ca.write_ca_pem(&paths.ca)
        .map_err(tls_err("writing the CA"))?;
    let dir = absolute(dir)?;
    let done = crate::export::export(&web, &ca, &dir)?;
    let d = |p: &Path| p.display().to_string();
    println!(
        "websim exported dir={} files={} bytes={} locations={} hosts={} pages={} http_port={} https_port={} out={} seeds={} manifest={} never={} hosts_tsv={} ca={}",
        d(&dir),
        done.files,
        done.bytes,
        done.locations,
        done.hosts,
        summary.pages,
        args.http_port,
        args.https_port,
        d(&paths.dir),
        d(&paths.seeds),
        d(&paths.manifest),
        d(&paths.never),
        d(&paths.hosts),
        d(&paths.ca),
    );
    Ok(())
}

pub(crate) async fn wait_for_stop(
    term: &mut Signal,
    int: &mut Signal,
    exit_with_parent: bool,
) -> &'static str {
    let parent_gone = async {
        if !exit_with_parent {
            return std::future::pending().await;
        }
        let parent = std::os::unix::process::parent_id();
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if std::os::unix::process::parent_id() != parent {
                return;
            }
        }
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
        () = parent_gone => "parent exited",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(argv: &[&str]) -> Result<Args, Box<dyn std::error::Error>> {
        let cli = Cli::try_parse_from(std::iter::once("websim").chain(argv.iter().copied()))?;
        cli.args.validate()?;
        Ok(cli.args)
    }

    #[test]
    fn flags_and_validation() {
        let a = parse(&["--hosts", "2000", "--pages", "100000", "--seed", "7"]).unwrap();
        assert_eq!(
            (a.hosts, a.pages, a.seed, a.slow_ms),
            (2000, 100_000, 7, 2000)
        );
        assert!(
            parse(&["--hosts", "5"])
                .unwrap_err()
                .to_string()
                .contains("at least 20")
        );
        assert!(parse(&["--hosts", "50", "--pages", "10"]).is_err());
        assert!(
            parse(&["--dns-addr", "10.0.0.1:53"])
                .unwrap_err()
                .to_string()
                .contains("127.0.0.0/8")
        );
        assert!(parse(&["--http-port", "8080", "--https-port", "8080"]).is_err());
        assert!(parse(&["--threads", "0"]).is_err());
        assert_eq!(a.pace_per_client, None);
        let paced = parse(&["--pace-per-client", "250000"]).unwrap();
        assert_eq!(paced.pace_per_client, Some(250_000));
        assert!(parse(&["--pace-per-client", "0"]).is_err());
        assert!(parse(&["--from-repository", "r"]).is_ok());
        let e = parse(&["--from-repository", "r", "--http-port", "8080"]).unwrap_err();
        assert!(e.to_string().contains("--http-port"), "{e}");
        assert!(parse(&["--from-repository", "r", "--revision", "1"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert_eq!(parse(&["--orphans", "3"]).unwrap().orphans, 3);
        assert!(parse(&["--component-seeds", "2"]).is_err());
        assert!(parse(&["--components", "3", "--component-seeds", "0"]).is_err());
        assert_eq!(
            parse(&["--components", "3", "--component-seeds", "2"])
                .unwrap()
                .component_seeds,
            2
        );
        for other in [&["--traps"][..], &["--sitemaps"], &["--components", "2"]] {
            let argv: Vec<&str> = ["--orphans", "3"].iter().chain(other).copied().collect();
            assert!(parse(&argv).unwrap_err().to_string().contains("--orphans"));
        }
    }
}
