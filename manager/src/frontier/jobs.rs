//! [`JobTable`]: the one table of jobs out at downloaders, from dispatch until the
//! page they stored is committed (published in a batch by the downloader).
//!
//! Each job is in exactly one entry, in one of three stages:
//!
//! - **out**: handed out by [`next_jobs`](super::Frontier::next_jobs) and not
//!   reported yet: the frontier's facts (host, purpose, app, borrowed origin) and,
//!   once the service hands it to a downloader
//!   ([`hand_out`](super::Frontier::hand_out)), the holder's facts ([`Held`]:
//!   which downloader, when, the address, app and URL);
//! - **awaiting commit**: a page reported `Stored` by its holder whose batch is not
//!   published yet: only the holder's facts (the frontier is done with the host;
//!   the URL left its queue at the report, into the `awaiting` family of the
//!   store, see `records`). A commit by its holder removes it; if the holder goes
//!   away first, its URL is queued again;
//! - **restored**: a page that was awaiting its commit when an earlier run of the
//!   manager stopped (read back from `awaiting` at open). Its holder was a
//!   connection of that run, so *any* downloader's commit naming the job removes it
//!   (job ids are never reused across runs: `META_JOB_CEILING`, and a downloader
//!   names a job only if it stored it). A downloader that survived the manager
//!   publishes its open batches and, on its next connection, sends `Committed` for
//!   the jobs of its earlier connections; what no downloader claims by the
//!   deadline ([`restored_due`](JobTable::restored_due), set at open about one
//!   batch age plus a reconnection later) died with its downloader, and its URL is
//!   queued again.
//!
//! So a report, a commit and a downloader's loss all read and change the same
//! entry, and cannot disagree. The table is in memory; what must survive a crash
//! is in the store: the URLs that were out are at the head of their queues, and
//! the pages awaiting their commit are in `awaiting` (see `records`).
//!
//! Cost: O(1) per job handed out, report and commit, and for the counts by holder
//! and by application (kept with the entries); O(entries) for a downloader's loss
//! and for the restored entries' deadline (rare: the scan finds them). Memory: one
//! entry per job out, awaiting commit or restored, bounded by the downloaders'
//! windows and open batches (of this run and, restored, of the run before). This
//! module must never touch a host, a queue or the store: `report` and `dispatch` do.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use spool::protocol::{FetchPurpose, JobId};
use spool::{AppId, Validators};

use super::hosts::HostId;
use super::records::AwaitingPage;

/// The downloader a job was handed to: the service's connection id.
pub(crate) type Holder = u64;

/// The frontier's facts about a job out.
#[derive(Debug, Clone)]
pub(super) struct JobInfo {
    pub host: HostId,
    pub purpose: FetchPurpose,
    /// The application of a page job.
    pub app: Option<AppId>,
    /// The origin a robots.txt redirect hop contacts on the host's behalf (see
    /// `borrowed`), when it is not the host's own.
    pub borrowed: Option<Arc<str>>,
}

/// A job's holder and what the service needs to know about it.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The downloader.
    pub holder: Holder,
    /// When it was handed over.
    pub sent: Instant,
    /// The address it was sent to.
    pub ip: IpAddr,
    /// Page or robots.txt.
    pub purpose: FetchPurpose,
    /// The application of the job.
    pub app: AppId,
    /// The URL.
    pub url: String,
    /// The request's `depth` hint, kept for a requeue.
    pub depth: Option<u32>,
    /// The request's `hops` hint, kept for a requeue.
    pub hops: Option<u32>,
    /// The request's validators, kept for a requeue.
    pub validators: Validators,
}

#[derive(Debug)]
enum Entry {
    Out {
        info: JobInfo,
        held: Option<Held>,
    },
    AwaitingCommit(Held),
    /// Awaiting its commit when an earlier run stopped (its holder is gone).
    Restored(AwaitingPage),
}

/// Job ids are reserved in blocks of this many, so a restarted manager never reuses an
/// id a downloader may still report on, without a write per dispatch.
const JOB_ID_BLOCK: u64 = 1 << 20;

/// Every job out or awaiting its commit, and the job ids. See the [module docs](self).
#[derive(Debug, Default)]
pub(super) struct JobTable {
    /// The next job id to give.
    next_id: u64,
    /// Ids below this are reserved (stored); a restart starts from it.
    id_ceiling: u64,
    entries: HashMap<JobId, Entry>,
    out: usize,
    out_by_holder: HashMap<Holder, usize>,
    out_by_app: HashMap<AppId, u64>,
    awaiting_by_app: HashMap<AppId, u64>,
    /// Restored entries in the table.
    restored: usize,
    /// When the restored entries no downloader claimed are given up on (unix ms).
    restored_until_ms: Option<u64>,
}

fn up<K: Eq + Hash, N: std::ops::AddAssign + From<u8>>(counts: &mut HashMap<K, N>, key: K) {
    *counts.entry(key).or_insert_with(|| N::from(0)) += N::from(1);
}

fn down<K: Eq + Hash, N: PartialEq + From<u8> + std::ops::SubAssign + PartialOrd>(
    counts: &mut HashMap<K, N>,
    key: &K,
) {
    if let Some(n) = counts.get_mut(key) {
        if *n <= N::from(1) {
            counts.remove(key);
        } else {
            *n -= N::from(1);
        }
    }
}

impl JobTable {
    /// An empty table whose ids start at `next_id` (the stored ceiling of the run
    /// before, so no id is given twice).
    pub fn starting_at(next_id: u64) -> JobTable {
        JobTable {
            next_id,
            id_ceiling: next_id,
            ..JobTable::default()
        }
    }

    /// A new job id. O(1).
    pub fn new_id(&mut self) -> JobId {
        let id = JobId(self.next_id);
        self.next_id += 1;
        id
    }

    /// Reserves a new block of ids when the current one is used up: the new ceiling,
    /// which the caller stores (`META_JOB_CEILING`) before any of its ids leaves.
    pub fn reserve_ids(&mut self) -> Option<u64> {
        if self.next_id < self.id_ceiling {
            return None;
        }
        self.id_ceiling = self.next_id + JOB_ID_BLOCK;
        Some(self.id_ceiling)
    }

    /// `job` was handed out by the frontier.
    pub fn start(&mut self, job: JobId, info: JobInfo) {
        if let Some(app) = &info.app {
            up(&mut self.out_by_app, app.clone());
        }
        self.out += 1;
        self.entries.insert(job, Entry::Out { info, held: None });
    }

    /// The frontier's facts about `job`, if it is out.
    pub fn info(&self, job: JobId) -> Option<&JobInfo> {
        match self.entries.get(&job) {
            Some(Entry::Out { info, .. }) => Some(info),
            _ => None,
        }
    }

    /// `job` (out) went to `held.holder`; false if it is not out or already held.
    pub fn hand_out(&mut self, job: JobId, new: Held) -> bool {
        match self.entries.get_mut(&job) {
            Some(Entry::Out {
                held: held @ None, ..
            }) => {
                up(&mut self.out_by_holder, new.holder);
                *held = Some(new);
                true
            }
            _ => false,
        }
    }

    /// The holder's facts about `job`, if it is out and held.
    pub fn held(&self, job: JobId) -> Option<&Held> {
        match self.entries.get(&job) {
            Some(Entry::Out { held, .. }) => held.as_ref(),
            _ => None,
        }
    }

    /// Removes `job` (out): it was reported, returned or lost.
    pub fn finish(&mut self, job: JobId) -> Option<(JobInfo, Option<Held>)> {
        if !matches!(self.entries.get(&job), Some(Entry::Out { .. })) {
            return None;
        }
        let Some(Entry::Out { info, held }) = self.entries.remove(&job) else {
            return None;
        };
        self.out = self.out.saturating_sub(1);
        if let Some(app) = &info.app {
            down(&mut self.out_by_app, app);
        }
        if let Some(h) = &held {
            down(&mut self.out_by_holder, &h.holder);
        }
        Some((info, held))
    }

    /// `job`, finished, stored a page its holder has not committed yet.
    pub fn await_commit(&mut self, job: JobId, held: Held) {
        up(&mut self.awaiting_by_app, held.app.clone());
        self.entries.insert(job, Entry::AwaitingCommit(held));
    }

    /// `job` awaited its commit when an earlier run stopped: it waits for a commit
    /// from any downloader (until the deadline [`wait_for_claims`] sets). O(1).
    ///
    /// [`wait_for_claims`]: JobTable::wait_for_claims
    pub fn restore(&mut self, job: JobId, page: AwaitingPage) {
        up(&mut self.awaiting_by_app, page.app.clone());
        self.restored += 1;
        self.entries.insert(job, Entry::Restored(page));
    }

    /// The restored entries not claimed by `until_ms` (unix ms) are given up on
    /// then; without restored entries this does nothing. Before it is called they
    /// wait for ever.
    pub fn wait_for_claims(&mut self, until_ms: u64) {
        if self.restored > 0 {
            self.restored_until_ms = Some(until_ms);
        }
    }

    /// `holder` committed `job`: the application of the page, if it awaited that
    /// (from `holder`, or restored: from anyone).
    pub fn commit(&mut self, holder: Holder, job: JobId) -> Option<AppId> {
        let app = match self.entries.get(&job) {
            Some(Entry::AwaitingCommit(h)) if h.holder == holder => h.app.clone(),
            Some(Entry::Restored(page)) => {
                self.restored -= 1;
                page.app.clone()
            }
            _ => return None,
        };
        self.entries.remove(&job);
        down(&mut self.awaiting_by_app, &app);
        if self.restored == 0 {
            self.restored_until_ms = None;
        }
        Some(app)
    }

    /// When the restored entries not claimed yet are given up on, if any are left.
    pub fn restored_deadline(&self) -> Option<u64> {
        self.restored_until_ms
    }

    /// Whether restored entries wait and their deadline has passed at `now_ms`.
    pub fn restored_due(&self, now_ms: u64) -> bool {
        self.restored_until_ms.is_some_and(|until| until <= now_ms)
    }

    /// Removes the restored entries no downloader claimed, in job order: their
    /// pages died with their downloader. O(entries).
    pub fn take_restored(&mut self) -> Vec<(JobId, AwaitingPage)> {
        let mut jobs: Vec<JobId> = self
            .entries
            .iter()
            .filter(|(_, e)| matches!(e, Entry::Restored(_)))
            .map(|(job, _)| *job)
            .collect();
        jobs.sort_unstable();
        self.restored = 0;
        self.restored_until_ms = None;
        jobs.into_iter()
            .filter_map(|job| match self.entries.remove(&job) {
                Some(Entry::Restored(page)) => {
                    down(&mut self.awaiting_by_app, &page.app);
                    Some((job, page))
                }
                _ => None,
            })
            .collect()
    }

    /// What `holder` holds, in job order: its jobs out (left in the table, for the
    /// frontier to finish) and its pages awaiting commit (removed).
    pub fn take_holder(&mut self, holder: Holder) -> (Vec<JobId>, Vec<(JobId, Held)>) {
        let mut out = Vec::new();
        let mut awaiting = Vec::new();
        for (job, entry) in &self.entries {
            match entry {
                Entry::Out { held: Some(h), .. } if h.holder == holder => out.push(*job),
                Entry::AwaitingCommit(h) if h.holder == holder => awaiting.push(*job),
                _ => {}
            }
        }
        out.sort_unstable();
        awaiting.sort_unstable();
        let pages = awaiting
            .into_iter()
            .filter_map(|job| match self.entries.remove(&job) {
                Some(Entry::AwaitingCommit(held)) => {
                    down(&mut self.awaiting_by_app, &held.app);
                    Some((job, held))
                }
                _ => None,
            })
            .collect();
        (out, pages)
    }

    /// Jobs out (held or not).
    pub fn out_len(&self) -> usize {
        self.out
    }

    /// Jobs out held by `holder`.
    pub fn out_of_holder(&self, holder: Holder) -> usize {
        self.out_by_holder.get(&holder).copied().unwrap_or(0)
    }

    /// Page jobs out per application.
    pub fn out_by_app(&self) -> &HashMap<AppId, u64> {
        &self.out_by_app
    }

    /// Page jobs of `app` out.
    pub fn out_of_app(&self, app: &AppId) -> u64 {
        self.out_by_app.get(app).copied().unwrap_or(0)
    }

    /// Pages of `app` stored and awaiting their commit.
    pub fn awaiting_of(&self, app: &AppId) -> u64 {
        self.awaiting_by_app.get(app).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(name: &str) -> AppId {
        AppId::new(name).unwrap()
    }

    fn page(host: u64, a: &str) -> JobInfo {
        JobInfo {
            host,
            purpose: FetchPurpose::Page,
            app: Some(app(a)),
            borrowed: None,
        }
    }

    fn held(holder: Holder, a: &str) -> Held {
        Held {
            holder,
            sent: Instant::now(),
            ip: IpAddr::from([127, 0, 0, 1]),
            purpose: FetchPurpose::Page,
            app: app(a),
            url: format!("http://{a}.test/"),
            depth: Some(1),
            hops: None,
            validators: Validators::default(),
        }
    }

    #[test]
    fn a_job_moves_from_out_to_awaiting_commit_to_gone_and_the_counts_follow() {
        let mut t = JobTable::default();
        t.start(JobId(1), page(1, "a"));
        t.start(JobId(2), page(2, "a"));
        assert_eq!((t.out_len(), t.out_of_app(&app("a"))), (2, 2));
        assert!(t.hand_out(JobId(1), held(7, "a")));
        assert!(!t.hand_out(JobId(1), held(8, "a")), "held once");
        assert!(!t.hand_out(JobId(9), held(7, "a")), "unknown job");
        assert_eq!(t.out_of_holder(7), 1);
        assert_eq!(t.held(JobId(1)).map(|h| h.holder), Some(7));
        let (info, h) = t.finish(JobId(1)).unwrap();
        assert_eq!(info.host, 1);
        t.await_commit(JobId(1), h.unwrap());
        assert!(t.info(JobId(1)).is_none(), "no longer out");
        assert!(
            t.finish(JobId(1)).is_none(),
            "a second report finds nothing"
        );
        assert_eq!((t.out_len(), t.out_of_holder(7)), (1, 0));
        assert_eq!(t.awaiting_of(&app("a")), 1);
        assert_eq!(t.commit(8, JobId(1)), None, "only its holder commits it");
        assert_eq!(t.commit(7, JobId(1)), Some(app("a")));
        assert_eq!(t.commit(7, JobId(1)), None, "committed once");
        assert_eq!(t.awaiting_of(&app("a")), 0);
    }

    #[test]
    fn a_lost_holder_gives_back_its_jobs_and_its_uncommitted_pages_only() {
        let mut t = JobTable::default();
        for (job, holder) in [(3, 7), (1, 7), (2, 8), (4, 7), (5, 7)] {
            t.start(JobId(job), page(job, "a"));
            t.hand_out(JobId(job), held(holder, "a"));
        }
        for job in [4, 5] {
            let (_, h) = t.finish(JobId(job)).unwrap();
            t.await_commit(JobId(job), h.unwrap());
        }
        let (out, pages) = t.take_holder(7);
        assert_eq!(out, [JobId(1), JobId(3)], "in job order, still out");
        assert_eq!(pages.len(), 2);
        assert_eq!(t.awaiting_of(&app("a")), 0);
        assert_eq!(t.out_len(), 3, "the frontier finishes the jobs out");
        assert_eq!(t.out_of_holder(8), 1);
    }

    fn awaiting(url: &str) -> AwaitingPage {
        AwaitingPage {
            app: app("a"),
            url: url.to_owned(),
            depth: Some(2),
            hops: None,
            validators: Validators::default(),
        }
    }

    #[test]
    fn a_restored_page_is_claimed_by_any_downloader_once_or_given_up_at_its_deadline() {
        let mut t = JobTable::starting_at(100);
        assert_eq!(t.restored_deadline(), None);
        for job in [7, 3, 5] {
            t.restore(JobId(job), awaiting(&format!("http://a.test/{job}")));
        }
        assert!(!t.restored_due(u64::MAX), "no deadline yet");
        t.wait_for_claims(1_000);
        assert_eq!(t.awaiting_of(&app("a")), 3);
        assert!(t.info(JobId(3)).is_none(), "not out");
        assert!(t.held(JobId(3)).is_none(), "not held");
        assert_eq!(t.commit(42, JobId(5)), Some(app("a")), "any holder");
        assert_eq!(t.commit(43, JobId(5)), None, "claimed once");
        assert!(!t.restored_due(999));
        assert!(t.restored_due(1_000));
        let left: Vec<u64> = t.take_restored().iter().map(|(j, _)| j.0).collect();
        assert_eq!(left, [3, 7], "the unclaimed ones, in job order");
        assert_eq!(t.awaiting_of(&app("a")), 0);
        assert_eq!(t.restored_deadline(), None);
        assert!(t.take_restored().is_empty());
        t.wait_for_claims(2_000);
        assert_eq!(t.restored_deadline(), None, "nothing to wait for");
        t.restore(JobId(9), awaiting("http://a.test/9"));
        t.wait_for_claims(2_000);
        assert_eq!(t.commit(1, JobId(9)), Some(app("a")));
        assert_eq!(t.restored_deadline(), None, "none left to wait for");
    }
}
