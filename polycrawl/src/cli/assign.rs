//! The subcommands that read a finished crawl's host graph: `polycrawl assign`
//! (METIS assignment files, replicated URLs, the partitioning table) and
//! `polycrawl quality` (the share of important pages over the downloads).
//!
//! This module must never write into a repository; what it writes (assignment
//! and replicated-URL files) is published crash-safely by `offline`.

use std::path::PathBuf;

use anyhow::Context;

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub(super) struct AssignArgs {
    /// The finished crawl's WARC repository (read only; no ingest may run).
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// Number of application parts (K).
    #[arg(long, value_name = "K", requires = "out",
          required_unless_present_any = ["evaluate", "table", "messages", "replicate"])]
    parts: Option<u32>,
    /// Where to write the assignment file (published crash-safely).
    #[arg(long, value_name = "FILE", requires = "parts",
          required_unless_present_any = ["evaluate", "table", "messages", "replicate"])]
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
    /// site-hash, site-hash with top-N replication, hierarchical, METIS and METIS
    /// with top-N replication, at every K of --ks and N of --tops, one table (page
    /// level, on this repository).
    #[arg(long, conflicts_with_all = ["out", "parts", "evaluate", "replicate"])]
    table: bool,
    /// Write nothing: print the paper's message table (hypergraph-site-assignment,
    /// table 2) at every K of --ks: messages (connectivity − 1 over pages with
    /// links to other sites) and the page and byte imbalances of site-hash and of
    /// METIS with both balance constraints refined on the site hypergraph, each
    /// part within --imbalance of the mean.
    #[arg(long, conflicts_with_all = ["out", "parts", "evaluate", "replicate", "table"])]
    messages: bool,
    /// --table, --messages: the numbers of parts.
    #[arg(long, value_name = "K,..", value_delimiter = ',', default_values_t = [2u32, 4, 8])]
    ks: Vec<u32>,
    /// --table: the numbers of replicated most-linked URLs.
    #[arg(long, value_name = "N,..", value_delimiter = ',', default_values_t = [100usize, 1000])]
    tops: Vec<usize>,
    /// Largest part's stored pages over the mean, at most.
    #[arg(long, value_name = "RATIO", default_value_t = offline::DEFAULT_IMBALANCE)]
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
pub(super) struct QualityArgs {
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
pub(super) struct SimulateArgs {
    /// The finished crawl's WARC repository: its stored pages and their links are
    /// the simulated web (read only; no ingest may run).
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// The crawl's config file: its app section's canonicalization and body cap
    /// apply [default: the defaults].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The seed of the generator that draws each process's seed pages.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Runs with different seed pages per figure point, averaged.
    #[arg(long, value_name = "N", default_value_t = 3)]
    runs: u64,
}

/// `polycrawl assign`: the host graph, then METIS and the file, or the evaluation
/// of a file; one summary line either way.
pub(super) fn assign_command(args: AssignArgs) -> anyhow::Result<()> {
    use app_core::parts::Ownership;
    use offline::{self as assign, HostGraph, evaluate};
    let config = Config::load_or_default(args.config.as_deref())?;
    let read_started = std::time::Instant::now();
    let graph = HostGraph::from_repository(&args.repo, &config.app)?;
    if args.messages {
        let started = std::time::Instant::now();
        let sites = assign::SiteHypergraph::from_graph(&graph);
        let rows = assign::table::messages_table(&graph, &args.ks, args.imbalance - 1.0)?;
        println!(
            "assign messages sites={} pages={} nets={} pins={} read_seconds={:.2} table_seconds={:.2}",
            sites.sites(),
            graph.page_count(),
            sites.nets(),
            sites.pin_count(),
            (started - read_started).as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
        print!("{}", assign::table::MessageTable(&rows));
        return Ok(());
    }
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
/// `polycrawl simulate`: the figures as text tables (see [`offline::simulate`]).
pub(super) fn simulate_command(args: SimulateArgs) -> anyhow::Result<()> {
    use offline::simulate::{Exchanges, Web, firewall_coverage, quality};
    let config = Config::load_or_default(args.config.as_deref())?;
    let graph = offline::HostGraph::from_repository(&args.repo, &config.app)?;
    let web = Web::from_graph(&graph);
    anyhow::ensure!(web.pages() > 0, "{}: no stored page", args.repo.display());
    let runs = args.runs.max(1);
    let seeds = |r: u64| args.seed.wrapping_add(r.wrapping_mul(1_000_003));
    let mean = |f: &dyn Fn(u64) -> f64| (0..runs).map(|r| f(seeds(r))).sum::<f64>() / runs as f64;
    println!(
        "simulate pages={} links={} sites={} runs={runs}",
        web.pages(),
        web.link_count(),
        graph.host_count()
    );
    println!(
        "\n# figure 4: firewall coverage, 5 seeds per process\n{:>3} {:>8}",
        "n", "coverage"
    );
    for n in [1u32, 2, 4, 8, 16, 32, 64] {
        println!(
            "{n:>3} {:>8.3}",
            mean(&|s| firewall_coverage(&web, n, 5, s))
        );
    }
    let totals = [64usize, 256, 1024, 4096, 16384];
    print!(
        "\n# figure 5: firewall coverage against total seeds\n{:>3}",
        "n"
    );
    for s in totals {
        print!(" {:>7}", format!("s={s}"));
    }
    println!();
    for n in [2u32, 8, 32, 64] {
        print!("{n:>3}");
        for s in totals {
            let per = (s / n as usize).max(1);
            print!(
                " {:>7.3}",
                mean(&|seed| firewall_coverage(&web, n, per, seed))
            );
        }
        println!();
    }
    let xs = [0u32, 1, 2, 4, 10, 20, 50, 100];
    for share in [0.012, 0.05, 0.2] {
        let budget = ((web.pages() as f64 * share).round() as u64).max(1);
        println!(
            "\n# figures 9-11: quality (and [URL, count] pairs per page) after {budget} downloads ({:.1} %), 5 seeds per process",
            share * 100.0
        );
        print!("{:>3}", "n");
        for x in xs {
            print!(" {:>13}", format!("x={x}"));
        }
        println!(" {:>13}", "every page");
        for n in [1u32, 2, 8, 64] {
            print!("{n:>3}");
            for ex in xs
                .iter()
                .map(|x| Exchanges::Times(*x))
                .chain([Exchanges::EveryPage])
            {
                let q = mean(&|s| quality(&web, n, ex, budget, 5, s).quality);
                let c = mean(&|s| quality(&web, n, ex, budget, 5, s).pairs_per_page);
                print!(" {:>13}", format!("{q:.3} ({c:.2})"));
            }
            println!();
        }
    }
    Ok(())
}

pub(super) fn quality_command(args: QualityArgs) -> anyhow::Result<()> {
    use offline::{HostGraph, quality};
    let config = Config::load_or_default(args.config.as_deref())?;
    let reference = HostGraph::from_repository(&args.reference, &config.app)?;
    let top = quality::top_set(&reference, args.top);
    let order = quality::download_order(&args.repos)?;
    print!("{}", quality::curve(&order, &top));
    Ok(())
}

/// `polycrawl cost-model`: the two-level crawl's predicted time and speed-up
/// (offline::costmodel) for the given measured parameters.
#[derive(clap::Args, Debug)]
pub(super) struct CostModelArgs {
    /// Pages the crawl stores.
    #[arg(long, value_name = "N")]
    pages: f64,
    /// Agent counts to predict, comma-separated.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_values_t = [1, 2, 3, 5, 7])]
    agents: Vec<u32>,
    /// Pages/s of one agent alone.
    #[arg(long, value_name = "PAGES_PER_S")]
    single: f64,
    /// A run's start and end, seconds.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    fixed_s: f64,
    /// Site reports per page.
    #[arg(long, value_name = "R", default_value_t = 0.0)]
    reports: f64,
    /// Site assignments per page.
    #[arg(long, value_name = "R", default_value_t = 0.0)]
    assignments: f64,
    /// URLs exchanged between agents per page.
    #[arg(long, value_name = "R", default_value_t = 0.0)]
    exchanged: f64,
    /// An agent's seconds per site report.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    report_s: f64,
    /// An agent's seconds per assignment line read.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    assignment_s: f64,
    /// An agent's seconds per URL exchanged.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    exchange_s: f64,
    /// The coordinator's seconds per message.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    coordinator_s: f64,
    /// The largest agent's pages over the mean.
    #[arg(long, value_name = "B", default_value_t = 1.0)]
    balance: f64,
}

pub(super) fn cost_model_command(args: CostModelArgs) -> anyhow::Result<()> {
    let params = offline::costmodel::CostParams {
        single: args.single,
        fixed_s: args.fixed_s,
        reports: args.reports,
        assignments: args.assignments,
        exchanged: args.exchanged,
        report_s: args.report_s,
        assignment_s: args.assignment_s,
        exchange_s: args.exchange_s,
        coordinator_s: args.coordinator_s,
        balance: args.balance,
    };
    println!("agents\tcrawl_s\tpages_per_s\tspeed_up\tper_agent\toverhead\tbound");
    for n in &args.agents {
        let p = params.predict(args.pages, *n)?;
        println!(
            "{}\t{:.1}\t{:.1}\t{:.2}\t{:.1}\t{:.2}\t{}",
            p.agents,
            p.crawl_s,
            p.speed,
            p.speed_up,
            p.per_agent,
            p.overhead,
            if p.coordinator_bound {
                "coordinator"
            } else {
                "agents"
            }
        );
    }
    Ok(())
}
