//! `polycrawl assign` end to end (issue 10): `polycrawl crawl` crawls a small websim
//! with host communities, then `polycrawl assign` reads its repository, partitions
//! the host graph with METIS and writes the assignment file. Checked: the file
//! parses, names every host with a stored page, respects the balance, cuts at most
//! half the URLs the hash cuts (on the same evaluator), two runs give the same bytes,
//! `--evaluate` gives the same figures back, and bad requests fail with a message.
//!
//! The harness builds the `polycrawl` binary first if needed (see `tests::bin`).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use spool::formats::AssignmentTable;
use tests::bin;
use tests::process::ProcessGuard;
use tests::system::Knobs;
use tests::websim::Websim;

/// `polycrawl crawl`'s config for `ws`: the system tests' knobs, every domain in
/// scope.
fn crawl_config(ws: &Websim, dir: &Path) -> std::path::PathBuf {
    let text = Knobs::default().config(ws, "unused-admin-token").replacen(
        "(\n",
        "(\n    app: (allowed_domains: [], urls_per_request_file: 200, scan_interval_ms: 200),\n",
        1,
    );
    let path = dir.join("config.ron");
    std::fs::write(&path, text).expect("writing the config");
    path
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
    let config = crawl_config(&ws, dir.path());
    let out = dir.path().join("out");
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("crawl")
        .arg("--seeds")
        .arg(ws.path("seeds"))
        .arg("--out")
        .arg(&out)
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "warn");
    let mut crawl = ProcessGuard::spawn("crawl", cmd, dir.path()).expect("starting the crawl");
    let status = crawl
        .wait_exit(Duration::from_secs(300))
        .unwrap()
        .unwrap_or_else(|| panic!("{}", crawl.report("crawl still running after 300 s")));
    assert!(status.success(), "{}", crawl.report("crawl failed"));

    let repo = out.join("repository");
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
