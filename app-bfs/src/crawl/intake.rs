//! The crawl's inputs: page batches (claimed at the pace of `pace.rs`, read on the
//! reader threads), outcome files (counts, and the sitemaps robots.txt names), a
//! split crawl's exchange files, and the seeds. Each input's URLs are offered to
//! the seen set; the input is held here until the generation that holds them is
//! published, and only then stored (page batches), counted or deleted. A crash
//! before that reads the input again (a URL offered twice, never one lost). A page
//! batch's pages are counted as read when it is read, and saved before it is stored
//! (what the completion rule counts). It must never delete or store an input whose
//! generation is not published, nor one whose count is not saved.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::time::{Duration, Instant};

use spool::OutcomeReason;
use spool::claim::{Claimed, Consumer};
use spool::discover::{Discovery, Waker};
use spool::formats::{ExchangeReader, OutcomeReader};
use tracing::{info, warn};

use super::{Crawl, Linking};
use crate::given_up::GivenUp;
use crate::pace::Pace;
use crate::read_ahead::{ReadAhead, ReadBatch};
use app_core::error::AppError;
use app_core::reach::Reach;
use spool::protocol::AppProgress;

/// A page batch whose links are inserted, waiting for their generation's publication.
struct Awaiting {
    claimed: Claimed,
    /// What storage checked of it while its links were read (so it is read once).
    checked: storage::CheckedBatch,
    generation: u64,
    /// Its responses whose body robots directives keep out of the repository
    /// (record id → the directives), withheld before it is stored.
    withheld: BTreeMap<String, String>,
}

/// What the summary says of this run only (not saved: a resumed crawl counts
/// from its start).
#[derive(Debug, Default)]
struct RunFigures {
    /// Inputs quarantined.
    quarantined: u64,
    /// The hosts the manager gave up on, from their outcomes (bounded: `given_up`).
    given_up: GivenUp,
}

/// The inputs and what is held of them.
pub(super) struct Intake {
    pages: Consumer,
    /// The pages folder's events; the loop waits on it.
    discovery: Discovery,
    outcomes: Consumer,
    /// Reads claimed page batches on the reader threads.
    read_ahead: ReadAhead,
    /// When the loop may claim page batches and merge its seen set.
    pace: Pace,
    awaiting: Vec<Awaiting>,
    /// Exchange files applied, waiting for their generation's publication
    /// (the file, its generation, its URLs).
    exchanged: Vec<(Claimed, u64, u64)>,
    /// Outcome files whose sitemaps are inserted, waiting for their generation's
    /// publication (the file, its generation, its outcome counts and its crawl.log
    /// lines: added when it is deleted, so a crash while it waits does not count
    /// it twice).
    outcomes_held: Vec<(Claimed, u64, BTreeMap<String, u64>, String)>,
    /// The newest generation that holds the input being offered.
    input_generation: Option<u64>,
    /// This run's figures that are not saved.
    run: RunFigures,
    /// The seeds (with the seeds file's), offered when the loop starts.
    seeds: Vec<String>,
    /// The generation that covers the seeds, once offered in this run.
    seeds_generation: Option<u64>,
}

impl Intake {
    pub(super) fn new(
        pages: Consumer,
        discovery: Discovery,
        outcomes: Consumer,
        read_ahead: ReadAhead,
        pace: Pace,
        seeds: Vec<String>,
    ) -> Self {
        Self {
            pages,
            discovery,
            outcomes,
            read_ahead,
            pace,
            awaiting: Vec::new(),
            exchanged: Vec::new(),
            outcomes_held: Vec::new(),
            input_generation: None,
            run: RunFigures::default(),
            seeds,
            seeds_generation: None,
        }
    }

    /// Wakes the loop when it waits.
    pub(super) fn waker(&self) -> Waker {
        self.discovery.waker()
    }

    /// Waits for an event, at most `max`.
    pub(super) fn wait(&self, max: Duration) {
        self.discovery.wait_timeout(max);
    }

    /// Inputs quarantined in this run.
    pub(super) fn quarantined(&self) -> u64 {
        self.run.quarantined
    }

    /// The hosts the manager gave up on in this run.
    pub(super) fn given_up(&self) -> &GivenUp {
        &self.run.given_up
    }

    /// The claiming pace.
    pub(super) fn pace(&mut self) -> &mut Pace {
        &mut self.pace
    }

    /// Batches being read.
    pub(super) fn reading(&self) -> usize {
        self.read_ahead.in_flight()
    }

    /// Claims page batches for the readers: only while they have little queued
    /// (one batch per reader and one more, so each reads while the loop inserts;
    /// batches that wait in the folder keep growing, the downloaders' Nagle rule,
    /// and at most that many batches' links are held in memory), and at the pace
    /// that keeps batches large while the manager has URLs to spare (`pace.rs`).
    /// Returns the batches claimed, for [`Intake::read`].
    pub(super) fn claim_pages(
        &mut self,
        most: usize,
        manager: Option<&AppProgress>,
    ) -> Result<Vec<Claimed>, AppError> {
        let room = (self.read_ahead.readers() + 1)
            .min(most)
            .saturating_sub(self.read_ahead.in_flight());
        let now = Instant::now();
        if room == 0 || !self.pace.may_claim(now, manager) {
            return Ok(Vec::new());
        }
        let batches = self.pages.claim_batch(room)?;
        if !batches.is_empty() {
            self.pace.claimed(now);
        }
        Ok(batches)
    }

    /// Hands claimed page batches to the reader threads.
    pub(super) fn read(&mut self, batches: Vec<Claimed>) -> Result<(), AppError> {
        for claimed in batches {
            self.read_ahead.submit(claimed)?;
        }
        Ok(())
    }

    /// Claims up to `most` outcome files.
    pub(super) fn claim_outcomes(&mut self, most: usize) -> Result<Vec<Claimed>, AppError> {
        Ok(self.outcomes.claim_batch(most)?)
    }

    /// Some input is held for its generation's publication.
    pub(super) fn holding(&self) -> bool {
        !self.awaiting.is_empty() || !self.exchanged.is_empty() || !self.outcomes_held.is_empty()
    }

    /// The pages and outcomes folders hold no file. O(files listed).
    pub(super) fn folders_empty(&self) -> Result<bool, AppError> {
        Ok(self.pages.dir().list()?.is_empty() && self.outcomes.dir().list()?.is_empty())
    }

    /// A URL went into the seen set's pending generation `generation`.
    pub(super) fn inserted(&mut self, generation: u64) {
        self.input_generation = Some(self.input_generation.unwrap_or(0).max(generation));
    }

    /// The generation that covers the input just inserted (and resets the
    /// tracker); `pending` is the seen set's pending generation.
    fn input_done(&mut self, pending: u64) -> u64 {
        self.input_generation
            .take()
            .unwrap_or_else(|| pending.saturating_sub(1))
    }

    /// Whether the seeds are covered once `generation` is published.
    pub(super) fn seeds_covered(&self, generation: u64) -> bool {
        self.seeds_generation.is_some_and(|g| g <= generation)
    }
}

impl Crawl {
    /// Offers the seeds (once per crawl) and the URLs this part owns among the
    /// replicated ones, then everything this component had claimed before a
    /// restart.
    pub(super) fn start(&mut self) -> Result<(), AppError> {
        // Seed hosts get the seed budget, also after a restart.
        let seeds: Vec<_> = std::mem::take(&mut self.intake.seeds)
            .into_iter()
            .filter_map(|seed| match self.admission.parse(&seed) {
                Ok(url) => Some(url),
                Err(e) => {
                    warn!(seed = %seed, error = %e, "app: seed rejected");
                    None
                }
            })
            .collect();
        for url in &seeds {
            self.admission.seed(url);
        }
        self.ledger.seeds = seeds.iter().map(|u| u.to_string()).collect();
        if !self.ledger.progress.seeds_done {
            self.intake.input_generation = None;
            for url in &seeds {
                self.offer(url, Reach::default(), None)?;
            }
            // The replicated URLs this part owns: other parts never send them.
            let own = self.parts.as_ref().map(|p| p.own_replicated());
            for url in own.unwrap_or_default() {
                match self.admission.parse(&url) {
                    Ok(url) => self.offer(&url, Reach::default(), None)?,
                    Err(e) => warn!(url = %url, error = %e, "app: replicated URL rejected"),
                }
            }
            let pending = self.seen.pending_generation();
            self.intake.seeds_generation = Some(self.intake.input_done(pending));
        }
        if let Some(path) = self.config.requeue_file.clone() {
            self.requeue(&path)?;
        }
        for claimed in self.intake.pages.resume()? {
            self.intake.read_ahead.submit(claimed)?;
        }
        while let Some(batch) = self.intake.read_ahead.next()? {
            self.page_read(batch)?;
        }
        let resumed = self.intake.outcomes.resume()?;
        self.outcome_files(resumed)?;
        let resumed = match &self.parts {
            Some(p) => p.inbox.resume()?,
            None => Vec::new(),
        };
        for claimed in resumed {
            self.exchange_file(claimed)?;
        }
        Ok(())
    }

    /// Takes back the URLs of a requeue file (`requeue_file`: an earlier run's
    /// `cut.tsv`) that this crawl cut and never requested: each is requested once,
    /// at depth 0, whatever the scope, detectors and budgets (`cuts.rs`).
    fn requeue(&mut self, path: &std::path::Path) -> Result<(), AppError> {
        let (mut taken, mut skipped) = (0u64, 0u64);
        for line in app_core::cuts::read_requeue(path)? {
            let key = match self.admission.parse(&line) {
                Ok(url) => self.admission.requeue(&url),
                Err(_) => None,
            };
            let Some(key) = key else {
                skipped += 1;
                continue;
            };
            let generation = self.seen.pending_generation();
            self.seen
                .insert(key.as_bytes(), &Reach::default().to_bytes())?;
            self.intake.inserted(generation);
            taken += 1;
        }
        info!(
            file = %path.display(),
            taken,
            skipped,
            "app: requeued the cut URLs of a file (skipped: not cut in this crawl, or requested since)"
        );
        Ok(())
    }

    /// Inserts the links of the batches the readers have read; whether there was any.
    pub(super) fn pages_read(&mut self) -> Result<bool, AppError> {
        let mut any = false;
        while let Some(batch) = self.intake.read_ahead.try_next()? {
            self.page_read(batch)?;
            any = true;
        }
        Ok(any)
    }

    /// Inserts the links of a batch the reader thread has read.
    fn page_read(&mut self, batch: ReadBatch) -> Result<(), AppError> {
        let ReadBatch { claimed, read } = batch;
        let (pages, checked) = match read {
            Ok(read) => read,
            Err(e) if e.is_batch_fault() => {
                warn!(batch = %claimed.name(), error = %e, "app: page batch quarantined");
                // Its pages cannot be counted: say so durably before it goes.
                self.ledger.progress.read.batches_unread += 1;
                self.ledger.save(&self.wait)?;
                claimed.quarantine(&e.to_string())?;
                self.intake.run.quarantined += 1;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        self.ledger.pages_read(pages.len() as u64);
        self.intake.input_generation = None;
        let mut withheld = BTreeMap::new();
        for page in pages {
            if page.robots.nofollow {
                self.ledger.progress.read.robots_nofollow += 1;
            }
            if page.robots.withholds() {
                if let Some(id) = &page.record_id {
                    withheld.insert(id.clone(), page.robots.names());
                }
            }
            // Records written before depths travelled with the URL count as seeds.
            let depth = page.depth.unwrap_or(0).saturating_add(1);
            if let Some(url) = &page.page {
                self.admission.page(url, page.template);
            }
            let from = page.page.map(Linking::new);
            if let Some(to) = &page.redirect {
                let reach = Reach {
                    depth,
                    hops: page.hops.saturating_add(1),
                };
                self.offer(to, reach, from.as_ref())?;
            }
            for link in &page.links {
                self.offer(link, Reach { depth, hops: 0 }, from.as_ref())?;
            }
        }
        let generation = self.intake.input_done(self.seen.pending_generation());
        self.intake.awaiting.push(Awaiting {
            claimed,
            checked,
            generation,
            withheld,
        });
        self.finish_inputs()
    }

    /// Offers the URLs of one exchange file like links found here (depth from the
    /// hint); the file is deleted once their generation is published. A file that
    /// does not parse or is meant for another part or split is quarantined.
    pub(super) fn exchange_file(&mut self, claimed: Claimed) -> Result<(), AppError> {
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
            self.intake.run.quarantined += 1;
            return Ok(());
        }
        self.intake.input_generation = None;
        let n = urls.len() as u64;
        for req in urls {
            match self.admission.parse(&req.url) {
                Ok(url) => {
                    if self.parts.as_ref().is_some_and(|p| p.is_replicated(&url)) {
                        self.ledger.progress.parts.replicated_in += 1;
                    }
                    let reach = Reach {
                        depth: req.hints.depth.unwrap_or(0),
                        hops: req.hints.hops.unwrap_or(0),
                    };
                    // A vote: the linking page's site counts toward the budget.
                    let from = req
                        .hints
                        .via
                        .as_deref()
                        .and_then(|v| url::Url::parse(v).ok());
                    let from = from.map(Linking::new);
                    // The sender's link count (importance order), else the vote's link.
                    let links = req.hints.links.unwrap_or(u64::from(from.is_some()));
                    self.offer_counted(&url, reach, from.as_ref(), links)?;
                }
                Err(e) => warn!(url = %req.url, error = %e, "app: exchanged URL rejected"),
            }
        }
        let generation = self.intake.input_done(self.seen.pending_generation());
        self.intake.exchanged.push((claimed, generation, n));
        Ok(())
    }

    /// Counts the outcomes of `files`, saves the counts once, then deletes the
    /// files (a crash in between counts them again: counts are statistics).
    pub(super) fn outcome_files(&mut self, files: Vec<Claimed>) -> Result<(), AppError> {
        if files.is_empty() {
            return Ok(());
        }
        let mut counted = Vec::with_capacity(files.len());
        for claimed in files {
            counted.extend(self.outcome_file(claimed)?);
        }
        self.ledger.commit_log(&self.wait)?;
        self.ledger.save_now()?;
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
        let mut lines = String::new();
        let logging = self.ledger.log.is_some();
        let given_up = &mut self.intake.run.given_up;
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
                given_up.note(outcome.reason, &outcome.url, &outcome.detail);
                if logging {
                    outcome_line(&outcome.url, outcome.reason, &mut lines);
                }
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
                *self.ledger.progress.outcomes.entry(reason).or_default() += n;
            }
            if let Some(log) = &mut self.ledger.log {
                log.stage(&claimed.name().to_string(), |out| out.push_str(&lines));
            }
            return Ok(Some(claimed));
        }
        self.intake.input_generation = None;
        for (sitemap, depth) in sitemaps {
            match self.admission.parse(&sitemap) {
                Ok(url) => self.offer(&url, Reach { depth, hops: 0 }, None)?,
                Err(e) => warn!(url = %sitemap, error = %e, "app: sitemap URL rejected"),
            }
        }
        let generation = self.intake.input_done(self.seen.pending_generation());
        self.intake
            .outcomes_held
            .push((claimed, generation, counts, lines));
        Ok(None)
    }

    /// Stores, counts or deletes every held input whose generation is published.
    pub(super) fn finish_inputs(&mut self) -> Result<(), AppError> {
        let published = self.ledger.progress.last_published;
        let (applied, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.intake.exchanged)
            .into_iter()
            .partition(|(_, g, _)| *g <= published);
        self.intake.exchanged = waiting;
        for (claimed, _, urls) in applied {
            claimed.done()?;
            self.ledger.progress.parts.applied_files += 1;
            self.ledger.progress.parts.applied_urls += urls;
            self.ledger.touched();
        }
        let (applied, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.intake.outcomes_held)
            .into_iter()
            .partition(|(_, g, _, _)| *g <= published);
        self.intake.outcomes_held = waiting;
        if !applied.is_empty() {
            // Counted (and logged), saved, then deleted, as in `outcome_files`.
            for (claimed, _, counts, lines) in &applied {
                for (reason, n) in counts {
                    *self
                        .ledger
                        .progress
                        .outcomes
                        .entry(reason.clone())
                        .or_default() += n;
                }
                if let Some(log) = &mut self.ledger.log {
                    log.stage(&claimed.name().to_string(), |out| out.push_str(lines));
                }
            }
            self.ledger.commit_log(&self.wait)?;
            self.ledger.save(&self.wait)?;
            for (claimed, _, _, _) in applied {
                claimed.done()?;
            }
        }
        self.store_batches(published)
    }

    /// Stages the crawl.log lines of a page batch about to be stored: one per
    /// response or revisit record, with storage's dedup fate as an annotation;
    /// returns the payload bytes of those records (0 without a log).
    fn log_batch(
        &mut self,
        claimed: &Claimed,
        checked: &storage::CheckedBatch,
    ) -> Result<u64, AppError> {
        let Some(log) = &mut self.ledger.log else {
            return Ok(0);
        };
        let notes = self.repo.capture_notes(checked)?;
        let name = claimed.name();
        let thread = name.producer.to_string();
        log.stage(&name.to_string(), |out| {
            for note in &notes {
                page_line(note, &thread, out);
            }
        });
        Ok(notes.iter().map(|n| n.payload_len).sum())
    }

    /// Hands every page batch whose links are all published to storage.
    fn store_batches(&mut self, published: u64) -> Result<(), AppError> {
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.intake.awaiting)
            .into_iter()
            .partition(|a| a.generation <= published);
        self.intake.awaiting = waiting;
        if ready.is_empty() {
            return Ok(());
        }
        // Storage deletes a batch it stores: its pages' count is saved first;
        // with the crawl log, each batch's lines and their mark too, batch by
        // batch (storage's dedup plan for a batch depends on the batches stored
        // before it).
        if self.ledger.log.is_none() {
            self.ledger.save_reads(&self.wait)?;
        }
        for Awaiting {
            claimed,
            checked,
            withheld,
            ..
        } in ready
        {
            // The log first (a fetch has its line whatever storage keeps of it),
            // then the directives' withholding, then storage.
            let bytes = self.log_batch(&claimed, &checked)?;
            if self.ledger.commit_log(&self.wait)? {
                self.ledger.save(&self.wait)?;
            }
            if !withheld.is_empty() {
                // Rewritten in place (a new file: storage reads it again). A crash
                // after it reads the rewritten batch again: its withheld pages are
                // metadata records then, neither pages nor links, and their count
                // and links were saved and published before this point.
                let path = claimed.path().to_owned();
                match self
                    .wait
                    .run(&mut (), |_| Ok(storage::withhold(&path, &withheld)?))
                {
                    Ok(n) => self.ledger.progress.read.robots_withheld += n,
                    Err(AppError::Storage(e)) if e.is_batch_fault() => {
                        warn!(batch = %claimed.name(), error = %e, "app: batch unreadable while withholding pages, quarantined");
                        claimed.quarantine(&e.to_string())?;
                        self.intake.run.quarantined += 1;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
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
                    let progress = &mut self.ledger.progress;
                    progress.pages_stored +=
                        summary.responses + summary.revisits + summary.not_modified;
                    progress.stored.revisits_identical += summary.revisits;
                    progress.stored.revisits_not_modified += summary.not_modified;
                    progress.stored.payload_bytes += bytes;
                }
                Err(AppError::Storage(e)) if e.is_batch_fault() => {
                    warn!(batch = %claimed.name(), error = %e, "app: batch refused by storage, quarantined");
                    claimed.quarantine(&e.to_string())?;
                    self.intake.run.quarantined += 1;
                }
                Err(e) => return Err(e),
            }
        }
        // The page count is a statistic: saved with the next save, not now (each
        // save is two fsyncs).
        self.ledger.touched();
        Ok(())
    }
}

/// Appends the crawl.log line of one stored record (`app_core::crawllog`).
fn page_line(note: &storage::CaptureNote, thread: &str, out: &mut String) {
    use app_core::crawllog::{Annotation, Line, discovery_path, now_ms};
    use storage::CaptureFate;
    let mut annotations = Vec::new();
    match note.fate {
        CaptureFate::Original => {}
        CaptureFate::Duplicate => annotations.push(Annotation::DuplicateDigest),
        CaptureFate::NotModified => annotations.push(Annotation::NotModified),
        CaptureFate::Revisit => annotations.push(Annotation::Revisit),
    }
    if let Some(why) = &note.fetch.truncated {
        annotations.push(Annotation::Truncated(why.clone()));
    }
    // A head without a status is written 0 (Heritrix's "never tried" is not it,
    // but the column must be a number).
    let status = note.status.parse().unwrap_or(0);
    let path = discovery_path(note.fetch.depth, note.fetch.hops);
    let fetch = match (note.fetch.start_ms, note.fetch.duration_ms) {
        (Some(start), Some(ms)) => Some((start, ms)),
        _ => None,
    };
    Line {
        log_ms: now_ms(),
        status,
        size: Some(note.payload_len),
        url: &note.uri,
        path: &path,
        mime: Some(&note.mime),
        thread: Some(thread),
        fetch,
        digest: note.digest.map(|d| d.to_string()),
        annotations,
    }
    .write(out);
}

/// Appends the crawl.log line of one outcome (a URL that ended without a page).
fn outcome_line(url: &str, reason: OutcomeReason, out: &mut String) {
    use app_core::crawllog::{Annotation, Line, now_ms, outcome_status};
    let Some(status) = outcome_status(reason) else {
        return;
    };
    Line {
        log_ms: now_ms(),
        status,
        size: None,
        url,
        path: "-",
        mime: None,
        thread: None,
        fetch: None,
        digest: None,
        annotations: vec![Annotation::Reason(reason)],
    }
    .write(out);
}
