//! `polycrawl assign` end to end (issue 10): `polycrawl crawl` crawls a small websim
//! with host communities, then `polycrawl assign` reads its repository, partitions
//! the host graph with METIS and writes the assignment file. Checked: the file
//! parses, names every host with a stored page, respects the balance, cuts at most
//! half the URLs the hash cuts (on the same evaluator), two runs give the same bytes,
//! `--evaluate` gives the same figures back, and bad requests fail with a message.
//!
//! Issue 25, Cho and Garcia-Molina's remaining mechanisms, on a web with host
//! communities and one websim for both crawls (so the URLs of the first are the
//! URLs of the second): a complete crawl, then `assign --table` (its rows
//! consistent: URL-hash sends more than site-hash, METIS less, replication never
//! more than without it, METIS's page-level row equal to `assign`'s own figure),
//! then a 4-part exchange crawl given the METIS file and the 100 most-linked URLs:
//! no part sends a replicated URL (none is received, links to them were skipped),
//! every manifest page stored once and fetched once; `polycrawl quality` ends at
//! 1.0 for both crawls.
//!
//! The harness builds the `polycrawl` binary first if needed (see `tests::bin`).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use spool::formats::AssignmentTable;
use tests::bin;
use tests::process::ProcessGuard;
use tests::repository::RepoScan;
use tests::system::Knobs;
use tests::websim::Websim;

/// `polycrawl crawl`'s config for `ws`: the system tests' knobs, every domain in
/// scope.
fn crawl_config(ws: &Websim, dir: &Path) -> std::path::PathBuf {
    let text = Knobs::default().crawl_text(ws);
    let path = dir.join("config.ron");
    std::fs::write(&path, text).expect("writing the config");
    path
}

/// Runs `polycrawl crawl` of `ws` into `dir/out` with `extra` flags, to its end;
/// its stdout.
fn crawl(ws: &Websim, dir: &Path, out: &str, extra: &[&str]) -> String {
    let config = crawl_config(ws, dir);
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("crawl")
        .arg("--seeds")
        .arg(ws.path("seeds"))
        .arg("--out")
        .arg(dir.join(out))
        .arg("--config")
        .arg(&config)
        .args(extra)
        .env("RUST_LOG", "warn");
    let mut crawl = ProcessGuard::spawn("crawl", cmd, dir).expect("starting the crawl");
    let status = crawl
        .wait_exit(Duration::from_secs(300))
        .unwrap()
        .unwrap_or_else(|| panic!("{}", crawl.report("crawl still running after 300 s")));
    assert!(status.success(), "{}", crawl.report("crawl failed"));
    let stdout = crawl.stdout().join("\n");
    println!("{stdout}");
    stdout
}

/// Runs `polycrawl` with `args`; its stdout, or a panic with its stderr.
fn polycrawl_ok(args: &[&str]) -> String {
    let run = polycrawl(args);
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "polycrawl {args:?}: {stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    println!("{stdout}");
    stdout
}

/// The last share of a `polycrawl quality` curve.
fn final_share(curve: &str) -> f64 {
    let last = curve
        .lines()
        .find(|l| l.trim_start().starts_with("100%"))
        .unwrap_or_else(|| panic!("no 100% line in {curve}"));
    last.split_whitespace()
        .last()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{last}"))
}

/// The `key N` figure summed over the part lines of `polycrawl crawl`'s output
/// (`key` as the app's summary writes it before the number).
fn part_sum(stdout: &str, key: &str) -> u64 {
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("part ") && l.contains(" app "))
        .collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    lines
        .iter()
        .map(|l| {
            let at = l
                .find(&format!(", {key} "))
                .unwrap_or_else(|| panic!("{key} in {l}"));
            l[at + key.len() + 3..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("{key} in {l}"))
        })
        .sum()
}

fn polycrawl(args: &[&str]) -> Output {
    Command::new(bin::polycrawl())
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("running polycrawl")
}

/// The `key=N` number after `label` in the summary line.
fn figure(line: &str, label: &str, key: &str) -> f64 {
    let rest = &line[line
        .find(label)
        .unwrap_or_else(|| panic!("{label} in {line}"))..];
    let word = rest
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key}= after {label} in {line}"));
    word.parse().unwrap_or_else(|_| panic!("{key}={word}"))
}

/// `scheme://HOST[:port]/...` → `HOST`, as assignment files name hosts (websim's
/// hosts are names, never IPv6 literals).
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .split(':')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}

#[test]
fn assignment_from_a_crawl_covers_its_hosts_and_beats_the_hash() {
    // --plain: no crawl-delay, slow or dead host to wait for.
    let ws = Websim::start(&[
        "--plain",
        "--hosts",
        "48",
        "--pages",
        "1500",
        "--size-skew",
        "0.3",
        "--communities",
        "4",
        "--seed",
        "3",
    ]);
    let dir = tempfile::tempdir().unwrap();
    crawl(&ws, dir.path(), "out", &[]);
    let repo = dir.path().join("out").join("repository");
    let repo = repo.to_str().unwrap();
    let file = dir.path().join("assign-4.tsv");
    let file_s = file.to_str().unwrap();
    let run = polycrawl(&["assign", "--repo", repo, "--parts", "4", "--out", file_s]);
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    println!("{stdout}");
    let line = stdout.lines().find(|l| l.starts_with("assign ")).unwrap();

    let bytes = std::fs::read(&file).unwrap();
    let table = AssignmentTable::read(&bytes[..]).expect("the file parses");
    assert_eq!(table.parts, 4);
    let stored: BTreeSet<String> = ws
        .manifest()
        .into_iter()
        .filter(|r| r.status == 200)
        .map(|r| host_of(&r.url))
        .collect();
    for host in &stored {
        assert!(table.hosts.contains_key(host), "{host} not in the file");
    }
    let used: BTreeSet<u32> = table.hosts.values().copied().collect();
    assert_eq!(used.len(), 4, "every part gets hosts");

    let hash_cut = figure(line, "hash:", "cut_urls");
    let part_cut = figure(line, "partition:", "cut_urls");
    assert!(
        figure(line, "partition:", "balance") <= 1.1 + 1e-3,
        "{line}"
    );
    assert!(figure(line, "", "pages") >= stored.len() as f64, "{line}");
    assert!(
        part_cut * 2.0 <= hash_cut,
        "the partition cuts {part_cut} URLs, the hash {hash_cut}: {line}"
    );

    // Deterministic, and the evaluator reads the file back to the same figures.
    let again = dir.path().join("assign-4b.tsv");
    let run = polycrawl(&[
        "assign",
        "--repo",
        repo,
        "--parts",
        "4",
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(run.status.success());
    assert_eq!(std::fs::read(&again).unwrap(), bytes);
    let run = polycrawl(&["assign", "--repo", repo, "--evaluate", file_s]);
    let eval = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "{eval}");
    assert_eq!(figure(&eval, "file:", "cut_urls"), part_cut, "{eval}");
    assert_eq!(figure(&eval, "hash:", "cut_urls"), hash_cut, "{eval}");

    // Bad requests: a clear error, no file.
    let too_many = dir.path().join("too-many.tsv");
    let run = polycrawl(&[
        "assign",
        "--repo",
        repo,
        "--parts",
        "100000",
        "--out",
        too_many.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && err.contains("hosts in the crawl"),
        "{err}"
    );
    assert!(!too_many.exists());
    let empty = dir.path().join("not-a-repo");
    std::fs::create_dir(&empty).unwrap();
    let run = polycrawl(&[
        "assign",
        "--repo",
        empty.to_str().unwrap(),
        "--parts",
        "2",
        "--out",
        too_many.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && err.contains("not a repository"),
        "{err}"
    );
}

/// One row of `assign --table`: scheme, K, replicated, cut URLs, per page, balance.
type Row = (String, u32, u64, u64, f64, f64);

#[test]
fn replication_sends_no_top_url_and_the_table_is_consistent() {
    let ws = Websim::start(&[
        "--plain",
        "--hosts",
        "48",
        "--pages",
        "1500",
        "--size-skew",
        "0.3",
        "--communities",
        "4",
        "--seed",
        "4",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let manifest: HashSet<String> = ws
        .manifest()
        .into_iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url)
        .collect();
    // The previous crawl: complete, unsplit.
    crawl(&ws, dir.path(), "complete", &[]);
    let repo = dir.path().join("complete").join("repository");
    let scan = RepoScan::read(&repo).unwrap();
    assert_eq!(scan.ok_urls, manifest, "the reference crawl is complete");
    let repo_s = repo.to_str().unwrap();

    // The table: every scheme at K = 2, 4, 8, consistent with itself.
    let table = polycrawl_ok(&["assign", "--repo", repo_s, "--table"]);
    let rows: Vec<Row> = table
        .lines()
        .skip(2)
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(w.len(), 6, "{l}");
            let n = |i: usize| w[i].parse::<f64>().unwrap_or_else(|_| panic!("{l}"));
            (
                w[0].to_owned(),
                n(1) as u32,
                n(2) as u64,
                n(3) as u64,
                n(4),
                n(5),
            )
        })
        .collect();
    assert_eq!(rows.len(), 3 * 8, "{table}");
    let header = table.lines().next().unwrap();
    let pages = figure(header, "", "pages");
    assert!(pages >= manifest.len() as f64, "{table}");
    let row = |k: u32, scheme: &str| -> Row {
        rows.iter()
            .find(|r| r.1 == k && r.0 == scheme)
            .unwrap_or_else(|| panic!("{scheme} K={k} in {table}"))
            .clone()
    };
    for k in [2, 4, 8] {
        let (url, site, metis) = (row(k, "url-hash"), row(k, "site-hash"), row(k, "metis"));
        let (top100, top1000) = (row(k, "metis+top100"), row(k, "metis+top1000"));
        assert!(
            url.3 > site.3,
            "URL-hash sends more than site-hash, K={k}\n{table}"
        );
        assert!(
            metis.3 < site.3,
            "METIS sends less than site-hash, K={k}\n{table}"
        );
        assert!(
            top1000.3 <= top100.3 && top100.3 < metis.3,
            "replication sends less, K={k}\n{table}"
        );
        assert_eq!(top100.2, 100, "{table}");
        let site_top100 = row(k, "site-hash+top100");
        assert!(
            site_top100.3 < site.3 && site_top100.5 == site.5,
            "replication under site-hash sends less, moves no page, K={k}\n{table}"
        );
        // Replication moves no page.
        assert_eq!((top100.5, top1000.5), (metis.5, metis.5), "{table}");
        for r in rows.iter().filter(|r| r.1 == k) {
            assert!(r.5 >= 1.0, "{r:?}");
            assert!((r.4 - r.3 as f64 / pages).abs() < 1e-3, "{r:?}");
        }
    }

    // The files for the next crawl: METIS at K = 4 and the 100 most-linked URLs.
    let assign = dir.path().join("assign-4.tsv");
    let top = dir.path().join("top-100.tsv");
    let made = polycrawl_ok(&[
        "assign",
        "--repo",
        repo_s,
        "--parts",
        "4",
        "--out",
        assign.to_str().unwrap(),
        "--replicate",
        "100",
        "--replicated",
        top.to_str().unwrap(),
    ]);
    let line = made.lines().find(|l| l.starts_with("assign ")).unwrap();
    assert_eq!(
        figure(line, "partition:", "cut_urls") as u64,
        row(4, "metis").3,
        "the page-level row is assign's host-level figure\n{made}\n{table}"
    );
    let list = std::fs::read_to_string(&top).unwrap();
    let listed: Vec<(String, u64)> = list
        .lines()
        .skip(1)
        .map(|l| {
            let (url, n) = l.split_once('\t').unwrap();
            (url.to_owned(), n.parse().unwrap())
        })
        .collect();
    assert_eq!(listed.len(), 100, "{list}");
    assert!(
        listed.windows(2).all(|w| w[0].1 >= w[1].1),
        "most linked first"
    );

    // The next crawl of the same web, split in 4, exchange mode, with both files.
    let since_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let out = crawl(
        &ws,
        dir.path(),
        "split",
        &[
            "--parts",
            "4",
            "--mode",
            "exchange",
            "--assignment",
            assign.to_str().unwrap(),
            "--replicated",
            top.to_str().unwrap(),
        ],
    );
    assert!(
        part_sum(&out, "replicated") > 0,
        "links to replicated URLs were skipped\n{out}"
    );
    assert_eq!(
        part_sum(&out, "replicated received"),
        0,
        "no part sent a replicated URL\n{out}"
    );
    // Exact: every manifest page stored, by one part, once; fetched once.
    let parts: Vec<String> = (0..4)
        .map(|i| {
            dir.path()
                .join("split")
                .join(format!("repository-p{i}"))
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let scans: Vec<RepoScan> = parts
        .iter()
        .map(|p| RepoScan::read(Path::new(p)).unwrap())
        .collect();
    let mut stored = HashSet::new();
    for scan in &scans {
        assert_eq!(
            scan.by_status.get(&200).copied().unwrap_or(0),
            scan.ok_urls.len()
        );
        for url in &scan.ok_urls {
            assert!(stored.insert(url.clone()), "{url} stored by two parts");
        }
    }
    assert_eq!(
        stored, manifest,
        "the split crawl stored exactly the manifest"
    );
    let log: Vec<_> = ws
        .flushed_log()
        .into_iter()
        .filter(|l| l.start_us >= since_us && !l.is_robots())
        .collect();
    let twice: Vec<(String, usize)> = tests::requestlog::url_counts(&log)
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .collect();
    assert!(twice.is_empty(), "fetched more than once: {twice:?}");
    for (url, _) in &listed {
        if manifest.contains(url) {
            assert!(
                stored.contains(url),
                "replicated {url} crawled by its owner"
            );
        }
    }

    // Quality: both crawls hold the whole top 100 at the end.
    let reference = polycrawl_ok(&["quality", "--reference", repo_s, "--top", "100", repo_s]);
    assert_eq!(final_share(&reference), 1.0, "{reference}");
    let mut args = vec!["quality", "--reference", repo_s, "--top", "100"];
    args.extend(parts.iter().map(String::as_str));
    let split = polycrawl_ok(&args);
    assert_eq!(final_share(&split), 1.0, "{split}");
}
