//! `polycrawl demo`: websim plus the whole crawling system and the breadth-first
//! application, each a separate child process, then a summary that checks the
//! crawl against websim's oracle (coverage, duplicate fetches, robots).
//!
//! The demo config is the default config with what a simulated web on loopback
//! needs: websim's DNS server as the only name server, private addresses allowed
//! (downloader and manager), websim's CA trusted, and a short politeness interval
//! (`--interval-ms`, per host and per IP address, since every websim host is
//! local) with short back-offs so failing hosts settle within the run. Robots
//! exclusion, one request in flight per host and the per-IP limits stay on: the
//! demo runs the same code as a crawl of the web.
//!
//! `--out` (default `demo-out`) holds `config.ron`, `admin-token`, `websim/`,
//! `spool/`, `state/`, `repository/` and `logs/`. The admin page listens on a free
//! loopback port, printed at the start as `admin: http://ADDR/`. A directory left by an earlier demo (it has
//! `config.ron`) is emptied of those first; any other non-empty directory is
//! refused.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::child::Child;
use super::progress::Progress;
use super::repo_scan::RepoScan;
use super::summary;
use super::system::{Layout, Plan, System};
use super::websim_check::WebsimCheck;
use crate::config::Config;

/// How long websim may take to generate the web and print its ready line.
const WEBSIM_READY: Duration = Duration::from_secs(120);
/// How long websim gets to flush its request log after SIGTERM.
const WEBSIM_GRACE: Duration = Duration::from_secs(10);
/// What an earlier demo leaves in `--out`, removed before a new one.
const OWNED: [&str; 7] = [
    "config.ron",
    "admin-token",
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
    /// Downloader processes.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub downloaders: u32,
    /// Politeness interval between two requests to one host (and one IP address),
    /// in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub interval_ms: u64,
    /// First-byte delay of websim's slow hosts, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub slow_ms: u64,
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
        })
    }
}

/// The demo's config: the defaults plus what websim on loopback needs.
fn demo_config(layout: &Layout, ready: &Ready, args: &DemoArgs) -> Config {
    let mut c = Config::default();
    layout.apply(&mut c);
    c.spool.scan_interval_ms = 500;
    c.resolver.name_servers = vec![ready.dns];
    c.downloader.allow_private = true;
    c.downloader.extra_ca_file = Some(ready.ca.clone());
    c.downloader.max_batch_age_ms = 1000;
    c.app.seeds_file = Some(ready.seeds.clone());
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
    f.ip_max_in_flight = 2;
    f.ip_min_interval_ms = args.interval_ms / 2;
    f.backoff_ms = vec![500, 1000, 2000];
    f.dns_retry_ms = 5000;
    f.request_scan_interval_ms = 500;
    f.outcome_max_age_ms = 500;
    f.keep_alive_max_interval_ms = args.interval_ms.max(1000);
    c
}

/// Empties `out` of an earlier demo's files; refuses a non-empty directory that
/// is not a demo's.
fn prepare_out(out: &Path) -> anyhow::Result<()> {
    let Ok(mut entries) = std::fs::read_dir(out) else {
        return Ok(()); // Not there yet.
    };
    if entries.next().is_none() {
        return Ok(());
    }
    anyhow::ensure!(
        out.join("config.ron").exists(),
        "{} is not empty and not an earlier demo's output (no config.ron): choose another --out",
        out.display()
    );
    for name in OWNED {
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
    Ok(())
}

fn manifest_rows(path: &Path) -> anyhow::Result<u64> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count() as u64)
}

/// Runs the demo until the crawl is complete (or `shutdown`), then prints the
/// summary; an error if a process fails or the crawl differs from the manifest.
pub fn run(args: DemoArgs, shutdown: CancellationToken, rt: Handle) -> anyhow::Result<()> {
    let layout = Layout::new(&args.out)?;
    prepare_out(&layout.out)?;
    layout.create()?;
    let exe = std::env::current_exe().context("finding the polycrawl binary")?;
    let mut cmd = Command::new(&exe);
    cmd.arg("websim")
        .args(["--hosts", &args.hosts.to_string()])
        .args(["--pages", &args.pages.to_string()])
        .args(["--seed", &args.seed.to_string()])
        .args(["--slow-ms", &args.slow_ms.to_string()])
        .arg("--out")
        .arg(layout.out.join("websim"))
        .arg("--exit-with-parent");
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "warn");
    }
    let mut websim = Child::spawn("websim", cmd, &layout.logs)?;
    eprintln!(
        "demo: starting websim ({} hosts, {} pages, seed {})",
        args.hosts, args.pages, args.seed
    );
    let line = websim.wait_line(
        |l| l.starts_with("websim ready "),
        WEBSIM_READY,
        || shutdown.is_cancelled(),
    )?;
    let ready = Ready::parse(&line)?;
    let config = demo_config(&layout, &ready, &args);
    let plan = Plan {
        layout: layout.clone(),
        config,
        seeds: ready.seeds.clone(),
        downloaders: args.downloaders,
        max_pages: None,
        expected_pages: Some(manifest_rows(&ready.manifest)?),
    };

    let mut system = System::start(&plan, &shutdown)?;
    system.announce_admin(&layout);
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
    let mut progress = Progress::new(plan.expected_pages);
    let result = system.wait(&mut progress, &shutdown, &rt);
    progress.finish();
    let stopped = system.stop();
    let websim_status = websim.stop(WEBSIM_GRACE);
    let finished = result?;
    if !stopped.unclean.is_empty() {
        eprintln!("demo: did not stop cleanly: {}", stopped.unclean.join(", "));
    }
    if !websim_status.is_some_and(|s| s.success()) {
        eprintln!("demo: websim did not stop cleanly; its request log may be incomplete");
    }

    let scan = RepoScan::read(&layout.repository)?;
    let check = WebsimCheck::run(&scan.ok_urls, &ready.manifest, &ready.never, &ready.log)?;
    print!(
        "{}",
        summary::render(
            "polycrawl demo",
            &finished,
            &layout,
            &scan,
            Some(&check),
            &stopped.cpu,
            Some(websim.cpu()),
        )
    );
    anyhow::ensure!(
        check.perfect(),
        "the crawl differs from websim's manifest (coverage {}/{}, {} duplicate fetches, {} robots-disallowed fetches)",
        check.fetched,
        check.expected,
        check.duplicates.len(),
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
        assert!(Ready::parse("websim ready dns=127.0.0.1:1").is_err());
    }

    #[test]
    fn out_dir_rules() {
        let dir = tempfile::tempdir().unwrap();
        prepare_out(&dir.path().join("new")).unwrap();
        prepare_out(dir.path()).unwrap();
        std::fs::write(dir.path().join("mine.txt"), "x").unwrap();
        assert!(prepare_out(dir.path()).is_err());
        std::fs::write(dir.path().join("config.ron"), "()").unwrap();
        std::fs::create_dir_all(dir.path().join("spool/x")).unwrap();
        prepare_out(dir.path()).unwrap();
        assert!(!dir.path().join("spool").exists());
        assert!(dir.path().join("mine.txt").exists());
    }

    #[test]
    fn demo_config_is_valid() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path()).unwrap();
        let ready = Ready::parse(
            "websim ready dns=127.0.0.1:5300 seeds=/s manifest=/m never=/n log=/l ca=/c",
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
        };
        let c = demo_config(&layout, &ready, &args);
        c.validate("demo").unwrap();
        assert!(c.downloader.allow_private && c.manager.frontier.allow_private_addresses);
    }
}
