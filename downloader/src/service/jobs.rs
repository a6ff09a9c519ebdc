//! A session's jobs by where they are: [`Waiting`] to start (the FIFO queue in the
//! manager's order, and chained jobs held for the job they follow) and [`Running`]
//! (one task per job and the jobs chained after it, in a [`JoinSet`]). The session
//! (`session.rs`) decides when a job moves; these types own the collections and
//! their invariants: a job is in at most one place, at most one job is held after
//! another, and every running task maps back to its jobs.
//!
//! This module must never start, report or hand back a job itself. Memory O(jobs
//! waiting + running); every operation O(1) expected, the drains O(jobs).

use std::collections::{HashMap, VecDeque};
use std::future::Future;

use spool::protocol::{FetchJob, JobId};
use tokio::task::{Id, JoinError, JoinSet};

/// Jobs not started yet.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    /// Jobs waiting for a slot, in the manager's order.
    queue: VecDeque<FetchJob>,
    /// Chained jobs (`spool::protocol::After`) by the job they follow, until the
    /// first job of their chain starts and its task takes the chain along
    /// (`task::run`). At most one per job it follows.
    held: HashMap<JobId, FetchJob>,
}

impl Waiting {
    /// Jobs in the queue (held ones not counted).
    pub(crate) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Queues `job` behind the others.
    pub(crate) fn push(&mut self, job: FetchJob) {
        self.queue.push_back(job);
    }

    /// Holds `job` until `after` starts; gives it back (`Some`) if a job is held
    /// after `after` already.
    #[must_use]
    pub(crate) fn hold(&mut self, after: JobId, job: FetchJob) -> Option<FetchJob> {
        if self.held.contains_key(&after) {
            return Some(job);
        }
        self.held.insert(after, job);
        None
    }

    /// The first queued job, with its chain: the job held after it, the job held
    /// after that one, and so on, in order. O(chain).
    pub(crate) fn next(&mut self) -> Option<(FetchJob, Vec<FetchJob>)> {
        let job = self.queue.pop_front()?;
        let mut chain = Vec::new();
        let mut last = job.job;
        while let Some(next) = self.held.remove(&last) {
            last = next.job;
            chain.push(next);
        }
        Some((job, chain))
    }

    /// The job held after `job`, taken out.
    pub(crate) fn release(&mut self, job: JobId) -> Option<FetchJob> {
        self.held.remove(&job)
    }

    /// Every waiting job, taken out: the queue in order, then the held ones.
    pub(crate) fn drain(&mut self) -> Vec<FetchJob> {
        let held = self.held.drain().map(|(_, job)| job);
        self.queue.drain(..).chain(held).collect()
    }

    /// Drops every waiting job.
    pub(crate) fn clear(&mut self) {
        self.queue.clear();
        self.held.clear();
    }
}

/// Jobs running, one task per job and its chain.
#[derive(Debug, Default)]
pub(crate) struct Running {
    tasks: JoinSet<()>,
    /// The jobs of each task: the first, then its chain in order.
    jobs: HashMap<Id, Vec<JobId>>,
}

impl Running {
    /// Whether no task is running.
    pub(crate) fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Runs `task` for `jobs` (a job and its chain).
    pub(crate) fn spawn(
        &mut self,
        jobs: Vec<JobId>,
        task: impl Future<Output = ()> + Send + 'static,
    ) {
        let handle = self.tasks.spawn(task);
        self.jobs.insert(handle.id(), jobs);
    }

    /// The next task to end.
    pub(crate) async fn join_next(&mut self) -> Option<Result<(Id, ()), JoinError>> {
        self.tasks.join_next_with_id().await
    }

    /// Forgets an ended task; its jobs and the panic when it panicked (a bug).
    pub(crate) fn reap(
        &mut self,
        joined: Result<(Id, ()), JoinError>,
    ) -> Option<(Vec<JobId>, JoinError)> {
        let (id, panicked) = match joined {
            Ok((id, ())) => (id, None),
            Err(e) => (e.id(), e.is_panic().then_some(e)),
        };
        let job = self.jobs.remove(&id);
        job.zip(panicked)
    }

    /// Stops every task and waits until they are gone.
    pub(crate) async fn abort_all(&mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        self.jobs.clear();
    }

    /// Lets every task run on unwatched.
    pub(crate) fn detach_all(&mut self) {
        self.jobs.clear();
        self.tasks.detach_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use spool::Validators;
    use spool::protocol::{FetchLimits, FetchPurpose};

    fn job(n: u64) -> FetchJob {
        FetchJob {
            job: JobId(n),
            app: spool::AppId::new("app").expect("an app id"),
            url: format!("http://a.test/{n}"),
            addr: "127.0.0.1:80".parse().expect("an address"),
            purpose: FetchPurpose::Page,
            keep_alive: false,
            limits: FetchLimits {
                max_body_bytes: 1,
                connect_timeout_ms: 1,
                first_byte_timeout_ms: 1,
                total_timeout_ms: 1,
                min_ip_spacing_ms: 0,
                min_host_spacing_ms: 0,
            },
            depth: None,
            hops: None,
            validators: Validators::default(),
            after: None,
        }
    }

    fn ids(jobs: &[FetchJob]) -> Vec<JobId> {
        jobs.iter().map(|j| j.job).collect()
    }

    #[test]
    fn waiting_keeps_order_and_one_chained_job_per_job() {
        let mut w = Waiting::default();
        w.push(job(1));
        w.push(job(2));
        assert!(w.hold(JobId(1), job(3)).is_none());
        assert_eq!(w.hold(JobId(1), job(4)).map(|j| j.job), Some(JobId(4)));
        assert!(w.hold(JobId(3), job(6)).is_none());
        assert_eq!(w.queued(), 2);
        let (first, chain) = w.next().unwrap();
        assert_eq!(first.job, JobId(1));
        assert_eq!(
            ids(&chain),
            [JobId(3), JobId(6)],
            "the whole chain, in order"
        );
        assert!(w.hold(JobId(2), job(5)).is_none());
        let drained: Vec<JobId> = w.drain().into_iter().map(|j| j.job).collect();
        assert_eq!(drained, [JobId(2), JobId(5)]);
        assert!(w.drain().is_empty() && w.next().is_none());
    }
}
