//! Servers that ask for less (issue 28), end to end: `polycrawl websim --throttle`,
//! a manager, a resolver and a downloader fed every URL of websim's manifest (no
//! application), with the test defaults of [`Knobs`] (100 ms per host).
//!
//! websim's three most popular hosts throttle (`websim::throttle`): rank 0 answers
//! its 2nd and 4th page requests 429 with `Retry-After: 5`, rank 1 its 2nd to 4th
//! 429 without it, rank 2 its 2nd to 4th 503. Checked on websim's request log:
//! - after each `Retry-After: 5` answer the host gets no request for 5 s;
//! - without the header the host's gaps after the 429s grow, and after the 503s
//!   each is at least the first back-off (1 s);
//! - every URL of those hosts is fetched in the end (its last answer the page),
//!   except a URL answered 429/503 on all its `max_url_attempts` (2) tries, whose
//!   last answer is then its page: at most one per host;
//! - other hosts are not held: they are requested while the first host rests;
//! - the admin status lists the resting host with its reason while it rests.

use std::collections::BTreeMap;
use std::time::Duration;

use spool::protocol::BackOffReason;
use tests::spoolout::Returned;
use tests::system::{Knobs, STATUS_POLL, System};
use tests::websim::{LogLine, Websim};

const APP: &str = "throttle";

/// The requests of each Host name, in order of arrival (robots.txt included).
fn by_host(log: &[LogLine]) -> BTreeMap<String, Vec<&LogLine>> {
    let mut out: BTreeMap<String, Vec<&LogLine>> = BTreeMap::new();
    for l in log {
        out.entry(l.name()).or_default().push(l);
    }
    for v in out.values_mut() {
        v.sort_by_key(|l| l.start_us);
    }
    out
}

/// For each answer with `status` among `lines`: the time from its first byte
/// leaving websim to the start of the host's next request, in ms.
fn gaps_after(lines: &[&LogLine], status: u16) -> Vec<u64> {
    lines
        .windows(2)
        .filter(|w| w[0].status == status)
        .map(|w| w[1].start_us.saturating_sub(w[0].write_from_us) / 1000)
        .collect()
}

#[test]
fn hosts_that_ask_for_less_get_less_and_lose_nothing() {
    let ws = Websim::start(&[
        "--hosts",
        "20",
        "--pages",
        "150",
        "--seed",
        "5",
        "--throttle",
    ]);
    let hosts = ws.hosts();
    let name_of = |rank: u32| {
        hosts
            .iter()
            .find(|h| h.rank == rank)
            .map(|h| h.name.clone())
            .expect("a host of that rank")
    };
    let (retry_after, slow_down, burst) = (name_of(0), name_of(1), name_of(2));

    let mut sys = System::new(&ws, &Knobs::default());
    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.wait_components(1, 1, Duration::from_secs(30));
    let urls: Vec<String> = ws.manifest().into_iter().map(|r| r.url).collect();
    sys.publish_requests(APP, 50, &urls);

    let mut back = Returned::new(&sys.spool, APP);
    let mut listed = None;
    let mut last = None;
    let ended = test_support::wait::poll_every(Duration::from_secs(90), STATUS_POLL, || {
        back.refresh();
        let status = sys.status();
        if listed.is_none() {
            listed = status
                .backed_off
                .iter()
                .find(|b| b.origin.contains(&retry_after))
                .cloned();
        }
        let done = back.open(&urls) == 0 && status.queued_urls == 0 && status.in_flight == 0;
        last = Some(status);
        done.then_some(())
    });
    assert!(
        ended.is_some(),
        "{} of {} URLs open; status {last:?}\n{}",
        back.open(&urls),
        urls.len(),
        sys.reports()
    );

    // The admin status showed the host resting for its Retry-After.
    let listed = listed.expect("the Retry-After host was listed as backed off");
    assert!(
        matches!(
            listed.reason,
            BackOffReason::Throttled {
                status: 429,
                retry_after_ms: Some(5000),
                ..
            }
        ),
        "{listed:?}"
    );

    let log = ws.log();
    let hosts_log = by_host(&log);
    let lines = |name: &str| hosts_log.get(name).cloned().unwrap_or_default();

    // Retry-After: 5 is honoured.
    let ra = lines(&retry_after);
    let ra_gaps = gaps_after(&ra, 429);
    assert_eq!(ra_gaps.len(), 2, "two 429s, each followed by a request");
    for gap in &ra_gaps {
        assert!(*gap >= 5_000, "a request {gap} ms after Retry-After: 5");
    }
    // Without it, the waits grow.
    let sd_gaps = gaps_after(&lines(&slow_down), 429);
    assert_eq!(sd_gaps.len(), 3, "{sd_gaps:?}");
    assert!(sd_gaps[0] >= 1_000, "{sd_gaps:?}");
    assert!(
        sd_gaps.windows(2).all(|w| w[1] > w[0]),
        "gaps after 429s do not grow: {sd_gaps:?}"
    );
    let burst_gaps = gaps_after(&lines(&burst), 503);
    assert_eq!(burst_gaps.len(), 3, "{burst_gaps:?}");
    assert!(burst_gaps.iter().all(|g| *g >= 1_000), "{burst_gaps:?}");

    // Nothing lost: every URL of those hosts ended with its page, and its last
    // answer is the manifest's, but for at most one URL per host whose tries ran out.
    let manifest = ws.manifest();
    for name in [&retry_after, &slow_down, &burst] {
        let mine: Vec<_> = manifest
            .iter()
            .filter(|r| tests::requestlog::url_host(&r.url) == *name)
            .collect();
        assert!(!mine.is_empty());
        let mut last_status = BTreeMap::new();
        for l in lines(name) {
            last_status.insert(l.url(), l.status);
        }
        let mut ran_out = 0;
        for row in &mine {
            assert!(back.pages.contains_key(&row.url), "{} has no page", row.url);
            match last_status.get(&row.url) {
                Some(s) if *s == row.status => {}
                Some(429 | 503) => ran_out += 1,
                other => panic!("{}: last answer {other:?}, want {}", row.url, row.status),
            }
        }
        let expect_max = usize::from(name != &retry_after);
        assert!(
            ran_out <= expect_max,
            "{name}: {ran_out} URLs ended throttled"
        );
    }

    // Other hosts went on while the first host rested.
    let first = ra.iter().find(|l| l.status == 429).expect("a 429");
    let (from, to) = (first.write_from_us, first.write_from_us + 5_000_000);
    let others = log
        .iter()
        .filter(|l| {
            let n = l.name();
            n != retry_after && n != slow_down && n != burst
        })
        .filter(|l| (from..to).contains(&l.start_us))
        .count();
    assert!(others > 0, "no other host was requested while one rested");
    let errors = sys.error_lines();
    assert!(errors.is_empty(), "{errors:?}");
}
