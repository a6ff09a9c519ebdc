//! Issue 28, Done-when 2: sitemaps. A crawl with the default `app:` settings (only
//! its directories and seeds set) against a websim with its sitemap host
//! (`--sitemaps`, see websim's `sitemaps.rs`): a host linked from one home page,
//! whose own pages link nowhere, and whose robots.txt names a sitemap index of a
//! plain sitemap and a gzip one (`.xml.gz`, a gzip body) that list twenty pages no
//! link reaches, a robots-excluded page and URLs out of the default scope (a
//! repeated path segment, a URL over 2048 bytes, `ftp://`, a single-label host).
//!
//! It must store every status-200 URL of the manifest (which reaches the listed
//! pages through the sitemaps only), each page of the sitemaps at the depth the
//! manifest gives it, request nothing of `never.txt` (the out-of-scope and the
//! robots-excluded URLs among them) and nothing on a host websim does not serve,
//! fetch no URL twice, and end by itself.
//!
//! The crawling system is `tests::system`'s; the application is `polycrawl app`.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use tests::repository::RepoScan;
use tests::requestlog::url_counts;
use tests::system::{Knobs, System};
use tests::websim::Websim;

const APP_ID: &str = "bfs-1";
/// Time for the whole crawl to end by itself.
const CRAWL_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs the crawl; returns the system (for its logs), websim and the repository.
fn crawl(ws: &Websim) -> (System, RepoScan, String) {
    let knobs = Knobs {
        interval_ms: 20,
        ip_min_interval_ms: 10,
        ..Knobs::default()
    };
    let mut sys = System::new(ws, &knobs);
    let (state, repo) = sys.write_app_config(ws, "", |config| config);
    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.wait_components(1, 1, Duration::from_secs(30));
    let cmd = sys.app_command(APP_ID, &state, &repo, &ws.path("seeds"));
    let summary = sys.run_app_to_end(cmd, CRAWL_TIMEOUT);
    assert!(
        tests::verdict::ended_with_traps_at_most(&summary),
        "the crawl did not end complete (or with trap cuts only): {summary}"
    );
    ws.flush_log();
    let scan = RepoScan::read(&repo).expect("reading the repository");
    (sys, scan, summary)
}

#[test]
fn pages_only_sitemaps_list_are_crawled_and_nothing_out_of_scope_is_asked() {
    let started = Instant::now();
    let ws = Websim::start(&[
        "--hosts",
        "20",
        "--pages",
        "300",
        "--seed",
        "7",
        "--sitemaps",
    ]);
    let host = ws
        .hosts()
        .into_iter()
        .find(|h| h.has("sitemaps"))
        .expect("websim --sitemaps has a sitemap host");
    let (sys, scan, summary) = crawl(&ws);
    let manifest = ws.manifest();
    let log = ws.log();

    // What the sitemaps alone reach, in the manifest: the index, its two
    // sitemaps, twenty pages.
    let on_host: Vec<_> = manifest
        .iter()
        .filter(|r| r.url.contains(&format!("://{}", host.name)))
        .collect();
    let only: Vec<_> = on_host
        .iter()
        .filter(|r| r.url.contains("/only/p"))
        .collect();
    assert_eq!(
        only.len(),
        20,
        "manifest rows of the sitemap host: {on_host:?}"
    );
    assert!(
        on_host
            .iter()
            .any(|r| r.url.ends_with("/sitemaps/more.xml.gz")),
        "the gzip sitemap is in the manifest"
    );

    // 100 % coverage: every status-200 manifest URL stored, the sitemaps' pages
    // among them, each at the manifest's depth.
    let missing: Vec<&str> = manifest
        .iter()
        .filter(|r| r.status == 200 && !scan.ok_urls.contains(&r.url))
        .map(|r| r.url.as_str())
        .collect();
    let wanted = manifest.iter().filter(|r| r.status == 200).count();
    assert!(
        missing.is_empty(),
        "{} of {wanted} status-200 manifest URLs not stored, e.g. {:?}\n{summary}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    let wrong_depth: Vec<String> = on_host
        .iter()
        .filter(|r| scan.depths.get(&r.url).is_none_or(|d| d != &[r.depth]))
        .map(|r| {
            format!(
                "{} stored at {:?}, manifest {}",
                r.url,
                scan.depths.get(&r.url),
                r.depth
            )
        })
        .collect();
    assert!(wrong_depth.is_empty(), "depths: {wrong_depth:?}");

    // Nothing out of scope or robots-excluded requested: no URL of never.txt, no
    // host websim does not serve, no path the sitemaps list out of scope.
    let never: HashSet<String> = ws.never().into_iter().collect();
    assert!(
        never.iter().any(|u| u.contains("/a/a/a/a/deep.html"))
            && never.iter().any(|u| u.contains("/private/secret.html")),
        "never.txt lacks the sitemap host's out-of-scope and excluded URLs"
    );
    let requested: Vec<String> = log
        .iter()
        .map(|l| format!("{}://{}{}", l.scheme, l.host.to_ascii_lowercase(), l.target))
        .collect();
    let forbidden: Vec<&String> = requested.iter().filter(|u| never.contains(*u)).collect();
    assert!(
        forbidden.is_empty(),
        "never.txt URLs requested: {forbidden:?}"
    );
    let served: HashSet<String> = ws.hosts().into_iter().map(|h| h.name).collect();
    let strangers: Vec<&str> = log
        .iter()
        .map(|l| l.host.as_str())
        .filter(|h| !served.contains(&tests::requestlog::host_name(h)))
        .collect();
    assert!(
        strangers.is_empty(),
        "hosts websim does not serve: {strangers:?}"
    );
    let long: Vec<_> = log
        .iter()
        .filter(|l| l.target.starts_with("/long/") || l.target.starts_with("/a/a/"))
        .collect();
    assert!(
        long.is_empty(),
        "out-of-scope sitemap URLs requested: {long:?}"
    );

    // No URL fetched twice (robots.txt fetches aside).
    let twice: BTreeMap<String, usize> = url_counts(&log)
        .into_iter()
        .filter(|(u, n)| *n > 1 && !u.ends_with("/robots.txt") && !u.ends_with("/robots-real.txt"))
        .collect();
    assert!(twice.is_empty(), "URLs fetched more than once: {twice:?}");

    let errors = sys.error_lines();
    assert!(errors.is_empty(), "ERROR lines:\n{}", errors.join("\n"));
    eprintln!(
        "sitemaps: crawl ended by itself after {:?}; {} requests, {wanted}/{wanted} \
         status-200 manifest URLs stored ({} on the sitemap host, 20 only in sitemaps); \
         app summary: {summary}",
        started.elapsed(),
        log.len(),
        on_host.len()
    );
}
