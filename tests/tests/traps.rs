//! Issue 11, Done-when 3: a crawl with the default `app:` settings against a websim
//! with its trap hosts (`--traps`): a session-id trap (fresh `?sid=`,
//! `;jsessionid=`... on every link), an endless calendar and page list, and a chain
//! of 50 redirects. Each trap host costs at most [`MAX_TRAP_REQUESTS`] requests,
//! the chain at most [`MAX_CHAIN_REQUESTS`], the crawl ends by itself, and every
//! status-200 page of the manifest (the normal hosts' and the trap hosts' real
//! pages) is stored.
//!
//! The crawling system (manager, resolver, downloaders) is `tests::system`'s; the
//! application is `polycrawl app` with only its directories and seeds set.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tests::bin;
use tests::process::ProcessGuard;
use tests::repository::RepoScan;
use tests::system::{Knobs, System};
use tests::websim::{LogLine, Websim};

const APP_ID: &str = "bfs-1";
/// What a trap host may cost at most, robots.txt included.
const MAX_TRAP_REQUESTS: usize = 1_000;
/// What the 50-hop chain may cost: its first URL and five redirects followed.
const MAX_CHAIN_REQUESTS: usize = 6;
/// Time for the whole crawl to end by itself.
const CRAWL_TIMEOUT: Duration = Duration::from_secs(200);

/// `app:` with the directories and seeds only: every trap defence at its default.
fn app_section(seeds: &Path, state: &Path, repo: &Path) -> String {
    format!(
        r#"    app: (
        state_dir: {state:?},
        repository_dir: {repo:?},
        seeds_file: Some({seeds:?}),
        scan_interval_ms: 200,
        idle_check_ms: 500,
    ),
"#,
        state = state.display().to_string(),
        repo = repo.display().to_string(),
        seeds = seeds.display().to_string(),
    )
}

/// URL of a log line as websim's manifest writes it (host lower-case).
fn log_url(l: &LogLine) -> String {
    format!("{}://{}{}", l.scheme, l.host.to_ascii_lowercase(), l.target)
}

/// The host of a log line, without the port.
fn log_host(l: &LogLine) -> String {
    let h = l.host.to_ascii_lowercase();
    h.rsplit_once(':')
        .map_or(h.clone(), |(name, _)| name.to_owned())
}

#[test]
fn trap_hosts_cost_a_bounded_number_of_requests_and_the_crawl_ends() {
    let started = Instant::now();
    let ws = Websim::start(&[
        "--hosts",
        "40",
        "--pages",
        "1200",
        "--seed",
        "7",
        "--slow-ms",
        "50",
        "--traps",
    ]);
    let hosts = ws.hosts();
    let traps: Vec<_> = hosts.iter().filter(|h| h.has("trap")).collect();
    assert_eq!(traps.len(), 3, "websim --traps has three trap hosts");
    let trap_name = |kind: &str| {
        traps
            .iter()
            .find(|h| h.has(kind))
            .unwrap_or_else(|| panic!("no {kind} trap host"))
            .name
            .clone()
    };
    let (sessions, calendar, redirects) = (
        trap_name("sessions"),
        trap_name("calendar"),
        trap_name("redirects"),
    );

    let knobs = Knobs {
        interval_ms: 20,
        ip_min_interval_ms: 10,
        ..Knobs::default()
    };
    let mut sys = System::new(&ws, &knobs);
    let state: PathBuf = sys.dir().join("app-state");
    let repo: PathBuf = sys.dir().join("repository");
    let config = knobs.config(&ws, "admin-secret-for-tests").replacen(
        "(\n",
        &format!("(\n{}", app_section(&ws.path("seeds"), &state, &repo)),
        1,
    );
    std::fs::write(&sys.config, config).expect("writing the config");
    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.start_downloader("dl-2");
    sys.wait_components(2, 1, Duration::from_secs(30));

    let addr = sys.addr.expect("the manager runs").to_string();
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("app")
        .arg("--config")
        .arg(&sys.config)
        .args(["--manager", &addr, "--id", APP_ID])
        .arg("--spool")
        .arg(&sys.spool)
        .arg("--state")
        .arg(&state)
        .arg("--repo")
        .arg(&repo)
        .arg("--seeds")
        .arg(ws.path("seeds"))
        .env("POLYCRAWL_TOKEN", sys.token())
        .env_remove("POLYCRAWL_ADMIN_TOKEN")
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info");
    let mut app = ProcessGuard::spawn("app", cmd, sys.dir()).expect("starting polycrawl app");
    // While it runs, the admin page shows the application's host budgets: keep the
    // last figures seen (the application leaves the page when it exits).
    let deadline = Instant::now() + CRAWL_TIMEOUT;
    let mut figures = serde_json::Value::Null;
    let status = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let tick = left.min(Duration::from_millis(500));
        if let Some(status) = app.wait_exit(tick).expect("waiting for the app") {
            break Some(status);
        }
        if left.is_zero() {
            break None;
        }
        let r = sys.api("GET", "/api/stats", "", false);
        let stats: serde_json::Value = serde_json::from_slice(&r.body).expect("stats JSON");
        for c in stats["components"].as_array().into_iter().flatten() {
            if c["role"] == "application" && !c["state"]["app"].is_null() {
                figures = c["state"]["app"].clone();
            }
        }
    };
    let Some(status) = status else {
        let log = ws.log();
        let mut per_host: BTreeMap<String, usize> = BTreeMap::new();
        for l in &log {
            *per_host.entry(log_host(l)).or_default() += 1;
        }
        panic!(
            "{}\nrequests per trap host so far: {:?}\n{}",
            app.report(&format!(
                "the crawl did not end by itself in {CRAWL_TIMEOUT:?}"
            )),
            traps
                .iter()
                .map(|h| (h.name.as_str(), per_host.get(&h.name).copied().unwrap_or(0)))
                .collect::<Vec<_>>(),
            sys.reports()
        );
    };
    std::thread::sleep(Duration::from_millis(200)); // stdout reader thread.
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

    std::thread::sleep(Duration::from_millis(400)); // websim flushes its log.
    let log = ws.log();
    let mut per_host: BTreeMap<String, usize> = BTreeMap::new();
    for l in &log {
        *per_host.entry(log_host(l)).or_default() += 1;
    }
    let cost = |name: &str| per_host.get(name).copied().unwrap_or(0);
    let chain = log
        .iter()
        .filter(|l| log_host(l) == redirects && l.target.starts_with("/chain/"))
        .count();
    let session_urls: HashSet<String> = log
        .iter()
        .filter(|l| log_host(l) == sessions && !l.is_robots())
        .map(log_url)
        .collect();
    let session_requests = log
        .iter()
        .filter(|l| log_host(l) == sessions && !l.is_robots())
        .count();

    let scan = RepoScan::read(&repo).expect("reading the repository");
    let manifest = ws.manifest();
    let expected: Vec<String> = manifest
        .iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url.clone())
        .collect();
    let missing: Vec<&String> = expected
        .iter()
        .filter(|u| !scan.ok_urls.contains(*u))
        .collect();
    let trap_real = manifest
        .iter()
        .filter(|r| {
            traps
                .iter()
                .any(|t| r.url.contains(&format!("://{}", t.name)))
        })
        .count();

    eprintln!(
        "traps: crawl ended by itself after {elapsed:?}; app summary: {summary}\n\
         requests: {} in all; sessions host {} ({session_requests} page requests, {} distinct \
         URLs, {} real pages), calendar host {}, redirects host {} (chain {chain}); \
         coverage {}/{} status-200 manifest URLs ({} of them trap hosts' real pages)",
        log.len(),
        cost(&sessions),
        session_urls.len(),
        tests_real_pages(&manifest, &sessions),
        cost(&calendar),
        cost(&redirects),
        expected.len() - missing.len(),
        expected.len(),
        trap_real,
    );
    for t in &traps {
        assert!(
            cost(&t.name) <= MAX_TRAP_REQUESTS,
            "{} cost {} requests (at most {MAX_TRAP_REQUESTS})",
            t.name,
            cost(&t.name)
        );
    }
    assert!(
        chain <= MAX_CHAIN_REQUESTS,
        "the redirect chain cost {chain} requests (at most {MAX_CHAIN_REQUESTS})"
    );
    assert!(chain >= 1, "the chain was never reached");
    assert!(
        !summary.contains(" 0 URLs cut by host budgets"),
        "no host budget was used up: the calendar's pager should have: {summary}"
    );
    // The admin page showed the budgets: hosts over budget, and a bounded top list,
    // most cut first, each over its budget.
    let top = figures["top_cut"].as_array().cloned().unwrap_or_default();
    let cuts: Vec<u64> = top.iter().map(|h| h["cut"].as_u64().unwrap_or(0)).collect();
    assert!(
        figures["hosts_cut"].as_u64().unwrap_or(0) >= 1
            && !top.is_empty()
            && top.len() <= spool::protocol::MAX_TOP_HOSTS
            && cuts.windows(2).all(|w| w[0] >= w[1])
            && figures["urls_cut"].as_u64().unwrap_or(0) >= cuts.iter().sum::<u64>(),
        "the admin page's budget figures are wrong or missing: {figures}"
    );
    eprintln!("admin page budgets: {figures}");
    assert!(
        cost(&calendar) > 10,
        "the calendar host was hardly crawled ({}): the test does not test it",
        cost(&calendar)
    );
    // Session ids are stripped: the sessions host's real pages, each once.
    assert_eq!(
        (session_urls.len(), session_requests),
        (
            tests_real_pages(&manifest, &sessions),
            tests_real_pages(&manifest, &sessions)
        ),
        "sessions host: {session_urls:?}"
    );
    assert!(
        missing.is_empty(),
        "{} of {} status-200 URLs not stored, e.g. {:?}",
        missing.len(),
        expected.len(),
        missing.iter().take(10).collect::<Vec<_>>()
    );
    let errors = sys.error_lines();
    assert!(errors.is_empty(), "ERROR lines:\n{}", errors.join("\n"));
}

/// The manifest rows of host `name`.
fn tests_real_pages(manifest: &[tests::websim::ManifestRow], name: &str) -> usize {
    manifest
        .iter()
        .filter(|r| {
            r.url.contains(&format!("://{name}:")) || r.url.contains(&format!("://{name}/"))
        })
        .count()
}
