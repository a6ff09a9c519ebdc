//! Overlapping parties of one site (issue 41, Done-when 3): websim with
//! `--components 3 --component-seeds 3` makes every component's root and the
//! root's first two children seeds, so a site has up to nine parties and those of
//! one component overlap (a child links its parent: its party is mostly the
//! component's). The seed-by-seed app shares one bounded filter per site among
//! the site's parties, so the overlap is fetched once.
//!
//! Checked against websim's request log and `parties.tsv`: every URL of the union
//! of the parties fetched exactly once (the sum of the parties is much more),
//! nothing else; every page of every party stored once in the repository; the
//! app's pages per party add up to the union; and the seed contexts' memory as
//! the app reports it: no filter above the configured `--seed-context-bytes`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use tests::system::{Knobs, System};
use tests::websim::Websim;

/// How long the crawl may take.
const CRAWL: Duration = Duration::from_secs(120);

/// The filter size the app is given (small: the bound is what is checked).
const CONTEXT_BYTES: usize = 4096;

#[test]
fn overlapping_parties_of_one_site_fetch_their_overlap_once_within_the_memory_bound() {
    let ws = Websim::start(&[
        "--hosts",
        "20",
        "--pages",
        "600",
        "--seed",
        "41",
        "--plain",
        "--all-seeds",
        "--components",
        "3",
        "--component-seeds",
        "3",
    ]);
    let knobs = Knobs {
        interval_ms: 20,
        ip_min_interval_ms: 10,
        ..Knobs::default()
    };
    let mut sys = System::new(&ws, &knobs);
    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.wait_components(1, 1, Duration::from_secs(30));
    let state = sys.dir().join("sbs-state");
    let repo = sys.dir().join("sbs-repo");
    let bytes = CONTEXT_BYTES.to_string();
    let mut cmd = sys.app_command("app-sbs", &state, &repo, &ws.path("seeds"));
    cmd.args([
        "--strategy",
        "seed-by-seed",
        "--app",
        "sbs",
        "--scope",
        "open",
    ])
    .args(["--workers", "3", "--seed-contexts", "4", "--window", "3"])
    .args(["--seed-context-bytes", &bytes]);
    // The app's summary line.
    let summary = sys.run_app_to_end(cmd, CRAWL);

    ws.flush_log();
    // websim's parties: seed, URL, status (or outcome, or `external`), depth.
    let path = ws.path("manifest").with_file_name("parties.tsv");
    let text = std::fs::read_to_string(&path).expect("websim's parties.tsv");
    let mut party_urls: BTreeMap<String, HashSet<String>> = BTreeMap::new();
    let mut ok: HashSet<String> = HashSet::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 4, "parties.tsv line {l:?}");
        let set = party_urls.entry(f[0].to_owned()).or_default();
        if let Ok(code) = f[2].parse::<u16>() {
            set.insert(f[1].to_owned());
            if code == 200 {
                ok.insert(f[1].to_owned());
            }
        }
    }
    let seeds = ws.seeds();
    let union: HashSet<&String> = party_urls.values().flatten().collect();
    let sum: usize = party_urls.values().map(HashSet::len).sum();
    // The web must really have overlapping parties of one site.
    assert!(
        sum > union.len() + union.len() / 2,
        "parties barely overlap: {sum} party URLs, {} distinct",
        union.len()
    );
    let mut counts: HashMap<String, usize> = HashMap::new();
    for l in ws.log().iter().filter(|l| !l.is_robots()) {
        let url = format!("{}://{}{}", l.scheme, l.host.to_ascii_lowercase(), l.target);
        *counts.entry(url).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    let extra: Vec<_> = counts.keys().filter(|u| !union.contains(u)).collect();
    let missing: Vec<_> = union.iter().filter(|u| !counts.contains_key(**u)).collect();
    let scan = tests::repository::RepoScan::read(&repo)
        .unwrap_or_else(|e| panic!("{}: {e}", repo.display()));
    let not_stored: Vec<_> = ok.iter().filter(|u| !scan.ok_urls.contains(*u)).collect();
    // The app's parties: seed, pages, worker, filter false-positive rate.
    let log = std::fs::read_to_string(state.join("parties.tsv")).expect("parties.tsv");
    let mut app_pages: BTreeMap<String, u64> = BTreeMap::new();
    let mut fp_max = 0.0f64;
    for l in log.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 4, "app parties.tsv line {l:?}");
        app_pages.insert(f[0].to_owned(), f[1].parse().expect("pages"));
        fp_max = fp_max.max(f[3].parse().expect("fp rate"));
    }
    eprintln!(
        "overlap: {} seeds, {sum} party URLs, {} distinct; fetched {}, twice {}, extra {}, \
         missing {}; repository {} responses, {} of {} pages not stored; filter fp at most \
         {fp_max:e}\n{summary}",
        seeds.len(),
        union.len(),
        counts.len(),
        twice.len(),
        extra.len(),
        missing.len(),
        scan.responses,
        not_stored.len(),
        ok.len()
    );
    assert!(twice.is_empty(), "fetched twice: {twice:?}");
    assert!(extra.is_empty(), "fetched outside every party: {extra:?}");
    assert!(missing.is_empty(), "party URLs not fetched: {missing:?}");
    assert!(not_stored.is_empty(), "pages not stored: {not_stored:?}");
    assert_eq!(
        scan.responses,
        counts.len(),
        "one response stored per fetch"
    );
    assert_eq!(app_pages.len(), seeds.len(), "every seed's party ended");
    assert_eq!(
        app_pages.values().sum::<u64>(),
        union.len() as u64,
        "each page went to one party"
    );
    assert!(fp_max < 0.01, "filter false-positive rate {fp_max}");
    // The seed contexts' memory, as the summary line gives it.
    let filters = summary
        .split("site filters ")
        .nth(1)
        .and_then(|s| s.split(" bytes").next())
        .unwrap_or_else(|| panic!("no site filters figure: {summary}"));
    let (peak, each) = filters
        .split_once(" at most, ")
        .unwrap_or_else(|| panic!("site filters figure {filters:?}"));
    let peak: usize = peak.parse().expect("filters peak");
    let each: usize = each.parse().expect("filter bytes");
    assert_eq!(each, CONTEXT_BYTES, "filter bytes: {summary}");
    assert!(
        (1..=20).contains(&peak),
        "filters held at once {peak} (20 sites)"
    );
    assert!(
        summary.contains(&format!("seeds queued 0 active 0 finished {}", seeds.len())),
        "{summary}"
    );
}
