//! `polycrawl recrawl`: revisits a finished crawl's URLs with conditional requests
//! (DESIGN.md section 7, *recrawl*), on the same crawling system and application
//! code as `polycrawl crawl`.
//!
//! **Decision: a mode of the breadth-first application, not a new one.** The
//! recrawl's URL list is the repository's (every URL its CDXJ index holds, in its
//! exact spelling), written to `<out>/recrawl-urls.txt` and crawled as seeds by the
//! breadth-first application with `app.conditional_requests` on: each request line
//! carries the `ETag` and `Last-Modified` of the URL's newest 200 in the repository
//! (looked up when the line is written, so nothing is held in memory), the
//! downloader sends them as `If-None-Match` / `If-Modified-Since`, and storage
//! files a 304 as a server-not-modified revisit, an identical payload as an
//! identical-payload-digest revisit and a changed page as a new response. Everything
//! else is the breadth-first application's: the seen set (so each URL is asked for
//! once, links included), completion tracking, durability across kill -9 and
//! restarts with the same `--out`, the summary.
//!
//! **The same repository.** The recrawl stores into the repository it read
//! (`--repo`): the revisit records refer to the earlier captures by digest, URL and
//! date, which replay tools resolve within one collection, and `polycrawl get URL`
//! returns the newest version. Its own state, spool and logs go under `--out`.
//!
//! Links: with `--follow-links`, links found on the pages that come back with a
//! body (changed or new) are followed as in a crawl (URLs of the list are in the
//! seen set, so only new ones are requested); without it (the default) only the
//! list is fetched (`app.max_depth = 0`). Host budgets are raised to the list's
//! length so that no URL of the list is cut.
//!
//! Memory: the URL list is built in a sorted set, O(URLs in the repository), once
//! at the start.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::crawl::{CrawlArgs, run_with};
use super::layout::Layout;
use super::parts::SplitArgs;
use super::strategy::StrategyArgs;
use super::system::SupervisionArgs;
use crate::config::Config;

/// Flags of `polycrawl recrawl`.
#[derive(Debug, Clone, clap::Args)]
pub struct RecrawlArgs {
    /// The finished crawl's repository: its URLs are revisited and the results
    /// stored in it.
    #[arg(long, value_name = "DIR")]
    pub repo: PathBuf,
    /// Output directory of this run: effective config, spool, state, logs, the URL
    /// list (the repository is `--repo`).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The config file (RON); without one, the defaults apply.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Follow links on the pages that come back with a body (changed or new).
    #[arg(long)]
    pub follow_links: bool,
    /// Downloader processes (default: one per 8 cores, at most 8; see `sizing.rs`).
    #[arg(long, default_value_t = super::sizing::default_downloaders(),
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub downloaders: u32,
    /// When to give up restarting a process that keeps dying.
    #[command(flatten)]
    pub supervision: SupervisionArgs,
}

/// Writes the URL list (once: a restarted recrawl keeps it) and runs the recrawl.
pub fn run(args: RecrawlArgs, shutdown: CancellationToken, rt: Handle) -> anyhow::Result<()> {
    let repo = std::path::absolute(&args.repo)
        .with_context(|| format!("resolving {}", args.repo.display()))?;
    anyhow::ensure!(
        repo.join("index").is_dir(),
        "{} is not a repository (no index/ folder)",
        repo.display()
    );
    let mut layout = Layout::new(&args.out)?;
    layout.repository = repo.clone();
    std::fs::create_dir_all(&layout.out)
        .with_context(|| format!("creating {}", layout.out.display()))?;
    let list = layout.out.join("recrawl-urls.txt");
    let urls = if list.is_file() {
        let text = std::fs::read_to_string(&list)
            .with_context(|| format!("reading {}", list.display()))?;
        text.lines().filter(|l| !l.is_empty()).count()
    } else {
        write_list(&repo, &list)?
    };
    anyhow::ensure!(urls > 0, "the repository {} holds no URL", repo.display());
    eprintln!("recrawl: {urls} URLs of {}", repo.display());

    let mut config = Config::load_or_default(args.config.as_deref())?;
    config.app.conditional_requests = true;
    if !args.follow_links {
        config.app.max_depth = 0;
    }
    let n = urls as u64;
    config.app.host_budget_seed = config.app.host_budget_seed.max(n);
    config.app.host_budget_max = config.app.host_budget_max.max(n);
    let crawl = CrawlArgs {
        seeds: list,
        out: args.out,
        config: None,
        downloaders: args.downloaders,
        max_pages: None,
        scope: None,
        requeue: None,
        supervision: args.supervision,
        // One part: the recrawl stores into the one repository it read.
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
        // A recrawl revisits what the repository holds, URL by URL.
        strategy: StrategyArgs::default(),
    };
    run_with(config, layout, "polycrawl recrawl", crawl, shutdown, rt)
}

/// Writes every URL of the repository's index, sorted, one a line, to `list`
/// (durably: a temporary file, fsynced and renamed, the folder fsynced); returns
/// how many.
fn write_list(repo: &std::path::Path, list: &std::path::Path) -> anyhow::Result<usize> {
    let reader = storage::RepositoryReader::open(repo)?;
    let mut urls = BTreeSet::new();
    reader.for_each_index_line(|line| {
        urls.insert(line.url);
    })?;
    let tmp = list.with_extension("txt.tmp");
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?,
    );
    for u in &urls {
        writeln!(f, "{u}")?;
    }
    let f = f.into_inner().map_err(|e| e.into_error())?;
    spool::publish::durable_rename(f, &tmp, list)?;
    Ok(urls.len())
}
