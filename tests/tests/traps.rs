//! Crawls with the default `app:` settings against a websim with its nine trap
//! hosts (`--traps`): a session-id trap (fresh `?sid=`, `;jsessionid=`... on every
//! link), an endless year/month calendar, a chain of 50 redirects, endless
//! page-number sequences, endless counters, a maze of words no URL pattern
//! describes, session ids in paths and in an unknown query parameter, ever-deeper
//! paths, and query and day-paging calendars. Each trap host costs at most
//! [`MAX_TRAP_REQUESTS`] requests (from websim's request log), the chain at most
//! [`MAX_CHAIN_REQUESTS`], the crawl ends by itself, and every status-200 page of
//! the manifest (the normal hosts' and the trap hosts' real pages) is stored.
//!
//! - Issue 11, Done-when 3: the trap hosts are linked from one popular host, the
//!   seeds are the popular hosts; the maze host's budget binds, and the admin
//!   page shows it.
//! - Issue 29, Done-when 1 and 3, and issue 37, Done-when 3: every host is a seed
//!   (`--all-seeds`), the trap hosts too, and no host budget: the detectors alone
//!   cut the calendars, the pagers, the counters, the session ids, the maze and
//!   the ever-deeper paths, the normal hosts are crawled whole, and the summary
//!   and the admin page show each detector's cuts with the URLs it cut.
//!
//! The crawling system (manager, resolver, downloaders) is `tests::system`'s; the
//! application is `polycrawl app` with only its directories and seeds set.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tests::browser::{self, Browser};
use tests::process::ProcessGuard;
use tests::repository::RepoScan;
use tests::system::{Knobs, System};
use tests::websim::{HostRow, LogLine, ManifestRow, Websim};

const APP_ID: &str = "bfs-1";
/// What a trap host may cost at most, robots.txt included.
const MAX_TRAP_REQUESTS: usize = 1_000;
/// What the 50-hop chain may cost: its first URL and five redirects followed.
const MAX_CHAIN_REQUESTS: usize = 6;
/// Time for the whole crawl to end by itself.
const CRAWL_TIMEOUT: Duration = Duration::from_secs(200);

/// What a host of the path-sessions trap may cost: its 30 pages, each once, and
/// the pages under other ids that a breadth-first crawl has in flight before two
/// of them read as the same page (measured: 62 and 63 requests, robots.txt
/// included); three times its pages at most.
const MAX_PATH_SESSION_REQUESTS: usize = 90;

/// `app:` with the directories and seeds only: every trap defence at its default;
/// `extra` (whole lines) is added.
fn app_section(seeds: &Path, state: &Path, repo: &Path, extra: &str) -> String {
    format!(
        r#"    app: (
        state_dir: {state:?},
        repository_dir: {repo:?},
        seeds_file: Some({seeds:?}),
        scan_interval_ms: 200,
        idle_check_ms: 500,
{extra}    ),
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

/// What one crawl left to judge.
struct Crawled {
    sys: System,
    /// Websim's trap hosts.
    traps: Vec<HostRow>,
    log: Vec<LogLine>,
    /// Requests per host (websim's log).
    per_host: BTreeMap<String, usize>,
    manifest: Vec<ManifestRow>,
    scan: RepoScan,
    /// The application's last figures on the admin page (`/api/stats`).
    figures: serde_json::Value,
    /// The application's summary line.
    summary: String,
    elapsed: Duration,
    /// What the admin page showed in a browser, once the detectors had cut
    /// something (`None`: not asked for, or no chromium).
    page: Option<serde_json::Value>,
}

impl Crawled {
    /// The name of the trap host of `kind`.
    fn trap(&self, kind: &str) -> String {
        self.traps
            .iter()
            .find(|h| h.has(kind))
            .unwrap_or_else(|| panic!("no {kind} trap host"))
            .name
            .clone()
    }

    /// Requests to host `name`.
    fn cost(&self, name: &str) -> usize {
        self.per_host.get(name).copied().unwrap_or(0)
    }

    /// The status-200 manifest URLs not stored.
    fn missing(&self) -> Vec<&str> {
        self.manifest
            .iter()
            .filter(|r| r.status == 200 && !self.scan.ok_urls.contains(&r.url))
            .map(|r| r.url.as_str())
            .collect()
    }

    /// The figures of detector `name` on the admin page.
    fn detector(&self, name: &str) -> serde_json::Value {
        self.figures["traps"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["detector"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no detector {name} on the admin page: {}", self.figures))
    }

    /// Checks what every trap crawl must hold: each trap host within
    /// [`MAX_TRAP_REQUESTS`], the chain within [`MAX_CHAIN_REQUESTS`], session ids
    /// stripped, the path-sessions host's pages each fetched and within
    /// [`MAX_PATH_SESSION_REQUESTS`], every status-200 manifest URL stored, no
    /// ERROR line.
    fn check_common(&self) {
        self.check_path_sessions();
        for t in &self.traps {
            assert!(
                self.cost(&t.name) <= MAX_TRAP_REQUESTS,
                "{} cost {} requests (at most {MAX_TRAP_REQUESTS})",
                t.name,
                self.cost(&t.name)
            );
        }
        let redirects = self.trap("redirects");
        let chain = self
            .log
            .iter()
            .filter(|l| log_host(l) == redirects && l.target.starts_with("/chain/"))
            .count();
        assert!(
            (1..=MAX_CHAIN_REQUESTS).contains(&chain),
            "the redirect chain cost {chain} requests (1 to {MAX_CHAIN_REQUESTS})"
        );
        // Session ids are stripped: the sessions host's real pages, each once.
        let sessions = self.trap("sessions");
        let session_log: Vec<&LogLine> = self
            .log
            .iter()
            .filter(|l| log_host(l) == sessions && !l.is_robots())
            .collect();
        let session_urls: HashSet<String> = session_log.iter().map(|l| log_url(l)).collect();
        let real = host_rows(&self.manifest, &sessions);
        assert_eq!(
            (session_urls.len(), session_log.len()),
            (real, real),
            "sessions host: {session_urls:?}"
        );
        let missing = self.missing();
        let expected = self.manifest.iter().filter(|r| r.status == 200).count();
        assert!(
            missing.is_empty(),
            "{} of {expected} status-200 URLs not stored, e.g. {:?}",
            missing.len(),
            missing.iter().take(10).collect::<Vec<_>>()
        );
        let errors = self.sys.error_lines();
        assert!(errors.is_empty(), "ERROR lines:\n{}", errors.join("\n"));
    }

    /// The path-sessions host: each of its pages fetched (under some id), within
    /// [`MAX_PATH_SESSION_REQUESTS`].
    fn check_path_sessions(&self) {
        let host = self.trap("path-sessions");
        let pages: HashSet<String> = self
            .log
            .iter()
            .filter(|l| log_host(l) == host && !l.is_robots())
            .filter_map(|l| {
                let path = l.target.split('?').next().unwrap_or_default();
                let name = path.rsplit('/').next().unwrap_or_default();
                (path == "/").then(|| "p0".to_owned()).or_else(|| {
                    name.split('.')
                        .next()
                        .filter(|n| n.starts_with('p'))
                        .map(str::to_owned)
                })
            })
            .collect();
        assert_eq!(pages.len(), 30, "path-sessions pages fetched: {pages:?}");
        assert!(
            self.cost(&host) <= MAX_PATH_SESSION_REQUESTS,
            "{host} cost {} requests (at most {MAX_PATH_SESSION_REQUESTS})",
            self.cost(&host)
        );
    }

    /// The admin page showed the budgets: hosts over budget, a bounded top list,
    /// most cut first, and `host` among them with `budget`.
    fn check_budget_figures(&self, host: &str, budget: u64) {
        let figures = &self.figures;
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
        let reversed = host.rsplit('.').collect::<Vec<_>>().join(".");
        assert!(
            top.iter().any(|h| h["host"] == reversed.as_str()
                && h["budget"] == budget
                && h["requested"] == budget),
            "{host} is not among the hosts over budget with {budget}: {figures}"
        );
    }

    /// One line of figures for the test's output.
    fn report(&self, what: &str) {
        let costs: Vec<String> = self
            .traps
            .iter()
            .map(|t| format!("{} {}", t.name, self.cost(&t.name)))
            .collect();
        let expected = self.manifest.iter().filter(|r| r.status == 200).count();
        eprintln!(
            "{what}: crawl ended by itself after {:?}; app summary: {}\n\
             requests: {} in all; per trap host: {}; coverage {}/{expected} status-200 \
             manifest URLs\nadmin page figures: {}",
            self.elapsed,
            self.summary,
            self.log.len(),
            costs.join(", "),
            expected - self.missing().len(),
            self.figures
        );
    }
}

/// The admin page's Trap detectors table, read in the browser with the
/// `/api/stats` answer it rendered.
const READ_TRAPS: &str = r##"(() => ({
  rows: [...document.querySelectorAll("#traps tr")].map((r) => ({
    id: r.dataset.id, detector: r.dataset.detector,
    cut: r.children[2].textContent, examples: r.children[3].textContent })),
  rendered: (window.lastStats.components || []).filter((c) => c.state && c.state.app)
    .map((c) => ({ id: c.id, traps: c.state.app.traps })),
}))()"##;

/// Opens the admin page at `admin` in `chromium` and reads its Trap detectors
/// table ([`READ_TRAPS`]).
fn read_traps_table(chromium: &Path, dir: &Path, admin: &str) -> serde_json::Value {
    let mut chrome = Browser::launch(chromium, dir, 1280, 1600);
    let mut page = chrome.open(&format!("http://{admin}/"));
    page.wait_for(
        "the page rendered an application's detectors",
        "document.body && Number(document.body.dataset.seq) >= 1 && \
         document.querySelectorAll('#traps tr').length > 0",
        Duration::from_secs(20),
    );
    page.eval(READ_TRAPS).expect("reading the page")
}

/// Runs websim with `websim_args`, the crawling system and `polycrawl app` with
/// the default `app:` settings on websim's seeds, until the app ends by itself.
/// With `browser`, the admin page is read once in chromium (when there is one)
/// after the `sequence` and `date_pages` detectors have cut links.
/// `app_extra` is added to the `app:` section.
fn crawl(websim_args: &[&str], browser: bool, app_extra: &str) -> Crawled {
    let started = Instant::now();
    let ws = Websim::start(websim_args);
    let traps: Vec<HostRow> = ws.hosts().into_iter().filter(|h| h.has("trap")).collect();
    assert_eq!(traps.len(), 9, "websim --traps has nine trap hosts");

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
        &format!(
            "(\n{}",
            app_section(&ws.path("seeds"), &state, &repo, app_extra)
        ),
        1,
    );
    std::fs::write(&sys.config, config).expect("writing the config");
    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.start_downloader("dl-2");
    sys.wait_components(2, 1, Duration::from_secs(30));

    let cmd = sys.app_command(APP_ID, &state, &repo, &ws.path("seeds"));
    let mut app = ProcessGuard::spawn("app", cmd, sys.dir()).expect("starting polycrawl app");
    // While it runs, the admin page shows the application's figures: keep the
    // last seen (the application leaves the page when it exits).
    let deadline = Instant::now() + CRAWL_TIMEOUT;
    let mut figures = serde_json::Value::Null;
    let chromium = if browser { browser::chromium() } else { None };
    if browser && chromium.is_none() {
        eprintln!(
            "\n\n!!! SKIPPED the admin page's browser check: no chromium on PATH (ops/setup.sh \
             installs it). !!!\n"
        );
    }
    let mut page = None;
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
        let cut = |d: &str| {
            figures["traps"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| t["detector"] == d && t["cut"].as_u64() > Some(0))
        };
        if let Some(chromium) = &chromium
            && page.is_none()
            && cut("sequence")
            && cut("date_pages")
        {
            let admin = sys.admin_addr.expect("the admin page").to_string();
            page = Some(read_traps_table(chromium, sys.dir(), &admin));
        }
    };
    let per_host = |log: &[LogLine]| {
        let mut per_host: BTreeMap<String, usize> = BTreeMap::new();
        for l in log {
            *per_host.entry(log_host(l)).or_default() += 1;
        }
        per_host
    };
    let Some(status) = status else {
        let per_host = per_host(&ws.log());
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
    // Ended by itself with every URL requested done; `Incomplete` names what the
    // detectors (and budgets, in an open crawl) cut, which the tests check.
    assert!(
        summary.contains(": Complete:") || summary.contains(": Incomplete:"),
        "the crawl did not end by itself: {summary}"
    );
    let elapsed = started.elapsed();
    let log = ws.flushed_log();
    Crawled {
        per_host: per_host(&log),
        log,
        traps,
        manifest: ws.manifest(),
        scan: RepoScan::read(&repo).expect("reading the repository"),
        figures,
        summary,
        elapsed,
        page,
        sys,
    }
}

#[test]
fn trap_hosts_cost_a_bounded_number_of_requests_and_the_crawl_ends() {
    let args = [
        "--hosts",
        "40",
        "--pages",
        "1200",
        "--seed",
        "7",
        "--slow-ms",
        "50",
        "--traps",
    ];
    // An open crawl (the seeds are the popular hosts, the trap hosts are found),
    // with the maze detector off: the budgets are what this test shows.
    let c = crawl(
        &args,
        false,
        "        scope: open,\n        maze_min_pages: 0,\n",
    );
    c.report("traps");
    c.check_common();
    // Trap hosts linked from one site get base + one site's worth of URLs: the
    // maze, which no detector describes, holds more, so its budget binds.
    let maze = c.trap("maze");
    assert!(
        !c.summary.contains(" 0 URLs cut by host budgets"),
        "no host budget was used up: the maze host's should have: {}",
        c.summary
    );
    c.check_budget_figures(&maze, 200);
    assert!(
        c.cost(&c.trap("calendar")) > 10,
        "the calendar host was hardly crawled ({}): the test does not test it",
        c.cost(&c.trap("calendar"))
    );
}

/// Issue 29 and issue 37 (Done-when 3): every host a seed, the trap hosts too,
/// nothing set but the directories, and no host budget: the detectors, not a cap
/// and not the operator, keep the traps small.
#[test]
fn every_host_a_seed_with_the_defaults() {
    let c = crawl(
        &[
            "--hosts",
            "40",
            "--pages",
            "1200",
            "--seed",
            "11",
            "--slow-ms",
            "50",
            "--traps",
            "--all-seeds",
        ],
        true,
        // The defaults: a scoped crawl gives a host the user named no budget
        // under its ceiling (issue 37).
        "",
    );
    c.report("all seeds");
    c.check_common();
    assert!(
        c.summary.contains(" 0 URLs cut by host budgets"),
        "a host budget cut URLs: {}",
        c.summary
    );
    let (calendar, pages, counter) = (c.trap("calendar"), c.trap("pages"), c.trap("counter"));
    let (maze, deep, dates) = (c.trap("maze"), c.trap("deep"), c.trap("dates"));
    for host in [&calendar, &pages, &counter, &maze, &deep, &dates] {
        assert!(
            c.cost(host) > 50,
            "{host} was hardly crawled ({}): the test does not test it",
            c.cost(host)
        );
    }
    // Each detector cut links of the host it is for, and the admin page shows
    // the count and the last URLs it cut.
    for (detector, hosts) in [
        ("far_date", vec![&calendar, &dates]),
        ("date_pages", vec![&calendar, &dates]),
        ("sequence", vec![]),
        ("redirect_hops", vec![&c.trap("redirects")]),
        ("maze", vec![&maze, &deep]),
        ("session_id", vec![&c.trap("path-sessions")]),
    ] {
        let d = c.detector(detector);
        let examples: Vec<&str> = d["examples"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e.as_str())
            .collect();
        assert!(
            d["cut"].as_u64().unwrap_or(0) > 0 && !examples.is_empty(),
            "{detector} cut nothing: {d}"
        );
        assert!(
            hosts.is_empty()
                || examples
                    .iter()
                    .all(|u| hosts.iter().any(|h| u.contains(&format!("://{h}")))),
            "{detector} cut URLs of other hosts: {examples:?}"
        );
        assert!(
            c.summary.contains(&format!(" {detector}=")),
            "the summary does not list {detector}: {}",
            c.summary
        );
    }
    // Each of the three sequences of the pager and counter hosts goes 50 steps
    // (`max_sequence_steps`) past its first page, a few more with the pager's
    // nine links ahead: the detector bounds them, not the depth limit (64).
    let sequence = c.detector("sequence");
    for host in [&pages, &counter] {
        let fetched = c
            .log
            .iter()
            .filter(|l| log_host(l) == **host && !l.is_robots())
            .count();
        assert!(
            fetched <= 3 * 60,
            "{host}: {fetched} requests: its sequences were not cut ({sequence})"
        );
    }
    // In the browser: one row per detector with the count and URLs of the
    // /api/stats answer the page rendered.
    if let Some(page) = &c.page {
        let rows = page["rows"].as_array().cloned().unwrap_or_default();
        let rendered = &page["rendered"][0];
        let traps = rendered["traps"].as_array().cloned().unwrap_or_default();
        assert_eq!(rows.len(), traps.len(), "{page}");
        for (row, t) in rows.iter().zip(&traps) {
            let examples: Vec<&str> = t["examples"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str())
                .collect();
            let shown_examples = if examples.is_empty() {
                "-".to_owned()
            } else {
                examples.join(" ")
            };
            assert_eq!(
                (
                    &row["id"],
                    &row["detector"],
                    row["cut"].as_str(),
                    row["examples"].as_str()
                ),
                (
                    &rendered["id"],
                    &t["detector"],
                    Some(t["cut"].to_string().as_str()),
                    Some(shown_examples.as_str())
                ),
                "{page}"
            );
        }
        assert!(
            rows.iter()
                .any(|r| r["detector"] == "sequence" && r["cut"] != "0"),
            "{page}"
        );
        eprintln!("admin page in the browser: {} detector rows", rows.len());
    }
    assert!(
        c.summary.contains("links cut by trap detectors"),
        "the summary names no detector: {}",
        c.summary
    );
    // No detector cut a normal host's page: every one of them was stored (checked
    // above); and every seed, the trap hosts' too, was fetched.
    for t in &c.traps {
        assert!(
            c.scan
                .ok_urls
                .iter()
                .any(|u| u.contains(&format!("://{}", t.name))),
            "seed {} was not stored",
            t.name
        );
    }
}

/// The manifest rows of host `name`.
fn host_rows(manifest: &[ManifestRow], name: &str) -> usize {
    manifest
        .iter()
        .filter(|r| {
            r.url.contains(&format!("://{name}:")) || r.url.contains(&format!("://{name}/"))
        })
        .count()
}
