//! What comes back from the crawling system: page batches (`pages/<app>/`) and
//! outcome files (`outcomes/<app>/`) claimed from the spool, read (a bad one is
//! quarantined), and held until a saved state covers them; then the batches are
//! stored in the repository and both are dropped.
//!
//! It must never store or drop a claimed file before the crawl says a saved state
//! covers it ([`Batches::store_saved`]): that order is the crash-safety argument
//! of the [module docs](super).

use std::collections::BTreeMap;
use std::io::BufReader;
use std::time::Duration;

use spool::claim::{Claimed, Consumer};
use spool::discover::{Discovery, Waker};
use spool::formats::OutcomeReader;
use spool::{ComponentId, Spool};
use storage::{CheckedBatch, Repository};
use tracing::warn;

use app_core::{AppConfig, AppError};
use pages::links::{BatchReader, PageLinksOf};

/// Page batches claimed per round.
const BATCHES_PER_ROUND: usize = 4;

/// Outcome files claimed per round.
const OUTCOMES_PER_ROUND: usize = 16;

/// Counts of what was stored and what was refused.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Stored {
    /// Responses and revisits stored in the repository.
    pub stored: u64,
    /// Batches and outcome files quarantined.
    pub quarantined: u64,
    /// Pages whose links robots directives kept from being followed (this run).
    pub robots_nofollow: u64,
    /// Pages whose body robots directives kept out of the repository (this run).
    pub robots_withheld: u64,
}

/// A page batch read: storage's check, and its responses to withhold (record id →
/// robots directives).
type ReadPages = (CheckedBatch, BTreeMap<String, String>);

/// The claimed inputs and the repository they go to.
pub(super) struct Batches {
    pages: Consumer,
    outcomes: Consumer,
    /// The pages folder's watcher (also woken by the manager's hints).
    discovery: Discovery,
    reader: BatchReader,
    repo: Repository,
    /// Batches and outcome files handled but not yet covered by a saved state.
    unsaved: Vec<(Claimed, Option<ReadPages>)>,
    counts: Stored,
}

impl Batches {
    /// Opens the application's pages and outcomes folders and its repository.
    pub(super) fn open(
        config: &AppConfig,
        spool: &Spool,
        id: ComponentId,
    ) -> Result<Self, AppError> {
        let app = config.app_id()?;
        let pages_dir = spool.pages(&app)?;
        let scan = Duration::from_millis(config.scan_interval_ms.max(10));
        let discovery = Discovery::new(&pages_dir, scan, spool.notify());
        let repo = Repository::open_with(&config.repository_dir, config.repository_options()?)?;
        Ok(Self {
            pages: Consumer::new(pages_dir, id.clone())?,
            outcomes: Consumer::new(spool.outcomes(&app)?, id)?,
            discovery,
            reader: BatchReader::new(config.canon(), config.max_body_bytes)
                .with_robots(config.robots_switches()),
            repo,
            unsaved: Vec::new(),
            counts: Stored::default(),
        })
    }

    /// Wakes [`wait`](Self::wait).
    pub(super) fn waker(&self) -> Waker {
        self.discovery.waker()
    }

    /// Waits at most `timeout` for a new batch or a wake.
    pub(super) fn wait(&self, timeout: Duration) {
        self.discovery.wait_timeout(timeout);
    }

    /// The repository (for the request output's validators).
    pub(super) fn repo(&self) -> &Repository {
        &self.repo
    }

    /// What was stored and quarantined so far.
    pub(super) fn counts(&self) -> Stored {
        self.counts
    }

    /// Outcome files claimed before a crash.
    pub(super) fn resumed_outcomes(&self) -> Result<Vec<Claimed>, AppError> {
        Ok(self.outcomes.resume()?)
    }

    /// Page batches claimed before a crash.
    pub(super) fn resumed_pages(&self) -> Result<Vec<Claimed>, AppError> {
        Ok(self.pages.resume()?)
    }

    /// Claims this round's outcome files.
    pub(super) fn claim_outcomes(&self) -> Result<Vec<Claimed>, AppError> {
        Ok(self.outcomes.claim_batch(OUTCOMES_PER_ROUND)?)
    }

    /// Claims this round's page batches.
    pub(super) fn claim_pages(&self) -> Result<Vec<Claimed>, AppError> {
        Ok(self.pages.claim_batch(BATCHES_PER_ROUND)?)
    }

    /// Reads a page batch; held until saved. None when it was quarantined.
    pub(super) fn read_pages(
        &mut self,
        claimed: Claimed,
    ) -> Result<Option<Vec<PageLinksOf>>, AppError> {
        let mut pages = Vec::new();
        let checked = match self.reader.read_checked(claimed.path(), |p| pages.push(p)) {
            Ok(checked) => checked,
            Err(e) if e.is_batch_fault() => {
                warn!(batch = %claimed.name(), error = %e, "seeds: page batch quarantined");
                claimed.quarantine(&e.to_string())?;
                self.counts.quarantined += 1;
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let mut withheld = BTreeMap::new();
        for page in &pages {
            self.counts.robots_nofollow += u64::from(page.robots.nofollow);
            if let (true, Some(id)) = (page.robots.withholds(), &page.record_id) {
                withheld.insert(id.clone(), page.robots.names());
            }
        }
        self.unsaved.push((claimed, Some((checked, withheld))));
        Ok(Some(pages))
    }

    /// Reads an outcome file's URLs; held until saved. None when it was
    /// quarantined.
    pub(super) fn read_outcomes(
        &mut self,
        claimed: Claimed,
    ) -> Result<Option<Vec<String>>, AppError> {
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
            self.counts.quarantined += 1;
            return Ok(None);
        }
        self.unsaved.push((claimed, None));
        Ok(Some(urls))
    }

    /// A saved state covers everything read so far: stores the batches and drops
    /// the claimed files (a batch storage refuses is quarantined).
    pub(super) fn store_saved(&mut self) -> Result<(), AppError> {
        for (claimed, checked) in std::mem::take(&mut self.unsaved) {
            let Some((checked, withheld)) = checked else {
                claimed.done()?;
                continue;
            };
            // Withheld bodies leave the batch before it is stored (a new file:
            // storage reads it again).
            let withholding = storage::withhold(claimed.path(), &withheld);
            let ingested = withholding.and_then(|n| {
                self.counts.robots_withheld += n;
                self.repo.ingest_checked(checked)
            });
            match ingested {
                Ok(summary) => {
                    self.counts.stored += summary.responses + summary.revisits;
                    claimed.done()?;
                }
                Err(e) if e.is_batch_fault() => {
                    warn!(batch = %claimed.name(), error = %e, "seeds: batch refused by storage, quarantined");
                    claimed.quarantine(&e.to_string())?;
                    self.counts.quarantined += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
