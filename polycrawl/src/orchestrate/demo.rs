//! `polycrawl demo`: websim plus the whole crawling system and the breadth-first
//! application, each a separate child process, then a summary that checks the
//! crawl against websim's oracle (coverage, duplicate fetches, robots).
//!
//! **Verdict.** The demo exits 1 when a process kept dying, or when a crawl that
//! must cover the web exactly did not: a status-200 page of the manifest not
//! stored, a URL of `never.txt` fetched, or a URL fetched twice that no kill
//! explains. A URL fetched again after a process that held its job was killed
//! (kill -9, the OOM killer: any death the supervisor saw) is the documented
//! bound of crash safety, not an error: the summary counts those refetches and
//! names the roles whose deaths explain them (`websim_check` defines when a kill
//! explains a refetch).
//!
//! The demo config is the default config with what a simulated web on loopback
//! needs: websim's DNS server as the only name server, private addresses allowed
//! (downloader and manager), websim's CA trusted, and a short politeness interval
//! (`--interval-ms`, per host and per IP address, since every websim host is
//! local) with short back-offs so failing hosts settle within the run. Robots
//! exclusion, one request in flight per host and the per-IP limits stay on: the
//! demo runs the same code as a crawl of the web.
//!
//! `--out` (default `demo-out`) holds `config.ron`, `admin-token`, `pids`,
//! `websim/`, `spool/`, `state/`, `repository/` and `logs/`. The admin page
//! listens on a free loopback port, printed at the start as `admin: http://ADDR/`.
//!
//! **Resuming.** From websim's start until the crawl is complete, `demo-resume`
//! records the web (hosts, pages, seed, slow-host delay), websim's ports and its
//! request logs so far. A demo started on a directory that has it, with the same
//! web, resumes: the state, spool and repository are kept, websim serves the same
//! web on the same ports (the crawl's URLs carry them) and logs into a new file,
//! and the summary's duplicate count spans every run's log. So after Ctrl-C or
//! SIGTERM (which stop every process in order, print the summary and exit 0), or
//! even a kill of the demo, the same command finishes the crawl. Otherwise a
//! directory left by an earlier demo (it has `config.ron`) is emptied of the
//! demo's files first; any other non-empty directory is refused.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::child::Child;
use super::finish::finish;
use super::layout::Layout;
use super::machines::Machines;
use super::parts::SplitArgs;
use super::progress::Progress;
use super::system::{Ending, Plan, SupervisionArgs, System};
use super::websim_check::{Kill, WebsimCheck};
use crate::config::Config;

/// How long websim may take to generate the web and print its ready line.
const WEBSIM_READY: Duration = Duration::from_secs(120);
/// How long websim gets to flush its request log after SIGTERM.
const WEBSIM_GRACE: Duration = Duration::from_secs(10);
/// The record of a demo that is not complete yet, in `--out`.
const RESUME: &str = "demo-resume";
/// What an earlier demo leaves in `--out`, removed before a new one.
const OWNED: [&str; 12] = [
    "seeds-shuffled.txt",
    "config.ron",
    "export",
    "mnt",
    "admin-token",
    "pids",
    RESUME,
    "websim",
    "spool",
    "state",
    "repository",
    "logs",
];

/// Flags of `polycrawl demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Hosts of the simulated web (at least 20).
    #[arg(long, default_value_t = 100)]
    pub hosts: u32,
    /// Pages of the simulated web, over all hosts.
    #[arg(long, default_value_t = 2500)]
    pub pages: u32,
    /// Seed of the simulated web (same seed and flags, same web).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output directory: config, spool, state, repository, logs, websim's files.
    #[arg(long, value_name = "DIR", default_value = "demo-out")]
    pub out: PathBuf,
    /// Downloader processes (default: one per 8 cores, at most 8; see `sizing.rs`).
    #[arg(long, default_value_t = super::sizing::default_downloaders(),
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub downloaders: u32,
    /// Politeness interval between two requests to one host (and one IP address),
    /// in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub interval_ms: u64,
    /// First-byte delay of websim's slow hosts, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub slow_ms: u64,
    /// Serve this WARC repository as the web instead of a generated one (websim
    /// `--from-repository`, the disk web: every stored response at its URL, on the
    /// ports its URLs carry, the stored seeds and pages as seeds and manifest). The
    /// flags that make a generated web are then ignored.
    #[arg(long, value_name = "REPO")]
    pub disk_web: Option<PathBuf>,
    /// Give every client address a fixed share of bandwidth, bytes per second
    /// (websim `--pace-per-client`): with `--machines`, each machine's downloads
    /// are paced as over a link of that speed.
    #[arg(long, value_name = "BYTES_PER_SEC", value_parser = clap::value_parser!(u64).range(1..))]
    pub pace_per_client: Option<u64>,
    /// websim's `--orphans N`: N pages per site that only other sites link (the
    /// coverage problem of a two-level crawl). 0: none.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub orphans: u32,
    /// websim's `--traps`: trap hosts linked from the most popular host (an
    /// endless calendar, a maze, session ids...), which a correct crawl cuts.
    #[arg(long)]
    pub traps: bool,
    /// When to give up restarting a process that keeps dying.
    #[command(flatten)]
    pub supervision: SupervisionArgs,
    /// Parts, crawling systems and the mode of a split crawl.
    #[command(flatten)]
    pub split: SplitArgs,
    /// Run every crawling system on simulated machines: per system, one network
    /// namespace for the manager and resolver, one for the downloaders and one
    /// for the parts it serves, each with its own address and its own NFS-like
    /// view of the spool (`polycrawl nfsim`), inotify off. Needs root, /dev/fuse
    /// and fusermount3.
    #[arg(long)]
    pub machines: bool,
    /// With --machines: how long a file one machine publishes stays invisible to
    /// the others (NFS attribute caching), in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000, requires = "machines")]
    pub visibility_delay_ms: u64,
    /// Network latency of every websim host, in milliseconds (websim
    /// `--latency-ms`): for runs where the network, not the cores, is the bound.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub latency_ms: u64,
    /// Split every websim site into K locally disconnected components, each root a
    /// seed (websim `--components`) [default: 3 with --strategy seed-by-seed, else
    /// none].
    #[arg(long, value_name = "K")]
    pub components: Option<u32>,
    /// Exponent of the Zipf law websim's host sizes follow (websim
    /// `--size-skew`): 1 is the web's usual skew, 0 makes every host the same size.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub size_skew: f64,
    /// Requests to one host at once (manager.frontier.connections_per_host; the
    /// per-IP limit is raised to match), each start still `--interval-ms` after
    /// the previous one.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub connections_per_host: u32,
    /// Cap on robots.txt's `Crawl-delay`, in milliseconds
    /// (manager.frontier.max_crawl_delay_ms; default: the config's, 60 s). websim
    /// has hosts that ask for `Crawl-delay: 1`: one of them, a second a request, can
    /// set a small web's crawl time.
    #[arg(long, value_name = "MS")]
    pub max_crawl_delay_ms: Option<u64>,
    /// Crawl websim's seeds in a fixed pseudo-random order (by a hash of each
    /// URL) instead of its order, most popular host first: a seed list in no
    /// particular order, as an operator's list of sites is.
    #[arg(long)]
    pub shuffle_seeds: bool,
    /// Make every websim host's home page a seed (websim `--all-seeds`; with
    /// components, every component root): a seed-by-seed crawl of a list of sites.
    #[arg(long)]
    pub all_seeds: bool,
    /// Every websim host on an address of its own (websim `--own-addresses`), so
    /// that the per-IP limits bind no tighter than the per-host ones.
    #[arg(long)]
    pub own_addresses: bool,
    /// The application: breadth-first or seed-by-seed, with its settings. A
    /// seed-by-seed demo is checked against the union of its seeds' parties
    /// (websim's `parties.tsv`).
    #[command(flatten)]
    pub strategy: super::strategy::StrategyArgs,
}

impl DemoArgs {
    /// The flags that make the web (a resumed demo needs the same).
    fn web(&self) -> String {
        if let Some(repo) = &self.disk_web {
            return format!("disk_web={}", repo.display());
        }
        let mut web = format!(
            "hosts={} pages={} seed={} slow_ms={}",
            self.hosts, self.pages, self.seed, self.slow_ms
        );
        // Only when set, so that a demo-resume of an earlier build still matches.
        if self.latency_ms > 0 {
            web.push_str(&format!(" latency_ms={}", self.latency_ms));
        }
        if self.components() > 0 {
            web.push_str(&format!(" components={}", self.components()));
        }
        if self.size_skew != 1.0 {
            web.push_str(&format!(" size_skew={}", self.size_skew));
        }
        for (set, flag) in [
            (self.all_seeds, "all_seeds"),
            (self.own_addresses, "own_addresses"),
            (self.traps, "traps"),
        ] {
            if set {
                web.push(' ');
                web.push_str(flag);
            }
        }
        if self.orphans > 0 {
            web.push_str(&format!(" orphans={}", self.orphans));
        }
        web
    }

    /// websim's `--components`.
    fn components(&self) -> u32 {
        self.components
            .unwrap_or(if self.strategy.seed_by_seed() { 3 } else { 0 })
    }
}

/// An unfinished demo: its web, websim's ports and request logs (`demo-resume`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resume {
    web: String,
    http_port: u16,
    https_port: u16,
    logs: Vec<PathBuf>,
}

impl Resume {
    fn render(&self) -> String {
        let mut text = format!(
            "web {}\nhttp_port {}\nhttps_port {}\n",
            self.web, self.http_port, self.https_port
        );
        for log in &self.logs {
            text.push_str(&format!("log {}\n", log.display()));
        }
        text
    }

    fn parse(text: &str) -> Option<Resume> {
        let mut web = None;
        let mut http_port = None;
        let mut https_port = None;
        let mut logs = Vec::new();
        for line in text.lines() {
            let (key, value) = line.split_once(' ')?;
            match key {
                "web" => web = Some(value.to_owned()),
                "http_port" => http_port = value.parse().ok(),
                "https_port" => https_port = value.parse().ok(),
                "log" => logs.push(PathBuf::from(value)),
                _ => return None,
            }
        }
        Some(Resume {
            web: web?,
            http_port: http_port?,
            https_port: https_port?,
            logs,
        })
    }

    /// Writes it to `<out>/demo-resume` (temporary file, then rename).
    fn save(&self, out: &Path) -> anyhow::Result<()> {
        let path = out.join(RESUME);
        let tmp = out.join(format!("{RESUME}.tmp"));
        std::fs::write(&tmp, self.render())
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
    }
}

/// What websim's ready line says (paths are absolute).
#[derive(Debug, Clone)]
struct Ready {
    dns: std::net::SocketAddr,
    seeds: PathBuf,
    manifest: PathBuf,
    never: PathBuf,
    log: PathBuf,
    ca: PathBuf,
    http_port: u16,
    https_port: u16,
}

impl Ready {
    fn parse(line: &str) -> anyhow::Result<Ready> {
        let kv: HashMap<&str, &str> = line
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .collect();
        let get = |k: &str| {
            kv.get(k)
                .copied()
                .with_context(|| format!("websim's ready line has no {k}=: {line}"))
        };
        Ok(Ready {
            dns: get("dns")?.parse().context("websim's dns= address")?,
            seeds: get("seeds")?.into(),
            manifest: get("manifest")?.into(),
            never: get("never")?.into(),
            log: get("log")?.into(),
            ca: get("ca")?.into(),
            http_port: get("http_port")?.parse().context("websim's http_port=")?,
            https_port: get("https_port")?.parse().context("websim's https_port=")?,
        })
    }
}

/// The page batches' age limit in a seed-by-seed demo, in milliseconds: small,
/// so that a URL comes back to its worker in about the network's time.
const SEED_BY_SEED_BATCH_AGE_MS: u64 = 50;

/// The demo's config: the defaults plus what websim on loopback needs.
fn demo_config(layout: &Layout, ready: &Ready, args: &DemoArgs) -> Config {
    let mut c = Config::default();
    layout.apply(&mut c);
    c.resolver.name_servers = vec![ready.dns];
    c.downloader.allow_private = true;
    c.downloader.extra_ca_file = Some(ready.ca.clone());
    c.downloader.max_batch_age_ms = 1000;
    if args.strategy.seed_by_seed() {
        // A seed-by-seed worker asks for its next URLs only when its `window`
        // come back: a page batch held open up to a second would bound it, not
        // the network (issue 41; docs/scaling.md).
        c.downloader.max_batch_age_ms = SEED_BY_SEED_BATCH_AGE_MS;
    }
    c.app.seeds_file = Some(ready.seeds.clone());
    // Polybot's research crawl: every host websim's pages lead to.
    c.app.scope = app_core::scope::ScopeKind::Open;
    c.app.allowed_domains = Vec::new();
    c.app.scan_interval_ms = 500;
    c.app.urls_per_request_file = 500;
    let m = &mut c.manager;
    m.status_interval_ms = 5000;
    m.progress_interval_ms = 500;
    m.shutdown_grace_ms = 5000;
    // A free port: several demos may run on one machine.
    m.admin_http = "127.0.0.1:0".to_owned();
    let f = &mut m.frontier;
    f.allow_private_addresses = true;
    f.target_pages_per_sec = 1000.0;
    f.interval_ms = args.interval_ms;
    f.min_interval_ms = args.interval_ms.min(f.min_interval_ms);
    f.connections_per_host = args.connections_per_host;
    f.ip_max_in_flight = args.connections_per_host.max(2);
    f.ip_min_interval_ms = args.interval_ms / 2;
    f.backoff_ms = vec![500, 1000, 2000];
    f.dns_retry_ms = 5000;
    f.request_scan_interval_ms = 500;
    f.outcome_max_age_ms = 500;
    f.keep_alive_max_interval_ms = args.interval_ms.max(1000);
    if let Some(ms) = args.max_crawl_delay_ms {
        f.max_crawl_delay_ms = ms;
    }
    c
}

/// websim's flags for the generated web of `args`.
fn generated_web_flags(cmd: &mut Command, args: &DemoArgs) {
    cmd.args(["--hosts", &args.hosts.to_string()])
        .args(["--pages", &args.pages.to_string()])
        .args(["--seed", &args.seed.to_string()])
        .args(["--slow-ms", &args.slow_ms.to_string()])
        .args(["--latency-ms", &args.latency_ms.to_string()])
        .args(["--components", &args.components().to_string()])
        .args(["--orphans", &args.orphans.to_string()]);
    if args.size_skew != 1.0 {
        cmd.args(["--size-skew", &args.size_skew.to_string()]);
    }
    if args.all_seeds {
        cmd.arg("--all-seeds");
    }
    if args.own_addresses {
        cmd.arg("--own-addresses");
    }
    if args.traps {
        cmd.arg("--traps");
    }
}

/// `--shuffle-seeds`: websim's seeds in the order of their FNV-1a hash, written to
/// `<out>/seeds-shuffled.txt` (the same web gives the same order); its path.
fn shuffled_seeds(seeds: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    let text =
        std::fs::read_to_string(seeds).with_context(|| format!("reading {}", seeds.display()))?;
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.sort_by_key(|l| (app_core::parts::hash_part(l, u32::MAX), *l));
    let path = out.join("seeds-shuffled.txt");
    let mut body = lines.join("\n");
    body.push('\n');
    std::fs::write(&path, body).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// websim's DNS address with `--machines` (not 127.0.0.1, every machine's own).
const MACHINES_DNS: &str = "127.0.53.1:0";

/// Makes the simulated machines over `<out>/export` and sets what a spool seen
/// through NFS needs: no change events, and the parts' "idle" confirmed for long
/// enough that a file still invisible to the manager's machine is not missed.
fn start_machines(
    layout: &Layout,
    args: &DemoArgs,
    config: &mut Config,
) -> anyhow::Result<Machines> {
    let systems = args.split.systems.max(1);
    // Made before the mounts: a machine sees a new entry only after the delay.
    for s in 0..systems {
        let dir = layout.spool_of(s);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    config.spool.notify = false;
    config.app.idle_check_ms = 3 * args.visibility_delay_ms.max(config.app.scan_interval_ms);
    let machines = Machines::create(
        &layout.out,
        &layout.export(),
        systems,
        args.visibility_delay_ms,
        &layout.logs,
    )?;
    eprintln!(
        "demo: {} machines (network namespaces on a bridge, gateway {}), each mounting {} \
         through nfsim (visibility delay {} ms)",
        machines.placement().machines.len(),
        machines.gateway(),
        layout.export().display(),
        args.visibility_delay_ms
    );
    Ok(machines)
}

/// One line per machine: its role, address, namespace, mount and processes.
fn placement_table(machines: &Machines, system: &System) -> String {
    let placed = system.placed();
    let mut out = String::new();
    for m in &machines.placement().machines {
        let procs: Vec<String> = placed
            .iter()
            .filter(|(_, _, ns)| ns.as_deref() == Some(m.netns.as_str()))
            .map(|(name, pid, _)| format!("{name} (pid {pid})"))
            .collect();
        out.push_str(&format!(
            "machine {:<5} {:<15} netns {}  spool {}  runs {}\n",
            m.role,
            m.addr.to_string(),
            m.netns,
            m.mount.display(),
            procs.join(", ")
        ));
    }
    out
}

/// The unfinished demo in `out` to resume, if it crawls the web `web`; otherwise
/// empties `out` of an earlier demo's files. Refuses a non-empty directory that
/// is not a demo's.
fn prepare_out(out: &Path, web: &str) -> anyhow::Result<Option<Resume>> {
    let Ok(mut entries) = std::fs::read_dir(out) else {
        return Ok(None); // Not there yet.
    };
    if entries.next().is_none() {
        return Ok(None);
    }
    anyhow::ensure!(
        out.join("config.ron").exists(),
        "{} is not empty and not an earlier demo's output (no config.ron): choose another --out",
        out.display()
    );
    if let Ok(text) = std::fs::read_to_string(out.join(RESUME)) {
        match Resume::parse(&text) {
            Some(r) if r.web == web => return Ok(Some(r)),
            Some(r) => eprintln!(
                "demo: the unfinished demo in {} crawls another web ({}); starting afresh",
                out.display(),
                r.web
            ),
            None => eprintln!(
                "demo: {} is unreadable; starting afresh",
                out.join(RESUME).display()
            ),
        }
    }
    let split: Vec<String> = std::fs::read_dir(out)
        .with_context(|| format!("listing {}", out.display()))?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n.starts_with("spool-s") || n.starts_with("repository-p"))
        .collect();
    for name in OWNED
        .iter()
        .copied()
        .chain(split.iter().map(String::as_str))
    {
        let p = out.join(name);
        let result = if p.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        match result {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", p.display())),
        }
    }
    Ok(None)
}

fn manifest_rows(path: &Path) -> anyhow::Result<u64> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count() as u64)
}

/// Starts websim for `args` (the same web and ports when resuming `resume`) and
/// waits for its ready line.
fn start_websim(
    args: &DemoArgs,
    layout: &Layout,
    resume: Option<&Resume>,
    shutdown: &CancellationToken,
) -> anyhow::Result<(Child, Ready)> {
    let exe = std::env::current_exe().context("finding the polycrawl binary")?;
    let mut cmd = Command::new(&exe);
    cmd.arg("websim");
    if let Some(repo) = &args.disk_web {
        let repo =
            std::path::absolute(repo).with_context(|| format!("resolving {}", repo.display()))?;
        cmd.arg("--from-repository").arg(repo);
    } else {
        generated_web_flags(&mut cmd, args);
    }
    cmd.arg("--out")
        .arg(layout.out.join("websim"))
        .arg("--exit-with-parent");
    if let Some(rate) = args.pace_per_client {
        cmd.args(["--pace-per-client", &rate.to_string()]);
    }
    if args.machines {
        // 127.0.0.1 is each machine's own loopback; the rest of 127/8 is routed
        // to this namespace, where websim runs.
        cmd.args(["--dns-addr", MACHINES_DNS]);
    }
    if let Some(r) = resume {
        // The disk web always serves on the stored URLs' ports.
        if args.disk_web.is_none() {
            cmd.args(["--http-port", &r.http_port.to_string()])
                .args(["--https-port", &r.https_port.to_string()]);
        }
        cmd.arg("--log").arg(
            layout
                .out
                .join("websim")
                .join(format!("requests-{}.tsv", r.logs.len() + 1)),
        );
        eprintln!(
            "demo: resuming the unfinished demo in {} (run {})",
            layout.out.display(),
            r.logs.len() + 1
        );
    }
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "warn");
    }
    let mut websim = Child::spawn("websim", cmd, &layout.logs)?;
    match &args.disk_web {
        Some(repo) => eprintln!("demo: starting websim (the disk web of {})", repo.display()),
        None => eprintln!(
            "demo: starting websim ({} hosts, {} pages, seed {})",
            args.hosts, args.pages, args.seed
        ),
    }
    let line = websim.wait_line(
        |l| l.starts_with("websim ready "),
        WEBSIM_READY,
        || shutdown.is_cancelled(),
    )?;
    let ready = Ready::parse(&line)?;
    Ok((websim, ready))
}

/// Removes what an earlier `demo --machines` killed with SIGKILL left behind: its
/// network namespaces and bridge (anywhere: found by name and their maker's pid
/// being dead), and its dead mounts under this `--out` (which `prepare_out` could
/// not remove otherwise). Says what it removed.
fn remove_leftovers(layout: &Layout) {
    let mut removed = super::machines::remove_stale();
    removed.extend(
        super::machines::unmount_dead(&layout.out.join("mnt"))
            .into_iter()
            .map(|p| format!("mount {}", p.display())),
    );
    if !removed.is_empty() {
        eprintln!(
            "demo: removed what a killed demo left behind: {}",
            removed.join(", ")
        );
    }
}

/// Prints where the run is: the machines' table, the processes, the files.
fn announce(layout: &Layout, system: &System, machines: Option<&Machines>, websim: &Child) {
    system.announce_admin(layout);
    if let Some(m) = machines {
        print!("{}", placement_table(m, system));
    }
    let pids: Vec<String> = std::iter::once(format!("websim={}", websim.pid()))
        .chain(system.pids().into_iter().map(|(n, p)| format!("{n}={p}")))
        .collect();
    eprintln!(
        "demo: manager at {}; processes {}",
        system.manager_addr(),
        pids.join(" ")
    );
    eprintln!(
        "demo: config {}, logs {}",
        layout.config.display(),
        layout.logs.display()
    );
}

/// Runs the demo until the crawl is complete (or `shutdown`), then prints the
/// summary; an error if a process fails or the crawl differs from the manifest.
pub fn run(args: DemoArgs, shutdown: CancellationToken, rt: Handle) -> anyhow::Result<()> {
    let mut layout = Layout::new(&args.out)?;
    if args.machines {
        layout = layout.with_export();
    }
    remove_leftovers(&layout);
    let resume = prepare_out(&layout.out, &args.web())?;
    layout.create()?;
    let (mut websim, mut ready) = start_websim(&args, &layout, resume.as_ref(), &shutdown)?;
    if args.shuffle_seeds {
        ready.seeds = shuffled_seeds(&ready.seeds, &layout.out)?;
    }
    let mut record = resume.unwrap_or(Resume {
        web: args.web(),
        http_port: ready.http_port,
        https_port: ready.https_port,
        logs: Vec::new(),
    });
    record.logs.push(ready.log.clone());
    record.save(&layout.out)?;
    let mut config = demo_config(&layout, &ready, &args);
    args.split.apply(&mut config.app);
    args.strategy.apply(&mut config.app);
    let machines = if args.machines {
        Some(start_machines(&layout, &args, &mut config)?)
    } else {
        None
    };
    let plan = Plan {
        layout: layout.clone(),
        config,
        seeds: ready.seeds.clone(),
        downloaders: args.downloaders,
        max_pages: None,
        expected_pages: Some(manifest_rows(&ready.manifest)?),
        supervision: args.supervision.policy(),
        placement: machines.as_ref().map(|m| m.placement().clone()),
        systems: args.split.systems,
        parts: args.split.parts,
        strategy: args.strategy.clone(),
        site_policy: args.split.site_policy,
    };
    let (parts, threads) = (plan.parts, plan.config.app.reader_threads);
    eprintln!(
        "{}",
        super::sizing::line("demo", parts, plan.downloaders, threads)
    );
    let batch_age_ms = plan.config.downloader.max_batch_age_ms;
    let mut system = System::start(&plan, &shutdown, "demo")?;
    announce(&layout, &system, machines.as_ref(), &websim);
    let mut progress = Progress::new(plan.expected_pages);
    let result = system.wait(&mut progress, &shutdown, &rt);
    let mut websim_status = None;
    let after_stop = || {
        // The processes are gone: unmount and remove the namespaces.
        drop(machines);
        websim_status = websim.stop(WEBSIM_GRACE);
    };
    let ended = finish(system, result, progress, after_stop, "demo", &layout, parts)?;
    if !websim_status.is_some_and(|s| s.success()) {
        eprintln!("demo: websim did not stop cleanly; its request log may be incomplete");
    }
    let logs: Vec<&Path> = record.logs.iter().map(PathBuf::as_path).collect();
    let mut check = if args.strategy.seed_by_seed() {
        let parties = ready.manifest.with_file_name("parties.tsv");
        WebsimCheck::run_parties(&ended.scan.ok_urls, &parties, &ready.never, &logs)?
    } else {
        WebsimCheck::run_logs(&ended.scan.ok_urls, &ready.manifest, &ready.never, &logs)?
    };
    // A URL fetched again after a kill of the process that held its job is the
    // documented bound of crash safety: told apart from any other duplicate.
    let kills = ended
        .finished
        .deaths
        .iter()
        .map(|(process, at_us)| Kill {
            process: process.clone(),
            at_us: *at_us,
        })
        .collect();
    check.attribute(kills, batch_age_ms);
    let websim_cpu = Some(websim.cpu());
    ended.print(
        "polycrawl demo",
        &layout,
        Some(&check),
        websim_cpu,
        &args.split,
    );
    judge(&args, &ended.finished.ending, &check, &layout)
}

/// The demo's verdict: an error if a process kept dying, or if a crawl that
/// must cover the web exactly differs from websim's manifest. A complete demo
/// removes its resume record (the next demo on the directory starts afresh).
fn judge(
    args: &DemoArgs,
    ending: &Ending,
    check: &WebsimCheck,
    layout: &Layout,
) -> anyhow::Result<()> {
    match ending {
        Ending::Complete => {}
        Ending::Interrupted => return Ok(()),
        Ending::GaveUp(why) => anyhow::bail!("{why}"),
    }
    let _ = std::fs::remove_file(layout.out.join(RESUME));
    // Firewall mode may miss pages and cross-over mode may fetch a page twice:
    // their figures are the result, not a failure.
    if args.split.parts > 1 && !args.split.full_coverage() {
        return Ok(());
    }
    anyhow::ensure!(
        check.perfect(),
        "the crawl differs from websim's manifest (coverage {}/{}, {} duplicate fetches no kill \
         explains, {} robots-disallowed fetches)",
        check.fetched,
        check.expected,
        check.unexplained().count(),
        check.never_fetched.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_line() {
        let r = Ready::parse("websim ready dns=127.0.0.1:5300 http_port=1 https_port=2 out=/o seeds=/o/seeds.txt manifest=/o/manifest.tsv never=/o/never.txt unreachable=/o/u.tsv hosts=/o/hosts.tsv log=/o/requests.tsv ca=/o/ca.pem addresses=127.1.0.1-127.1.0.9").unwrap();
        assert_eq!(r.dns.port(), 5300);
        assert_eq!(r.ca, PathBuf::from("/o/ca.pem"));
        assert_eq!((r.http_port, r.https_port), (1, 2));
        assert!(Ready::parse("websim ready dns=127.0.0.1:1").is_err());
    }

    #[test]
    fn out_dir_rules() {
        let dir = tempfile::tempdir().unwrap();
        let web = "hosts=20 pages=40 seed=1 slow_ms=300";
        assert_eq!(prepare_out(&dir.path().join("new"), web).unwrap(), None);
        assert_eq!(prepare_out(dir.path(), web).unwrap(), None);
        std::fs::write(dir.path().join("mine.txt"), "x").unwrap();
        assert!(prepare_out(dir.path(), web).is_err());
        std::fs::write(dir.path().join("config.ron"), "()").unwrap();
        std::fs::create_dir_all(dir.path().join("spool/x")).unwrap();
        assert_eq!(prepare_out(dir.path(), web).unwrap(), None);
        assert!(!dir.path().join("spool").exists());
        assert!(dir.path().join("mine.txt").exists());

        // An unfinished demo of the same web is resumed, its files kept; one of
        // another web is removed.
        std::fs::write(dir.path().join("config.ron"), "()").unwrap();
        std::fs::create_dir_all(dir.path().join("spool/x")).unwrap();
        let r = Resume {
            web: web.to_owned(),
            http_port: 8080,
            https_port: 8443,
            logs: vec!["/o/websim/requests.tsv".into()],
        };
        r.save(dir.path()).unwrap();
        assert_eq!(prepare_out(dir.path(), web).unwrap(), Some(r));
        assert!(dir.path().join("spool/x").exists());
        assert_eq!(
            prepare_out(dir.path(), "hosts=20 pages=40 seed=2 slow_ms=300").unwrap(),
            None
        );
        assert!(!dir.path().join("spool").exists());
        assert!(!dir.path().join(RESUME).exists());
    }

    #[test]
    fn resume_record_round_trips() {
        let r = Resume {
            web: "hosts=20 pages=40 seed=1 slow_ms=300".to_owned(),
            http_port: 1,
            https_port: 2,
            logs: vec!["/a/requests.tsv".into(), "/a/requests-2.tsv".into()],
        };
        assert_eq!(Resume::parse(&r.render()), Some(r));
        assert_eq!(Resume::parse("web x\nhttp_port 1\n"), None);
        assert_eq!(Resume::parse("junk"), None);
    }

    #[test]
    fn demo_config_is_valid() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path()).unwrap();
        let ready = Ready::parse(
            "websim ready dns=127.0.0.1:5300 http_port=1 https_port=2 seeds=/s manifest=/m never=/n log=/l ca=/c",
        )
        .unwrap();
        let args = DemoArgs {
            hosts: 20,
            pages: 100,
            seed: 1,
            out: dir.path().into(),
            downloaders: 1,
            interval_ms: 100,
            slow_ms: 300,
            supervision: SupervisionArgs {
                max_deaths: 5,
                crash_window: 10,
            },
            split: SplitArgs {
                parts: 1,
                systems: 1,
                mode: app_core::PartMode::Exchange,
                assignment: None,
                replicated: None,
                partitioning: None,
                no_fix: false,
                site_policy: Default::default(),
            },
            orphans: 0,
            traps: false,
            disk_web: None,
            pace_per_client: None,
            machines: false,
            visibility_delay_ms: 1000,
            latency_ms: 0,
            size_skew: 1.0,
            connections_per_host: 1,
            components: None,
            all_seeds: false,
            own_addresses: false,
            shuffle_seeds: false,
            max_crawl_delay_ms: None,
            strategy: super::super::strategy::StrategyArgs::default(),
        };
        let c = demo_config(&layout, &ready, &args);
        c.validate("demo").unwrap();
        assert!(c.downloader.allow_private && c.manager.frontier.allow_private_addresses);
        assert_eq!(c.manager.frontier.max_crawl_delay_ms, 60_000);
        let capped = DemoArgs {
            max_crawl_delay_ms: Some(200),
            ..args
        };
        let c = demo_config(&layout, &ready, &capped);
        assert_eq!(c.manager.frontier.max_crawl_delay_ms, 200);
    }
}
