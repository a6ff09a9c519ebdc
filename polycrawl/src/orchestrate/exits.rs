//! Wake-ups when a child process exits, so the supervisor's loops (`System::wait`,
//! [`Child::wait_or_kill`](super::child::Child::wait_or_kill)) see an exit at once
//! instead of at their next poll.
//!
//! A SIGCHLD is process-wide, so the count of them is too: [`watch`] starts a task
//! on the orchestrator's runtime that counts every SIGCHLD this process receives;
//! a loop reads the count with [`seen`] *before* it checks its children, and after
//! the check waits with [`wait_after`], which returns as soon as the count moved
//! past what it read (an exit between the check and the wait is never missed) or
//! after its timeout. Without [`watch`] (a unit test, or a runtime that could not
//! register the signal) [`wait_after`] is a plain sleep of the timeout, so the loops
//! still work, only by polling.
//!
//! This module only wakes waiters: it never reaps a process (each [`Child`] reaps
//! its own by pid) and never blocks a runtime thread. O(1) memory.
//!
//! [`Child`]: super::child::Child

use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;

/// The SIGCHLD count and its waiters.
#[derive(Debug, Default)]
struct Count {
    value: Mutex<u64>,
    moved: Condvar,
}

static COUNT: OnceLock<Count> = OnceLock::new();

fn count() -> &'static Count {
    COUNT.get_or_init(Count::default)
}

/// Starts counting SIGCHLDs on `rt` (once per process; later calls do nothing
/// more). Returns false if the signal could not be registered: the waits then poll.
pub fn watch(rt: &Handle) -> bool {
    static STARTED: OnceLock<bool> = OnceLock::new();
    *STARTED.get_or_init(|| {
        let _guard = rt.enter();
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()) {
            Ok(mut sigchld) => {
                rt.spawn(async move {
                    while sigchld.recv().await.is_some() {
                        bump();
                    }
                });
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch SIGCHLD: child exits are polled");
                false
            }
        }
    })
}

/// Counts one exit and wakes every waiter.
fn bump() {
    let c = count();
    let mut value = c.value.lock().unwrap_or_else(|e| e.into_inner());
    *value += 1;
    c.moved.notify_all();
}

/// The count now: read it before checking the children.
pub fn seen() -> u64 {
    *count().value.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits until the count is past `seen` (a child exited since) or `timeout` passed.
pub fn wait_after(seen: u64, timeout: Duration) {
    let c = count();
    let deadline = Instant::now() + timeout;
    let mut value = c.value.lock().unwrap_or_else(|e| e.into_inner());
    while *value == seen {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        value = match c.moved.wait_timeout(value, left) {
            Ok((v, _)) => v,
            Err(e) => e.into_inner().0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_exit_ends_the_wait_early() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        assert!(watch(rt.handle()));
        let before = seen();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let start = Instant::now();
        wait_after(before, Duration::from_secs(30));
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
        assert!(seen() > before);
        child.wait().unwrap();
    }

    #[test]
    fn without_an_exit_the_wait_times_out() {
        let now = seen();
        let start = Instant::now();
        // A child of another test may exit meanwhile and end the wait early: the
        // only other way out.
        wait_after(now, Duration::from_millis(30));
        assert!(start.elapsed() >= Duration::from_millis(30) || seen() != now);
    }
}
