//! The seed-by-seed application (SCrawler, Lee et al. 2007; DESIGN.md section 7,
//! "other applications"): `polycrawl app --strategy seed-by-seed`.
//!
//! A second application on the same crawling system and the same library as the
//! breadth-first one (crate `app-bfs`): it registers with the manager through the
//! same connection ([`app_core::control`]), reads page batches with the same
//! reader ([`pages::links::batch::BatchReader`]), keeps the same scope rules and
//! canonicalization, publishes request files into `requests/<app>/` and stores its
//! batches in its own repository. Politeness, robots and DNS stay the manager's: this
//! module never fetches anything itself and never decides when a host is contacted.
//!
//! **Parties.** Each seed starts a party ([`party`]): the pages locally reachable
//! from it inside its site (the seed's origin), crawled breadth-first. Internal
//! links stay in the party; external links are never followed but appended to the
//! candidate-seed file, which also holds every input seed (so it can seed the next
//! crawl). A party ends when its frontier is empty and nothing it asked for is in
//! flight; its seed, page count, worker and filter false-positive rate are
//! appended to `<state_dir>/parties.tsv`.
//!
//! **Seed contexts of one site share a bounded filter** ([`bloom`]): a Bloom
//! filter of `context_bytes` (64 KiB by default) per site, kept while a party of
//! the site is held or a seed of it is still queued. So parties of one site never
//! fetch their overlap twice (a URL one party met belongs to it, and so does all
//! it leads to inside the site: the other party loses nothing by leaving it), and
//! a seed another party of its site met already starts a party that ends at once.
//! The price is the filter's false positives: a URL taken as met is not fetched;
//! under 0.1 % up to 33,000 URLs met per site with the default size, and
//! `parties.tsv` gives each party's rate when it ended.
//!
//! **Workers.** `workers` logical workers each hold at most `m` seeds (seed contexts)
//! and keep at most `window` URLs in flight, taken round-robin from their parties'
//! frontiers. A held seed with nothing in flight is *inactive*. Seeds reach workers
//! through [`distributor`]: SCrawler's URL distributor (Figure 5) or free
//! competition. The workers are not threads: the fetching is the crawling system's,
//! and the work left here (reading batches, following links) is one loop's; a worker
//! is what the paper's crawl thread is to the distributor, a holder of seeds with a
//! bounded share of the requests in flight.
//!
//! **Memory**: `context_bytes` per site with a party held (at most `workers × m`)
//! or started with a seed still queued, O(URLs queued and not yet requested) for
//! the active parties' frontiers (not bounded), O(workers × window) for the URLs
//! in flight; the seed queue is O(seeds). Finished parties are forgotten (their
//! line is in `parties.tsv`).
//!
//! # Crash safety (kill -9)
//!
//! The whole state (queue, site filters, parties with their frontier and URLs in
//! flight)
//! is written to `<state_dir>/seeds.state` by publish-rename, at most every 200 ms
//! while busy and at once when idle. The order is: requests are published, then the
//! state that says they are in flight is saved, then the page batches and outcome
//! files that state covers are stored and removed (they stay in our `.claimed/`
//! until then). A restart reads the state back and reads what is still claimed
//! again: a page no party waits for any more is only stored. So no URL is lost; a
//! crash between publishing requests and saving the state requests those URLs
//! again (duplicate fetches, after a crash only), and lines appended to the
//! candidate file or `parties.tsv` after the last save may appear twice.
//! Request files are published by the breadth-first crawl's request output, which
//! waits out a full disk (`DiskWait`). Not yet: a full disk while saving the state
//! or storing a batch stops the app with an error instead of waiting, and the
//! state is rewritten whole at each save (the filters, at most twice their bytes
//! each, and the active parties' frontiers). A version 1 state (every URL each
//! party met) is read back into the filters.

pub mod bloom;
pub mod distributor;
pub mod party;

mod batches;
mod crawl;
mod holdings;
mod records;
mod sites;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use spool::Spool;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use app_core::control::{self, ControlSettings};
use app_core::{AppConfig, AppError, End};

pub use distributor::Balance;

/// The seed-by-seed settings (on top of the application's [`AppConfig`]: its id,
/// spool, state and repository folders, seeds file, scope and canonicalization).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedsConfig {
    /// Workers (the paper's crawl threads).
    pub workers: usize,
    /// Seed contexts per worker (the paper's m; 10).
    pub m: usize,
    /// URLs in flight per worker, at most.
    pub window: usize,
    /// Bytes of each site's duplicate filter (a Bloom filter shared by the
    /// site's seed contexts; [`bloom::DEFAULT_BYTES`], 64 KiB).
    pub context_bytes: usize,
    /// The distributor or free competition.
    pub balance: Balance,
    /// The candidate-seed file (`None`: `candidates.txt` in the state folder).
    pub candidates_file: Option<PathBuf>,
    /// Where to append, every second, the seeds queued / active / finished, pages
    /// and seeds held per worker (TSV; `None`: nowhere).
    pub sample_file: Option<PathBuf>,
}

impl Default for SeedsConfig {
    fn default() -> Self {
        Self {
            workers: 4,
            m: 10,
            window: 4,
            context_bytes: bloom::DEFAULT_BYTES,
            balance: Balance::Distributor,
            candidates_file: None,
            sample_file: None,
        }
    }
}

impl SeedsConfig {
    fn check(&self) -> Result<(), AppError> {
        for (field, value) in [
            ("workers", self.workers),
            ("m", self.m),
            ("window", self.window),
        ] {
            if value == 0 {
                return Err(AppError::Config {
                    field,
                    reason: "must be at least 1".into(),
                });
            }
        }
        if self.context_bytes < 8 {
            return Err(AppError::Config {
                field: "seed_context_bytes",
                reason: format!("{} bytes: at least 8", self.context_bytes),
            });
        }
        Ok(())
    }

    fn candidates_path(&self, state_dir: &Path) -> PathBuf {
        self.candidates_file
            .clone()
            .unwrap_or_else(|| state_dir.join("candidates.txt"))
    }
}

/// The seed-by-seed crawl's counts, printed as one line at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedsSummary {
    /// The application id.
    pub app: String,
    /// Why it ended.
    pub end: End,
    /// The distributor or free competition.
    pub balance: Balance,
    /// Seeds not yet handed to a worker.
    pub queued: u64,
    /// Parties under way.
    pub active: u64,
    /// Parties over.
    pub finished: u64,
    /// Seeds the distributor moved between workers in this run.
    pub moved: u64,
    /// Seeds each worker holds.
    pub held: Vec<usize>,
    /// The most site filters held at once (this run).
    pub filters_peak: usize,
    /// The largest site filter held (this run), in bytes.
    pub filter_bytes: usize,
    /// Sites whose filter passed 1 % expected false positives (this run): their
    /// new URLs are ever more often taken as met and not fetched.
    pub filters_saturated: usize,
    /// Pages that came back to a party.
    pub pages: u64,
    /// Response records stored in this run.
    pub stored: u64,
    /// URLs requested.
    pub requested: u64,
    /// Outcomes (no page) read.
    pub outcomes: u64,
    /// Files quarantined in this run.
    pub quarantined: u64,
    /// Pages whose links robots directives kept from being followed (this run).
    pub robots_nofollow: u64,
    /// Pages whose body robots directives kept out of the repository (this run).
    pub robots_withheld: u64,
    /// This run's time.
    pub elapsed: Duration,
}

impl fmt::Display for SeedsSummary {
    /// `app ID: Complete: seed-by-seed (distributor), seeds queued ...`: the same
    /// `app ID: END:` head as the breadth-first app's line, which `polycrawl crawl`
    /// and `demo` read to know a part is done.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let held: Vec<String> = self.held.iter().map(ToString::to_string).collect();
        write!(
            f,
            "app {}: {:?}: seed-by-seed ({}), seeds queued {} active {} finished {} moved {}; \
             held per worker [{}]; site filters {} at most, {} bytes each at most, {} past 1 % false positives; \
             pages {} stored {}; urls requested {}; outcomes {}; \
             quarantined {}; robots nofollow {} withheld {}; {:.1} s",
            self.app,
            self.end,
            self.balance,
            self.queued,
            self.active,
            self.finished,
            self.moved,
            held.join(" "),
            self.filters_peak,
            self.filter_bytes,
            self.filters_saturated,
            self.pages,
            self.stored,
            self.requested,
            self.outcomes,
            self.quarantined,
            self.robots_nofollow,
            self.robots_withheld,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Runs the seed-by-seed application until every party is over, `shutdown` is
/// cancelled (after saving its state), or the manager refuses it. `seeds` add to
/// `config.seeds_file` (read on the first start only; after that the saved state
/// holds the queue).
pub async fn run(
    config: AppConfig,
    seeds_config: SeedsConfig,
    spool: Spool,
    seeds: Vec<String>,
    control: ControlSettings,
    shutdown: CancellationToken,
) -> Result<SeedsSummary, AppError> {
    let app = config.app_id()?;
    let (progress_tx, _progress_rx) = watch::channel(None);
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let stop = shutdown.child_token();
    let loop_stop = stop.clone();
    let id = control.id.clone();
    let crawl = tokio::task::spawn_blocking(move || {
        crawl::SeedCrawl::open(config, seeds_config, &spool, id, seeds, out_tx, loop_stop)
    })
    .await
    .map_err(|_| AppError::Panicked)??;
    let to_crawl = control::ToCrawl {
        progress: progress_tx,
        waker: crawl.waker(),
    };
    control::drive(control, app, to_crawl, out_rx, &stop, move || crawl.run()).await
}
