//! The manager's admin page and JSON API (issue 5) on the crawling system as
//! separate processes (`tests::system`: `polycrawl websim`, a manager with its
//! admin page on a port of its own, a resolver, downloaders), judged by websim's
//! request log, by what came back in the spool and by the API itself.
//!
//! - [`blacklisted_domain_gets_no_more_requests_even_after_a_restart`] (Done-when
//!   2): a domain blacklisted through `POST /api/blacklist` mid-crawl gets no
//!   request dispatched after the answer; the entry survives a kill -9 of the
//!   manager (`GET /api/blacklist`, and the domain's URLs asked again after the
//!   restart all end `blacklisted`).
//! - [`mutations_without_the_token_are_refused`] (Done-when 3, last sentence): every
//!   mutation without the token, or with a wrong one, gets 401 and changes nothing.
//! - [`forced_checkpoint_restarts_the_crawl`] (Done-when 4): `POST /api/checkpoint`
//!   mid-crawl, `POST /api/shutdown`, then a manager on a state whose database is
//!   that checkpoint completes the crawl.
//! - [`browser_shows_the_api_figures_and_edits_the_blacklist`] (Done-when 3):
//!   headless Chromium opens the page; its figures equal `GET /api/stats`; the
//!   blacklist is edited by typing and clicking in the page (refused without the
//!   token, done with it); a screenshot goes to `<target>/test-artifacts/admin.png`.
//!   Skipped, loudly, only when no `chromium` is installed (`ops/setup.sh`
//!   installs it).
//!
//! The tests run one at a time (each loads the machine).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tests::browser::{self, Browser};
use tests::requestlog::url_host;
use tests::spoolout::Returned;
use tests::system::{Knobs, STATUS_POLL, System};
use tests::websim::{HostRow, LogLine, Websim};

const APP: &str = "admintest";
/// Requests already handed to a downloader when a host is blacklisted may still
/// start this long after the manager's answer (the downloader's own queue).
const IN_FLIGHT_GRACE_US: u64 = 2_000_000;

static SERIAL: Mutex<()> = Mutex::new(());

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Starts a manager, one resolver and `downloaders` downloaders, all registered.
fn start_system(ws: &Websim, knobs: &Knobs, downloaders: usize) -> System {
    let mut sys = System::new(ws, knobs);
    sys.start_manager();
    start_components(&mut sys, downloaders);
    sys
}

/// Starts one resolver and `downloaders` downloaders and waits for them to register.
fn start_components(sys: &mut System, downloaders: usize) {
    sys.start_resolver();
    for i in 1..=downloaders {
        sys.start_downloader(&format!("dl-{i}"));
    }
    sys.wait_components(downloaders, 1, Duration::from_secs(30));
}

/// Polls until every URL of `urls` has ended for each reader; panics after `timeout`.
fn wait_all_ended(sys: &System, readers: &mut [(&mut Returned, &[String])], timeout: Duration) {
    let mut open = 0;
    let ended = test_support::wait::poll_every(timeout, Duration::from_millis(200), || {
        open = 0;
        for (back, urls) in readers.iter_mut() {
            back.refresh();
            open += back.open(urls.iter());
        }
        (open == 0).then_some(())
    });
    assert!(
        ended.is_some(),
        "{open} URLs not ended after {timeout:?}; status {:?}\n{}",
        sys.try_status(),
        sys.reports()
    );
}

/// websim's request log holding every request it served.
fn final_log(ws: &Websim) -> Vec<LogLine> {
    ws.flushed_log()
}

fn no_error_lines(sys: &System) {
    let errors = sys.error_lines();
    assert!(
        errors.is_empty(),
        "unexpected ERROR lines:\n{}",
        errors.join("\n")
    );
}

/// The body of an API answer as JSON, after checking its status.
fn json(r: &tests::http::Response, status: u16, what: &str) -> Value {
    assert_eq!(r.status, status, "{what}: {}", r.text());
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{what}: {e}: {}", r.text()))
}

fn blacklist(sys: &System) -> Vec<String> {
    let list = json(
        &sys.api("GET", "/api/blacklist", "", false),
        200,
        "blacklist",
    );
    list["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e.as_str().expect("an entry").to_owned())
        .collect()
}

/// Done-when 2.
#[test]
fn blacklisted_domain_gets_no_more_requests_even_after_a_restart() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let ws = Websim::start(&[
        "--hosts",
        "100",
        "--pages",
        "2000",
        "--slow-ms",
        "50",
        "--seed",
        "11",
    ]);
    let knobs = Knobs {
        interval_ms: 200,
        ..Knobs::default()
    };
    let manifest = ws.manifest();
    let urls: Vec<String> = manifest.iter().map(|r| r.url.clone()).collect();
    // The domain with the most manifest URLs among those of two or more hosts that
    // answer normally (so it is still being crawled when it is blacklisted).
    let mut per_host: HashMap<String, usize> = HashMap::new();
    for u in &urls {
        *per_host.entry(url_host(u)).or_insert(0) += 1;
    }
    let plain = |h: &HostRow| !h.has("dead") && !h.has("misbehave") && h.robots_status < 500;
    let mut by_domain: BTreeMap<String, Vec<HostRow>> = BTreeMap::new();
    for h in ws.hosts() {
        by_domain.entry(h.domain.clone()).or_default().push(h);
    }
    let (domain, domain_hosts) = by_domain
        .into_iter()
        .filter(|(_, hs)| hs.len() >= 2 && hs.iter().all(plain))
        .max_by_key(|(_, hs)| {
            hs.iter()
                .map(|h| per_host.get(&h.name).copied().unwrap_or(0))
                .sum::<usize>()
        })
        .expect("a domain of two plain hosts");
    let in_domain = |name: &str| name == domain || name.ends_with(&format!(".{domain}"));
    let domain_urls: Vec<String> = urls
        .iter()
        .filter(|u| in_domain(&url_host(u)))
        .cloned()
        .collect();
    assert!(domain_urls.len() >= 20, "domain {domain} has too few URLs");

    let started = Instant::now();
    let mut sys = start_system(&ws, &knobs, 2);
    sys.publish_requests(APP, 50, &urls);
    let mut back = Returned::new(&sys.spool, APP);

    // Mid-crawl: a few of the domain's pages fetched, most not.
    let fetched_before =
        test_support::wait::poll_every(Duration::from_secs(60), Duration::from_millis(50), || {
            let n = ws
                .log()
                .iter()
                .filter(|l| !l.is_robots() && in_domain(&l.name()))
                .count();
            (n >= 3).then_some(n)
        })
        .expect("the domain was never fetched");
    let answer = sys.api(
        "POST",
        "/api/blacklist",
        &format!(r#"{{"entry": ".{domain}"}}"#),
        true,
    );
    let answered_us = now_us();
    json(&answer, 200, "blacklisting the domain");
    assert!(
        fetched_before * 2 < domain_urls.len(),
        "not mid-crawl: {fetched_before} of {} fetched",
        domain_urls.len()
    );

    // The live manager dispatches past the grace (websim logs a request that
    // starts after it), unless the crawl has ended before: a request to the
    // domain dispatched after the answer would then be seen late.
    let past_grace =
        test_support::wait::poll_every(Duration::from_secs(60), Duration::from_millis(100), || {
            back.refresh();
            let late = ws
                .log()
                .iter()
                .any(|l| l.start_us > answered_us + IN_FLIGHT_GRACE_US);
            (late || back.open(&urls) == 0).then_some(())
        });
    assert!(
        past_grace.is_some(),
        "no request past the grace and the crawl not ended\n{}",
        sys.reports()
    );
    // kill -9 of the manager; the restarted one still has the entry.
    sys.kill_manager_and_wait_lost(Duration::from_secs(30));
    sys.start_manager();
    sys.wait_components(2, 1, Duration::from_secs(30));
    let entries = blacklist(&sys);
    assert_eq!(entries, [format!("*.{domain}")], "after the restart");
    // The domain's URLs asked again, by another application, after the restart.
    let app2 = "admintest2";
    sys.publish_requests(app2, 10, &domain_urls);
    let mut back2 = Returned::new(&sys.spool, app2);
    wait_all_ended(
        &sys,
        &mut [(&mut back, &urls), (&mut back2, &domain_urls)],
        Duration::from_secs(170),
    );
    let log = final_log(&ws);

    // 1. After the answer, only requests already handed out: at most one per
    //    origin, starting within the grace.
    let after: Vec<&LogLine> = log
        .iter()
        .filter(|l| in_domain(&l.name()) && l.start_us > answered_us)
        .collect();
    let mut per_origin: BTreeMap<String, usize> = BTreeMap::new();
    for l in &after {
        *per_origin.entry(l.origin()).or_insert(0) += 1;
    }
    let late: Vec<String> = after
        .iter()
        .filter(|l| l.start_us > answered_us + IN_FLIGHT_GRACE_US)
        .map(|l| format!("{} (+{} ms)", l.url(), (l.start_us - answered_us) / 1000))
        .collect();
    assert!(
        late.is_empty(),
        "requests to .{domain} after the blacklisting: {late:?}"
    );
    assert!(
        per_origin.values().all(|n| *n <= 1),
        "more than the in-flight request per origin after the blacklisting: {per_origin:?}"
    );
    // 2. Every URL of the domain not fetched by then ended `blacklisted`; every
    //    other URL ended.
    let fetched: BTreeSet<String> = log
        .iter()
        .filter(|l| !l.is_robots())
        .map(LogLine::url)
        .collect();
    let mut wrong = Vec::new();
    for u in &domain_urls {
        let outcomes = back.outcomes.get(u).cloned().unwrap_or_default();
        let ok = if fetched.contains(u) {
            back.pages.get(u) == Some(&1) && outcomes.is_empty()
        } else {
            outcomes == ["blacklisted"] && !back.pages.contains_key(u)
        };
        if !ok {
            wrong.push(format!(
                "{u}: pages {:?} outcomes {outcomes:?}",
                back.pages.get(u)
            ));
        }
    }
    assert!(wrong.is_empty(), "{} wrong endings: {wrong:?}", wrong.len());
    // 3. Asked again after the restart: all `blacklisted`, none fetched.
    let not_blacklisted: Vec<&String> = domain_urls
        .iter()
        .filter(|u| {
            back2.pages.contains_key(*u)
                || back2.outcomes.get(*u).map(Vec::as_slice) != Some(&["blacklisted".to_owned()])
        })
        .collect();
    assert!(
        not_blacklisted.is_empty(),
        "asked again after the restart, not blacklisted: {not_blacklisted:?}"
    );
    let fetched_in_domain = domain_urls.iter().filter(|u| fetched.contains(*u)).count();
    println!(
        "admin test 1: blacklisted .{domain} ({} hosts, {} URLs) through the API after {} of \
         its pages were fetched; {} requests to it after the answer (per origin {per_origin:?}, \
         all within {} ms), none later, across a kill -9 and restart of the manager; {} of its \
         URLs fetched in all, {} ended blacklisted; asked again after the restart: {} of {} \
         blacklisted, 0 fetched; GET /api/blacklist after the restart: {entries:?}; test took \
         {:.1} s",
        domain_hosts.len(),
        domain_urls.len(),
        fetched_before,
        after.len(),
        IN_FLIGHT_GRACE_US / 1000,
        fetched_in_domain,
        domain_urls.len() - fetched_in_domain,
        domain_urls.len() - not_blacklisted.len(),
        domain_urls.len(),
        started.elapsed().as_secs_f64(),
    );
    no_error_lines(&sys);
}

/// Done-when 3, last sentence.
#[test]
fn mutations_without_the_token_are_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let ws = Websim::start(&["--hosts", "20", "--pages", "100"]);
    let mut sys = System::new(&ws, &Knobs::default());
    sys.start_manager();
    let mutations = [
        ("POST", "/api/blacklist", r#"{"entry": ".spam.test"}"#),
        ("DELETE", "/api/blacklist", r#"{"entry": ".spam.test"}"#),
        ("POST", "/api/speed", r#"{"pages_per_sec": 5}"#),
        ("POST", "/api/checkpoint", ""),
        ("POST", "/api/shutdown", r#"{"grace_ms": 100}"#),
        // Malformed bodies: refused for the token before they are parsed.
        ("POST", "/api/blacklist", "{not json"),
        ("POST", "/api/speed", "[1]"),
        ("DELETE", "/api/blacklist", r#"{"entry": 1}"#),
    ];
    let mut seen = Vec::new();
    for (method, path, body) in mutations {
        let r = sys.api(method, path, body, false);
        let v = json(&r, 401, &format!("{method} {path} without a token"));
        assert_eq!(v["ok"], false);
        assert!(
            v["detail"]
                .as_str()
                .is_some_and(|d| d.contains("admin token")),
            "{method} {path} {body:?}: {v}"
        );
        assert!(
            r.header("www-authenticate")
                .is_some_and(|h| h.starts_with("Bearer")),
            "{method} {path}: no WWW-Authenticate"
        );
        seen.push(format!("{method} {path}: {}", r.status));
    }
    // A wrong token is no better.
    let addr = sys.admin_addr.expect("admin page");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let wrong = rt
        .block_on(tests::http::Client::plain().send(
            addr,
            false,
            "POST",
            &addr.to_string(),
            "/api/checkpoint",
            &[("Authorization", "Bearer not-the-admin-token")],
            b"",
        ))
        .unwrap();
    assert_eq!(wrong.status, 401);
    // Nothing changed, and the manager still runs.
    assert!(blacklist(&sys).is_empty());
    let stats = json(&sys.api("GET", "/api/stats", "", false), 200, "stats");
    assert_eq!(
        stats["target_pages_per_sec"],
        Knobs::default().target_pages_per_sec
    );
    assert!(!sys.state.join("checkpoints").exists());
    sys.status();
    println!(
        "admin test 2: without the token: {seen:?}; with a wrong token: {}",
        wrong.status
    );
    no_error_lines(&sys);
}

/// Done-when 4.
#[test]
fn forced_checkpoint_restarts_the_crawl() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let ws = Websim::start(&[
        "--hosts",
        "100",
        "--pages",
        "1500",
        "--slow-ms",
        "50",
        "--seed",
        "12",
    ]);
    let knobs = Knobs {
        interval_ms: 100,
        ..Knobs::default()
    };
    let manifest = ws.manifest();
    let urls: Vec<String> = manifest.iter().map(|r| r.url.clone()).collect();
    let started = Instant::now();
    let mut sys = start_system(&ws, &knobs, 2);
    // One request file: it is loaded whole at the start, so the checkpoint (taken
    // later) holds every URL. A file loaded after a checkpoint is gone from the
    // spool and from the checkpoint (see manager/src/service/checkpoint.rs).
    sys.publish_requests(APP, 50, &urls);
    let mut back = Returned::new(&sys.spool, APP);

    let third = test_support::wait::poll_every(Duration::from_secs(90), STATUS_POLL, || {
        back.refresh();
        (back.pages.len() >= urls.len() / 3).then_some(())
    });
    assert!(third.is_some(), "a third of the crawl took too long");
    let stats = json(&sys.api("GET", "/api/stats", "", false), 200, "stats");
    let pages_before = stats["pages_total"].as_u64().expect("pages_total");
    let answer = json(
        &sys.api("POST", "/api/checkpoint", "", true),
        200,
        "checkpoint",
    );
    let checkpoint = Path::new(answer["path"].as_str().expect("a path")).to_owned();
    assert!(checkpoint.starts_with(sys.state.join("checkpoints")));
    assert!(
        checkpoint.join("CURRENT").is_file(),
        "{}",
        checkpoint.display()
    );
    // More pages after the checkpoint, then drain and shut down through the API.
    let pages_at_shutdown =
        test_support::wait::poll_every(Duration::from_secs(60), STATUS_POLL, || {
            let s = sys.status();
            (s.pages_total >= pages_before + 50).then_some(s.pages_total)
        })
        .expect("no progress after the checkpoint");
    let bye = json(
        &sys.api("POST", "/api/shutdown", r#"{"grace_ms": 3000}"#, true),
        200,
        "shutdown",
    );
    let exit = sys.wait_manager_exit(Duration::from_secs(30));
    assert!(exit.success(), "the manager exited {exit}");
    sys.bury_components();

    // Restart from the checkpoint: it becomes the state's database.
    let db = sys.state.join("db");
    std::fs::rename(&db, sys.state.join("db.before-checkpoint")).expect("moving the live db");
    copy_dir(&checkpoint, &db);
    sys.start_manager();
    let pages_at_restart = sys.status().pages_total;
    start_components(&mut sys, 2);
    wait_all_ended(&sys, &mut [(&mut back, &urls)], Duration::from_secs(170));
    let log = final_log(&ws);

    let missing: Vec<&String> = urls
        .iter()
        .filter(|u| !back.pages.contains_key(*u))
        .collect();
    assert!(missing.is_empty(), "URLs without a page: {missing:?}");
    assert!(
        (pages_before..pages_at_shutdown).contains(&pages_at_restart),
        "the restarted manager counts {pages_at_restart} pages: not the checkpoint's state \
         ({pages_before} before it, {pages_at_shutdown} at the shutdown)"
    );
    let final_stats = sys.status();
    let twice = tests::requestlog::url_counts(&log)
        .into_iter()
        .filter(|(u, n)| *n > 1 && !u.ends_with("/robots.txt"))
        .count();
    println!(
        "admin test 3: {} URLs; checkpoint at {} pages ({}), shutdown ({}) at {} pages, \
         manager exit {exit}; restarted from the checkpoint at {} pages; crawl complete: \
         {} of {} URLs with a page, {} pages counted, {twice} URLs fetched twice (those \
         fetched between the checkpoint and the shutdown); test took {:.1} s",
        urls.len(),
        pages_before,
        checkpoint.display(),
        bye["detail"],
        pages_at_shutdown,
        pages_at_restart,
        urls.len() - missing.len(),
        urls.len(),
        final_stats.pages_total,
        started.elapsed().as_secs_f64(),
    );
    no_error_lines(&sys);
}

/// Copies the files of the checkpoint folder `from` to a new folder `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("creating the db folder");
    for entry in std::fs::read_dir(from).expect("reading the checkpoint") {
        let entry = entry.expect("a checkpoint file");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copying a checkpoint file");
    }
}

/// The page's figures by element id, and its tables as `key -> count`.
const READ_PAGE: &str = r##"(() => {
  const t = (id) => document.getElementById(id).textContent;
  const ids = ["pages-total", "bytes-total", "robots-fetched", "queued-urls", "in-flight",
    "dns-pending", "request-files-pending", "request-files-loaded", "speed-target",
    "speed-now", "speed-minute", "speed-hour", "hosts-resolving", "hosts-robots",
    "hosts-ready", "hosts-parked", "hosts-fetching", "hosts-waiting", "hosts-backed_off",
    "hosts-dead"];
  const table = (id, key) => Object.fromEntries([...document.querySelectorAll("#" + id + " tr")]
    .map((r) => [r.getAttribute(key), r.children[1].textContent]));
  return {
    seq: document.body.dataset.seq,
    figures: Object.fromEntries(ids.map((id) => [id, t(id)])),
    http: table("http-status", "data-code"),
    errors: table("fetch-errors", "data-reason"),
    outcomes: table("outcomes", "data-reason"),
    components: [...document.querySelectorAll("#components tr")].map((r) => r.dataset.role + "/" + r.dataset.id),
    chart: document.getElementById("chart-line").getAttribute("points").split(" ").filter(Boolean).length,
    rendered: window.lastStats,
  };
})()"##;

/// What the page must show for a `GET /api/stats` answer.
#[derive(Debug, PartialEq)]
struct Shown {
    /// Text by element id (the rates left out: they move with the clock).
    figures: BTreeMap<String, String>,
    /// HTTP status, fetch error and outcome tables: count by code or reason.
    tables: [BTreeMap<String, String>; 3],
    /// `role/id` of each component.
    components: Vec<String>,
}

impl Shown {
    /// What the page shows, from [`READ_PAGE`]'s answer.
    fn of_page(page: &Value) -> Shown {
        let mut figures = as_map(&page["figures"]);
        for rate in ["speed-now", "speed-minute", "speed-hour"] {
            figures.remove(rate);
        }
        Shown {
            figures,
            tables: [
                as_map(&page["http"]),
                as_map(&page["errors"]),
                as_map(&page["outcomes"]),
            ],
            components: page["components"]
                .as_array()
                .map(|c| {
                    c.iter()
                        .map(|v| v.as_str().unwrap_or("").to_owned())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// What the page must show for `stats`.
    fn of_api(stats: &Value) -> Shown {
        let n = |v: &Value| v.as_u64().map_or_else(|| v.to_string(), |n| n.to_string());
        let mut figures = BTreeMap::new();
        for (id, key) in [
            ("pages-total", "pages_total"),
            ("bytes-total", "bytes_total"),
            ("robots-fetched", "robots_fetched"),
            ("queued-urls", "queued_urls"),
            ("in-flight", "in_flight"),
            ("dns-pending", "dns_pending"),
            ("request-files-pending", "request_files_pending"),
            ("request-files-loaded", "request_files_loaded"),
        ] {
            figures.insert(id.to_owned(), n(&stats[key]));
        }
        for (state, count) in stats["hosts"].as_object().expect("hosts") {
            figures.insert(format!("hosts-{state}"), n(count));
        }
        let target = stats["target_pages_per_sec"].as_f64().expect("target");
        figures.insert("speed-target".to_owned(), format!("{target:.1}"));
        let table = |key: &str, name: &str| -> BTreeMap<String, String> {
            stats[key]
                .as_array()
                .expect("a table")
                .iter()
                .map(|row| {
                    let k = row[name]
                        .as_str()
                        .map_or_else(|| n(&row[name]), str::to_owned);
                    (k, n(&row["count"]))
                })
                .collect()
        };
        Shown {
            figures,
            tables: [
                table("http_status", "code"),
                table("fetch_errors", "reason"),
                table("outcomes", "reason"),
            ],
            components: stats["components"]
                .as_array()
                .expect("components")
                .iter()
                .map(|c| {
                    let role = c["role"].as_str().unwrap_or("");
                    format!("{role}/{}", c["id"].as_str().unwrap_or(""))
                })
                .collect(),
        }
    }
}

fn as_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// Done-when 3.
#[test]
fn browser_shows_the_api_figures_and_edits_the_blacklist() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(chromium) = browser::chromium() else {
        eprintln!(
            "\n\n!!! SKIPPED browser_shows_the_api_figures_and_edits_the_blacklist: no chromium \
             on PATH. Install it (ops/setup.sh does: apt-get install chromium) to run the \
             admin page's browser test. !!!\n"
        );
        return;
    };
    let ws = Websim::start(&["--hosts", "30", "--pages", "300", "--seed", "13"]);
    let knobs = Knobs {
        interval_ms: 50,
        ..Knobs::default()
    };
    let mut urls: Vec<String> = ws.manifest().into_iter().map(|r| r.url).collect();
    urls.extend(ws.unreachable().into_iter().map(|r| r.url));
    urls.sort();
    urls.dedup();
    let mut sys = start_system(&ws, &knobs, 1);
    sys.publish_requests(APP, 50, &urls);
    let mut back = Returned::new(&sys.spool, APP);
    wait_all_ended(&sys, &mut [(&mut back, &urls)], Duration::from_secs(120));

    let admin = sys.admin_addr.expect("the admin page");
    let mut chrome = Browser::launch(&chromium, sys.dir(), 1280, 1600);
    let mut page = chrome.open(&format!("http://{admin}/"));
    page.wait_for(
        "the page loaded its figures and blacklist",
        "document.body && Number(document.body.dataset.seq) >= 1 && \
         Number(document.body.dataset.blacklistSeq || 0) >= 1",
        Duration::from_secs(20),
    );

    // 1. The figures shown are the API's: read the page, then the API, and accept
    //    the round only if the page did not refresh in between.
    let mut rounds = 0;
    let (shown, stats) = loop {
        rounds += 1;
        let shown = page.eval(READ_PAGE).expect("reading the page");
        let stats = json(&sys.api("GET", "/api/stats", "", false), 200, "stats");
        let again = page.eval("document.body.dataset.seq").expect("seq");
        if shown["seq"] == again && Shown::of_page(&shown) == Shown::of_api(&stats) {
            // Rates move with the clock (the page's answer can be 2 s older than
            // ours), so they are checked against the /api/stats answer the page
            // rendered, read in the same script turn as the text: to the digit shown.
            let rendered = &shown["rendered"];
            for (id, key) in [
                ("speed-now", "pages_per_sec_now"),
                ("speed-minute", "pages_per_sec"),
                ("speed-hour", "pages_per_sec_hour"),
            ] {
                let text = shown["figures"][id].as_str().unwrap_or_default();
                let on_page: f64 = text.parse().unwrap_or_else(|_| panic!("{id}: {text:?}"));
                let answer = rendered[key].as_f64().expect("a rate in the page's answer");
                assert!(
                    (on_page - answer).abs() <= 0.051,
                    "{id}: page shows {on_page}, its /api/stats answer said {answer}"
                );
            }
            break (shown, stats);
        }
        assert!(
            rounds < 10,
            "the page's figures differ from /api/stats:\npage {shown:#}\napi {stats:#}"
        );
        let seq = page.eval("document.body.dataset.seq").expect("seq");
        page.wait_for(
            "a refresh",
            &format!("document.body.dataset.seq !== {seq}"),
            Duration::from_secs(10),
        );
    };
    assert!(
        stats["pages_total"].as_u64() > Some(0),
        "the crawl stored pages"
    );

    // 2. A blacklist edit through the page: without the token it is refused.
    let reset = "document.getElementById('message').dataset.status = ''";
    page.eval(reset).expect("reset");
    page.type_into("#bl-entry", ".spam.test");
    page.click("#bl-add");
    page.wait_for(
        "the refusal",
        "document.getElementById('message').dataset.status === '401'",
        Duration::from_secs(10),
    );
    let refusal = page
        .eval("document.getElementById('message').textContent")
        .expect("message");
    assert!(blacklist(&sys).is_empty(), "added without the token");
    // With the token typed into the page, the same click adds the entry.
    page.type_into("#token", sys.admin_token());
    page.eval(reset).expect("reset");
    page.click("#bl-add");
    page.wait_for(
        "the entry in the page's list",
        "document.getElementById('message').dataset.status === '200' && \
         !!document.querySelector('#blacklist li[data-entry=\"*.spam.test\"]')",
        Duration::from_secs(10),
    );
    assert_eq!(blacklist(&sys), ["*.spam.test"]);
    // Add a second entry, then remove it with its button.
    page.type_into("#bl-entry", "ham.test");
    page.click("#bl-add");
    page.wait_for(
        "the second entry",
        "!!document.querySelector('#blacklist li[data-entry=\"ham.test\"]')",
        Duration::from_secs(10),
    );
    assert_eq!(blacklist(&sys), ["ham.test", "*.spam.test"]);
    page.click("#blacklist li[data-entry=\"ham.test\"] button.bl-remove");
    page.wait_for(
        "the removal",
        "!document.querySelector('#blacklist li[data-entry=\"ham.test\"]')",
        Duration::from_secs(10),
    );
    assert_eq!(blacklist(&sys), ["*.spam.test"]);
    // The speed form too.
    page.type_into("#speed-input", "123");
    page.click("#speed-set");
    page.wait_for(
        "the new target on the page",
        "document.getElementById('speed-target').textContent === '123.0'",
        Duration::from_secs(10),
    );
    let target =
        json(&sys.api("GET", "/api/stats", "", false), 200, "stats")["target_pages_per_sec"]
            .clone();
    assert_eq!(target, 123.0);

    let shot = tests::bin::artifacts_dir().join("admin.png");
    page.screenshot(&shot);
    println!(
        "admin test 4: page figures equal /api/stats after {rounds} round(s): {} pages, {} \
         bytes, HTTP status {}, outcomes {}, components {}, {} chart points; without the \
         token the page showed {refusal}; with it the page added *.spam.test and ham.test and \
         removed ham.test (API: {:?}); speed target set to {target} through the page; \
         screenshot {}",
        stats["pages_total"],
        stats["bytes_total"],
        shown["http"],
        shown["outcomes"],
        shown["components"],
        shown["chart"],
        blacklist(&sys),
        shot.display(),
    );
    no_error_lines(&sys);
}
