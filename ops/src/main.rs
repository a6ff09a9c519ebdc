//! `polycrawl`: one binary whose subcommands start each part of the crawler.
//!
//! `main` only parses flags, sets up logging and calls into the libraries; every
//! error reaches the user as one readable line and a non-zero exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use ops::config::{Config, DEFAULT_RON};

/// polycrawl: a high-performance distributed web crawler after Polybot.
#[derive(Debug, Parser)]
#[command(name = "polycrawl", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the crawl manager (queues, politeness, robots, DNS cache, admin page).
    Manager(NotBuilt),
    /// Start a downloader that registers with the manager.
    Downloader(NotBuilt),
    /// Start a DNS resolver that registers with the manager.
    Resolver(ResolverArgs),
    /// Start the breadth-first crawling application.
    App(NotBuilt),
    /// Run the whole system on this machine against real seeds.
    Crawl(NotBuilt),
    /// Run the whole system against the simulated web, with progress.
    Demo(NotBuilt),
    /// Show a running crawl's figures in the terminal.
    Status(NotBuilt),
    /// Start websim, the simulated web (many hosts on 127.x.y.z, its own DNS).
    Websim(ops::websim::Args),
    /// Print the documented default config, or check a config file.
    Config(ConfigArgs),
    /// Check URLs against a robots.txt file, as the manager would (RFC 9309).
    Robots(RobotsArgs),
    /// Print the canonical links the application would follow from an HTML file.
    Links(LinksArgs),
}

#[derive(Debug, clap::Args)]
struct LinksArgs {
    /// The URL the page was fetched from (relative links resolve against it).
    #[arg(long, value_name = "URL")]
    base: String,
    /// The HTML file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

#[derive(Debug, clap::Args)]
struct RobotsArgs {
    /// The crawler's user agent; its product token selects the group.
    #[arg(long, default_value = "polycrawl")]
    agent: String,
    /// The robots.txt file to check against.
    #[arg(long, value_name = "FILE")]
    robots: PathBuf,
    /// URLs (or paths) to check.
    #[arg(required = true, value_name = "URL")]
    urls: Vec<String>,
}

#[derive(Debug, clap::Args)]
struct ResolverArgs {
    /// The config file (RON); without one, the defaults apply.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// This resolver's id, unique among resolvers [default: resolver-<hostname>-<pid>].
    #[arg(long, value_name = "ID")]
    id: Option<spool::ComponentId>,
    /// The manager's control port, overriding control.manager_addr.
    #[arg(long, value_name = "HOST:PORT")]
    manager: Option<String>,
    /// The control token, overriding POLYCRAWL_TOKEN and control.token (prefer the
    /// environment variable: arguments are visible to other users).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
}

/// Arguments of a part that is not built yet: accepted so the message is clear.
#[derive(Debug, clap::Args)]
struct NotBuilt {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _args: Vec<String>,
}

#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
struct ConfigArgs {
    /// Print the default config with every field documented.
    #[arg(long)]
    default: bool,
    /// Parse and validate FILE; print the effective config.
    #[arg(long, value_name = "FILE")]
    check: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("polycrawl: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<()> {
    let not_built = |part: &str, issue: &str| -> anyhow::Result<()> {
        anyhow::bail!("`polycrawl {part}` is not built yet ({issue})")
    };
    match command {
        Command::Manager(_) => not_built("manager", "the crawling-system issue"),
        Command::Downloader(_) => not_built("downloader", "the crawling-system issue"),
        Command::Resolver(args) => resolver_command(args),
        Command::App(_) => not_built("app", "the breadth-first application issue"),
        Command::Crawl(_) => not_built("crawl", "the breadth-first application issue"),
        Command::Demo(_) => not_built(
            "demo",
            "the breadth-first application issue; `polycrawl websim` runs the simulated web",
        ),
        Command::Status(_) => not_built("status", "the operations issue"),
        Command::Websim(args) => ops::websim::run(args),
        Command::Robots(args) => {
            let body = std::fs::read(&args.robots)
                .with_context(|| format!("cannot read {}", args.robots.display()))?;
            for (url, allowed) in manager::robots::check_urls(&body, &args.agent, &args.urls) {
                let verdict = if allowed { "allowed" } else { "disallowed" };
                println!("{verdict}\t{url}");
            }
            Ok(())
        }
        Command::Links(args) => {
            let base = url::Url::parse(&args.base)
                .with_context(|| format!("--base {:?} is not an absolute URL", args.base))?;
            let html = std::fs::read(&args.file)
                .with_context(|| format!("cannot read {}", args.file.display()))?;
            for link in application::links_for_file(&html, &base) {
                println!("{link}");
            }
            Ok(())
        }
        Command::Config(args) => {
            if args.default {
                print!("{DEFAULT_RON}");
            } else if let Some(path) = args.check {
                let config = Config::load(&path)?;
                println!("{config:#?}");
            }
            Ok(())
        }
    }
}

/// `polycrawl resolver`: flags over the config file, then `resolver::run` until
/// SIGINT/SIGTERM or a drain.
fn resolver_command(args: ResolverArgs) -> anyhow::Result<()> {
    let config = Config::load_or_default(args.config.as_deref())?;
    let token = args
        .token
        .or_else(|| std::env::var("POLYCRAWL_TOKEN").ok())
        .unwrap_or(config.control.token);
    anyhow::ensure!(
        !token.is_empty(),
        "no control token: set control.token, POLYCRAWL_TOKEN or --token"
    );
    let token = spool::protocol::Token::new(token).context("control token")?;
    let id = args
        .id
        .unwrap_or_else(resolver::ControlSettings::default_id);
    let manager = args.manager.unwrap_or(config.control.manager_addr);
    let mut control = resolver::ControlSettings::new(manager, token, id);
    control.max_frame = config.control.max_frame_bytes;
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::runtime::Runtime::new()?.block_on(async {
        tokio::spawn(shutdown_on_signal(shutdown.clone()));
        resolver::run(&config.resolver, control, shutdown).await
    })?;
    Ok(())
}

/// Cancels `shutdown` on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_on_signal(shutdown: tokio_util::sync::CancellationToken) {
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

/// Logs go to stderr; `RUST_LOG` filters them (default `info`).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
