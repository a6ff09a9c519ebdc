//! The crawl's progress as it runs: the [`Progress`] record, the state folder its
//! file lives in, and whether statistics changed since the last save. Every save of
//! the progress file goes through here. It must never decide what the counts are
//! (the crawl loop counts); it only keeps them and says when they are unsaved.

use std::path::{Path, PathBuf};

use crate::service::error::AppError;
use crate::service::pause::DiskWait;
use crate::service::state::Progress;

/// The progress record and its file.
#[derive(Debug)]
pub(crate) struct Ledger {
    /// What the crawl keeps across restarts.
    pub progress: Progress,
    dir: PathBuf,
    /// Statistics in `progress` changed since it was last saved.
    unsaved: bool,
}

impl Ledger {
    /// The progress saved in `dir`, or a fresh one.
    pub(crate) fn load(dir: PathBuf) -> Result<Self, AppError> {
        let progress = Progress::load(&dir)?.unwrap_or_default();
        Ok(Self {
            progress,
            dir,
            unsaved: false,
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

    /// Saves now (a full disk is an error).
    pub(crate) fn save_now(&mut self) -> Result<(), AppError> {
        self.progress.save(&self.dir)?;
        self.unsaved = false;
        Ok(())
    }

    /// Saves, waiting out a full disk.
    pub(crate) fn save(&mut self, wait: &DiskWait) -> Result<(), AppError> {
        let dir = &self.dir;
        wait.run(&mut self.progress, |progress| progress.save(dir))?;
        self.unsaved = false;
        Ok(())
    }

    /// Saves if only statistics changed since the last save.
    pub(crate) fn save_stats(&mut self, wait: &DiskWait) -> Result<(), AppError> {
        if self.unsaved {
            self.save(wait)?;
        }
        Ok(())
    }
}
