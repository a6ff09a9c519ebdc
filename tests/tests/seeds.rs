//! The seed-by-seed application (issue 26, SCrawler) against websim's oracle.
//!
//! websim runs with `--components 3`: every host is three locally disconnected
//! trees, each root a seed, and `parties.tsv` says what each seed's party holds
//! (the walk from the seed over links to its own origin, websim's model, not the
//! crawler's extractor) and which links of it lead to other origins.
//! `polycrawl app --strategy seed-by-seed` crawls them on a real manager, resolver
//! and downloader; the test checks websim's request log: every URL of the union
//! of the parties fetched once, nothing else, nothing robots-disallowed; and the
//! candidate-seed file: every input seed and every external link.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use spool::protocol::SeedFigures;

use tests::bin;
use tests::politeness;
use tests::process::ProcessGuard;
use tests::system::{Knobs, STATUS_POLL, System};
use tests::websim::Websim;

/// The status-coded URLs of the union of the parties, the robots-excluded ones
/// and the external links, from websim's `parties.tsv`.
fn expected_sets(ws: &Websim) -> (HashSet<String>, HashSet<String>, HashSet<String>) {
    let (mut fetched, mut excluded, mut external) =
        (HashSet::new(), HashSet::new(), HashSet::new());
    for r in parties(ws) {
        if r.what.parse::<u16>().is_ok() {
            fetched.insert(r.url);
        } else if r.what == "robots_excluded" {
            excluded.insert(r.url);
        } else if r.what == "external" {
            external.insert(r.url);
        }
    }
    (fetched, excluded, external)
}

/// How often websim was asked for each URL (robots.txt fetches left out).
fn fetch_counts(ws: &Websim) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for l in ws.log().iter().filter(|l| !l.is_robots()) {
        let url = format!("{}://{}{}", l.scheme, l.host.to_ascii_lowercase(), l.target);
        *counts.entry(url).or_default() += 1;
    }
    counts
}

/// How long the crawl may take.
const CRAWL: Duration = Duration::from_secs(120);

/// One row of websim's `parties.tsv`: seed, URL, status or outcome or `external`.
struct PartyRow {
    seed: String,
    url: String,
    what: String,
}

fn parties(ws: &Websim) -> Vec<PartyRow> {
    let path = ws.path("manifest").with_file_name("parties.tsv");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (websim without --components?)", path.display()));
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "parties.tsv line {l:?}");
            PartyRow {
                seed: f[0].to_owned(),
                url: f[1].to_owned(),
                what: f[2].to_owned(),
            }
        })
        .collect()
}

/// Starts the seed-by-seed app with `extra` flags; its state and candidates in
/// `state`, its repository in `repo`.
fn start_seed_app(
    sys: &System,
    seeds: &Path,
    state: &Path,
    repo: &Path,
    extra: &[&str],
) -> ProcessGuard {
    let mut cmd = sys.app_command("app-sbs", state, repo, seeds);
    cmd.args([
        "--strategy",
        "seed-by-seed",
        "--app",
        "sbs",
        "--scope",
        "open",
    ])
    .args(extra);
    ProcessGuard::spawn("app-sbs", cmd, sys.dir()).expect("starting polycrawl app")
}

/// Waits for `app` to exit with success; panics with the reports otherwise.
fn wait_success(app: &mut ProcessGuard, sys: &System) {
    let status = app.wait_exit(CRAWL).expect("waiting for the app");
    let Some(status) = status else {
        panic!("{}\n{}", app.report("not complete in time"), sys.reports());
    };
    assert!(
        status.success(),
        "{}\n{}",
        app.report(&format!("exited {status}")),
        sys.reports()
    );
}

#[test]
fn seed_by_seed_fetches_exactly_the_parties_and_writes_every_candidate() {
    let ws = Websim::start(&[
        "--hosts",
        "20",
        "--pages",
        "600",
        "--seed",
        "26",
        "--plain",
        "--all-seeds",
        "--components",
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
    let sample = sys.dir().join("sbs-sample.tsv");
    let sample_arg = sample.display().to_string();
    let mut app = start_seed_app(
        &sys,
        &ws.path("seeds"),
        &state,
        &repo,
        &[
            "--workers",
            "3",
            "--seed-contexts",
            "4",
            "--window",
            "3",
            "--sample",
            &sample_arg,
        ],
    );
    wait_success(&mut app, &sys);

    ws.flush_log();
    let rows = parties(&ws);
    let seeds = ws.seeds();
    let by_seed: HashSet<&str> = rows.iter().map(|r| r.seed.as_str()).collect();
    assert_eq!(by_seed.len(), seeds.len(), "every seed has a party");
    let fetched_expected: HashSet<&str> = rows
        .iter()
        .filter(|r| r.what.parse::<u16>().is_ok())
        .map(|r| r.url.as_str())
        .collect();
    let excluded: HashSet<&str> = rows
        .iter()
        .filter(|r| r.what == "robots_excluded")
        .map(|r| r.url.as_str())
        .collect();
    let external: HashSet<&str> = rows
        .iter()
        .filter(|r| r.what == "external")
        .map(|r| r.url.as_str())
        .collect();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for l in ws.log().iter().filter(|l| !l.is_robots()) {
        let url = format!("{}://{}{}", l.scheme, l.host.to_ascii_lowercase(), l.target);
        *counts.entry(url).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    let extra: Vec<_> = counts
        .keys()
        .filter(|u| !fetched_expected.contains(u.as_str()))
        .collect();
    let missing: Vec<_> = fetched_expected
        .iter()
        .filter(|u| !counts.contains_key(**u))
        .collect();
    let disallowed: Vec<_> = counts
        .keys()
        .filter(|u| excluded.contains(u.as_str()))
        .collect();
    let candidates: HashSet<String> = std::fs::read_to_string(state.join("candidates.txt"))
        .expect("the candidate-seed file")
        .lines()
        .map(str::to_owned)
        .collect();
    let seeds_missing: Vec<_> = seeds.iter().filter(|s| !candidates.contains(*s)).collect();
    let external_missing: Vec<_> = external
        .iter()
        .filter(|u| !candidates.contains(**u))
        .collect();
    // Pages per party, as the app logged them.
    let log = std::fs::read_to_string(state.join("parties.tsv")).expect("parties.tsv");
    let mut app_pages: BTreeMap<String, u64> = BTreeMap::new();
    for l in log.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        app_pages.insert(f[0].to_owned(), f[1].parse().expect("pages"));
    }
    // A seed robots.txt excludes is a party of no page.
    let mut manifest_pages: BTreeMap<String, u64> = seeds.iter().map(|s| (s.clone(), 0)).collect();
    for r in rows.iter().filter(|r| r.what.parse::<u16>().is_ok()) {
        *manifest_pages.entry(r.seed.clone()).or_default() += 1;
    }
    let samples = std::fs::read_to_string(&sample).unwrap_or_default();
    let summary = app.stdout().join("\n");
    eprintln!(
        "seed-by-seed: {} seeds, {} party URLs fetched of {} expected, {} external links, \
         {} candidates; twice {}, extra {}, missing {}, robots-disallowed {}; \
         {} sample lines\n{summary}",
        seeds.len(),
        counts.len() - extra.len(),
        fetched_expected.len(),
        external.len(),
        candidates.len(),
        twice.len(),
        extra.len(),
        missing.len(),
        disallowed.len(),
        samples.lines().count()
    );
    assert!(twice.is_empty(), "fetched twice: {twice:?}");
    assert!(extra.is_empty(), "fetched outside every party: {extra:?}");
    assert!(missing.is_empty(), "party URLs not fetched: {missing:?}");
    assert!(
        disallowed.is_empty(),
        "robots-disallowed fetched: {disallowed:?}"
    );
    assert!(
        seeds_missing.is_empty(),
        "seeds not in candidates: {seeds_missing:?}"
    );
    assert!(
        external_missing.is_empty(),
        "external links not in candidates: {external_missing:?}"
    );
    assert_eq!(
        app_pages, manifest_pages,
        "pages per party: app vs manifest"
    );
    assert!(
        summary.contains("seeds queued 0 active 0 finished 60"),
        "summary: {summary}"
    );
    let sampled: Vec<&str> = samples.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(!sampled.is_empty(), "no sample line");
    for line in sampled {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 6, "sample line {line:?}");
        assert_eq!(
            f[5].split(',').count(),
            3,
            "held per worker of 3 workers: {line:?}"
        );
    }
}

/// Starts the breadth-first app (`bfs`) on the same manager.
fn start_bfs_app(sys: &System, seeds: &Path, state: &Path, repo: &Path) -> ProcessGuard {
    let addr = sys.addr.expect("the manager runs").to_string();
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("app")
        .arg("--config")
        .arg(&sys.config)
        .args(["--manager", &addr, "--app", "bfs", "--id", "app-bfs"])
        .arg("--spool")
        .arg(&sys.spool)
        .arg("--state")
        .arg(state)
        .arg("--repo")
        .arg(repo)
        .arg("--seeds")
        .arg(seeds)
        .args(["--scope", "open"])
        .env("POLYCRAWL_TOKEN", sys.token())
        .env_remove("POLYCRAWL_ADMIN_TOKEN")
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info");
    ProcessGuard::spawn("app-bfs", cmd, sys.dir()).expect("starting polycrawl app")
}

#[test]
fn breadth_first_and_seed_by_seed_share_one_manager_politely() {
    let ws = Websim::start(&[
        "--hosts",
        "20",
        "--pages",
        "500",
        "--seed",
        "27",
        "--plain",
        "--components",
        "2",
    ]);
    let knobs = Knobs {
        interval_ms: 40,
        ip_min_interval_ms: 20,
        ..Knobs::default()
    };
    let mut sys = System::new(&ws, &knobs);
    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.start_downloader("dl-2");
    sys.wait_components(2, 1, Duration::from_secs(30));
    let seeds = ws.path("seeds");
    let (bfs_state, bfs_repo) = (sys.dir().join("bfs-state"), sys.dir().join("bfs-repo"));
    let (sbs_state, sbs_repo) = (sys.dir().join("sbs-state"), sys.dir().join("sbs-repo"));
    let mut bfs = start_bfs_app(&sys, &seeds, &bfs_state, &bfs_repo);
    let mut sbs = start_seed_app(&sys, &seeds, &sbs_state, &sbs_repo, &["--workers", "2"]);
    // The manager's status (what the admin page shows) carries the seed-by-seed
    // app's figures while it runs, and none for the breadth-first app.
    let mut shown: Vec<SeedFigures> = Vec::new();
    // Sampled until it exits (judged by `wait_success` below, also at the limit).
    test_support::wait::poll_every(CRAWL, STATUS_POLL, || {
        if sbs.wait_exit(Duration::ZERO).ok().flatten().is_some() {
            return Some(());
        }
        if let Ok(status) = sys.try_status() {
            for c in &status.components {
                let Some(app) = &c.state.app else { continue };
                match c.id.as_str() {
                    "app-sbs" => shown.extend(app.seeds.as_deref().cloned()),
                    id => assert!(app.seeds.is_none(), "{id} shows seed figures"),
                }
            }
        }
        None
    });
    wait_success(&mut sbs, &sys);
    wait_success(&mut bfs, &sys);
    let seed_count = std::fs::read_to_string(&seeds)
        .expect("seeds")
        .lines()
        .count() as u64;
    assert!(
        !shown.is_empty(),
        "the manager never showed the seed-by-seed figures"
    );
    for f in &shown {
        assert_eq!(f.queued + f.active + f.finished, seed_count, "{f:?}");
        assert_eq!(f.held.len(), 2, "two workers: {f:?}");
        assert_eq!(
            f.held.iter().map(|&h| u64::from(h)).sum::<u64>(),
            f.active,
            "{f:?}"
        );
        assert!(f.top_parties.len() as u64 <= f.active.min(5), "{f:?}");
    }

    let log = ws.flushed_log();
    let interval = (knobs.interval_ms * 1000) as i64;
    let interval_us = |_: &str| -> i64 { interval };
    let rules = politeness::Rules {
        interval_us: &interval_us,
        ip_spacing_us: (knobs.ip_min_interval_ms * 1000) as i64,
        ip_max_in_flight: knobs.ip_max_in_flight as usize,
    };
    let judged = politeness::judge(&sys.wire_log(), &log, &rules);
    // Both crawls asked for the seeds' pages: those hosts were wanted by both.
    let party_urls: HashSet<String> = parties(&ws)
        .into_iter()
        .filter(|r| r.what.parse::<u16>().is_ok())
        .map(|r| r.url)
        .collect();
    let bfs_summary = bfs.stdout().join("\n");
    let sbs_summary = sbs.stdout().join("\n");
    eprintln!(
        "two apps: {} requests logged, {} party URLs; {}\n{bfs_summary}\n{sbs_summary}",
        log.len(),
        party_urls.len(),
        judged.figures(&rules)
    );
    assert!(
        sbs_summary.contains(": Complete: seed-by-seed"),
        "{sbs_summary}"
    );
    assert!(
        tests::verdict::ended_with_traps_at_most(&bfs_summary),
        "{bfs_summary}"
    );
    judged.assert_polite();
    // Each app stored its own pages in its own repository.
    for repo in [&bfs_repo, &sbs_repo] {
        let scan = tests::repository::RepoScan::read(repo)
            .unwrap_or_else(|e| panic!("{}: {e}", repo.display()));
        assert!(scan.responses > 0, "{} holds no page", repo.display());
    }
}

#[test]
fn seed_by_seed_killed_mid_crawl_resumes_and_loses_no_url() {
    let ws = Websim::start(&[
        "--hosts",
        "20",
        "--pages",
        "800",
        "--seed",
        "28",
        "--plain",
        "--all-seeds",
        "--components",
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
    let flags = ["--workers", "3", "--seed-contexts", "4", "--window", "3"];
    let mut app = start_seed_app(&sys, &ws.path("seeds"), &state, &repo, &flags);
    // kill -9 once a part of the web is fetched.
    let fetched = test_support::wait::poll_every(CRAWL, Duration::from_millis(20), || {
        if fetch_counts(&ws).len() >= 250 {
            return Some(());
        }
        if let Some(status) = app.wait_exit(Duration::ZERO).expect("app status") {
            panic!(
                "{}",
                app.report(&format!("exited ({status}) before the kill"))
            );
        }
        None
    });
    assert!(fetched.is_some(), "no progress");
    drop(app); // SIGKILL
    let mut app = start_seed_app(&sys, &ws.path("seeds"), &state, &repo, &flags);
    wait_success(&mut app, &sys);

    ws.flush_log();
    let (fetched, excluded, external) = expected_sets(&ws);
    let counts = fetch_counts(&ws);
    let twice = counts.values().filter(|n| **n > 1).count();
    let extra: Vec<_> = counts.keys().filter(|u| !fetched.contains(*u)).collect();
    let missing: Vec<_> = fetched
        .iter()
        .filter(|u| !counts.contains_key(*u))
        .collect();
    let disallowed: Vec<_> = counts.keys().filter(|u| excluded.contains(*u)).collect();
    let candidates: HashSet<String> = std::fs::read_to_string(state.join("candidates.txt"))
        .expect("the candidate-seed file")
        .lines()
        .map(str::to_owned)
        .collect();
    let lost: Vec<_> = ws
        .seeds()
        .into_iter()
        .filter(|s| !candidates.contains(s))
        .chain(
            external
                .iter()
                .filter(|u| !candidates.contains(*u))
                .cloned(),
        )
        .collect();
    let ended: HashSet<String> = std::fs::read_to_string(state.join("parties.tsv"))
        .expect("parties.tsv")
        .lines()
        .filter_map(|l| l.split('\t').next().map(str::to_owned))
        .collect();
    eprintln!(
        "seed-by-seed kill -9: {} of {} party URLs fetched, {twice} fetched twice (the \
         crash's), extra {}, robots-disallowed {}, candidates lost {}, parties ended {}\n{}",
        fetched.len() - missing.len(),
        fetched.len(),
        extra.len(),
        disallowed.len(),
        lost.len(),
        ended.len(),
        app.stdout().join("\n")
    );
    assert!(
        missing.is_empty(),
        "party URLs lost to the crash: {missing:?}"
    );
    assert!(extra.is_empty(), "fetched outside every party: {extra:?}");
    assert!(
        disallowed.is_empty(),
        "robots-disallowed fetched: {disallowed:?}"
    );
    assert!(lost.is_empty(), "candidates lost: {lost:?}");
    assert_eq!(ended.len(), ws.seeds().len(), "every party ended");
}

/// Done-when 1's site-by-site variant (one seed per site, its root): only the
/// roots' parties are fetched; with free competition instead of the distributor.
#[test]
fn site_by_site_fetches_only_the_roots_parties() {
    let ws = Websim::start(&[
        "--hosts",
        "20",
        "--pages",
        "600",
        "--seed",
        "26",
        "--plain",
        "--all-seeds",
        "--components",
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
    // The roots: a seed URL whose path is `/`.
    let roots: Vec<String> = ws
        .seeds()
        .into_iter()
        .filter(|s| {
            s.split_once("://")
                .and_then(|(_, rest)| rest.split_once('/'))
                .is_some_and(|(_, path)| path.is_empty())
        })
        .collect();
    let roots_file = sys.dir().join("roots.txt");
    std::fs::write(&roots_file, roots.join("\n")).expect("writing the roots");
    let state = sys.dir().join("sbs-state");
    let repo = sys.dir().join("sbs-repo");
    let flags = [
        "--workers",
        "3",
        "--seed-contexts",
        "4",
        "--balance",
        "free",
    ];
    let mut app = start_seed_app(&sys, &roots_file, &state, &repo, &flags);
    wait_success(&mut app, &sys);

    ws.flush_log();
    let root_set: HashSet<&str> = roots.iter().map(String::as_str).collect();
    let rows: Vec<PartyRow> = parties(&ws)
        .into_iter()
        .filter(|r| root_set.contains(r.seed.as_str()))
        .collect();
    let expected: HashSet<&str> = rows
        .iter()
        .filter(|r| r.what.parse::<u16>().is_ok())
        .map(|r| r.url.as_str())
        .collect();
    let (all, _, _) = expected_sets(&ws);
    let counts = fetch_counts(&ws);
    let fetched: HashSet<&str> = counts.keys().map(String::as_str).collect();
    let twice = counts.values().filter(|n| **n > 1).count();
    let summary = app.stdout().join("\n");
    eprintln!(
        "site-by-site: {} roots of {} seeds; {} pages fetched, {} in the roots' parties, \
         {} in all seeds' parties (seed-by-seed finds {} more); twice {twice}\n{summary}",
        roots.len(),
        ws.seeds().len(),
        fetched.len(),
        expected.len(),
        all.len(),
        all.len() - expected.len()
    );
    assert_eq!(roots.len() * 3, ws.seeds().len(), "three components a host");
    assert_eq!(fetched, expected, "fetched vs the roots' parties");
    assert_eq!(twice, 0);
    assert!(
        summary.contains("(free)") && summary.contains("moved 0"),
        "{summary}"
    );
}
