//! The crawl loop (one blocking thread, with reader threads that parse the page
//! batches it claims: `read_ahead.rs`): claim page batches, insert their links,
//! publish each merge's new URLs as request files, hand batches to storage once
//! their links are published, count outcomes, and decide when the crawl is done.
//! The crash-safety argument is in the [module docs](super).

use std::collections::BTreeMap;
use std::fs;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use spool::claim::{Claimed, Consumer};
use spool::discover::{Discovery, Waker};
use spool::formats::{ExchangeReader, Hints, OutcomeReader, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::protocol::{
    AppFigures, BudgetCut, MAX_TOP_HOSTS, Message, PartFigures, SpoolArea, TrapCut,
};
use spool::publish::Publisher;
use spool::{AppId, ComponentId, OutcomeReason, Spool, SpoolDir, Validators};
use storage::Repository;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
use url::Url;

use super::budget::{self, HostBudgets, site_of};
use super::config::AppConfig;
use super::config::PartMode;
use super::control::ProgressSeen;
use super::deferred::{Deferred, Held, MAX_HELD, SITES_HELD};
use super::error::AppError;
use super::exchange::{Foreign, Parts, quiet};
use super::pace::Pace;
use super::pages::BatchReader;
use super::pause::DiskWait;
use super::read_ahead::{ReadAhead, ReadBatch};
use super::scope::{OutOfScope, Scope};
use super::state::{self, Progress};
use super::summary::{End, Summary};
use super::traps::{Detector, Traps};
use super::unshuffle::{key_domain, key_host, unshuffle};
use crate::canon::key::{reversed_host_key, url_from_key};
use crate::canon::{self, CanonConfig};
use crate::seen::{MAX_KEY_LEN, NewBatch, SeenSet};

/// Test hook: stop dead (like `kill -9`: nothing more is written) after this many
/// request files have been published in this run.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CrashHook {
    /// Request files published before the simulated crash.
    pub after_request_files: Option<u64>,
}

/// The crawl loop's side of the manager connection (see [`super::control`]).
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

/// Longest pause between looks at the exchange folder when idle in a split crawl.
const EXCHANGE_POLL: Duration = Duration::from_millis(50);

/// What the parts' end-of-crawl rule says (see [`super::exchange`]).
enum PartsVerdict {
    /// The crawl is over for this part.
    Done,
    /// Cross-over URLs were requested: the frontier is not dry any more.
    Released,
    /// Not yet: look again after a while.
    Wait,
}

/// A page batch whose links are inserted, waiting for their generation's publication.
struct Awaiting {
    claimed: Claimed,
    /// What storage checked of it while its links were read (so it is read once).
    checked: storage::CheckedBatch,
    generation: u64,
}

pub(crate) struct Crawl {
    config: AppConfig,
    app: AppId,
    scope: Scope,
    canon: CanonConfig,
    priority: Priority,
    state_dir: PathBuf,
    seen: SeenSet,
    progress: Progress,
    pages: Consumer,
    pages_discovery: Discovery,
    outcomes: Consumer,
    requests: Publisher,
    repo: Repository,
    /// Reads claimed page batches on the reader threads.
    read_ahead: ReadAhead,
    /// When the loop may claim page batches and merge its seen set.
    pace: Pace,
    awaiting: Vec<Awaiting>,
    /// Split crawls: this part's exchange state.
    parts: Option<Parts>,
    /// Exchange files applied, waiting for their generation's publication
    /// (the file, its generation, its URLs).
    exchanged: Vec<(Claimed, u64, u64)>,
    /// Outcome files whose sitemaps are inserted, waiting for their generation's
    /// publication (the file, its generation, its outcome counts: added when it is
    /// deleted, so a crash while it waits does not count it twice).
    outcomes_held: Vec<(Claimed, u64, BTreeMap<String, u64>)>,
    budgets: HostBudgets,
    /// URLs over their host's budget, held until it grows.
    deferred: Deferred,
    traps: Traps,
    /// When the budgets were last saved (`None`: not this run).
    budgets_saved: Option<Instant>,
    seeds: Vec<String>,
    seeds_generation: Option<u64>,
    input_generation: Option<u64>,
    quarantined: u64,
    files_this_run: u64,
    hook: CrashHook,
    link: ManagerLink,
    /// Waits out a full disk (`pause.rs`), and tells the manager our figures.
    wait: DiskWait,
    /// When the figures were last looked at.
    figures_at: Option<Instant>,
    /// The last `SyncProgress` sent (its sequence number and when), if it was sent
    /// after the loop's last piece of work.
    sync_sent: Option<(u64, Instant)>,
    sync_seq: u64,
    /// Statistics in `progress` changed since it was last saved.
    stats_unsaved: bool,
    stop: CancellationToken,
}

impl Crawl {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open(
        config: AppConfig,
        spool: &Spool,
        id: ComponentId,
        seeds: Vec<String>,
        link: ManagerLink,
        stop: CancellationToken,
        hook: CrashHook,
    ) -> Result<Self, AppError> {
        let scope = config.scope()?;
        let app = config.app_id()?;
        let state_dir = config.state_dir.clone();
        fs::create_dir_all(&state_dir).map_err(|source| AppError::File {
            path: state_dir.clone(),
            source,
        })?;
        let progress = Progress::load(&state_dir)?.unwrap_or_default();
        let mut budgets = HostBudgets::new(config.budget_rule());
        let mut trusted = config.trusted_hosts.clone();
        if let Some(path) = &config.trusted_hosts_file {
            trusted.extend(read_lines(path)?);
        }
        budgets.trust(trusted.iter().map(String::as_str));
        if let Some(text) = state::load_budgets(&state_dir)? {
            budgets
                .read_from(&text)
                .map_err(|line| AppError::BadState {
                    path: state::budgets_path(&state_dir),
                    line,
                })?;
        }
        let per_site = usize::try_from(config.host_budget_per_linking_site).unwrap_or(usize::MAX);
        let mut deferred = Deferred::new(per_site.saturating_mul(SITES_HELD), MAX_HELD);
        deferred.load(&state_dir, progress.last_published, key_host)?;
        let seen = SeenSet::open_at(
            &state_dir.join("seen"),
            progress.last_published,
            config.seen(),
        )?;
        let pages_dir: SpoolDir = spool.pages(&app)?;
        let scan = Duration::from_millis(config.scan_interval_ms.max(10));
        let pages_discovery = Discovery::new(&pages_dir, scan, spool.notify());
        let merged = pages_discovery.waker();
        seen.wake_on_merge(move || merged.wake());
        let canon = config.canon();
        let body_cap = config.max_body_bytes;
        let sitemaps = config.sitemaps;
        let read_ahead = ReadAhead::spawn(
            config.readers(),
            || BatchReader::new(canon.clone(), body_cap).with_sitemaps(sitemaps),
            pages_discovery.waker(),
        )?;
        let repo = Repository::open_with(&config.repository_dir, config.repository_options()?)?;
        let parts = Parts::open(&config, spool, &app, &id)?;
        let mut seeds = seeds;
        if let Some(path) = &config.seeds_file {
            seeds.extend(read_lines(path)?);
        }
        Ok(Self {
            scope,
            canon: config.canon(),
            priority: config.priority()?,
            read_ahead,
            pace: Pace::new(Duration::from_millis(config.claim_interval_ms)),
            pages: Consumer::new(pages_dir, id.clone())?,
            pages_discovery,
            outcomes: Consumer::new(spool.outcomes(&app)?, id.clone())?,
            requests: Publisher::new(spool.requests(&app)?, id)?,
            state_dir,
            seen,
            progress,
            repo,
            awaiting: Vec::new(),
            parts,
            exchanged: Vec::new(),
            outcomes_held: Vec::new(),
            budgets,
            deferred,
            traps: Traps::new(&config, Traps::today()),
            budgets_saved: None,
            seeds,
            seeds_generation: None,
            input_generation: None,
            quarantined: 0,
            files_this_run: 0,
            hook,
            wait: DiskWait::new(link.outbound.clone(), stop.clone()),
            figures_at: None,
            link,
            sync_sent: None,
            sync_seq: 0,
            stats_unsaved: false,
            stop,
            app,
            config,
        })
    }

    /// Wakes the loop when it waits (for the control connection's hints).
    pub(crate) fn waker(&self) -> Waker {
        self.pages_discovery.waker()
    }

    pub(crate) fn run(mut self) -> Result<Summary, AppError> {
        // Seed hosts get the seed budget, also after a restart.
        let seeds: Vec<Url> = std::mem::take(&mut self.seeds)
            .into_iter()
            .filter_map(|seed| match canon::parse(&seed, None, &self.canon) {
                Ok(url) => Some(url),
                Err(e) => {
                    warn!(seed = %seed, error = %e, "app: seed rejected");
                    None
                }
            })
            .collect();
        for url in &seeds {
            self.budgets
                .seed(key_host(reversed_host_key(url).as_bytes()));
        }
        if !self.progress.seeds_done {
            self.input_generation = None;
            for url in &seeds {
                self.offer(url, 0, 0, None)?;
            }
            // The replicated URLs this part owns: other parts never send them.
            let own = self.parts.as_ref().map(Parts::own_replicated);
            for url in own.unwrap_or_default() {
                match canon::parse(&url, None, &self.canon) {
                    Ok(url) => self.offer(&url, 0, 0, None)?,
                    Err(e) => warn!(url = %url, error = %e, "app: replicated URL rejected"),
                }
            }
            self.seeds_generation = Some(self.input_done());
        }
        for claimed in self.pages.resume()? {
            self.read_ahead.submit(claimed)?;
        }
        while let Some(batch) = self.read_ahead.next()? {
            self.page_read(batch)?;
        }
        let resumed = self.outcomes.resume()?;
        self.outcome_files(resumed)?;
        let resumed = match &self.parts {
            Some(p) => p.inbox.resume()?,
            None => Vec::new(),
        };
        for claimed in resumed {
            self.exchange_file(claimed)?;
        }
        self.busy()?;
        // When the manager first answered "idle" (the send time of that sync).
        let mut first_idle: Option<Instant> = None;
        loop {
            if self.stop.is_cancelled() {
                self.checkpoint()?;
                return Ok(self.summary(End::Shutdown));
            }
            self.report_figures();
            let mut worked = false;
            // Claim only while the readers have little queued: one batch per
            // reader and one more, so each reads while the loop inserts; batches
            // that wait in the folder keep growing (the downloaders' Nagle rule),
            // and at most that many batches' links are held in memory.
            // And claim at the pace that keeps batches large while the manager has
            // URLs to spare (`pace.rs`).
            let room = (self.read_ahead.readers() + 1)
                .min(self.config.batches_per_claim)
                .saturating_sub(self.read_ahead.in_flight());
            let now = Instant::now();
            let may_claim = {
                let progress = self.link.progress.borrow();
                let ours = progress.as_ref().map(|(_, p)| p);
                self.pace.may_claim(now, ours)
            };
            if room > 0 && may_claim {
                let batches = self.pages.claim_batch(room)?;
                if !batches.is_empty() {
                    self.pace.claimed(now);
                    self.busy()?;
                }
                for claimed in batches {
                    self.read_ahead.submit(claimed)?;
                }
            }
            while let Some(batch) = self.read_ahead.try_next()? {
                self.page_read(batch)?;
                worked = true;
            }
            let outcome_files = self.outcomes.claim_batch(16)?;
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
                    return Ok(self.summary(End::Crashed));
                }
                worked = true;
            }
            // Foreign URLs whose outbox is full, old enough, or owned by a part
            // that waits (exchange mode; see `super::exchange`).
            if let Some(parts) = &mut self.parts
                && parts.send_due(self.priority, &mut self.progress.parts, false)?
            {
                worked = true;
            }
            // Two-level mode: new site assignments release parked URLs.
            if let Some(parts) = &mut self.parts
                && parts.poll_sites(&mut self.progress.parts)?
                && parts.parked() > 0
                && self.release_parked()?
            {
                worked = true;
            }
            if worked {
                first_idle = None;
                self.sync_sent = None;
                continue;
            }
            // A batch being read brings links within milliseconds (and wakes us):
            // they go into the same merge.
            if self.read_ahead.in_flight() > 0 {
                self.nap(MERGE_POLL);
                continue;
            }
            // Merge what is buffered when the pace says so (unless a merge runs:
            // then the buffer keeps growing and goes next).
            let now = Instant::now();
            let may_merge = {
                let progress = self.link.progress.borrow();
                let ours = progress.as_ref().map(|(_, p)| p);
                let buffered = self.seen.buffered() as u64;
                self.pace.may_merge(now, ours, buffered, self.seen.len())
            };
            if may_merge && self.seen.merge_now()? {
                self.pace.merged(now);
                continue;
            }
            if self.seen.is_merging()
                || self.seen.has_buffered()
                || !self.awaiting.is_empty()
                || !self.exchanged.is_empty()
                || !self.outcomes_held.is_empty()
            {
                self.nap(MERGE_POLL);
                continue;
            }
            if !self.folders_empty()? {
                // Batches the pace left in the folder: wait for its turn (an event
                // may come sooner: outcomes, exchange files, a short queue).
                if let Some(wait) = self.pace.wait(Instant::now()) {
                    self.pages_discovery.wait_timeout(wait);
                }
                continue;
            }
            self.save_stats()?;
            // Nothing to do here: ask the manager where our URLs are, once per quiet
            // spell; its answer counts every request file published before.
            let (seq, sent_at) = match self.sync_sent {
                Some(sent) => sent,
                None => self.sync(),
            };
            let answer = match &*self.link.progress.borrow() {
                Some((_, p)) if p.synced >= seq => Some(p.is_idle()),
                _ => None,
            };
            let mut scan = Duration::from_millis(self.config.scan_interval_ms.max(10));
            if self.parts.is_some() {
                // Exchange files raise no event here: poll for them.
                scan = scan.min(EXCHANGE_POLL);
            }
            match answer {
                Some(true) => {
                    // A batch or outcome file published just before the answer
                    // is in the folders now.
                    if !self.folders_empty()? {
                        continue;
                    }
                    let confirm = Duration::from_millis(self.config.idle_check_ms);
                    let since = *first_idle.get_or_insert(sent_at);
                    if sent_at >= since + confirm {
                        match self.parts_done(confirm)? {
                            PartsVerdict::Done => {}
                            PartsVerdict::Released => {
                                first_idle = None;
                                self.sync_sent = None;
                                continue;
                            }
                            PartsVerdict::Wait => {
                                self.pages_discovery.wait_timeout(scan);
                                continue;
                            }
                        }
                        self.checkpoint()?;
                        let end = if self.max_pages_reached() {
                            End::MaxPages
                        } else {
                            End::Complete
                        };
                        return Ok(self.summary(end));
                    }
                    let now = Instant::now();
                    if now >= since + confirm {
                        self.sync_sent = None; // ask again, for the confirmation
                    } else {
                        self.pages_discovery.wait_timeout(since + confirm - now);
                    }
                }
                Some(false) => {
                    first_idle = None;
                    self.pages_discovery.wait_timeout(scan);
                }
                None => {
                    self.pages_discovery.wait_timeout(scan);
                }
            }
        }
    }

    /// Waits for an event, at most `max` and at most until the pace allows the
    /// next claim or, with keys buffered, the next merge.
    fn nap(&self, max: Duration) {
        let now = Instant::now();
        let mut wait = self.pace.wait(now).map_or(max, |until| until.min(max));
        if self.seen.has_buffered() && !self.seen.is_merging() {
            wait = wait.min(self.pace.merge_wait(now).max(MIN_NAP));
        }
        self.pages_discovery.wait_timeout(wait);
    }

    /// In a split crawl, says "busy" in the status file before any work (rule 2
    /// of the termination argument in [`super::exchange`]).
    fn busy(&mut self) -> Result<(), AppError> {
        if let Some(parts) = &mut self.parts {
            parts.set_idle(false, &self.progress.parts, self.progress.pages_stored)?;
        }
        Ok(())
    }

    /// Called when the manager holds nothing of ours and our folders are empty:
    /// whether this part is done. Unsplit and firewall parts are; a cross-over part
    /// first requests its kept foreign URLs; an exchange part waits for the rule
    /// over every part's status.
    fn parts_done(&mut self, confirm: Duration) -> Result<PartsVerdict, AppError> {
        let stopping = self.max_pages_reached();
        let Some(parts) = &mut self.parts else {
            return Ok(PartsVerdict::Done);
        };
        match parts.mode {
            PartMode::Firewall => Ok(PartsVerdict::Done),
            PartMode::Crossover => {
                let kept = parts.kept()?;
                if kept.is_empty() || self.max_pages_reached() {
                    return Ok(PartsVerdict::Done);
                }
                let n = self.request_urls(&kept)?;
                if let Some(parts) = &self.parts {
                    parts.forget_kept()?;
                }
                self.progress.parts.crossed += n;
                self.progress.urls_requested += n;
                self.progress.save(&self.state_dir)?;
                self.stats_unsaved = false;
                info!(
                    urls = n,
                    "app: own frontier dry: requesting kept cross-over URLs"
                );
                Ok(PartsVerdict::Released)
            }
            PartMode::Exchange | PartMode::TwoLevel => {
                // Two-level: a part with parked URLs is not done (they go once
                // their sites are assigned; the loop polls for that).
                if parts.parked() > 0 && !stopping {
                    return Ok(PartsVerdict::Wait);
                }
                // Rule 3: whatever waits in the outboxes goes while still busy.
                parts.send_due(self.priority, &mut self.progress.parts, true)?;
                parts.set_idle(true, &self.progress.parts, self.progress.pages_stored)?;
                let first = parts.statuses();
                if !first.iter().all(|s| s.as_ref().is_some_and(|s| s.idle)) {
                    return Ok(PartsVerdict::Wait);
                }
                if parts.in_flight()? > 0 {
                    return Ok(PartsVerdict::Wait);
                }
                if !confirm.is_zero() {
                    std::thread::sleep(confirm);
                }
                let in_flight = parts.in_flight()?;
                let second = parts.statuses();
                if quiet(&first, in_flight, &second) {
                    Ok(PartsVerdict::Done)
                } else {
                    Ok(PartsVerdict::Wait)
                }
            }
        }
    }

    /// Two-level mode: requests the parked URLs whose site is now this part's,
    /// sends those of other parts' sites to them, and keeps the rest parked;
    /// returns whether any was released. The requests and the outbox lines are
    /// durable before the parked file is rewritten: a crash in between
    /// releases them again (a URL requested twice, never one lost).
    fn release_parked(&mut self) -> Result<bool, AppError> {
        let Some(parts) = &self.parts else {
            return Ok(false);
        };
        let (own, other, rest) = parts.parked_ready()?;
        let released = (own.len() + other.len()) as u64;
        if released == 0 {
            return Ok(false);
        }
        self.busy()?;
        let n = if self.max_pages_reached() {
            0
        } else {
            self.request_urls(&own)?
        };
        self.progress.urls_requested += n;
        let priority = self.priority;
        if let Some(parts) = &mut self.parts {
            parts.hand_on(other, priority, &mut self.progress.parts)?;
            parts.keep_parked(&rest, released, &mut self.progress.parts)?;
        }
        self.progress.save(&self.state_dir)?;
        self.stats_unsaved = false;
        Ok(true)
    }

    /// With `conditional_requests`, the validators of `url`'s newest capture (see
    /// [`validators_of`]); else none.
    fn validators(&self, url: &str) -> Validators {
        if self.config.conditional_requests {
            validators_of(&self.repo, url)
        } else {
            Validators::default()
        }
    }

    /// Publishes `urls` (URL, depth) as request files; returns the URLs written.
    fn request_urls(&mut self, urls: &[(String, u32)]) -> Result<u64, AppError> {
        let mut requested = 0;
        for chunk in urls.chunks(self.config.urls_per_request_file) {
            let header = RequestHeader {
                priority: self.priority,
            };
            let mut w = RequestWriter::new(Vec::new(), header).map_err(format_error)?;
            for (url, depth) in chunk {
                let hints = Hints {
                    depth: Some(*depth),
                    validators: self.validators(url),
                    ..Hints::default()
                };
                w.write(url, &hints).map_err(format_error)?;
            }
            let data = w.finish().map_err(format_error)?;
            let priority = self.priority;
            let path = self.wait.run(&mut self.requests, |requests| {
                Ok(requests.publish(priority, FileKind::Requests, &data)?)
            })?;
            if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                let _ = self.link.outbound.send(Message::Published {
                    area: SpoolArea::Requests(self.app.clone()),
                    name: name.to_owned(),
                });
            }
            requested += chunk.len() as u64;
        }
        Ok(requested)
    }

    /// Offers the URLs of one exchange file like links found here (depth from the
    /// hint); the file is deleted once their generation is published. A file that
    /// does not parse or is meant for another part or split is quarantined.
    fn exchange_file(&mut self, claimed: Claimed) -> Result<(), AppError> {
        let Some(parts) = &self.parts else {
            return Ok(());
        };
        let (own, count) = (parts.own, parts.count);
        let bytes = claimed.read()?;
        let mut urls = Vec::new();
        let parsed = ExchangeReader::new(&bytes[..]).and_then(|r| {
            let h = r.header();
            if h.to != own || h.parts != count {
                return Ok(Err(format!(
                    "exchange file for part {} of {}, this is part {own} of {count}",
                    h.to, h.parts
                )));
            }
            for req in r {
                urls.push(req?);
            }
            Ok(Ok(()))
        });
        let refused = match parsed {
            Ok(Ok(())) => None,
            Ok(Err(why)) => Some(why),
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = refused {
            warn!(file = %claimed.name(), error = %why, "app: exchange file quarantined");
            claimed.quarantine(&why)?;
            self.quarantined += 1;
            return Ok(());
        }
        self.input_generation = None;
        let n = urls.len() as u64;
        for req in urls {
            match canon::parse(&req.url, None, &self.canon) {
                Ok(url) => {
                    if self.parts.as_ref().is_some_and(|p| p.is_replicated(&url)) {
                        self.progress.parts.replicated_in += 1;
                    }
                    let depth = req.hints.depth.unwrap_or(0);
                    let hops = req.hints.hops.unwrap_or(0);
                    // A vote: the linking page's site counts toward the budget.
                    let from = req.hints.via.as_deref().and_then(|v| Url::parse(v).ok());
                    let from = from.map(with_site);
                    let from = from.as_ref().map(|(page, site)| (page, site.as_slice()));
                    self.offer(&url, depth, hops, from)?;
                }
                Err(e) => warn!(url = %req.url, error = %e, "app: exchanged URL rejected"),
            }
        }
        let generation = self.input_done();
        self.exchanged.push((claimed, generation, n));
        Ok(())
    }

    /// Saves the progress file if only statistics changed since the last save.
    fn save_stats(&mut self) -> Result<(), AppError> {
        if self.stats_unsaved {
            let state_dir = &self.state_dir;
            self.wait
                .run(&mut self.progress, |progress| progress.save(state_dir))?;
            self.stats_unsaved = false;
        }
        Ok(())
    }

    /// `pages/<app>/` and `outcomes/<app>/` hold no file. O(files listed).
    fn folders_empty(&self) -> Result<bool, AppError> {
        let inbox_empty = match &self.parts {
            Some(p) => p.inbox.dir().list()?.is_empty(),
            None => true,
        };
        Ok(self.pages.dir().list()?.is_empty()
            && self.outcomes.dir().list()?.is_empty()
            && inbox_empty)
    }

    /// Sends a `SyncProgress`; returns its sequence number and when it was sent.
    fn sync(&mut self) -> (u64, Instant) {
        self.sync_seq += 1;
        let sent = (self.sync_seq, Instant::now());
        let msg = Message::SyncProgress {
            app: self.app.clone(),
            seq: self.sync_seq,
        };
        // The receiver lives as long as the service; a closed channel means it is
        // ending, and the loop's stop token says so next.
        let _ = self.link.outbound.send(msg);
        self.sync_sent = Some(sent);
        sent
    }

    fn max_pages_reached(&self) -> bool {
        self.config.max_pages > 0 && self.progress.pages_stored >= self.config.max_pages
    }

    /// Scope, trap and redirect checks, then into the seen set with the depth and
    /// the redirect hops as payload; `from` (the linking page and its site) is
    /// what the sequence detector compares with, and the site counts toward the
    /// host's budget.
    fn offer(
        &mut self,
        url: &Url,
        depth: u32,
        hops: u32,
        from: Option<(&Url, &[u8])>,
    ) -> Result<(), AppError> {
        // Two-level mode without the coverage fix: a link to another site is a
        // link to that site's root.
        let reduced = match (&self.parts, from) {
            (Some(parts), Some((page, _))) => parts.reduce(url, page),
            _ => None,
        };
        let url = reduced.as_ref().unwrap_or(url);
        // Two-level mode: depth counts from the site's entry (`site_max_depth`).
        let depth = match (&self.parts, from) {
            (Some(parts), Some((page, _))) => parts.site_depth(url, page, depth),
            _ => depth,
        };
        if hops > self.config.max_redirect_hops {
            self.progress.redirects_cut += 1;
            self.traps.cut(Detector::RedirectHops, url.as_str());
            self.stats_unsaved = true;
            return Ok(());
        }
        let checked = match self.scope.check(url, depth) {
            Ok(()) => self.traps.check(url, from.map(|(page, _)| page)),
            Err(OutOfScope::RepeatedSegment) => Err(Detector::RepeatedSegment),
            Err(OutOfScope::Calendar) => Err(Detector::CalendarDepth),
            Err(_) => return Ok(()),
        };
        if let Err(detector) = checked {
            *self
                .progress
                .trap_cuts
                .entry(detector.name().to_owned())
                .or_default() += 1;
            self.traps.cut(detector, url.as_str());
            self.stats_unsaved = true;
            return Ok(());
        }
        let key = reversed_host_key(url);
        if key.len() > MAX_KEY_LEN {
            return Ok(());
        }
        if let Some((page, site)) = from
            && self.budgets.linked(key_host(key.as_bytes()), site)
        {
            // A new linking site: the host's held URLs may go, and if another part
            // owns the host, the vote goes there.
            self.deferred.grew(key_host(key.as_bytes()));
            if let Some(parts) = &mut self.parts {
                parts.vote(url, depth, hops, page);
            }
        }
        let generation = self.seen.pending_generation();
        let mut payload = [0u8; 8];
        payload[..4].copy_from_slice(&depth.to_le_bytes());
        payload[4..].copy_from_slice(&hops.to_le_bytes());
        self.seen.insert(key.as_bytes(), &payload)?;
        self.input_generation = Some(self.input_generation.unwrap_or(0).max(generation));
        Ok(())
    }

    /// The generation that covers the input just inserted (and resets the tracker).
    fn input_done(&mut self) -> u64 {
        self.input_generation
            .take()
            .unwrap_or_else(|| self.seen.pending_generation().saturating_sub(1))
    }

    /// Inserts the links of a batch the reader thread has read.
    fn page_read(&mut self, batch: ReadBatch) -> Result<(), AppError> {
        let ReadBatch { claimed, read } = batch;
        let (pages, checked) = match read {
            Ok(read) => read,
            Err(e) if e.is_batch_fault() => {
                warn!(batch = %claimed.name(), error = %e, "app: page batch quarantined");
                claimed.quarantine(&e.to_string())?;
                self.quarantined += 1;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        self.input_generation = None;
        for page in pages {
            // Records written before depths travelled with the URL count as seeds.
            let depth = page.depth.unwrap_or(0).saturating_add(1);
            let from = Url::parse(&page.url).ok().map(with_site);
            let from = from.as_ref().map(|(u, site)| (u, site.as_slice()));
            if let Some(to) = &page.redirect {
                self.offer(to, depth, page.hops.saturating_add(1), from)?;
            }
            for link in &page.links {
                self.offer(link, depth, 0, from)?;
            }
        }
        let generation = self.input_done();
        self.awaiting.push(Awaiting {
            claimed,
            checked,
            generation,
        });
        self.finish_inputs()
    }

    /// Counts the outcomes of `files`, saves the counts once, then deletes the
    /// files (a crash in between counts them again: counts are statistics).
    fn outcome_files(&mut self, files: Vec<Claimed>) -> Result<(), AppError> {
        if files.is_empty() {
            return Ok(());
        }
        let mut counted = Vec::with_capacity(files.len());
        for claimed in files {
            counted.extend(self.outcome_file(claimed)?);
        }
        self.progress.save(&self.state_dir)?;
        self.stats_unsaved = false;
        for claimed in counted {
            claimed.done()?;
        }
        Ok(())
    }

    /// Counts one outcome file; gives it back unless it was quarantined, or holds
    /// sitemaps to request (then it waits in `outcomes_held` for their generation's
    /// publication, like a page batch for its links').
    fn outcome_file(&mut self, claimed: Claimed) -> Result<Option<Claimed>, AppError> {
        let file = claimed.open()?;
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        let mut sitemaps: Vec<(String, u32)> = Vec::new();
        let parsed = OutcomeReader::new(BufReader::new(file)).and_then(|reader| {
            for outcome in reader {
                let outcome = outcome?;
                if outcome.reason == OutcomeReason::Sitemap {
                    // Not an outcome: a sitemap a robots.txt names.
                    let depth = spool::outcome::sitemap_depth(&outcome.detail).unwrap_or(1);
                    sitemaps.push((outcome.url, depth));
                    continue;
                }
                *counts
                    .entry(outcome.reason.as_str().to_owned())
                    .or_default() += 1;
            }
            Ok(())
        });
        if let Err(e) = parsed {
            warn!(file = %claimed.name(), error = %e, "app: outcome file quarantined");
            claimed.quarantine(&e.to_string())?;
            return Ok(None);
        }
        if !self.config.sitemaps || sitemaps.is_empty() {
            for (reason, n) in counts {
                *self.progress.outcomes.entry(reason).or_default() += n;
            }
            return Ok(Some(claimed));
        }
        self.input_generation = None;
        for (sitemap, depth) in sitemaps {
            match canon::parse(&sitemap, None, &self.canon) {
                Ok(url) => self.offer(&url, depth, 0, None)?,
                Err(e) => warn!(url = %sitemap, error = %e, "app: sitemap URL rejected"),
            }
        }
        let generation = self.input_done();
        self.outcomes_held.push((claimed, generation, counts));
        Ok(None)
    }

    /// Publishes the new URLs of one merge; false when the crash hook fired.
    fn publish(&mut self, batch: NewBatch) -> Result<bool, AppError> {
        let generation = batch.generation();
        let stopping = self.max_pages_reached();
        // Held URLs whose host's budget grew go with this generation (`deferred.rs`).
        let released = if stopping {
            Vec::new()
        } else {
            let budgets = &mut self.budgets;
            self.deferred.release(|host| budgets.release(host))
        };
        self.progress.budget_cut = self
            .progress
            .budget_cut
            .saturating_sub(released.len() as u64);
        let mut entries: Vec<(&[u8], u32, u32)> = Vec::with_capacity(batch.len() + released.len());
        entries.extend(released.iter().map(|h| (&*h.key, h.depth, h.hops)));
        let cut_before = self.budgets.cut();
        let mut foreign: Vec<(u32, Foreign)> = Vec::new();
        let mut parked: Vec<Foreign> = Vec::new();
        for (key, payload) in batch.iter() {
            let word = |at: usize| {
                payload
                    .get(at..at + 4)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u32::from_le_bytes)
            };
            if let Some(parts) = &self.parts {
                let Some(url) = std::str::from_utf8(key)
                    .ok()
                    .and_then(|k| url_from_key(k).ok())
                else {
                    continue;
                };
                match parts.place(&url) {
                    Some(owner) if owner == parts.own => {}
                    Some(_) if parts.is_replicated(&url) => {
                        // Its owner crawls it; every other part holds it as seen.
                        self.progress.parts.replicated += 1;
                        continue;
                    }
                    Some(owner) => {
                        foreign.push((owner, Foreign::new(url.to_string(), word(0), word(4))));
                        continue;
                    }
                    None => {
                        // Two-level mode: its site is not assigned yet.
                        parked.push(Foreign::new(url.to_string(), word(0), word(4)));
                        continue;
                    }
                }
            }
            let host = key_host(key);
            let (admitted, first_cut) = self.budgets.admit(host);
            if let Some(budget) = first_cut {
                info!(
                    host = %String::from_utf8_lossy(host),
                    budget,
                    linking_sites = self.budgets.linking_sites(host),
                    "app: host budget used up; its further URLs are cut"
                );
            }
            if !admitted {
                // Held until the host's budget grows, within bounds (else cut).
                let held = Held {
                    key: key.into(),
                    depth: word(0),
                    hops: word(4),
                    generation,
                };
                self.deferred.hold(host, held);
                continue;
            }
            entries.push((key, word(0), word(4)));
        }
        self.progress.budget_cut += self.budgets.cut() - cut_before;
        let entries = unshuffle(entries, self.config.unshuffle_k, |e| key_domain(e.0));
        let mut requested = 0;
        if !stopping {
            for chunk in entries.chunks(self.config.urls_per_request_file) {
                let header = RequestHeader {
                    priority: self.priority,
                };
                let mut w = RequestWriter::new(Vec::new(), header).map_err(format_error)?;
                let mut n = 0;
                for &(key, depth, hops) in chunk {
                    let Some(url) = std::str::from_utf8(key)
                        .ok()
                        .and_then(|k| url_from_key(k).ok())
                    else {
                        continue;
                    };
                    let hints = Hints {
                        depth: Some(depth),
                        hops: (hops > 0).then_some(hops),
                        validators: self.validators(url.as_str()),
                        ..Hints::default()
                    };
                    if w.write(url.as_str(), &hints).is_ok() {
                        n += 1;
                    }
                }
                let data = w.finish().map_err(format_error)?;
                if n == 0 {
                    continue;
                }
                let priority = self.priority;
                let path = self.wait.run(&mut self.requests, |requests| {
                    Ok(requests.publish(priority, FileKind::Requests, &data)?)
                })?;
                if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                    let _ = self.link.outbound.send(Message::Published {
                        area: SpoolArea::Requests(self.app.clone()),
                        name: name.to_owned(),
                    });
                }
                requested += n;
                self.files_this_run += 1;
                if self
                    .hook
                    .after_request_files
                    .is_some_and(|max| self.files_this_run >= max)
                {
                    return Ok(false);
                }
            }
        }
        if let Some(parts) = &mut self.parts {
            if !stopping {
                parts.hand_on(foreign, self.priority, &mut self.progress.parts)?;
                parts.park(parked, &mut self.progress.parts)?;
            }
        }
        self.progress.urls_requested += requested;
        // Before the generation is recorded: what it held or released is saved.
        let state_dir = &self.state_dir;
        self.wait.run(&mut self.deferred, |deferred| {
            deferred.save_if_changed(state_dir)
        })?;
        self.progress.last_published = generation;
        if self.seeds_generation.is_some_and(|g| g <= generation) {
            self.progress.seeds_done = true;
        }
        let state_dir = &self.state_dir;
        self.wait
            .run(&mut self.progress, |progress| progress.save(state_dir))?;
        self.stats_unsaved = false;
        // Only now: saved budgets never count a URL whose generation is not recorded.
        if self
            .budgets_saved
            .is_none_or(|at| at.elapsed() >= budget::SAVE_INTERVAL)
        {
            self.save_budgets()?;
        }
        self.seen.release(generation)?;
        info!(generation, urls = requested, "app: published new URLs");
        self.finish_inputs()?;
        Ok(true)
    }

    /// Stores every page batch whose links are all published.
    fn finish_inputs(&mut self) -> Result<(), AppError> {
        let published = self.progress.last_published;
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.awaiting)
            .into_iter()
            .partition(|a| a.generation <= published);
        self.awaiting = waiting;
        let (applied, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.exchanged)
            .into_iter()
            .partition(|(_, g, _)| *g <= published);
        self.exchanged = waiting;
        for (claimed, _, urls) in applied {
            claimed.done()?;
            self.progress.parts.applied_files += 1;
            self.progress.parts.applied_urls += urls;
            self.stats_unsaved = true;
        }
        let (applied, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.outcomes_held)
            .into_iter()
            .partition(|(_, g, _)| *g <= published);
        self.outcomes_held = waiting;
        if !applied.is_empty() {
            // Counted, saved, then deleted, as in `outcome_files`.
            for (_, _, counts) in &applied {
                for (reason, n) in counts {
                    *self.progress.outcomes.entry(reason.clone()).or_default() += n;
                }
            }
            let state_dir = &self.state_dir;
            self.wait
                .run(&mut self.progress, |progress| progress.save(state_dir))?;
            self.stats_unsaved = false;
            for (claimed, _, _) in applied {
                claimed.done()?;
            }
        }
        if ready.is_empty() {
            return Ok(());
        }
        for Awaiting {
            claimed, checked, ..
        } in ready
        {
            let ingested = match self.repo.ingest_checked(checked) {
                // Storage left the batch where it was (a half-written append is
                // cut by the retry): store it again, reading it again, once there
                // is room.
                Err(e) if e.is_disk_full() => {
                    let path = claimed.path().to_owned();
                    self.wait
                        .run(&mut self.repo, |repo| Ok(repo.ingest(&path)?))
                }
                other => other.map_err(AppError::from),
            };
            match ingested {
                Ok(summary) => {
                    self.progress.pages_stored +=
                        summary.responses + summary.revisits + summary.not_modified;
                    self.progress.revisits_identical += summary.revisits;
                    self.progress.revisits_not_modified += summary.not_modified;
                }
                Err(AppError::Storage(e)) if e.is_batch_fault() => {
                    warn!(batch = %claimed.name(), error = %e, "app: batch refused by storage, quarantined");
                    claimed.quarantine(&e.to_string())?;
                    self.quarantined += 1;
                }
                Err(e) => return Err(e),
            }
        }
        // The page count is a statistic: saved with the next save, not now (each
        // save is two fsyncs).
        self.stats_unsaved = true;
        Ok(())
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
            self.save_budgets()?;
        }
        self.finish_inputs()?;
        self.save_stats()
    }

    /// Tells the manager the figures the admin page shows (host budgets, trap
    /// detectors, this part's exchange), at most every [`FIGURES_EVERY`].
    /// O(hosts) when it looks.
    fn report_figures(&mut self) {
        if self
            .figures_at
            .is_some_and(|at| at.elapsed() < FIGURES_EVERY)
        {
            return;
        }
        self.figures_at = Some(Instant::now());
        let top_cut = self
            .budgets
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
                    Detector::RedirectHops => self.progress.redirects_cut,
                    _ => self.progress.trap_cuts.get(d.name()).copied().unwrap_or(0),
                },
                examples: self.traps.examples(d),
            })
            .collect();
        let figures = AppFigures {
            traps,
            hosts_cut: self.budgets.hosts_cut(),
            urls_cut: self.progress.budget_cut,
            top_cut,
            pages: self.progress.pages_stored,
            part: self.parts.as_ref().map(|p| PartFigures {
                part: p.own,
                parts: p.count,
                urls_out: self.progress.parts.sent_urls,
                urls_in: self.progress.parts.applied_urls,
                sites_assigned: self.progress.parts.sites,
                sites_reported: self.progress.parts.reported,
                parked: self
                    .progress
                    .parts
                    .parked
                    .saturating_sub(self.progress.parts.released),
            }),
            seeds: None,
        };
        self.wait.set_figures(figures);
    }

    /// Saves the host budgets (see `budget.rs`: only when every URL they count has
    /// its generation recorded).
    fn save_budgets(&mut self) -> Result<(), AppError> {
        let mut text = String::new();
        self.budgets.write_to(&mut text);
        let state_dir = &self.state_dir;
        self.wait
            .run(&mut (), |()| state::save_budgets(state_dir, &text))?;
        self.budgets_saved = Some(Instant::now());
        Ok(())
    }

    fn summary(&self, end: End) -> Summary {
        Summary {
            app: self.app.as_str().to_owned(),
            end,
            urls_requested: self.progress.urls_requested,
            pages_stored: self.progress.pages_stored,
            revisits_identical: self.progress.revisits_identical,
            revisits_not_modified: self.progress.revisits_not_modified,
            outcomes: self.progress.outcomes.clone(),
            batches_quarantined: self.quarantined,
            seen_keys: self.seen.len(),
            budget_cut: self.progress.budget_cut,
            redirects_cut: self.progress.redirects_cut,
            trap_cuts: self.progress.trap_cuts.clone(),
            most_cut: self.budgets.most_cut(5),
            part: self.parts.as_ref().map(|p| super::summary::PartLine {
                part: p.own,
                parts: p.count,
                mode: p.mode,
                counters: self.progress.parts.clone(),
            }),
        }
    }
}

/// The validators of `url`'s newest capture in `repo` if it is a 200 of exactly
/// that URL (a server-not-modified revisit counts as its original); none else, or
/// when the lookup fails (logged: the request is then unconditional, never lost).
fn validators_of(repo: &Repository, url: &str) -> Validators {
    let page = match repo.get(url) {
        Ok(Some(page)) => page,
        Ok(None) => return Validators::default(),
        Err(error) => {
            warn!(%url, %error, "app: no validators from the repository");
            return Validators::default();
        }
    };
    if page.url != url {
        return Validators::default();
    }
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut head = httparse::Response::new(&mut fields);
    if !matches!(head.parse(&page.head), Ok(httparse::Status::Complete(_)))
        || head.code != Some(200)
    {
        return Validators::default();
    }
    let value = |name: &str| {
        head.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
    };
    Validators::from_headers(value("etag"), value("last-modified"))
}

/// The lines of a list file (seeds, trusted hosts): trimmed, without blank lines
/// and `#` comments.
/// A linking page with its site (see `budget.rs`), as [`Crawl::offer`] takes it.
fn with_site(page: Url) -> (Url, Vec<u8>) {
    let site = site_of(key_host(reversed_host_key(&page).as_bytes())).to_vec();
    (page, site)
}

/// The lines of a seeds file: trimmed, without blank lines and `#` comments.
pub(crate) fn read_lines(path: &std::path::Path) -> Result<Vec<String>, AppError> {
    let text = fs::read_to_string(path).map_err(|source| AppError::File {
        path: path.to_owned(),
        source,
    })?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

/// A request-file format error as the application's error.
pub(crate) fn format_error(e: spool::formats::FormatError) -> AppError {
    AppError::File {
        path: PathBuf::from("<request file>"),
        source: std::io::Error::other(e.to_string()),
    }
}
