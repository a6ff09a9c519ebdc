//! The services' subcommands: `polycrawl manager`, `downloader`, `resolver` and
//! `app`, each its flags over the config file (and the environment's tokens),
//! then the service's library until SIGINT/SIGTERM.
//!
//! This module only reads flags, files and the environment and calls the
//! libraries; it must never hold a service's logic.

use std::path::PathBuf;

use anyhow::Context;

use crate::config::Config;

/// The flags of every service that registers with the manager.
#[derive(Debug, clap::Args)]
pub(super) struct ServiceArgs {
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
pub(super) struct DownloaderArgs {
    #[command(flatten)]
    service: ServiceArgs,
    /// The spool directory, overriding spool.root.
    #[arg(long, value_name = "DIR")]
    spool: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(super) struct FrontierArgs {
    #[command(flatten)]
    service: ServiceArgs,
    /// The spool directory, overriding spool.root.
    #[arg(long, value_name = "DIR")]
    spool: Option<PathBuf>,
    /// Where the gRPC service listens, overriding frontier.listen (port 0 picks a
    /// free one). When listening, stdout gets `frontier listening addr=IP:PORT`.
    #[arg(long, value_name = "IP:PORT")]
    listen: Option<String>,
    /// The application id of its URLs, overriding frontier.app.
    #[arg(long, value_name = "APP")]
    app: Option<String>,
    /// The state directory (the seen set), overriding frontier.state_dir.
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(super) struct AppArgs {
    #[command(flatten)]
    service: ServiceArgs,
    /// The application id, overriding app.app.
    #[arg(long, value_name = "APP")]
    app: Option<String>,
    /// Which hosts and URLs the crawl keeps to, overriding app.scope: site (the
    /// default: the seeds' sites), host, domain, prefix or open (every host).
    #[arg(long, value_name = "KIND")]
    scope: Option<app_core::scope::ScopeKind>,
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
    mode: Option<app_core::PartMode>,
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
    partitioning: Option<app_core::Partitioning>,
    /// The spool root whose exchange/ folders every part shares, overriding
    /// app.exchange_root.
    #[arg(long, value_name = "DIR")]
    exchange_root: Option<PathBuf>,
    /// The application and its seed-by-seed settings.
    #[command(flatten)]
    strategy: crate::orchestrate::strategy::StrategyArgs,
    /// Seed-by-seed: the candidate-seed file [default: candidates.txt in the state folder].
    #[arg(long, value_name = "FILE")]
    candidates: Option<PathBuf>,
    /// Seed-by-seed: append seeds queued / active / finished, pages and seeds held
    /// per worker to this TSV file every second.
    #[arg(long, value_name = "FILE")]
    sample: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub(super) struct ManagerArgs {
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

/// How a service reaches the manager: flags over the environment over the config.
struct Registration {
    manager: String,
    token: spool::protocol::Token,
    id: Option<spool::ComponentId>,
}

/// `polycrawl resolver`: flags over the config file, then `resolver::run` until
/// SIGINT/SIGTERM or a drain.
pub(super) fn resolver_command(args: ServiceArgs) -> anyhow::Result<()> {
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
pub(super) fn downloader_command(args: DownloaderArgs) -> anyhow::Result<()> {
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

/// `polycrawl frontier`: flags over the config file, then `urlfrontier::run`
/// until SIGINT/SIGTERM or a drain.
pub(super) fn frontier_command(args: FrontierArgs) -> anyhow::Result<()> {
    let (mut config, reg) = registration(args.service)?;
    if let Some(root) = args.spool {
        config.spool.root = root;
    }
    let f = &mut config.frontier;
    if let Some(v) = args.listen {
        f.listen = v;
    }
    if let Some(v) = args.app {
        f.app = v;
    }
    if let Some(v) = args.state {
        f.state_dir = v;
    }
    f.validate()
        .context("the frontier's config with the flags applied")?;
    let id = reg
        .id
        .unwrap_or_else(|| spool::protocol::client::default_id("frontier"));
    let mut control = spool::protocol::client::ControlSettings::new(reg.manager, reg.token, id);
    control.max_frame = config.control.max_frame_bytes;
    let spool = spool::Spool::new(config.spool.root.clone()).with_notify(config.spool.notify);
    serve(|shutdown| async move {
        let listener = urlfrontier::bind(&config.frontier).await?;
        let local = listener
            .local_addr()
            .map_err(|source| urlfrontier::FrontierError::Listen {
                addr: config.frontier.listen.clone(),
                source,
            })?;
        // The ready line scripts and tests wait for (stdout is line-buffered).
        println!("frontier listening addr={local}");
        urlfrontier::run(
            config.frontier,
            &config.downloader,
            control,
            spool,
            listener,
            shutdown,
        )
        .await
    })
}

/// `polycrawl app`: flags over the config file, then `app_bfs::run`
/// until the crawl is complete or SIGINT/SIGTERM; prints the one-line summary.
pub(super) fn app_command(args: AppArgs) -> anyhow::Result<()> {
    let (mut config, reg) = registration(args.service)?;
    let app = &mut config.app;
    if let Some(v) = args.app {
        app.app = v;
    }
    if let Some(v) = args.scope {
        app.scope = v;
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
    let id = reg.id.unwrap_or_else(|| app_core::default_id(&app_id));
    let mut control = app_core::ControlSettings::new(reg.manager, reg.token, id);
    control.max_frame = config.control.max_frame_bytes;
    let spool = spool::Spool::new(config.spool.root.clone()).with_notify(config.spool.notify);
    if args.strategy.seed_by_seed() {
        let seeds = args.strategy.seeds_config(args.candidates, args.sample);
        return serve(|shutdown| async move {
            let summary =
                app_seeds::run(config.app, seeds, spool, Vec::new(), control, shutdown).await?;
            println!("{summary}");
            Ok::<(), app_core::AppError>(())
        });
    }
    serve(|shutdown| async move {
        let summary = app_bfs::run(config.app, spool, Vec::new(), control, shutdown).await?;
        println!("{summary}");
        Ok::<(), app_core::AppError>(())
    })
}

/// `polycrawl manager`: flags over the config file, then `manager::run` until
/// SIGINT/SIGTERM (downloaders drained) or an admin's shutdown.
pub(super) fn manager_command(args: ManagerArgs) -> anyhow::Result<()> {
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
///
/// The service's own future is a task on the runtime's worker threads, not the
/// main thread's `block_on`: every wake of a future in `block_on` wakes the main
/// thread (a futex and a context switch), and a service's session is woken for
/// each page (the downloader's by its writer's reports, the manager's by each
/// message). On the worker threads, a wake while a worker runs is a queue push:
/// on the nginx benchmark the downloader's and manager's context switches fell
/// from 115,000 to 65,000 a crawl and CPU per page by about 7 % (BENCHMARKS.md,
/// issue 39). A panic in the service ends the process as before.
pub(super) fn serve<F, Fut, E>(service: F) -> anyhow::Result<()>
where
    F: FnOnce(tokio_util::sync::CancellationToken) -> Fut,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::runtime::Runtime::new()?.block_on(async {
        tokio::spawn(super::shutdown_on_signal(shutdown.clone()));
        match tokio::spawn(service(shutdown)).await {
            Ok(result) => result.map_err(anyhow::Error::from),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    })?;
    Ok(())
}
