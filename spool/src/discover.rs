//! Waking a consumer when a spool folder may hold new files.
//!
//! [`Discovery`] combines two sources: a `notify` watcher on the folder, used only as a
//! *hint* that lets a consumer react at once on a local file system, and a periodic
//! scan interval, which is the only thing that works on NFS (changes made by other
//! machines raise no events there). [`Discovery::wait`] returns on whichever comes
//! first; the caller then lists the folder (O(files)). Events that arrive while the
//! caller is busy are remembered (coalesced into one), so none is lost between a scan
//! and the next wait.
//!
//! The watcher can be switched off (`use_notify = false`, e.g. for NFS-only setups or
//! when inotify instances run out); if it cannot be created, a warning is logged and
//! discovery falls back to scanning. This module must never rely on events alone, never
//! read or move files itself, and never block longer than the scan interval.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use notify::event::{ModifyKind, RenameMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::claim::{Claimed, Consumer};
use crate::layout::{SpoolDir, SpoolError};

/// A scan interval for folders with no particular latency needs.
pub const DEFAULT_SCAN_INTERVAL: Duration = Duration::from_secs(1);

/// Why [`Discovery::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The watcher saw a file arrive (or lost track and asks for a rescan).
    Event,
    /// The scan interval (or the caller's shorter limit) passed.
    Interval,
}

/// The flag the watcher sets and waiters clear.
#[derive(Debug, Default)]
struct Signal {
    pending: Mutex<bool>,
    cond: Condvar,
    async_notify: tokio::sync::Notify,
}

impl Signal {
    fn raise(&self) {
        *self.pending.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cond.notify_all();
        self.async_notify.notify_one();
    }

    /// Clears the flag; true if it was set.
    fn take(&self) -> bool {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Wakes the waiter of a [`Discovery`] (see [`Discovery::waker`]). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Waker(Arc<Signal>);

impl Waker {
    /// Wakes the waiter now, or makes its next wait return at once.
    pub fn wake(&self) {
        self.0.raise();
    }
}

/// Tells a consumer when to look at its folder again: on a watcher event or when the
/// scan interval passes, whichever comes first.
#[derive(Debug)]
pub struct Discovery {
    dir: PathBuf,
    interval: Duration,
    signal: Arc<Signal>,
    watcher: Option<RecommendedWatcher>,
}

impl Discovery {
    /// Discovery for `dir`, scanning every `scan_interval`, with a `notify` watcher as a
    /// wake-up hint when `use_notify` is true and one can be created (else a warning is
    /// logged and only the interval is used).
    pub fn new(dir: &SpoolDir, scan_interval: Duration, use_notify: bool) -> Self {
        let signal = Arc::new(Signal::default());
        let watcher = if use_notify {
            match watch(dir.path(), Arc::clone(&signal)) {
                Ok(w) => Some(w),
                Err(error) => {
                    tracing::warn!(
                        dir = %dir.path().display(),
                        %error,
                        "cannot watch spool folder; falling back to periodic scans"
                    );
                    None
                }
            }
        } else {
            None
        };
        Self {
            dir: dir.path().to_owned(),
            interval: scan_interval,
            signal,
            watcher,
        }
    }

    /// The folder watched.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The period of the fallback scan.
    pub fn scan_interval(&self) -> Duration {
        self.interval
    }

    /// A handle that wakes this discovery's waiter as a watcher event would: for
    /// hints that arrive another way (a `Published` message on the control
    /// connection, a progress report the waiter is waiting for).
    pub fn waker(&self) -> Waker {
        Waker(Arc::clone(&self.signal))
    }

    /// True when a watcher is running (events can wake a waiter early).
    pub fn notify_active(&self) -> bool {
        self.watcher.is_some()
    }

    /// Blocks until a watcher event arrives (or arrived since the last wait) or the scan
    /// interval passes.
    pub fn wait(&self) -> Wake {
        self.wait_timeout(self.interval)
    }

    /// Like [`wait`](Self::wait), but returns after at most `limit` (or the scan
    /// interval, if shorter).
    pub fn wait_timeout(&self, limit: Duration) -> Wake {
        let limit = limit.min(self.interval);
        let guard = self
            .signal
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (mut pending, _) = self
            .signal
            .cond
            .wait_timeout_while(guard, limit, |pending| !*pending)
            .unwrap_or_else(PoisonError::into_inner);
        if std::mem::take(&mut *pending) {
            Wake::Event
        } else {
            Wake::Interval
        }
    }

    /// The async form of [`wait`](Self::wait), for a tokio task (needs the time driver).
    pub async fn wait_async(&self) -> Wake {
        if self.signal.take() {
            return Wake::Event;
        }
        tokio::select! {
            () = self.signal.async_notify.notified() => {
                self.signal.take();
                Wake::Event
            }
            () = tokio::time::sleep(self.interval) => {
                if self.signal.take() { Wake::Event } else { Wake::Interval }
            }
        }
    }

    /// Claims up to `n` files for `consumer`, waiting for files to appear for at most
    /// `max_wait`; an empty batch means none came in time (check for shutdown and call
    /// again). Each attempt lists the folder: O(files) per scan interval while idle.
    pub fn next_batch(
        &self,
        consumer: &Consumer,
        n: usize,
        max_wait: Duration,
    ) -> Result<Vec<Claimed>, SpoolError> {
        let deadline = Instant::now() + max_wait;
        loop {
            let batch = consumer.claim_batch(n)?;
            let now = Instant::now();
            if !batch.is_empty() || now >= deadline || n == 0 {
                return Ok(batch);
            }
            self.wait_timeout(deadline - now);
        }
    }
}

/// Starts a non-recursive watcher on `dir` that raises `signal` when a file may have
/// arrived.
fn watch(dir: &Path, signal: Arc<Signal>) -> notify::Result<RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
        match event {
            Ok(event) if !may_be_arrival(&event) => {}
            Ok(_) => signal.raise(),
            Err(error) => {
                // We may have missed something: let the waiter rescan.
                tracing::debug!(%error, "spool folder watcher error");
                signal.raise();
            }
        }
    })?;
    watcher.watch(dir, RecursiveMode::NonRecursive)?;
    Ok(watcher)
}

/// True for events that may mean a published file appeared: creations and renames
/// into the folder of non-dot entries, unknown events, and rescan requests. Renames
/// *out* of the folder (claims by other consumers) and writes are ignored.
fn may_be_arrival(event: &Event) -> bool {
    if event.need_rescan() {
        return true;
    }
    let arrival = match event.kind {
        EventKind::Create(_) | EventKind::Any | EventKind::Other => true,
        EventKind::Modify(ModifyKind::Name(mode)) => mode != RenameMode::From,
        EventKind::Modify(ModifyKind::Any) => true,
        _ => false,
    };
    // For a rename with both ends, the last path is the destination.
    arrival
        && event.paths.last().is_none_or(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_none_or(|n| !n.starts_with('.'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ComponentId;
    use crate::layout::test_support::TestDir;
    use crate::name::{FileKind, Priority};
    use crate::publish::Publisher;
    use notify::event::{AccessKind, CreateKind};

    #[test]
    fn wait_returns_after_the_interval_without_events() {
        let t = TestDir::new("interval");
        let dir = SpoolDir::open(t.path().join("d")).unwrap();
        let d = Discovery::new(&dir, Duration::from_millis(50), false);
        assert!(!d.notify_active());
        let start = Instant::now();
        assert_eq!(d.wait(), Wake::Interval);
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert_eq!(d.wait_timeout(Duration::from_millis(1)), Wake::Interval);
    }

    #[test]
    fn event_seen_while_busy_is_not_lost() {
        let t = TestDir::new("events");
        let dir = SpoolDir::open(t.path().join("d")).unwrap();
        let d = Discovery::new(&dir, Duration::from_secs(30), true);
        assert!(d.notify_active());
        let publisher = Publisher::new(dir, ComponentId::new("p").unwrap()).unwrap();
        publisher
            .publish(Priority::NORMAL, FileKind::Robots, b"x")
            .unwrap();
        // Published before waiting: the wait still returns at once.
        let start = Instant::now();
        assert_eq!(d.wait(), Wake::Event);
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn next_batch_finds_files_and_times_out() {
        let t = TestDir::new("next");
        let dir = SpoolDir::open(t.path().join("d")).unwrap();
        let d = Discovery::new(&dir, Duration::from_millis(20), false);
        let consumer = Consumer::new(dir.clone(), ComponentId::new("c").unwrap()).unwrap();
        assert!(
            d.next_batch(&consumer, 4, Duration::from_millis(60))
                .unwrap()
                .is_empty()
        );
        let publisher = Publisher::new(dir, ComponentId::new("p").unwrap()).unwrap();
        publisher
            .publish(Priority::NORMAL, FileKind::Robots, b"x")
            .unwrap();
        let batch = d.next_batch(&consumer, 4, Duration::from_secs(5)).unwrap();
        assert_eq!(batch.len(), 1);
    }

    #[test]
    fn async_wait_sees_events_and_interval() {
        let t = TestDir::new("async");
        let dir = SpoolDir::open(t.path().join("d")).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let d = Discovery::new(&dir, Duration::from_millis(30), false);
        assert_eq!(rt.block_on(d.wait_async()), Wake::Interval);
        d.signal.raise();
        assert_eq!(rt.block_on(d.wait_async()), Wake::Event);
    }

    #[test]
    fn event_filter() {
        let ev = |kind, path: &str| Event::new(kind).add_path(PathBuf::from(path));
        let yes = [
            ev(EventKind::Create(CreateKind::File), "/s/50-p-1.requests"),
            ev(
                EventKind::Modify(ModifyKind::Name(RenameMode::To)),
                "/s/50-p-1.requests",
            ),
            ev(
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
                "/s/.tmp/x",
            )
            .add_path(PathBuf::from("/s/50-p-1.requests")),
            Event::new(EventKind::Any),
        ];
        let no = [
            ev(
                EventKind::Modify(ModifyKind::Name(RenameMode::From)),
                "/s/50-p-1.requests",
            ),
            ev(EventKind::Create(CreateKind::Folder), "/s/.claimed"),
            ev(EventKind::Access(AccessKind::Any), "/s/50-p-1.requests"),
            ev(
                EventKind::Remove(notify::event::RemoveKind::File),
                "/s/50-p-1.requests",
            ),
        ];
        for e in yes {
            assert!(may_be_arrival(&e), "{e:?}");
        }
        for e in no {
            assert!(!may_be_arrival(&e), "{e:?}");
        }
    }
}
