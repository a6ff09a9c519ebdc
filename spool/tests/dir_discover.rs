//! Discovery: with the watcher off a new file is found by the periodic scan within the
//! interval; with it on, promptly.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod dir_support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use dir_support::{TestDir, id};
use spool::claim::Consumer;
use spool::discover::Discovery;
use spool::layout::SpoolDir;
use spool::name::{FileKind, Priority};
use spool::publish::Publisher;

/// Starts a consumer thread waiting on `discovery`, publishes one file once it is
/// waiting, and returns how long after publication the consumer had claimed it.
fn time_to_discover(dir: &SpoolDir, discovery: Discovery) -> Duration {
    let consumer = Consumer::new(dir.clone(), id("app-1")).unwrap();
    let (started_tx, started_rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        // Its thread id: `/proc/thread-self` links to `<pid>/task/<tid>`.
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        let tid: u32 = link.file_name().unwrap().to_str().unwrap().parse().unwrap();
        started_tx.send(tid).unwrap();
        let batch = discovery
            .next_batch(&consumer, 1, Duration::from_secs(30))
            .unwrap();
        let found = Instant::now();
        assert_eq!(batch.len(), 1, "nothing found within 30 s");
        batch.into_iter().for_each(|c| c.done().unwrap());
        found
    });
    let tid = started_rx.recv().unwrap();
    // Let the first scan find nothing, so the consumer is waiting when the file
    // lands: its thread blocked (`S` in /proc) is in the wait that follows the scan.
    test_support::wait::until(
        "the consumer to wait after its first scan",
        Duration::from_secs(30),
        || {
            test_support::proc::threads(std::process::id())
                .iter()
                .any(|(t, stat)| *t == tid && stat.state == 'S')
        },
    );
    let publisher = Publisher::new(dir.clone(), id("dl-1")).unwrap();
    let published = Instant::now();
    publisher
        .publish(Priority::NORMAL, FileKind::PageBatch, b"page")
        .unwrap();
    let found = waiter.join().unwrap();
    found.saturating_duration_since(published)
}

#[test]
fn without_notify_the_scan_finds_a_new_file_within_the_interval() {
    let t = TestDir::new("scan");
    let dir = SpoolDir::open(t.path().join("pages")).unwrap();
    let interval = Duration::from_millis(200);
    let discovery = Discovery::new(&dir, interval, false);
    assert!(!discovery.notify_active());
    let took = time_to_discover(&dir, discovery);
    eprintln!("found by scanning after {took:?}");
    assert!(
        took <= interval * 3,
        "took {took:?} with a {interval:?} scan"
    );
}

#[test]
fn with_notify_a_new_file_is_found_promptly() {
    let t = TestDir::new("notify");
    let dir = SpoolDir::open(t.path().join("pages")).unwrap();
    // The interval is far beyond the test's limit: only an event can be this fast.
    let discovery = Discovery::new(&dir, Duration::from_secs(60), true);
    assert!(
        discovery.notify_active(),
        "inotify watcher could not be created"
    );
    let took = time_to_discover(&dir, discovery);
    eprintln!("found by event after {took:?}");
    assert!(took <= Duration::from_secs(2), "took {took:?}");
}
