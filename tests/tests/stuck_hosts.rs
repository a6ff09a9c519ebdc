//! The crawl ends by itself when its last hosts never answer (issue 37,
//! Done-when 4): websim's five stuck hosts (`--stuck-hosts`: one refuses
//! connections, one accepts and never answers, one never answers robots.txt, one
//! answers it 500, one 503) are crawled with the rest of a small web by the
//! crawling system (`tests::system`'s manager, resolver and downloaders) and
//! `polycrawl app`. The crawl must end by itself within 3 minutes of its last
//! page; the stuck hosts must be tried more than once and a bounded number of
//! times, robots.txt only (never a page); every URL websim's manifest lists for
//! them must have an outcome; and the application's summary must name each of
//! them with the number of its URLs and the bound that ended it.
//!
//! The bounds are short here (`host_retry_window_ms` 15 s with 1 s and 2 s
//! back-offs, `max_failures` 50 so that the window binds) to keep the test
//! short, yet longer than the rest of the crawl takes, so the stuck hosts are its
//! last hosts: the crawl's end waits for them. The defaults (2 min, given up
//! within 165 s of a host's first try) are the manager's unit tests'
//! (`frontier::config`, `frontier::politeness`).

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tests::process::ProcessGuard;
use tests::repository::RepoScan;
use tests::system::{Knobs, System};
use tests::websim::{HostRow, LogLine, Websim};

const APP_ID: &str = "bfs-1";
/// The issue's bound: the crawl ends this long after its last page at most.
const AFTER_LAST_PAGE: Duration = Duration::from_secs(180);
/// `manager.frontier.host_retry_window_ms` here.
const WINDOW_MS: u64 = 15_000;
/// `manager.frontier.max_failures` here: more than fit in the window.
const MAX_FAILURES: u32 = 50;
/// Pages of each stuck host (websim's `stuck::STUCK_PAGES`), all in the manifest.
const STUCK_PAGES: usize = 3;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The manager's config with this test's bounds, and the `app:` section: the
/// directories, the seeds, short scans; every other app setting its default.
fn config(ws: &Websim, knobs: &Knobs, sys: &System, seeds: &std::path::Path) -> String {
    let app = format!(
        r#"    app: (
        state_dir: {state:?},
        repository_dir: {repo:?},
        seeds_file: Some({seeds:?}),
        scan_interval_ms: 200,
        idle_check_ms: 500,
    ),
"#,
        state = sys.dir().join("app-state").display().to_string(),
        repo = sys.dir().join("repository").display().to_string(),
        seeds = seeds.display().to_string(),
    );
    let text = knobs.config(ws, sys.admin_token());
    let bounds =
        format!("backoff_ms: [1000, 2000],\n            host_retry_window_ms: {WINDOW_MS},");
    assert!(text.contains("backoff_ms: [200, 500],"), "{text}");
    text.replacen("backoff_ms: [200, 500],", &bounds, 1)
        .replacen("(\n", &format!("(\n{app}"), 1)
}

/// Whether a log line is a request to host `name`.
fn to_host(l: &LogLine, name: &str) -> bool {
    l.name() == name
}

#[test]
fn a_crawl_whose_last_hosts_never_answer_ends_by_itself() {
    let started = Instant::now();
    let ws = Websim::start(&[
        "--hosts",
        "20",
        "--pages",
        "300",
        "--seed",
        "5",
        "--all-seeds",
        "--stuck-hosts",
    ]);
    let stuck: Vec<HostRow> = ws.hosts().into_iter().filter(|h| h.has("stuck")).collect();
    assert_eq!(stuck.len(), 5, "websim --stuck-hosts has five stuck hosts");
    let knobs = Knobs {
        interval_ms: 20,
        ip_min_interval_ms: 10,
        max_failures: MAX_FAILURES,
        ..Knobs::default()
    };
    let mut sys = System::new(&ws, &knobs);
    // Every generated host is a seed (websim's), the stuck hosts too: whatever
    // the application's default scope, their URLs are its to request.
    let seeds: PathBuf = sys.dir().join("seeds.txt");
    let mut seed_lines = ws.seeds();
    seed_lines.extend(
        stuck
            .iter()
            .map(|h| format!("http://{}:{}/", h.name, h.port)),
    );
    std::fs::write(&seeds, seed_lines.join("\n") + "\n").expect("writing the seeds");
    std::fs::write(&sys.config, config(&ws, &knobs, &sys, &seeds)).expect("writing the config");
    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.wait_components(1, 1, Duration::from_secs(30));

    let state = sys.dir().join("app-state");
    let repo = sys.dir().join("repository");
    let cmd = sys.app_command(APP_ID, &state, &repo, &seeds);
    let mut app = ProcessGuard::spawn("app", cmd, sys.dir()).expect("starting polycrawl app");

    // Ends by itself: wait for the exit (a generous ceiling, checked below
    // against the last page).
    let ceiling = Duration::from_secs(60) + AFTER_LAST_PAGE;
    let status = app.wait_exit(ceiling).expect("waiting for the app");
    let ended_us = now_us();
    let log = ws.flushed_log();
    let is_stuck = |l: &LogLine| stuck.iter().any(|h| to_host(l, &h.name));
    let last_page_us = log
        .iter()
        .filter(|l| !l.is_robots() && !is_stuck(l) && l.status != 0)
        .map(|l| l.end_us)
        .max()
        .unwrap_or(0);
    let Some(status) = status else {
        panic!(
            "{}\n{}",
            app.report(&format!(
                "the crawl did not end by itself within {ceiling:?}"
            )),
            sys.reports()
        );
    };
    assert!(
        status.success(),
        "{}",
        app.report(&format!("exited {status}"))
    );
    let after_last_page = Duration::from_micros(ended_us.saturating_sub(last_page_us));
    let summary = app
        .stdout()
        .into_iter()
        .rev()
        .find(|l| l.starts_with("app "))
        .unwrap_or_default();
    let last_stuck_us = log
        .iter()
        .filter(|l| is_stuck(l))
        .map(|l| l.end_us)
        .max()
        .unwrap_or(0);
    eprintln!(
        "stuck hosts: crawl ended by itself {:?} after it started, {after_last_page:?} \
         after its last page (its stuck hosts' last request ended {:?} after that page); \
         app summary: {summary}",
        started.elapsed(),
        Duration::from_micros(last_stuck_us.saturating_sub(last_page_us))
    );
    assert!(
        after_last_page <= AFTER_LAST_PAGE,
        "the crawl ended {after_last_page:?} after its last page (at most {AFTER_LAST_PAGE:?})"
    );
    assert!(
        tests::verdict::ended_with_traps_at_most(&summary),
        "every requested URL must have ended: {summary}"
    );

    // Every URL of the stuck hosts in the manifest has an outcome, named per
    // host in the summary with the bound that ended it.
    let unreachable = ws.unreachable();
    for h in &stuck {
        let rows: Vec<_> = unreachable
            .iter()
            .filter(|r| r.url.starts_with(&format!("http://{}:", h.name)))
            .collect();
        let want = if h.has("refused") {
            "connect_failure"
        } else {
            "too_many_failures"
        };
        assert_eq!(rows.len(), STUCK_PAGES, "{}: {rows:?}", h.name);
        assert!(
            rows.iter().all(|r| r.outcome == want),
            "{}: {rows:?}",
            h.name
        );
        let named = format!(
            "http://{}:{} ({STUCK_PAGES} URLs: given up after ",
            h.name, h.port
        );
        let at = summary
            .find(&named)
            .unwrap_or_else(|| panic!("the summary does not name {named:?}: {summary}"));
        let why = &summary[at + named.len()..];
        let why = &why[..why.find(';').unwrap_or(why.len())];
        assert!(
            why.contains(&format!("next try past host_retry_window_ms {WINDOW_MS}")),
            "{}: not ended by the window: {why}",
            h.name
        );
        // Retried, a bounded number of times, robots.txt only.
        let requests: Vec<&LogLine> = log.iter().filter(|l| to_host(l, &h.name)).collect();
        assert!(
            requests.iter().all(|l| l.is_robots()),
            "{}: a page was requested: {:?}",
            h.name,
            requests.iter().map(|l| l.url()).collect::<Vec<_>>()
        );
        if h.has("refused") {
            assert!(requests.is_empty(), "nothing listens on {}", h.name);
        } else {
            assert!(
                (2..=MAX_FAILURES as usize).contains(&requests.len()),
                "{}: {} tries (2 to {MAX_FAILURES})",
                h.name,
                requests.len()
            );
        }
    }
    // The rest of the web was crawled whole.
    let scan = RepoScan::read(&repo).expect("reading the repository");
    let missing: Vec<String> = ws
        .manifest()
        .into_iter()
        .filter(|r| r.status == 200 && !scan.ok_urls.contains(&r.url))
        .map(|r| r.url)
        .collect();
    assert!(
        missing.is_empty(),
        "status-200 URLs not stored: {missing:?}"
    );
    let errors = sys.error_lines();
    assert!(errors.is_empty(), "ERROR lines:\n{}", errors.join("\n"));
}
