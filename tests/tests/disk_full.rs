//! Disk full (issue 11): the spool and the repository live on a small tmpfs that
//! the test fills up mid-crawl with a ballast file. Every component that must
//! write there pauses (a `full at PATH: pausing` log line, and its state on the
//! admin page's `GET /api/stats`), nothing stops, and once the test deletes the
//! ballast the crawl resumes by itself and ends with every status-200 page of
//! websim's manifest stored, no page URL fetched twice, nothing of `never.txt`
//! requested, every WARC file readable and no ERROR line.
//!
//! The tmpfs is mounted in a private mount namespace of the test's own thread
//! (`unshare(CLONE_NEWNS)`, root propagation made private first), so only the test
//! and the processes it starts see it; [`Jail`]'s drop unmounts it, and it would
//! vanish with the namespace anyway. The test needs root (CAP_SYS_ADMIN), as on
//! CI: without it, it fails with the reason.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, unshare};
use serde_json::Value;
use tests::process::ProcessGuard;
use tests::repository::RepoScan;
use tests::system::{Knobs, System};
use tests::websim::{LogLine, Websim};

const APP_ID: &str = "bfs-1";
/// Size of the file system holding the spool and the repository.
const JAIL_MIB: u64 = 48;
/// Pages stored (the manager's count) before the file system is filled up.
const FILL_AFTER_PAGES: u64 = 250;
/// Time to reach [`FILL_AFTER_PAGES`], to see the pause, and to finish.
const PHASE: Duration = Duration::from_secs(90);

/// A tmpfs of [`JAIL_MIB`] MiB mounted on a temporary folder, seen only by this
/// thread and its children; unmounted on drop.
struct Jail {
    dir: tempfile::TempDir,
}

impl Jail {
    /// # Panics
    /// With the reason, if the namespace or the mount cannot be made (not root?).
    fn new() -> Jail {
        let why = "the disk-full test needs root (CAP_SYS_ADMIN) for a private tmpfs";
        unshare(CloneFlags::CLONE_NEWNS)
            .unwrap_or_else(|e| panic!("unshare(CLONE_NEWNS): {e}: {why}"));
        // Nothing mounted here may propagate to the machine's namespace.
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .unwrap_or_else(|e| panic!("making / private in the new namespace: {e}: {why}"));
        let dir = tempfile::tempdir().expect("a temporary directory");
        let options = format!("size={JAIL_MIB}m,mode=0755");
        mount(
            Some("tmpfs"),
            dir.path(),
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(options.as_str()),
        )
        .unwrap_or_else(|e| panic!("mount -t tmpfs on {}: {e}: {why}", dir.path().display()));
        Jail { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Jail {
    fn drop(&mut self) {
        if let Err(e) = umount2(self.dir.path(), MntFlags::MNT_DETACH) {
            eprintln!("cannot unmount {}: {e}", self.dir.path().display());
        }
    }
}

/// Fills the file system of `path` (a new file) until a write fails with ENOSPC;
/// returns the bytes written.
fn fill(path: &Path) -> u64 {
    let mut f = File::create(path).expect("creating the ballast file");
    let mut written = 0u64;
    for chunk in [1 << 20, 4096, 512] {
        let buf = vec![0xA5u8; chunk];
        loop {
            match f.write(&buf) {
                Ok(0) => break,
                Ok(n) => written += n as u64,
                Err(e) if e.raw_os_error() == Some(nix::libc::ENOSPC) => break,
                Err(e) => panic!("writing the ballast: {e}"),
            }
        }
    }
    written
}

/// `app:` settings: frequent scans, small request files (many publications).
fn app_section(seeds: &Path, state: &Path, repo: &Path) -> String {
    format!(
        r#"    app: (
        state_dir: {state:?},
        repository_dir: {repo:?},
        seeds_file: Some({seeds:?}),
        scope: open,
        allowed_domains: [],
        urls_per_request_file: 100,
        scan_interval_ms: 200,
        idle_check_ms: 500,
    ),
"#,
        state = state.display().to_string(),
        repo = repo.display().to_string(),
        seeds = seeds.display().to_string(),
    )
}

fn start_app(sys: &System, ws: &Websim, state: &Path, repo: &Path) -> ProcessGuard {
    let cmd = sys.app_command(APP_ID, state, repo, &ws.path("seeds"));
    ProcessGuard::spawn("app", cmd, sys.dir()).expect("starting polycrawl app")
}

/// `GET /api/stats` as JSON.
fn stats(sys: &System) -> Value {
    let r = sys.api("GET", "/api/stats", "", false);
    assert_eq!(r.status, 200, "stats: {}", r.text());
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("stats: {e}: {}", r.text()))
}

/// Who the admin page shows paused: `role id path`, the manager as `manager`.
fn paused(s: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = s["pause"].as_object() {
        out.push(format!("manager {}", p["path"]));
    }
    for c in s["components"].as_array().into_iter().flatten() {
        let p = &c["state"]["pause"];
        if !p.is_null() {
            assert_eq!(p["reason"], "disk_full", "{c}");
            out.push(format!("{} {} {}", c["role"], c["id"], p["path"]));
        }
    }
    out
}

/// The `full at PATH: pausing` and `resumed` lines of the stderr files in `dir`.
fn pause_lines(dir: &Path) -> (Vec<String>, Vec<String>) {
    let (mut pausing, mut resumed) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(dir).expect("listing the test folder") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "stderr") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines() {
            if line.contains(" full at ") && line.contains("pausing") {
                pausing.push(line.to_owned());
            } else if line.contains("resumed") && line.contains("room again") {
                resumed.push(line.to_owned());
            }
        }
    }
    (pausing, resumed)
}

/// The processes (by stderr file, `<name>.stderr` in `dir`) that logged a
/// `full at PATH: pausing` line.
fn paused_logs(dir: &Path) -> HashSet<String> {
    let mut out = HashSet::new();
    for entry in std::fs::read_dir(dir).expect("listing the test folder") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "stderr") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text
            .lines()
            .any(|l| l.contains(" full at ") && l.contains("pausing"))
        {
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            out.extend(name);
        }
    }
    out
}

fn log_url(l: &LogLine) -> String {
    format!("{}://{}{}", l.scheme, l.host.to_ascii_lowercase(), l.target)
}

/// Files left in the `.tmp/` folders under `dir` (partial files never published).
fn temp_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                stack.push(path);
            } else if d.file_name().is_some_and(|n| n == ".tmp") {
                out.push(path);
            }
        }
    }
    Ok(out)
}

#[test]
fn a_full_spool_and_repository_pause_the_crawl_and_it_resumes_losing_nothing() {
    // Declared first, dropped last: after every process is gone.
    let jail = Jail::new();
    let started = Instant::now();
    let ws = Websim::start(&[
        "--hosts",
        "40",
        "--pages",
        "1200",
        "--seed",
        "11",
        "--slow-ms",
        "200",
    ]);
    let knobs = Knobs {
        interval_ms: 50,
        ip_min_interval_ms: 25,
        ..Knobs::default()
    };
    let mut sys = System::new(&ws, &knobs);
    sys.spool = jail.path().join("spool");
    std::fs::create_dir_all(&sys.spool).expect("spool on the tmpfs");
    let repo = jail.path().join("repository");
    let state = sys.dir().join("app-state");
    let config = knobs.config(&ws, sys.admin_token()).replacen(
        "(\n",
        &format!("(\n{}", app_section(&ws.path("seeds"), &state, &repo)),
        1,
    );
    std::fs::write(&sys.config, config).expect("writing the config");

    sys.start_manager();
    sys.start_resolver();
    sys.start_downloader("dl-1");
    sys.start_downloader("dl-2");
    sys.wait_components(2, 1, Duration::from_secs(30));
    let mut app = start_app(&sys, &ws, &state, &repo);
    let running = |app: &mut ProcessGuard, sys: &System, what: &str| {
        if let Some(status) = app.wait_exit(Duration::ZERO).expect("app status") {
            panic!(
                "{}\n{}",
                app.report(&format!("exited ({status}) {what}")),
                sys.reports()
            );
        }
    };

    // 1. Crawl until some pages are stored, then fill the file system.
    let stored = test_support::wait::poll_every(PHASE, Duration::from_millis(50), || {
        running(
            &mut app,
            &sys,
            "before the disk was filled: raise the web's size",
        );
        (stats(&sys)["pages_total"].as_u64().unwrap_or(0) >= FILL_AFTER_PAGES).then_some(())
    });
    assert!(
        stored.is_some(),
        "{FILL_AFTER_PAGES} pages not stored within {PHASE:?}\n{}",
        sys.reports()
    );
    let ballast = jail.path().join("ballast");
    let filled_at = started.elapsed();
    let ballast_bytes = fill(&ballast);
    let stored_at_fill = stats(&sys)["pages_total"].as_u64().unwrap_or(0);

    // 2. The crawl pauses and says so: a downloader at least (it writes pages
    //    all the time), on the admin page and in its log.
    let mut seen_paused: HashSet<String> = HashSet::new();
    let mut last = (Vec::new(), Vec::new());
    let shown = test_support::wait::poll_every(PHASE, Duration::from_millis(100), || {
        running(&mut app, &sys, "while the disk was full");
        let now = paused(&stats(&sys));
        seen_paused.extend(now.iter().cloned());
        let (pausing, _) = pause_lines(sys.dir());
        let downloader_paused = now.iter().any(|p| p.starts_with("\"downloader\""));
        let shown = downloader_paused && !pausing.is_empty();
        last = (now, pausing);
        shown.then_some(())
    });
    let (now, pausing) = last;
    assert!(
        shown.is_some(),
        "no downloader shown paused within {PHASE:?} of filling the disk \
         (admin page: {now:?}; log: {pausing:?})\n{}",
        sys.reports()
    );
    // Let every other component that writes there run into the full disk too: the
    // disk stays full until each writer has logged its pause (the app's request
    // files, the manager's outcome files), 1.5 s at most (not judged: one with
    // nothing to write meanwhile never pauses).
    let writers = ["app", "dl-1", "dl-2", "manager-1"];
    test_support::wait::poll_every(
        Duration::from_millis(1500),
        Duration::from_millis(100),
        || {
            let logged = paused_logs(sys.dir());
            writers.iter().all(|w| logged.contains(*w)).then_some(())
        },
    );
    seen_paused.extend(paused(&stats(&sys)));
    let paused_at = started.elapsed();

    // 3. Free the space: the crawl resumes by itself and completes.
    std::fs::remove_file(&ballast).expect("deleting the ballast");
    let freed_at = started.elapsed();
    let status = app.wait_exit(PHASE).expect("waiting for the app");
    let Some(status) = status else {
        panic!(
            "{}\n{}",
            app.report(&format!("not complete {PHASE:?} after space was freed")),
            sys.reports()
        );
    };
    assert!(
        status.success(),
        "{}\n{}",
        app.report(&format!("exited {status}")),
        sys.reports()
    );
    let done_at = started.elapsed();
    let still_paused = paused(&stats(&sys));
    let (pausing, resumed) = pause_lines(sys.dir());

    // 4. The oracle.
    let log = ws.flushed_log();
    let scan = RepoScan::read(&repo).unwrap_or_else(|e| panic!("a WARC file is damaged: {e}"));
    let expected: HashSet<String> = ws
        .manifest()
        .into_iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url)
        .collect();
    let missing: Vec<&String> = expected
        .iter()
        .filter(|u| !scan.ok_urls.contains(*u))
        .collect();
    let never: HashSet<String> = ws.never().into_iter().collect();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for l in log.iter().filter(|l| !l.is_robots()) {
        *counts.entry(log_url(l)).or_default() += 1;
    }
    let twice: Vec<(&String, &usize)> = counts.iter().filter(|(_, n)| **n > 1).collect();
    let never_fetched: Vec<&String> = counts.keys().filter(|u| never.contains(*u)).collect();
    let leftovers = temp_files(&repo).expect("listing the repository");
    eprintln!(
        "disk full: tmpfs {JAIL_MIB} MiB; filled at {filled_at:?} with {ballast_bytes} bytes \
         of ballast ({stored_at_fill} pages stored); paused seen by {paused_at:?}: \
         {seen_paused:?}; freed at {freed_at:?}; crawl done at {done_at:?}\n\
         log: {} pausing lines, {} resumed lines, e.g. {:?}\n\
         coverage {}/{}, repository {} files {} responses, page URLs fetched twice {}, \
         never.txt fetched {}",
        pausing.len(),
        resumed.len(),
        pausing.first(),
        expected.len() - missing.len(),
        expected.len(),
        scan.files,
        scan.responses,
        twice.len(),
        never_fetched.len(),
    );
    assert!(
        missing.is_empty(),
        "{} of {} status-200 URLs not stored, e.g. {:?}\n{}",
        missing.len(),
        expected.len(),
        missing.iter().take(10).collect::<Vec<_>>(),
        app.report("exited")
    );
    assert!(twice.is_empty(), "page URLs fetched twice: {twice:?}");
    assert!(
        never_fetched.is_empty(),
        "never.txt URLs requested: {never_fetched:?}"
    );
    assert!(
        still_paused.is_empty(),
        "still shown paused after the crawl: {still_paused:?}"
    );
    assert!(
        !resumed.is_empty(),
        "no `resumed` line although {} components paused",
        pausing.len()
    );
    assert!(
        leftovers.is_empty(),
        "temp files left in the repository: {leftovers:?}"
    );
    let mut errors = sys.error_lines();
    errors.extend(
        app.stderr()
            .lines()
            .filter(|l| l.contains(" ERROR "))
            .map(|l| format!("app: {l}")),
    );
    assert!(errors.is_empty(), "ERROR lines:\n{}", errors.join("\n"));
    // Every process is gone before the tmpfs is unmounted.
    drop(app);
    drop(sys);
    drop(jail);
}
