//! Issue 43, item 3: robots directives in headers and pages. A crawl with the
//! default `app:` settings (its directories, seeds and the open scope of the other
//! websim crawls set) against a websim whose pages carry robots directives of
//! their own (`--robots-tags`, see websim's `robots_tags.rs`): `X-Robots-Tag:
//! nofollow`, `NONE`, one for another agent and one for `polycrawl`, a
//! `noarchive` after an `unavailable_after` date, and meta `noindex`, `noarchive`
//! (as `<meta name="polycrawl">`) and `noarchive, nofollow`; plus websim's own meta
//! nofollow pages. `robots-tags.tsv` names each such page the manifest fetches and
//! what an obeying crawler does with it.
//!
//! Obeying (the default), the crawl must store every status-200 manifest URL but
//! the `noarchive` ones as a response, keep each `noarchive` page out of the
//! repository (no response record; a metadata record holds its URL and why), never
//! request a URL of `never.txt` (among them the `/hidden/` page that only a
//! nofollow page links, for every nofollow page), and its summary must count
//! exactly the nofollow and noarchive pages of `robots-tags.tsv`. With
//! `obey_x_robots_tag: false, obey_meta_robots: false` a crawl of the same web
//! follows and stores everything: every tagged page stored as a response, every
//! `/hidden/` page of a nofollow page requested, no metadata record, no count.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use spool::warc::{Record, RecordType, WarcReader};
use tests::repository::{RepoScan, warc_files};
use tests::requestlog::url_counts;
use tests::system::{Knobs, System};
use tests::websim::Websim;

const APP_ID: &str = "bfs-1";
/// Time for the whole crawl to end by itself.
const CRAWL_TIMEOUT: Duration = Duration::from_secs(180);
const WEB: [&str; 7] = [
    "--hosts",
    "20",
    "--pages",
    "300",
    "--seed",
    "7",
    "--robots-tags",
];

/// One row of `robots-tags.tsv`.
#[derive(Debug, Clone)]
struct Tagged {
    url: String,
    tag: String,
    nofollow: bool,
    noarchive: bool,
    /// The `/hidden/` page only this (nofollow) page links.
    hidden: Option<String>,
}

fn tagged(ws: &Websim) -> Vec<Tagged> {
    let path = ws.path("out").join("robots-tags.tsv");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "robots-tags.tsv line {l:?}");
            Tagged {
                url: f[0].to_owned(),
                tag: f[1].to_owned(),
                nofollow: f[2] == "1",
                noarchive: f[3] == "1",
                hidden: (f[4] != "-").then(|| f[4].to_owned()),
            }
        })
        .collect()
}

/// The metadata records of the repository: target URI → block.
fn metadata_records(repo: &std::path::Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for path in warc_files(repo).expect("listing the WARC files") {
        let mut reader = WarcReader::new(BufReader::new(File::open(&path).unwrap()));
        let mut rec = Record::default();
        while reader.read_into(&mut rec).expect("reading a WARC file") {
            if rec.headers.record_type() == Some(RecordType::Metadata) {
                let uri = rec.headers.target_uri().unwrap_or_default().to_owned();
                out.insert(uri, String::from_utf8_lossy(&rec.block).into_owned());
            }
        }
    }
    out
}

/// Runs the crawl with `extra` in the `app:` section; returns the system (for
/// its logs), the repository, its scan and the summary line.
fn crawl(ws: &Websim, extra: &str) -> (System, PathBuf, RepoScan, String) {
    let knobs = Knobs {
        interval_ms: 20,
        ip_min_interval_ms: 10,
        ..Knobs::default()
    };
    let mut sys = System::new(ws, &knobs);
    let (state, repo) = sys.write_app_config(ws, extra, |config| config);
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
    (sys, repo, scan, summary)
}

/// The summary's robots counts: (pages whose links were not followed, pages not
/// stored); (0, 0) when the line has none.
fn robots_counts(summary: &str) -> (usize, usize) {
    let Some(rest) = summary.split(", robots directives: ").nth(1) else {
        return (0, 0);
    };
    let numbers: Vec<usize> = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(2)
        .map(|s| s.parse().unwrap())
        .collect();
    assert!(
        rest.starts_with(&format!("{} pages' links not followed, ", numbers[0]))
            && rest.contains(&format!("{} pages not stored", numbers[1])),
        "summary robots part: {rest}"
    );
    (numbers[0], numbers[1])
}

fn requested(ws: &Websim) -> HashSet<String> {
    ws.log()
        .iter()
        .map(|l| format!("{}://{}{}", l.scheme, l.host.to_ascii_lowercase(), l.target))
        .collect()
}

#[test]
fn robots_directives_decide_links_and_storage_and_the_switches_turn_them_off() {
    let started = Instant::now();

    // Obeying, the default.
    let ws = Websim::start(&WEB);
    let tags = tagged(&ws);
    let kinds: HashSet<&str> = tags.iter().map(|t| t.tag.as_str()).collect();
    for kind in [
        "header_nofollow",
        "header_none",
        "header_ours",
        "header_other",
        "header_noarchive",
        "meta_noindex",
        "meta_noarchive",
        "meta_noarchive_nofollow",
        "meta_nofollow",
    ] {
        assert!(kinds.contains(kind), "no {kind} page in {kinds:?}");
    }
    let nofollow: Vec<&Tagged> = tags.iter().filter(|t| t.nofollow).collect();
    let noarchive: HashSet<&str> = tags
        .iter()
        .filter(|t| t.noarchive)
        .map(|t| t.url.as_str())
        .collect();
    let (sys, repo, scan, summary) = crawl(&ws, "");
    let manifest = ws.manifest();
    let asked = requested(&ws);
    let never: HashSet<String> = ws.never().into_iter().collect();

    // Storage: every status-200 URL as a response but the noarchive ones, which
    // are metadata records saying why.
    let missing: Vec<&str> = manifest
        .iter()
        .filter(|r| r.status == 200 && !noarchive.contains(r.url.as_str()))
        .filter(|r| !scan.ok_urls.contains(&r.url))
        .map(|r| r.url.as_str())
        .collect();
    assert!(missing.is_empty(), "not stored: {missing:?}\n{summary}");
    let archived: Vec<&&str> = noarchive
        .iter()
        .filter(|u| scan.ok_urls.contains(**u))
        .collect();
    assert!(archived.is_empty(), "noarchive pages stored: {archived:?}");
    let meta = metadata_records(&repo);
    for url in &noarchive {
        let block = meta
            .get(*url)
            .unwrap_or_else(|| panic!("no metadata record for withheld {url}"));
        assert!(
            block.contains("robots: ") && block.contains("noarchive"),
            "{url}: {block}"
        );
        assert!(asked.contains(*url), "noarchive page {url} not fetched");
    }
    assert_eq!(meta.len(), noarchive.len(), "metadata records: {meta:?}");

    // Links: no never.txt URL requested; among them each nofollow page's hidden
    // page, and the meta noindex and header_other pages' links are followed.
    let hidden: Vec<String> = nofollow
        .iter()
        .map(|t| t.hidden.clone().expect("a nofollow page's hidden page"))
        .collect();
    for h in &hidden {
        assert!(never.contains(h), "{h} not in never.txt");
    }
    let forbidden: Vec<&String> = asked.iter().filter(|u| never.contains(*u)).collect();
    assert!(
        forbidden.is_empty(),
        "never.txt URLs requested: {forbidden:?}"
    );
    let twice: Vec<(String, usize)> = url_counts(&ws.log())
        .into_iter()
        .filter(|(u, n)| *n > 1 && !u.ends_with("/robots.txt") && !u.ends_with("/robots-real.txt"))
        .collect();
    assert!(twice.is_empty(), "fetched more than once: {twice:?}");

    // Counts: exactly the tagged pages.
    let counts = robots_counts(&summary);
    assert_eq!(
        counts,
        (nofollow.len(), noarchive.len()),
        "summary: {summary}"
    );
    let errors = sys.error_lines();
    assert!(errors.is_empty(), "ERROR lines:\n{}", errors.join("\n"));
    let obeyed = format!(
        "obeying: {} tagged pages, {} nofollow ({} hidden pages not requested), {} noarchive \
         (metadata records only), {} requests; {summary}",
        tags.len(),
        nofollow.len(),
        hidden.len(),
        noarchive.len(),
        asked.len()
    );
    drop(sys);
    drop(ws);

    // Switched off: everything followed and stored. The same web on other ports:
    // its own table, which must name the same pages.
    let ws = Websim::start(&WEB);
    let tags_again = tagged(&ws);
    assert_eq!(tags_again.len(), tags.len(), "the same web");
    let tags = tags_again;
    let hidden: Vec<String> = tags.iter().filter_map(|t| t.hidden.clone()).collect();
    let (sys, repo, scan, summary) = crawl(
        &ws,
        "        obey_x_robots_tag: false,\n        obey_meta_robots: false,\n",
    );
    let asked = requested(&ws);
    let not_stored: Vec<&str> = tags
        .iter()
        .filter(|t| !scan.ok_urls.contains(&t.url))
        .map(|t| t.url.as_str())
        .collect();
    assert!(
        not_stored.is_empty(),
        "switched off, not stored: {not_stored:?}"
    );
    let not_asked: Vec<&String> = hidden.iter().filter(|h| !asked.contains(*h)).collect();
    assert!(
        not_asked.is_empty(),
        "switched off, hidden pages not requested: {not_asked:?}"
    );
    assert!(
        metadata_records(&repo).is_empty(),
        "switched off, metadata records"
    );
    assert_eq!(robots_counts(&summary), (0, 0), "summary: {summary}");
    let errors = sys.error_lines();
    assert!(errors.is_empty(), "ERROR lines:\n{}", errors.join("\n"));
    eprintln!(
        "robots tags: {obeyed}\nswitched off: {} tagged pages stored, {} hidden pages \
         requested, {} requests; {summary}\n({:?} in all)",
        tags.len(),
        hidden.len(),
        asked.len(),
        started.elapsed()
    );
}
