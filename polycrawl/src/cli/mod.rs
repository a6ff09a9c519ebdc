//! The `polycrawl` command line: [`Cli`], one subcommand per part of the crawler,
//! each dispatched to the module that runs it. The flags of each subcommand live
//! beside the code that reads them: the services (`services.rs`), the tools
//! (`tools.rs`), the host-graph commands (`assign.rs`), the two-level
//! coordinator (`coordinator.rs`), and `crawl`, `demo`, `recrawl` in
//! [`crate::orchestrate`].
//!
//! This module only parses and dispatches; it must never hold a subcommand's
//! logic.

use clap::{Parser, Subcommand};

mod assign;
mod coordinator;
mod services;
mod tools;

use assign::{AssignArgs, CostModelArgs, QualityArgs, SimulateArgs};
use coordinator::CoordinatorArgs;
use services::{AppArgs, DownloaderArgs, FrontierArgs, ManagerArgs, ServiceArgs};
use tools::{ConfigArgs, GetArgs, LinksArgs, RobotsArgs, StatusArgs, WaczArgs};

/// polycrawl: a distributed web crawler after Polybot.
///
/// Start with README.md: `ops/polycrawl demo`, then its "Crawl your own sites"
/// (seeds, contact, `crawl`, `wacz`, replay). Reference pages are in docs/.
#[derive(Debug, Parser)]
#[command(
    name = "polycrawl",
    version,
    after_help = "Start with README.md (\"Crawl your own sites\"); reference pages: docs/."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Each subcommand's first doc line is what it is for and where it is explained
/// (`polycrawl --help` lists them); a further paragraph shows in its own `--help`.
#[derive(Debug, Subcommand)]
enum Command {
    /// Start the crawl manager by hand (`crawl` and `demo` start it); docs/tools.md.
    ///
    /// The manager holds the queues, politeness, robots.txt, the DNS cache and the
    /// admin page.
    Manager(ManagerArgs),
    /// Start a downloader by hand, registering with a manager; docs/tools.md.
    Downloader(DownloaderArgs),
    /// Start a DNS resolver by hand, registering with a manager; docs/tools.md.
    Resolver(ServiceArgs),
    /// Start a crawling application by hand (breadth-first or seed-by-seed); docs/tools.md.
    App(AppArgs),
    /// Start the URL Frontier gRPC service for external fetchers; docs/urlfrontier.md.
    ///
    /// Registers with a manager as a downloader and an application; fetchers take
    /// URLs with GetURLs and report them with PutURLs (crawler-commons/url-frontier).
    Frontier(FrontierArgs),
    /// Print a page stored in a crawl's repository; docs/archive.md.
    ///
    /// Prints the WARC headers and the HTTP response.
    Get(GetArgs),
    /// Pack a finished crawl's repository into one WACZ file; README.md, "Crawl your own sites".
    ///
    /// ReplayWeb.page, pywb and Browsertrix open it (docs/archive.md).
    Wacz(WaczArgs),
    /// Crawl your seeds' sites, supervised and resumable; README.md, "Crawl your own sites".
    ///
    /// Runs the whole system on this machine (or split: docs/scaling.md).
    Crawl(crate::orchestrate::crawl::CrawlArgs),
    /// Revisit a finished crawl's URLs with conditional requests; docs/archive.md, "Recrawl".
    ///
    /// Sends If-None-Match and If-Modified-Since, storing 304s and unchanged pages
    /// as revisit records.
    Recrawl(crate::orchestrate::recrawl::RecrawlArgs),
    /// Crawl the simulated web with the whole system, with progress; docs/demo.md.
    Demo(crate::orchestrate::demo::DemoArgs),
    /// Show a running crawl's figures in the terminal; README.md, "Operate a long crawl".
    Status(StatusArgs),
    /// Serve websim, the simulated web (many hosts on 127.x.y.z, its own DNS); docs/demo.md.
    Websim(websim::Args),
    /// Print the documented default config, or check a config file; README.md, "Crawl your own sites".
    ///
    /// Every field, its default and what it does: docs/operating.md, "Configuration".
    Config(ConfigArgs),
    /// Check URLs against a robots.txt file, as the manager would (RFC 9309); docs/tools.md.
    Robots(RobotsArgs),
    /// Print the canonical links the application would follow from an HTML file; docs/tools.md.
    Links(LinksArgs),
    /// Assign hosts to K application parts from a finished crawl (METIS); docs/tools.md.
    ///
    /// Also writes a crawl's most-linked URLs for replication, evaluates an
    /// assignment file against the hash, or compares partitioning schemes page by
    /// page (--table).
    Assign(AssignArgs),
    /// Measure how soon a crawl holds a reference crawl's most-linked pages; docs/tools.md.
    ///
    /// Cho and Garcia-Molina's quality metric: the share of a complete reference
    /// crawl's most-linked pages that a crawl (one or several part repositories)
    /// holds after each 10 % of its downloads.
    Quality(QualityArgs),
    /// Simulate the parallel-crawler paper's experiments on a finished crawl; docs/tools.md.
    ///
    /// Cho and Garcia-Molina's figures at 1 to 64 processes on the crawl's stored
    /// pages and links: firewall coverage against processes and seeds (their
    /// figures 4, 5), quality against back-link exchanges (9-11).
    Simulate(SimulateArgs),
    /// Predict a two-level crawl's time and speed-up from measured figures; docs/tools.md.
    ///
    /// FC2L-UDC's cost model (its equations 2-4): an agent's paced speed less
    /// its overheads per page, the largest agent's share, the coordinator's bound.
    CostModel(CostModelArgs),
    /// Mount an NFS stand-in over a shared directory (one machine's view); docs/scaling.md.
    Nfsim(nfsim::NfsimArgs),
    /// Start the coordinator of a two-level crawl by hand; docs/scaling.md.
    ///
    /// Site-level duplicate check and run-time assignment of new sites to the
    /// agents, through the shared spool.
    Coordinator(CoordinatorArgs),
}

impl Cli {
    /// Runs the subcommand.
    ///
    /// # Errors
    /// Whatever the subcommand fails with, its causes chained (print it with
    /// [`one_line`]).
    pub fn run(self) -> anyhow::Result<()> {
        match self.command {
            Command::Manager(args) => services::manager_command(args),
            Command::Downloader(args) => services::downloader_command(args),
            Command::Resolver(args) => services::resolver_command(args),
            Command::App(args) => services::app_command(args),
            Command::Frontier(args) => services::frontier_command(args),
            Command::Get(args) => tools::get_command(args),
            Command::Wacz(args) => tools::wacz_command(args),
            Command::Crawl(args) => {
                orchestrate(|s, rt| crate::orchestrate::crawl::run(args, s, rt))
            }
            Command::Recrawl(args) => {
                orchestrate(|s, rt| crate::orchestrate::recrawl::run(args, s, rt))
            }
            Command::Demo(args) => orchestrate(|s, rt| crate::orchestrate::demo::run(args, s, rt)),
            Command::Status(args) => tools::status_command(args),
            Command::Websim(args) => Ok(websim::run(args)?),
            Command::Nfsim(args) => Ok(nfsim::run(args)?),
            Command::Robots(args) => tools::robots_command(args),
            Command::Links(args) => tools::links_command(args),
            Command::Assign(args) => assign::assign_command(args),
            Command::Quality(args) => assign::quality_command(args),
            Command::Simulate(args) => assign::simulate_command(args),
            Command::CostModel(args) => assign::cost_model_command(args),
            Command::Coordinator(args) => coordinator::coordinator_command(args),
            Command::Config(args) => tools::config_command(args),
        }
    }
}

/// `err` and its causes on one line, `: `-separated, as `{:#}` prints them, but
/// without a cause whose text already ends the line: an error whose message embeds
/// its source (`#[error("repository I/O on {path}: {source}")]`) would otherwise
/// print that source twice.
pub fn one_line(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

/// Runs `demo` or `crawl` on this thread (they block, watching child processes)
/// while a runtime's workers serve the signal handler and the status reads:
/// SIGINT/SIGTERM cancel the token it is given.
fn orchestrate<F>(run: F) -> anyhow::Result<()>
where
    F: FnOnce(tokio_util::sync::CancellationToken, tokio::runtime::Handle) -> anyhow::Result<()>,
{
    let shutdown = tokio_util::sync::CancellationToken::new();
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.spawn(shutdown_on_signal(shutdown.clone()));
    run(shutdown, runtime.handle().clone())
}

/// Cancels `shutdown` on SIGINT (Ctrl-C) or SIGTERM.
pub(crate) async fn shutdown_on_signal(shutdown: tokio_util::sync::CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let term = async {
        match signal(SignalKind::terminate()) {
            Ok(mut term) => term.recv().await,
            Err(_) => std::future::pending::<Option<()>>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
    tracing::info!("signal received, shutting down");
    shutdown.cancel();
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[derive(Debug, thiserror::Error)]
    #[error("repository I/O on {path}: {source}")]
    struct Embeds {
        path: &'static str,
        source: std::io::Error,
    }

    #[test]
    fn a_cause_is_printed_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let embedded = anyhow::Error::new(Embeds {
            path: "/r/warc",
            source: io(),
        });
        assert_eq!(
            one_line(&embedded),
            "repository I/O on /r/warc: no such file"
        );
        let wrapped = anyhow::Error::new(io()).context("open /r").context("get");
        assert_eq!(one_line(&wrapped), "get: open /r: no such file");
        let both = anyhow::Error::new(Embeds {
            path: "/r/warc",
            source: io(),
        })
        .context("get http://x/");
        assert_eq!(
            one_line(&both),
            "get http://x/: repository I/O on /r/warc: no such file"
        );
    }
}
