//! [`Pending`]: the jobs of a session that have no report yet (queued or running),
//! counted per application, and the applications whose page batch should be
//! published as soon as none of their jobs is pending any more.
//!
//! That last part is the downloader's half of "eager when idle, batched when busy"
//! (DESIGN.md section 2): while jobs of an application are in flight, its page batch
//! grows and is published by size or age; when the last one ends, the application
//! has nothing more coming from this downloader, so the batch is published at once
//! instead of waiting for its age. A breadth-first level then costs a round trip,
//! not `max_batch_age_ms`.
//!
//! This module must never decide anything about the network or the spool: it only
//! counts. Memory O(jobs pending + applications); every operation O(1) expected.

use std::collections::{HashMap, HashSet};

use spool::AppId;
use spool::protocol::JobId;

/// Jobs without a report, and which applications wait for a publish.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    jobs: HashMap<JobId, AppId>,
    per_app: HashMap<AppId, usize>,
    /// Applications with a page stored since their batch was last asked out.
    stored: HashSet<AppId>,
}

impl Pending {
    /// Adds `job`; false if it is already pending.
    pub(crate) fn insert(&mut self, job: JobId, app: &AppId) -> bool {
        if self.jobs.contains_key(&job) {
            return false;
        }
        self.jobs.insert(job, app.clone());
        *self.per_app.entry(app.clone()).or_default() += 1;
        true
    }

    /// Whether `job` is pending.
    pub(crate) fn contains(&self, job: JobId) -> bool {
        self.jobs.contains_key(&job)
    }

    /// Removes `job`; its application if it was pending.
    pub(crate) fn remove(&mut self, job: JobId) -> Option<AppId> {
        let app = self.jobs.remove(&job)?;
        if let Some(n) = self.per_app.get_mut(&app) {
            *n -= 1;
            if *n == 0 {
                self.per_app.remove(&app);
            }
        }
        Some(app)
    }

    /// A page of `app` went into its open batch.
    pub(crate) fn stored(&mut self, app: AppId) {
        self.stored.insert(app);
    }

    /// The applications that had a page stored and have no job pending any more:
    /// their batches should be published now. Each is returned once per batch.
    pub(crate) fn take_idle(&mut self) -> Vec<AppId> {
        if self.stored.is_empty() {
            return Vec::new();
        }
        let idle: Vec<AppId> = self
            .stored
            .iter()
            .filter(|app| !self.per_app.contains_key(*app))
            .cloned()
            .collect();
        for app in &idle {
            self.stored.remove(app);
        }
        idle
    }

    /// Number of jobs pending.
    pub(crate) fn len(&self) -> usize {
        self.jobs.len()
    }

    /// No job pending.
    pub(crate) fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Removes every job; returns their ids.
    pub(crate) fn drain(&mut self) -> Vec<JobId> {
        self.per_app.clear();
        self.jobs.drain().map(|(job, _)| job).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(name: &str) -> AppId {
        AppId::new(name).expect("valid app id")
    }

    #[test]
    fn an_app_is_idle_once_its_last_job_ends() {
        let (a, b) = (app("a"), app("b"));
        let mut p = Pending::default();
        assert!(p.insert(JobId(1), &a));
        assert!(p.insert(JobId(2), &a));
        assert!(p.insert(JobId(3), &b));
        assert!(!p.insert(JobId(1), &a), "a pending job is not added twice");
        assert_eq!(p.remove(JobId(1)), Some(a.clone()));
        p.stored(a.clone());
        assert!(p.take_idle().is_empty(), "job 2 of a is still pending");
        assert_eq!(p.remove(JobId(3)), Some(b.clone()));
        p.stored(b.clone());
        assert_eq!(p.take_idle(), vec![b.clone()]);
        assert!(p.take_idle().is_empty(), "asked once per batch");
        assert_eq!(p.remove(JobId(2)), Some(a.clone()));
        assert_eq!(p.take_idle(), vec![a]);
        assert_eq!(p.remove(JobId(2)), None);
        assert!(p.is_empty());
    }

    #[test]
    fn drain_forgets_every_job() {
        let a = app("a");
        let mut p = Pending::default();
        p.insert(JobId(7), &a);
        p.insert(JobId(8), &a);
        let mut ids = p.drain();
        ids.sort_by_key(|j| j.0);
        assert_eq!(ids, vec![JobId(7), JobId(8)]);
        assert_eq!(p.len(), 0);
        p.stored(a.clone());
        assert_eq!(p.take_idle(), vec![a]);
    }
}
