//! Issue 25's disk web: a stored crawl served as the web (`polycrawl websim
//! --from-repository REPO`). `polycrawl crawl` fetches a small generated web into
//! a repository; websim stops and serves that repository instead; a second
//! `polycrawl crawl`, with default flags and the disk web's seeds, DNS and CA,
//! fetches it again. Then:
//!
//! - the disk web's manifest holds exactly the first crawl's 200s (which are the
//!   generated web's), and its seeds are the generated web's seeds; a second disk
//!   web of the same crawl fails with an error naming the busy port;
//! - the second crawl stores exactly the manifest's 200s, each once (0 duplicates),
//!   asking websim for no URL twice;
//! - every stored body equals the first crawl's, byte for byte, and so does every
//!   stored redirect's `Location`;
//! - with `--pace-per-client`, the disk web gives a client address its rate.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::BufReader;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use spool::warc::{Record, RecordType, WarcReader};
use tests::bin;
use tests::http::pipelined_bytes;
use tests::process::ProcessGuard;
use tests::repository::{RepoScan, http_status, warc_files};
use tests::requestlog::url_counts;
use tests::system::Knobs;
use tests::websim::Websim;

/// The test's config for `ws`: [`Knobs::crawl_config`].
fn config(ws: &Websim, dir: &Path, name: &str) -> PathBuf {
    Knobs::crawl_config(ws, dir, name)
}

/// `polycrawl crawl` of `ws`'s seeds into `dir/out`; returns the repository.
fn crawl(ws: &Websim, dir: &Path, out: &str) -> PathBuf {
    let config = config(ws, dir, &format!("{out}.ron"));
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("crawl")
        .arg("--seeds")
        .arg(ws.path("seeds"))
        .arg("--out")
        .arg(dir.join(out))
        .arg("--config")
        .arg(&config)
        .env("NO_COLOR", "1");
    let mut p = ProcessGuard::spawn(out, cmd, dir).unwrap();
    let status = p.wait_exit(Duration::from_secs(240)).unwrap();
    let Some(status) = status else {
        panic!("{}", p.report("not done in 240 s"));
    };
    assert!(status.success(), "{}", p.report("failed"));
    dir.join(out).join("repository")
}

/// A stored response: status, `Location`, body.
type Stored = (u16, Option<String>, Vec<u8>);

/// Every stored response of a repository, by URL, in the order stored.
fn responses(repo: &Path) -> HashMap<String, Vec<Stored>> {
    let mut all: HashMap<String, Vec<Stored>> = HashMap::new();
    for path in warc_files(repo).unwrap() {
        let mut reader = WarcReader::new(BufReader::new(File::open(&path).unwrap()));
        let mut rec = Record::default();
        while reader.read_into(&mut rec).unwrap() {
            if rec.headers.record_type() != Some(RecordType::Response) {
                continue;
            }
            let uri = rec.headers.target_uri().unwrap().to_owned();
            let split = rec
                .block
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(rec.block.len(), |i| i + 4);
            let head = String::from_utf8_lossy(&rec.block[..split]).into_owned();
            let location = head
                .lines()
                .find_map(|l| {
                    l.split_once(':')
                        .filter(|(n, _)| n.eq_ignore_ascii_case("location"))
                })
                .map(|(_, v)| v.trim().to_owned());
            let status = http_status(&rec.block).unwrap_or(0);
            all.entry(uri)
                .or_default()
                .push((status, location, rec.block[split..].to_vec()));
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_crawl_served_as_the_web_is_crawled_again_to_the_same_pages() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // The first crawl, of a generated web.
    let ws = Websim::start(&[
        "--hosts",
        "40",
        "--pages",
        "800",
        "--seed",
        "5",
        "--slow-ms",
        "50",
    ]);
    let generated: BTreeSet<String> = ws
        .manifest()
        .into_iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url)
        .collect();
    let generated_seeds: BTreeSet<String> = ws.seeds().into_iter().collect();
    let repo = crawl(&ws, d, "first");
    drop(ws);
    let first = RepoScan::read(&repo).unwrap();
    assert_eq!(
        first.ok_urls.iter().cloned().collect::<BTreeSet<_>>(),
        generated
    );

    // The same crawl, served from the repository (on the ports its URLs carry).
    let disk = Websim::start(&["--from-repository", repo.to_str().unwrap()]);
    let manifest: BTreeSet<String> = disk
        .manifest()
        .into_iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url)
        .collect();
    assert_eq!(
        manifest, generated,
        "the disk web's manifest is the stored 200s"
    );
    let seeds: BTreeSet<String> = disk.seeds().into_iter().collect();
    assert_eq!(seeds, generated_seeds, "the stored crawl's seeds");

    // A second disk web of the same crawl finds its ports taken: a clear error.
    let mut cmd = Command::new(bin::polycrawl());
    cmd.args(["websim", "--from-repository"])
        .arg(&repo)
        .arg("--out")
        .arg(d.join("busy"));
    let mut busy = ProcessGuard::spawn("websim-busy", cmd, d).unwrap();
    let status = busy.wait_exit(Duration::from_secs(30)).unwrap();
    let status = status.unwrap_or_else(|| panic!("{}", busy.report("kept running")));
    assert!(!status.success());
    // The http listeners are bound first.
    let port = format!("port {}", disk.http_port);
    assert!(
        busy.stderr().contains("must be free") && busy.stderr().contains(&port),
        "{}",
        busy.report("no clear error")
    );

    let second_repo = crawl(&disk, d, "second");
    let second = RepoScan::read(&second_repo).unwrap();
    let stored: BTreeSet<String> = second.ok_urls.iter().cloned().collect();
    assert_eq!(
        stored, manifest,
        "the second crawl stores exactly the manifest"
    );
    assert_eq!(
        second.by_status.get(&200).copied(),
        Some(manifest.len()),
        "0 duplicates: every 200 stored once"
    );
    let log = disk.log();
    let twice: Vec<_> = url_counts(&log)
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .collect();
    assert!(twice.is_empty(), "URLs asked for twice: {twice:?}");
    assert!(log.iter().all(|l| l.status != 421 && l.status != 500));

    // Bodies as stored, redirects to where they went.
    let (before, after) = (responses(&repo), responses(&second_repo));
    let mut compared = 0;
    for (url, got) in &after {
        let [(status, location, body)] = &got[..] else {
            panic!("{url} stored {} times", got.len());
        };
        if *status == 404 && !before.contains_key(url) {
            // Requested by the second crawl only (robots-excluded in the first,
            // whose robots.txt the repository does not hold): websim's 404.
            continue;
        }
        let was = &before[url];
        let (s0, l0, b0) = was.last().unwrap();
        assert_eq!((status, location), (s0, l0), "{url}");
        assert!(body == b0, "{url}: the body differs from the stored one");
        compared += 1;
    }
    assert!(compared >= manifest.len(), "{compared} compared");

    // Paced: one client address gets about the rate from the disk web too.
    drop(disk);
    let paced = Websim::start(&[
        "--from-repository",
        repo.to_str().unwrap(),
        "--pace-per-client",
        "100000",
    ]);
    let h = paced.host_where("an http host with a stored home page", |h| {
        h.scheme == "http" && h.pages > 0
    });
    let authority = format!("{}:{}", h.name, h.port);
    let window = Duration::from_secs(2);
    let got = pipelined_bytes(
        Ipv4Addr::new(127, 0, 0, 2),
        h.socket(),
        &authority,
        2,
        window,
    )
    .await;
    let share = got.iter().sum::<u64>() as f64 / (100_000.0 * window.as_secs_f64());
    // Above: the rate plus the burst and one piece (33 kB of 200).
    assert!(
        (0.85..=1.17).contains(&share),
        "{got:?}: {share:.3} of the rate"
    );
}

/// `polycrawl demo --disk-web REPO --mode two-level`: a stored crawl served as the
/// web (paced per client address) and crawled by two agents and a coordinator, the
/// run issue 25's scaling benchmark repeats on more agents and machines
/// (`ops/bench-two-level.sh`). The demo checks itself against the disk web's
/// manifest and exits 0 only if every stored page was fetched once and nothing
/// robots.txt forbids; here also its summary's two-level figures, and coverage
/// and duplicates judged on the agents' WARC files and websim's log
/// (`tests::grade`), not on the demo's lines alone.
#[test]
fn demo_crawls_a_disk_web_with_two_agents_and_a_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ws = Websim::start(&[
        "--hosts",
        "30",
        "--pages",
        "600",
        "--seed",
        "8",
        "--plain",
        "--all-seeds",
    ]);
    let pages = ws.manifest().iter().filter(|r| r.status == 200).count();
    let repo = crawl(&ws, d, "stored");
    drop(ws);
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("demo")
        .arg("--out")
        .arg(d.join("demo"))
        .arg("--disk-web")
        .arg(&repo)
        .args(["--pace-per-client", "2000000", "--interval-ms", "20"])
        .args(["--parts", "2", "--mode", "two-level"]);
    let mut demo = ProcessGuard::spawn("demo", cmd, d).unwrap();
    let status = demo.wait_exit(Duration::from_secs(240)).unwrap();
    let status = status.unwrap_or_else(|| panic!("{}", demo.report("still running")));
    assert!(status.success(), "{}", demo.report("the demo failed"));
    let out = demo.stdout().join("\n");
    assert!(
        out.contains(&format!("coverage: {pages}/{pages} (100.0 %)")),
        "{out}"
    );
    assert!(out.contains("duplicate fetches: 0"), "{out}");
    // The same, judged on the agents' WARC files and websim's log.
    let grade = tests::grade::Grade::demo(&d.join("demo"));
    eprintln!("{}", grade.figures());
    grade.assert_exact();
    assert_eq!(grade.expected.len(), pages);
    assert_eq!(grade.pages(), pages, "each page stored by one agent");
    let two_level = out
        .lines()
        .find(|l| l.starts_with("two-level:"))
        .unwrap_or_else(|| panic!("no two-level line in\n{out}"));
    assert!(two_level.contains("sites assigned"), "{two_level}");
}
