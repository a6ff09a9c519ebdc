//! `polycrawl demo` end to end: websim, manager, resolver, downloader and the
//! breadth-first application as separate processes, started by the demo itself.
//! The crawl must store exactly websim's status-200 pages, fetch no URL twice and
//! nothing robots.txt (or a trap) forbids, and every WARC file of the repository
//! must pass `warcio check`. The demo announces its admin page (`admin: http://ADDR/`).
//! Coverage and duplicates are judged twice: on the demo's own lines, and on the
//! WARC files and websim's request log by `tests::grade`, which does not trust them.
//!
//! The harness builds the `polycrawl` binary first if needed (see `tests::bin`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tests::bin;
use tests::grade::Grade;
use tests::process::ProcessGuard;

/// Ample time for the small web below (it takes well under a minute on 2 cores).
const DEMO_TIMEOUT: Duration = Duration::from_secs(240);

/// Runs the demo on a small web and returns its stdout and stderr; panics with both streams
/// unless it exits 0 in time.
fn run_demo(dir: &Path, args: &[&str]) -> (Vec<String>, String, Duration) {
    let out = dir.join("demo-out");
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("demo").args(args).arg("--out").arg(&out);
    cmd.env("RUST_LOG", "info");
    let started = Instant::now();
    let mut demo = ProcessGuard::spawn("demo", cmd, dir).expect("starting polycrawl demo");
    let status = demo.wait_exit(DEMO_TIMEOUT).expect("waiting for the demo");
    let elapsed = started.elapsed();
    let Some(status) = status else {
        // SIGTERM lets the demo stop its children (they are not ours to kill).
        let _ = demo.terminate(Duration::from_secs(30));
        panic!(
            "{}",
            demo.report(&format!("still running after {DEMO_TIMEOUT:?}"))
        );
    };
    // wait_exit has read stdout to its end: every line is in demo.stdout().
    assert!(
        status.success(),
        "{}",
        demo.report(&format!("exited {status}"))
    );
    (demo.stdout(), demo.stderr(), elapsed)
}

fn line<'a>(stdout: &'a [String], prefix: &str) -> &'a str {
    stdout
        .iter()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in\n{}", stdout.join("\n")))
}

#[test]
fn demo_crawls_websim_exactly_and_writes_valid_warcs() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, stderr, elapsed) = run_demo(
        dir.path(),
        &["--hosts", "50", "--pages", "1500", "--seed", "3"],
    );
    let text = stdout.join("\n");
    eprintln!("demo took {elapsed:?}:\n{text}");

    let coverage = line(&stdout, "coverage: ");
    let (fetched, expected) = coverage
        .trim_start_matches("coverage: ")
        .split_whitespace()
        .next()
        .and_then(|f| f.split_once('/'))
        .unwrap_or_else(|| panic!("bad coverage line {coverage:?}"));
    assert_eq!(fetched, expected, "{text}");
    assert!(expected.parse::<u64>().unwrap() > 500, "{text}");
    assert!(coverage.ends_with("(100.0 %)"), "{text}");
    assert_eq!(line(&stdout, "duplicate fetches: "), "duplicate fetches: 0");
    assert_eq!(
        line(&stdout, "robots-disallowed fetches: "),
        "robots-disallowed fetches: 0"
    );
    assert!(
        line(&stdout, "app: ").contains("0 batches quarantined"),
        "{text}"
    );
    // The same, judged on the WARC files and websim's log.
    let grade = Grade::demo(&dir.path().join("demo-out"));
    eprintln!("{}", grade.figures());
    grade.assert_exact();
    assert_eq!(expected, grade.expected.len().to_string(), "{text}");
    // The admin page was announced on a loopback port, its token kept for the owner.
    let admin = line(&stdout, "admin: http://");
    let addr = admin
        .trim_start_matches("admin: http://")
        .trim_end_matches('/');
    let addr: std::net::SocketAddr = addr.parse().unwrap_or_else(|e| panic!("{admin:?}: {e}"));
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{admin}");
    let token = dir.path().join("demo-out").join("admin-token");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&token)
            .expect("admin-token")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "{}", token.display());

    let repo = dir.path().join("demo-out").join("repository");
    let warcs = tests::repository::warc_files(&repo).expect("the WARC files");
    assert!(!warcs.is_empty(), "no WARC files in {}", repo.display());
    let check = Command::new("warcio")
        .arg("check")
        .args(&warcs)
        .output()
        .expect("running `warcio check` (installed by ops/setup.sh)");
    assert!(
        check.status.success(),
        "warcio check failed on {} files:\n{}{}",
        warcs.len(),
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );

    // Every child was stopped and reaped: none of the pids the demo announced
    // (`processes websim=PID manager=PID ...`) is left.
    let procs = stderr
        .lines()
        .find_map(|l| l.split_once("processes ").map(|(_, p)| p.to_owned()))
        .unwrap_or_else(|| panic!("no `processes` line in\n{stderr}"));
    let pids: Vec<(&str, u32)> = procs
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(n, p)| (n, p.parse().expect("pid")))
        .collect();
    for name in ["websim", "manager", "resolver", "dl-1", "app"] {
        assert!(
            pids.iter().any(|(n, _)| *n == name),
            "{name} missing: {procs}"
        );
    }
    for (name, pid) in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "{name} (pid {pid}) is still there after the demo"
        );
    }
}

#[test]
fn demo_refuses_a_foreign_output_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("precious.txt"), "keep me").unwrap();
    let out = Command::new(bin::polycrawl())
        .args(["demo", "--hosts", "20", "--pages", "40", "--out"])
        .arg(dir.path())
        .output()
        .expect("running polycrawl demo");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not an earlier demo's output"), "{err}");
    assert!(dir.path().join("precious.txt").exists());
}

/// `polycrawl demo --strategy seed-by-seed --parts 2`: the seed-by-seed crawl
/// started by the demo itself, split over two parts by seed host. The demo checks
/// itself against the union of the seeds' parties (websim's `parties.tsv`); this
/// test counts that union on its own, and checks that every input seed's party
/// was crawled by exactly one part.
#[test]
fn demo_seed_by_seed_in_two_parts_crawls_exactly_the_parties() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, _stderr, elapsed) = run_demo(
        dir.path(),
        &[
            "--hosts",
            "40",
            "--pages",
            "800",
            "--seed",
            "5",
            "--size-skew",
            "0.5",
            "--interval-ms",
            "20",
            "--strategy",
            "seed-by-seed",
            "--workers",
            "2",
            "--all-seeds",
            "--parts",
            "2",
        ],
    );
    let text = stdout.join("\n");
    eprintln!("seed-by-seed demo took {elapsed:?}:\n{text}");
    let out = dir.path().join("demo-out");
    let parties = std::fs::read_to_string(out.join("websim").join("parties.tsv"))
        .expect("websim's parties.tsv (--components 3 by default for seed-by-seed)");
    let mut union = std::collections::HashSet::new();
    for l in parties.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = l.split('\t').collect();
        if f.get(2) == Some(&"200") {
            union.insert(f[1]);
        }
    }
    assert!(union.len() > 200, "{} party pages", union.len());
    assert_eq!(
        line(&stdout, "coverage: "),
        format!("coverage: {}/{} (100.0 %)", union.len(), union.len()),
        "{text}"
    );
    assert_eq!(line(&stdout, "duplicate fetches: "), "duplicate fetches: 0");
    assert_eq!(
        line(&stdout, "robots-disallowed fetches: "),
        "robots-disallowed fetches: 0"
    );
    // The same, judged on the parts' WARC files and websim's log.
    let grade = Grade::demo_parties(&out);
    eprintln!("{}", grade.figures());
    grade.assert_exact();
    assert_eq!(grade.expected.len(), union.len());
    assert_eq!(grade.scans.len(), 2, "two parts' repositories");
    let seeds = std::fs::read_to_string(out.join("websim").join("seeds.txt")).expect("seeds");
    let mut taken = std::collections::HashMap::new();
    for part in 0..2 {
        assert!(
            line(&stdout, &format!("part {part}:")).contains(&format!(
                "app sbs-p{part}: Complete: seed-by-seed (distributor)"
            )),
            "{text}"
        );
        let state = out.join("state").join(format!("app-p{part}"));
        // The part's finished parties: seed, pages, worker.
        let ended = std::fs::read_to_string(state.join("parties.tsv")).expect("parties.tsv");
        for l in ended.lines() {
            let seed = l.split('\t').next().unwrap_or_default();
            *taken.entry(seed.to_owned()).or_insert(0) += 1;
        }
        let held = std::fs::read_to_string(state.join("held.tsv")).expect("held.tsv");
        assert!(
            held.lines().skip(1).all(|l| l.split('\t').count() == 6),
            "{held}"
        );
    }
    for seed in seeds.lines() {
        assert_eq!(
            taken.get(seed),
            Some(&1),
            "seed {seed} must go to exactly one part"
        );
    }
    assert_eq!(taken.len(), seeds.lines().count(), "{taken:?}");
}
