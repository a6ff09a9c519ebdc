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
    Manager(ManagerArgs),
    /// Start a downloader that registers with the manager.
    Downloader(DownloaderArgs),
    /// Start a DNS resolver that registers with the manager.
    Resolver(ServiceArgs),
    /// Start a crawling application: breadth-first (the default) or seed-by-seed.
    App(AppArgs),
    /// Print a page stored in the repository (WARC headers and HTTP response).
    Get(GetArgs),
    /// Package a finished crawl's repository as one WACZ file (ReplayWeb.page, pywb).
    Wacz(WaczArgs),
    /// Run the whole system on this machine against real seeds.
    Crawl(ops::orchestrate::crawl::CrawlArgs),
    /// Revisit a finished crawl's URLs with conditional requests (If-None-Match,
    /// If-Modified-Since), storing 304s and unchanged pages as revisit records.
    Recrawl(ops::orchestrate::recrawl::RecrawlArgs),
    /// Run the whole system against the simulated web, with progress.
    Demo(ops::orchestrate::demo::DemoArgs),
    /// Show a running crawl's figures in the terminal.
    Status(StatusArgs),
    /// Start websim, the simulated web (many hosts on 127.x.y.z, its own DNS).
    Websim(websim::Args),
    /// Print the documented default config, or check a config file.
    Config(ConfigArgs),
    /// Check URLs against a robots.txt file, as the manager would (RFC 9309).
    Robots(RobotsArgs),
    /// Benchmark tools: measure a command's cost, judge a crawl by websim's log.
    #[command(subcommand)]
    Bench(ops::bench::BenchCommand),
    /// Print the canonical links the application would follow from an HTML file.
    Links(LinksArgs),
    /// Assign hosts to K application parts from a finished crawl's repository
    /// (METIS on the host graph), write its most-linked URLs for replication,
    /// evaluate an assignment file against the hash, or compare partitioning
    /// schemes page by page (--table).
    Assign(AssignArgs),
    /// Cho and Garcia-Molina's quality metric: the share of a complete reference
    /// crawl's most-linked pages that a crawl (one or several part repositories)
    /// holds after each 10 % of its downloads.
    Quality(QualityArgs),
    /// Mount an NFS stand-in over a shared directory (one client machine's view).
    Nfsim(ops::nfsim::NfsimArgs),
    /// Start the coordinator of a two-level crawl: site-level duplicate check and
    /// run-time assignment of new sites to the agents, through the shared spool.
    Coordinator(CoordinatorArgs),
}

#[derive(Debug, clap::Args)]
struct CoordinatorArgs {
    /// Config file: the shared spool root (`app.exchange_root`, else
    /// `spool.root`), the agents' id stem (`app.app`, without its `-p<I>`) and
    /// their number (`app.parts`) come from it unless given here.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The shared spool root the agents exchange through (their exchange root).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The crawl's application id stem: the agents are `<STEM>-p<i>`.
    #[arg(long)]
    stem: Option<String>,
    /// Number of agents (K).
    #[arg(long, value_name = "K")]
    parts: Option<u32>,
    /// The coordinator's own state folder (its site-level seen set).
    #[arg(long, value_name = "DIR")]
    state: PathBuf,
    /// How new sites are dealt: round-robin (the paper's) or balanced (the agent
    /// with the fewest pages so far).
    #[arg(long, default_value_t = application::coordinator::Policy::RoundRobin)]
    policy: application::coordinator::Policy,
    /// Seed URLs, one per line: their sites are assigned first.
    #[arg(long, value_name = "FILE")]
    seeds: Option<PathBuf>,
    /// Pause after a round that found nothing to do, in milliseconds.
    #[arg(long, default_value_t = 50)]
    poll_ms: u64,
}

#[derive(Debug, clap::Args)]
struct AssignArgs {
    /// The finished crawl's WARC repository (read only; no ingest may run).
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// Number of application parts (K).
    #[arg(long, value_name = "K", requires = "out",
          required_unless_present_any = ["evaluate", "table", "replicate"])]
    parts: Option<u32>,
    /// Where to write the assignment file (published crash-safely).
    #[arg(long, value_name = "FILE", requires = "parts",
          required_unless_present_any = ["evaluate", "table", "replicate"])]
    out: Option<PathBuf>,
    /// Also write the N most-linked URLs of the crawl (back-links: distinct stored
    /// pages linking to them) as a replicated-URL file for every part
    /// (`polycrawl app --replicated`, `demo --replicated`).
    #[arg(long, value_name = "N", requires = "replicated")]
    replicate: Option<usize>,
    /// Where to write the replicated-URL file (published crash-safely).
    #[arg(long, value_name = "FILE", requires = "replicate")]
    replicated: Option<PathBuf>,
    /// Write nothing: print URLs exchanged per page and balance of URL-hash,
    /// site-hash, hierarchical, METIS and METIS with top-N replication, at every
    /// K of --ks and N of --tops, one table (page level, on this repository).
    #[arg(long, conflicts_with_all = ["out", "parts", "evaluate", "replicate"])]
    table: bool,
    /// --table: the numbers of parts.
    #[arg(long, value_name = "K,..", value_delimiter = ',', default_values_t = [2u32, 4, 8])]
    ks: Vec<u32>,
    /// --table: the numbers of replicated most-linked URLs.
    #[arg(long, value_name = "N,..", value_delimiter = ',', default_values_t = [100usize, 1000])]
    tops: Vec<usize>,
    /// Largest part's stored pages over the mean, at most.
    #[arg(long, value_name = "RATIO", default_value_t = application::assign::DEFAULT_IMBALANCE)]
    imbalance: f64,
    /// Write nothing: print the figures of this existing assignment file (K from
    /// its header) against the hash, on the repository's host graph.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["out", "parts"])]
    evaluate: Option<PathBuf>,
    /// The crawl's config file: its app section's canonicalization and body cap
    /// apply [default: the defaults].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct QualityArgs {
    /// A complete crawl of the same web (its back-link counts rank the pages).
    #[arg(long, value_name = "DIR")]
    reference: PathBuf,
    /// How many of the reference's most-linked pages count as important.
    #[arg(long, value_name = "N", default_value_t = 100)]
    top: usize,
    /// The crawl's config file: its app section's canonicalization and body cap
    /// apply to the reference [default: the defaults].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The crawl's repositories: one, or one per part of a split crawl (merged in
    /// download order by their records' dates).
    #[arg(required = true, value_name = "DIR")]
    repos: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct LinksArgs {
    /// The URL the page was fetched from (relative links resolve against it).
    #[arg(long, value_name = "URL")]
    base: String,
    /// The response's Content-Type header (its charset decides the encoding).
    #[arg(long, value_name = "TYPE")]
    content_type: Option<String>,
    /// The crawl's config file: its app section's canonicalization and body cap
    /// apply [default: the defaults].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The HTML file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

#[derive(Debug, clap::Args)]
struct RobotsArgs {
    /// The crawler's product token [default: the config's `manager.frontier.robots_agent`].
    #[arg(long)]
    agent: Option<String>,
    /// The crawl's config file: its robots agent and URL canonicalization apply
    /// [default: the defaults].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The HTTP status the robots.txt came with (4xx allows all, 5xx disallows all).
    #[arg(long, default_value_t = 200)]
    status: u16,
    /// The robots.txt file to check against.
    #[arg(long, value_name = "FILE")]
    robots: PathBuf,
    /// URLs (or paths) to check.
    #[arg(required = true, value_name = "URL")]
    urls: Vec<String>,
}

/// The flags of every service that registers with the manager.
#[derive(Debug, clap::Args)]
struct ServiceArgs {
    /// The config file (RON); without one, the defaults apply.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// This component's id, unique among its role
    /// [default: resolver-HOSTNAME-PID, dl-HOSTNAME-PID].
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

#[derive(Debug, clap::Args)]
struct DownloaderArgs {
    #[command(flatten)]
    service: ServiceArgs,
    /// The spool directory, overriding spool.root.
    #[arg(long, value_name = "DIR")]
    spool: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct AppArgs {
    #[command(flatten)]
    service: ServiceArgs,
    /// The application id, overriding app.app.
    #[arg(long, value_name = "APP")]
    app: Option<String>,
    /// A file of seed URLs, overriding app.seeds_file.
    #[arg(long, value_name = "FILE")]
    seeds: Option<PathBuf>,
    /// The spool directory, overriding spool.root.
    #[arg(long, value_name = "DIR")]
    spool: Option<PathBuf>,
    /// The state directory (seen set, progress), overriding app.state_dir.
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// The WARC repository, overriding app.repository_dir.
    #[arg(long, value_name = "DIR")]
    repo: Option<PathBuf>,
    /// Stop after this many stored pages, overriding app.max_pages.
    #[arg(long, value_name = "N")]
    max_pages: Option<u64>,
    /// This part of a split crawl (0 .. --parts - 1), overriding app.part; the
    /// id (--app) must end in -pI (I = --part).
    #[arg(long, value_name = "I")]
    part: Option<u32>,
    /// The number of parts the crawl is split into, overriding app.parts.
    #[arg(long, value_name = "K")]
    parts: Option<u32>,
    /// What a part does with links to hosts it does not own: exchange, firewall
    /// or crossover, overriding app.part_mode.
    #[arg(long, value_name = "MODE")]
    mode: Option<application::service::PartMode>,
    /// An assignment file (`polycrawl assign`), overriding app.assignment_file.
    #[arg(long, value_name = "FILE")]
    assignment: Option<PathBuf>,
    /// A replicated-URL file (`polycrawl assign --replicate`), overriding
    /// app.replicated_file.
    #[arg(long, value_name = "FILE")]
    replicated: Option<PathBuf>,
    /// Hosts the assignment file does not name go by the hash of the host (site)
    /// or of its registered domain (hierarchical), overriding app.partitioning.
    #[arg(long, value_name = "RULE")]
    partitioning: Option<application::service::Partitioning>,
    /// The spool root whose exchange/ folders every part shares, overriding
    /// app.exchange_root.
    #[arg(long, value_name = "DIR")]
    exchange_root: Option<PathBuf>,
    /// The application and its seed-by-seed settings.
    #[command(flatten)]
    strategy: ops::orchestrate::strategy::StrategyArgs,
    /// Seed-by-seed: the candidate-seed file [default: candidates.txt in the state folder].
    #[arg(long, value_name = "FILE")]
    candidates: Option<PathBuf>,
    /// Seed-by-seed: append seeds queued / active / finished, pages and seeds held
    /// per worker to this TSV file every second.
    #[arg(long, value_name = "FILE")]
    sample: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct WaczArgs {
    /// The WARC repository (of a crawl that has stopped).
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// The WACZ file to write (replaced if it exists).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// The collection's title. Default: the repository's folder name.
    #[arg(long)]
    title: Option<String>,
}

#[derive(Debug, clap::Args)]
struct GetArgs {
    /// The WARC repository.
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// The URL to print.
    #[arg(value_name = "URL")]
    url: String,
}

#[derive(Debug, clap::Args)]
struct ManagerArgs {
    /// The config file (RON); without one, the defaults apply.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The control port to listen on, overriding control.manager_addr (port 0 picks
    /// a free one). When listening, stdout gets `manager listening addr=IP:PORT`.
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
    /// Where the admin page and its JSON API listen, overriding manager.admin_http
    /// ("" turns them off; port 0 picks a free one). When listening, stdout gets
    /// `manager admin listening addr=IP:PORT` after the control port's line.
    #[arg(long, value_name = "IP:PORT")]
    admin_listen: Option<String>,
    /// The state directory (database, checkpoints), overriding manager.state_dir.
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// The spool directory, overriding spool.root.
    #[arg(long, value_name = "DIR")]
    spool: Option<PathBuf>,
    /// The control token, overriding POLYCRAWL_TOKEN and control.token (prefer the
    /// environment variable: arguments are visible to other users). The admin token
    /// comes from POLYCRAWL_ADMIN_TOKEN or manager.admin_token.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
}

#[derive(Debug, clap::Args)]
struct StatusArgs {
    /// The config file (RON); without one, the defaults apply.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The manager's control port, overriding control.manager_addr.
    #[arg(long, value_name = "HOST:PORT")]
    manager: Option<String>,
    /// The admin token, overriding POLYCRAWL_ADMIN_TOKEN and manager.admin_token
    /// (without any, the control token: POLYCRAWL_TOKEN or control.token).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
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

/// Every polycrawl process (manager, downloader, resolver, application, websim)
/// allocates through mimalloc: the crawl allocates and frees small buffers per URL
/// and per page on every thread, and glibc's malloc was a tenth of the
/// application's CPU in the peer benchmark's profile (BENCHMARKS.md, issue 9).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    no_huge_pages();
    // A child of `polycrawl demo` / `crawl` dies with it, even if it is SIGKILLed.
    if let Err(err) = ops::orchestrate::child::die_with_parent() {
        eprintln!("polycrawl: error: {}", one_line(&err));
        return ExitCode::FAILURE;
    }
    let cli = Cli::parse();
    init_logging();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("polycrawl: error: {}", one_line(&err));
            ExitCode::FAILURE
        }
    }
}

/// `err` and its causes on one line, `: `-separated, as `{:#}` prints them, but
/// without a cause whose text already ends the line: an error whose message embeds
/// its source (`#[error("repository I/O on {path}: {source}")]`) would otherwise
/// print that source twice.
fn one_line(err: &anyhow::Error) -> String {
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

/// Turns transparent huge pages off for this process and the processes it starts
/// (`prctl(PR_SET_THP_DISABLE)`, inherited across fork and exec), as Redis does.
/// The crawl frees and allocates buffers all the time; with huge pages each fault
/// in freshly returned memory made the kernel zero a whole 2 MiB page
/// (`clear_page_erms` under `do_huge_pmd_anonymous_page`: 4-8 % of every process's
/// CPU in the peer benchmark's profile; with them off the crawl took 0.168-0.178
/// CPU-ms per page against 0.183-0.190, BENCHMARKS.md issue 9). Where the call is refused
/// (an old kernel) the crawl just runs with huge pages.
fn no_huge_pages() {
    let _ = nix::sys::prctl::set_thp_disable(true);
}

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Manager(args) => manager_command(args),
        Command::Downloader(args) => downloader_command(args),
        Command::Resolver(args) => resolver_command(args),
        Command::App(args) => app_command(args),
        Command::Get(args) => {
            let repo = storage::RepositoryReader::open(&args.repo)?;
            let found = storage::print_page(&repo, &args.url, &mut std::io::stdout().lock())?;
            anyhow::ensure!(found, "{} is not in the repository", args.url);
            Ok(())
        }
        Command::Wacz(args) => {
            let repo = storage::RepositoryReader::open(&args.repo)?;
            let title = args.title.unwrap_or_else(|| {
                let name = args
                    .repo
                    .canonicalize()
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
                name.unwrap_or_else(|| "polycrawl".to_owned())
            });
            let s = storage::write_wacz(&repo, &args.out, &title)?;
            println!(
                "wacz {}: {} WARC files, {} index lines, {} pages, {} bytes",
                args.out.display(),
                s.warcs,
                s.index_lines,
                s.pages,
                s.bytes
            );
            Ok(())
        }
        Command::Crawl(args) => orchestrate(|s, rt| ops::orchestrate::crawl::run(args, s, rt)),
        Command::Recrawl(args) => orchestrate(|s, rt| ops::orchestrate::recrawl::run(args, s, rt)),
        Command::Demo(args) => orchestrate(|s, rt| ops::orchestrate::demo::run(args, s, rt)),
        Command::Status(args) => status_command(args),
        Command::Websim(args) => Ok(websim::run(args)?),
        Command::Nfsim(args) => ops::nfsim::run(args),
        Command::Bench(command) => {
            // `bench measure` exits with the measured command's exit code.
            let code = ops::bench::run(command)?;
            if code != 0 {
                std::process::exit(i32::from(code));
            }
            Ok(())
        }
        Command::Robots(args) => robots_command(args),
        Command::Links(args) => {
            let config = Config::load_or_default(args.config.as_deref())?;
            let base = url::Url::parse(&args.base)
                .with_context(|| format!("--base {:?} is not an absolute URL", args.base))?;
            let html = std::fs::read(&args.file)
                .with_context(|| format!("cannot read {}", args.file.display()))?;
            let links = application::links_for_file(
                &html,
                &base,
                args.content_type.as_deref(),
                &config.app,
            );
            for link in links {
                println!("{link}");
            }
            Ok(())
        }
        Command::Assign(args) => assign_command(args),
        Command::Quality(args) => quality_command(args),
        Command::Coordinator(args) => coordinator_command(args),
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

/// `polycrawl assign`: the host graph, then METIS and the file, or the evaluation
/// of a file; one summary line either way.
fn assign_command(args: AssignArgs) -> anyhow::Result<()> {
    use application::assign::{self, HostGraph, evaluate};
    use application::parts::Ownership;
    let config = Config::load_or_default(args.config.as_deref())?;
    let read_started = std::time::Instant::now();
    let graph = HostGraph::from_repository(&args.repo, &config.app)?;
    if args.table {
        let started = std::time::Instant::now();
        let rows = assign::table::table(&graph, &args.ks, &args.tops, args.imbalance)?;
        // The cost of the evaluation: reading the repository, then the rows.
        println!(
            "assign table hosts={} pages={} urls={} read_seconds={:.2} table_seconds={:.2}",
            graph.host_count(),
            graph.page_count(),
            graph.url_count(),
            (started - read_started).as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
        print!("{}", assign::table::Table(&rows));
        return Ok(());
    }
    if let (Some(n), Some(file)) = (args.replicate, &args.replicated) {
        let list = assign::replicated_list(&graph, n);
        assign::save_replicated(&list, file)?;
        println!(
            "replicated urls={} most_linked={} least_linked={} out={}",
            list.urls.len(),
            list.urls.first().map_or(0, |u| u.1),
            list.urls.last().map_or(0, |u| u.1),
            file.display()
        );
        if args.parts.is_none() {
            return Ok(());
        }
    }
    let (parts, label, ownership) = match (&args.evaluate, args.parts, &args.out) {
        (Some(file), _, _) => {
            let text =
                std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
            let table = spool::formats::AssignmentTable::read(&text[..])
                .with_context(|| format!("assignment file {}", file.display()))?;
            let k = table.parts;
            (k, "file", Ownership::assigned(table, k, file)?)
        }
        (None, Some(k), Some(out)) => {
            let table = assign::partition(&graph, k, args.imbalance)?;
            let ownership = Ownership::assigned(table.clone(), k, out)?;
            assign::save(&table, out)?;
            (k, "partition", ownership)
        }
        _ => anyhow::bail!("give --parts and --out, or --evaluate FILE"),
    };
    let hash = evaluate(&graph, &Ownership::hashed(parts)?);
    let chosen = evaluate(&graph, &ownership);
    // How many times fewer URLs cross parts than with the hash ("-" when none cross).
    let ratio = match chosen.cut_urls {
        0 => "-".to_owned(),
        cut => format!("{:.2}x", hash.cut_urls as f64 / cut as f64),
    };
    println!(
        "assign hosts={} pages={} parts={parts} hash: {hash} {label}: {chosen} fewer={ratio}{}",
        graph.host_count(),
        graph.total_pages(),
        args.out
            .map(|o| format!(" out={}", o.display()))
            .unwrap_or_default()
    );
    Ok(())
}

/// `polycrawl quality`: the reference's top-N, then the crawl's curve.
fn quality_command(args: QualityArgs) -> anyhow::Result<()> {
    use application::assign::{HostGraph, quality};
    let config = Config::load_or_default(args.config.as_deref())?;
    let reference = HostGraph::from_repository(&args.reference, &config.app)?;
    let top = quality::top_set(&reference, args.top);
    let order = quality::download_order(&args.repos)?;
    print!("{}", quality::curve(&order, &top));
    Ok(())
}

/// `polycrawl coordinator`: rounds until SIGINT/SIGTERM; one ready line at start,
/// one summary line at the end.
fn coordinator_command(args: CoordinatorArgs) -> anyhow::Result<()> {
    use application::coordinator::{Coordinator, CoordinatorConfig};
    let mut seeds = Vec::new();
    if let Some(file) = &args.seeds {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read seeds {}", file.display()))?;
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let url = url::Url::parse(line)
                .with_context(|| format!("seeds {}: not a URL: {line:?}", file.display()))?;
            if let Some(host) = application::parts::host_of(&url) {
                seeds.push(host);
            }
        }
    }
    let file = Config::load_or_default(args.config.as_deref())?;
    let root = args
        .root
        .or(file.app.exchange_root.clone())
        .unwrap_or(file.spool.root.clone());
    let stem = args.stem.unwrap_or_else(|| {
        let app = &file.app.app;
        match app.rsplit_once("-p") {
            Some((stem, n)) if n.parse::<u32>().is_ok() => stem.to_owned(),
            _ => app.clone(),
        }
    });
    let config = CoordinatorConfig {
        root,
        stem,
        parts: args.parts.unwrap_or(file.app.parts),
        state_dir: args.state,
        policy: args.policy,
        seeds,
        reports_per_round: 1000,
        seen_buffer_bytes: 16 << 20,
    };
    let mut co = Coordinator::open(config.clone())?;
    // The signal handlers are in place before the ready line: a SIGTERM right
    // after it stops the coordinator cleanly (with its summary), not by default.
    let shutdown = tokio_util::sync::CancellationToken::new();
    let runtime = tokio::runtime::Runtime::new()?;
    let (mut term, mut int) = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        Ok::<_, std::io::Error>((
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
        ))
    })?;
    let stop = shutdown.clone();
    runtime.spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        stop.cancel();
    });
    let c = co.counters();
    println!(
        "coordinator ready root={} parts={} policy={} generation={} sites={}",
        config.root.display(),
        config.parts,
        config.policy,
        c.generation,
        c.sites()
    );
    let poll = std::time::Duration::from_millis(args.poll_ms);
    while !shutdown.is_cancelled() {
        if !co.round()? {
            std::thread::sleep(poll);
        }
    }
    let c = co.counters();
    let per: Vec<String> = c.assigned.iter().map(u64::to_string).collect();
    println!(
        "coordinator stopped generation={} sites={} reports={} reported={} assigned={}",
        c.generation,
        c.sites(),
        c.reports,
        c.reported,
        per.join(",")
    );
    Ok(())
}

/// `polycrawl resolver`: flags over the config file, then `resolver::run` until
/// SIGINT/SIGTERM or a drain.
fn resolver_command(args: ServiceArgs) -> anyhow::Result<()> {
    let (config, reg) = registration(args)?;
    let id = reg
        .id
        .unwrap_or_else(|| spool::protocol::client::default_id("resolver"));
    let mut control = resolver::ControlSettings::new(reg.manager, reg.token, id);
    control.max_frame = config.control.max_frame_bytes;
    serve(|shutdown| async move { resolver::run(&config.resolver, control, shutdown).await })
}

/// `polycrawl downloader`: flags over the config file, then `downloader::run`
/// until SIGINT/SIGTERM or a drain.
fn downloader_command(args: DownloaderArgs) -> anyhow::Result<()> {
    let (mut config, reg) = registration(args.service)?;
    if let Some(root) = args.spool {
        config.spool.root = root;
    }
    let id = reg
        .id
        .unwrap_or_else(|| spool::protocol::client::default_id("dl"));
    let mut control = downloader::ControlSettings::new(reg.manager, reg.token, id);
    control.max_frame = config.control.max_frame_bytes;
    let spool = spool::Spool::new(config.spool.root.clone()).with_notify(config.spool.notify);
    serve(
        |shutdown| async move { downloader::run(&config.downloader, control, spool, shutdown).await },
    )
}

/// `polycrawl app`: flags over the config file, then `application::service::run`
/// until the crawl is complete or SIGINT/SIGTERM; prints the one-line summary.
/// `polycrawl robots`: the manager's decision for each URL. The robots.txt becomes a
/// policy as the manager makes it from a fetch (`RobotsPolicy::from_fetch`); an
/// absolute URL is canonicalized as the app would before queueing it (a URL the
/// app rejects is printed as `rejected`), then matched by its path and query as the
/// frontier does.
fn robots_command(args: RobotsArgs) -> anyhow::Result<()> {
    let config = Config::load_or_default(args.config.as_deref())?;
    let body = std::fs::read(&args.robots)
        .with_context(|| format!("cannot read {}", args.robots.display()))?;
    let agent = args.agent.unwrap_or(config.manager.frontier.robots_agent);
    let policy = manager::robots::RobotsPolicy::from_fetch(args.status, &body, &agent);
    let canon = config.app.canon();
    for url in &args.urls {
        let target = match url::Url::parse(url) {
            Ok(parsed) => match application::canon::canonicalize(parsed, &canon) {
                Ok(canonical) => canonical.to_string(),
                Err(why) => {
                    println!("rejected\t{url}\t{why}");
                    continue;
                }
            },
            // A path, or a URL without a scheme: matched as written.
            Err(_) => url.clone(),
        };
        let allowed = policy.is_allowed(&manager::robots::path_and_query(&target));
        let verdict = if allowed { "allowed" } else { "disallowed" };
        println!("{verdict}\t{url}");
    }
    Ok(())
}

fn app_command(args: AppArgs) -> anyhow::Result<()> {
    let (mut config, reg) = registration(args.service)?;
    let app = &mut config.app;
    if let Some(v) = args.app {
        app.app = v;
    }
    if let Some(v) = args.seeds {
        app.seeds_file = Some(v);
    }
    if let Some(v) = args.state {
        app.state_dir = v;
    }
    if let Some(v) = args.repo {
        app.repository_dir = v;
    }
    if let Some(v) = args.max_pages {
        app.max_pages = v;
    }
    if let Some(v) = args.part {
        app.part = v;
    }
    if let Some(v) = args.parts {
        app.parts = v;
    }
    if let Some(v) = args.mode {
        app.part_mode = v;
    }
    if let Some(v) = args.assignment {
        app.assignment_file = Some(v);
    }
    if let Some(v) = args.replicated {
        app.replicated_file = Some(v);
    }
    if let Some(v) = args.partitioning {
        app.partitioning = v;
    }
    if let Some(v) = args.exchange_root {
        app.exchange_root = Some(v);
    }
    if let Some(root) = args.spool {
        config.spool.root = root;
    }
    let app_id = config.app.app_id()?;
    let id = reg
        .id
        .unwrap_or_else(|| application::service::default_id(&app_id));
    let mut control = application::service::ControlSettings::new(reg.manager, reg.token, id);
    control.max_frame = config.control.max_frame_bytes;
    let spool = spool::Spool::new(config.spool.root.clone()).with_notify(config.spool.notify);
    if args.strategy.seed_by_seed() {
        let seeds = args.strategy.seeds_config(args.candidates, args.sample);
        return serve(|shutdown| async move {
            let summary =
                application::seeds::run(config.app, seeds, spool, Vec::new(), control, shutdown)
                    .await?;
            println!("{summary}");
            Ok::<(), application::service::AppError>(())
        });
    }
    serve(|shutdown| async move {
        let summary =
            application::service::run(config.app, spool, Vec::new(), control, shutdown).await?;
        println!("{summary}");
        Ok::<(), application::service::AppError>(())
    })
}

/// `polycrawl manager`: flags over the config file, then `manager::run` until
/// SIGINT/SIGTERM (downloaders drained) or an admin's shutdown.
fn manager_command(args: ManagerArgs) -> anyhow::Result<()> {
    let mut config = Config::load_or_default(args.config.as_deref())?;
    if let Some(root) = args.spool {
        config.spool.root = root;
    }
    if let Some(state) = args.state {
        config.manager.state_dir = state;
    }
    if let Ok(admin) = std::env::var("POLYCRAWL_ADMIN_TOKEN") {
        config.manager.admin_token = admin;
    }
    if let Some(admin_http) = args.admin_listen {
        config.manager.admin_http = admin_http;
    }
    config
        .manager
        .validate()
        .context("the manager's config with the flags applied")?;
    let admin_addr = config.manager.admin_http.clone();
    let token = control_token(args.token, &config)?;
    let addr = args
        .listen
        .unwrap_or_else(|| config.control.manager_addr.clone());
    let spool = spool::Spool::new(config.spool.root.clone()).with_notify(config.spool.notify);
    let mut settings = manager::Settings::new(config.manager, spool, token);
    let c = &config.control;
    settings.heartbeat_interval = std::time::Duration::from_millis(c.heartbeat_interval_ms);
    settings.heartbeat_timeout = std::time::Duration::from_millis(c.heartbeat_timeout_ms);
    settings.max_frame = c.max_frame_bytes;
    serve(|shutdown| async move {
        let listener = manager::bind(&addr).await?;
        let local = listener
            .local_addr()
            .map_err(|source| manager::ManagerError::Listen { addr, source })?;
        let admin = match admin_addr.as_str() {
            "" => None,
            addr => Some(manager::bind(addr).await?),
        };
        // The ready lines scripts and tests wait for (stdout is line-buffered).
        println!("manager listening addr={local}");
        if let Some(admin) = &admin {
            let local = admin
                .local_addr()
                .map_err(|source| manager::ManagerError::Listen {
                    addr: admin_addr.clone(),
                    source,
                })?;
            println!("manager admin listening addr={local}");
        }
        let stages = manager::run_measured(listener, admin, settings, shutdown).await?;
        // Read by `polycrawl crawl` for its `starved:` line.
        println!("{}", stages.line());
        Ok::<(), manager::ManagerError>(())
    })
}

/// `polycrawl status`: prints a running manager's figures.
fn status_command(args: StatusArgs) -> anyhow::Result<()> {
    let config = Config::load_or_default(args.config.as_deref())?;
    let token = [
        args.token,
        std::env::var("POLYCRAWL_ADMIN_TOKEN").ok(),
        Some(config.manager.admin_token.clone()),
        std::env::var("POLYCRAWL_TOKEN").ok(),
        Some(config.control.token.clone()),
    ]
    .into_iter()
    .flatten()
    .find(|t| !t.is_empty())
    .context("no token: set --token, POLYCRAWL_ADMIN_TOKEN or manager.admin_token")?;
    let token = spool::protocol::Token::new(token).context("admin token")?;
    let addr = args
        .manager
        .unwrap_or_else(|| config.control.manager_addr.clone());
    let runtime = tokio::runtime::Runtime::new()?;
    let snapshot = runtime.block_on(ops::status::fetch(
        &addr,
        token,
        config.control.max_frame_bytes,
    ))?;
    print!("{}", ops::status::render(&addr, &snapshot));
    Ok(())
}

/// How a service reaches the manager: flags over the environment over the config.
struct Registration {
    manager: String,
    token: spool::protocol::Token,
    id: Option<spool::ComponentId>,
}

/// The control token: `--token`, else POLYCRAWL_TOKEN, else `control.token`.
fn control_token(flag: Option<String>, config: &Config) -> anyhow::Result<spool::protocol::Token> {
    let token = flag
        .or_else(|| std::env::var("POLYCRAWL_TOKEN").ok())
        .unwrap_or_else(|| config.control.token.clone());
    anyhow::ensure!(
        !token.is_empty(),
        "no control token: set control.token, POLYCRAWL_TOKEN or --token"
    );
    spool::protocol::Token::new(token).context("control token")
}

/// Loads the config and works out the manager address, token and id.
fn registration(args: ServiceArgs) -> anyhow::Result<(Config, Registration)> {
    let config = Config::load_or_default(args.config.as_deref())?;
    let token = control_token(args.token, &config)?;
    let manager = args
        .manager
        .unwrap_or_else(|| config.control.manager_addr.clone());
    let reg = Registration {
        manager,
        token,
        id: args.id,
    };
    Ok((config, reg))
}

/// Runs a service on a multi-thread runtime until it returns; SIGINT/SIGTERM
/// cancel the token it is given.
fn serve<F, Fut, E>(service: F) -> anyhow::Result<()>
where
    F: FnOnce(tokio_util::sync::CancellationToken) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::runtime::Runtime::new()?.block_on(async {
        tokio::spawn(shutdown_on_signal(shutdown.clone()));
        service(shutdown).await
    })?;
    Ok(())
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
