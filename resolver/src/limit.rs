//! The bound on concurrent queries, changeable at run time (`SetConcurrency`), and
//! the load counters heartbeats report.
//!
//! A tokio [`Semaphore`] holds one permit per allowed query. Raising the limit adds
//! permits. Lowering it forgets the permits nobody holds; the rest becomes a *debt*
//! paid by forgetting permits as their queries finish, so no running query is
//! cancelled and none starts until the number running is under the new limit.
//! Invariant: available + held - debt = limit.
//!
//! The in-flight counter is raised after a permit is taken and lowered before it is
//! given back, so it never exceeds the limit: tests read its peak to check the bound.
//!
//! Every operation is O(1); the mutex is held for a few instructions and never
//! across an `.await`, so it can never block the runtime.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::config::MAX_CONCURRENCY;

/// A snapshot of the resolver's load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Queries running now.
    pub in_flight: u32,
    /// The most queries that ever ran at once.
    pub peak_in_flight: u32,
    /// Names waiting for a free query slot.
    pub queued: u32,
    /// Names answered since start (positive or negative, queries and literals).
    pub resolved: u64,
    /// The current concurrency limit.
    pub concurrency: u32,
}

/// The limit and counters; shared by every query of one [`Resolver`](crate::Resolver).
#[derive(Debug)]
pub(crate) struct Limiter {
    semaphore: Semaphore,
    state: Mutex<State>,
    in_flight: AtomicU32,
    peak: AtomicU32,
    queued: AtomicU32,
    resolved: AtomicU64,
}

#[derive(Debug)]
struct State {
    limit: u32,
    /// Permits to forget, instead of returning, when held ones are released.
    debt: u32,
}

/// Permission to run one query; counts it in flight until dropped.
#[derive(Debug)]
pub(crate) struct Slot<'a> {
    permit: Option<SemaphorePermit<'a>>,
    limiter: &'a Limiter,
}

/// Counts a name as queued while its future waits for a slot (even if dropped).
struct Queued<'a>(&'a AtomicU32);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Limiter {
    /// A limit of `n` queries at once (clamped to 1..=[`MAX_CONCURRENCY`]).
    pub(crate) fn new(n: u32) -> Self {
        let n = n.clamp(1, MAX_CONCURRENCY);
        Self {
            semaphore: Semaphore::new(n as usize),
            state: Mutex::new(State { limit: n, debt: 0 }),
            in_flight: AtomicU32::new(0),
            peak: AtomicU32::new(0),
            queued: AtomicU32::new(0),
            resolved: AtomicU64::new(0),
        }
    }

    /// Waits for a free slot, first come first served.
    pub(crate) async fn acquire(&self) -> Slot<'_> {
        self.queued.fetch_add(1, Ordering::Relaxed);
        let queued = Queued(&self.queued);
        let permit = self.semaphore.acquire().await;
        drop(queued);
        // The semaphore is never closed; an error would only mean "run unlimited".
        let permit = permit.ok();
        let now = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(now, Ordering::AcqRel);
        Slot {
            permit,
            limiter: self,
        }
    }

    /// Counts one name answered without a query (literal or invalid name).
    pub(crate) fn count_answered(&self) {
        self.resolved.fetch_add(1, Ordering::Relaxed);
    }

    /// Changes the limit to `n` (clamped to 1..=[`MAX_CONCURRENCY`]); see the module
    /// docs for how lowering works. Returns the limit now in force.
    pub(crate) fn set_limit(&self, n: u32) -> u32 {
        let n = n.clamp(1, MAX_CONCURRENCY);
        let mut state = self.lock();
        if n > state.limit {
            let grow = n - state.limit;
            let pay = grow.min(state.debt);
            state.debt -= pay;
            self.semaphore.add_permits((grow - pay) as usize);
        } else {
            let shrink = state.limit - n;
            let removed = self.semaphore.forget_permits(shrink as usize) as u32;
            state.debt += shrink - removed;
        }
        state.limit = n;
        n
    }

    /// The load right now.
    pub(crate) fn stats(&self) -> Stats {
        Stats {
            in_flight: self.in_flight.load(Ordering::Acquire),
            peak_in_flight: self.peak.load(Ordering::Acquire),
            queued: self.queued.load(Ordering::Relaxed),
            resolved: self.resolved.load(Ordering::Relaxed),
            concurrency: self.lock().limit,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is two integers updated together; a panic cannot leave it torn.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.limiter.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.limiter.resolved.fetch_add(1, Ordering::Relaxed);
        let Some(permit) = self.permit.take() else {
            return;
        };
        let mut state = self.limiter.lock();
        if state.debt > 0 {
            state.debt -= 1;
            permit.forget();
        } else {
            drop(state);
            drop(permit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lowering_waits_for_running_queries() {
        let limiter = Limiter::new(3);
        let a = limiter.acquire().await;
        let b = limiter.acquire().await;
        assert_eq!(limiter.set_limit(1), 1);
        // One free permit was forgotten, one is owed by the running queries.
        assert_eq!(limiter.semaphore.available_permits(), 0);
        drop(a);
        assert_eq!(limiter.semaphore.available_permits(), 0, "paid the debt");
        drop(b);
        assert_eq!(limiter.semaphore.available_permits(), 1);
        let s = limiter.stats();
        assert_eq!((s.in_flight, s.peak_in_flight, s.resolved), (0, 2, 2));
        assert_eq!(s.concurrency, 1);
    }

    #[tokio::test]
    async fn raising_pays_debt_first() {
        let limiter = Limiter::new(2);
        let a = limiter.acquire().await;
        let b = limiter.acquire().await;
        limiter.set_limit(1); // debt 1
        limiter.set_limit(3); // pays the debt, adds 1 permit
        assert_eq!(limiter.semaphore.available_permits(), 1);
        drop((a, b));
        assert_eq!(limiter.semaphore.available_permits(), 3);
        assert_eq!(limiter.set_limit(0), 1, "clamped");
        assert_eq!(limiter.set_limit(u32::MAX), MAX_CONCURRENCY);
    }

    /// On tokio's paused clock: the 10 ms pass at once, and exactly.
    #[tokio::test(start_paused = true)]
    async fn cancelled_waiters_leave_the_queue() {
        let limiter = Limiter::new(1);
        let held = limiter.acquire().await;
        let asked = tokio::time::Instant::now();
        let waiting =
            tokio::time::timeout(std::time::Duration::from_millis(10), limiter.acquire()).await;
        assert!(waiting.is_err());
        assert_eq!(asked.elapsed(), std::time::Duration::from_millis(10));
        assert_eq!(limiter.stats().queued, 0);
        drop(held);
    }
}
