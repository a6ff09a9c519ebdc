//! A crawl split into application parts (Polybot section 2.4, Cho and
//! Garcia-Molina's parallel crawlers), end to end through `polycrawl demo`: websim,
//! two crawling systems (manager, resolver, downloaders each) and four parts, all
//! separate processes.
//!
//! - exchange mode: every status-200 page of websim's manifest stored, by exactly
//!   one part (overlap 0), no URL fetched twice (websim's request log), nothing
//!   robots.txt forbids; every part sent and applied URLs, and the totals match;
//! - firewall mode: overlap 0 and no duplicate fetch; links to other parts' hosts
//!   are dropped, none exchanged (coverage may be below 100 %);
//! - cross-over mode: coverage 100 %, some pages stored by two parts (overlap
//!   above 0: links to other parts' hosts are kept and crawled), none exchanged,
//!   no URL fetched more often than there are parts;
//! - exchange mode with one part killed (SIGKILL) mid-crawl and restarted by the
//!   demo's supervisor: still 100 % coverage and overlap 0; a URL may be fetched
//!   twice, but only one the part published in its last generation not recorded
//!   before the kill (see `app_crash.rs`): its first fetch after the part's last
//!   record before the kill, its second after the kill, and no more such URLs
//!   than the restarted part published before the last refetch;
//! - hierarchical partitioning (`--partitioning hierarchical`): exact as above,
//!   and every registered domain's pages stored by one part;
//! - two-level mode (FC2L-UDC: `polycrawl coordinator` plus four agents) on the
//!   coverage-problem web (`websim --orphans`): with the fix, 100 % coverage,
//!   overlap 0, no duplicate or robots-disallowed fetch, every site assigned to
//!   one agent; without it, the stored pages are exactly the manifest's minus
//!   `orphans.tsv` (the pages only other sites reach); with the coordinator
//!   killed (SIGKILL) mid-crawl and restarted, the figures of the fix; with an
//!   agent killed, 100 % coverage and overlap 0, and URLs fetched twice bounded
//!   as for an exchange part;
//! - one part against four (exchange mode), and against a two-level crawl
//!   (coordinator and four agents, its parked URLs passing the host budgets),
//!   the same web and the demo's default budgets (an open crawl): the parts'
//!   `cut.tsv` files together list exactly what the one part's does (none, on
//!   this web without traps), and both store the same pages (issue 38);
//! - one part against a two-level crawl of that web with websim's trap hosts
//!   (`--traps`): the same hosts cut, the maze by its host budget at the same
//!   URLs requested, no other trap host more than a tenth dearer, every other
//!   host whole.
//!
//! Every figure is judged on the parts' WARC files and websim's request log
//! (`tests::grade`), and the demo's own `coverage:`, `duplicate fetches:` and
//! `metrics:` lines must agree with it.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tests::applog;
use tests::bin;
use tests::grade::Grade;
use tests::process::ProcessGuard;
use tests::repository::RepoScan;

/// Ample time for the small web below on 2 busy cores.
const DEMO_TIMEOUT: Duration = Duration::from_secs(300);

const WEB: [&str; 10] = [
    "--hosts",
    "50",
    "--pages",
    "2500",
    "--seed",
    "5",
    "--interval-ms",
    "20",
    // One host of this web asks for `Crawl-delay: 1` in its robots.txt: 54
    // pages a second apart set the crawl's time (54 s of 55), not the split the
    // tests check. Capped as an operator can (manager.frontier.max_crawl_delay_ms).
    "--max-crawl-delay-ms",
    "200",
];

/// Starts the demo with `args` on the web above, split in 4 parts over 2 systems
/// (4 downloaders unless `args` say otherwise).
fn start(dir: &Path, args: &[&str]) -> ProcessGuard {
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("demo")
        .args(WEB)
        .args(["--parts", "4", "--systems", "2"]);
    if !args.contains(&"--downloaders") {
        cmd.args(["--downloaders", "4"]);
    }
    cmd.args(args).arg("--out").arg(dir.join("demo-out"));
    cmd.env("RUST_LOG", "info");
    ProcessGuard::spawn("demo", cmd, dir).expect("starting polycrawl demo")
}

/// Waits for the demo's end; its stdout lines and whether it exited 0.
fn finish(mut demo: ProcessGuard) -> (Vec<String>, bool) {
    let status = demo.wait_exit(DEMO_TIMEOUT).expect("waiting for the demo");
    let Some(status) = status else {
        let _ = demo.terminate(Duration::from_secs(30));
        panic!(
            "{}",
            demo.report(&format!("still running after {DEMO_TIMEOUT:?}"))
        );
    };
    let out = demo.stdout();
    eprintln!("{}", out.join("\n"));
    if !status.success() {
        eprintln!("{}", demo.report(&format!("exited {status}")));
    }
    (out, status.success())
}

fn line<'a>(stdout: &'a [String], prefix: &str) -> &'a str {
    stdout
        .iter()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in\n{}", stdout.join("\n")))
}

/// The figures of the split metrics line.
#[derive(Debug)]
struct Metrics {
    pages: u64,
    unique: u64,
    overlap: f64,
    coverage: f64,
    overhead: f64,
}

fn metrics(stdout: &[String]) -> Metrics {
    let l = line(stdout, "metrics: ");
    let w: Vec<&str> = l.split_whitespace().collect();
    let after = |key: &str| -> &str {
        let i = w
            .iter()
            .position(|x| *x == key)
            .unwrap_or_else(|| panic!("no {key} in {l:?}"));
        w[i + 1]
    };
    Metrics {
        pages: after("pages").parse().unwrap(),
        unique: after("unique").parse().unwrap(),
        overlap: after("overlap").parse().unwrap(),
        coverage: after("coverage").parse().unwrap(),
        overhead: after("overhead").parse().unwrap(),
    }
}

/// `(sent, applied, dropped, kept)` URLs summed over the parts' summary lines.
fn counters(stdout: &[String]) -> (u64, u64, u64, u64) {
    let mut total = (0, 0, 0, 0);
    let mut parts = 0;
    for l in stdout
        .iter()
        .filter(|l| l.starts_with("part ") && l.contains(" app bfs-p"))
    {
        parts += 1;
        let w: Vec<&str> = l.split_whitespace().collect();
        // The first `key` followed by a number (a host given up may be "dropped
        // earlier" before the part's counters).
        let after = |key: &str| -> u64 {
            w.windows(2)
                .find_map(|p| {
                    (p[0] == key)
                        .then(|| p[1].trim_end_matches(',').parse().ok())
                        .flatten()
                })
                .unwrap_or_else(|| panic!("no {key} N in {l}"))
        };
        total.0 += after("sent");
        total.1 += after("applied");
        total.2 += after("dropped");
        total.3 += after("kept");
        assert!(tests::verdict::ended_with_traps_at_most(l), "{l}");
        assert!(l.contains("0 batches quarantined"), "{l}");
    }
    assert_eq!(parts, 4, "{}", stdout.join("\n"));
    total
}

fn oracle(stdout: &[String]) -> (u64, u64, u64, u64) {
    let c = line(stdout, "coverage: ");
    let (fetched, expected) = c
        .trim_start_matches("coverage: ")
        .split_whitespace()
        .next()
        .and_then(|f| f.split_once('/'))
        .unwrap_or_else(|| panic!("bad coverage line {c:?}"));
    // `duplicate fetches: N` may go on (`: K refetched after a kill ...`).
    let number = |prefix: &str| -> u64 {
        let l = line(stdout, prefix);
        l.trim_start_matches(prefix)
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no number in {l:?}"))
    };
    (
        fetched.parse().unwrap(),
        expected.parse().unwrap(),
        number("duplicate fetches: "),
        number("robots-disallowed fetches: "),
    )
}

/// The run in `out_dir` judged on its parts' WARC files and websim's log; the
/// demo's own oracle and metrics lines must say the same.
fn graded(stdout: &[String], out_dir: &Path) -> Grade {
    let grade = Grade::demo(out_dir);
    eprintln!("{}", grade.figures());
    let (fetched, expected, dups, robots) = oracle(stdout);
    assert_eq!(
        (fetched, expected),
        (grade.covered() as u64, grade.expected.len() as u64),
        "the demo's coverage line and the WARC files disagree"
    );
    assert_eq!(
        (dups, robots),
        (
            grade.fetched_twice().len() as u64,
            grade.never_fetched.len() as u64
        ),
        "the demo's duplicate and robots lines and websim's log disagree"
    );
    let m = metrics(stdout);
    assert_eq!(
        (m.pages, m.unique),
        (grade.pages() as u64, grade.stored.len() as u64),
        "the demo's metrics line and the WARC files disagree: {m:?}"
    );
    assert_eq!(grade.scans.len(), 4, "four parts' repositories");
    grade
}

/// When part `name` was killed at `kill_us` (unix µs), what the kill may make the
/// crawl fetch twice: the URLs of its last generation not recorded as published,
/// which its restart publishes again. Checks that every URL fetched twice is
/// one, that is, its first request came after the part's last record before
/// the kill (the generation's files are published after it) and its last after
/// the kill, that none was fetched more than twice, and that they are no more
/// than the URLs the restarted part published before the last refetch. Returns
/// the URLs fetched twice.
fn assert_refetches_from_the_kill(
    grade: &Grade,
    out_dir: &Path,
    name: &str,
    kill_us: u64,
) -> usize {
    // The app's stamps and websim's are the same clock; a stamp is read a moment
    // after what it marks.
    const SLACK_US: u64 = 200_000;
    let published = applog::published(&out_dir.join("logs").join(format!("{name}.log")));
    let opens_us = published
        .iter()
        .filter(|p| p.run == 0 && p.at_us <= kill_us)
        .map(|p| p.at_us)
        .max()
        .unwrap_or(0);
    let twice = grade.fetched_twice();
    let last_refetch = twice
        .values()
        .map(|f| f[f.len() - 1].start_us)
        .max()
        .unwrap_or(0);
    let republished: u64 = published
        .iter()
        .filter(|p| p.run > 0 && p.at_us <= last_refetch + SLACK_US)
        .map(|p| p.urls)
        .sum();
    eprintln!(
        "{name} killed {:.3} s after its last record; {} URLs fetched twice, bound {republished} \
         (URLs its restart published before the last refetch)",
        (kill_us - opens_us.min(kill_us)) as f64 / 1e6,
        twice.len()
    );
    let outside: Vec<(&&str, &&[tests::grade::Fetch])> = twice
        .iter()
        .filter(|(_, f)| {
            f.len() > 2
                || f[0].start_us + SLACK_US < opens_us
                || f[f.len() - 1].start_us + SLACK_US < kill_us
        })
        .collect();
    assert!(
        outside.is_empty(),
        "URLs fetched twice that the kill of {name} at {kill_us} (last record at {opens_us}) \
         does not explain: {outside:?}"
    );
    assert!(
        twice.len() as u64 <= republished,
        "{} URLs fetched twice, more than the {republished} its restart published",
        twice.len()
    );
    twice.len()
}

#[test]
fn exchange_mode_four_parts_two_systems_crawls_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ok) = finish(start(dir.path(), &["--mode", "exchange"]));
    assert!(ok, "the demo failed");
    let grade = graded(&out, &dir.path().join("demo-out"));
    grade.assert_exact();
    assert!(grade.stored_by_several().is_empty(), "a page in two parts");
    let expected = grade.expected.len() as u64;
    assert!(expected > 1000, "{expected}");
    let m = metrics(&out);
    assert_eq!(m.pages, m.unique, "{m:?}");
    assert_eq!(m.unique, expected, "{m:?}");
    assert_eq!(m.overlap, 0.0, "{m:?}");
    assert!((m.coverage - 100.0).abs() < 1e-9, "{m:?}");
    let (sent, applied, dropped, kept) = counters(&out);
    assert!(sent > 0 && m.overhead > 0.0, "{m:?}");
    assert_eq!(sent, applied, "every URL sent was applied");
    assert_eq!((dropped, kept), (0, 0));
    // Both systems served parts: a manager per system.
    let processes = line(&out, "parts: ");
    assert!(
        processes.contains("over 2 crawling system(s)"),
        "{processes}"
    );
}

#[test]
fn firewall_mode_drops_foreign_links_and_never_overlaps() {
    let dir = tempfile::tempdir().unwrap();
    // One downloader asked for, two systems: each system must still get one
    // (a system without a downloader would never fetch its parts' URLs, and
    // the demo would not end).
    let (out, ok) = finish(start(
        dir.path(),
        &["--mode", "firewall", "--downloaders", "1"],
    ));
    assert!(ok, "the demo failed");
    let grade = graded(&out, &dir.path().join("demo-out"));
    grade.assert_no_duplicate();
    grade.assert_nothing_forbidden();
    assert!(grade.stored_by_several().is_empty(), "a page in two parts");
    assert!(grade.covered() > 0, "{}", grade.figures());
    let m = metrics(&out);
    assert_eq!(m.overlap, 0.0);
    let (sent, applied, dropped, kept) = counters(&out);
    assert_eq!((sent, applied, kept), (0, 0, 0));
    assert!(dropped > 0, "links to other parts' hosts were dropped");
    assert_eq!(m.overhead, 0.0);
}

#[test]
fn crossover_mode_covers_everything_with_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ok) = finish(start(dir.path(), &["--mode", "crossover"]));
    assert!(ok, "the demo failed");
    let grade = graded(&out, &dir.path().join("demo-out"));
    grade.assert_covered();
    grade.assert_nothing_forbidden();
    // Links to other parts' hosts are crawled by the part that found them too:
    // some pages are stored by two parts, each of which fetched them.
    let several = grade.stored_by_several();
    assert!(!several.is_empty(), "no overlap: {}", grade.figures());
    let m = metrics(&out);
    assert!(m.overlap > 0.0 && m.pages > m.unique, "{m:?}");
    assert!((m.coverage - 100.0).abs() < 1e-9, "{m:?}");
    for url in &several {
        let n = grade.fetches.get(*url).map_or(0, Vec::len);
        assert!(n >= 2, "{url} stored by two parts, fetched {n} times");
    }
    // Each part fetches a URL at most once.
    let most = grade.fetches.values().map(Vec::len).max().unwrap_or(0);
    assert!(most <= 4, "a URL fetched {most} times by 4 parts");
    let (sent, applied, dropped, kept) = counters(&out);
    assert_eq!((sent, applied, dropped), (0, 0, 0));
    assert!(kept > 0, "links to other parts' hosts were kept");
}

/// The pid of `name` in the demo's `pids` file, once it is there.
fn pid_of(out: &Path, name: &str) -> Option<i32> {
    let text = std::fs::read_to_string(out.join("pids")).ok()?;
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(n, _)| *n == name)
        .and_then(|(_, p)| p.parse().ok())
}

#[test]
fn a_part_killed_mid_crawl_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("demo-out");
    let demo = start(dir.path(), &["--mode", "exchange"]);
    // Kill part 1 once it has stored pages and sent URLs.
    let progress = out_dir.join("state").join("app-p1").join("progress");
    let (_, kill_us) = kill_when(&out_dir, "app-p1", || pages_stored(&progress) >= 100);
    let (out, _ok) = finish(demo);
    let restarts = line(&out, "restarts: ");
    assert!(restarts.contains("app-p1 1"), "{restarts}");
    let grade = graded(&out, &out_dir);
    grade.assert_covered();
    grade.assert_nothing_forbidden();
    assert!(grade.stored_by_several().is_empty(), "a page in two parts");
    let m = metrics(&out);
    assert_eq!(m.pages, m.unique, "{m:?}");
    assert_eq!(m.overlap, 0.0);
    let dups = assert_refetches_from_the_kill(&grade, &out_dir, "app-p1", kill_us);
    eprintln!("duplicate fetches after the kill: {dups}");
}

/// `pages_stored=` of a part's progress file (0 before it has one).
fn pages_stored(progress: &Path) -> u64 {
    std::fs::read_to_string(progress)
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("pages_stored=")?.parse::<u64>().ok())
        })
        .unwrap_or(0)
}

#[test]
fn hierarchical_partitioning_keeps_a_domain_in_one_part() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ok) = finish(start(
        dir.path(),
        &["--mode", "exchange", "--partitioning", "hierarchical"],
    ));
    assert!(ok, "the demo failed");
    let grade = graded(&out, &dir.path().join("demo-out"));
    grade.assert_exact();
    assert!(grade.stored_by_several().is_empty(), "a page in two parts");
    let m = metrics(&out);
    assert_eq!((m.pages, m.overlap), (m.unique, 0.0), "{m:?}");
    // websim's registered domains are the hosts' last two labels.
    let mut part_of: BTreeMap<String, usize> = Default::default();
    let mut domains_per_part = [0usize; 4];
    for (i, domains) in domains_per_part.iter_mut().enumerate() {
        let repo = dir.path().join("demo-out").join(format!("repository-p{i}"));
        let scan = RepoScan::read(&repo).unwrap();
        for url in &scan.ok_urls {
            let host = tests::requestlog::url_host(url);
            let labels: Vec<&str> = host.rsplitn(3, '.').take(2).collect();
            let domain = format!("{}.{}", labels[1], labels[0]);
            let first = *part_of.entry(domain.clone()).or_insert_with(|| {
                *domains += 1;
                i
            });
            assert_eq!(first, i, "{domain} stored by parts {first} and {i}");
        }
    }
    assert!(
        domains_per_part.iter().all(|n| *n > 0),
        "every part got domains: {domains_per_part:?}"
    );
}

/// Two-level mode on the coverage-problem web: 3 orphans per site.
const TWO_LEVEL: [&str; 4] = ["--mode", "two-level", "--orphans", "3"];

/// The status-200 URLs the parts stored, and websim's manifest (status 200) and
/// `orphans.tsv` URLs.
fn stored_manifest_orphans(out_dir: &Path) -> (HashSet<String>, HashSet<String>, HashSet<String>) {
    let mut stored = HashSet::new();
    for e in std::fs::read_dir(out_dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("repository-p") {
            stored.extend(RepoScan::read(&e.path()).unwrap().ok_urls);
        }
    }
    let rows = |file: &str| -> Vec<Vec<String>> {
        std::fs::read_to_string(out_dir.join("websim").join(file))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split('\t').map(str::to_owned).collect())
            .collect()
    };
    let manifest = rows("manifest.tsv")
        .into_iter()
        .filter(|r| r[1] == "200")
        .map(|r| r[0].clone())
        .collect();
    let orphans = rows("orphans.tsv")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    (stored, manifest, orphans)
}

/// Every site of the coordinator's assignment generations, with the agents it
/// was given to (one each, or it was assigned twice).
fn assignments(out_dir: &Path) -> BTreeMap<String, Vec<u32>> {
    let dir = out_dir.join("spool").join("sites").join("bfs");
    let mut all: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("assign-") && name.ends_with(".tsv")) {
            continue;
        }
        for l in std::fs::read_to_string(e.path()).unwrap().lines().skip(1) {
            // site, agent, and the root its owner starts it from (issue 41).
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "{l}");
            assert!(f[2].contains(&format!("://{}:", f[0])), "{l}");
            all.entry(f[0].to_owned())
                .or_default()
                .push(f[1].parse().unwrap());
        }
    }
    all
}

/// The figures of item 1 of issue 25 with the fix: the whole manifest, by one
/// agent each, nothing fetched twice or against robots.txt, every site once.
fn assert_full_coverage(out: &[String], out_dir: &Path) {
    let grade = graded(out, out_dir);
    grade.assert_exact();
    let expected = grade.expected.len() as u64;
    let m = metrics(out);
    assert_eq!((m.pages, m.unique), (expected, expected), "{m:?}");
    assert_eq!(m.overlap, 0.0, "{m:?}");
    assert!((m.coverage - 100.0).abs() < 1e-9, "{m:?}");
    let (stored, manifest, orphans) = stored_manifest_orphans(out_dir);
    assert!(orphans.len() > 50, "{} orphans", orphans.len());
    assert!(
        manifest.is_subset(&stored),
        "{:?}",
        manifest.difference(&stored)
    );
    let sites = assignments(out_dir);
    assert!(sites.len() >= 40, "{} sites", sites.len());
    assert!(sites.values().all(|a| a.len() == 1), "{sites:?}");
    let two = line(out, "two-level: ");
    assert!(
        two.contains(&format!("sites assigned {} ", sites.len())),
        "{two}"
    );
    let (sent, applied, _, _) = counters(out);
    assert_eq!(sent, applied, "every URL sent was applied");
}

#[test]
fn two_level_with_the_fix_covers_every_page_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ok) = finish(start(dir.path(), &TWO_LEVEL));
    assert!(ok, "the demo failed");
    assert_full_coverage(&out, &dir.path().join("demo-out"));
}

#[test]
fn two_level_without_the_fix_misses_exactly_the_pages_only_other_sites_reach() {
    let dir = tempfile::tempdir().unwrap();
    let args = [&TWO_LEVEL[..], &["--no-fix"]].concat();
    let (out, ok) = finish(start(dir.path(), &args));
    assert!(ok, "the demo failed");
    let grade = graded(&out, &dir.path().join("demo-out"));
    grade.assert_no_duplicate();
    grade.assert_nothing_forbidden();
    let (fetched, expected) = (grade.covered() as u64, grade.expected.len() as u64);
    let (stored, manifest, orphans) = stored_manifest_orphans(&dir.path().join("demo-out"));
    assert!(orphans.len() > 50, "{} orphans", orphans.len());
    let missed: HashSet<String> = manifest.difference(&stored).cloned().collect();
    assert_eq!(
        missed, orphans,
        "short of the manifest by exactly orphans.tsv"
    );
    assert_eq!(expected - fetched, orphans.len() as u64);
    assert_eq!(metrics(&out).overlap, 0.0);
}

/// How often the demo's `restarts:` line says `name` was started again (a part
/// that exits 0 while the demo's summary read lags behind, on a loaded
/// machine, is started again and ends at once: so at least, not exactly).
fn restarts_of(out: &[String], name: &str) -> u32 {
    let l = line(out, "restarts: ");
    l.trim_start_matches("restarts: ")
        .split(", ")
        .filter_map(|e| e.trim().rsplit_once(' '))
        .find(|(n, _)| *n == name)
        .and_then(|(_, k)| k.parse().ok())
        .unwrap_or(0)
}

/// Kills `name` (from the demo's pids file) with SIGKILL once `ready` holds;
/// returns its pid and the moment of the kill (unix µs).
fn kill_when(out_dir: &Path, name: &str, ready: impl Fn() -> bool) -> (i32, u64) {
    let pid = test_support::wait::poll(Duration::from_secs(120), || {
        if ready() { pid_of(out_dir, name) } else { None }
    })
    .unwrap_or_else(|| panic!("{name}: never got going"));
    let at_us = now_us();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap_or_else(|e| panic!("SIGKILL to {name}: {e}"));
    eprintln!("killed {name} (pid {pid})");
    (pid, at_us)
}

fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as u64
}

#[test]
fn two_level_agent_killed_mid_crawl_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("demo-out");
    let demo = start(dir.path(), &TWO_LEVEL);
    let progress = out_dir.join("state").join("app-p1").join("progress");
    let (_, kill_us) = kill_when(&out_dir, "app-p1", || pages_stored(&progress) >= 100);
    let (out, ok) = finish(demo);
    assert!(ok, "the demo failed");
    assert!(
        restarts_of(&out, "app-p1") >= 1,
        "{}",
        line(&out, "restarts: ")
    );
    let grade = graded(&out, &out_dir);
    grade.assert_covered();
    grade.assert_nothing_forbidden();
    let expected = grade.expected.len() as u64;
    let m = metrics(&out);
    assert_eq!(
        (m.pages, m.unique, m.overlap),
        (expected, expected, 0.0),
        "{m:?}"
    );
    let sites = assignments(&out_dir);
    assert!(sites.values().all(|a| a.len() == 1), "{sites:?}");
    let dups = assert_refetches_from_the_kill(&grade, &out_dir, "app-p1", kill_us);
    eprintln!("duplicate fetches after the kill: {dups}");
}

#[test]
fn two_level_coordinator_killed_mid_crawl_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("demo-out");
    let args = [&TWO_LEVEL[..], &["--site-policy", "balanced"]].concat();
    let demo = start(dir.path(), &args);
    // Kill the coordinator once it has published a few generations: sites are
    // still being reported and assigned.
    let sites = out_dir.join("spool").join("sites").join("bfs");
    kill_when(&out_dir, "coordinator", || {
        std::fs::read_dir(&sites).is_ok_and(|d| d.count() >= 3)
    });
    let (out, ok) = finish(demo);
    assert!(ok, "the demo failed");
    assert!(
        restarts_of(&out, "coordinator") >= 1,
        "{}",
        line(&out, "restarts: ")
    );
    assert_full_coverage(&out, &out_dir);
}

/// Every `URL<TAB>rule` line of the `cut.tsv` files a run's parts left in their
/// state folders (`<out>/state/app*/cut.tsv`; a part that cut nothing leaves
/// none).
fn cut_lists(out_dir: &Path) -> std::collections::BTreeSet<String> {
    let mut cut = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(out_dir.join("state")).unwrap().flatten() {
        if !e.file_name().to_string_lossy().starts_with("app") {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(e.path().join("cut.tsv")) {
            cut.extend(
                text.lines()
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_owned),
            );
        }
    }
    cut
}

/// Issue 38, item 3: a crawl split into four parts (exchange mode) and the same
/// crawl in one part, of the same web with the demo's default budgets (an open
/// crawl: BEAST budgets), cut exactly the same URLs (the parts' `cut.tsv` files
/// together against the one part's), both none on this web without traps, and
/// store the same pages (judged on the WARC files). The budgets bind on this web:
/// two hosts that are not seeds have more pages than the base budget (100; 137
/// and 110 pages) and are crawled whole only with the vote of another site
/// linking to them, which in a split crawl may come from another part.
#[test]
fn four_parts_cut_exactly_what_one_part_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let one = start_one_part(dir.path(), &[]);
    let four_dir = dir.path().join("four");
    std::fs::create_dir_all(&four_dir).unwrap();
    let four = start(&four_dir, &["--mode", "exchange"]);
    let one = finish_one_part(one);
    let (four_out, ok) = finish(four);
    assert!(ok, "the four-part demo failed");
    assert_cut_and_stored_as_one_part(&one, &four_out, &four_dir);
}

/// Issue 38: the same for a two-level crawl (the coordinator and four agents),
/// where a URL of a site not assigned yet is parked: once released it passes
/// the host budgets of the agent its site went to, and votes (the linking
/// sites) reach that agent, parked too while the site waits. So the two hosts
/// above the base budget are crawled whole, nothing is cut, and the agents
/// store what the one part stores.
#[test]
fn two_level_cuts_exactly_what_one_part_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let one = start_one_part(dir.path(), &[]);
    let two_dir = dir.path().join("two-level");
    std::fs::create_dir_all(&two_dir).unwrap();
    let two = start(&two_dir, &["--mode", "two-level"]);
    let one = finish_one_part(one);
    let (two_out, ok) = finish(two);
    assert!(ok, "the two-level demo failed");
    assert_cut_and_stored_as_one_part(&one, &two_out, &two_dir);
    assert!(
        assignments(&two_dir.join("demo-out"))
            .values()
            .all(|a| a.len() == 1),
        "a site assigned twice"
    );
}

/// Issue 38: the same web with websim's trap hosts (`--traps`: an endless
/// calendar, a maze, session ids, ... linked from the most popular host), the
/// demo's default budgets: a two-level crawl cuts the traps as one part does.
/// The same hosts have URLs cut; a host one part cuts by its budget (the maze:
/// 200 URLs, one linking site) the two-level crawl cuts by its budget too, at
/// the same number of URLs requested; every other trap host is cut by a
/// detector in both, not by its budget, at no more than half as many requests
/// again as in the one part (a detector's cuts depend on the order pages come
/// in; two-level's own site depth limit, 32, may cut a pager
/// before the sequence detector does); and every other host is crawled whole
/// by both, nothing cut. A parked URL of a trap host passes its agent's budget
/// like any other URL: a release that skipped the budget would request it
/// beyond.
#[test]
fn two_level_cuts_the_traps_as_one_part_does() {
    let dir = tempfile::tempdir().unwrap();
    // One after the other, unlike the tests above: the bound on a trap that a
    // detector stops (below) depends on the order its URLs arrive in, which
    // two crawls sharing the cores would move.
    let (one_dir, _) = finish_one_part(start_one_part(dir.path(), &["--traps"]));
    let two_dir = dir.path().join("two-level");
    std::fs::create_dir_all(&two_dir).unwrap();
    let (two_out, ok) = finish(start(&two_dir, &["--mode", "two-level", "--traps"]));
    assert!(ok, "the two-level demo failed");
    let two_out_dir = two_dir.join("demo-out");
    let one = Grade::demo(&one_dir.join("demo-out"));
    let two = Grade::demo(&two_out_dir);
    let cut_rules = |out: &Path| -> BTreeMap<String, std::collections::BTreeSet<String>> {
        let mut by_host: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
        for l in cut_lists(out) {
            let (url, rule) = l.split_once('\t').unwrap_or((&l, ""));
            by_host
                .entry(host_of(url))
                .or_default()
                .insert(rule.to_owned());
        }
        by_host
    };
    let requests = |g: &Grade| -> BTreeMap<String, usize> {
        let mut by_host = BTreeMap::new();
        for url in g.fetches.keys() {
            *by_host.entry(host_of(url)).or_default() += 1;
        }
        by_host
    };
    let (one_cut, two_cut) = (
        cut_rules(&one_dir.join("demo-out")),
        cut_rules(&two_out_dir),
    );
    let (one_req, two_req) = (requests(&one), requests(&two));
    for (host, rules) in &one_cut {
        eprintln!(
            "{host}: one part {rules:?}, {} URLs requested; two-level {:?}, {} URLs requested",
            one_req.get(host).unwrap_or(&0),
            two_cut.get(host),
            two_req.get(host).unwrap_or(&0)
        );
    }
    eprintln!("one part: {}\ntwo-level: {}", one.figures(), two.figures());
    assert!(
        !one_cut.is_empty(),
        "no trap was cut: the test tests nothing"
    );
    assert_eq!(
        one_cut.keys().collect::<Vec<_>>(),
        two_cut.keys().collect::<Vec<_>>(),
        "the same hosts cut"
    );
    let by_budget = |rules: &std::collections::BTreeSet<String>| {
        rules
            .iter()
            .any(|r| r == "host_budget" || r == "host_ceiling")
    };
    assert!(
        one_cut.values().any(by_budget),
        "no host budget bound: the test does not test the budgets"
    );
    for (host, rules) in &one_cut {
        let (o, t) = (
            *one_req.get(host).unwrap_or(&0),
            *two_req.get(host).unwrap_or(&0),
        );
        if by_budget(rules) {
            assert!(by_budget(&two_cut[host]), "{host}: not cut by its budget");
            assert_eq!(t, o, "{host}: URLs requested by two-level and by one part");
        } else {
            // A detector stops a trap after a number of its URLs that depends on
            // the order they arrive in and on how far the parts' readers lag
            // behind their downloaders (four readers share the two cores here):
            // the session-id trap cost 55-60 URLs in one part and 60-65 in
            // two-level on an idle machine, and CI's run cut 108 of its links in
            // two-level against 68 in one part, beyond a quarter more. What
            // matters is that a detector stopped it in both: a trap none stopped
            // runs on to its host budget (200), cut by that rule, far past this
            // bound.
            assert!(
                !by_budget(&two_cut[host]),
                "{host}: two-level cut it by its budget ({:?}), one part by a detector",
                two_cut[host]
            );
            assert!(
                t <= o + o / 2,
                "{host}: {t} URLs requested by two-level, {o} by one part"
            );
        }
    }
    // Every page of the hosts nothing was cut of: stored by both.
    let whole = |g: &Grade| -> std::collections::BTreeSet<String> {
        g.expected
            .iter()
            .filter(|u| !one_cut.contains_key(&host_of(u)))
            .filter(|u| g.stored.contains(*u))
            .map(|u| without_port(u))
            .collect()
    };
    let expected: std::collections::BTreeSet<String> = one
        .expected
        .iter()
        .filter(|u| !one_cut.contains_key(&host_of(u)))
        .map(|u| without_port(u))
        .collect();
    assert_eq!(
        whole(&one),
        expected,
        "one part: a host without traps not crawled whole"
    );
    assert_eq!(
        whole(&two),
        expected,
        "two-level: a host without traps not crawled whole"
    );
    two.assert_nothing_forbidden();
    assert!(
        assignments(&two_out_dir).values().all(|a| a.len() == 1),
        "a site assigned twice"
    );
    let two_line = line(&two_out, "two-level: ");
    eprintln!("{two_line}");
}

/// The host of `url`, without its port.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    authority
        .rsplit_once(':')
        .filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
        .map_or(authority, |(h, _)| h)
        .to_owned()
}

/// Starts the web above (with `extra` demo flags) crawled in one part (2
/// downloaders) under `dir/one`: its folder and the running demo, for
/// [`finish_one_part`].
///
/// Two tests start it beside the split crawl they compare it with, not before:
/// a demo of this web is bound by politeness and its pipeline's round trips, not
/// by the cores (some 8 CPU-s in a demo of 27 s), so two side by side take the time
/// of one (27.4 s against 27.3 s for one alone), where one after the other took
/// twice.
/// Those two judge what was fetched and stored, never when (each demo has its
/// own websim, ports and folders), so sharing the cores changes no verdict; the
/// traps test, whose detector bound depends on arrival order, runs them one after
/// the other.
fn start_one_part(dir: &Path, extra: &[&str]) -> (std::path::PathBuf, ProcessGuard) {
    let one_dir = dir.join("one");
    std::fs::create_dir_all(&one_dir).unwrap();
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("demo")
        .args(WEB)
        .args(extra)
        .args(["--downloaders", "2", "--out"])
        .arg(one_dir.join("demo-out"));
    cmd.env("RUST_LOG", "info");
    let demo = ProcessGuard::spawn("demo-one", cmd, &one_dir).unwrap();
    (one_dir, demo)
}

/// Waits for the one-part demo of [`start_one_part`]: its folder and stdout.
fn finish_one_part(
    started: (std::path::PathBuf, ProcessGuard),
) -> (std::path::PathBuf, Vec<String>) {
    let (one_dir, demo) = started;
    let (one_out, ok) = finish(demo);
    assert!(ok, "the one-part demo failed");
    (one_dir, one_out)
}

/// The split crawl in `split_dir` (stdout `split_out`) cut exactly what the
/// one-part crawl `one` cut (none: a web without traps), both crawled the web
/// exactly, and they stored the same pages.
fn assert_cut_and_stored_as_one_part(
    one: &(std::path::PathBuf, Vec<String>),
    split_out: &[String],
    split_dir: &Path,
) {
    let (one_dir, one_out) = one;
    let one = Grade::demo(&one_dir.join("demo-out"));
    let split = graded(split_out, &split_dir.join("demo-out"));
    // `URL<TAB>rule` lines, the URL without the port of its websim.
    let cuts = |dir: &Path| -> std::collections::BTreeSet<String> {
        cut_lists(&dir.join("demo-out"))
            .iter()
            .map(|l| without_port(l))
            .collect()
    };
    let (one_cut, split_cut) = (cuts(one_dir), cuts(split_dir));
    eprintln!(
        "one part: {} URLs cut, {}\nsplit: {} URLs cut, {}",
        one_cut.len(),
        one.figures(),
        split_cut.len(),
        split.figures()
    );
    assert_eq!(
        one_cut.difference(&split_cut).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "cut by one part only"
    );
    assert_eq!(
        split_cut.difference(&one_cut).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "cut by the split crawl only"
    );
    assert!(one_cut.is_empty(), "a web without traps: nothing to cut");
    // Each websim serves the same web on ports of its own.
    let portless = |urls: &mut dyn Iterator<Item = &String>| -> std::collections::BTreeSet<String> {
        urls.map(|u| without_port(u)).collect()
    };
    assert_eq!(
        portless(&mut one.expected.iter()),
        portless(&mut split.expected.iter()),
        "the same web"
    );
    one.assert_exact();
    split.assert_exact();
    let summary = line(one_out, "app: ");
    assert!(summary.contains(": Complete:"), "{summary}");
    assert_eq!(
        portless(&mut one.stored.iter()),
        portless(&mut split.stored.iter()),
        "the same pages stored"
    );
}

/// `url` without the port of its authority (`http://a.test:8080/x` ->
/// `http://a.test/x`).
fn without_port(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let host = authority
        .rsplit_once(':')
        .filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
        .map_or(authority, |(h, _)| h);
    format!("{scheme}://{host}{tail}")
}
