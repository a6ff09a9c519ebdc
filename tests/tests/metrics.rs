//! The crawl's figures across a kill -9 of the manager, and `/metrics` (issue 28,
//! Done-when 3): `polycrawl websim`, a manager, a resolver and a downloader fed
//! every URL of websim's manifest (no application), the manager killed with
//! SIGKILL mid-crawl and started again on the same state.
//!
//! - The totals did not reset: right after the restart the admin status counts at
//!   least the responses it counted before the kill.
//! - At the end the responses counted (`http_status`, over the whole crawl) and the
//!   pages total EQUAL the number of URLs with a `response` record in the spool's
//!   WARC page batches. This holds by construction: a report is counted in the same
//!   RocksDB batch that ends its URL, so a URL whose report was applied is never
//!   fetched again, and a URL fetched again after the kill had no report applied,
//!   so only its last fetch is counted. Each such URL is the one way the records
//!   exceed the count: the job was out at the kill, the downloader stored its page
//!   and dropped its report with the lost connection, and the restarted manager
//!   dispatched it again. So `records - urls` (pages stored twice) is at most the
//!   jobs a crash can leave in flight (`jobs_bound`). (The one exception, absent
//!   from this web: a URL whose lost job stored a page and whose fetch after the
//!   restart ends without one, a timeout say, is stored once and counted never.)
//!   Counting those first copies too would need reports the manager acknowledges
//!   after its commit and the downloader sends again to the next manager.
//! - `GET /metrics` parses with the official OpenMetrics parser
//!   (`prometheus_client.openmetrics.parser`, installed by `ops/setup.sh`) and holds the
//!   totals, the speed, the queue sizes and the hosts by state, with the admin
//!   status's values.

use std::process::Command;
use std::time::{Duration, Instant};

use tests::spoolout::Returned;
use tests::system::{Knobs, STATUS_POLL, System};
use tests::websim::Websim;

const APP: &str = "metrics";

fn responses(sys: &System) -> u64 {
    sys.status().http_status.iter().map(|c| c.count).sum()
}

/// Parses `text` with prometheus_client; `name value` per sample (labels folded
/// into the name as `name{k=v}`), one a line.
fn parse_with_prometheus_client(text: &str, dir: &std::path::Path) -> String {
    let path = dir.join("metrics.txt");
    std::fs::write(&path, text).expect("write");
    let script = r#"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    print('family', fam.name, fam.type)
    for s in fam.samples:
        labels = ','.join(f'{k}={v}' for k, v in sorted(s.labels.items()))
        print('sample', s.name + ('{' + labels + '}' if labels else ''), s.value)
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&path)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "the OpenMetrics parser refused /metrics ({}): {}\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn totals_survive_a_kill_and_metrics_parse() {
    let ws = Websim::start(&["--hosts", "30", "--pages", "600", "--seed", "9"]);
    let knobs = Knobs::default();
    let mut sys = System::new(&ws, &knobs);
    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.wait_components(1, 1, Duration::from_secs(30));
    let urls: Vec<String> = ws.manifest().into_iter().map(|r| r.url).collect();
    sys.publish_requests(APP, 50, &urls);

    // Mid-crawl: some responses counted, not all, and jobs out (websim's slow hosts
    // answer after 2 s): their pages are stored after the kill, their reports lost.
    let started = Instant::now();
    let mid_crawl =
        test_support::wait::poll_every(Duration::from_secs(60), Duration::from_millis(5), || {
            let status = sys.status();
            let counted: u64 = status.http_status.iter().map(|c| c.count).sum();
            (counted >= 100 && status.in_flight >= 2).then_some(())
        });
    assert!(mid_crawl.is_some(), "no progress");
    let before = responses(&sys);
    sys.kill_manager();
    sys.start_manager();
    let after = responses(&sys);
    assert!(
        after >= before,
        "totals reset by the restart: {before} -> {after}"
    );
    assert!(
        after < urls.len() as u64,
        "the kill came too late to test anything"
    );

    let mut back = Returned::new(&sys.spool, APP);
    let mut last = None;
    let limit = Duration::from_secs(120).saturating_sub(started.elapsed());
    let ended = test_support::wait::poll_every(limit, STATUS_POLL, || {
        back.refresh();
        let status = sys.status();
        let done = back.open(&urls) == 0 && status.queued_urls == 0 && status.in_flight == 0;
        last = Some(status);
        done.then_some(())
    });
    assert!(
        ended.is_some(),
        "{} of {} URLs open; status {last:?}",
        back.open(&urls),
        urls.len()
    );
    // Batches still open at the downloader are published within their age limit:
    // wait (three age limits at most, plus room for a loaded machine) until the
    // counts agree with the URLs stored, then judge.
    let limit = Duration::from_millis(tests::system::BATCH_AGE_MS * 3) + Duration::from_secs(10);
    let mut last = None;
    let agreed = test_support::wait::poll(limit, || {
        back.refresh();
        let counted = responses(&sys);
        let urls_stored = back.pages.len() as u64;
        let status = sys.status();
        let agree = (counted, status.pages_total) == (urls_stored, urls_stored);
        let look = (counted, urls_stored, status);
        if agree {
            return Some(look);
        }
        last = Some(look);
        None
    });
    // Judged on the last look when they never agreed.
    let (counted, urls_stored, status) = agreed.or(last).expect("looked at least once");
    let records = back.page_records() as u64;
    let bound = knobs.jobs_bound(1) as u64;
    eprintln!(
        "totals after the kill and the restart: {counted} responses counted, {} pages, \
         {records} response records for {urls_stored} URLs in the spool \
         ({} stored twice: out at the kill; in-flight bound {bound})",
        status.pages_total,
        records - urls_stored
    );
    // Equal, not bounded: the admin page counts each URL the repository holds once
    // (see the module docs for why the first copy of a URL in flight at the kill
    // cannot be counted without acknowledged reports).
    assert_eq!(
        (counted, status.pages_total),
        (urls_stored, urls_stored),
        "responses counted and pages total vs URLs with a response record \
         ({records} records)"
    );
    assert!(
        records - urls_stored <= bound,
        "{records} records for {urls_stored} URLs: more stored twice than jobs can be in \
         flight ({bound})"
    );

    // /metrics, read by the official parser.
    let status = sys.status();
    let answer = sys.api("GET", "/metrics", "", false);
    assert_eq!(answer.status, 200);
    let text = String::from_utf8_lossy(&answer.body).into_owned();
    let dir = tempfile::tempdir().expect("tempdir");
    let parsed = parse_with_prometheus_client(&text, dir.path());
    for family in [
        "family polycrawl_pages counter",
        "family polycrawl_requests counter",
        "family polycrawl_received_bytes counter",
        "family polycrawl_responses counter",
        "family polycrawl_fetch_errors counter",
        "family polycrawl_pages_per_second gauge",
        "family polycrawl_queued_urls gauge",
        "family polycrawl_jobs_in_flight gauge",
        "family polycrawl_hosts gauge",
    ] {
        assert!(parsed.contains(family), "{family} missing from\n{parsed}");
    }
    let sample = |name: &str| -> f64 {
        parsed
            .lines()
            .find_map(|l| l.strip_prefix(&format!("sample {name} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no sample {name} in\n{parsed}"))
    };
    assert_eq!(sample("polycrawl_pages_total") as u64, status.pages_total);
    assert_eq!(
        sample("polycrawl_requests_total") as u64,
        status.requests_total
    );
    assert!(
        status.requests_total >= counted,
        "requests include every response"
    );
    assert_eq!(
        sample("polycrawl_received_bytes_total") as u64,
        status.bytes_total
    );
    let by_class: f64 = ["1xx", "2xx", "3xx", "4xx", "5xx", "other"]
        .iter()
        .map(|c| sample(&format!("polycrawl_responses_total{{class={c}}}")))
        .sum();
    assert_eq!(by_class as u64, counted);
    assert_eq!(sample("polycrawl_queued_urls"), 0.0);
    sample("polycrawl_pages_per_second{window=minute}");
    sample("polycrawl_hosts{state=backed_off}");
    assert!(
        !text.contains("://") && !text.contains(".test"),
        "a URL or a host name as a label:\n{text}"
    );
}
