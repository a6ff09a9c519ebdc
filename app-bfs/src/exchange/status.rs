//! The end-of-crawl check of a split crawl (see the [module docs](super),
//! "Termination"): this part's status file `<root>/parts/<app>.status`, every
//! party's status read back, and the exchange files still anywhere.
//!
//! It must never decide that the crawl is over by itself: [`quiet`] is the rule,
//! and the crawl's completion applies it to two reads.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use spool::SpoolDir;
use spool::publish::durable_rename;

use crate::state::PartCounters;
use app_core::error::AppError;

/// How often a busy two-level agent rewrites its status file (its pages so far).
const BUSY_STATUS_EVERY: Duration = Duration::from_secs(1);

/// One part's status file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Status {
    pub idle: bool,
    pub version: u64,
}

/// The status files and exchange folders of every party of a split crawl.
pub(super) struct StatusBoard {
    /// `<root>/parts/`.
    dir: PathBuf,
    /// Every party's id (the parts', then a two-level crawl's coordinator).
    apps: Vec<String>,
    own_app: String,
    /// Every party's exchange folder, for the termination check.
    folders: Vec<SpoolDir>,
    /// The `idle` flag in our status file as last written.
    written_idle: Option<bool>,
    /// When our status file was last written.
    written_at: Option<Instant>,
}

impl StatusBoard {
    /// The board in `dir` (created: every part makes it, each on its own machine).
    pub(super) fn open(
        dir: PathBuf,
        apps: Vec<String>,
        own_app: String,
        folders: Vec<SpoolDir>,
    ) -> Result<Self, AppError> {
        spool::layout::create_dir_all_shared(&dir).map_err(|source| AppError::File {
            path: dir.clone(),
            source,
        })?;
        Ok(Self {
            dir,
            apps,
            own_app,
            folders,
            written_idle: None,
            written_at: None,
        })
    }

    fn path(&self, app: &str) -> PathBuf {
        self.dir.join(format!("{app}.status"))
    }

    /// Writes our status file if the idle flag changed (or was never written);
    /// with `busy_too` (two-level mode) also while busy, at most every
    /// [`BUSY_STATUS_EVERY`], so the coordinator's balanced policy sees the pages
    /// so far.
    pub(super) fn set_idle(
        &mut self,
        idle: bool,
        busy_too: bool,
        c: &PartCounters,
        pages: u64,
    ) -> Result<(), AppError> {
        let stale = busy_too
            && !idle
            && self
                .written_at
                .is_some_and(|t| t.elapsed() >= BUSY_STATUS_EVERY);
        if self.written_idle == Some(idle) && !stale {
            return Ok(());
        }
        self.written_at = Some(Instant::now());
        let path = self.path(&self.own_app);
        let tmp = self.dir.join(format!(".{}.status.tmp", self.own_app));
        let io = |source| AppError::File {
            path: tmp.clone(),
            source,
        };
        let text = format!(
            "idle={} version={} sent_files={} sent_urls={} applied_files={} applied_urls={} \
             dropped={} kept={} crossed={} parked={} released={} reported={} sites={} \
             pages={}\n",
            u8::from(idle),
            spool::name::now_micros(),
            c.sent_files,
            c.sent_urls,
            c.applied_files,
            c.applied_urls,
            c.dropped,
            c.kept,
            c.crossed,
            c.parked,
            c.released,
            c.reported,
            c.sites,
            pages
        );
        let mut file = fs::File::create(&tmp).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        durable_rename(file, &tmp, &path)?;
        self.written_idle = Some(idle);
        Ok(())
    }

    /// Every party's status, in part order; `None` for one without a (readable)
    /// status file yet.
    pub(super) fn statuses(&self) -> Vec<Option<Status>> {
        self.apps
            .iter()
            .map(|app| {
                fs::read_to_string(self.path(app))
                    .ok()
                    .and_then(|t| parse_status(&t))
            })
            .collect()
    }

    /// Exchange files anywhere: waiting in a folder or claimed by their receiver.
    pub(super) fn in_flight(&self) -> Result<usize, AppError> {
        let mut n = 0;
        for dir in &self.folders {
            n += dir.list()?.len();
            n += files_under(&dir.claimed_root());
        }
        Ok(n)
    }
}

/// Rule for the end of an exchange-mode crawl (see the module docs): every part
/// idle in both reads with unchanged versions, and no exchange file in between.
pub(crate) fn quiet(first: &[Option<Status>], in_flight: usize, second: &[Option<Status>]) -> bool {
    let all_idle = |s: &[Option<Status>]| s.iter().all(|s| s.as_ref().is_some_and(|s| s.idle));
    all_idle(first) && in_flight == 0 && all_idle(second) && first == second
}

/// Parses a status line (`idle=1 version=V ...`).
fn parse_status(text: &str) -> Option<Status> {
    let mut idle = None;
    let mut version = None;
    for word in text.split_whitespace() {
        match word.split_once('=')? {
            ("idle", v) => idle = Some(v == "1"),
            ("version", v) => version = v.parse().ok(),
            _ => {}
        }
    }
    Some(Status {
        idle: idle?,
        version: version?,
    })
}

/// The counters of a status file, by name (for the metrics).
pub fn status_counters(text: &str) -> BTreeMap<String, u64> {
    text.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
        .collect()
}

/// Files in the folders directly under `dir` (claimed files, one folder per consumer).
fn files_under(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| fs::read_dir(e.path()).map_or(0, |d| d.flatten().count()))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(idle: bool, version: u64) -> Option<Status> {
        Some(Status { idle, version })
    }

    #[test]
    fn quiet_needs_all_idle_unchanged_and_nothing_in_flight() {
        let a = vec![st(true, 1), st(true, 2)];
        assert!(quiet(&a, 0, &a));
        assert!(!quiet(&a, 1, &a), "a file in flight");
        assert!(!quiet(&a, 0, &[st(true, 1), st(true, 3)]), "a part worked");
        assert!(!quiet(
            &[st(true, 1), st(false, 2)],
            0,
            &[st(true, 1), st(false, 2)]
        ));
        assert!(
            !quiet(&[st(true, 1), None], 0, &[st(true, 1), None]),
            "not started"
        );
    }

    #[test]
    fn status_lines_parse() {
        let line = "idle=1 version=77 sent_files=2 sent_urls=9\n";
        assert_eq!(parse_status(line), st(true, 77));
        assert_eq!(parse_status("idle=0 version=3"), st(false, 3));
        assert_eq!(parse_status("idle=1"), None);
        assert_eq!(parse_status("garbage"), None);
        assert_eq!(status_counters(line).get("sent_urls"), Some(&9));
    }
}
