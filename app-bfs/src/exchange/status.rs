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

/// One party's status file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Status {
    pub idle: bool,
    pub version: u64,
    /// Two-level mode: the assignment generation the party has reached (the
    /// coordinator's `generation=`, the newest it published; an agent's
    /// `sites_read=`, the newest it read). `None` in the other modes.
    pub sites: Option<u64>,
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
    /// The `idle` flag and assignment generation in our status file as last
    /// written.
    written_idle: Option<bool>,
    written_sites: Option<u64>,
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
            written_sites: None,
            written_at: None,
        })
    }

    fn path(&self, app: &str) -> PathBuf {
        self.dir.join(format!("{app}.status"))
    }

    /// Writes our status file if the idle flag or the assignment generation
    /// read (`sites`, two-level mode) changed, or it was never written; in
    /// two-level mode also while busy, at most every [`BUSY_STATUS_EVERY`], so
    /// the coordinator's balanced policy sees the pages so far.
    pub(super) fn set_idle(
        &mut self,
        idle: bool,
        sites: Option<u64>,
        c: &PartCounters,
        pages: u64,
    ) -> Result<(), AppError> {
        let stale = sites.is_some()
            && !idle
            && self
                .written_at
                .is_some_and(|t| t.elapsed() >= BUSY_STATUS_EVERY);
        if self.written_idle == Some(idle) && self.written_sites == sites && !stale {
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
             pages={}{}\n",
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
            pages,
            sites.map_or(String::new(), |g| format!(" sites_read={g}")),
        );
        let mut file = fs::File::create(&tmp).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        durable_rename(file, &tmp, &path)?;
        self.written_idle = Some(idle);
        self.written_sites = sites;
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
/// idle in both reads with unchanged versions, and no exchange file in between;
/// in two-level mode every party at the same assignment generation.
pub(crate) fn quiet(first: &[Option<Status>], in_flight: usize, second: &[Option<Status>]) -> bool {
    let all_idle = |s: &[Option<Status>]| s.iter().all(|s| s.as_ref().is_some_and(|s| s.idle));
    let mut named = first.iter().flatten().filter_map(|s| s.sites);
    let one_generation = named.next().is_none_or(|g| named.all(|n| n == g));
    all_idle(first) && in_flight == 0 && all_idle(second) && first == second && one_generation
}

/// Parses a status line (`idle=1 version=V ...`).
fn parse_status(text: &str) -> Option<Status> {
    let mut idle = None;
    let mut version = None;
    let mut sites = None;
    for word in text.split_whitespace() {
        match word.split_once('=')? {
            ("idle", v) => idle = Some(v == "1"),
            ("version", v) => version = v.parse().ok(),
            ("generation" | "sites_read", v) => sites = v.parse().ok(),
            _ => {}
        }
    }
    Some(Status {
        idle: idle?,
        version: version?,
        sites,
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
        Some(Status {
            idle,
            version,
            sites: None,
        })
    }

    fn at(version: u64, sites: u64) -> Option<Status> {
        Some(Status {
            idle: true,
            version,
            sites: Some(sites),
        })
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
        // Two-level: an agent that has not read the coordinator's newest
        // assignments (it may hold a root to request) keeps the crawl going.
        let behind = vec![at(1, 3), at(2, 4), at(3, 4)];
        assert!(!quiet(&behind, 0, &behind));
        let caught_up = vec![at(1, 4), at(2, 4), at(3, 4)];
        assert!(quiet(&caught_up, 0, &caught_up));
    }

    #[test]
    fn status_lines_parse() {
        let line = "idle=1 version=77 sent_files=2 sent_urls=9\n";
        assert_eq!(parse_status(line), st(true, 77));
        assert_eq!(parse_status("idle=0 version=3"), st(false, 3));
        assert_eq!(
            parse_status("idle=1 version=5 sites=2 sites_read=7"),
            at(5, 7)
        );
        assert_eq!(
            parse_status("idle=1 version=5 sites=9 reports=3 generation=7 assigned=4,5"),
            at(5, 7)
        );
        assert_eq!(parse_status("idle=1"), None);
        assert_eq!(parse_status("garbage"), None);
        assert_eq!(status_counters(line).get("sent_urls"), Some(&9));
    }
}
