//! `polycrawl coordinator`: the coordinator of a two-level crawl, rounds until
//! SIGINT/SIGTERM, with its ready line and its summary line.
//!
//! This module only wires flags and the config to `coordinator`; it
//! must never hold the coordinator's logic.

use std::path::PathBuf;

use anyhow::Context;

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub(super) struct CoordinatorArgs {
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
    #[arg(long, default_value_t = coordinator::Policy::RoundRobin)]
    policy: coordinator::Policy,
    /// Seed URLs, one per line: their sites are assigned first.
    #[arg(long, value_name = "FILE")]
    seeds: Option<PathBuf>,
    /// Pause after a round that found nothing to do, in milliseconds.
    #[arg(long, default_value_t = 50)]
    poll_ms: u64,
}

/// `polycrawl coordinator`: rounds until SIGINT/SIGTERM; one ready line at start,
/// one summary line at the end.
pub(super) fn coordinator_command(args: CoordinatorArgs) -> anyhow::Result<()> {
    use coordinator::{Coordinator, CoordinatorConfig};
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
            if let Some(host) = app_core::parts::host_of(&url) {
                let root = app_core::twolevel::root_of(&url).to_string();
                seeds.push((host, root));
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
