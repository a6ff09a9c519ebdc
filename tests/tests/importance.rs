//! The importance-ordered crawl (issue 42, Done-when item 1; `app.order`,
//! DESIGN.md section 7, "Importance order"), measured as Cho and Garcia-Molina
//! measure quality: the share of a reference crawl's top 1 % of pages by in-links
//! (`polycrawl quality --top N`, N = 1 % of the reference's pages) a crawl holds
//! after 20 % of its own downloads.
//!
//! One websim for every crawl (so their URLs are the same web): a complete
//! breadth-first crawl (the reference, and the breadth-first curve), then an
//! importance-ordered one: it must hold more of the top 1 % at 20 %. Then the same
//! web split into 4 parts in exchange mode, importance-ordered, with and without
//! the exchange of back-link counts (`exchange_links`): with it, the split crawl's
//! quality at 20 % is at least that without it. Every crawl stores the whole web
//! (the pool holds URLs, it never loses one). The figures are printed.
//!
//! The harness builds the `polycrawl` binary first if needed (see `tests::bin`).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tests::bin;
use tests::process::ProcessGuard;
use tests::repository::RepoScan;
use tests::system::Knobs;
use tests::websim::Websim;

/// URLs the crawling system holds at most in importance order: small against the
/// web, so the ranking decides most of the order.
const WINDOW: u64 = 24;

/// Writes the config for `ws` with `app` settings added; its path.
fn config(ws: &Websim, dir: &Path, name: &str, app: &str) -> PathBuf {
    // 20 ms per host: the biggest host (a third of the web) takes seconds, not
    // minutes; the order is the application's, whatever the pace.
    let knobs = Knobs {
        interval_ms: 20,
        ip_min_interval_ms: 10,
        ..Knobs::default()
    };
    let text = knobs
        .crawl_text(ws)
        .replacen("app: (", &format!("app: ({app}"), 1);
    let path = dir.join(format!("{name}.ron"));
    std::fs::write(&path, text).expect("writing the config");
    path
}

/// Runs `polycrawl crawl` of `ws` into `dir/<name>` to its end; its stdout.
fn crawl(ws: &Websim, dir: &Path, name: &str, app: &str, extra: &[&str]) -> String {
    let config = config(ws, dir, name, app);
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("crawl")
        .arg("--seeds")
        .arg(ws.path("seeds"))
        .arg("--out")
        .arg(dir.join(name))
        .arg("--config")
        .arg(&config)
        .args(extra)
        .env("RUST_LOG", "warn");
    let mut crawl = ProcessGuard::spawn(name, cmd, dir).expect("starting the crawl");
    let status = crawl
        .wait_exit(Duration::from_secs(300))
        .unwrap()
        .unwrap_or_else(|| panic!("{}", crawl.report("crawl still running after 300 s")));
    assert!(status.success(), "{}", crawl.report("crawl failed"));
    let stdout = crawl.stdout().join("\n");
    println!("{name}:\n{stdout}");
    stdout
}

/// `polycrawl quality` of `repos` against `reference` with the top `top`; the
/// curve's text.
fn quality(reference: &Path, top: usize, repos: &[PathBuf]) -> String {
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("quality")
        .arg("--reference")
        .arg(reference)
        .arg("--top")
        .arg(top.to_string())
        .args(repos)
        .env("RUST_LOG", "warn");
    let run = cmd.output().expect("running polycrawl quality");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "quality: {stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    stdout
}

/// The share held at `percent` % of the downloads in a quality curve.
fn share_at(curve: &str, percent: u32) -> f64 {
    let label = format!("{percent}%");
    let line = curve
        .lines()
        .find(|l| l.split_whitespace().next() == Some(label.as_str()))
        .unwrap_or_else(|| panic!("no {label} line in {curve}"));
    line.split_whitespace()
        .last()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

/// The `downloads=` figure of a quality curve's first line.
fn downloads(curve: &str) -> usize {
    curve
        .split_whitespace()
        .find_map(|w| w.strip_prefix("downloads="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("downloads= in {curve}"))
}

/// The URLs stored with a 200 in `repos`, each once.
fn stored(repos: &[PathBuf]) -> HashSet<String> {
    let mut all = HashSet::new();
    for repo in repos {
        let scan = RepoScan::read(repo).unwrap();
        all.extend(scan.ok_urls.iter().cloned());
    }
    all
}

fn repo(dir: &Path, name: &str) -> PathBuf {
    dir.join(name).join("repository")
}

fn part_repos(dir: &Path, name: &str) -> Vec<PathBuf> {
    (0..4)
        .map(|i| dir.join(name).join(format!("repository-p{i}")))
        .collect()
}

#[test]
fn importance_order_holds_more_of_the_top_pages_early() {
    // --plain: no crawl-delay, slow or dead host to wait for; --own-addresses:
    // politeness per host only; --hubs: in-links skewed to pages deep in their
    // host's tree. The default seeds are the most popular hosts' home pages.
    let ws = Websim::start(&[
        "--plain",
        "--own-addresses",
        "--hubs",
        "--hosts",
        "20",
        "--pages",
        "2000",
        "--seed",
        "7",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let one = ["--parts", "1"];
    crawl(&ws, d, "bfs", "", &one);
    let reference = repo(d, "bfs");
    let all = quality(&reference, 1, std::slice::from_ref(&reference));
    let top = (downloads(&all) / 100).max(1);
    let bfs = quality(&reference, top, std::slice::from_ref(&reference));

    let importance = format!("order: importance, importance_window: {WINDOW}, ");
    crawl(&ws, d, "imp", &importance, &one);
    let imp_repo = repo(d, "imp");
    let imp = quality(&reference, top, std::slice::from_ref(&imp_repo));
    println!("breadth-first:\n{bfs}importance:\n{imp}");
    let want = stored(std::slice::from_ref(&reference));
    assert_eq!(
        stored(std::slice::from_ref(&imp_repo)),
        want,
        "the importance-ordered crawl stores what the breadth-first one does"
    );
    let (b, i) = (share_at(&bfs, 20), share_at(&imp, 20));
    println!(
        "top {top} (1 %) held after 20 % of the downloads: breadth-first {b:.3}, importance {i:.3}"
    );
    assert!(
        i > b,
        "importance {i} is not above breadth-first {b}\n{bfs}\n{imp}"
    );

    // Split in 4, exchange mode: with and without the exchange of link counts.
    let split = ["--parts", "4", "--mode", "exchange"];
    crawl(&ws, d, "split-links", &importance, &split);
    let without = format!("{importance}exchange_links: false, ");
    crawl(&ws, d, "split-nolinks", &without, &split);
    let with_repos = part_repos(d, "split-links");
    let without_repos = part_repos(d, "split-nolinks");
    assert_eq!(stored(&with_repos), want, "split crawl with counts");
    assert_eq!(stored(&without_repos), want, "split crawl without counts");
    let with_q = quality(&reference, top, &with_repos);
    let without_q = quality(&reference, top, &without_repos);
    println!("split, link counts exchanged:\n{with_q}split, not exchanged:\n{without_q}");
    let (w, wo) = (share_at(&with_q, 20), share_at(&without_q, 20));
    println!(
        "top {top} held after 20 %: one part {i:.3}; 4 parts with counts exchanged {w:.3}, without {wo:.3}"
    );
    assert!(
        w >= wo,
        "exchanging link counts lowered the split crawl's quality: {w} < {wo}"
    );
}
