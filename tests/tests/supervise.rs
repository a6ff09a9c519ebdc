//! Supervision by `polycrawl crawl` and `polycrawl demo` (issue 11), with real
//! processes against websim:
//!
//! - SIGKILL of `polycrawl crawl` mid-crawl leaves none of its children alive (the
//!   kernel's parent-death signal): checked in `/proc`, by the pids it wrote and by
//!   every process carrying its pid in `POLYCRAWL_PARENT_PID`.
//! - Ctrl-C (SIGINT to the process group) reaches only `polycrawl crawl`, which
//!   stops its children in order, with its summary and exit 0.
//! - A process in a crash loop (it dies within a second of every start, before it
//!   registers) is given up on after the default 5 such deaths in a row: the run
//!   ends with its summary, a one-line reason and a non-zero exit.
//! - SIGTERM ends a demo in order, with its summary and exit 0; the same command
//!   then resumes and completes the crawl exactly (100 % coverage, no duplicate and
//!   no robots-disallowed fetch over both runs), judged on the demo's lines and on
//!   the WARC files and both runs' request logs (`tests::grade`).
//! - Chaos: while `polycrawl crawl` crawls a web of more than 5,000 pages with the
//!   default supervision, a process drawn at random among all running (manager,
//!   resolver, a downloader, the application) is SIGKILLed every 2-6 s (drawn), at
//!   least 20 times; the supervisor starts each again and the crawl
//!   ends by itself with every status-200 page of the manifest stored, nothing of
//!   `never.txt` fetched, no per-origin interval violation, and every URL fetched
//!   twice attributable to a kill (its first fetch was in flight or not yet
//!   committed when a process was killed); the test prints that bound and the count.
//! - Whole tree (issue 38): every process of `polycrawl crawl` SIGKILLed at once, 10
//!   times at moments drawn at random, the same command resuming each time: every
//!   status-200 page of the manifest stored, and every URL fetched twice in flight
//!   at a kill (or requested again by the application).
//!
//! The harness builds the `polycrawl` binary first if needed (see `tests::bin`).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tests::applog;
use tests::bin;
use tests::politeness;
use tests::proc::Stat;
use tests::process::{ProcessGuard, children_by_environment};
use tests::repository::RepoScan;
use tests::requestlog;
use tests::system::Knobs;
use tests::websim::{LogLine, Websim};
use tests::wirelog;

/// The downloaders' `max_batch_age_ms` in these runs.
const BATCH_AGE_MS: u64 = 300;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as u64
}

/// A config for `polycrawl crawl` against `ws`: `tests::system::Knobs`'s (websim's
/// DNS and CA, private addresses, short timers) plus the admin page on a free
/// port, a wire log, every domain in scope and small request files.
fn crawl_config(ws: &Websim, knobs: &Knobs, dir: &Path) -> PathBuf {
    let wire = dir.join("wire.tsv");
    let text = knobs
        .crawl_text(ws)
        .replacen(
            "downloader: (",
            &format!(
                "downloader: (\n        wire_log: Some({:?}),",
                wire.display().to_string()
            ),
            1,
        )
        .replace(
            "max_batch_age_ms: 300,",
            &format!("max_batch_age_ms: {BATCH_AGE_MS},"),
        )
        .replacen(
            "manager: (",
            "manager: (\n        shutdown_grace_ms: 5000,",
            1,
        );
    let path = dir.join("config.ron");
    std::fs::write(&path, text).expect("writing the config");
    path
}

/// Starts `polycrawl crawl` on `ws` into `dir/out`.
fn start_crawl(ws: &Websim, config: &Path, dir: &Path, extra: &[&str]) -> ProcessGuard {
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("crawl")
        .arg("--seeds")
        .arg(ws.path("seeds"))
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--config")
        .arg(config)
        .args(extra)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    ProcessGuard::spawn("crawl", cmd, dir).expect("starting polycrawl crawl")
}

/// The running children listed in `<out>/pids` (empty if it is not there yet).
fn read_pids(out: &Path) -> Vec<(String, u32)> {
    std::fs::read_to_string(out.join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(n, p)| Some((n.to_owned(), p.parse().ok()?)))
        .collect()
}

/// Waits until `<out>/pids` lists `n` processes.
fn wait_pids(out: &Path, n: usize, crawl: &mut ProcessGuard) -> Vec<(String, u32)> {
    let mut pids = Vec::new();
    let found =
        test_support::wait::poll_every(Duration::from_secs(60), Duration::from_millis(100), || {
            pids = read_pids(out);
            if pids.len() == n {
                return Some(Some(pids.clone()));
            }
            // Exited: no use waiting.
            crawl.wait_exit(Duration::ZERO).ok().flatten().map(|_| None)
        });
    found.flatten().unwrap_or_else(|| {
        panic!(
            "{}",
            crawl.report(&format!("no {n} pids in pids: {pids:?}"))
        )
    })
}

/// Whether the process that had `start` as its start time is still alive (a
/// zombie waiting for its new parent to reap it is dead).
fn alive(pid: u32, start: u64) -> bool {
    Stat::of(pid).is_some_and(|s| s.start == start && s.state != 'Z')
}

/// Page requests websim must have served before a test calls the crawl busy.
const CRAWLING: usize = 100;

/// Waits until the crawl is under way: websim has served [`CRAWLING`] page
/// requests (the downloaders fetching, the app's batches open).
fn wait_crawling(ws: &Websim, crawl: &mut ProcessGuard) {
    let pages = || ws.log().iter().filter(|l| !l.is_robots()).count();
    let crawling = test_support::wait::poll(Duration::from_secs(60), || {
        (pages() >= CRAWLING).then_some(())
    });
    if crawling.is_none() {
        panic!(
            "{}",
            crawl.report(&format!("{} of {CRAWLING} page requests in 60 s", pages()))
        );
    }
}

/// Done-when 2, first half.
#[test]
fn sigkill_of_the_crawl_leaves_no_process_behind() {
    let ws = Websim::start(&["--hosts", "40", "--pages", "4000", "--slow-ms", "50"]);
    let dir = tempfile::tempdir().unwrap();
    let knobs = Knobs::default();
    let config = crawl_config(&ws, &knobs, dir.path());
    let out = dir.path().join("out");
    let mut crawl = start_crawl(&ws, &config, dir.path(), &["--downloaders", "2"]);
    let pids = wait_pids(&out, 5, &mut crawl);
    // Every child busy, batches open.
    wait_crawling(&ws, &mut crawl);
    let pids = if read_pids(&out) == pids {
        pids
    } else {
        read_pids(&out)
    };
    let started: Vec<(String, u32, u64)> = pids
        .iter()
        .filter_map(|(n, p)| Stat::of(*p).map(|s| (n.clone(), *p, s.start)))
        .collect();
    assert_eq!(started.len(), 5, "children not running: {pids:?}");
    let crawl_pid = crawl.pid();
    assert_eq!(
        children_by_environment(crawl_pid).len(),
        5,
        "{}",
        crawl.report("the children do not carry POLYCRAWL_PARENT_PID")
    );

    let killed = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(crawl_pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL to polycrawl crawl");
    let status = crawl.wait_exit(Duration::from_secs(5)).unwrap();
    assert!(status.is_some(), "polycrawl crawl survived SIGKILL");

    // A short grace: the kernel signals the children at once; the init process
    // reaps them a moment later.
    let grace = Duration::from_secs(5);
    let gone = test_support::wait::poll_every(
        grace.saturating_sub(killed.elapsed()),
        Duration::from_millis(50),
        || {
            let left = started.iter().any(|(_, p, s)| alive(*p, *s));
            (!left && children_by_environment(crawl_pid).is_empty()).then_some(())
        },
    );
    if gone.is_none() {
        let left: Vec<&(String, u32, u64)> =
            started.iter().filter(|(_, p, s)| alive(*p, *s)).collect();
        let by_env = children_by_environment(crawl_pid);
        panic!(
            "alive {grace:?} after SIGKILL of polycrawl crawl: {left:?}, by environment {by_env:?}"
        );
    }
    println!(
        "supervise: SIGKILL of polycrawl crawl (pid {crawl_pid}): its {} children were gone after {:.2} s",
        started.len(),
        killed.elapsed().as_secs_f64()
    );
}

/// Ctrl-C in a terminal sends SIGINT to the whole foreground process group. The
/// children have groups of their own, so only `polycrawl crawl` gets it and stops
/// them in order: summary, exit 0, every child stopped cleanly.
#[test]
fn ctrl_c_to_the_process_group_stops_a_crawl_in_order_with_its_summary() {
    use std::os::unix::process::CommandExt as _;
    let ws = Websim::start(&["--hosts", "40", "--pages", "4000", "--slow-ms", "50"]);
    let dir = tempfile::tempdir().unwrap();
    let knobs = Knobs::default();
    let config = crawl_config(&ws, &knobs, dir.path());
    let out = dir.path().join("out");
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("crawl")
        .arg("--seeds")
        .arg(ws.path("seeds"))
        .arg("--out")
        .arg(&out)
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        // A group of its own, like a shell's foreground job.
        .process_group(0);
    let mut crawl =
        ProcessGuard::spawn("crawl", cmd, dir.path()).expect("starting polycrawl crawl");
    let pids = wait_pids(&out, 4, &mut crawl);
    for (name, pid) in &pids {
        let group = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(*pid as i32)))
            .expect("the child's process group");
        assert_ne!(
            group.as_raw() as u32,
            crawl.pid(),
            "{name} is in the orchestrator's process group"
        );
    }
    wait_crawling(&ws, &mut crawl);
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(crawl.pid() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT to the crawl's process group");
    let status = crawl
        .wait_exit(Duration::from_secs(60))
        .unwrap()
        .unwrap_or_else(|| panic!("{}", crawl.report("still running after Ctrl-C")));
    let stdout = crawl.stdout().join("\n");
    let stderr = crawl.stderr();
    println!("supervise: Ctrl-C:\n{stdout}");
    assert!(
        status.success(),
        "exit {status} after Ctrl-C:\n{stdout}\n{stderr}"
    );
    assert!(
        line_of(&stdout, "polycrawl crawl: ").contains("interrupted after"),
        "{stdout}"
    );
    assert!(
        line_of(&stdout, "app: ").contains(": Shutdown:"),
        "{stdout}"
    );
    assert!(
        !stderr.contains("did not stop cleanly") && !stderr.contains("polycrawl: error"),
        "{stderr}"
    );
}

/// Issue 29, Done-when 2, second half: a process in a crash loop (here the
/// application, whose progress file is damaged: it exits within a second of every
/// start, before it registers) is given up on after the default count, 5 deaths
/// in a row: the run stops every other process, prints its summary with a
/// one-line reason naming the process, and exits non-zero. The kill before the
/// damage (a death after it registered) does not count.
#[test]
fn a_process_in_a_crash_loop_is_given_up_on_with_a_one_line_reason() {
    let ws = Websim::start(&["--hosts", "40", "--pages", "4000", "--slow-ms", "50"]);
    let dir = tempfile::tempdir().unwrap();
    let knobs = Knobs::default();
    let config = crawl_config(&ws, &knobs, dir.path());
    let out = dir.path().join("out");
    let mut crawl = start_crawl(&ws, &config, dir.path(), &[]);
    let pids = wait_pids(&out, 4, &mut crawl);
    let app = pids
        .iter()
        .find(|(n, _)| n == "app")
        .map(|(_, p)| *p)
        .expect("an app process");
    // Once it has registered and saved its progress, stop it (so it writes
    // nothing more), damage the file and kill it.
    let progress = out.join("state").join("app").join("progress");
    let log = out.join("logs").join("app.log");
    let saved =
        test_support::wait::poll_every(Duration::from_secs(60), Duration::from_millis(50), || {
            let registered = std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("registered with the manager");
            (progress.exists() && registered).then_some(())
        });
    assert!(
        saved.is_some(),
        "{}",
        crawl.report("the app never registered and saved its progress")
    );
    let pid = nix::unistd::Pid::from_raw(app as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).expect("SIGSTOP to the app");
    std::fs::write(&progress, "damaged\n").expect("damaging the progress file");
    let others: Vec<(String, u32, u64)> = read_pids(&out)
        .iter()
        .filter(|(n, _)| n != "app")
        .filter_map(|(n, p)| Stat::of(*p).map(|s| (n.clone(), *p, s.start)))
        .collect();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("SIGKILL to the app");

    let status = crawl
        .wait_exit(Duration::from_secs(90))
        .unwrap()
        .unwrap_or_else(|| panic!("{}", crawl.report("still running: the crash loop")));
    let stdout = crawl.stdout().join("\n");
    let stderr = crawl.stderr();
    println!("supervise: gave up on the app:\n{stdout}\n{stderr}");
    assert!(
        !status.success(),
        "exit 0 after giving up:\n{stdout}\n{stderr}"
    );
    let reason = "is in a crash loop: it died 5 times in a row within 10 s of starting, \
                  before it registered";
    let stopped = line_of(&stdout, "polycrawl crawl: ");
    assert!(
        stopped.contains("stopped after")
            && stopped.contains("app (pid")
            && stopped.contains(reason),
        "{stdout}"
    );
    // The same line in the error, the app's own error in the log tail after it.
    let error = line_of(&stderr, "polycrawl: error: ");
    assert!(error.contains(reason), "{stderr}");
    assert!(
        stderr.contains("damaged"),
        "the app's error is not in the log tail:\n{stderr}"
    );
    // The kill, then five crash-loop deaths: five starts after the first.
    assert!(line_of(&stdout, "restarts: ").contains("app 5"), "{stdout}");
    assert!(stdout.contains("\npages: "), "no summary:\n{stdout}");
    let app_log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        app_log.contains("crash-loop death 4 of 5 in a row"),
        "{app_log}"
    );
    // Everything else was stopped in order, not left behind.
    for (name, pid, start) in &others {
        assert!(!alive(*pid, *start), "{name} (pid {pid}) still running");
    }
}

/// Runs `polycrawl demo ARGS --out OUT` to its end, or with `term_after`, sends it
/// SIGTERM once websim has logged that many requests (the crawl under way) and
/// waits for its end; `(exit success, stdout, stderr, time from the SIGTERM to
/// the exit)`.
fn demo(
    dir: &Path,
    out: &Path,
    args: &[&str],
    term_after: Option<usize>,
) -> (bool, String, String, Duration) {
    let mut cmd = Command::new(bin::polycrawl());
    cmd.arg("demo")
        .args(args)
        .arg("--out")
        .arg(out)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    let name = if term_after.is_some() {
        "demo-1"
    } else {
        "demo-2"
    };
    let mut demo = ProcessGuard::spawn(name, cmd, dir).expect("starting polycrawl demo");
    demo.wait_for_line(
        |l| l.starts_with("admin: http://"),
        Duration::from_secs(120),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut took = Duration::ZERO;
    let status = if let Some(after) = term_after {
        // The first run's request log (the resumed one writes requests-2.tsv).
        let log = out.join("websim").join("requests.tsv");
        let requests = || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            text.lines().filter(|l| !l.starts_with('#')).count()
        };
        let under_way = test_support::wait::poll_every(
            Duration::from_secs(120),
            Duration::from_millis(50),
            || (requests() >= after && read_pids(out).len() == 4).then_some(()),
        );
        assert!(
            under_way.is_some(),
            "{}",
            demo.report(&format!(
                "not running with {after} requests logged: {} logged, pids {:?}",
                requests(),
                read_pids(out)
            ))
        );
        let t = Instant::now();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(demo.pid() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("SIGTERM to the demo");
        // The manager's shutdown grace in the demo is 5 s; stopping every child in
        // order must fit in a few of those.
        let s = demo.wait_exit(Duration::from_secs(30)).unwrap();
        took = t.elapsed();
        s
    } else {
        demo.wait_exit(Duration::from_secs(240)).unwrap()
    };
    let Some(status) = status else {
        let report = demo.report("still running");
        let _ = demo.terminate(Duration::from_secs(30));
        panic!("{report}");
    };
    (
        status.success(),
        demo.stdout().join("\n"),
        demo.stderr(),
        took,
    )
}

fn line_of<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in\n{text}"))
}

/// Done-when 2, second half.
#[test]
fn sigterm_ends_a_demo_with_its_summary_and_the_same_command_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo-out");
    let args = ["--hosts", "50", "--pages", "1500", "--seed", "3"];

    let (ok, stdout, stderr, took) = demo(dir.path(), &out, &args, Some(150));
    println!(
        "supervise: first demo stopped {:.2} s after SIGTERM:\n{stdout}",
        took.as_secs_f64()
    );
    assert!(
        ok,
        "the interrupted demo did not exit 0:\n{stdout}\n{stderr}"
    );
    assert!(
        line_of(&stdout, "polycrawl demo: ").contains("interrupted after"),
        "{stdout}"
    );
    let coverage = line_of(&stdout, "coverage: ");
    assert!(
        !coverage.ends_with("(100.0 %)"),
        "the crawl was done before the SIGTERM: {coverage}"
    );
    assert!(
        line_of(&stdout, "app: ").contains(": Shutdown:"),
        "{stdout}"
    );
    assert!(out.join("demo-resume").exists());
    assert!(
        !out.join("pids").exists(),
        "the pids file outlived the children"
    );

    let (ok, stdout, stderr, _) = demo(dir.path(), &out, &args, None);
    println!("supervise: resumed demo:\n{stdout}");
    assert!(ok, "the resumed demo failed:\n{stdout}\n{stderr}");
    assert!(stderr.contains("resuming the unfinished demo"), "{stderr}");
    assert!(
        line_of(&stdout, "polycrawl demo: ").contains("crawl complete")
            || line_of(&stdout, "polycrawl demo: ").contains("crawl incomplete"),
        "{stdout}"
    );
    assert!(
        line_of(&stdout, "coverage: ").ends_with("(100.0 %)"),
        "{stdout}"
    );
    assert_eq!(
        line_of(&stdout, "duplicate fetches: "),
        "duplicate fetches: 0"
    );
    assert_eq!(
        line_of(&stdout, "robots-disallowed fetches: "),
        "robots-disallowed fetches: 0"
    );
    assert!(
        out.join("websim").join("requests-2.tsv").exists(),
        "the resumed run did not log into a new file"
    );
    // The same over both runs, judged on the WARC files and both request logs.
    let grade = tests::grade::Grade::demo(&out);
    println!("supervise: resumed demo {}", grade.figures());
    grade.assert_exact();
    assert!(
        !out.join("demo-resume").exists(),
        "a complete demo keeps its resume record"
    );
}

/// When the application recorded a generation of request files as published:
/// the stamps of its `app: published new URLs` log lines.
fn app_records(log: &Path) -> Vec<u64> {
    let mut stamps: Vec<u64> = applog::published(log).iter().map(|p| p.at_us).collect();
    stamps.sort_unstable();
    stamps
}

/// A tiny deterministic generator (xorshift), seeded from the clock (or from
/// `CHAOS_SEED`) and printed, so a failing run's kill order can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One SIGKILL of the chaos test.
#[derive(Debug, Clone)]
struct Kill {
    name: String,
    pid: u32,
    at_us: u64,
}

/// Done-when 1 of issue 11, with the defaults of issue 29: `polycrawl crawl` with
/// its default supervision (no `--max-deaths`), and every 2-6 s (drawn) a SIGKILL
/// of a process drawn among all those running, any role, in any order.
#[test]
fn chaos_kills_a_process_every_few_seconds_and_the_crawl_completes() {
    const KILLS: usize = 20;
    const MAX_KILLS: usize = 60;
    const DOWNLOADERS: usize = 2;
    let ws = Websim::start(&[
        "--hosts",
        "80",
        "--pages",
        "7000",
        "--size-skew",
        "0.5",
        "--slow-ms",
        "50",
    ]);
    let manifest = ws.manifest();
    let expected: BTreeSet<String> = manifest
        .iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url.clone())
        .collect();
    assert!(
        expected.len() >= 5000,
        "the web has {} pages",
        expected.len()
    );
    let dir = tempfile::tempdir().unwrap();
    // Politeness on, small intervals; a pages/s target that makes the crawl last
    // long enough for every kill (20 at 4 s on average).
    let knobs = Knobs {
        interval_ms: 50,
        ip_min_interval_ms: 20,
        target_pages_per_sec: 60.0,
        max_crawl_delay_ms: 100,
        downloader_concurrency: 16,
        min_connections: 16,
        max_connections: 16,
        ..Knobs::default()
    };
    let config = crawl_config(&ws, &knobs, dir.path());
    let out = dir.path().join("out");
    let started = Instant::now();
    let mut crawl = start_crawl(
        &ws,
        &config,
        dir.path(),
        &["--downloaders", &DOWNLOADERS.to_string()],
    );
    wait_pids(&out, 3 + DOWNLOADERS, &mut crawl);

    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| now_us() | 1);
    println!("supervise: chaos seed {seed} (CHAOS_SEED={seed} replays the kill order)");
    let mut rng = Rng(seed);
    let mut kills: Vec<Kill> = Vec::new();
    let gap = |rng: &mut Rng| Duration::from_millis(2000 + rng.below(4001) as u64);
    let mut next_kill = Instant::now() + gap(&mut rng);
    let status = loop {
        if let Some(status) = crawl.wait_exit(Duration::from_millis(100)).unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(420),
            "{}",
            crawl.report(&format!(
                "not done after {} kills (seed {seed})",
                kills.len()
            ))
        );
        if kills.len() >= MAX_KILLS || Instant::now() < next_kill {
            continue;
        }
        next_kill = Instant::now() + gap(&mut rng);
        // Any running process (one dead and waiting for its restart is not in the
        // pids file).
        let pids = read_pids(&out);
        if pids.is_empty() {
            continue;
        }
        // Random victims, but no role left out by chance: once the kills left
        // before KILLS are as few as the roles not hit yet, the victim is drawn
        // among those roles' processes.
        let missing: Vec<&str> = ["manager", "resolver", "dl-", "app"]
            .into_iter()
            .filter(|role| !kills.iter().any(|k| k.name.starts_with(role)))
            .collect();
        let pool: Vec<&(String, u32)> =
            if !missing.is_empty() && KILLS.saturating_sub(kills.len()) <= missing.len() {
                pids.iter()
                    .filter(|(n, _)| missing.iter().any(|role| n.starts_with(role)))
                    .collect()
            } else {
                pids.iter().collect()
            };
        if pool.is_empty() {
            continue;
        }
        let (name, pid) = pool[rng.below(pool.len())];
        let at_us = now_us();
        if nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .is_ok()
        {
            kills.push(Kill {
                name: name.clone(),
                pid: *pid,
                at_us,
            });
        }
    };
    let took = started.elapsed();
    let stdout = crawl.stdout().join("\n");
    assert!(
        status.success(),
        "{}",
        crawl.report(&format!("exited {status} (seed {seed})"))
    );
    assert!(
        line_of(&stdout, "polycrawl crawl: ").contains("crawl complete")
            || line_of(&stdout, "polycrawl crawl: ").contains("crawl incomplete"),
        "{stdout}"
    );
    let mut by_role: BTreeMap<String, usize> = BTreeMap::new();
    for k in &kills {
        *by_role.entry(k.name.clone()).or_default() += 1;
    }
    assert!(
        kills.len() >= KILLS,
        "only {} kills before the crawl ended ({by_role:?}, seed {seed}): make the web larger",
        kills.len()
    );
    // Drawn at random, and the last draws before KILLS among the roles not hit yet.
    for role in ["manager", "resolver", "dl-", "app"] {
        assert!(
            by_role.keys().any(|n| n.starts_with(role)),
            "{role} was never killed: {by_role:?} (seed {seed})"
        );
    }
    // The supervisor counted each kill as a death of a process that had run (not
    // a crash loop) and started it again; the last kill may land as the run ends,
    // when nothing is started again.
    let stderr = crawl.stderr();
    let said = format!("{stdout}\n{stderr}");
    let unseen: Vec<&Kill> = kills
        .iter()
        .filter(|k| {
            !said.lines().any(|l| {
                l.contains(&format!("{} (pid {}) died", k.name, k.pid))
                    && l.contains("starting it again")
            })
        })
        .collect();
    assert!(
        unseen.is_empty()
            || (unseen.len() == 1 && std::ptr::eq(unseen[0], &kills[kills.len() - 1])),
        "kills the supervisor did not restart after: {unseen:?} (seed {seed})\n{said}"
    );
    // A process killed again before it registered (the manager being down, say)
    // counts toward a crash loop; the defaults never reach one with kills 2-6 s
    // apart (the run would have ended above).
    let early = said
        .lines()
        .filter(|l| l.contains("crash-loop death"))
        .count();
    let restarts = line_of(&stdout, "restarts: ");

    // Coverage: every status-200 page of the manifest is in the repository.
    let scan = RepoScan::read(&out.join("repository")).unwrap_or_else(|e| panic!("{e}"));
    let missing: Vec<&String> = expected
        .iter()
        .filter(|u| !scan.ok_urls.contains(*u))
        .collect();

    // websim's log: nothing of never.txt, and each URL fetched twice attributable
    // to a kill.
    let log: Vec<LogLine> = ws.log();
    let never: BTreeSet<String> = ws.never().into_iter().collect();
    let forbidden: Vec<String> = log
        .iter()
        .map(LogLine::url)
        .filter(|u| never.contains(u))
        .collect();
    let counts = requestlog::url_counts(&log);
    let mut pages: HashMap<String, Vec<&LogLine>> = HashMap::new();
    for l in log.iter().filter(|l| !l.is_robots()) {
        pages.entry(l.url()).or_default().push(l);
    }
    // In flight at a kill of a manager or downloader: a request started before the
    // kill (or just after it, see `noticed_us`) that had not ended, or ended so
    // recently that its batch may not have been published and committed yet
    // (batch age, plus a publication and report margin).
    let window_us = (BATCH_AGE_MS + 700) * 1000;
    // An application killed between publishing a generation's request files and
    // recording it publishes those URLs again after its restart, and the two copies
    // may wait in their host's queue for a long time: a URL of that generation was
    // first requested after the app's last record before the kill, at any time
    // after (the bound counts every such request, so it is loose for app kills).
    let records = app_records(&out.join("logs").join("app.log"));
    // A job dispatched before a manager or downloader kill may still start until
    // the downloader sees the connection close.
    let noticed_us = 500_000;
    let in_flight = |l: &LogLine, k: &Kill| {
        if k.name == "app" {
            let last_record = records
                .iter()
                .rev()
                .find(|t| **t <= k.at_us)
                .copied()
                .unwrap_or(0);
            l.start_us >= last_record
        } else {
            l.start_us <= k.at_us + noticed_us && l.end_us + window_us >= k.at_us
        }
    };
    // A resolver fetches nothing: its kills cannot make a URL fetched twice.
    let fetching_kills: Vec<&Kill> = kills.iter().filter(|k| k.name != "resolver").collect();
    let mut bound_urls: BTreeSet<String> = BTreeSet::new();
    for k in &fetching_kills {
        for l in log.iter().filter(|l| !l.is_robots()) {
            if in_flight(l, k) {
                bound_urls.insert(l.url());
            }
        }
    }
    let twice: Vec<&String> = pages
        .iter()
        .filter(|(_, ls)| ls.len() > 1)
        .map(|(u, _)| u)
        .collect();
    let unexplained: Vec<&String> = twice
        .iter()
        .copied()
        .filter(|u| {
            let first = pages[*u]
                .iter()
                .min_by_key(|l| l.start_us)
                .expect("a request");
            !fetching_kills.iter().any(|k| in_flight(first, k))
        })
        .collect();

    // Politeness per origin (interval from the end of one request to the start of
    // the next), judged on the downloaders' stamps and websim's.
    let hosts: HashMap<String, Option<f64>> = ws
        .hosts()
        .into_iter()
        .map(|h| (h.name.clone(), h.crawl_delay))
        .collect();
    let interval_us = |origin: &str| -> i64 {
        let name = requestlog::host_name(origin.split_once("://").map_or(origin, |(_, a)| a));
        let delay_ms = hosts
            .get(&name)
            .copied()
            .flatten()
            .map_or(0, |s| (s * 1000.0) as u64)
            .min(knobs.max_crawl_delay_ms);
        (knobs.interval_ms.max(delay_ms) * 1000) as i64
    };
    let rules = politeness::Rules {
        interval_us: &interval_us,
        ip_spacing_us: 0,
        ip_max_in_flight: 0,
    };
    let wire = wirelog::read(&dir.path().join("wire.tsv"));
    // A downloader killed mid-request never logs that request (its wire line is
    // written when the request ends), so websim has a line no downloader logged,
    // and the judge, pairing the k-th request of a URL in both logs, would pair
    // the wrong ones. Such lines (a URL with more websim lines than wire lines, in
    // flight at a downloader kill) are set apart and judged on websim's side
    // alone: the next request to their origin must not start within the interval
    // after websim began writing their response.
    //
    // websim stamps a request's start when it has read it, not when its bytes
    // arrived: a downloader killed right after it wrote a request leaves the bytes
    // in the socket, and a busy websim may read them after the kill. So a line
    // counts as in flight at a kill from `KILL_SLACK_US` before its start to as
    // long after its end.
    const KILL_SLACK_US: u64 = 1_000_000;
    let dl_kills: Vec<u64> = kills
        .iter()
        .filter(|k| k.name.starts_with("dl-"))
        .map(|k| k.at_us)
        .collect();
    let mut wire_count: HashMap<&str, usize> = HashMap::new();
    for w in wire.iter().filter(|w| w.was_sent()) {
        *wire_count.entry(w.url.as_str()).or_default() += 1;
    }
    let mut server_by_url: HashMap<String, Vec<&LogLine>> = HashMap::new();
    for l in &log {
        server_by_url.entry(l.url()).or_default().push(l);
    }
    let mut cut: Vec<&LogLine> = Vec::new();
    for (url, lines) in &server_by_url {
        let excess = lines
            .len()
            .saturating_sub(wire_count.get(url.as_str()).copied().unwrap_or(0));
        let at_kill = lines.iter().copied().filter(|l| {
            dl_kills
                .iter()
                .any(|k| l.start_us <= *k + KILL_SLACK_US && l.end_us + KILL_SLACK_US >= *k)
        });
        cut.extend(at_kill.take(excess));
    }
    let judged_log: Vec<LogLine> = log
        .iter()
        .filter(|l| !cut.iter().any(|c| std::ptr::eq(*c, *l)))
        .cloned()
        .collect();
    let judged = politeness::judge(&wire, &judged_log, &rules);
    let mut cut_violations = Vec::new();
    for c in cut.iter().filter(|c| c.write_from_us > 0) {
        let origin = c.origin();
        let next = log
            .iter()
            .filter(|l| l.origin() == origin && l.start_us > c.start_us)
            .min_by_key(|l| l.start_us);
        if let Some(next) = next {
            let gap = next.start_us as i64 - c.write_from_us as i64;
            let d = interval_us(&wirelog::origin_of(&c.url()));
            if gap < d {
                cut_violations.push(format!(
                    "{origin}: websim had {} {:.1} ms after it began writing the response to \
                     {} (cut by a downloader kill; interval {:.1} ms)",
                    next.target,
                    gap as f64 / 1000.0,
                    c.target,
                    d as f64 / 1000.0
                ));
            }
        }
    }

    let kill_list: Vec<String> = kills
        .iter()
        .map(|k| format!("{}@{:.1}s", k.name, (k.at_us - kills[0].at_us) as f64 / 1e6))
        .collect();
    println!(
        "chaos: seed {seed}; {} kills ({by_role:?}), {early} before a registration; \
         {restarts}; crawl took {:.1} s; \
         {} of {} status-200 pages stored, {} responses; {} requests ({} page URLs); \
         fetched twice {} (bound {}: URLs in flight at a kill of a manager, downloader or app), of which unexplained {}; \
         never.txt fetched {}; politeness: {}; {} requests cut by a downloader kill \
         (judged on websim's side: {} violations)\nkills: {}",
        kills.len(),
        took.as_secs_f64(),
        expected.len() - missing.len(),
        expected.len(),
        scan.responses,
        log.len(),
        counts.len(),
        twice.len(),
        bound_urls.len(),
        unexplained.len(),
        forbidden.len(),
        judged.figures(&rules),
        cut.len(),
        cut_violations.len(),
        kill_list.join(" ")
    );
    assert!(
        missing.is_empty(),
        "{} pages not stored: {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    assert!(
        forbidden.is_empty(),
        "never.txt URLs fetched: {forbidden:?}"
    );
    // For a failure: each unexplained URL's fetches and the last kill before its
    // second one, relative to that kill.
    let t0 = kills.first().map_or(0, |k| k.at_us);
    let explain: Vec<String> = unexplained
        .iter()
        .map(|u| {
            let mut ls = pages[*u].clone();
            ls.sort_by_key(|l| l.start_us);
            let second = ls.get(1).map_or(0, |l| l.start_us);
            let kill = kills.iter().rev().find(|k| k.at_us <= second);
            let fetches: Vec<String> = ls
                .iter()
                .map(|l| {
                    format!(
                        "{:.3}-{:.3}s",
                        (l.start_us as f64 - t0 as f64) / 1e6,
                        (l.end_us as f64 - t0 as f64) / 1e6
                    )
                })
                .collect();
            match kill {
                Some(k) => format!(
                    "{u}: fetched {}; last kill before the second: {} at {:.3}s",
                    fetches.join(", "),
                    k.name,
                    (k.at_us - t0) as f64 / 1e6
                ),
                None => format!("{u}: fetched {}; no kill before", fetches.join(", ")),
            }
        })
        .collect();
    assert!(
        twice.len() <= bound_urls.len() && unexplained.is_empty(),
        "fetched twice {} (bound {}), not attributable to a kill:\n{}",
        twice.len(),
        bound_urls.len(),
        explain.join("\n")
    );
    assert!(
        cut_violations.is_empty(),
        "politeness after requests cut by a kill:\n{}",
        cut_violations.join("\n")
    );
    judged.assert_polite();
}

/// One kill -9 of the whole process tree.
#[derive(Debug, Clone, Copy)]
struct TreeKill {
    at_us: u64,
    /// Processes signalled (`polycrawl crawl` and its children).
    processes: usize,
}

/// Kills `polycrawl crawl` and every child it lists, all at once (SIGKILL to each,
/// children first, in one loop), then waits until none is left. Returns the kill.
fn kill_tree(crawl: &mut ProcessGuard, out: &Path) -> TreeKill {
    let crawl_pid = crawl.pid();
    let mut pids: Vec<u32> = read_pids(out).into_iter().map(|(_, p)| p).collect();
    pids.extend(children_by_environment(crawl_pid));
    pids.sort_unstable();
    pids.dedup();
    pids.push(crawl_pid);
    let at_us = now_us();
    let processes = pids
        .iter()
        .filter(|p| {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(**p as i32),
                nix::sys::signal::Signal::SIGKILL,
            )
            .is_ok()
        })
        .count();
    assert!(
        crawl.wait_exit(Duration::from_secs(5)).unwrap().is_some(),
        "polycrawl crawl survived SIGKILL"
    );
    test_support::wait::until(
        "the killed tree to be gone",
        Duration::from_secs(30),
        || children_by_environment(crawl_pid).is_empty(),
    );
    // The killed run cannot rewrite it; the next run writes its own.
    let _ = std::fs::remove_file(out.join("pids"));
    TreeKill { at_us, processes }
}

/// Issue 38, item 1: `polycrawl crawl` (manager, resolver, two downloaders and the
/// application) is killed with SIGKILL as a whole, every process at once, like a
/// machine that loses power, at least 10 times at moments drawn at
/// random, and each time the same command resumes the crawl. The last run ends
/// by itself, and against websim's manifest and request log:
///
/// - every status-200 page of the manifest is in the repository (100 % coverage,
///   no URL lost: before the fix, the pages reported `Stored` but not yet in a
///   published batch died with their downloader, their queue keys deleted);
/// - each URL fetched more than once had its first fetch in flight at a kill
///   (requested before it, and ended less than a batch age plus a margin before
///   it: reported and not committed), or was requested again by the application
///   after a kill (a generation it published but had not recorded): so the
///   refetches are at most the jobs in flight at the kills. The test prints both
///   figures.
#[test]
fn kill_9_of_the_whole_tree_at_random_moments_loses_no_url() {
    const TREE_KILLS: usize = 10;
    const DOWNLOADERS: usize = 2;
    let ws = Websim::start(&[
        "--hosts",
        "40",
        "--pages",
        "2500",
        "--size-skew",
        "0.5",
        "--slow-ms",
        "50",
    ]);
    let manifest = ws.manifest();
    let expected: BTreeSet<String> = manifest
        .iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url.clone())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    // Slow enough that ten runs of a few seconds each leave the crawl unfinished.
    let knobs = Knobs {
        interval_ms: 50,
        ip_min_interval_ms: 20,
        target_pages_per_sec: 60.0,
        max_crawl_delay_ms: 100,
        downloader_concurrency: 16,
        min_connections: 16,
        max_connections: 16,
        ..Knobs::default()
    };
    let config = crawl_config(&ws, &knobs, dir.path());
    let out = dir.path().join("out");
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| now_us() | 1);
    println!("supervise: tree-kill seed {seed} (CHAOS_SEED={seed} replays the kill moments)");
    let mut rng = Rng(seed);
    let started = Instant::now();
    let extra = ["--downloaders", &DOWNLOADERS.to_string()];
    let mut kills: Vec<TreeKill> = Vec::new();
    let mut stored_at_kills: Vec<usize> = Vec::new();
    let mut crawl = start_crawl(&ws, &config, dir.path(), &extra);
    while kills.len() < TREE_KILLS {
        // Every process started (or the run ended: the web was too small).
        wait_pids(&out, 3 + DOWNLOADERS, &mut crawl);
        // A moment drawn in the next 0.2-3 s of the run.
        let at = Instant::now() + Duration::from_millis(200 + rng.below(2801) as u64);
        while Instant::now() < at {
            if let Some(status) = crawl.wait_exit(Duration::from_millis(20)).unwrap() {
                panic!(
                    "the crawl ended ({status}) after {} kills: make the web larger",
                    kills.len()
                );
            }
        }
        kills.push(kill_tree(&mut crawl, &out));
        stored_at_kills.push(ws.log().iter().filter(|l| !l.is_robots()).count());
        crawl = start_crawl(&ws, &config, dir.path(), &extra);
    }
    let status = crawl.wait_exit(Duration::from_secs(240)).unwrap();
    let Some(status) = status else {
        panic!("{}", crawl.report("the last run did not end in 240 s"));
    };
    assert!(status.success(), "{}", crawl.report("the last run failed"));
    let took = started.elapsed();

    // Coverage against the manifest: every status-200 page is in the repository.
    let scan = RepoScan::read(&out.join("repository")).unwrap_or_else(|e| panic!("{e}"));
    let lost: Vec<&String> = expected
        .iter()
        .filter(|u| !scan.ok_urls.contains(*u))
        .collect();

    // Refetches against websim's log: each attributable to a kill.
    let log: Vec<LogLine> = ws.log();
    let mut pages: HashMap<String, Vec<&LogLine>> = HashMap::new();
    for l in log.iter().filter(|l| !l.is_robots()) {
        pages.entry(l.url()).or_default().push(l);
    }
    // In flight at a kill: started before it (or just after: the request may
    // already be in websim's socket) and not ended, or ended so recently that its
    // batch may not have been published and its `Committed` taken.
    let window_us = (BATCH_AGE_MS + 700) * 1000;
    let slack_us = 500_000;
    let in_flight = |l: &LogLine, k: &TreeKill| {
        l.start_us <= k.at_us + slack_us && l.end_us + window_us >= k.at_us
    };
    // The application, killed between publishing a generation of request files
    // and recording it, publishes those URLs again after its restart (see the
    // chaos test): a URL first requested after its last record before a kill.
    let records = app_records(&out.join("logs").join("app.log"));
    let republished = |l: &LogLine, k: &TreeKill| {
        let last = records
            .iter()
            .rev()
            .find(|t| **t <= k.at_us)
            .copied()
            .unwrap_or(0);
        l.start_us >= last
    };
    let mut bound: BTreeSet<&String> = BTreeSet::new();
    for (url, ls) in &pages {
        if ls.iter().any(|l| kills.iter().any(|k| in_flight(l, k))) {
            bound.insert(url);
        }
    }
    let twice: Vec<&String> = pages
        .iter()
        .filter(|(_, ls)| ls.len() > 1)
        .map(|(u, _)| u)
        .collect();
    let first = |u: &String| {
        *pages[u]
            .iter()
            .min_by_key(|l| l.start_us)
            .expect("a request")
    };
    let (by_kill, rest): (Vec<&String>, Vec<&String>) = twice
        .iter()
        .copied()
        .partition(|u| kills.iter().any(|k| in_flight(first(u), k)));
    let (by_app, unexplained): (Vec<&String>, Vec<&String>) = rest
        .into_iter()
        .partition(|u| kills.iter().any(|k| republished(first(u), k)));
    // The manager's own account of the restarts: records of pages awaiting their
    // commit read back at each open (a page killed again before its wait ended is
    // read back again at the next), and those no downloader claimed in time
    // (queued again).
    let manager_log =
        std::fs::read_to_string(out.join("logs").join("manager.log")).unwrap_or_default();
    let count_of = |what: &str| -> u64 {
        manager_log
            .lines()
            .filter(|l| l.contains(what))
            .filter_map(|l| {
                l.split("pages=")
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum()
    };
    let restored = count_of("waiting for their downloaders' commits");
    let requeued = count_of("never committed by a downloader: queued again");
    let t0 = kills.first().map_or(0, |k| k.at_us);
    let moments: Vec<String> = kills
        .iter()
        .zip(&stored_at_kills)
        .map(|(k, n)| {
            format!(
                "{:.1}s ({} processes, {n} page requests)",
                (k.at_us - t0) as f64 / 1e6,
                k.processes
            )
        })
        .collect();
    println!(
        "tree kill: seed {seed}; {} kills of the whole tree at {}; crawl took {:.1} s; \
         {} of {} status-200 pages stored (lost {}); {} page URLs requested, {} requests; \
         fetched twice {} (in flight at a kill {}, bound {}; requested again by the \
         application {}; unexplained {}); the manager read back {restored} records of \
         pages awaiting their commit over the restarts and queued {requeued} pages again",
        kills.len(),
        moments.join(", "),
        took.as_secs_f64(),
        expected.len() - lost.len(),
        expected.len(),
        lost.len(),
        pages.len(),
        log.len(),
        twice.len(),
        by_kill.len(),
        bound.len(),
        by_app.len(),
        unexplained.len(),
    );
    assert!(
        lost.is_empty(),
        "{} pages lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    assert!(
        by_kill.len() <= bound.len() && unexplained.is_empty(),
        "fetched twice and not in flight at a kill: {:?}",
        &unexplained[..unexplained.len().min(10)]
    );
}
