//! Checkpoints of the frontier's database: every `checkpoint_interval_ms` and on an
//! admin's request, a hard-linked RocksDB snapshot goes to
//! `<state_dir>/checkpoints/<n>` (`n` counts up), and only the newest
//! `checkpoints_kept` are kept.
//!
//! A checkpoint is for recovery from a damaged live database (`Frontier::open` on
//! the checkpoint folder restarts from it); after a crash the live database with
//! its WAL is what the manager reopens, and it loses nothing. A failed checkpoint
//! is logged and tried again at the next interval: it never stops the crawl.
//!
//! This module does blocking file-system work (hard links, deleting old
//! checkpoints): milliseconds, on the core loop.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use crate::frontier::{Frontier, FrontierError};

/// Why a checkpoint could not be written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The checkpoints folder could not be created or listed.
    #[error("checkpoints folder {path}: {source}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// RocksDB could not write the checkpoint.
    #[error(transparent)]
    Frontier(#[from] FrontierError),
}

/// Where checkpoints go and when the next is due.
#[derive(Debug)]
pub(crate) struct Checkpoints {
    dir: PathBuf,
    keep: usize,
    interval: Option<Duration>,
    next: Option<Instant>,
}

impl Checkpoints {
    /// Checkpoints in `dir`, keeping `keep`, every `interval_ms` (0: only on demand).
    pub fn new(dir: PathBuf, keep: usize, interval_ms: u64, now: Instant) -> Self {
        let interval = (interval_ms > 0).then(|| Duration::from_millis(interval_ms));
        Self {
            dir,
            keep: keep.max(1),
            interval,
            next: interval.map(|i| now + i),
        }
    }

    /// Whether the periodic checkpoint is due.
    pub fn due(&self, now: Instant) -> bool {
        self.next.is_some_and(|n| now >= n)
    }

    /// When the periodic checkpoint is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.next
    }

    /// The periodic checkpoint, if due at `now`: written (a failure is logged and
    /// tried again at the next interval), and the next one scheduled.
    pub fn periodic(&mut self, frontier: &mut Frontier, now: Instant) {
        if !self.due(now) {
            return;
        }
        match self.take(frontier) {
            Ok(dir) => tracing::info!(dir = %dir.display(), "checkpoint written"),
            Err(e) => {
                tracing::error!(error = %e, "checkpoint failed; trying again at the next interval");
            }
        }
        if let Some(interval) = self.interval {
            self.next = Some(now + interval);
        }
    }

    /// Writes a checkpoint now, deletes the old ones; returns its folder.
    pub fn take(&mut self, frontier: &mut Frontier) -> Result<PathBuf, CheckpointError> {
        let folder = |source| CheckpointError::Folder {
            path: self.dir.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(folder)?;
        let mut numbers = numbered(&self.dir).map_err(folder)?;
        let n = numbers.last().map_or(1, |last| last + 1);
        let target = self.dir.join(n.to_string());
        frontier.checkpoint(&target)?;
        numbers.push(n);
        let excess = numbers.len().saturating_sub(self.keep);
        for old in &numbers[..excess] {
            let path = self.dir.join(old.to_string());
            if let Err(e) = std::fs::remove_dir_all(&path) {
                tracing::warn!(path = %path.display(), error = %e, "cannot delete an old checkpoint");
            }
        }
        Ok(target)
    }
}

/// The numbers of the checkpoint folders in `dir`, ascending.
fn numbered(dir: &Path) -> std::io::Result<Vec<u64>> {
    let mut numbers = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if let Some(n) = entry.file_name().to_str().and_then(|s| s.parse().ok()) {
            numbers.push(n);
        }
    }
    numbers.sort_unstable();
    Ok(numbers)
}

#[cfg(test)]
mod tests {
    use spool::Spool;

    use super::*;
    use crate::FrontierConfig;

    #[test]
    fn only_the_newest_checkpoints_are_kept_and_they_open() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        let mut frontier = Frontier::open(
            &dir.path().join("db"),
            spool.clone(),
            FrontierConfig::default(),
        )
        .unwrap();
        let now = Instant::now();
        let mut c = Checkpoints::new(dir.path().join("checkpoints"), 2, 1_000, now);
        assert!(!c.due(now));
        assert!(c.due(now + Duration::from_secs(1)));
        for _ in 0..3 {
            c.take(&mut frontier).unwrap();
        }
        assert_eq!(numbered(&dir.path().join("checkpoints")).unwrap(), [2, 3]);
        drop(frontier);
        let reopened = dir.path().join("checkpoints/3");
        Frontier::open(&reopened, spool, FrontierConfig::default()).unwrap();
    }
}
