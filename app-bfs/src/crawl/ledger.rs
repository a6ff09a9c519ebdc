//! The crawl's progress as it runs: the [`Progress`] record, the state folder its
//! file lives in, whether statistics or pages read changed since the last save,
//! and the crawl's `crawl.log` (whose length the progress file keeps) with the
//! seeds its reports account for. Every save of the progress file goes through here. It must never decide what the
//! counts are (the crawl loop counts); it only keeps them and says when they are
//! unsaved.

use std::path::{Path, PathBuf};

use crate::state::Progress;
use app_core::crawllog::CrawlLog;
use app_core::error::AppError;
use app_core::pause::DiskWait;

/// The progress record and its file.
#[derive(Debug)]
pub(crate) struct Ledger {
    /// What the crawl keeps across restarts.
    pub progress: Progress,
    dir: PathBuf,
    /// Statistics in `progress` changed since it was last saved.
    unsaved: bool,
    /// Pages were counted as read since the last save: saved before their batch
    /// leaves its folder (see [`Ledger::save_reads`]).
    reads_unsaved: bool,
    /// `crawl.log`, when on (`crawl_log`, the default; `app_core::crawllog`).
    pub log: Option<CrawlLog>,
    /// The seeds as the log writes their URLs, for the seeds report.
    pub seeds: Vec<String>,
}

impl Ledger {
    /// The progress saved in `dir`, or a fresh one.
    pub(crate) fn load(dir: PathBuf) -> Result<Self, AppError> {
        let progress = Progress::load(&dir)?.unwrap_or_default();
        Ok(Self {
            progress,
            dir,
            unsaved: false,
            reads_unsaved: false,
            log: None,
            seeds: Vec::new(),
        })
    }

    /// The state folder.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// A statistic changed: saved with the next save.
    pub(crate) fn touched(&mut self) {
        self.unsaved = true;
    }

    /// `n` pages of a batch were read: kept with the next save, which must come
    /// before the batch leaves its folder ([`Ledger::save_reads`]).
    pub(crate) fn pages_read(&mut self, n: u64) {
        self.progress.read.pages += n;
        self.reads_unsaved = true;
    }

    /// Saves now (a full disk is an error).
    pub(crate) fn save_now(&mut self) -> Result<(), AppError> {
        self.progress.save(&self.dir)?;
        self.unsaved = false;
        self.reads_unsaved = false;
        Ok(())
    }

    /// Saves, waiting out a full disk.
    pub(crate) fn save(&mut self, wait: &DiskWait) -> Result<(), AppError> {
        let dir = &self.dir;
        wait.run(&mut self.progress, |progress| progress.save(dir))?;
        self.unsaved = false;
        self.reads_unsaved = false;
        Ok(())
    }

    /// Saves if pages were counted as read since the last save: called before a
    /// batch leaves its folder, so that a crash after it can read the batch again
    /// (counted twice) but never lose its count.
    pub(crate) fn save_reads(&mut self, wait: &DiskWait) -> Result<(), AppError> {
        if self.reads_unsaved {
            self.save(wait)?;
        }
        Ok(())
    }

    /// Writes and fsyncs the staged crawl.log lines and sets the mark that the
    /// next save keeps; true when a step had inputs (then the caller saves before
    /// it removes them). Waits out a full disk.
    pub(crate) fn commit_log(&mut self, wait: &DiskWait) -> Result<bool, AppError> {
        let Some(log) = &mut self.log else {
            return Ok(false);
        };
        let mark = &mut self.progress.crawl_log;
        wait.run(log, |log| log.commit(mark))
    }

    /// Saves if only statistics changed since the last save.
    pub(crate) fn save_stats(&mut self, wait: &DiskWait) -> Result<(), AppError> {
        if self.unsaved {
            self.save(wait)?;
        }
        Ok(())
    }
}
