//! The request queue: lazy loading (only enough files to keep `s` hosts on their way
//! to ready), priority then FIFO order, quarantine of bad files.

use manager::FrontierConfig;
use spool::name::{FileKind, Priority};
use spool::publish::Publisher;
use spool::{AppId, ComponentId};

use crate::support::*;

fn lazy_config() -> FrontierConfig {
    FrontierConfig {
        interval_ms: 1_000,
        target_pages_per_sec: 1.0,
        ready_factor: 5.0, // s = 5 x 1 x 1 = 5 hosts
        ..test_config()
    }
}

#[test]
fn only_enough_files_are_loaded_to_keep_s_hosts_ready() {
    let w = World::new();
    let mut f = w.open(&lazy_config());
    for file in 0..200 {
        let list: Vec<String> = (0..10)
            .map(|h| format!("http://f{file}-h{h}.test/x"))
            .collect();
        w.publish("bfs", 10, &list);
    }
    f.tick(T0).unwrap();
    let stats = f.stats();
    assert_eq!(stats.ready_target, 5);
    assert_eq!(stats.request_files_loaded, 1);
    assert_eq!(stats.request_files_pending, 199);
    assert_eq!(stats.urls_queued, 10);
    assert_eq!(stats.pipeline, 10);
    // Nothing more is loaded while the pipeline is full, however often we tick.
    for t in 1..10 {
        f.tick(T0 + t).unwrap();
    }
    assert_eq!(f.stats().request_files_pending, 199);

    // Serve for a while: files are loaded as hosts leave the pipeline, a few at a time.
    let mut dur = |_: &spool::protocol::FetchJob| 100;
    let mut sim = Sim::new(8, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |s| s.pages().len() >= 50);
    let stats = f.stats();
    eprintln!(
        "after 50 pages: {} files loaded, {} pending, {} URLs queued",
        stats.request_files_loaded, stats.request_files_pending, stats.urls_queued
    );
    assert!(stats.request_files_pending >= 150, "{stats:?}");
    assert!(stats.urls_queued <= 300, "{stats:?}");
    // The first file's URLs were served first.
    let first: Vec<&str> = sim.pages()[..10]
        .iter()
        .map(|d| d.job.url.as_str())
        .collect();
    assert!(
        first.iter().all(|u| u.starts_with("http://f0-")),
        "{first:?}"
    );

    // And everything is served in the end.
    sim.run(&mut f, |_| false);
    assert_eq!(sim.pages().len(), 2_000);
    let stats = f.stats();
    assert_eq!(
        (stats.request_files_pending, stats.request_files_loaded),
        (0, 200)
    );
}

#[test]
fn priority_beats_age_and_age_orders_equal_priorities() {
    let w = World::new();
    let config = FrontierConfig {
        ready_factor: 0.001, // s = 1: one file at a time
        interval_ms: 0,
        ..test_config()
    };
    let mut f = w.open(&config);
    w.publish("bfs", 10, &urls("old.test", 0..1));
    w.publish("bfs", 10, &urls("newer.test", 0..1));
    w.publish("bfs", 5, &urls("urgent.test", 0..1));
    w.publish("other", 7, &urls("otherapp.test", 0..1));
    let mut dur = |_: &spool::protocol::FetchJob| 10;
    let mut sim = Sim::new(1, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    let pages: Vec<&str> = sim.pages().iter().map(|d| d.job.url.as_str()).collect();
    assert_eq!(
        pages,
        [
            "http://urgent.test/p0",
            "http://otherapp.test/p0",
            "http://old.test/p0",
            "http://newer.test/p0"
        ]
    );
    assert_eq!(sim.pages()[1].job.app.as_str(), "other");
}

#[test]
fn a_bad_file_is_quarantined_whole_and_the_rest_goes_on() {
    let w = World::new();
    let mut f = w.open(&FrontierConfig {
        interval_ms: 0,
        ..test_config()
    });
    let app = AppId::new("bfs").unwrap();
    let dir = w.spool.requests(&app).unwrap();
    let publisher = Publisher::new(dir.clone(), ComponentId::new("test").unwrap()).unwrap();
    let bad =
        b"#polycrawl-requests v1 priority=10\nhttp://fine.test/1\nhttp://fine.test/2\tdpeth=1\n";
    publisher
        .publish(Priority::new(10).unwrap(), FileKind::Requests, bad)
        .unwrap();
    w.publish("bfs", 10, &urls("good.test", 0..2));
    let mut dur = |_: &spool::protocol::FetchJob| 10;
    let mut sim = Sim::new(4, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    let pages: Vec<&str> = sim.pages().iter().map(|d| d.job.url.as_str()).collect();
    assert_eq!(
        pages,
        ["http://good.test/p0", "http://good.test/p1"],
        "nothing of the bad file"
    );
    let quarantined: Vec<_> = std::fs::read_dir(dir.bad_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(quarantined.len(), 2, "file and .why: {quarantined:?}");
    let why = quarantined.iter().find(|n| n.ends_with(".why")).unwrap();
    let note = std::fs::read_to_string(dir.bad_dir().join(why)).unwrap();
    assert!(note.contains("line 3"), "{note}");
    assert_eq!(f.stats().request_files_quarantined, 1);
}
