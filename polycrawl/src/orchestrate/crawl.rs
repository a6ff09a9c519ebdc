//! `polycrawl crawl`: the crawling system and the breadth-first application on
//! this machine, each a separate child process, against real seeds.
//!
//! Unlike `polycrawl demo` nothing is relaxed: the config (`--config`, else the
//! documented defaults) decides the name servers, politeness, connections per host
//! and IP address, scope (allowed domains) and whether private addresses may be
//! fetched. Only the directories are set, all under `--out`: `config.ron` (the
//! effective config), `admin-token`, `spool/`, `state/`, `repository/`, `logs/`.
//! The admin page listens on `manager.admin_http` (printed at the start as
//! `admin: http://ADDR/`). The state is kept
//! between runs, so a crawl started again with the same `--out` resumes, after a
//! completed run, a SIGTERM or Ctrl-C (which stop every process in order, print the
//! summary of what was done and exit 0) or a crash.
//!
//! A seed outside loopback and the test domains needs a contact in
//! `downloader.user_agent` ([`super::contact`]): without one the crawl stops
//! before it starts anything.
//!
//! A process that dies is started again (see [`super::system`]); one that keeps
//! dying ends the run with the summary and an error.

use std::path::PathBuf;

use anyhow::Context;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::finish::finish;
use super::layout::Layout;
use super::parts::SplitArgs;
use super::progress::Progress;
use super::system::{Ending, Plan, SupervisionArgs, System};
use crate::config::Config;

/// Flags of `polycrawl crawl`.
#[derive(Debug, Clone, clap::Args)]
pub struct CrawlArgs {
    /// A file of seed URLs, one a line.
    #[arg(long, value_name = "FILE")]
    pub seeds: PathBuf,
    /// Output directory: effective config, spool, state, repository, logs.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The config file (RON); without one, the defaults apply.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Downloader processes (default: one per 8 cores, at most 8; see `sizing.rs`).
    #[arg(long, default_value_t = super::sizing::default_downloaders(),
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub downloaders: u32,
    /// Which hosts and URLs the crawl keeps to, overriding app.scope: site (the
    /// default: the seeds' sites, a seed's host without www. and every host under
    /// it), host (the seeds' hosts exactly), domain (the seeds' registered
    /// domains), prefix (URLs under a seed's path prefix) or open (every host;
    /// host budgets apply). In every scope but open the sites are crawled whole:
    /// no host budget cuts them.
    #[arg(long, value_name = "KIND")]
    pub scope: Option<app_core::scope::ScopeKind>,
    /// Request once the URLs of an earlier run's cut list (`<out>/state/app/cut.tsv`)
    /// that this crawl cut, whatever the rules (raise the limit that cut them
    /// first); the same `--out` resumes the crawl.
    #[arg(long, value_name = "FILE")]
    pub requeue: Option<PathBuf>,
    /// Stop after this many stored pages, overriding app.max_pages.
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// When to give up restarting a process that keeps dying.
    #[command(flatten)]
    pub supervision: SupervisionArgs,
    /// Parts, crawling systems and the mode of a split crawl. (Room for a
    /// machines flag: each system in its own network namespace.)
    #[command(flatten)]
    pub split: SplitArgs,
    /// The application: breadth-first or seed-by-seed, with its settings.
    #[command(flatten)]
    pub strategy: super::strategy::StrategyArgs,
}

/// Runs the crawl until it is complete (or `shutdown`), then prints the summary.
pub fn run(args: CrawlArgs, shutdown: CancellationToken, rt: Handle) -> anyhow::Result<()> {
    let config = Config::load_or_default(args.config.as_deref())?;
    let layout = Layout::new(&args.out)?;
    run_with(config, layout, "polycrawl crawl", args, shutdown, rt)
}

/// [`run`] with a config and layout already chosen (`polycrawl recrawl` points
/// the layout at an earlier crawl's repository and sets the recrawl's options).
pub(crate) fn run_with(
    mut config: Config,
    layout: Layout,
    title: &str,
    args: CrawlArgs,
    shutdown: CancellationToken,
    rt: Handle,
) -> anyhow::Result<()> {
    let seeds = std::path::absolute(&args.seeds)
        .with_context(|| format!("resolving {}", args.seeds.display()))?;
    anyhow::ensure!(seeds.is_file(), "no seeds file at {}", seeds.display());
    // Before anything starts: a crawl of the open web names its operator.
    let seed_text =
        std::fs::read_to_string(&seeds).with_context(|| format!("reading {}", seeds.display()))?;
    super::contact::check(&config.downloader.user_agent(), &seed_text)
        .map_err(anyhow::Error::msg)?;
    layout.apply(&mut config);
    config.app.seeds_file = Some(seeds.clone());
    if let Some(scope) = args.scope {
        config.app.scope = scope;
    }
    if let Some(file) = &args.requeue {
        let file =
            std::path::absolute(file).with_context(|| format!("resolving {}", file.display()))?;
        anyhow::ensure!(file.is_file(), "no requeue file at {}", file.display());
        config.app.requeue_file = Some(file);
    }
    eprintln!(
        "crawl: scope {}{}",
        config.app.scope,
        if config.app.scope.is_scoped() {
            " (the seeds' sites are crawled whole; `--scope open` for every host)"
        } else {
            " (every host; host budgets apply)"
        }
    );
    args.strategy.apply(&mut config.app);
    args.split.apply(&mut config.app);
    if !config.downloader.allow_private || !config.manager.frontier.allow_private_addresses {
        tracing::info!("private, loopback and link-local addresses are not fetched (config)");
    }
    let plan = Plan {
        layout: layout.clone(),
        config,
        seeds,
        downloaders: args.downloaders,
        max_pages: args.max_pages,
        expected_pages: None,
        supervision: args.supervision.policy(),
        placement: None,
        systems: args.split.systems,
        parts: args.split.parts,
        strategy: args.strategy.clone(),
        site_policy: args.split.site_policy,
    };
    eprintln!(
        "{}",
        super::sizing::line(
            "crawl",
            plan.parts,
            plan.downloaders,
            plan.config.app.reader_threads
        )
    );
    let mut system = System::start(&plan, &shutdown, "crawl")?;
    system.announce_admin(&layout);
    eprintln!(
        "crawl: manager at {}; config {}, logs {}",
        system.manager_addr(),
        layout.config.display(),
        layout.logs.display()
    );
    let mut progress = Progress::new(None);
    let result = system.wait(&mut progress, &shutdown, &rt);
    let ended = finish(
        system,
        result,
        progress,
        || {},
        "crawl",
        &layout,
        args.split.parts,
    )?;
    ended.print(title, &layout, None, None, &args.split);
    match ended.finished.ending {
        Ending::GaveUp(why) => anyhow::bail!("{why}"),
        Ending::Complete | Ending::Interrupted => Ok(()),
    }
}
