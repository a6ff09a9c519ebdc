//! Order and politeness: FIFO per host, request-number order across hosts, one
//! request in flight per host, the interval between a host's requests, per-IP limits.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use manager::FrontierConfig;
use spool::protocol::FetchPurpose;

use crate::support::*;

#[test]
fn fifo_per_host_and_request_number_order_across_hosts() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        ..test_config()
    };
    let mut f = w.open(&config);
    let order = [
        "http://a.test/1",
        "http://b.test/1",
        "http://a.test/2",
        "http://c.test/1",
        "http://b.test/2",
        "http://a.test/3",
        "http://c.test/2",
    ];
    w.publish("bfs", 10, &order.map(String::from));
    // One job at a time, reported at once: the pages come out in request order.
    let mut dur = |_: &spool::protocol::FetchJob| 0;
    let mut sim = Sim::new(1, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    let pages: Vec<&str> = sim.pages().iter().map(|d| d.job.url.as_str()).collect();
    assert_eq!(pages, order);
    // The three robots.txt fetches came before any page.
    let first_page = sim
        .log
        .iter()
        .position(|d| d.job.purpose == FetchPurpose::Page)
        .unwrap();
    assert_eq!(first_page, 3);
    assert!(
        sim.log[..3]
            .iter()
            .all(|d| d.job.url.ends_with("/robots.txt"))
    );
    let stats = f.stats();
    assert_eq!(stats.urls_queued, 0);
    assert_eq!(stats.robots_fetched, 3);
    assert_eq!(stats.apps[0].pages_total, 7);
    assert_eq!(stats.hosts, 0, "empty hosts are forgotten");
}

#[test]
fn ten_thousand_urls_over_200_hosts_respect_the_interval() {
    let w = World::new();
    let d = 5_000;
    let config = FrontierConfig {
        interval_ms: d,
        target_pages_per_sec: 50.0,
        ..test_config()
    };
    let mut f = w.open(&config);
    let mut rng = Rng(0x5eed);
    // Two files of 5,000 URLs each, hosts interleaved at random.
    let mut per_host: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in 0..2 {
        let mut batch = Vec::new();
        for i in 0..5_000 {
            let host = format!("h{}.test", rng.below(200));
            let url = format!("http://{host}/f{file}/u{i}");
            per_host.entry(host).or_default().push(url.clone());
            batch.push(url);
        }
        w.publish("bfs", 10, &batch);
    }
    let mut dur_rng = Rng(42);
    let mut dur = move |_: &spool::protocol::FetchJob| 10 + dur_rng.below(4_000);
    let mut sim = Sim::new(64, &ip_by_name, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);

    // Every URL exactly once, in FIFO order per host.
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in sim.pages() {
        let host = p.job.url.split('/').nth(2).unwrap().to_owned();
        seen.entry(host).or_default().push(p.job.url.clone());
    }
    assert_eq!(seen.len(), per_host.len());
    for (host, expected) in &per_host {
        assert_eq!(&seen[host], expected, "FIFO for {host}");
    }
    // Per host (robots.txt included): never two in flight, and each request starts
    // at least d after the previous one's report.
    let mut by_host: HashMap<String, Vec<&Dispatch>> = HashMap::new();
    for dsp in &sim.log {
        let host = dsp.job.url.split('/').nth(2).unwrap().to_owned();
        by_host.entry(host).or_default().push(dsp);
    }
    let mut min_gap = u64::MAX;
    for (host, list) in by_host {
        for pair in list.windows(2) {
            let prev_end = sim.reported[&pair[0].job.job.0];
            assert!(pair[1].at >= prev_end, "{host}: overlap");
            let gap = pair[1].at - prev_end;
            assert!(gap >= d, "{host}: gap {gap} < {d}");
            min_gap = min_gap.min(gap);
        }
    }
    assert!(
        min_gap < d + 100,
        "the interval is not much longer than d: {min_gap}"
    );
    let stats = f.stats();
    assert_eq!(stats.apps[0].pages_total, 10_000);
    assert_eq!(stats.urls_queued, 0);
}

#[test]
fn per_ip_limit_parks_hosts_without_blocking_other_ips() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        ip_max_in_flight: 1,
        ..test_config()
    };
    let mut f = w.open(&config);
    // Four hosts on one server, two on another; shared hosts asked for first.
    let mut list = Vec::new();
    for i in 0..3 {
        for h in [
            "s1.test", "s2.test", "s3.test", "s4.test", "o1.test", "o2.test",
        ] {
            list.push(format!("http://{h}/{i}"));
        }
    }
    w.publish("bfs", 10, &list);
    let shared: IpAddr = "10.9.9.9".parse().unwrap();
    let ip_for = move |name: &str| {
        if name.starts_with('s') {
            shared
        } else {
            ip_by_name(name)
        }
    };
    let mut dur = |_: &spool::protocol::FetchJob| 1_000;
    let mut sim = Sim::new(100, &ip_for, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    assert_eq!(sim.pages().len(), 18);

    // At no time more than one request to the shared IP.
    let on_shared: Vec<&Dispatch> = sim
        .log
        .iter()
        .filter(|d| d.job.addr.ip() == shared)
        .collect();
    assert_eq!(on_shared.len(), 4 + 12, "4 robots + 12 pages");
    for pair in on_shared.windows(2) {
        let prev_end = sim.reported[&pair[0].job.job.0];
        assert!(
            pair[1].at >= prev_end,
            "two requests in flight on the shared IP"
        );
    }
    // The other server's hosts were served in parallel, never waiting for it: all of
    // them finish long before the shared IP's 16 sequential seconds.
    let others_done = sim
        .log
        .iter()
        .filter(|d| d.job.addr.ip() != shared)
        .map(|d| sim.reported[&d.job.job.0])
        .max()
        .unwrap();
    let shared_done = on_shared
        .iter()
        .map(|d| sim.reported[&d.job.job.0])
        .max()
        .unwrap();
    assert!(
        others_done <= T0 + 4_100,
        "other IPs blocked: {}",
        others_done - T0
    );
    assert_eq!(shared_done, T0 + 16_000);
}

#[test]
fn per_ip_min_interval_spaces_starts() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 0,
        ip_max_in_flight: 0,
        ip_min_interval_ms: 700,
        ..test_config()
    };
    let mut f = w.open(&config);
    let list: Vec<String> = (0..6).map(|i| format!("http://v{i}.test/x")).collect();
    w.publish("bfs", 10, &list);
    let shared: IpAddr = "10.1.1.1".parse().unwrap();
    let ip_for = move |_: &str| shared;
    let mut dur = |_: &spool::protocol::FetchJob| 10;
    let mut sim = Sim::new(100, &ip_for, &no_robots, &mut dur);
    sim.run(&mut f, |_| false);
    assert_eq!(sim.log.len(), 12);
    for pair in sim.log.windows(2) {
        assert!(
            pair[1].at - pair[0].at >= 700,
            "starts {} and {}",
            pair[0].at,
            pair[1].at
        );
    }
}

#[test]
fn hint_interval_and_crawl_delay_set_a_host_pace() {
    let w = World::new();
    let config = FrontierConfig {
        interval_ms: 1_000,
        max_crawl_delay_ms: 4_000,
        ..test_config()
    };
    let mut f = w.open(&config);
    let hints = spool::formats::Hints {
        interval_ms: Some(3_000),
        ..Default::default()
    };
    w.publish_with("bfs", 10, &urls("slow.test", 0..3), &hints);
    w.publish("bfs", 10, &urls("delay.test", 0..3));
    let robots = |url: &str| -> RobotsReply {
        if url.contains("delay.test") {
            (200, b"User-agent: *\nCrawl-delay: 60\n".to_vec(), None)
        } else {
            (404, Vec::new(), None)
        }
    };
    let mut dur = |_: &spool::protocol::FetchJob| 0;
    let mut sim = Sim::new(10, &ip_by_name, &robots, &mut dur);
    sim.run(&mut f, |_| false);
    let starts = |host: &str| -> Vec<u64> {
        sim.log
            .iter()
            .filter(|d| d.job.url.contains(host))
            .map(|d| d.at - T0)
            .collect()
    };
    // Each rest is the interval plus 1 ms (the clock is whole milliseconds:
    // `politeness::rest_until`).
    assert_eq!(starts("slow.test"), [0, 3_001, 6_002, 9_003]);
    assert_eq!(
        starts("delay.test"),
        [0, 4_001, 8_002, 12_003],
        "crawl delay capped at 4 s"
    );
}
