//! What a component says about itself beyond its load ([`Message::Status`]):
//! whether it is paused, and why; an application adds its own figures (host
//! budgets, and its part's exchange in a split crawl: [`AppFigures`]). Components
//! send it when it changes and again on every new connection; the manager keeps
//! the last one per component and shows it on the admin page
//! ([`ComponentStatus::state`]), next to its own ([`StatusSnapshot::pause`]).
//!
//! Bounded: a pause names one path (cut to [`MAX_PATH_LEN`] bytes), the figures
//! list at most [`MAX_TOP_HOSTS`] hosts and at most [`MAX_DETECTORS`] trap
//! detectors with [`MAX_TRAP_EXAMPLES`] URLs each, a seed-by-seed crawl's at most
//! [`MAX_WORKERS_SHOWN`] workers and [`MAX_TOP_PARTIES`] parties; nothing here
//! grows with the crawl.
//!
//! [`Message::Status`]: super::Message::Status
//! [`ComponentStatus::state`]: super::ComponentStatus::state
//! [`StatusSnapshot::pause`]: super::StatusSnapshot::pause

use serde::{Deserialize, Serialize};

/// Longest path a [`Pause`] carries, in bytes.
pub const MAX_PATH_LEN: usize = 512;

/// Most hosts an [`AppFigures::top_cut`] lists.
pub const MAX_TOP_HOSTS: usize = 5;

/// Most detectors an [`AppFigures::traps`] lists.
pub const MAX_DETECTORS: usize = 16;

/// Most URLs a [`TrapCut`] shows.
pub const MAX_TRAP_EXAMPLES: usize = 3;

/// Most workers a [`SeedFigures::held`] lists (the rest are left out).
pub const MAX_WORKERS_SHOWN: usize = 64;

/// Most parties a [`SeedFigures::top_parties`] lists.
pub const MAX_TOP_PARTIES: usize = 5;

/// A component's own state, as it last reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentState {
    /// Why the component stopped taking new work, if it did.
    pub pause: Option<Pause>,
    /// An application's figures (`None` from other components).
    pub app: Option<AppFigures>,
    /// The component is stopping on its own (a downloader told to shut down): it
    /// takes no new work and answers any it is still sent as returned. The
    /// manager sends a downloader that says so no more jobs. (Absent in JSON:
    /// false.)
    #[serde(default)]
    pub draining: bool,
}

/// An application's figures for the admin page: counts and a top few, never a
/// table that grows with the crawl.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppFigures {
    /// Hosts whose page budget is used up (at least one URL cut).
    pub hosts_cut: u64,
    /// URLs cut by host budgets, all hosts.
    pub urls_cut: u64,
    /// The hosts with the most URLs cut, most first (at most [`MAX_TOP_HOSTS`]).
    pub top_cut: Vec<BudgetCut>,
    /// Pages stored by this application.
    pub pages: u64,
    /// In a crawl split into parts: this part's exchange.
    pub part: Option<PartFigures>,
    /// Every trap detector, cutting or not, in the application's order (at most
    /// [`MAX_DETECTORS`]).
    pub traps: Vec<TrapCut>,
    /// URLs in the crawl's scope cut and not requested since, by rule (at most
    /// [`MAX_CUT_RULES`]): a crawl with any is not complete. Detector and depth
    /// cuts are counted as they happen; the end's figures leave out those the
    /// crawl requested by another way.
    pub cuts: Vec<RuleCut>,
    /// The crawl's scope (`site (16 seed sites)`, `open`, ...).
    pub scope: String,
    /// A seed-by-seed crawl's seeds and parties (`None` from the breadth-first
    /// crawl; boxed so that every message stays as small as before).
    pub seeds: Option<Box<SeedFigures>>,
}

/// A seed-by-seed crawl's figures: its seeds, its workers, its biggest parties.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedFigures {
    /// `distributor` or `free`.
    pub balance: String,
    /// Seeds not yet handed to a worker.
    pub queued: u64,
    /// Parties under way.
    pub active: u64,
    /// Parties over.
    pub finished: u64,
    /// Seeds the distributor moved between workers.
    pub moved: u64,
    /// Seeds each worker holds (the first [`MAX_WORKERS_SHOWN`] workers).
    pub held: Vec<u32>,
    /// The active parties with the most pages, most first (at most
    /// [`MAX_TOP_PARTIES`]).
    pub top_parties: Vec<PartyPages>,
}

/// One party and the pages it has so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartyPages {
    /// Its seed URL.
    pub seed: String,
    /// Pages that came back to it.
    pub pages: u64,
}

/// Most rules an [`AppFigures::cuts`] lists.
pub const MAX_CUT_RULES: usize = 16;

/// The in-scope URLs one rule cut (`host_ceiling`, `depth`, a detector's name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleCut {
    /// The rule's name.
    pub rule: String,
    /// Distinct URLs cut.
    pub urls: u64,
    /// Distinct hosts among them.
    pub hosts: u64,
}

/// What one trap detector cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrapCut {
    /// The detector's name (`sequence`, `date_pages`, ...).
    pub detector: String,
    /// Links it cut over the crawl.
    pub cut: u64,
    /// The last few URLs it cut, oldest first (at most [`MAX_TRAP_EXAMPLES`]).
    pub examples: Vec<String>,
}

/// One host over its budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetCut {
    /// The host (reversed, as the application keys it: `test.acme17.www`).
    pub host: String,
    /// Its budget now, in pages.
    pub budget: u64,
    /// URLs requested.
    pub requested: u64,
    /// URLs cut.
    pub cut: u64,
    /// Distinct other sites seen linking to it.
    pub linking_sites: u64,
}

/// One part of a crawl split into parts (DESIGN.md section 10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartFigures {
    /// This part's number, from 0.
    pub part: u32,
    /// The number of parts.
    pub parts: u32,
    /// URLs sent to other parts (exchange files published).
    pub urls_out: u64,
    /// URLs received from other parts and applied.
    pub urls_in: u64,
    /// Two-level mode: sites the coordinator assigned to this part (0 otherwise).
    pub sites_assigned: u64,
    /// Two-level mode: sites this part reported to the coordinator.
    pub sites_reported: u64,
    /// Two-level mode: URLs parked now, waiting for their site's assignment.
    pub parked: u64,
}

/// A component stopped taking new work that would write somewhere, keeps what it
/// has, and retries by itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    /// Why.
    pub reason: PauseReason,
    /// Where the write failed (a folder or file; cut to [`MAX_PATH_LEN`] bytes).
    pub path: String,
    /// When the pause began, Unix milliseconds.
    pub since_ms: u64,
    /// The longest wait between two retries, in milliseconds.
    pub retry_ms: u64,
}

/// Why a component paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseReason {
    /// A write failed with `ENOSPC` or `EDQUOT`: the file system is full.
    DiskFull,
}

impl Pause {
    /// A disk-full pause at `path`, beginning now.
    pub fn disk_full(path: &std::path::Path, retry_ms: u64) -> Self {
        let mut path = path.display().to_string();
        if path.len() > MAX_PATH_LEN {
            let mut cut = MAX_PATH_LEN;
            while !path.is_char_boundary(cut) {
                cut -= 1;
            }
            path.truncate(cut);
        }
        let since_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Self {
            reason: PauseReason::DiskFull,
            path,
            since_ms,
            retry_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_path_is_cut_on_a_char_boundary() {
        let long = "é".repeat(400);
        let p = Pause::disk_full(std::path::Path::new(&long), 1000);
        assert!(p.path.len() <= MAX_PATH_LEN);
        assert!(long.starts_with(&p.path));
        assert_eq!(p.reason, PauseReason::DiskFull);
        assert!(p.since_ms > 0);
    }
}
