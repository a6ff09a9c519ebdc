//! kill -9 of the breadth-first application (`polycrawl app`) mid-crawl, then a
//! restart on the same state, spool and repository with the same id: the crawl
//! still ends by itself (exit 0) with every status-200 page of websim's manifest
//! stored, nothing of `never.txt` requested, and no URL fetched more than twice
//! (a URL may be fetched again when the application republishes what it had
//! merged but not recorded as published before the kill); and its `crawl.log`
//! holds exactly one line per stored response record, none lost or repeated by
//! the kill.
//!
//! The crawling system (manager, resolver, downloaders) is `tests::system`'s and
//! keeps running through the application's crash.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tests::process::ProcessGuard;
use tests::repository::RepoScan;
use tests::system::{Knobs, System};
use tests::websim::{LogLine, Websim};

const APP_ID: &str = "bfs-1";
/// Pages stored before the application is killed.
const KILL_AFTER_PAGES: usize = 400;
/// Time to reach [`KILL_AFTER_PAGES`].
const FIRST_RUN: Duration = Duration::from_secs(60);
/// Time for the restarted application to complete the crawl.
const SECOND_RUN: Duration = Duration::from_secs(90);

static SERIAL: Mutex<()> = Mutex::new(());

/// The application's directories (kept across the restart).
struct AppDirs {
    state: PathBuf,
    repo: PathBuf,
}

/// `app:` settings for a quick crawl of a small web: frequent scans, a short idle
/// check and small request files (many publications, so a kill lands between them);
/// `extra` adds settings (the importance order's).
fn app_section(seeds: &Path, dirs: &AppDirs, extra: &str) -> String {
    format!(
        r#"    app: (
        {extra}
        state_dir: {state:?},
        repository_dir: {repo:?},
        seeds_file: Some({seeds:?}),
        scope: open,
        allowed_domains: [],
        urls_per_request_file: 100,
        scan_interval_ms: 200,
        idle_check_ms: 500,
    ),
"#,
        state = dirs.state.display().to_string(),
        repo = dirs.repo.display().to_string(),
        seeds = seeds.display().to_string(),
    )
}

fn start_app(sys: &System, ws: &Websim, dirs: &AppDirs, run: usize) -> ProcessGuard {
    let cmd = sys.app_command(APP_ID, &dirs.state, &dirs.repo, &ws.path("seeds"));
    ProcessGuard::spawn(&format!("app-{run}"), cmd, sys.dir()).expect("starting polycrawl app")
}

/// URL of a log line as websim's manifest writes it (host lower-case).
fn log_url(l: &LogLine) -> String {
    format!("{}://{}{}", l.scheme, l.host.to_ascii_lowercase(), l.target)
}

#[test]
fn app_killed_mid_crawl_restarts_and_loses_no_url() {
    killed_mid_crawl("");
}

/// The same in importance order (DESIGN.md section 7): the pool of URLs found and
/// not yet requested is saved with each publication, so the kill loses none of
/// them either. A small window keeps most of the frontier in the pool at the kill.
#[test]
fn importance_ordered_app_killed_mid_crawl_loses_no_url() {
    killed_mid_crawl("order: importance, importance_window: 60,");
}

/// Run 1 to [`KILL_AFTER_PAGES`], kill -9, run 2 to the end; `extra` app settings.
fn killed_mid_crawl(extra: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let started = Instant::now();
    let ws = Websim::start(&[
        "--hosts",
        "40",
        "--pages",
        "1200",
        "--seed",
        "7",
        "--slow-ms",
        "200",
    ]);
    let knobs = Knobs {
        interval_ms: 50,
        ip_min_interval_ms: 25,
        ..Knobs::default()
    };
    let websim_ready = started.elapsed();
    let mut sys = System::new(&ws, &knobs);
    let dirs = AppDirs {
        state: sys.dir().join("app-state"),
        repo: sys.dir().join("repository"),
    };
    // The system's config plus an `app:` section, in one file every process reads.
    let config = knobs.config(&ws, "admin-secret-for-tests").replacen(
        "(\n",
        &format!("(\n{}", app_section(&ws.path("seeds"), &dirs, extra)),
        1,
    );
    std::fs::write(&sys.config, config).expect("writing the config");

    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.start_downloader("dl-2");
    sys.wait_components(2, 1, Duration::from_secs(30));

    let system_ready = started.elapsed();

    // Run 1: until the repository holds some pages, then kill -9.
    let mut app = start_app(&sys, &ws, &dirs, 1);
    let stored = test_support::wait::poll_every(FIRST_RUN, Duration::from_millis(50), || {
        if let Some(status) = app.wait_exit(Duration::ZERO).expect("app status") {
            panic!(
                "{}",
                app.report(&format!(
                    "exited ({status}) before {KILL_AFTER_PAGES} pages: raise the web's size"
                ))
            );
        }
        // A batch may be renamed in while listing: retry on the next tick.
        let scan = RepoScan::read(&dirs.repo).ok()?;
        (scan.responses > KILL_AFTER_PAGES).then_some(scan.responses)
    });
    let stored_at_kill = stored.unwrap_or_else(|| {
        panic!(
            "{KILL_AFTER_PAGES} pages not stored within {FIRST_RUN:?}\n{}\n{}",
            app.report("running"),
            sys.reports()
        )
    });
    let killed_at = started.elapsed();
    let app1_stderr = app.stderr();
    drop(app); // SIGKILL and reap.
    let requests_at_kill = ws.log().len();
    if extra.contains("importance") {
        // The pool held URLs at the kill: the restart must request them.
        let pool = std::fs::read_to_string(dirs.state.join("importance")).unwrap_or_default();
        let held = pool.lines().count().saturating_sub(1);
        println!("importance pool at the kill: {held} URLs");
        assert!(
            held > 0,
            "the pool was empty at the kill: the test shows nothing"
        );
    }

    // Run 2: same id and directories; must complete by itself.
    let mut app = start_app(&sys, &ws, &dirs, 2);
    let status = app.wait_exit(SECOND_RUN).expect("waiting for the app");
    let Some(status) = status else {
        panic!(
            "{}\n{}",
            app.report(&format!("not complete {SECOND_RUN:?} after the restart")),
            sys.reports()
        );
    };
    assert!(
        status.success(),
        "{}",
        app.report(&format!("exited {status}"))
    );
    let summary = app
        .stdout()
        .into_iter()
        .rev()
        .find(|l| l.starts_with("app "))
        .unwrap_or_default();
    let elapsed = started.elapsed();

    // The oracle.
    let log = ws.flushed_log();
    let scan = RepoScan::read(&dirs.repo).expect("reading the repository");
    let expected: HashSet<String> = ws
        .manifest()
        .into_iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url)
        .collect();
    let missing: Vec<&String> = expected
        .iter()
        .filter(|u| !scan.ok_urls.contains(*u))
        .collect();
    let extra: Vec<&String> = scan
        .ok_urls
        .iter()
        .filter(|u| !expected.contains(*u))
        .collect();
    let never: HashSet<String> = ws.never().into_iter().collect();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for l in log.iter().filter(|l| !l.is_robots()) {
        *counts.entry(log_url(l)).or_default() += 1;
    }
    let never_fetched: Vec<&String> = counts.keys().filter(|u| never.contains(*u)).collect();
    let mut by_times: BTreeMap<usize, usize> = BTreeMap::new();
    for n in counts.values() {
        *by_times.entry(*n).or_default() += 1;
    }
    let twice = by_times.get(&2).copied().unwrap_or(0);
    let over_twice: Vec<(&String, &usize)> = counts.iter().filter(|(_, n)| **n > 2).collect();

    eprintln!(
        "app crash: websim ready at {websim_ready:?}, system at {system_ready:?}; killed at {killed_at:?} with {stored_at_kill} responses stored and \
         {requests_at_kill} requests logged; restart completed at {elapsed:?}\n\
         app summary: {summary}\n\
         coverage {}/{} ({:.1} %), extra 200 URLs {}, repository {} files {} responses {:?}\n\
         requests {} ({} page URLs), fetched twice {twice}, more than twice {}, never.txt fetched {}",
        expected.len() - missing.len(),
        expected.len(),
        100.0 * (expected.len() - missing.len()) as f64 / expected.len().max(1) as f64,
        extra.len(),
        scan.files,
        scan.responses,
        scan.by_status,
        log.len(),
        counts.len(),
        over_twice.len(),
        never_fetched.len(),
    );
    assert!(
        missing.is_empty(),
        "{} of {} status-200 URLs not stored after the restart, e.g. {:?}\n\
         --- app-1 (killed) stderr tail\n{}\n{}",
        missing.len(),
        expected.len(),
        missing.iter().take(10).collect::<Vec<_>>(),
        tail(&app1_stderr, 40),
        app.report("exited")
    );
    assert!(
        extra.is_empty(),
        "stored 200 URLs not in the manifest: {extra:?}"
    );
    assert!(
        never_fetched.is_empty(),
        "never.txt URLs requested: {never_fetched:?}"
    );
    assert!(
        over_twice.is_empty(),
        "URLs fetched more than twice: {over_twice:?}"
    );
    // Depths survive the restart: they travel with the URL (request-file hint, WARC
    // field), so a page requested by run 1 and fetched in run 2 keeps its depth. No
    // path is shorter than the web's breadth-first level, and only seeds are depth 0.
    let seeds: HashSet<String> = ws.seeds().into_iter().collect();
    let level: HashMap<String, u32> = ws
        .manifest()
        .into_iter()
        .map(|r| (r.url, r.depth))
        .collect();
    let mut wrong_depth = Vec::new();
    for url in &expected {
        let Some(depths) = scan.depths.get(url) else {
            wrong_depth.push(format!("{url}: no depth field"));
            continue;
        };
        let bfs = level.get(url).copied().unwrap_or(0);
        for &d in depths {
            let seed = seeds.contains(url);
            if (seed && d != 0) || (!seed && (d == 0 || d < bfs)) {
                wrong_depth.push(format!("{url}: depth {d}, level {bfs}, seed {seed}"));
            }
        }
    }
    let deep = expected
        .iter()
        .filter_map(|u| scan.depths.get(u))
        .flatten()
        .filter(|&&d| d > 1)
        .count();
    eprintln!(
        "depths: {deep} pages deeper than 1, {} wrong",
        wrong_depth.len()
    );
    assert!(
        wrong_depth.is_empty(),
        "pages stored with a wrong depth after the restart: {:?}",
        wrong_depth.iter().take(10).collect::<Vec<_>>()
    );
    assert!(
        deep > 0,
        "no page deeper than 1: the web is too shallow to check depths"
    );
    // crawl.log survives the kill: after the restart every stored response has
    // exactly one line, and no line is repeated or left without its record.
    let text = std::fs::read_to_string(dirs.state.join("crawl.log")).expect("crawl.log");
    let crawl_log = tests::crawllog::parse_log(&text);
    let (responses, _) = tests::crawllog::warc_records(&dirs.repo);
    let diff = tests::crawllog::differences(&crawl_log, &responses);
    eprintln!(
        "crawl.log: {} lines, {} response records, {} keys differ",
        crawl_log.len(),
        responses.values().sum::<u64>(),
        diff.len()
    );
    assert!(
        diff.is_empty(),
        "crawl.log vs the WARC files after kill -9 and restart (log count, WARC count): {:?}",
        &diff[..diff.len().min(10)]
    );
    let errors = sys.error_lines();
    assert!(errors.is_empty(), "ERROR lines:\n{}", errors.join("\n"));
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
