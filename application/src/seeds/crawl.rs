//! The seed-by-seed crawl loop (one blocking thread): hand seeds to workers, keep
//! each worker's window of requests full from its parties' frontiers, publish the
//! requests, route every page and outcome back to the parties that asked for it,
//! save the state, then store and drop the batches. The crash-safety argument is in
//! the [module docs](super).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use spool::claim::{Claimed, Consumer};
use spool::discover::{Discovery, Waker};
use spool::formats::{Hints, OutcomeReader, RequestHeader, RequestWriter};
use spool::name::{FileKind, Priority};
use spool::protocol::{
    AppFigures, ComponentState, MAX_TOP_PARTIES, MAX_WORKERS_SHOWN, Message, PartyPages,
    SeedFigures, SpoolArea,
};
use spool::publish::{Publisher, durable_rename};
use spool::{AppId, ComponentId, Spool};
use storage::Repository;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
use url::Url;

use super::distributor::{Move, plan};
use super::party::{Met, Party};
use super::{SeedsConfig, SeedsSummary};
use crate::canon::{self, CanonConfig};
use crate::links::{BatchReader, PageLinksOf};
use crate::parts::{Ownership, host_of};
use crate::service::crawl::{format_error, read_lines};
use crate::service::scope::Scope;
use crate::service::{AppConfig, AppError, End, PartMode};

/// The state file's first line.
const STATE_HEADER: &str = "polycrawl-seeds-state 1";

/// Longest wait for a page batch or outcome file when there is nothing to do (the
/// pages folder's watcher and the manager's hints wake the loop sooner).
const IDLE_WAIT: Duration = Duration::from_millis(20);

/// While busy, the state is saved (and the batches it covers stored) at most this
/// often; when idle, at once.
const SAVE_EVERY: Duration = Duration::from_millis(200);

/// How often the held-seeds sample is written.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The sample file's header (milliseconds since this run started; held seeds per
/// worker comma-separated).
const SAMPLE_HEADER: &str = "#ms\tqueued\tactive\tfinished\tpages\theld_per_worker\n";

/// How often, at most, the figures go to the manager (admin page).
const FIGURES_EVERY: Duration = Duration::from_secs(2);

/// Page batches claimed per round.
const BATCHES_PER_ROUND: usize = 4;

/// The crawl: the seed queue, the parties held per worker, the URLs in flight.
pub(crate) struct SeedCrawl {
    seeds: SeedsConfig,
    app: AppId,
    scope: Scope,
    canon: CanonConfig,
    priority: Priority,
    urls_per_file: usize,
    state_dir: PathBuf,
    reader: BatchReader,
    repo: Repository,
    pages: Consumer,
    outcomes: Consumer,
    requests: Publisher,
    discovery: Discovery,
    outbound: mpsc::UnboundedSender<Message>,
    stop: CancellationToken,
    /// Seeds not yet handed to a worker.
    queue: VecDeque<String>,
    /// Parties by id.
    parties: BTreeMap<u64, Party>,
    /// The parties each worker holds.
    workers: Vec<Vec<u64>>,
    /// Each worker's round-robin position among its parties.
    cursor: Vec<usize>,
    /// Requested URLs and the parties waiting for them. O(workers × window).
    waiting: HashMap<String, Vec<u64>>,
    next_id: u64,
    /// The distributor's dealing position.
    turn: usize,
    finished: u64,
    /// Seeds the distributor moved between workers (this run).
    moved: u64,
    pages_total: u64,
    requested: u64,
    outcomes_total: u64,
    stored: u64,
    quarantined: u64,
    /// Candidate seeds: every input seed and every external link (per party once).
    candidates: File,
    /// Finished parties: seed, pages, worker (one line each).
    party_log: File,
    /// Held seeds per worker, every second (when asked for).
    sample: Option<(File, Instant)>,
    /// The figures last sent to the manager, and when they were looked at.
    figures: Option<(AppFigures, Instant)>,
    /// Batches and outcome files handled but not yet covered by a saved state.
    unsaved: Vec<(Claimed, Option<storage::CheckedBatch>)>,
    dirty: bool,
    saved_at: Instant,
    started: Instant,
}

fn file_error(path: &Path) -> impl FnOnce(std::io::Error) -> AppError + '_ {
    move |source| AppError::File {
        path: path.to_owned(),
        source,
    }
}

fn append(path: &Path) -> Result<File, AppError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(file_error(path))
}

impl SeedCrawl {
    #[allow(clippy::too_many_arguments)]
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
        let scope = config.scope()?;
        let app = config.app_id()?;
        let state_dir = config.state_dir.clone();
        fs::create_dir_all(&state_dir).map_err(file_error(&state_dir))?;
        let pages_dir = spool.pages(&app)?;
        let scan = Duration::from_millis(config.scan_interval_ms.max(10));
        let discovery = Discovery::new(&pages_dir, scan, spool.notify());
        let repo = Repository::open_with(&config.repository_dir, config.repository_options()?)?;
        let candidates_path = seeds.candidates_path(&state_dir);
        let first_start = !state_path(&state_dir).exists();
        let sample = match &seeds.sample_file {
            Some(path) => {
                let mut file = append(path)?;
                let empty = file.metadata().map_err(file_error(path))?.len() == 0;
                if empty {
                    file.write_all(SAMPLE_HEADER.as_bytes())
                        .map_err(file_error(path))?;
                }
                Some((file, Instant::now() - SAMPLE_EVERY))
            }
            None => None,
        };
        let mut crawl = Self {
            app: app.clone(),
            scope,
            canon: config.canon(),
            priority: config.priority()?,
            urls_per_file: config.urls_per_request_file,
            reader: BatchReader::new(config.canon(), config.max_body_bytes),
            repo,
            pages: Consumer::new(pages_dir, id.clone())?,
            outcomes: Consumer::new(spool.outcomes(&app)?, id.clone())?,
            requests: Publisher::new(spool.requests(&app)?, id)?,
            discovery,
            outbound,
            stop,
            queue: VecDeque::new(),
            parties: BTreeMap::new(),
            workers: vec![Vec::new(); seeds.workers],
            cursor: vec![0; seeds.workers],
            waiting: HashMap::new(),
            next_id: 0,
            turn: 0,
            finished: 0,
            moved: 0,
            pages_total: 0,
            requested: 0,
            outcomes_total: 0,
            stored: 0,
            quarantined: 0,
            candidates: append(&candidates_path)?,
            party_log: append(&state_dir.join("parties.tsv"))?,
            sample,
            figures: None,
            unsaved: Vec::new(),
            dirty: false,
            saved_at: Instant::now(),
            started: Instant::now(),
            state_dir,
            seeds,
        };
        if first_start {
            let mut input = extra_seeds;
            if let Some(path) = &config.seeds_file {
                input.extend(read_lines(path)?);
            }
            let mut text = String::new();
            for seed in input {
                match canon::parse(&seed, None, &crawl.canon) {
                    Ok(url) if !owned.takes(&url) => {}
                    Ok(url) => {
                        text.push_str(url.as_str());
                        text.push('\n');
                        crawl.queue.push_back(url.to_string());
                    }
                    Err(e) => warn!(seed = %seed, error = %e, "seeds: seed rejected"),
                }
            }
            crawl
                .candidates
                .write_all(text.as_bytes())
                .map_err(file_error(&candidates_path))?;
            crawl.save()?;
        } else {
            crawl.load()?;
        }
        Ok(crawl)
    }

    /// Wakes the loop when it waits (for the control connection's hints).
    pub(crate) fn waker(&self) -> Waker {
        self.discovery.waker()
    }

    pub(crate) fn run(mut self) -> Result<SeedsSummary, AppError> {
        // What was claimed before a crash: read again (pages no party waits for
        // any more are only stored).
        for claimed in self.outcomes.resume()? {
            self.outcome_file(claimed)?;
        }
        for claimed in self.pages.resume()? {
            self.page_batch(claimed)?;
        }
        loop {
            if self.stop.is_cancelled() {
                self.save()?;
                return Ok(self.summary(End::Shutdown));
            }
            self.sample()?;
            self.report_figures();
            self.distribute();
            let requested = self.request()?;
            let mut worked = requested > 0;
            for claimed in self.outcomes.claim_batch(16)? {
                self.outcome_file(claimed)?;
                worked = true;
            }
            for claimed in self.pages.claim_batch(BATCHES_PER_ROUND)? {
                self.page_batch(claimed)?;
                worked = true;
            }
            self.end_parties()?;
            if self.dirty && (!worked || self.saved_at.elapsed() >= SAVE_EVERY) {
                self.save()?;
            }
            if self.queue.is_empty() && self.parties.is_empty() {
                self.save()?;
                info!(app = %self.app, "seeds: every party is over");
                return Ok(self.summary(End::Complete));
            }
            if !worked {
                self.discovery.wait_timeout(IDLE_WAIT);
            }
        }
    }

    /// Applies the distributor's (or free competition's) moves until it has none.
    fn distribute(&mut self) {
        loop {
            let held: Vec<usize> = self.workers.iter().map(Vec::len).collect();
            let inactive: Vec<usize> = self
                .workers
                .iter()
                .map(|w| {
                    w.iter()
                        .filter(|id| self.parties.get(id).is_some_and(Party::is_inactive))
                        .count()
                })
                .collect();
            let step = plan(
                self.seeds.balance,
                &held,
                &inactive,
                self.queue.len(),
                self.seeds.m,
                &mut self.turn,
            );
            match step {
                Some(Move::Deal(w)) => {
                    let Some(seed) = self.queue.pop_front() else {
                        return;
                    };
                    let Ok(url) = Url::parse(&seed) else {
                        warn!(seed = %seed, "seeds: queued seed does not parse");
                        self.dirty = true;
                        continue;
                    };
                    let id = self.next_id;
                    self.next_id += 1;
                    self.parties.insert(id, Party::new(&url));
                    self.workers[w].push(id);
                }
                Some(Move::Shift(from, to)) => {
                    // The inactive seed that has waited longest in the source.
                    let Some(at) = self.workers[from]
                        .iter()
                        .rposition(|id| self.parties.get(id).is_some_and(Party::is_inactive))
                    else {
                        return;
                    };
                    let id = self.workers[from].remove(at);
                    self.workers[to].push(id);
                    self.moved += 1;
                }
                None => return,
            }
            self.dirty = true;
        }
    }

    /// Fills each worker's window from its parties' frontiers in turn and publishes
    /// the new requests; returns how many URLs were requested.
    fn request(&mut self) -> Result<usize, AppError> {
        let mut out: Vec<(String, u32)> = Vec::new();
        for w in 0..self.workers.len() {
            let held = &self.workers[w];
            let mut busy: usize = held
                .iter()
                .filter_map(|id| self.parties.get(id))
                .map(|p| p.in_flight)
                .sum();
            let mut idle_turns = 0;
            while busy < self.seeds.window && idle_turns < held.len() {
                let at = self.cursor[w] % held.len().max(1);
                self.cursor[w] = at + 1;
                let id = held[at];
                let Some(party) = self.parties.get_mut(&id) else {
                    idle_turns += 1;
                    continue;
                };
                let Some((url, depth)) = party.frontier.pop_front() else {
                    idle_turns += 1;
                    continue;
                };
                idle_turns = 0;
                party.in_flight += 1;
                busy += 1;
                let waiters = self.waiting.entry(url.clone()).or_default();
                waiters.push(id);
                // Another party asked for it already: its page serves both.
                if waiters.len() == 1 {
                    out.push((url, depth));
                }
            }
        }
        if out.is_empty() {
            return Ok(0);
        }
        self.dirty = true;
        for chunk in out.chunks(self.urls_per_file) {
            let header = RequestHeader {
                priority: self.priority,
            };
            let mut w = RequestWriter::new(Vec::new(), header).map_err(format_error)?;
            for (url, depth) in chunk {
                let hints = Hints {
                    depth: Some(*depth),
                    ..Hints::default()
                };
                w.write(url, &hints).map_err(format_error)?;
            }
            let data = w.finish().map_err(format_error)?;
            let path = self
                .requests
                .publish(self.priority, FileKind::Requests, &data)?;
            if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                let _ = self.outbound.send(Message::Published {
                    area: SpoolArea::Requests(self.app.clone()),
                    name: name.to_owned(),
                });
            }
        }
        self.requested += out.len() as u64;
        Ok(out.len())
    }

    /// Gives each page of a batch to the parties waiting for it.
    fn page_batch(&mut self, claimed: Claimed) -> Result<(), AppError> {
        let mut pages = Vec::new();
        let checked = match self.reader.read_checked(claimed.path(), |p| pages.push(p)) {
            Ok(checked) => checked,
            Err(e) if e.is_batch_fault() => {
                warn!(batch = %claimed.name(), error = %e, "seeds: page batch quarantined");
                claimed.quarantine(&e.to_string())?;
                self.quarantined += 1;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        for page in pages {
            self.page(page)?;
        }
        self.unsaved.push((claimed, Some(checked)));
        self.dirty = true;
        Ok(())
    }

    fn page(&mut self, page: PageLinksOf) -> Result<(), AppError> {
        let Some(waiters) = self.waiting.remove(&page.url) else {
            // Fetched again after a crash, or a duplicate: stored, not followed.
            return Ok(());
        };
        let depth = page.depth.unwrap_or(0).saturating_add(1);
        let mut external = String::new();
        for id in waiters {
            let Some(party) = self.parties.get_mut(&id) else {
                continue;
            };
            party.in_flight = party.in_flight.saturating_sub(1);
            party.pages += 1;
            self.pages_total += 1;
            for link in page.redirect.iter().chain(&page.links) {
                if self.scope.check(link, depth).is_err() {
                    continue;
                }
                if party.meet(link, depth) == Met::External {
                    external.push_str(link.as_str());
                    external.push('\n');
                }
            }
        }
        if !external.is_empty() {
            let path = self.seeds.candidates_path(&self.state_dir);
            self.candidates
                .write_all(external.as_bytes())
                .map_err(file_error(&path))?;
        }
        Ok(())
    }

    /// An outcome (no page) ends the URL for the parties waiting for it.
    fn outcome_file(&mut self, claimed: Claimed) -> Result<(), AppError> {
        let file = claimed.open()?;
        let mut urls = Vec::new();
        let parsed = OutcomeReader::new(BufReader::new(file)).and_then(|reader| {
            for outcome in reader {
                urls.push(outcome?.url);
            }
            Ok(())
        });
        if let Err(e) = parsed {
            warn!(file = %claimed.name(), error = %e, "seeds: outcome file quarantined");
            claimed.quarantine(&e.to_string())?;
            self.quarantined += 1;
            return Ok(());
        }
        for url in urls {
            self.outcomes_total += 1;
            for id in self.waiting.remove(&url).unwrap_or_default() {
                if let Some(party) = self.parties.get_mut(&id) {
                    party.in_flight = party.in_flight.saturating_sub(1);
                }
            }
        }
        self.unsaved.push((claimed, None));
        self.dirty = true;
        Ok(())
    }

    /// Ends every party whose frontier is empty and nothing in flight.
    fn end_parties(&mut self) -> Result<(), AppError> {
        let mut log = String::new();
        for (w, held) in self.workers.iter_mut().enumerate() {
            let parties = &mut self.parties;
            held.retain(|id| {
                let done = parties.get(id).is_none_or(Party::is_done);
                if done {
                    if let Some(p) = parties.remove(id) {
                        log.push_str(&format!("{}\t{}\t{w}\n", p.seed, p.pages));
                    }
                }
                !done
            });
        }
        if !log.is_empty() {
            self.finished += log.lines().count() as u64;
            let path = self.state_dir.join("parties.tsv");
            self.party_log
                .write_all(log.as_bytes())
                .map_err(file_error(&path))?;
            self.dirty = true;
        }
        Ok(())
    }

    /// Writes the state durably (candidates and party log first), then stores and
    /// drops the batches and outcome files it covers.
    fn save(&mut self) -> Result<(), AppError> {
        let candidates_path = self.seeds.candidates_path(&self.state_dir);
        self.candidates
            .sync_data()
            .map_err(file_error(&candidates_path))?;
        let log_path = self.state_dir.join("parties.tsv");
        self.party_log.sync_data().map_err(file_error(&log_path))?;
        let mut text = format!(
            "{STATE_HEADER}\nnext_id={}\nturn={}\nfinished={}\npages={}\nrequested={}\noutcomes={}\n",
            self.next_id,
            self.turn,
            self.finished,
            self.pages_total,
            self.requested,
            self.outcomes_total
        );
        for seed in &self.queue {
            text.push_str(&format!("q\t{seed}\n"));
        }
        let mut in_flight: HashMap<u64, Vec<&str>> = HashMap::new();
        for (url, ids) in &self.waiting {
            for id in ids {
                in_flight.entry(*id).or_default().push(url);
            }
        }
        for (w, held) in self.workers.iter().enumerate() {
            for id in held {
                let Some(p) = self.parties.get(id) else {
                    continue;
                };
                text.push_str(&format!(
                    "p\t{id}\t{w}\t{}\t{}\t{}\n",
                    p.pages, p.site, p.seed
                ));
                for url in &p.seen {
                    text.push_str(&format!("s\t{url}\n"));
                }
                for (url, depth) in &p.frontier {
                    text.push_str(&format!("f\t{depth}\t{url}\n"));
                }
                for url in in_flight.get(id).into_iter().flatten() {
                    text.push_str(&format!("i\t{url}\n"));
                }
            }
        }
        let path = state_path(&self.state_dir);
        let tmp = self.state_dir.join("seeds.state.tmp");
        let mut file = File::create(&tmp).map_err(file_error(&tmp))?;
        file.write_all(text.as_bytes()).map_err(file_error(&tmp))?;
        durable_rename(file, &tmp, &path)?;
        self.dirty = false;
        self.saved_at = Instant::now();
        for (claimed, checked) in std::mem::take(&mut self.unsaved) {
            let Some(checked) = checked else {
                claimed.done()?;
                continue;
            };
            match self.repo.ingest_checked(checked) {
                Ok(summary) => {
                    self.stored += summary.responses + summary.revisits;
                    claimed.done()?;
                }
                Err(e) if e.is_batch_fault() => {
                    warn!(batch = %claimed.name(), error = %e, "seeds: batch refused by storage, quarantined");
                    claimed.quarantine(&e.to_string())?;
                    self.quarantined += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Reads the saved state back.
    fn load(&mut self) -> Result<(), AppError> {
        let path = state_path(&self.state_dir);
        let text = fs::read_to_string(&path).map_err(file_error(&path))?;
        let bad = |line: &str| AppError::BadState {
            path: path.clone(),
            line: line.to_owned(),
        };
        let mut lines = text.lines();
        if lines.next() != Some(STATE_HEADER) {
            return Err(bad(text.lines().next().unwrap_or("")));
        }
        let mut current: Option<u64> = None;
        for line in lines {
            if let Some((key, value)) = line.split_once('=')
                && !line.contains('\t')
            {
                let n: u64 = value.parse().map_err(|_| bad(line))?;
                match key {
                    "next_id" => self.next_id = n,
                    "turn" => self.turn = usize::try_from(n).map_err(|_| bad(line))?,
                    "finished" => self.finished = n,
                    "pages" => self.pages_total = n,
                    "requested" => self.requested = n,
                    "outcomes" => self.outcomes_total = n,
                    _ => return Err(bad(line)),
                }
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["q", seed] => self.queue.push_back((*seed).to_owned()),
                ["p", id, w, pages, site, seed] => {
                    let id: u64 = id.parse().map_err(|_| bad(line))?;
                    let w: usize = w.parse().map_err(|_| bad(line))?;
                    let pages: u64 = pages.parse().map_err(|_| bad(line))?;
                    // A state from a run with more workers: its parties go to the last.
                    let w = w.min(self.workers.len() - 1);
                    self.parties.insert(
                        id,
                        Party::restored((*seed).to_owned(), (*site).to_owned(), pages),
                    );
                    self.workers[w].push(id);
                    current = Some(id);
                }
                ["s", url] | ["f", _, url] | ["i", url] => {
                    let party = current
                        .and_then(|id| self.parties.get_mut(&id))
                        .ok_or_else(|| bad(line))?;
                    match fields[0] {
                        "s" => {
                            party.seen.insert((*url).to_owned());
                        }
                        "f" => {
                            let depth: u32 = fields[1].parse().map_err(|_| bad(line))?;
                            party.frontier.push_back(((*url).to_owned(), depth));
                        }
                        _ => {
                            party.in_flight += 1;
                            if let Some(id) = current {
                                self.waiting.entry((*url).to_owned()).or_default().push(id);
                            }
                        }
                    }
                }
                _ => return Err(bad(line)),
            }
        }
        info!(
            queued = self.queue.len(),
            parties = self.parties.len(),
            in_flight = self.waiting.len(),
            "seeds: state read back"
        );
        Ok(())
    }

    /// Appends one sample line (held seeds per worker) every second.
    fn sample(&mut self) -> Result<(), AppError> {
        let Some((file, at)) = &mut self.sample else {
            return Ok(());
        };
        if at.elapsed() < SAMPLE_EVERY {
            return Ok(());
        }
        *at = Instant::now();
        let held: Vec<String> = self.workers.iter().map(|w| w.len().to_string()).collect();
        let line = format!(
            "{}\t{}\t{}\t{}\t{}\t{}\n",
            self.started.elapsed().as_millis(),
            self.queue.len(),
            self.parties.len(),
            self.finished,
            self.pages_total,
            held.join(",")
        );
        let path = self.seeds.sample_file.clone().unwrap_or_default();
        file.write_all(line.as_bytes()).map_err(file_error(&path))
    }

    /// Tells the manager the figures the admin page shows (seeds, held per worker,
    /// the biggest active parties) when they changed, at most every
    /// [`FIGURES_EVERY`]. O(active parties) when it looks.
    fn report_figures(&mut self) {
        if self
            .figures
            .as_ref()
            .is_some_and(|(_, at)| at.elapsed() < FIGURES_EVERY)
        {
            return;
        }
        let mut top: Vec<&Party> = self.parties.values().collect();
        top.sort_by(|a, b| b.pages.cmp(&a.pages).then_with(|| a.seed.cmp(&b.seed)));
        let figures = AppFigures {
            pages: self.stored,
            seeds: Some(Box::new(SeedFigures {
                balance: self.seeds.balance.to_string(),
                queued: self.queue.len() as u64,
                active: self.parties.len() as u64,
                finished: self.finished,
                moved: self.moved,
                held: self
                    .workers
                    .iter()
                    .take(MAX_WORKERS_SHOWN)
                    .map(|w| u32::try_from(w.len()).unwrap_or(u32::MAX))
                    .collect(),
                top_parties: top
                    .into_iter()
                    .take(MAX_TOP_PARTIES)
                    .map(|p| PartyPages {
                        seed: p.seed.clone(),
                        pages: p.pages,
                    })
                    .collect(),
            })),
            ..AppFigures::default()
        };
        let changed = self.figures.as_ref().is_none_or(|(f, _)| *f != figures);
        if changed {
            // The control task is gone only when the service ends.
            let _ = self.outbound.send(Message::Status(ComponentState {
                pause: None,
                app: Some(figures.clone()),
            }));
        }
        self.figures = Some((figures, Instant::now()));
    }

    fn summary(&self, end: End) -> SeedsSummary {
        SeedsSummary {
            app: self.app.to_string(),
            end,
            balance: self.seeds.balance,
            queued: self.queue.len() as u64,
            active: self.parties.len() as u64,
            finished: self.finished,
            moved: self.moved,
            held: self.workers.iter().map(Vec::len).collect(),
            pages: self.pages_total,
            stored: self.stored,
            requested: self.requested,
            outcomes: self.outcomes_total,
            quarantined: self.quarantined,
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

/// `<state_dir>/seeds.state`.
fn state_path(state_dir: &Path) -> PathBuf {
    state_dir.join("seeds.state")
}
