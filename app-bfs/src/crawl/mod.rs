//! The crawl loop (one blocking thread, with reader threads that parse the page
//! batches it claims: `read_ahead.rs`): take in inputs (`intake`), offer their
//! URLs through the admission rules (`admission`) to the seen set, publish each
//! merge's new URLs as request files (`output`), hand inputs on once their links
//! are published, count outcomes (`ledger`), and decide when the crawl is done
//! (`completion`). The crash-safety argument is in the [module docs](super).
//!
//! [`Crawl`] coordinates these parts and owns only what they share (the seen set,
//! the repository, a split crawl's parts); it must never grow their state back.

mod admission;
mod completion;
mod intake;
mod ledger;

use std::fs;
use std::time::{Duration, Instant};

use spool::claim::Consumer;
use spool::discover::{Discovery, Waker};
use spool::protocol::{
    AppFigures, BudgetCut, MAX_CUT_RULES, MAX_TOP_HOSTS, Message, PartFigures, RuleCut, TrapCut,
};
use spool::publish::Publisher;
use spool::{ComponentId, Spool, SpoolDir};
use storage::Repository;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::info;
use url::Url;

use self::admission::Admission;
use self::completion::Completion;
use self::intake::Intake;
use self::ledger::Ledger;
use crate::exchange::{Foreign, Parts};
use crate::importance::Pool;
use crate::pace::Pace;
use crate::read_ahead::ReadAhead;
use crate::summary::{CutSummary, PageCounts, Summary};
use crate::unshuffle::{key_domain, key_host, unshuffle};
use app_core::CrashHook;
use app_core::End;
use app_core::budget::site_of;
use app_core::config::{AppConfig, Order, PartMode};
use app_core::control::ProgressSeen;
use app_core::crawllog::CrawlLog;
use app_core::error::AppError;
use app_core::output::RequestOutput;
use app_core::pause::DiskWait;
use app_core::reach::Reach;
use app_core::traps::Detector;
use pages::canon::key::{reversed_host_key, url_from_key};
use pages::links::BatchReader;
use seen::{NewBatch, SeenSet};

/// The crawl loop's side of the manager connection (see [`app_core::control`]).
#[derive(Debug)]
pub(crate) struct ManagerLink {
    /// The newest progress report.
    pub progress: watch::Receiver<ProgressSeen>,
    /// Hints and syncs to send.
    pub outbound: mpsc::UnboundedSender<Message>,
}

/// How often, at most, the application's figures go to the manager (admin page).
const FIGURES_EVERY: Duration = Duration::from_secs(2);

/// Longest pause between looks while a merge runs or a batch is being read. Both
/// wake the loop when they finish (the merge thread and the readers call the pages
/// folder's waker), so this is only a safety net, not a poll: a poll every few
/// milliseconds cost each part thousands of folder scans a second.
const MERGE_POLL: Duration = Duration::from_millis(50);

/// Shortest pause of [`Crawl::nap`] for a merge that is due, so that a due merge
/// that cannot start yet does not spin the loop.
const MIN_NAP: Duration = Duration::from_millis(1);

/// A linking page with its site (see `budget.rs`), as [`Crawl::offer`] takes it:
/// the page's URL parsed once, by whoever read it.
pub(super) struct Linking {
    page: Url,
    site: Box<[u8]>,
}

impl Linking {
    fn new(page: Url) -> Self {
        let site = site_of(key_host(reversed_host_key(&page).as_bytes())).into();
        Self { page, site }
    }
}

/// What one turn of the loop's work did.
enum Turn {
    Worked,
    Idle,
    /// The crash test hook fired.
    Crashed,
}

pub(crate) struct Crawl {
    config: AppConfig,
    seen: SeenSet,
    repo: Repository,
    /// Split crawls: this part's exchange state.
    parts: Option<Parts>,
    /// Importance order: the new URLs not requested yet, ranked by links.
    pool: Option<Pool>,
    intake: Intake,
    admission: Admission,
    output: RequestOutput,
    ledger: Ledger,
    completion: Completion,
    /// Waits out a full disk (`pause.rs`), and tells the manager our figures.
    wait: DiskWait,
    stop: CancellationToken,
}

impl Crawl {
    /// Opens the crawl's state and folders; `seeds` (with the seeds file's) are
    /// offered by [`Crawl::run`].
    pub(crate) fn open(
        config: AppConfig,
        spool: &Spool,
        id: ComponentId,
        seeds: Vec<String>,
        link: ManagerLink,
        stop: CancellationToken,
        hook: CrashHook,
    ) -> Result<Self, AppError> {
        let app = config.app_id()?;
        let state_dir = config.state_dir.clone();
        fs::create_dir_all(&state_dir).map_err(|source| AppError::File {
            path: state_dir.clone(),
            source,
        })?;
        let mut ledger = Ledger::load(state_dir.clone())?;
        if config.crawl_log {
            ledger.log = Some(CrawlLog::open(&state_dir, &ledger.progress.crawl_log)?);
        }
        let last_published = ledger.progress.last_published;
        let admission = Admission::open(&config, &state_dir, last_published)?;
        let seen = SeenSet::open_at(&state_dir.join("seen"), last_published, config.seen())?;
        let pages_dir: SpoolDir = spool.pages(&app)?;
        let scan = Duration::from_millis(config.scan_interval_ms.max(10));
        let discovery = Discovery::new(&pages_dir, scan, spool.notify());
        let merged = discovery.waker();
        seen.wake_on_merge(move || merged.wake());
        let canon = config.canon();
        let (body_cap, sitemaps) = (config.max_body_bytes, config.sitemaps);
        let robots = config.robots_switches();
        let templates = config.trap_rules().needs_templates();
        let read_ahead = ReadAhead::spawn(
            config.readers(),
            || {
                BatchReader::new(canon.clone(), body_cap)
                    .with_sitemaps(sitemaps)
                    .with_templates(templates)
                    .with_robots(robots)
            },
            discovery.waker(),
        )?;
        let mut seeds = seeds;
        if let Some(path) = &config.seeds_file {
            seeds.extend(app_core::config::read_lines(path)?);
        }
        let intake = Intake::new(
            Consumer::new(pages_dir, id.clone())?,
            discovery,
            Consumer::new(spool.outcomes(&app)?, id.clone())?,
            read_ahead,
            Pace::new(Duration::from_millis(config.claim_interval_ms)),
            seeds,
        );
        let repo = Repository::open_with(&config.repository_dir, config.repository_options()?)?;
        let parts = Parts::open(&config, spool, &app, &id)?;
        let pool = match config.order {
            Order::BreadthFirst => None,
            Order::Importance => Some(Pool::open(
                &state_dir,
                last_published,
                config.importance_pool_max,
            )?),
        };
        let output = RequestOutput::new(
            Publisher::new(spool.requests(&app)?, id)?,
            app.clone(),
            config.priority()?,
            config.urls_per_request_file,
            config.conditional_requests,
            link.outbound.clone(),
            hook,
        );
        let wait = DiskWait::new(link.outbound.clone(), stop.clone());
        let confirm = Duration::from_millis(config.idle_check_ms);
        Ok(Self {
            completion: Completion::new(app, link, confirm, scan),
            seen,
            repo,
            parts,
            pool,
            intake,
            admission,
            output,
            ledger,
            wait,
            stop,
            config,
        })
    }

    /// Wakes the loop when it waits (for the control connection's hints).
    pub(crate) fn waker(&self) -> Waker {
        self.intake.waker()
    }

    /// Crawls until the crawl is done, the service stops, or the crash hook fires.
    pub(crate) fn run(mut self) -> Result<Summary, AppError> {
        self.start()?;
        self.busy()?;
        loop {
            if self.stop.is_cancelled() {
                self.checkpoint()?;
                return self.summary(End::Shutdown);
            }
            self.report_figures();
            match self.work()? {
                Turn::Crashed => return self.summary(End::Crashed),
                Turn::Worked => self.completion.worked(),
                Turn::Idle => {
                    if let Some(end) = self.idle()? {
                        return self.summary(end);
                    }
                }
            }
        }
    }

    /// One turn of work: claim and read page batches, outcome and exchange files,
    /// publish finished merges, send due exchange files, release parked URLs.
    fn work(&mut self) -> Result<Turn, AppError> {
        let mut worked = false;
        let claimed = {
            let manager = self.completion.manager();
            let manager = manager.as_ref().map(|(_, p)| p);
            self.intake
                .claim_pages(self.config.batches_per_claim, manager)?
        };
        if !claimed.is_empty() {
            self.busy()?;
        }
        self.intake.read(claimed)?;
        worked |= self.pages_read()?;
        let outcome_files = self.intake.claim_outcomes(16)?;
        if !outcome_files.is_empty() {
            self.busy()?;
            self.outcome_files(outcome_files)?;
            worked = true;
        }
        let exchange_files = match &self.parts {
            Some(p) => p.inbox.claim_batch(self.config.batches_per_claim)?,
            None => Vec::new(),
        };
        if !exchange_files.is_empty() {
            self.busy()?;
            for claimed in exchange_files {
                self.exchange_file(claimed)?;
            }
            worked = true;
        }
        while let Some(batch) = self.seen.try_recv_new()? {
            if !self.publish(batch)? {
                return Ok(Turn::Crashed);
            }
            worked = true;
        }
        // Foreign URLs whose outbox is full, old enough, or owned by a part
        // that waits (exchange mode; see `crate::exchange`).
        let priority = self.output.priority();
        if let Some(parts) = &mut self.parts
            && parts.send_due(priority, &mut self.ledger.progress.parts, false)?
        {
            worked = true;
        }
        // Importance order: the most-linked held URLs, as the system runs low.
        if self.release_ranked()? {
            worked = true;
        }
        // Two-level mode: the roots of newly assigned own sites are requested;
        // a pass releases parked URLs once their sites are known.
        if let Some(parts) = &mut self.parts {
            let roots = parts.poll_sites(&mut self.ledger.progress.parts)?;
            if !roots.is_empty() {
                self.request_roots(roots)?;
                worked = true;
            }
        }
        if self.parts.as_ref().is_some_and(Parts::pass_due) && self.release_parked()? {
            worked = true;
        }
        Ok(if worked { Turn::Worked } else { Turn::Idle })
    }

    /// Nothing was claimed or published this turn: wait for a batch being read,
    /// merge when the pace says so, wait for a running merge or held inputs, or,
    /// with nothing left anywhere, ask whether the crawl is done.
    fn idle(&mut self) -> Result<Option<End>, AppError> {
        // Merge what is buffered when the pace says so (unless a merge runs:
        // then the buffer keeps growing and goes next). A batch being read
        // brings links within milliseconds (and wakes us): they go into the same
        // merge unless the pace says the merge is due anyway.
        let now = Instant::now();
        let reading = self.intake.reading() > 0;
        let may_merge = {
            let manager = self.completion.manager();
            let manager = manager.as_ref().map(|(_, p)| p);
            let buffered = self.seen.buffered() as u64;
            self.intake
                .pace()
                .may_merge(now, manager, buffered, self.seen.len(), reading)
        };
        if may_merge && self.seen.merge_now()? {
            self.intake.pace().merged(now);
            return Ok(None);
        }
        if reading {
            self.nap(MERGE_POLL);
            return Ok(None);
        }
        if self.seen.is_merging() || self.seen.has_buffered() || self.intake.holding() {
            self.nap(MERGE_POLL);
            return Ok(None);
        }
        if !self.folders_empty()? {
            // Batches the pace left in the folder: wait for its turn (an event
            // may come sooner: outcomes, exchange files, a short queue).
            if let Some(wait) = self.intake.pace().wait(Instant::now()) {
                self.intake.wait(wait);
            }
            return Ok(None);
        }
        self.when_quiet()
    }

    /// Waits for an event, at most `max` and at most until the pace allows the
    /// next claim or, with keys buffered, the next merge.
    fn nap(&mut self, max: Duration) {
        let now = Instant::now();
        let pace = self.intake.pace();
        let mut wait = pace.wait(now).map_or(max, |until| until.min(max));
        if self.seen.has_buffered() && !self.seen.is_merging() {
            wait = wait.min(pace.merge_wait(now).max(MIN_NAP));
        }
        self.intake.wait(wait);
    }

    /// `pages/<app>/`, `outcomes/<app>/` and a split crawl's inbox hold no file.
    /// O(files listed).
    fn folders_empty(&self) -> Result<bool, AppError> {
        let inbox_empty = match &self.parts {
            Some(p) => p.inbox.dir().list()?.is_empty(),
            None => true,
        };
        Ok(self.intake.folders_empty()? && inbox_empty)
    }

    fn max_pages_reached(&self) -> bool {
        self.config.max_pages > 0 && self.ledger.progress.pages_stored >= self.config.max_pages
    }

    /// Scope, trap and redirect checks, then into the seen set with the depth and
    /// the redirect hops as payload; `from` (the linking page and its site) is
    /// what the sequence detector compares with, and the site counts toward the
    /// host's budget.
    fn offer(&mut self, url: &Url, reach: Reach, from: Option<&Linking>) -> Result<(), AppError> {
        self.offer_counted(url, reach, from, u64::from(from.is_some()))
    }

    /// [`Crawl::offer`], counting `links` links to the URL for the importance
    /// order (an exchanged URL brings its sender's count).
    fn offer_counted(
        &mut self,
        url: &Url,
        reach: Reach,
        from: Option<&Linking>,
        links: u64,
    ) -> Result<(), AppError> {
        let mut reach = reach;
        // Two-level mode without the coverage fix: a link to another site is a
        // link to that site's root.
        let reduced = match (&self.parts, from) {
            (Some(parts), Some(from)) => parts.reduce(url, &from.page),
            _ => None,
        };
        let url = reduced.as_ref().unwrap_or(url);
        // Two-level mode: depth counts from the site's entry (`site_max_depth`).
        if let (Some(parts), Some(from)) = (&self.parts, from) {
            reach.depth = parts.site_depth(url, &from.page, reach.depth);
        }
        let page = from.map(|f| &f.page);
        let Some(key) = self.admission.check(url, reach, page, &mut self.ledger)? else {
            return Ok(());
        };
        if let Some(from) = from
            && self.admission.linked(&key, &from.site)
        {
            // A new linking site: if another part owns the host, the vote goes there.
            if let Some(parts) = &mut self.parts {
                parts.vote(url, reach.depth, reach.hops, &from.page);
            }
        }
        let generation = self.seen.pending_generation();
        if let Some(pool) = &mut self.pool
            && links > 0
        {
            pool.link(key.as_bytes(), reach, generation, links);
        }
        self.seen.insert(key.as_bytes(), &reach.to_bytes())?;
        self.intake.inserted(generation);
        Ok(())
    }

    /// Publishes the new URLs of one merge; false when the crash hook fired.
    fn publish(&mut self, batch: NewBatch) -> Result<bool, AppError> {
        let generation = batch.generation();
        let stopping = self.max_pages_reached();
        let (released, requeued) = self.released_and_requeued(stopping);
        let mut entries: Vec<(&[u8], Reach)> =
            Vec::with_capacity(batch.len() + released.len() + requeued.len());
        entries.extend(released.iter().map(|h| {
            let reach = Reach {
                depth: h.depth,
                hops: h.hops,
            };
            (&*h.key, reach)
        }));
        entries.extend(requeued.iter().map(|k| (&**k, Reach::default())));
        let cut_before = self.admission.budget_cuts();
        let mut foreign: Vec<(u32, Foreign)> = Vec::new();
        let mut parked: Vec<Foreign> = Vec::new();
        for (key, payload) in batch.iter() {
            let reach = Reach::from_bytes(payload);
            if let Some(parts) = &self.parts {
                let Some(url) = url_of_key(key) else {
                    continue;
                };
                let foreign_url = || Foreign::new(url.to_string(), reach.depth, reach.hops);
                match parts.place(&url) {
                    Some(_) if parts.is_own_root(&url) => {} // requested at assignment
                    Some(owner) if owner == parts.own => {
                        // Held until the host's budget grows, within bounds (else cut).
                        if self.admission.admit(key, reach, generation)? {
                            entries.push((key, reach));
                        }
                    }
                    // Its owner crawls it; every other part holds it as seen.
                    Some(_) if parts.is_replicated(&url) => {
                        self.ledger.progress.parts.replicated += 1;
                    }
                    Some(owner) => {
                        let links = links_to_send(&mut self.pool, &self.config, key, generation);
                        foreign.push((owner, foreign_url().with_links(links)));
                    }
                    // Two-level mode, not (yet) this agent's site: parked
                    // until its site is assigned (see `crate::exchange`).
                    None => parked.push(foreign_url()),
                }
            } else if self.admission.admit(key, reach, generation)? {
                // Held until the host's budget grows, within bounds (else cut).
                entries.push((key, reach));
            }
        }
        self.ledger.progress.budget_cut += self.admission.budget_cuts() - cut_before;
        // Importance order: the new URLs join the pool; only those past its
        // bound go now.
        let overflow = self.pool_new_urls(&entries, generation, stopping, &mut foreign);
        if self.pool.is_some() {
            entries.clear();
        }
        entries.extend(overflow.iter().map(|t| (&*t.key, t.reach)));
        let entries = unshuffle(entries, self.config.unshuffle_k, |e| key_domain(e.0));
        let mut requested = 0;
        if !stopping {
            for chunk in entries.chunks(self.output.per_file()) {
                let urls: Vec<(Url, Reach)> = chunk
                    .iter()
                    .filter_map(|&(key, reach)| Some((url_of_key(key)?, reach)))
                    .collect();
                for (url, _) in &urls {
                    self.admission.requested(url)?;
                }
                let n = self.output.publish(&urls, &self.repo, &self.wait)?;
                if n == 0 {
                    continue;
                }
                requested += n;
                if self.output.merge_file_done() {
                    return Ok(false);
                }
            }
            if let Some(parts) = &mut self.parts {
                let priority = self.output.priority();
                // Two-level votes go where this generation's URLs go.
                parts.place_votes(&mut parked);
                parts.hand_on(foreign, priority, &mut self.ledger.progress.parts)?;
                parts.park(parked, &mut self.ledger.progress.parts)?;
            }
        }
        self.ledger.progress.urls_requested += requested;
        self.record(generation)?;
        let held = self.pool.as_ref().map_or(0, Pool::len);
        info!(
            generation,
            urls = requested,
            held,
            "app: published new URLs"
        );
        self.finish_inputs()?;
        Ok(true)
    }

    /// Held URLs whose host's budget grew (`deferred.rs`) and requeued ones: they
    /// go with this generation, unless `stopping`.
    fn released_and_requeued(
        &mut self,
        stopping: bool,
    ) -> (Vec<crate::deferred::Held>, Vec<Box<[u8]>>) {
        if stopping {
            return (Vec::new(), Vec::new());
        }
        let released = self.admission.release_held(&mut self.ledger);
        (released, self.admission.take_requeued())
    }

    /// Importance order: `generation`'s new URLs (`entries`) join the pool; the
    /// links counted to other parts' URLs sent already go to their owners as
    /// counts (exchange mode, `exchange_links`); returns the URLs past the pool's
    /// bound, to request now (none when `stopping`). Breadth-first: nothing.
    fn pool_new_urls(
        &mut self,
        entries: &[(&[u8], Reach)],
        generation: u64,
        stopping: bool,
        foreign: &mut Vec<(u32, Foreign)>,
    ) -> Vec<crate::importance::Taken> {
        let Some(pool) = &mut self.pool else {
            return Vec::new();
        };
        for &(key, reach) in entries {
            pool.add(key, reach, generation);
        }
        let dropped = pool.merged(generation);
        if let Some(parts) = &self.parts
            && parts.mode == PartMode::Exchange
            && self.config.exchange_links
        {
            for (key, links, reach) in dropped {
                let Some(url) = url_of_key(&key) else {
                    continue;
                };
                match parts.place(&url) {
                    Some(owner) if owner != parts.own && !parts.is_replicated(&url) => {
                        let f = Foreign::new(url.to_string(), reach.depth, reach.hops);
                        foreign.push((owner, f.with_links(links)));
                    }
                    _ => {}
                }
            }
        }
        if stopping {
            Vec::new()
        } else {
            pool.overflow()
        }
    }

    /// Records that `generation`'s new URLs are published: what it held or
    /// released is saved first, then the progress file; the budgets after (saved
    /// budgets never count a URL whose generation is not recorded).
    fn record(&mut self, generation: u64) -> Result<(), AppError> {
        let state_dir = self.ledger.dir().to_owned();
        self.admission.save_held(&state_dir, &self.wait)?;
        if let Some(pool) = &mut self.pool {
            self.wait.run(pool, Pool::save)?;
        }
        self.admission.sync_cuts()?;
        self.ledger.progress.last_published = generation;
        if self.intake.seeds_covered(generation) {
            self.ledger.progress.seeds_done = true;
        }
        self.ledger.save(&self.wait)?;
        self.admission.save_budgets_due(&state_dir, &self.wait)?;
        self.seen.release(generation)?;
        Ok(())
    }

    /// Importance order: when the crawling system holds at most half the window
    /// of our URLs (`importance_window`, at least twice what the manager reports
    /// in flight), requests the pool's most-linked URLs up to the window; the pool
    /// is saved after the request files are published (a crash in between
    /// requests a URL twice, never loses it). Returns whether any went.
    /// O(pool) per release (`importance.rs`), at most 2N/window releases for N
    /// URLs.
    fn release_ranked(&mut self) -> Result<bool, AppError> {
        if self.pool.as_ref().is_none_or(Pool::is_empty) || self.max_pages_reached() {
            return Ok(false);
        }
        let in_flight = self
            .completion
            .manager()
            .as_ref()
            .map_or(0, |(_, p)| p.in_flight);
        let window = self.config.importance_window.max(2 * in_flight);
        let outstanding = self.ledger.progress.unaccounted();
        // Top up once half the window is gone, not for every URL that ends:
        // at most 2N/window releases, each O(pool).
        if outstanding > window / 2 {
            return Ok(false);
        }
        let room = usize::try_from(window - outstanding).unwrap_or(usize::MAX);
        let Some(pool) = &mut self.pool else {
            return Ok(false);
        };
        let taken = pool.take(room);
        self.busy()?;
        let mut urls = Vec::with_capacity(taken.len());
        for t in &taken {
            if let Some(url) = url_of_key(&t.key) {
                self.admission.requested(&url)?;
                urls.push((url, t.reach));
            }
        }
        let n = self.output.publish_all(&urls, &self.repo, &self.wait)?;
        self.ledger.progress.urls_requested += n;
        if let Some(pool) = &mut self.pool {
            self.wait.run(pool, Pool::save)?;
        }
        self.ledger.save(&self.wait)?;
        Ok(true)
    }

    /// Merges and publishes everything buffered (shutdown, end of crawl).
    fn checkpoint(&mut self) -> Result<(), AppError> {
        self.seen.flush()?;
        let mut recorded = true;
        while let Some(batch) = self.seen.try_recv_new()? {
            recorded &= self.publish(batch)?;
        }
        if recorded {
            // Every admitted URL's generation is recorded.
            let state_dir = self.ledger.dir().to_owned();
            self.admission.save_budgets(&state_dir, &self.wait)?;
        }
        self.finish_inputs()?;
        self.ledger.save_stats(&self.wait)
    }

    /// Tells the manager the figures the admin page shows (host budgets, trap
    /// detectors, this part's exchange), at most every [`FIGURES_EVERY`].
    /// O(hosts) when it looks.
    fn report_figures(&mut self) {
        if self
            .completion
            .figures_at
            .is_some_and(|at| at.elapsed() < FIGURES_EVERY)
        {
            return;
        }
        self.completion.figures_at = Some(Instant::now());
        let budgets = self.admission.budgets();
        let progress = &self.ledger.progress;
        let top_cut = budgets
            .most_cut(MAX_TOP_HOSTS)
            .into_iter()
            .map(|h| BudgetCut {
                host: h.host,
                budget: h.budget,
                requested: h.requested,
                cut: h.cut,
                linking_sites: h.linking_sites,
            })
            .collect();
        let traps = Detector::ALL
            .into_iter()
            .map(|d| TrapCut {
                detector: d.name().to_owned(),
                cut: match d {
                    Detector::RedirectHops => progress.redirects_cut,
                    _ => progress.trap_cuts.get(d.name()).copied().unwrap_or(0),
                },
                examples: self.admission.traps().examples(d),
            })
            .collect();
        let cuts = self
            .admission
            .cut_totals()
            .into_iter()
            .take(MAX_CUT_RULES)
            .map(|(rule, c)| RuleCut {
                rule,
                urls: c.urls,
                hosts: c.hosts,
            })
            .collect();
        let figures = AppFigures {
            traps,
            cuts,
            scope: self.admission.scope_text(),
            hosts_cut: budgets.hosts_cut(),
            urls_cut: progress.budget_cut,
            top_cut,
            pages: progress.pages_stored,
            part: self.parts.as_ref().map(|p| PartFigures {
                part: p.own,
                parts: p.count,
                urls_out: progress.parts.sent_urls,
                urls_in: progress.parts.applied_urls,
                sites_assigned: progress.parts.sites,
                sites_reported: progress.parts.reported,
                parked: progress
                    .parts
                    .parked
                    .saturating_sub(progress.parts.released),
            }),
            seeds: None,
        };
        self.wait.set_figures(figures);
    }

    /// The summary of a crawl that ends with `end`; unless it crashed, the list
    /// of cut URLs is written first (`cuts.rs`).
    fn summary(&mut self, end: End) -> Result<Summary, AppError> {
        let (cut_file, cuts) = match end {
            End::Crashed => (None, Default::default()),
            _ => self.admission.finish_cuts(&self.seen)?,
        };
        if end != End::Crashed {
            self.write_reports(cut_file.as_deref())?;
        }
        let progress = &self.ledger.progress;
        Ok(Summary {
            app: self.config.app.clone(),
            end,
            urls_requested: progress.urls_requested,
            pages: PageCounts {
                stored: progress.pages_stored,
                revisits_identical: progress.stored.revisits_identical,
                revisits_not_modified: progress.stored.revisits_not_modified,
                payload_bytes: progress.stored.payload_bytes,
                robots_nofollow: progress.read.robots_nofollow,
                robots_withheld: progress.read.robots_withheld,
            },
            crawl_log: self.ledger.log.is_some(),
            outcomes: progress.outcomes.clone(),
            batches_quarantined: self.intake.quarantined(),
            seen_keys: self.seen.len(),
            cut: CutSummary {
                scope: self.admission.scope_text(),
                by_rule: cuts,
                file: cut_file,
                budget_cut: progress.budget_cut,
                redirects_cut: progress.redirects_cut,
                trap_cuts: progress.trap_cuts.clone(),
                most_cut: self.admission.budgets().most_cut(5),
            },
            given_up: self.intake.given_up().clone(),
            part: self.parts.as_ref().map(|p| crate::summary::PartLine {
                part: p.own,
                parts: p.count,
                mode: p.mode,
                counters: progress.parts.clone(),
            }),
        })
    }
}

impl Crawl {
    /// Writes the end-of-crawl reports from `crawl.log` (`app_core::reports`),
    /// when the log is on. O(log lines) time, O(hosts + seeds) memory.
    fn write_reports(&self, cut_file: Option<&std::path::Path>) -> Result<(), AppError> {
        let Some(log) = &self.ledger.log else {
            return Ok(());
        };
        let reports = app_core::reports::Reports::read(log.path(), cut_file, &self.ledger.seeds)?;
        let paths = reports.write(self.ledger.dir())?;
        let (pages, bytes) = reports.totals();
        info!(
            log = %log.path().display(),
            reports = %paths.first().and_then(|p| p.parent()).unwrap_or(self.ledger.dir()).display(),
            pages,
            bytes,
            hosts = reports.hosts.len(),
            "app: crawl.log and the end-of-crawl reports written"
        );
        Ok(())
    }
}

/// Importance order with `exchange_links`: the links counted to `key` (new in
/// `generation`, another part's) to send with it, taken out of the pool's counts;
/// else 0.
fn links_to_send(pool: &mut Option<Pool>, config: &AppConfig, key: &[u8], generation: u64) -> u64 {
    match pool {
        Some(pool) if config.exchange_links => pool.take_pending(key, generation),
        _ => 0,
    }
}

/// The URL of a seen-set key (`None` for a key that is not one: never written).
fn url_of_key(key: &[u8]) -> Option<Url> {
    std::str::from_utf8(key)
        .ok()
        .and_then(|k| url_from_key(k).ok())
}
