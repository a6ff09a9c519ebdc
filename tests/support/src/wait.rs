//! Waiting for a state: poll a condition every few milliseconds until it holds or
//! a deadline passes, then fail saying what never came. A test that waits for a
//! state waits for it here (or on an event: a message, a joined task, a line),
//! never with a fixed sleep.
//!
//! This module must never sleep longer than [`POLL`] at a time, and never return
//! before the condition holds without saying so.

use std::time::{Duration, Instant};

/// How often a condition is polled.
pub const POLL: Duration = Duration::from_millis(10);

/// Polls `probe` every [`POLL`] until it returns `Some`, for at most `limit`;
/// `None` if it never did (the last probe runs at or after the deadline).
pub fn poll<T>(limit: Duration, probe: impl FnMut() -> Option<T>) -> Option<T> {
    poll_every(limit, POLL, probe)
}

/// [`poll`] every `every` (for a test that must see a state within a
/// millisecond or so, as the spool's crash tests killing a writer mid-file).
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
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(every.min(POLL));
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
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`until`] on tokio's clock.
pub async fn until_async(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    if poll_async(limit, || cond().then_some(())).await.is_none() {
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
}
