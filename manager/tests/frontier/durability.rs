//! Crash and restart: nothing lost, at most the in-flight URLs fetched twice, a
//! partly loaded request file resumed; checkpoints that can be opened.

use std::collections::{BTreeMap, BTreeSet};

use manager::{Frontier, FrontierConfig};
use spool::protocol::FetchPurpose;

use crate::support::*;

fn durable_config() -> FrontierConfig {
    FrontierConfig {
        interval_ms: 500,
        target_pages_per_sec: 2.0, // s = 2 x 2 x 0.5 = 2 hosts
        load_chunk_urls: 7,
        ..test_config()
    }
}

fn all_urls(files: usize, per_file: usize, hosts: usize) -> Vec<Vec<String>> {
    (0..files)
        .map(|file| {
            (0..per_file)
                .map(|i| format!("http://d{}.test/f{file}/{i}", (file * per_file + i) % hosts))
                .collect()
        })
        .collect()
}

#[test]
fn restart_after_a_crash_loses_nothing_and_repeats_only_in_flight_urls() {
    let w = World::new();
    let config = durable_config();
    let files = all_urls(3, 40, 30);
    for list in &files {
        w.publish("bfs", 10, list);
    }
    let expected: BTreeSet<String> = files.iter().flatten().cloned().collect();

    let mut f = w.open(&config);
    let mut rng = Rng(7);
    let mut dur = move |_: &spool::protocol::FetchJob| 50 + rng.below(400);
    let mut sim = Sim::new(6, &ip_by_name, &no_robots, &mut dur);
    let claimed = w.spool.root().join("requests/bfs/.claimed/manager");
    let half_loaded = || std::fs::read_dir(&claimed).is_ok_and(|d| d.count() == 1);
    sim.run(&mut f, |s| s.pages().len() >= 45 && half_loaded());
    let crash_time = sim.now;
    let in_flight: BTreeSet<String> = sim
        .in_flight
        .iter()
        .filter(|d| d.job.purpose == FetchPurpose::Page)
        .map(|d| d.job.url.clone())
        .collect();
    let done_before: BTreeSet<String> = sim
        .pages()
        .iter()
        .map(|d| d.job.url.clone())
        .filter(|u| !in_flight.contains(u))
        .collect();
    assert!(!in_flight.is_empty(), "the crash must catch jobs in flight");
    assert!(
        half_loaded(),
        "the crash must catch a request file half loaded"
    );
    let robots_before = f.stats().robots_fetched;
    // kill -9: no flush, no close; the jobs in flight are never reported.
    drop(f);

    let mut f = w.open(&config);
    let stats = f.stats();
    assert_eq!(stats.robots_fetched, robots_before);
    assert_eq!(stats.apps[0].pages_total, done_before.len() as u64);
    let mut dur = |_: &spool::protocol::FetchJob| 100;
    let mut sim2 = Sim::new(6, &ip_by_name, &no_robots, &mut dur);
    sim2.now = crash_time + 1;
    sim2.run(&mut f, |_| false);

    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for d in sim.pages().into_iter().chain(sim2.pages()) {
        *count.entry(d.job.url.clone()).or_default() += 1;
    }
    let seen: BTreeSet<String> = count.keys().cloned().collect();
    assert_eq!(seen, expected, "every URL dispatched");
    let twice: BTreeSet<String> = count
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(u, _)| u.clone())
        .collect();
    assert!(count.values().all(|n| *n <= 2));
    assert_eq!(
        twice, in_flight,
        "exactly the in-flight URLs are dispatched again"
    );
    assert!(
        sim2.pages()
            .iter()
            .all(|d| !done_before.contains(&d.job.url))
    );
    assert_eq!(f.stats().urls_queued, 0);
    assert_eq!(f.stats().apps[0].pages_total, 120);
    assert_eq!(std::fs::read_dir(&claimed).unwrap().count(), 0);
}

#[test]
fn reports_for_jobs_of_a_previous_run_are_ignored_and_ids_are_not_reused() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        ..test_config()
    };
    w.publish("bfs", 10, &urls("j.test", 0..2));
    let mut f = w.open(&config);
    f.next_jobs(T0, 10).unwrap();
    answer_dns(&mut f, T0, &ip_by_name);
    let robots = f.next_jobs(T0, 10).unwrap();
    f.on_robots_fetched(robots[0].job, 404, Some(b""), None, T0)
        .unwrap();
    let old = f.next_jobs(T0, 10).unwrap();
    drop(f);
    let mut f = w.open(&config);
    assert!(
        !f.on_report(&stored(&old[0], 200, 1), T0).unwrap(),
        "unknown after restart"
    );
    f.next_jobs(T0, 10).unwrap();
    answer_dns(&mut f, T0, &ip_by_name);
    let again = f.next_jobs(T0, 10).unwrap();
    assert_eq!(
        again[0].url, old[0].url,
        "robots.txt cached, the page comes again"
    );
    assert!(
        again[0].job > old[0].job,
        "job ids never repeat across restarts"
    );
}

#[test]
fn a_checkpoint_reopens_as_the_state_it_captured() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 200,
        ..test_config()
    };
    for list in all_urls(2, 30, 6) {
        w.publish("bfs", 10, &list);
    }
    let mut f = w.open(&config);
    let mut dur = |_: &spool::protocol::FetchJob| 30;
    let mut sim = Sim::new(4, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |s| s.pages().len() >= 20);
    // What is in flight now is not reported yet: it is still queued in the snapshot.
    let at_checkpoint = f.stats();
    let ckpt = w.dir.path().join("checkpoint-1");
    f.checkpoint(&ckpt).unwrap();
    sim.run(&mut f, |_| false);
    assert_eq!(f.stats().urls_queued, 0);
    assert_eq!(f.stats().apps[0].pages_total, 60);
    drop(f);

    let mut restored = Frontier::open(&ckpt, w.spool, config).unwrap();
    let stats = restored.stats();
    assert_eq!(stats.urls_queued, at_checkpoint.urls_queued);
    assert_eq!(stats.apps[0].pages_total, at_checkpoint.apps[0].pages_total);
    assert_eq!(stats.robots_fetched, at_checkpoint.robots_fetched);
    let mut dur = |_: &spool::protocol::FetchJob| 30;
    let mut sim2 = Sim::new(4, &ip_by_name, &no_robots, &mut dur);
    sim2.now = sim.now + 1;
    sim2.run(&mut restored, |_| false);
    assert_eq!(sim2.pages().len() as u64, at_checkpoint.urls_queued);
    assert_eq!(restored.stats().apps[0].pages_total, 60);
}

#[test]
fn outcomes_are_batched_by_size_and_age_and_survive_a_crash() {
    let w = World::new();
    let config = FrontierConfig {
        outcome_batch_lines: 3,
        outcome_max_age_ms: 10_000,
        request_scan_interval_ms: 3_600_000,
        ..test_config()
    };
    let bad: Vec<String> = (0..7).map(|i| format!("ftp://x.test/{i}")).collect();
    w.publish("bfs", 10, &bad);
    let mut f = w.open(&config);
    f.tick(T0).unwrap();
    let files = |w: &World| {
        let dir = w
            .spool
            .outcomes(&spool::AppId::new("bfs").unwrap())
            .unwrap();
        dir.list().unwrap().len()
    };
    assert_eq!(
        files(&w),
        1,
        "7 lines: one full file of 7 (the size is checked per flush)"
    );
    assert_eq!(w.outcomes("bfs").len(), 7);
    w.publish("bfs", 10, &bad[..2]);
    f.rescan_requests();
    f.tick(T0 + 1).unwrap();
    assert_eq!(
        f.stats().outcomes_pending,
        2,
        "too few and too young to publish"
    );
    assert_eq!(f.next_wakeup(), Some(T0 + 1 + 10_000));
    // Crash: the two pending lines are durable and published by the next run.
    drop(f);
    let mut f = w.open(&config);
    assert_eq!(f.stats().outcomes_pending, 2);
    f.tick(T0 + 2).unwrap();
    assert_eq!(files(&w), 2);
    assert_eq!(w.outcomes("bfs").len(), 9);
    assert_eq!(f.stats().apps[0].outcomes_total, 9);
}
