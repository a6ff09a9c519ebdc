//! The crawl loop (one blocking thread): claim page batches, insert their links,
//! publish each merge's new URLs as request files, hand batches to storage once
//! their links are published, count outcomes, and decide when the crawl is done.
//! The crash-safety argument is in the [module docs](super).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use spool::claim::{Claimed, Consumer};
use spool::discover::Discovery;
use spool::formats::{Hints, OutcomeReader, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::publish::Publisher;
use spool::{ComponentId, Spool, SpoolDir};
use storage::Repository;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
use url::Url;

use super::config::AppConfig;
use super::control::ProgressSeen;
use super::error::AppError;
use super::pages::BatchReader;
use super::scope::Scope;
use super::state::Progress;
use super::summary::{End, Summary};
use super::unshuffle::{key_host, unshuffle};
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

/// A page batch whose links are inserted, waiting for their generation's publication.
struct Awaiting {
    claimed: Claimed,
    generation: u64,
}

pub(crate) struct Crawl {
    config: AppConfig,
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
    reader: BatchReader,
    awaiting: Vec<Awaiting>,
    depths: HashMap<String, u32>,
    per_host: HashMap<Vec<u8>, u64>,
    seeds: Vec<String>,
    seeds_generation: Option<u64>,
    input_generation: Option<u64>,
    dirty: bool,
    quarantined: u64,
    files_this_run: u64,
    hook: CrashHook,
    progress_rx: watch::Receiver<ProgressSeen>,
    stop: CancellationToken,
    last_activity: Instant,
}

impl Crawl {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open(
        config: AppConfig,
        spool: &Spool,
        id: ComponentId,
        seeds: Vec<String>,
        progress_rx: watch::Receiver<ProgressSeen>,
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
        let seen = SeenSet::open_at(
            &state_dir.join("seen"),
            progress.last_published,
            config.seen(),
        )?;
        let pages_dir: SpoolDir = spool.pages(&app)?;
        let scan = Duration::from_millis(config.scan_interval_ms.max(10));
        let pages_discovery = Discovery::new(&pages_dir, scan, true);
        let repo = Repository::open(&config.repository_dir)?;
        let mut seeds = seeds;
        if let Some(path) = &config.seeds_file {
            let text = fs::read_to_string(path).map_err(|source| AppError::File {
                path: path.clone(),
                source,
            })?;
            seeds.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_owned),
            );
        }
        Ok(Self {
            scope,
            canon: config.canon(),
            priority: config.priority()?,
            reader: BatchReader::new(config.canon(), config.max_body_bytes),
            pages: Consumer::new(pages_dir, id.clone())?,
            pages_discovery,
            outcomes: Consumer::new(spool.outcomes(&app)?, id.clone())?,
            requests: Publisher::new(spool.requests(&app)?, id)?,
            state_dir,
            seen,
            progress,
            repo,
            awaiting: Vec::new(),
            depths: HashMap::new(),
            per_host: HashMap::new(),
            seeds,
            seeds_generation: None,
            input_generation: None,
            dirty: false,
            quarantined: 0,
            files_this_run: 0,
            hook,
            progress_rx,
            stop,
            last_activity: Instant::now(),
            config,
        })
    }

    pub(crate) fn run(mut self) -> Result<Summary, AppError> {
        if !self.progress.seeds_done {
            self.input_generation = None;
            for seed in std::mem::take(&mut self.seeds) {
                match canon::parse(&seed, None, &self.canon) {
                    Ok(url) => self.offer(&url, 0)?,
                    Err(e) => warn!(seed = %seed, error = %e, "app: seed rejected"),
                }
            }
            self.seeds_generation = Some(self.input_done());
        }
        for claimed in self.pages.resume()? {
            self.page_batch(claimed)?;
        }
        for claimed in self.outcomes.resume()? {
            self.outcome_file(claimed)?;
        }
        let mut first_idle: Option<Instant> = None;
        loop {
            if self.stop.is_cancelled() {
                self.checkpoint()?;
                return Ok(self.summary(End::Shutdown));
            }
            let mut worked = false;
            for claimed in self.pages.claim_batch(self.config.batches_per_claim)? {
                self.page_batch(claimed)?;
                worked = true;
            }
            for claimed in self.outcomes.claim_batch(16)? {
                self.outcome_file(claimed)?;
                worked = true;
            }
            while let Some(batch) = self.seen.try_recv_new()? {
                if !self.publish(batch)? {
                    return Ok(self.summary(End::Crashed));
                }
                worked = true;
            }
            if worked {
                self.last_activity = Instant::now();
                first_idle = None;
                continue;
            }
            if self.dirty {
                self.seen.flush()?;
                self.dirty = false;
                continue;
            }
            if self.is_idle()? {
                let now = Instant::now();
                match first_idle {
                    None => first_idle = Some(now),
                    Some(t) if now >= t + Duration::from_millis(self.config.idle_check_ms) => {
                        self.checkpoint()?;
                        let end = if self.max_pages_reached() {
                            End::MaxPages
                        } else {
                            End::Complete
                        };
                        return Ok(self.summary(end));
                    }
                    Some(_) => {}
                }
                std::thread::sleep(Duration::from_millis(
                    self.config.idle_check_ms.clamp(1, 100),
                ));
            } else {
                first_idle = None;
                self.pages_discovery
                    .wait_timeout(Duration::from_millis(self.config.idle_check_ms.max(1)));
            }
        }
    }

    /// Nothing buffered, merging, unpublished or pending in our folders, and the
    /// manager's newest report (received after our last action) says idle.
    fn is_idle(&self) -> Result<bool, AppError> {
        if !self.awaiting.is_empty() || self.dirty {
            return Ok(false);
        }
        let manager_idle = match &*self.progress_rx.borrow() {
            Some((at, p)) => *at > self.last_activity && p.is_idle(),
            None => false,
        };
        Ok(manager_idle
            && self.pages.dir().list()?.is_empty()
            && self.outcomes.dir().list()?.is_empty())
    }

    fn max_pages_reached(&self) -> bool {
        self.config.max_pages > 0 && self.progress.pages_stored >= self.config.max_pages
    }

    /// Scope check, then into the seen set with the depth as payload.
    fn offer(&mut self, url: &Url, depth: u32) -> Result<(), AppError> {
        if self.scope.check(url, depth).is_err() {
            return Ok(());
        }
        let key = reversed_host_key(url);
        if key.len() > MAX_KEY_LEN {
            return Ok(());
        }
        let generation = self.seen.pending_generation();
        self.seen.insert(key.as_bytes(), &depth.to_le_bytes())?;
        self.input_generation = Some(self.input_generation.unwrap_or(0).max(generation));
        self.dirty = true;
        Ok(())
    }

    /// The generation that covers the input just inserted (and resets the tracker).
    fn input_done(&mut self) -> u64 {
        self.input_generation
            .take()
            .unwrap_or_else(|| self.seen.pending_generation().saturating_sub(1))
    }

    fn page_batch(&mut self, claimed: Claimed) -> Result<(), AppError> {
        let mut pages = Vec::new();
        let read = self.reader.read(claimed.path(), |page| pages.push(page));
        if let Err(e) = read {
            warn!(batch = %claimed.name(), error = %e, "app: page batch quarantined");
            claimed.quarantine(&e.to_string())?;
            self.quarantined += 1;
            return Ok(());
        }
        self.input_generation = None;
        for page in pages {
            let depth = self.depths.remove(&page.url).unwrap_or(0);
            for link in &page.links {
                self.offer(link, depth.saturating_add(1))?;
            }
        }
        let generation = self.input_done();
        self.awaiting.push(Awaiting {
            claimed,
            generation,
        });
        self.finish_inputs()
    }

    fn outcome_file(&mut self, claimed: Claimed) -> Result<(), AppError> {
        let file = claimed.open()?;
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        let mut urls = Vec::new();
        let parsed = OutcomeReader::new(BufReader::new(file)).and_then(|reader| {
            for outcome in reader {
                let outcome = outcome?;
                *counts
                    .entry(outcome.reason.as_str().to_owned())
                    .or_default() += 1;
                urls.push(outcome.url);
            }
            Ok(())
        });
        if let Err(e) = parsed {
            warn!(file = %claimed.name(), error = %e, "app: outcome file quarantined");
            claimed.quarantine(&e.to_string())?;
            return Ok(());
        }
        for url in urls {
            self.depths.remove(&url);
        }
        for (reason, n) in counts {
            *self.progress.outcomes.entry(reason).or_default() += n;
        }
        self.progress.save(&self.state_dir)?;
        claimed.done()?;
        Ok(())
    }

    /// Publishes the new URLs of one merge; false when the crash hook fired.
    fn publish(&mut self, batch: NewBatch) -> Result<bool, AppError> {
        let generation = batch.generation();
        let stopping = self.max_pages_reached();
        let cap = self.config.max_pages_per_host;
        let mut entries: Vec<(&[u8], u32)> = Vec::with_capacity(batch.len());
        for (key, payload) in batch.iter() {
            if cap > 0 {
                let n = self.per_host.entry(key_host(key).to_vec()).or_default();
                if *n >= cap {
                    continue;
                }
                *n += 1;
            }
            let depth = payload
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u32::from_le_bytes);
            entries.push((key, depth));
        }
        let entries = unshuffle(entries, self.config.unshuffle_k, |e| key_host(e.0));
        let mut requested = 0;
        if !stopping {
            for chunk in entries.chunks(self.config.urls_per_request_file) {
                let header = RequestHeader {
                    priority: self.priority,
                };
                let mut w = RequestWriter::new(Vec::new(), header).map_err(format_error)?;
                let mut n = 0;
                for &(key, depth) in chunk {
                    let Some(url) = std::str::from_utf8(key)
                        .ok()
                        .and_then(|k| url_from_key(k).ok())
                    else {
                        continue;
                    };
                    let hints = Hints {
                        depth: Some(depth),
                        ..Hints::default()
                    };
                    if w.write(url.as_str(), &hints).is_ok() {
                        self.depths.insert(url.into(), depth);
                        n += 1;
                    }
                }
                let data = w.finish().map_err(format_error)?;
                if n == 0 {
                    continue;
                }
                self.requests
                    .publish(self.priority, FileKind::Requests, &data)?;
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
        self.progress.urls_requested += requested;
        self.progress.last_published = generation;
        if self.seeds_generation.is_some_and(|g| g <= generation) {
            self.progress.seeds_done = true;
        }
        self.progress.save(&self.state_dir)?;
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
        if ready.is_empty() {
            return Ok(());
        }
        for Awaiting { claimed, .. } in ready {
            match self.repo.ingest(claimed.path()) {
                Ok(summary) => {
                    self.progress.pages_stored += summary.responses + summary.revisits;
                }
                Err(e) if e.is_batch_fault() => {
                    warn!(batch = %claimed.name(), error = %e, "app: batch refused by storage, quarantined");
                    claimed.quarantine(&e.to_string())?;
                    self.quarantined += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.progress.save(&self.state_dir)?;
        Ok(())
    }

    /// Merges and publishes everything buffered (shutdown, end of crawl).
    fn checkpoint(&mut self) -> Result<(), AppError> {
        self.seen.flush()?;
        self.dirty = false;
        while let Some(batch) = self.seen.try_recv_new()? {
            self.publish(batch)?;
        }
        self.finish_inputs()
    }

    fn summary(&self, end: End) -> Summary {
        Summary {
            app: self.config.app.clone(),
            end,
            urls_requested: self.progress.urls_requested,
            pages_stored: self.progress.pages_stored,
            outcomes: self.progress.outcomes.clone(),
            batches_quarantined: self.quarantined,
            seen_keys: self.seen.len(),
        }
    }
}

fn format_error(e: spool::formats::FormatError) -> AppError {
    AppError::File {
        path: PathBuf::from("<request file>"),
        source: std::io::Error::other(e.to_string()),
    }
}
