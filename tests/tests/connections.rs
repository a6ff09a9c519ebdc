//! `connections_per_host` = 4, end to end: `polycrawl websim`, a manager, a
//! resolver and two downloaders fed every URL of websim's manifest (no application).
//!
//! - [`four_connections_overlap_and_never_exceed_four`]: politeness off. websim's
//!   log shows requests of one host overlapping (their `start .. write_from` spans,
//!   which lie inside the real requests), the downloaders' wire log never more than
//!   four of one host at once (their `sent .. received` spans, which contain the
//!   real requests); every manifest URL fetched exactly once, one page each.
//! - [`four_connections_keep_the_interval_between_starts`]: a 300 ms interval. Per
//!   origin, `sent(next) - written(prev)` on the wire (never longer than the real
//!   spacing of the two starts) is at least the host's interval: 0 violations.
//!
//! websim serves slow hosts (first byte after `--slow-ms`), so a host's requests
//! do overlap when the crawler lets them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tests::requestlog::{self, url_host};
use tests::spoolout::Returned;
use tests::system::{Knobs, System};
use tests::websim::{HostRow, LogLine, Websim};
use tests::wirelog::{WireLine, origin_of};

const APP: &str = "conntest";
static SERIAL: Mutex<()> = Mutex::new(());

fn start(ws: &Websim, knobs: &Knobs) -> System {
    let mut sys = System::new(ws, knobs);
    sys.start_manager();
    sys.start_resolver();
    for i in 1..=2 {
        sys.start_downloader(&format!("dl-{i}"));
    }
    sys.wait_components(2, 1, Duration::from_secs(30));
    sys
}

/// Asks for every manifest URL and waits until each has a page or an outcome.
fn crawl(ws: &Websim, knobs: &Knobs) -> (System, Returned, Vec<String>) {
    let urls: Vec<String> = ws.manifest().into_iter().map(|r| r.url).collect();
    let mut sys = start(ws, knobs);
    for chunk in urls.chunks(500) {
        sys.publish_requests(APP, 50, chunk);
    }
    let mut back = Returned::new(&sys.spool, APP);
    let mut open = 0;
    let ended = test_support::wait::poll_every(
        Duration::from_secs(200),
        Duration::from_millis(200),
        || {
            back.refresh();
            open = back.open(&urls);
            (open == 0).then_some(())
        },
    );
    assert!(
        ended.is_some(),
        "{open} of {} URLs not ended; status {:?}\n{}",
        urls.len(),
        sys.try_status(),
        sys.reports()
    );
    (sys, back, urls)
}

/// Every manifest URL fetched exactly once (websim's log) with one page record,
/// and no outcome.
fn assert_complete(log: &[LogLine], back: &Returned, urls: &[String]) {
    let counts = requestlog::url_counts(log);
    let wrong: Vec<(&String, usize)> = urls
        .iter()
        .map(|u| (u, counts.get(u).copied().unwrap_or(0)))
        .filter(|(_, n)| *n != 1)
        .collect();
    assert!(
        wrong.is_empty(),
        "{} URLs not fetched exactly once, e.g. {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(10)]
    );
    let pages_wrong = urls
        .iter()
        .filter(|u| back.pages.get(*u) != Some(&1))
        .count();
    assert_eq!(pages_wrong, 0, "URLs without exactly one page record");
    assert!(back.outcomes.is_empty(), "outcomes: {:?}", back.outcomes);
}

/// The most spans overlapping at once per key; a span that starts when another
/// ends counts as overlapping it.
fn max_overlap<K: Ord>(spans: impl IntoIterator<Item = (K, u64, u64)>) -> BTreeMap<K, usize> {
    let mut by_key: BTreeMap<K, Vec<(u64, i32)>> = BTreeMap::new();
    for (k, from, to) in spans {
        let e = by_key.entry(k).or_default();
        e.push((from, 1));
        e.push((to.max(from), 2));
    }
    by_key
        .into_iter()
        .map(|(k, mut e)| {
            e.sort_unstable();
            let (mut now, mut max) = (0usize, 0usize);
            for (_, kind) in e {
                if kind == 1 {
                    now += 1;
                    max = max.max(now);
                } else {
                    now -= 1;
                }
            }
            (k, max)
        })
        .collect()
}

fn sent(wire: &[WireLine]) -> Vec<&WireLine> {
    wire.iter().filter(|l| l.was_sent()).collect()
}

#[test]
fn four_connections_overlap_and_never_exceed_four() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let ws = Websim::start(&[
        "--hosts",
        "40",
        "--pages",
        "3000",
        "--size-skew",
        "0.3",
        "--slow-ms",
        "150",
        "--seed",
        "11",
    ]);
    let knobs = Knobs {
        interval_ms: 0,
        connections_per_host: 4,
        ip_max_in_flight: 0,
        ip_min_interval_ms: 0,
        max_crawl_delay_ms: 0,
        ..Knobs::default()
    };
    let (sys, back, urls) = crawl(&ws, &knobs);
    let log = ws.flushed_log();
    assert_complete(&log, &back, &urls);

    // Server side: spans inside the real requests, so an overlap here is real.
    let server = max_overlap(
        log.iter()
            .map(|l| (l.origin(), l.start_us, l.write_from_us)),
    );
    let overlapping = server.values().filter(|n| **n >= 2).count();
    assert!(
        overlapping > 0,
        "no host had requests overlapping: {server:?}"
    );
    // Crawler side: spans containing the real requests, so at most 4 here proves it.
    let wire = sys.wire_log();
    let crawler = max_overlap(sent(&wire).into_iter().map(|l| {
        (
            origin_of(&l.url),
            l.sent_us,
            l.received_us.max(l.written_us),
        )
    }));
    let over: Vec<(&String, &usize)> = crawler.iter().filter(|(_, n)| **n > 4).collect();
    assert!(over.is_empty(), "more than 4 at once: {over:?}");
    let most = crawler.values().copied().max().unwrap_or(0);
    println!(
        "connections test: {} URLs, {} requests logged; {overlapping} of {} origins with \
         overlapping requests on websim's side; most at once per origin on the wire: {most}",
        urls.len(),
        log.len(),
        server.len(),
    );
    assert!(sys.error_lines().is_empty(), "{:?}", sys.error_lines());
}

#[test]
fn four_connections_keep_the_interval_between_starts() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let ws = Websim::start(&[
        "--hosts",
        "30",
        "--pages",
        "600",
        "--size-skew",
        "0.3",
        "--slow-ms",
        "700",
        "--seed",
        "12",
    ]);
    let knobs = Knobs {
        interval_ms: 300,
        connections_per_host: 4,
        ip_max_in_flight: 0,
        ip_min_interval_ms: 0,
        max_crawl_delay_ms: 1_000,
        ..Knobs::default()
    };
    let hosts: HashMap<String, HostRow> = ws
        .hosts()
        .into_iter()
        .map(|h| (h.name.clone(), h))
        .collect();
    let (sys, back, urls) = crawl(&ws, &knobs);
    let log = ws.flushed_log();
    assert_complete(&log, &back, &urls);

    // The interval of an origin: the config's, raised to its Crawl-delay (capped).
    let interval_us = |origin: &str| -> i64 {
        let name = url_host(&format!("{origin}/"));
        let delay_ms = hosts
            .get(&name)
            .and_then(|h| h.crawl_delay)
            .map_or(0, |s| (s * 1000.0) as u64)
            .min(knobs.max_crawl_delay_ms);
        (knobs.interval_ms.max(delay_ms) * 1000) as i64
    };
    let wire = sys.wire_log();
    let mut by_origin: BTreeMap<String, Vec<&WireLine>> = BTreeMap::new();
    for l in sent(&wire) {
        by_origin.entry(origin_of(&l.url)).or_default().push(l);
    }
    let mut violations = Vec::new();
    let mut min_ratio = f64::MAX;
    for (origin, mut lines) in by_origin {
        lines.sort_by_key(|l| l.sent_us);
        let d = interval_us(&origin);
        for pair in lines.windows(2) {
            let spacing = pair[1].sent_us as i64 - pair[0].written_us as i64;
            if d > 0 {
                min_ratio = min_ratio.min(spacing as f64 / d as f64);
            }
            if spacing < d {
                violations.push(format!(
                    "{origin}: {} then {} started {spacing} us apart (interval {d} us)",
                    pair[0].url, pair[1].url
                ));
            }
        }
    }
    let overlap = max_overlap(
        log.iter()
            .map(|l| (l.origin(), l.start_us, l.write_from_us)),
    );
    let overlapping = overlap.values().filter(|n| **n >= 2).count();
    println!(
        "connections test (interval {} ms): {} URLs; smallest start spacing / interval \
         {min_ratio:.3}; {} violations; {overlapping} origins with overlapping requests",
        knobs.interval_ms,
        urls.len(),
        violations.len()
    );
    assert!(
        violations.is_empty(),
        "{} interval violations between starts, e.g.\n{}",
        violations.len(),
        violations[..violations.len().min(10)].join("\n")
    );
    assert!(overlapping > 0, "slow hosts must overlap: {overlap:?}");
    assert!(sys.error_lines().is_empty(), "{:?}", sys.error_lines());
}
