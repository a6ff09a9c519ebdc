//! [`Unsent`]: what the manager still has to hear about a session's jobs: reports
//! not sent yet, and jobs reported `Stored` whose page batch is not published yet
//! (their `Committed` follows once it is).
//!
//! This module must never send anything itself: the session (`session.rs`) sends
//! the reports it takes from here. Memory O(reports not sent + jobs not committed).

use std::collections::HashSet;

use spool::protocol::{FetchReport, FetchResult, JobId};

/// Reports not sent, and jobs stored but not committed.
#[derive(Debug, Default)]
pub(crate) struct Unsent {
    reports: Vec<FetchReport>,
    /// Jobs reported `Stored` into a page batch that is not published yet.
    uncommitted: HashSet<JobId>,
}

impl Unsent {
    /// A job's report; `in_batch` when its page went into a batch not published
    /// yet.
    pub(crate) fn report(&mut self, report: FetchReport, in_batch: bool) {
        if in_batch {
            self.uncommitted.insert(report.job);
        }
        self.reports.push(report);
    }

    /// A job handed back unstarted.
    pub(crate) fn returned(&mut self, job: JobId) {
        self.reports.push(FetchReport {
            job,
            result: FetchResult::Returned,
        });
    }

    /// Whether `job` was waiting for its commit (it is not any more).
    pub(crate) fn commit(&mut self, job: JobId) -> bool {
        self.uncommitted.remove(&job)
    }

    /// The reports collected so far, taken out.
    pub(crate) fn take_reports(&mut self) -> Vec<FetchReport> {
        std::mem::take(&mut self.reports)
    }

    /// Forgets everything (a new connection).
    pub(crate) fn clear(&mut self) {
        self.reports.clear();
        self.uncommitted.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_stored_jobs_wait_for_their_commit() {
        let mut u = Unsent::default();
        let stored = FetchReport {
            job: JobId(1),
            result: FetchResult::Returned,
        };
        u.report(stored, true);
        u.returned(JobId(2));
        assert!(u.commit(JobId(1)));
        assert!(!u.commit(JobId(1)), "committed once");
        assert!(!u.commit(JobId(2)), "not stored");
        let jobs: Vec<JobId> = u.take_reports().iter().map(|r| r.job).collect();
        assert_eq!(jobs, [JobId(1), JobId(2)]);
        assert!(u.take_reports().is_empty());
    }
}
