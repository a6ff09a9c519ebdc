//! Issue 43, item 1: `crawl.log` in Heritrix's layout and the end-of-crawl reports.
//! `polycrawl demo` crawls a small websim web (its redirects, 404s, robots.txt
//! exclusions, dead and slow hosts) with the default settings, which write
//! `OUT/state/app/crawl.log` and the reports beside it. Then, read with parsers of
//! this file (not the application's) and the project's WARC reader:
//!
//! - every response record of the repository's WARC files has exactly one log line
//!   with its URL, status and payload size, and every log line with an HTTP status
//!   is such a record (the two multisets are equal); the lines annotated
//!   `duplicate:digest` are as many as storage's identical-payload revisit records;
//! - the outcome lines (negative codes) agree with the summary's outcome counts,
//!   reason by reason, and carry Heritrix's code for their reason;
//! - the web had what the log must show: redirects, 404s and robots exclusions;
//! - the hosts report's totals of pages and bytes equal the summary's `pages
//!   stored` and `payload bytes`, and the WARC files' response records and bytes;
//!   the status report counts every line; the seeds report names every seed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tests::bin;
use tests::crawllog::{differences, parse_log, warc_records};
use tests::process::ProcessGuard;

/// Ample time for the small web below.
const DEMO_TIMEOUT: Duration = Duration::from_secs(300);

/// `N` of `..., N <what>` in the summary line.
fn figure(summary: &str, what: &str) -> u64 {
    let at = summary
        .find(what)
        .unwrap_or_else(|| panic!("no {what:?} in {summary}"));
    summary[..at]
        .split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number before {what:?} in {summary}"))
}

/// The summary's outcome counts by reason.
fn outcomes(summary: &str) -> BTreeMap<String, u64> {
    let Some(start) = summary.find(" outcomes (") else {
        return BTreeMap::new();
    };
    let rest = &summary[start + " outcomes (".len()..];
    rest[..rest.find(')').expect(")")]
        .split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("reason=n");
            (k.to_owned(), v.parse().expect("count"))
        })
        .collect()
}

/// Heritrix's code for each outcome reason, as docs/archive.md documents it.
fn code_of(reason: &str) -> i32 {
    match reason {
        "dns_failure" => -6,
        "connect_failure" => -2,
        "timeout" => -4,
        "bad_response" => -3,
        "invalid_url" => -7,
        "too_many_failures" => -60,
        "robots_excluded" => -9998,
        "blacklisted" => -5001,
        "forbidden_address" => -5002,
        other => panic!("unknown outcome reason {other}"),
    }
}

/// A TSV report's rows, after its header line (which must start with `#`).
fn report(path: &Path) -> Vec<Vec<String>> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut lines = text.lines();
    let header = lines.next().expect("a header line");
    assert!(header.starts_with('#'), "{}: {header}", path.display());
    let columns = header.split('\t').count();
    lines
        .map(|l| {
            let row: Vec<String> = l.split('\t').map(str::to_owned).collect();
            assert_eq!(row.len(), columns, "{}: {l}", path.display());
            row
        })
        .collect()
}

#[test]
fn crawl_log_matches_the_warc_files_and_the_reports_match_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo-out");
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("demo")
        .args(["--hosts", "30", "--pages", "600", "--seed", "3"])
        .arg("--out")
        .arg(&out)
        .env("RUST_LOG", "info");
    let mut demo = ProcessGuard::spawn("demo", cmd, dir.path()).expect("starting polycrawl demo");
    let status = demo.wait_exit(DEMO_TIMEOUT).expect("waiting for the demo");
    let Some(status) = status else {
        let _ = demo.terminate(Duration::from_secs(30));
        panic!("{}", demo.report("still running"));
    };
    assert!(
        status.success(),
        "{}",
        demo.report(&format!("exited {status}"))
    );
    let stdout = demo.stdout();
    let summary = stdout
        .iter()
        .find_map(|l| l.strip_prefix("app:"))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no app line in\n{}", stdout.join("\n")))
        .to_owned();
    eprintln!("{summary}");

    let state = out.join("state").join("app");
    let text = std::fs::read_to_string(state.join("crawl.log")).expect("crawl.log");
    let log = parse_log(&text);
    let (responses, revisits) = warc_records(&out.join("repository"));

    // Every response record has exactly one line, and every page line a record.
    let records: u64 = responses.values().sum();
    assert!(records > 300, "a real crawl: {records} response records");
    let diff = differences(&log, &responses);
    assert!(
        diff.is_empty(),
        "{} (URL, status, size) keys differ (log count, WARC count), e.g. {:?}",
        diff.len(),
        &diff[..diff.len().min(10)]
    );
    let duplicates = log
        .iter()
        .filter(|l| l.annotations.iter().any(|a| a == "duplicate:digest"))
        .count() as u64;
    assert_eq!(duplicates, revisits, "duplicate lines = revisit records");

    // The web's redirects, 404s and robots exclusions are in the log.
    let count = |f: &dyn Fn(i32) -> bool| log.iter().filter(|l| f(l.status)).count();
    assert!(count(&|s| (300..400).contains(&s)) > 0, "redirects logged");
    assert!(count(&|s| s == 404) > 0, "404s logged");
    assert!(count(&|s| s == -9998) > 0, "robots exclusions logged");

    // Outcome lines agree with the summary, reason by reason, with their code.
    let mut by_reason: BTreeMap<String, u64> = BTreeMap::new();
    for l in log.iter().filter(|l| l.status < 0) {
        assert_eq!(l.size, None, "an outcome has no size");
        let reason = l
            .annotations
            .iter()
            .find_map(|a| a.strip_prefix("reason:"))
            .expect("an outcome line names its reason");
        assert_eq!(l.status, code_of(reason), "{reason}");
        *by_reason.entry(reason.to_owned()).or_default() += 1;
    }
    assert_eq!(by_reason, outcomes(&summary), "outcome lines vs {summary}");

    // The hosts report adds up to the summary and the WARC files.
    let hosts = report(&state.join("hosts-report.tsv"));
    let total = |col: usize| -> u64 { hosts.iter().map(|r| r[col].parse::<u64>().unwrap()).sum() };
    let (host_pages, host_bytes) = (total(1), total(2));
    let warc_bytes: u64 = responses.iter().map(|((_, _, size), n)| size * n).sum();
    assert_eq!(host_pages, figure(&summary, " pages stored"), "{summary}");
    assert_eq!(host_bytes, figure(&summary, " payload bytes"), "{summary}");
    assert_eq!((host_pages, host_bytes), (records, warc_bytes));
    let outcome_total: u64 = by_reason.values().sum();
    assert_eq!(total(10), outcome_total, "outcomes by host");
    assert!(hosts.len() > 10, "{} hosts", hosts.len());

    // The status report counts every line; the seeds report names each seed.
    let codes = report(&state.join("responsecode-report.tsv"));
    let counted: u64 = codes.iter().map(|r| r[1].parse::<u64>().unwrap()).sum();
    assert_eq!(counted, log.len() as u64);
    let mimes = report(&state.join("mimetype-report.tsv"));
    assert_eq!(
        mimes
            .iter()
            .map(|r| r[1].parse::<u64>().unwrap())
            .sum::<u64>(),
        records
    );
    let seeds = report(&state.join("seeds-report.tsv"));
    assert!(!seeds.is_empty(), "the seeds report lists the seeds");
    assert!(
        seeds.iter().all(|r| r[1] != "-"),
        "every seed of websim was fetched: {seeds:?}"
    );
}
