//! A concurrency limit that can be raised and lowered while fetches run.
//!
//! A tokio [`Semaphore`] holds one permit per allowed concurrent fetch. Raising the
//! limit adds permits. Lowering it first removes permits nobody holds
//! ([`Semaphore::forget_permits`]); whatever could not be removed because fetches hold
//! it becomes a *debt*, and each [`Permit`] dropped while there is debt is forgotten
//! instead of returned. So shrinking never cancels a running fetch: the number running
//! falls to the new limit as fetches finish, and no new fetch starts until it has.
//! Invariant: available + held − debt = limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug)]
struct Inner {
    semaphore: Arc<Semaphore>,
    /// Permits still to be forgotten when held ones are released.
    debt: AtomicUsize,
    /// The limit; the mutex also serializes resizes.
    limit: Mutex<usize>,
}

/// The resizable limit; cloning shares it.
#[derive(Debug, Clone)]
pub struct ConcurrencyLimit {
    inner: Arc<Inner>,
}

/// Permission to run one fetch; released (or forgotten, to pay a debt) on drop.
#[derive(Debug)]
pub struct Permit {
    permit: Option<OwnedSemaphorePermit>,
    inner: Arc<Inner>,
}

impl ConcurrencyLimit {
    /// A limit of `n` concurrent holders (clamped to the semaphore's maximum).
    pub fn new(n: usize) -> Self {
        let n = n.min(Semaphore::MAX_PERMITS);
        Self {
            inner: Arc::new(Inner {
                semaphore: Arc::new(Semaphore::new(n)),
                debt: AtomicUsize::new(0),
                limit: Mutex::new(n),
            }),
        }
    }

    /// Waits for a permit (first come, first served).
    pub async fn acquire(&self) -> Permit {
        let permit = Arc::clone(&self.inner.semaphore)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        Permit {
            permit: Some(permit),
            inner: Arc::clone(&self.inner),
        }
    }

    /// The current limit.
    pub fn limit(&self) -> usize {
        *self.inner.limit.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Permits held right now (may exceed the limit just after it was lowered).
    pub fn in_use(&self) -> usize {
        let limit = self.inner.limit.lock().unwrap_or_else(|e| e.into_inner());
        (*limit + self.inner.debt.load(Ordering::Acquire))
            .saturating_sub(self.inner.semaphore.available_permits())
    }

    /// Changes the limit to `n`; see the module docs for how lowering works.
    pub fn set_limit(&self, n: usize) {
        let n = n.min(Semaphore::MAX_PERMITS);
        let mut limit = self.inner.limit.lock().unwrap_or_else(|e| e.into_inner());
        let old = *limit;
        if n > old {
            let mut grow = n - old;
            let debt = &self.inner.debt;
            let mut current = debt.load(Ordering::Acquire);
            while current > 0 && grow > 0 {
                let pay = current.min(grow);
                match debt.compare_exchange_weak(
                    current,
                    current - pay,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        grow -= pay;
                        break;
                    }
                    Err(now) => current = now,
                }
            }
            self.inner.semaphore.add_permits(grow);
        } else if n < old {
            let shrink = old - n;
            let removed = self.inner.semaphore.forget_permits(shrink);
            self.inner
                .debt
                .fetch_add(shrink - removed, Ordering::AcqRel);
        }
        *limit = n;
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else {
            return;
        };
        let debt = &self.inner.debt;
        let mut current = debt.load(Ordering::Acquire);
        while current > 0 {
            match debt.compare_exchange_weak(
                current,
                current - 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    permit.forget();
                    return;
                }
                Err(now) => current = now,
            }
        }
        drop(permit);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A permit if one is free within 10 ms. The tests run on tokio's paused
    /// clock: a waiter that gets nothing costs no real time, and one that would be
    /// woken late by a loaded machine cannot be mistaken for one never woken.
    async fn try_acquire(l: &ConcurrencyLimit) -> Option<Permit> {
        tokio::time::timeout(Duration::from_millis(10), l.acquire())
            .await
            .ok()
    }

    #[tokio::test(start_paused = true)]
    async fn grows_and_shrinks_with_debt() {
        let l = ConcurrencyLimit::new(3);
        let a = l.acquire().await;
        let b = l.acquire().await;
        let c = l.acquire().await;
        assert!(try_acquire(&l).await.is_none());
        assert_eq!(l.in_use(), 3);

        l.set_limit(1);
        assert_eq!(l.limit(), 1);
        drop(a);
        drop(b);
        assert!(try_acquire(&l).await.is_none(), "still at the limit of 1");
        drop(c);
        let d = try_acquire(&l).await.expect("one slot after all released");
        assert!(try_acquire(&l).await.is_none());

        l.set_limit(3);
        let e = try_acquire(&l).await.expect("grown");
        let f = try_acquire(&l).await.expect("grown");
        assert!(try_acquire(&l).await.is_none());
        assert_eq!(l.in_use(), 3);
        drop((d, e, f));
        assert_eq!(l.in_use(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn growing_pays_debt_first() {
        let l = ConcurrencyLimit::new(2);
        let a = l.acquire().await;
        let b = l.acquire().await;
        l.set_limit(0);
        l.set_limit(1); // debt 2 -> 1, no new permit
        assert!(try_acquire(&l).await.is_none());
        drop(a); // pays the last debt
        assert!(try_acquire(&l).await.is_none());
        drop(b); // returned: one free slot for the limit of 1
        let _c = try_acquire(&l).await.expect("limit 1");
        assert!(try_acquire(&l).await.is_none());
    }
}
