//! The seed-by-seed crawl loop (one blocking thread): hand seeds to workers, keep
//! each worker's window of requests full from its parties' frontiers, publish the
//! requests, route every page and outcome back to the parties that asked for it,
//! save the state, then store and drop the batches. The crash-safety argument is in
//! the [module docs](super).
//!
//! [`SeedCrawl`] coordinates its parts and owns only the crawl's settings and
//! counters: the seeds and who holds them ([`Holdings`]), the claimed inputs
//! ([`Batches`]), the request output (the breadth-first crawl's
//! [`RequestOutput`]), and the crawl's files ([`Records`]). It must never grow
//! their state back.

use std::time::{Duration, Instant};

use spool::AppId;
use spool::claim::Claimed;
use spool::discover::Waker;
use spool::protocol::{AppFigures, Message};
use spool::{ComponentId, Spool};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
use url::Url;

use super::batches::Batches;
use super::holdings::{Holdings, Totals};
use super::party::Met;
use super::records::Records;
use super::{SeedsConfig, SeedsSummary};
use app_core::config::read_lines;
use app_core::output::RequestOutput;
use app_core::parts::{Ownership, host_of};
use app_core::pause::DiskWait;
use app_core::reach::Reach;
use app_core::scope::Scope;
use app_core::{AppConfig, AppError, CrashHook, End, PartMode};
use pages::canon;
use pages::links::PageLinksOf;

/// Longest wait for a page batch or outcome file when there is nothing to do (the
/// pages folder's watcher and the manager's hints wake the loop sooner).
const IDLE_WAIT: Duration = Duration::from_millis(20);

/// How often, at most, the figures go to the manager (admin page).
const FIGURES_EVERY: Duration = Duration::from_secs(2);

/// The crawl: its parts, and the counters of this run.
pub(crate) struct SeedCrawl {
    seeds: SeedsConfig,
    app: AppId,
    scope: Scope,
    holdings: Holdings,
    batches: Batches,
    output: RequestOutput,
    /// Waits out a full disk while publishing, and tells the manager our figures.
    wait: DiskWait,
    records: Records,
    totals: Totals,
    /// When the figures were last looked at.
    figures_at: Option<Instant>,
    stop: CancellationToken,
    started: Instant,
}

impl SeedCrawl {
    pub(crate) fn open(
        config: AppConfig,
        seeds: SeedsConfig,
        spool: &Spool,
        id: ComponentId,
        extra_seeds: Vec<String>,
        outbound: mpsc::UnboundedSender<Message>,
        stop: CancellationToken,
    ) -> Result<Self, AppError> {
        seeds.check()?;
        let owned = SeedOwner::of(&config)?;
        let app = config.app_id()?;
        let records = Records::open(&seeds, config.state_dir.clone())?;
        let batches = Batches::open(&config, spool, id.clone())?;
        let output = RequestOutput::new(
            spool::publish::Publisher::new(spool.requests(&app)?, id)?,
            app.clone(),
            config.priority()?,
            config.urls_per_request_file,
            false,
            outbound.clone(),
            CrashHook::default(),
        );
        let mut crawl = Self {
            holdings: Holdings::new(seeds.workers, seeds.context_bytes),
            app,
            scope: config.scope()?,
            batches,
            output,
            wait: DiskWait::new(outbound, stop.clone()),
            records,
            totals: Totals::default(),
            figures_at: None,
            stop,
            started: Instant::now(),
            seeds,
        };
        let mut input = extra_seeds;
        if let Some(path) = &config.seeds_file {
            input.extend(read_lines(path)?);
        }
        // Every seed's site is in scope (of every party: a party's links may
        // lead to another seed's site), also after a restart.
        let canon_config = config.canon();
        for seed in &input {
            if let Ok(url) = canon::parse(seed, None, &canon_config) {
                crawl.scope.add_seed(&url);
            }
        }
        if crawl.records.first_start() {
            crawl.take_seeds(input, &owned, &config)?;
            crawl.save()?;
        } else {
            crawl.load()?;
        }
        Ok(crawl)
    }

    /// Queues the input seeds this application takes (canonical) and appends
    /// them to the candidates.
    fn take_seeds(
        &mut self,
        input: Vec<String>,
        owned: &SeedOwner,
        config: &AppConfig,
    ) -> Result<(), AppError> {
        let canon = config.canon();
        let mut text = String::new();
        for seed in input {
            match canon::parse(&seed, None, &canon) {
                Ok(url) if !owned.takes(&url) => {}
                Ok(url) => {
                    text.push_str(url.as_str());
                    text.push('\n');
                    self.holdings.queue_seed(url.to_string());
                }
                Err(e) => warn!(seed = %seed, error = %e, "seeds: seed rejected"),
            }
        }
        self.records.candidates(&text)
    }

    /// Wakes the loop when it waits (for the control connection's hints).
    pub(crate) fn waker(&self) -> Waker {
        self.batches.waker()
    }

    pub(crate) fn run(mut self) -> Result<SeedsSummary, AppError> {
        // What was claimed before a crash: read again (pages no party waits for
        // any more are only stored).
        for claimed in self.batches.resumed_outcomes()? {
            self.outcome_file(claimed)?;
        }
        for claimed in self.batches.resumed_pages()? {
            self.page_batch(claimed)?;
        }
        loop {
            if self.stop.is_cancelled() {
                self.save()?;
                return Ok(self.summary(End::Shutdown));
            }
            self.sample()?;
            self.report_figures();
            if self.holdings.distribute(self.seeds.balance, self.seeds.m) {
                self.records.changed();
            }
            let requested = self.request()?;
            let mut worked = requested > 0;
            for claimed in self.batches.claim_outcomes()? {
                self.outcome_file(claimed)?;
                worked = true;
            }
            for claimed in self.batches.claim_pages()? {
                self.page_batch(claimed)?;
                worked = true;
            }
            self.end_parties()?;
            if self.records.save_due(worked) {
                self.save()?;
            }
            if self.holdings.is_over() {
                self.save()?;
                info!(app = %self.app, "seeds: every party is over");
                return Ok(self.summary(End::Complete));
            }
            if !worked {
                self.batches.wait(IDLE_WAIT);
            }
        }
    }

    /// Fills each worker's window and publishes the new requests; returns how
    /// many URLs were requested.
    fn request(&mut self) -> Result<usize, AppError> {
        let out: Vec<(String, Reach)> = self
            .holdings
            .take_requests(self.seeds.window)
            .into_iter()
            .map(|(url, depth)| (url, Reach { depth, hops: 0 }))
            .collect();
        if out.is_empty() {
            return Ok(0);
        }
        self.records.changed();
        self.output
            .publish_all(&out, self.batches.repo(), &self.wait)?;
        self.totals.requested += out.len() as u64;
        Ok(out.len())
    }

    /// Gives each page of a batch to the parties waiting for it.
    fn page_batch(&mut self, claimed: Claimed) -> Result<(), AppError> {
        let Some(pages) = self.batches.read_pages(claimed)? else {
            return Ok(());
        };
        for page in pages {
            self.page(page)?;
        }
        self.records.changed();
        Ok(())
    }

    /// Each party waiting for the page meets its links (in scope); the external
    /// ones it had not met become candidate seeds.
    fn page(&mut self, page: PageLinksOf) -> Result<(), AppError> {
        let depth = page.depth.unwrap_or(0).saturating_add(1);
        let scope = &self.scope;
        let mut external = String::new();
        let served = self.holdings.page_came(&page.url, |party, filter| {
            for link in page.redirect.iter().chain(&page.links) {
                if scope.check(link, depth).is_err() {
                    continue;
                }
                if party.meet(filter, link, depth) == Met::External {
                    external.push_str(link.as_str());
                    external.push('\n');
                }
            }
            Ok(())
        })?;
        self.totals.pages += served;
        if !external.is_empty() {
            self.records.candidates(&external)?;
        }
        Ok(())
    }

    /// An outcome (no page) ends the URL for the parties waiting for it.
    fn outcome_file(&mut self, claimed: Claimed) -> Result<(), AppError> {
        let Some(urls) = self.batches.read_outcomes(claimed)? else {
            return Ok(());
        };
        for url in urls {
            self.totals.outcomes += 1;
            self.holdings.outcome_came(&url);
        }
        self.records.changed();
        Ok(())
    }

    /// Ends every party whose frontier is empty and nothing in flight.
    fn end_parties(&mut self) -> Result<(), AppError> {
        let log = self.holdings.end_parties();
        if !log.is_empty() {
            self.records.parties(&log)?;
            self.records.changed();
        }
        Ok(())
    }

    /// Writes the state durably (candidates and party log first), then stores and
    /// drops the batches and outcome files it covers.
    fn save(&mut self) -> Result<(), AppError> {
        self.records.save(&self.holdings.encode(self.totals))?;
        self.batches.store_saved()
    }

    /// Reads the saved state back.
    fn load(&mut self) -> Result<(), AppError> {
        let holdings = &mut self.holdings;
        self.totals = self
            .records
            .load(|lines, path| holdings.decode(lines, path))?;
        info!(
            queued = self.holdings.queued(),
            parties = self.holdings.active(),
            in_flight = self.holdings.in_flight(),
            "seeds: state read back"
        );
        Ok(())
    }

    /// Appends one sample line (held seeds per worker) every second.
    fn sample(&mut self) -> Result<(), AppError> {
        let holdings = &self.holdings;
        let (started, pages) = (self.started, self.totals.pages);
        self.records.sample(|| {
            let held: Vec<String> = holdings.held().iter().map(usize::to_string).collect();
            format!(
                "{}\t{}\t{}\t{}\t{}\t{}\n",
                started.elapsed().as_millis(),
                holdings.queued(),
                holdings.active(),
                holdings.finished(),
                pages,
                held.join(",")
            )
        })
    }

    /// Tells the manager the figures the admin page shows (seeds, held per worker,
    /// the biggest active parties) when they changed, at most every
    /// [`FIGURES_EVERY`]. O(active parties) when it looks.
    fn report_figures(&mut self) {
        if self
            .figures_at
            .is_some_and(|at| at.elapsed() < FIGURES_EVERY)
        {
            return;
        }
        self.wait.set_figures(AppFigures {
            pages: self.batches.counts().stored,
            seeds: Some(Box::new(self.holdings.figures(self.seeds.balance))),
            ..AppFigures::default()
        });
        self.figures_at = Some(Instant::now());
    }

    fn summary(&self, end: End) -> SeedsSummary {
        let counts = self.batches.counts();
        let (_, filters_peak, filter_bytes) = self.holdings.filter_figures();
        SeedsSummary {
            filters_peak,
            filter_bytes,
            filters_saturated: self.holdings.filters_saturated(),
            app: self.app.to_string(),
            end,
            balance: self.seeds.balance,
            queued: self.holdings.queued(),
            active: self.holdings.active(),
            finished: self.holdings.finished(),
            moved: self.holdings.moved(),
            held: self.holdings.held(),
            pages: self.totals.pages,
            stored: counts.stored,
            requested: self.totals.requested,
            outcomes: self.totals.outcomes,
            quarantined: counts.quarantined,
            robots_nofollow: counts.robots_nofollow,
            robots_withheld: counts.robots_withheld,
            elapsed: self.started.elapsed(),
        }
    }
}

/// Which input seeds this application takes. Unsplit: all. Part I of a crawl split
/// into K parts (one per crawling system or machine): the seeds whose host it owns
/// by the crawl's [`Ownership`] ([`AppConfig::ownership`]), so every
/// seed is crawled by exactly one part and a site's parties stay on one crawling
/// system. External links are never followed, so parts exchange nothing.
enum SeedOwner {
    All,
    Part(Ownership, u32),
}

impl SeedOwner {
    fn of(config: &AppConfig) -> Result<Self, AppError> {
        if config.part_stem()?.is_none() {
            return Ok(Self::All);
        }
        if config.part_mode == PartMode::TwoLevel {
            return Err(AppError::Config {
                field: "part_mode",
                reason: "a seed-by-seed crawl splits its seeds by host; two-level mode \
                         (sites assigned by a coordinator) is for the breadth-first crawl"
                    .into(),
            });
        }
        Ok(Self::Part(config.ownership()?, config.part))
    }

    /// O(1): one hash of the host (and a table lookup with an assignment file).
    fn takes(&self, url: &Url) -> bool {
        match self {
            Self::All => true,
            Self::Part(ownership, part) => {
                host_of(url).is_some_and(|host| ownership.owner(&host) == *part)
            }
        }
    }
}
