//! The progress file `<state_dir>/progress`: the last published seen-set generation,
//! whether the seeds are covered, and the counts of the summary. Text, `key=value`
//! lines; replaced whole with a temp file, fsync and rename
//! ([`spool::publish::durable_rename`]), so a crash leaves the old or the new one.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use spool::OutcomeReason;
use spool::publish::durable_rename;

use app_core::error::AppError;

/// What the application keeps across restarts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// The newest seen-set generation whose new URLs are published (0: none).
    pub last_published: u64,
    /// The seeds' URLs are covered by a published generation.
    pub seeds_done: bool,
    /// URLs written into published request files.
    pub urls_requested: u64,
    /// Response records of the page batches stored in the repository.
    pub pages_stored: u64,
    /// The page batches read: with the outcomes read, what the crawl knows ended
    /// of `urls_requested` (see `crawl/completion.rs`).
    pub read: ReadCounts,
    /// What those were: revisits, payload bytes.
    pub stored: StoredCounts,
    /// Outcomes read, by reason name.
    pub outcomes: BTreeMap<String, u64>,
    /// New URLs not requested because their host's budget was used up.
    pub budget_cut: u64,
    /// Redirect targets not requested because the chain was over
    /// `max_redirect_hops`.
    pub redirects_cut: u64,
    /// Links cut by each trap detector but `redirect_hops` (that is
    /// `redirects_cut`), by the detector's name (see `traps`).
    pub trap_cuts: BTreeMap<String, u64>,
    /// Parts (see [`crate::exchange`]): counters kept across restarts.
    pub parts: PartCounters,
    /// How much of `crawl.log` is accounted for, and the inputs of its last step
    /// (`app_core::crawllog`).
    pub crawl_log: app_core::crawllog::LogMark,
}

/// What the pages stored were, beyond their count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoredCounts {
    /// Duplicates stored as identical-payload-digest revisits.
    pub revisits_identical: u64,
    /// 304s stored as server-not-modified revisits (a recrawl).
    pub revisits_not_modified: u64,
    /// Payload bytes (after the HTTP head) of the records counted as stored,
    /// counted while the crawl log is on (it reads them).
    pub payload_bytes: u64,
}

/// What the crawl read of its page batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCounts {
    /// Response records of the page batches read (their links taken in, whether
    /// storage then kept them or not). Saved before a batch leaves its folder, so a
    /// crash counts a batch twice, never not at all.
    pub pages: u64,
    /// Page batches quarantined before they could be read: their pages are not in
    /// `pages`, so the count of what ended cannot be held to them.
    pub batches_unread: u64,
    /// Of `pages`, those whose links were not followed because of their robots
    /// directives (`X-Robots-Tag` or meta robots `nofollow`, `none`).
    pub robots_nofollow: u64,
    /// Of `pages`, those whose body was kept out of the repository because of
    /// their robots directives (`noarchive`): a metadata record stands for each.
    pub robots_withheld: u64,
}

/// The inter-part counters of one part (statistics: they feed the metrics, never a
/// decision; the termination rule does not use them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartCounters {
    /// Exchange files published to other parts.
    pub sent_files: u64,
    /// URLs in them.
    pub sent_urls: u64,
    /// Exchange files received and applied.
    pub applied_files: u64,
    /// URLs in them.
    pub applied_urls: u64,
    /// Foreign URLs dropped (firewall mode; plain two-level mode: parked URLs
    /// of other agents' sites, and roots requested at assignment).
    pub dropped: u64,
    /// Foreign URLs kept for later (cross-over mode).
    pub kept: u64,
    /// Kept foreign URLs requested by this part (cross-over mode).
    pub crossed: u64,
    /// Foreign URLs not sent because they are replicated (`parts::replicated`):
    /// their owner crawls them.
    pub replicated: u64,
    /// Exchanged URLs received that are on the replicated list (0 unless some
    /// part runs without the list, or with another one).
    pub replicated_in: u64,
    /// URLs of unassigned sites parked until the coordinator assigns them
    /// (two-level mode).
    pub parked: u64,
    /// Parked URLs released once their site was assigned (two-level mode).
    pub released: u64,
    /// Sites reported to the coordinator (two-level mode; a site reported again
    /// after a restart counts again).
    pub reported: u64,
    /// Sites the coordinator assigned to this part (two-level mode).
    pub sites: u64,
}

impl Progress {
    /// The file's path in `state_dir`.
    pub fn path(state_dir: &Path) -> PathBuf {
        state_dir.join("progress")
    }

    /// Reads the file; `None` on the first start.
    pub fn load(state_dir: &Path) -> Result<Option<Self>, AppError> {
        let path = Self::path(state_dir);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(AppError::File { path, source }),
        };
        let mut p = Progress::default();
        let mut pages_read = None;
        for line in text.lines().filter(|l| !l.is_empty()) {
            let bad = || AppError::BadState {
                path: path.clone(),
                line: line.chars().take(100).collect(),
            };
            let (key, value) = line.split_once('=').ok_or_else(bad)?;
            let n: u64 = value.parse().map_err(|_| bad())?;
            match key {
                "last_published" => p.last_published = n,
                "seeds_done" => p.seeds_done = n != 0,
                "urls_requested" => p.urls_requested = n,
                "pages_stored" => p.pages_stored = n,
                "pages_read" => pages_read = Some(n),
                "batches_unread" => p.read.batches_unread = n,
                "revisits_identical" => p.stored.revisits_identical = n,
                "revisits_not_modified" => p.stored.revisits_not_modified = n,
                "budget_cut" => p.budget_cut = n,
                "redirects_cut" => p.redirects_cut = n,
                "robots_nofollow" => p.read.robots_nofollow = n,
                "robots_withheld" => p.read.robots_withheld = n,
                "parts.sent_files" => p.parts.sent_files = n,
                "parts.sent_urls" => p.parts.sent_urls = n,
                "parts.applied_files" => p.parts.applied_files = n,
                "parts.applied_urls" => p.parts.applied_urls = n,
                "parts.dropped" => p.parts.dropped = n,
                "parts.kept" => p.parts.kept = n,
                "parts.crossed" => p.parts.crossed = n,
                "parts.replicated" => p.parts.replicated = n,
                "parts.replicated_in" => p.parts.replicated_in = n,
                "parts.parked" => p.parts.parked = n,
                "parts.released" => p.parts.released = n,
                "parts.reported" => p.parts.reported = n,
                "payload_bytes" => p.stored.payload_bytes = n,
                "crawl_log.len" => p.crawl_log.len = n,
                _ => {
                    if let Some(input) = key.strip_prefix("crawl_log.input.") {
                        p.crawl_log.inputs.insert(input.to_owned());
                    } else if let Some(reason) = key.strip_prefix("outcome.") {
                        p.outcomes.insert(reason.to_owned(), n);
                    } else if let Some(detector) = key.strip_prefix("trap.") {
                        p.trap_cuts.insert(detector.to_owned(), n);
                    } else {
                        return Err(bad());
                    }
                }
            }
        }
        // A file from before pages were counted as read: what was requested then
        // counts as ended (the count starts with this version).
        p.read.pages = pages_read.unwrap_or_else(|| {
            p.urls_requested
                .saturating_sub(p.outcomes_total())
                .max(p.pages_stored)
        });
        Ok(Some(p))
    }

    /// Replaces the file durably.
    pub fn save(&self, state_dir: &Path) -> Result<(), AppError> {
        let path = Self::path(state_dir);
        let tmp = state_dir.join("progress.tmp");
        let io = |source| AppError::File {
            path: tmp.clone(),
            source,
        };
        let mut text = format!(
            "last_published={}\nseeds_done={}\nurls_requested={}\npages_stored={}\n\
             pages_read={}\nbatches_unread={}\n\
             revisits_identical={}\nrevisits_not_modified={}\n\
             budget_cut={}\nredirects_cut={}\nrobots_nofollow={}\nrobots_withheld={}\n",
            self.last_published,
            u8::from(self.seeds_done),
            self.urls_requested,
            self.pages_stored,
            self.read.pages,
            self.read.batches_unread,
            self.stored.revisits_identical,
            self.stored.revisits_not_modified,
            self.budget_cut,
            self.redirects_cut,
            self.read.robots_nofollow,
            self.read.robots_withheld
        );
        let c = &self.parts;
        text.push_str(&format!(
            "parts.sent_files={}\nparts.sent_urls={}\nparts.applied_files={}\n\
             parts.applied_urls={}\nparts.dropped={}\nparts.kept={}\nparts.crossed={}\n\
             parts.replicated={}\nparts.replicated_in={}\n\
             parts.parked={}\nparts.released={}\nparts.reported={}\n",
            c.sent_files,
            c.sent_urls,
            c.applied_files,
            c.applied_urls,
            c.dropped,
            c.kept,
            c.crossed,
            c.replicated,
            c.replicated_in,
            c.parked,
            c.released,
            c.reported
        ));
        for (reason, n) in &self.outcomes {
            text.push_str(&format!("outcome.{reason}={n}\n"));
        }
        for (detector, n) in &self.trap_cuts {
            text.push_str(&format!("trap.{detector}={n}\n"));
        }
        text.push_str(&format!(
            "payload_bytes={}\ncrawl_log.len={}\n",
            self.stored.payload_bytes, self.crawl_log.len
        ));
        for input in &self.crawl_log.inputs {
            text.push_str(&format!("crawl_log.input.{input}=1\n"));
        }
        let mut file = File::create(&tmp).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        durable_rename(file, &tmp, &path)?;
        Ok(())
    }

    /// Counts one outcome.
    pub fn count_outcome(&mut self, reason: OutcomeReason) {
        *self.outcomes.entry(reason.as_str().to_owned()).or_default() += 1;
    }

    /// All outcomes.
    pub fn outcomes_total(&self) -> u64 {
        self.outcomes.values().sum()
    }

    /// Requested URLs of which neither a page nor an outcome has been read, as far
    /// as the counts know: a URL read twice (a refetch, a batch read again after a
    /// crash) can hide a missing one, never the other way round.
    pub fn unaccounted(&self) -> u64 {
        self.urls_requested
            .saturating_sub(self.read.pages.saturating_add(self.outcomes_total()))
    }
}

/// Path of the saved host budgets (see `budget.rs`).
pub(crate) fn budgets_path(state_dir: &Path) -> PathBuf {
    state_dir.join("budgets")
}

/// Reads the saved host budgets; `None` before the first save.
pub(crate) fn load_budgets(state_dir: &Path) -> Result<Option<String>, AppError> {
    let path = budgets_path(state_dir);
    match fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(AppError::File { path, source }),
    }
}

/// Replaces the saved host budgets durably (temp file, fsync, rename).
pub(crate) fn save_budgets(state_dir: &Path, text: &str) -> Result<(), AppError> {
    let tmp = state_dir.join("budgets.tmp");
    let io = |source| AppError::File {
        path: tmp.clone(),
        source,
    };
    let mut file = File::create(&tmp).map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    durable_rename(file, &tmp, &budgets_path(state_dir))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Progress::load(dir.path()).unwrap(), None);
        let mut p = Progress {
            last_published: 7,
            seeds_done: true,
            urls_requested: 12,
            pages_stored: 5,
            read: ReadCounts {
                pages: 6,
                batches_unread: 1,
                robots_nofollow: 2,
                robots_withheld: 1,
            },
            parts: PartCounters {
                sent_urls: 3,
                crossed: 2,
                ..PartCounters::default()
            },
            stored: StoredCounts {
                revisits_identical: 2,
                revisits_not_modified: 1,
                payload_bytes: 4096,
            },
            crawl_log: app_core::crawllog::LogMark {
                len: 300,
                inputs: ["50-dl-1-00000000000000000001.warc.gz".to_owned()].into(),
            },
            ..Progress::default()
        };
        p.count_outcome(OutcomeReason::Timeout);
        p.count_outcome(OutcomeReason::Timeout);
        p.trap_cuts.insert("sequence".into(), 4);
        p.save(dir.path()).unwrap();
        assert_eq!(Progress::load(dir.path()).unwrap(), Some(p.clone()));
        assert_eq!(p.unaccounted(), 12 - 6 - 2);
        fs::write(Progress::path(dir.path()), "what\n").unwrap();
        assert!(matches!(
            Progress::load(dir.path()),
            Err(AppError::BadState { .. })
        ));
    }

    #[test]
    fn a_file_from_before_pages_were_counted_as_read_counts_its_requests_as_ended() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            Progress::path(dir.path()),
            "urls_requested=10\npages_stored=3\noutcome.timeout=2\n",
        )
        .unwrap();
        let p = Progress::load(dir.path()).unwrap().unwrap();
        assert_eq!((p.read.pages, p.unaccounted()), (8, 0));
        let mut later = p;
        later.urls_requested += 4;
        later.read.pages += 1;
        assert_eq!(later.unaccounted(), 3, "URLs requested since are counted");
    }
}
