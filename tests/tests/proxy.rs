//! Issue 43, fourth item: crawling through a proxy. A crawl with the default
//! `app:` settings (only its directories and seeds set) against a websim web, its
//! downloader going through a proxy this test starts on loopback
//! (`test_support::proxy`): an HTTP proxy (absolute-form requests for http,
//! `CONNECT` for https), a SOCKS5 server asked by name (`socks5h://`), and a
//! SOCKS5 server with a user and password asked by address (`socks5://`) while a
//! per-host rule sends one host direct.
//!
//! Each must store exactly the manifest's status-200 URLs, each at the manifest's
//! depth, and end by itself; and websim's request log must show that every request
//! it served came from the proxy's outgoing address (127.0.0.3; the crawler's own
//! connections come from 127.0.0.1), the direct host's excepted, whose every request
//! came from elsewhere. For the HTTP proxy the count of requests it forwarded
//! equals the count of http requests websim served.
//!
//! The crawling system is `tests::system`'s; the application is `polycrawl app`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use test_support::proxy::{Kind, ProxyOptions, TestProxy};
use tests::repository::RepoScan;
use tests::system::{Knobs, System};
use tests::websim::Websim;

const APP_ID: &str = "bfs-1";
/// Time for the whole crawl to end by itself.
const CRAWL_TIMEOUT: Duration = Duration::from_secs(180);
/// Where the proxies' outgoing connections come from.
const OUTGOING: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

fn websim() -> Websim {
    Websim::start(&["--hosts", "20", "--pages", "200", "--seed", "11"])
}

fn proxy(ws: &Websim, kind: Kind, auth: Option<(&str, &str)>) -> TestProxy {
    let names: HashMap<String, IpAddr> = ws
        .hosts()
        .into_iter()
        .map(|h| (h.name, IpAddr::V4(h.addr)))
        .collect();
    TestProxy::start(ProxyOptions {
        kind,
        outgoing: OUTGOING,
        names,
        auth: auth.map(|(u, p)| (u.to_owned(), p.to_owned())),
    })
    .expect("starting the test proxy")
}

/// Runs the crawl with `proxy_settings` (RON fields of `downloader:`); returns the
/// system (for its logs), the repository and the app's summary line.
fn crawl(ws: &Websim, proxy_settings: &str) -> (System, RepoScan, String) {
    let knobs = Knobs {
        interval_ms: 20,
        ip_min_interval_ms: 10,
        ..Knobs::default()
    };
    let mut sys = System::new(ws, &knobs);
    let (state, repo) = sys.write_app_config(ws, "", |config| {
        config.replacen(
            "downloader: (",
            &format!("downloader: (\n        {proxy_settings}"),
            1,
        )
    });
    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.wait_components(1, 1, Duration::from_secs(30));
    let cmd = sys.app_command(APP_ID, &state, &repo, &ws.path("seeds"));
    let summary = sys.run_app_to_end(cmd, CRAWL_TIMEOUT);
    assert!(
        tests::verdict::ended_with_traps_at_most(&summary),
        "the crawl did not end complete: {summary}"
    );
    ws.flush_log();
    let scan = RepoScan::read(&repo).expect("reading the repository");
    (sys, scan, summary)
}

/// Exact coverage: the status-200 URLs stored are the manifest's. (Depths are not
/// compared: a breadth-first crawl with many fetches in flight may reach a page by
/// a longer path first, with or without a proxy.)
fn assert_exact_coverage(ws: &Websim, scan: &RepoScan, summary: &str) -> usize {
    let manifest = ws.manifest();
    let wanted: HashSet<&str> = manifest
        .iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url.as_str())
        .collect();
    let got: HashSet<&str> = scan.ok_urls.iter().map(String::as_str).collect();
    let missing: Vec<&&str> = wanted.difference(&got).take(10).collect();
    let extra: Vec<&&str> = got.difference(&wanted).take(10).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "status-200 URLs: {} wanted, {} stored; missing e.g. {missing:?}, not in the \
         manifest e.g. {extra:?}\n{summary}",
        wanted.len(),
        got.len()
    );
    wanted.len()
}

/// websim's request log split by whether a request came from the proxy.
fn by_source(ws: &Websim) -> (Vec<tests::websim::LogLine>, Vec<tests::websim::LogLine>) {
    ws.log()
        .into_iter()
        .partition(|l| l.client.ip() == IpAddr::V4(OUTGOING))
}

fn no_errors(sys: &System) {
    let errors = sys.error_lines();
    assert!(errors.is_empty(), "ERROR lines:\n{}", errors.join("\n"));
}

#[test]
fn crawl_through_an_http_proxy() {
    let started = Instant::now();
    let ws = websim();
    let proxy = proxy(&ws, Kind::Http, None);
    let setting = format!("proxy: Some({:?}),", proxy.url(true, None));
    let (sys, scan, summary) = crawl(&ws, &setting);
    let pages = assert_exact_coverage(&ws, &scan, &summary);
    let (via, direct) = by_source(&ws);
    assert!(
        direct.is_empty(),
        "{} requests reached websim not through the proxy, e.g. {:?}",
        direct.len(),
        direct.first()
    );
    let forwarded = proxy.forwarded();
    let gets = forwarded.iter().filter(|f| f.what != "CONNECT").count();
    let tunnels = forwarded.iter().filter(|f| f.what == "CONNECT").count();
    let http_lines = via.iter().filter(|l| l.scheme == "http").count();
    let https_lines = via.iter().filter(|l| l.scheme == "https").count();
    assert_eq!(
        gets, http_lines,
        "http requests forwarded by the proxy vs served by websim"
    );
    assert!(
        tunnels > 0 && https_lines > 0,
        "the web has https hosts: {tunnels} CONNECT tunnels, {https_lines} https requests"
    );
    assert!(
        tunnels <= https_lines,
        "{tunnels} tunnels for {https_lines} https requests"
    );
    no_errors(&sys);
    eprintln!(
        "http proxy: {pages}/{pages} status-200 manifest URLs stored; websim served {} \
         requests, all from the proxy ({http_lines} http = {gets} forwarded, \
         {https_lines} https through {tunnels} CONNECT tunnels); {} refused by the \
         proxy (dead hosts); {:?}; {summary}",
        via.len(),
        proxy.refusals().len(),
        started.elapsed()
    );
}

#[test]
fn crawl_through_a_socks5_proxy_that_resolves() {
    let started = Instant::now();
    let ws = websim();
    let proxy = proxy(&ws, Kind::Socks5, None);
    let setting = format!("proxy: Some({:?}),", proxy.url(true, None));
    let (sys, scan, summary) = crawl(&ws, &setting);
    let pages = assert_exact_coverage(&ws, &scan, &summary);
    let (via, direct) = by_source(&ws);
    assert!(
        direct.is_empty(),
        "{} requests reached websim not through the proxy, e.g. {:?}",
        direct.len(),
        direct.first()
    );
    let forwarded = proxy.forwarded();
    assert!(
        !forwarded.is_empty() && forwarded.iter().all(|f| f.by_name),
        "socks5h sends host names: {:?}",
        forwarded.iter().find(|f| !f.by_name)
    );
    assert!(
        forwarded.len() <= via.len(),
        "{} connections for {} requests",
        forwarded.len(),
        via.len()
    );
    no_errors(&sys);
    eprintln!(
        "socks5h proxy: {pages}/{pages} status-200 manifest URLs stored; websim served \
         {} requests, all from the proxy, over {} SOCKS5 connections (by name); {:?}; \
         {summary}",
        via.len(),
        forwarded.len(),
        started.elapsed()
    );
}

#[test]
fn crawl_through_socks5_with_credentials_and_one_host_direct() {
    let started = Instant::now();
    let ws = websim();
    let proxy = proxy(&ws, Kind::Socks5, Some(("crawler", "s3cret")));
    // The most popular host (a seed, never dead) goes direct.
    let direct_host = ws
        .hosts()
        .into_iter()
        .min_by_key(|h| h.rank)
        .expect("websim has hosts")
        .name;
    let setting = format!(
        "proxy: Some({:?}),\n        proxy_rules: [(hosts: {direct_host:?}, proxy: \"direct\")],",
        proxy.url(false, Some(("crawler", "s3cret")))
    );
    let (sys, scan, summary) = crawl(&ws, &setting);
    let pages = assert_exact_coverage(&ws, &scan, &summary);
    let (via, direct) = by_source(&ws);
    let host_of = |l: &tests::websim::LogLine| tests::requestlog::host_name(&l.host);
    let wrong: Vec<String> = direct
        .iter()
        .filter(|l| host_of(l) != direct_host)
        .map(|l| format!("{}{}", l.host, l.target))
        .take(10)
        .collect();
    assert!(
        wrong.is_empty(),
        "requests not through the proxy: {wrong:?}"
    );
    let leaked: Vec<String> = via
        .iter()
        .filter(|l| host_of(l) == direct_host)
        .map(|l| format!("{}{}", l.host, l.target))
        .take(10)
        .collect();
    assert!(
        leaked.is_empty(),
        "the direct host's requests went through the proxy: {leaked:?}"
    );
    assert!(!direct.is_empty(), "the direct host was crawled");
    let forwarded = proxy.forwarded();
    assert!(
        !forwarded.is_empty() && forwarded.iter().all(|f| !f.by_name),
        "socks5 sends addresses: {:?}",
        forwarded.iter().find(|f| f.by_name)
    );
    let by_host: BTreeMap<String, usize> = direct.iter().fold(BTreeMap::new(), |mut m, l| {
        *m.entry(host_of(l)).or_default() += 1;
        m
    });
    no_errors(&sys);
    eprintln!(
        "socks5 proxy with credentials, {direct_host} direct: {pages}/{pages} status-200 \
         manifest URLs stored; websim served {} requests from the proxy over {} SOCKS5 \
         connections (by address) and {by_host:?} directly; {:?}; {summary}",
        via.len(),
        forwarded.len(),
        started.elapsed()
    );
}
