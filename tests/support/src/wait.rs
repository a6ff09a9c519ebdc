//! Waiting for a state: poll a condition every few milliseconds until it holds or
//! a deadline passes, then fail saying what never came. A test that waits for a
//! state waits for it here (or on an event: a message, a joined task, a line),
//! never with a fixed sleep.
//!
//! The two sleeps of this module ([`poll_every`] on the thread, [`poll_async_with`]
//! on tokio's clock) are the poll interval of every such wait in the workspace's
//! tests, listed once in `ops/house/sleeps.txt`: a test that polls calls these
//! instead of a loop with a sleep of its own.
//!
//! This module must never sleep longer than its caller's interval ([`POLL`] unless
//! it chose another) nor past the deadline, and never return before the condition
//! holds without saying so.

use std::time::{Duration, Instant};

/// How often a condition is polled.
pub const POLL: Duration = Duration::from_millis(10);

/// Polls `probe` every [`POLL`] until it returns `Some`, for at most `limit`;
/// `None` if it never did (the last probe runs at or after the deadline).
pub fn poll<T>(limit: Duration, probe: impl FnMut() -> Option<T>) -> Option<T> {
    poll_every(limit, POLL, probe)
}

/// [`poll`] every `every`: shorter for a test that must see a state within a
/// millisecond or so (as the spool's crash tests killing a writer mid-file), longer
/// for a probe that costs the system under test (a status request to a running
/// manager, a DevTools call to a browser).
pub fn poll_every<T>(
    limit: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(every.min(deadline - now));
    }
}

/// Polls `probe` until it returns `Some`, for at most `limit`; panics with `what`
/// (what the test waited for) if it never did.
pub fn until_some<T>(what: &str, limit: Duration, probe: impl FnMut() -> Option<T>) -> T {
    poll(limit, probe).unwrap_or_else(|| panic!("waited {limit:?} for {what}: it never came"))
}

/// Polls `cond` until it holds, for at most `limit`; panics with `what` if it
/// never did.
pub fn until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    until_some(what, limit, || cond().then_some(()));
}

/// [`poll`] on tokio's clock (it sleeps with `tokio::time::sleep`, so a test on a
/// paused clock advances through it).
pub async fn poll_async<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    poll_async_with(limit, POLL, async || probe()).await
}

/// [`poll_every`] on tokio's clock with a probe that awaits (a request to a server
/// under test, a message).
pub async fn poll_async_with<T>(
    limit: Duration,
    every: Duration,
    mut probe: impl AsyncFnMut() -> Option<T>,
) -> Option<T> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(found) = probe().await {
            return Some(found);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return None;
        }
        tokio::time::sleep(every.min(deadline - now)).await;
    }
}

/// [`until`] on tokio's clock.
pub async fn until_async(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    if poll_async(limit, || cond().then_some(())).await.is_none() {
        panic!("waited {limit:?} for {what}: it never came");
    }
}

/// [`until_async`] with a condition that awaits, polled every `every`.
pub async fn until_async_with(
    what: &str,
    limit: Duration,
    every: Duration,
    mut cond: impl AsyncFnMut() -> bool,
) {
    if poll_async_with(limit, every, async || cond().await.then_some(()))
        .await
        .is_none()
    {
        panic!("waited {limit:?} for {what}: it never came");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_returns_what_the_probe_found() {
        let mut calls = 0;
        let found = poll(Duration::from_secs(5), || {
            calls += 1;
            (calls == 3).then_some(calls)
        });
        assert_eq!(found, Some(3));
    }

    #[test]
    fn poll_gives_up_after_its_limit() {
        let start = Instant::now();
        assert_eq!(poll(Duration::from_millis(50), || None::<()>), None);
        assert!(start.elapsed() >= Duration::from_millis(50));
    }

    #[test]
    #[should_panic(expected = "waited 20ms for the impossible")]
    fn until_names_what_never_came() {
        until("the impossible", Duration::from_millis(20), || false);
    }

    #[tokio::test]
    async fn until_async_polls_until_the_condition_holds() {
        let mut n = 0;
        until_async("the third poll", Duration::from_secs(5), || {
            n += 1;
            n == 3
        })
        .await;
        assert_eq!(n, 3);
    }

    #[test]
    fn poll_every_keeps_its_interval_and_its_deadline() {
        let start = Instant::now();
        let mut calls = 0;
        let found = poll_every(
            Duration::from_millis(250),
            Duration::from_millis(100),
            || {
                calls += 1;
                None::<()>
            },
        );
        assert_eq!(found, None);
        // Probes at 0, 100, 200 and the deadline (250 ms): not one every POLL.
        assert!((3..=5).contains(&calls), "{calls} probes");
        assert!(start.elapsed() >= Duration::from_millis(250));
    }

    #[tokio::test(start_paused = true)]
    async fn until_async_with_awaits_its_condition_on_the_paused_clock() {
        let start = tokio::time::Instant::now();
        let mut n = 0;
        until_async_with(
            "the fourth poll",
            Duration::from_secs(60),
            Duration::from_secs(1),
            async || {
                tokio::task::yield_now().await;
                n += 1;
                n == 4
            },
        )
        .await;
        assert_eq!(start.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "waited 5s for the impossible")]
    async fn until_async_with_names_what_never_came() {
        until_async_with(
            "the impossible",
            Duration::from_secs(5),
            Duration::from_secs(1),
            async || false,
        )
        .await;
    }
}
