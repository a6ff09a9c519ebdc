//! The distributed crawler on many "machines" (issue 10, Done-when 4): every
//! machine is a network namespace with its own address on a bridge
//! (`tests::netns`), and sees the shared spool only through its own NFS stand-in
//! mount (`tests::nfsim`: new entries and attributes from other machines visible
//! only after [`DELAY_MS`], no change events across mounts), with inotify off in
//! every process (`spool.notify: false`: the periodic scans find the files).
//!
//! Layout (2 crawling systems, 4 application parts, Polybot Figure 3):
//!
//! | machine | processes |
//! |---|---|
//! | `mgr0`, `mgr1` | the manager and the resolver of system 0 / 1 |
//! | `dl0`, `dl1` | the downloader of system 0 / 1 |
//! | `app0` | parts 0 and 2 (served by system 0) |
//! | `app1` | parts 1 and 3 (served by system 1) |
//!
//! Everyone talks TCP to its manager at the manager's namespace address (never
//! 127.0.0.1); websim (hosts and DNS on 127.x of the root namespace, DNS not on
//! 127.0.0.1) is reached from the namespaces through the bridge. The export (the
//! backing directory) holds each system's spool (`spool-s0`, `spool-s1`); the parts
//! exchange URLs through `spool-s0`. Manager and application state and the
//! repositories are local to their machine (plain directories, as on real machines).
//!
//! - [`crawl_on_six_machines_is_exact_and_polite`]: the crawl completes with every
//!   status-200 page of websim's manifest stored by exactly one part, no URL
//!   fetched twice, nothing robots.txt forbids fetched, no per-host interval
//!   broken (judged on the downloaders' wire stamps, cross-checked with websim's
//!   log: `tests::politeness`), and no process holding an inotify instance;
//! - [`a_machine_killed_mid_crawl_loses_nothing`]: kill -9 of every process of
//!   system 1's manager machine (manager and resolver) once a third of the pages
//!   are stored, then starting them again on the same address and state: the
//!   crawl still completes with every page stored by exactly one part, URLs
//!   fetched twice no more than the jobs that can be in flight
//!   ([`Knobs::jobs_bound`]), nothing forbidden fetched;
//! - [`demo_on_machines_places_crawls_and_cleans_up`]: `polycrawl demo --machines`
//!   makes the same layout, says which process runs on which machine, crawls
//!   exactly (judged on the parts' WARC files and websim's log by
//!   `tests::grade`, not only on the demo's own lines), and leaves no namespace
//!   or mount behind; the next demo after one killed with SIGKILL removes what
//!   it left and crawls exactly, judged the same way.
//!
//! No test here skips: where namespaces or FUSE cannot be used it fails and says
//! why (the CI machines can use both). Everything it makes is undone on drop, in
//! order, also when it fails: processes (by pid), then the mounts, then the
//! namespaces and the bridge.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tests::bin;
use tests::netns::{self, Net, Ns};
use tests::nfsim::{self, Mount};
use tests::politeness;
use tests::process::ProcessGuard;
use tests::repository::RepoScan;
use tests::requestlog;
use tests::system::{Knobs, MANAGER_READY};
use tests::websim::{HostRow, Websim};

/// The NFS stand-in's visibility delay (attribute caching) on every mount.
const DELAY_MS: u64 = 1000;
/// Application parts.
const PARTS: u32 = 4;
/// Crawling systems.
const SYSTEMS: u32 = 2;
/// Ample time for the small web below on 2 busy cores; the crawl ends well before.
const CRAWL_TIMEOUT: Duration = Duration::from_secs(200);
/// The applications' `idle_check_ms`: a file published on one machine may take the
/// visibility delay plus a scan to show on another.
const IDLE_CHECK_MS: u64 = 3 * DELAY_MS;

/// The namespaces made per test run share one bridge named after the pid: one
/// cluster at a time per test process.
static SERIAL: Mutex<()> = Mutex::new(());

/// A small web (about 900 pages on 30 hosts, sizes flattened so that no host
/// bounds the crawl), its DNS on a 127.x address other than 127.0.0.1 (which is
/// each namespace's own).
fn start_websim() -> Websim {
    Websim::start(&[
        "--hosts",
        "30",
        "--pages",
        "900",
        "--size-skew",
        "0.3",
        "--slow-ms",
        "50",
        "--seed",
        "5",
        "--dns-addr",
        "127.0.53.1:0",
    ])
}

/// The politeness settings of both systems.
fn knobs() -> Knobs {
    Knobs {
        interval_ms: 100,
        downloader_concurrency: 16,
        min_connections: 16,
        max_connections: 16,
        ..Knobs::default()
    }
}

/// The config every process reads: [`Knobs::config`] with inotify off, the
/// admin page off, the downloaders' wire log, and the application's timers.
fn config_text(ws: &Websim, knobs: &Knobs, wire_log: &Path) -> String {
    let text = knobs.config(ws, "admin-secret-for-tests");
    let text = text.replacen("spool: (notify: true),", "spool: (notify: false),", 1);
    assert!(text.contains("notify: false"), "{text}");
    let text = text.replacen(r#"admin_http: "127.0.0.1:0","#, r#"admin_http: "","#, 1);
    assert!(text.contains(r#"admin_http: "","#), "{text}");
    text.replacen(
        "downloader: (",
        &format!(
            "downloader: (\n        wire_log: Some({:?}),",
            wire_log.display().to_string()
        ),
        1,
    )
    .replacen(
        "manager: (",
        &format!(
            "app: (\n        scope: open,\n        scan_interval_ms: 200,\n        idle_check_ms: {IDLE_CHECK_MS},\n        \
             urls_per_request_file: 500,\n        parts: {PARTS},\n    ),\n    \
             manager: ("
        ),
        1,
    )
}

/// One process of the cluster: the machine it runs on and how to start it again.
#[derive(Debug)]
struct Proc {
    name: String,
    machine: usize,
    args: Vec<OsString>,
    guard: Option<ProcessGuard>,
}

/// A machine: its namespace and its view of the export.
#[derive(Debug)]
struct Machine {
    ns: Ns,
    mount: Mount,
}

/// The cluster. Fields drop in order: processes, then mounts, then namespaces.
#[derive(Debug)]
struct Cluster {
    procs: Vec<Proc>,
    machines: Vec<Machine>,
    /// Held, not read: removes the namespaces and the bridge when the cluster drops.
    _net: Net,
    token: String,
    config: PathBuf,
    local: PathBuf,
    logs: PathBuf,
    seeds: PathBuf,
    manager_addrs: Vec<String>,
    /// Holds every file of the run; removed last.
    _dir: tempfile::TempDir,
}

/// Fails the test with the reason when namespaces or FUSE cannot be used.
fn require_namespaces_and_fuse() {
    if let Some(why) = netns::unusable() {
        panic!("the multi-machine test needs network namespaces: {why}");
    }
    if let Some(why) = nfsim::unusable() {
        panic!("the multi-machine test needs FUSE for the NFS stand-in: {why}");
    }
}

impl Cluster {
    /// Makes the machines (namespaces and mounts) and the config; starts no
    /// crawler process yet.
    fn new(ws: &Websim, knobs: &Knobs) -> Cluster {
        require_namespaces_and_fuse();
        let mut dir = tempfile::tempdir().expect("a temporary directory");
        if std::env::var_os("POLYCRAWL_KEEP").is_some() {
            dir.disable_cleanup(true);
            eprintln!("keeping {}", dir.path().display());
        }
        let export = dir.path().join("export");
        for s in 0..SYSTEMS {
            std::fs::create_dir_all(export.join(format!("spool-s{s}"))).expect("spool dir");
        }
        let logs = dir.path().join("logs");
        let local = dir.path().join("local");
        std::fs::create_dir_all(&logs).expect("logs dir");
        let config = dir.path().join("config.ron");
        let wire_log = logs.join("wire.tsv");
        std::fs::write(&config, config_text(ws, knobs, &wire_log)).expect("writing the config");
        let mut net = Net::new("pct").expect("the machines' bridge");
        let mut machines = Vec::new();
        for role in ["mgr0", "dl0", "mgr1", "dl1", "app0", "app1"] {
            let ns = net.add(role).expect("a machine's namespace");
            let mount = Mount::start(
                &bin::polycrawl(),
                &format!("nfsim-{role}"),
                &export,
                &dir.path().join("mnt").join(role),
                DELAY_MS,
                &[],
                &logs,
            );
            machines.push(Machine { ns, mount });
        }
        Cluster {
            procs: Vec::new(),
            machines,
            _net: net,
            token: "control-token-for-tests".to_owned(),
            config,
            local,
            logs,
            seeds: ws.path("seeds"),
            manager_addrs: Vec::new(),
            _dir: dir,
        }
    }

    fn machine(&self, role: &str) -> usize {
        self.machines
            .iter()
            .position(|m| m.ns.role == role)
            .unwrap_or_else(|| panic!("no machine {role}"))
    }

    /// System `s`'s spool as machine `m` sees it.
    fn spool(&self, m: usize, s: u32) -> PathBuf {
        self.machines[m].mount.dir().join(format!("spool-s{s}"))
    }

    /// A directory local to machine `m`.
    fn local(&self, m: usize, what: &str) -> PathBuf {
        self.local.join(&self.machines[m].ns.role).join(what)
    }

    fn spawn(&mut self, i: usize) {
        let p = &self.procs[i];
        let ns = &self.machines[p.machine].ns;
        let mut cmd = ns.command(bin::polycrawl());
        cmd.args(&p.args)
            .env("POLYCRAWL_TOKEN", &self.token)
            .env_remove("POLYCRAWL_ADMIN_TOKEN")
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info");
        let guard = ProcessGuard::spawn(&p.name, cmd, &self.logs)
            .unwrap_or_else(|e| panic!("starting {}: {e}", p.name));
        self.procs[i].guard = Some(guard);
    }

    /// Adds process `name` on machine `m` running `polycrawl ARGS --config C`
    /// and starts it.
    fn add(&mut self, name: &str, m: usize, args: Vec<OsString>) -> usize {
        let mut all: Vec<OsString> = args;
        all.insert(1, "--config".into());
        all.insert(2, self.config.clone().into());
        self.procs.push(Proc {
            name: name.to_owned(),
            machine: m,
            args: all,
            guard: None,
        });
        let i = self.procs.len() - 1;
        self.spawn(i);
        i
    }

    /// Waits for manager `i`'s `manager listening addr=` line; its address.
    fn manager_ready(&mut self, i: usize) -> String {
        let p = self.procs[i].guard.as_mut().expect("started");
        let line = p
            .wait_for_line(|l| l.starts_with("manager listening "), MANAGER_READY)
            .unwrap_or_else(|report| panic!("{report}"));
        tests::websim::parse_ready(&line)
            .get("addr")
            .cloned()
            .unwrap_or_else(|| panic!("no addr= in {line:?}"))
    }

    /// Starts every crawler process: managers (listening on their namespace's
    /// address), resolvers, downloaders, then the parts.
    fn start(&mut self) {
        for s in 0..SYSTEMS {
            let m = self.machine(&format!("mgr{s}"));
            let addr = self.machines[m].ns.addr;
            let args = vec![
                "manager".into(),
                "--listen".into(),
                format!("{addr}:0").into(),
                "--state".into(),
                self.local(m, "manager").into(),
                "--spool".into(),
                self.spool(m, s).into(),
            ];
            let i = self.add(&format!("manager-s{s}"), m, args);
            let listening = self.manager_ready(i);
            assert!(
                listening.starts_with(&format!("{addr}:")),
                "manager {s} listens on {listening}, not on its machine's address {addr}"
            );
            // A restart listens on the same port.
            let listen = self.procs[i]
                .args
                .iter()
                .position(|a| a == "--listen")
                .expect("--listen");
            self.procs[i].args[listen + 1] = listening.clone().into();
            self.manager_addrs.push(listening);
        }
        for s in 0..SYSTEMS {
            let m = self.machine(&format!("mgr{s}"));
            let args = vec![
                "resolver".into(),
                "--manager".into(),
                self.manager_addrs[s as usize].clone().into(),
                "--id".into(),
                format!("res-s{s}").into(),
            ];
            self.add(&format!("resolver-s{s}"), m, args);
        }
        for s in 0..SYSTEMS {
            let m = self.machine(&format!("dl{s}"));
            let args = vec![
                "downloader".into(),
                "--manager".into(),
                self.manager_addrs[s as usize].clone().into(),
                "--id".into(),
                format!("dl-s{s}").into(),
                "--spool".into(),
                self.spool(m, s).into(),
            ];
            self.add(&format!("dl-s{s}"), m, args);
        }
        for part in 0..PARTS {
            let s = part % SYSTEMS;
            let m = self.machine(&format!("app{s}"));
            let args = vec![
                "app".into(),
                "--manager".into(),
                self.manager_addrs[s as usize].clone().into(),
                "--app".into(),
                format!("bfs-p{part}").into(),
                "--part".into(),
                part.to_string().into(),
                "--parts".into(),
                PARTS.to_string().into(),
                "--mode".into(),
                "exchange".into(),
                "--spool".into(),
                self.spool(m, s).into(),
                "--exchange-root".into(),
                self.spool(m, 0).into(),
                "--state".into(),
                self.local(m, &format!("app-p{part}")).into(),
                "--repo".into(),
                self.local(m, &format!("repo-p{part}")).into(),
                "--seeds".into(),
                self.seeds.clone().into(),
            ];
            self.add(&format!("app-p{part}"), m, args);
        }
    }

    fn parts(&self) -> impl Iterator<Item = &Proc> {
        self.procs.iter().filter(|p| p.name.starts_with("app-p"))
    }

    /// Pages stored so far over all parts (their progress files).
    fn pages_stored(&self) -> u64 {
        self.parts()
            .filter_map(|p| {
                let state = self.local(p.machine, &p.name);
                std::fs::read_to_string(state.join("progress")).ok()
            })
            .filter_map(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("pages_stored=")?.parse::<u64>().ok())
            })
            .sum()
    }

    /// The parts' repositories.
    fn repositories(&self) -> Vec<PathBuf> {
        self.parts()
            .map(|p| self.local(p.machine, &p.name.replace("app-", "repo-")))
            .collect()
    }

    /// kill -9 of every process on machine `role`; their names.
    fn kill_machine(&mut self, role: &str) -> Vec<String> {
        let m = self.machine(role);
        let mut killed = Vec::new();
        for p in self.procs.iter_mut().filter(|p| p.machine == m) {
            if let Some(g) = p.guard.take() {
                let stderr = g.stderr();
                drop(g); // SIGKILL by pid and reap.
                std::fs::write(self.logs.join(format!("{}.killed.stderr", p.name)), stderr)
                    .expect("keeping the killed process's log");
                killed.push(p.name.clone());
            }
        }
        killed
    }

    /// [`Cluster::kill_machine`] of a manager's machine, then waits until every
    /// running client of the managers there has logged that it lost the manager
    /// connection: the outage as they live it, before the test starts the machine
    /// again.
    fn kill_machine_and_wait_lost(&mut self, role: &str) -> Vec<String> {
        const LOST: &str = "lost the manager connection";
        let m = self.machine(role);
        let addrs: Vec<OsString> = self
            .procs
            .iter()
            .filter(|p| p.machine == m)
            .filter_map(|p| p.name.strip_prefix("manager-s")?.parse::<usize>().ok())
            .map(|s| self.manager_addrs[s].clone().into())
            .collect();
        let clients: Vec<usize> = (0..self.procs.len())
            .filter(|&i| {
                let p = &self.procs[i];
                p.machine != m && p.guard.is_some() && p.args.iter().any(|a| addrs.contains(a))
            })
            .collect();
        let lost = |c: &Cluster, i: usize| {
            c.procs[i]
                .guard
                .as_ref()
                .map_or(0, |g| g.stderr().matches(LOST).count())
        };
        let before: Vec<usize> = clients.iter().map(|&i| lost(self, i)).collect();
        let killed = self.kill_machine(role);
        let noticed = test_support::wait::poll_every(
            Duration::from_secs(30),
            Duration::from_millis(20),
            || {
                let all = clients
                    .iter()
                    .zip(&before)
                    .all(|(&i, b)| lost(self, i) > *b);
                all.then_some(())
            },
        );
        assert!(
            noticed.is_some(),
            "not every client of {role}'s managers logged {LOST:?}\n{}",
            self_report(&self.logs)
        );
        killed
    }

    /// Starts the processes of machine `role` again (managers first, on their
    /// first address).
    fn restart_machine(&mut self, role: &str) {
        let m = self.machine(role);
        let mut order: Vec<usize> = (0..self.procs.len())
            .filter(|&i| self.procs[i].machine == m && self.procs[i].guard.is_none())
            .collect();
        order.sort_by_key(|&i| !self.procs[i].name.starts_with("manager"));
        for i in order {
            self.spawn(i);
            if self.procs[i].name.starts_with("manager") {
                let addr = self.manager_ready(i);
                let s: usize = self.procs[i].name["manager-s".len()..].parse().expect("s");
                assert_eq!(addr, self.manager_addrs[s], "the restarted manager moved");
            }
        }
    }

    /// Processes holding an inotify instance (`anon_inode:inotify` among their
    /// open files), by name.
    fn inotify_users(&self) -> Vec<String> {
        let mut users = Vec::new();
        for p in &self.procs {
            let Some(g) = &p.guard else { continue };
            let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", g.pid())) else {
                continue;
            };
            let uses = fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|t| t.to_string_lossy().contains("inotify"))
            });
            if uses {
                users.push(p.name.clone());
            }
        }
        users
    }

    /// Waits until every part has exited 0 with its crawl complete; calls `tick`
    /// every 200 ms meanwhile. Any other exit fails the test with the logs.
    fn wait_complete(&mut self, mut tick: impl FnMut(&mut Cluster)) -> Duration {
        let started = Instant::now();
        let complete =
            test_support::wait::poll_every(CRAWL_TIMEOUT, Duration::from_millis(200), || {
                let mut done = 0;
                for p in &mut self.procs {
                    let Some(g) = p.guard.as_mut() else { continue };
                    let Some(status) = g.wait_exit(Duration::ZERO).expect("try_wait") else {
                        continue;
                    };
                    let part = p.name.starts_with("app-p");
                    if part && status.success() {
                        done += 1;
                        continue;
                    }
                    panic!(
                        "{} exited {status} mid-crawl\n{}",
                        p.name,
                        self_report(&self.logs)
                    );
                }
                if done == PARTS as usize {
                    return Some(());
                }
                tick(self);
                None
            });
        assert!(
            complete.is_some(),
            "the crawl did not complete within {CRAWL_TIMEOUT:?} ({} pages stored)\n{}",
            self.pages_stored(),
            self_report(&self.logs)
        );
        started.elapsed()
    }

    /// The parts' summary lines (`app bfs-pI: ...`).
    fn summaries(&self) -> Vec<String> {
        self.parts()
            .map(|p| {
                let g = p.guard.as_ref().expect("running or exited");
                // The stdout reader may hold the last line for a moment.
                test_support::wait::poll_every(
                    Duration::from_secs(5),
                    Duration::from_millis(20),
                    || g.stdout().into_iter().rev().find(|l| l.starts_with("app ")),
                )
                .unwrap_or_else(|| panic!("{}", g.report("no summary")))
            })
            .collect()
    }

    /// `(machine role, address, process name, pid)` of every running process.
    fn placement(&self) -> Vec<String> {
        self.procs
            .iter()
            .filter_map(|p| {
                let ns = &self.machines[p.machine].ns;
                let pid = p.guard.as_ref()?.pid();
                Some(format!("{} {} {} pid {pid}", ns.role, ns.addr, p.name))
            })
            .collect()
    }

    /// ERROR log lines of every process, as `file: line`.
    fn error_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.logs).expect("logs").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".stderr") {
                continue;
            }
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            out.extend(
                text.lines()
                    .filter(|l| l.contains(" ERROR "))
                    .map(|l| format!("{name}: {l}")),
            );
        }
        out.sort();
        out
    }
}

/// The last lines of every process's stderr, for a failure message.
fn self_report(logs: &Path) -> String {
    let mut out = String::new();
    let mut entries: Vec<_> = std::fs::read_dir(logs)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(25);
        out.push_str(&format!(
            "--- {}\n{}\n",
            e.file_name().to_string_lossy(),
            lines[from..].join("\n")
        ));
    }
    out
}

/// What a finished crawl stored and fetched, measured against websim's files.
#[derive(Debug)]
struct Outcome {
    /// Status-200 URLs of the manifest.
    expected: usize,
    /// Of those, stored by some part.
    covered: usize,
    /// Of those not stored, the ones websim served.
    fetched_not_stored: usize,
    /// A few not stored.
    missing_sample: Vec<String>,
    /// 200 responses stored, summed over the parts.
    pages: usize,
    /// Distinct URLs stored with 200.
    unique: usize,
    /// URLs (robots.txt aside) websim served more than once.
    duplicates: Vec<String>,
    /// URLs in websim's `never.txt` that were requested.
    forbidden: Vec<String>,
    /// Addresses websim's requests came from.
    clients: HashSet<std::net::IpAddr>,
}

fn measure(ws: &Websim, cluster: &Cluster) -> Outcome {
    let mut union: HashSet<String> = HashSet::new();
    let mut pages = 0;
    for repo in cluster.repositories() {
        let scan = RepoScan::read(&repo).unwrap_or_else(|e| panic!("{e}"));
        pages += scan.ok_urls.len();
        union.extend(scan.ok_urls);
    }
    let manifest: Vec<String> = ws
        .manifest()
        .into_iter()
        .filter(|r| r.status == 200)
        .map(|r| r.url)
        .collect();
    let covered = manifest.iter().filter(|u| union.contains(*u)).count();
    let log = ws.flushed_log();
    let requested: HashSet<String> = log.iter().map(|l| l.url()).collect();
    let missing: Vec<&String> = manifest.iter().filter(|u| !union.contains(*u)).collect();
    let fetched_not_stored = missing.iter().filter(|u| requested.contains(**u)).count();
    let never: HashSet<String> = ws.never().into_iter().collect();
    let mut duplicates: Vec<String> = requestlog::url_counts(&log)
        .into_iter()
        .filter(|(u, n)| *n > 1 && !u.ends_with("/robots.txt") && !u.ends_with("/robots-real.txt"))
        .map(|(u, _)| u)
        .collect();
    duplicates.sort();
    let forbidden = log
        .iter()
        .map(|l| l.url())
        .filter(|u| never.contains(u))
        .collect();
    Outcome {
        fetched_not_stored,
        missing_sample: missing.iter().take(5).map(|u| (*u).clone()).collect(),
        expected: manifest.len(),
        covered,
        pages,
        unique: union.len(),
        duplicates,
        forbidden,
        clients: log.iter().map(|l| l.client.ip()).collect(),
    }
}

/// The per-origin interval websim's hosts must get (the configured interval,
/// raised to a host's Crawl-delay, capped), in µs.
fn interval_rule(ws: &Websim, knobs: &Knobs) -> impl Fn(&str) -> i64 + use<> {
    let hosts: HashMap<String, HostRow> = ws
        .hosts()
        .into_iter()
        .map(|h| (h.name.clone(), h))
        .collect();
    let (interval, cap) = (knobs.interval_ms, knobs.max_crawl_delay_ms);
    move |origin: &str| -> i64 {
        let name = requestlog::host_name(origin.split_once("://").map_or(origin, |(_, a)| a));
        let delay_ms = hosts
            .get(&name)
            .and_then(|h| h.crawl_delay)
            .map_or(0, |s| (s * 1000.0) as u64)
            .min(cap);
        (interval.max(delay_ms) * 1000) as i64
    }
}

/// Checks common to both crawls: every part complete, every page stored by
/// exactly one part, nothing forbidden fetched, requests from the downloaders'
/// namespaces only.
fn assert_complete_and_exact(cluster: &Cluster, out: &Outcome) {
    for s in cluster.summaries() {
        assert!(tests::verdict::ended_with_traps_at_most(&s), "{s}");
        assert!(s.contains("0 batches quarantined"), "{s}");
    }
    assert!(out.expected > 500, "{out:?}");
    assert_eq!(
        out.covered, out.expected,
        "pages lost: {} of {} stored; of the others {} were fetched, e.g. {:?}",
        out.covered, out.expected, out.fetched_not_stored, out.missing_sample
    );
    assert_eq!(
        out.pages, out.unique,
        "a page stored by two parts (overlap)"
    );
    assert!(
        out.forbidden.is_empty(),
        "robots-disallowed URLs fetched: {:?}",
        out.forbidden
    );
    let downloaders: HashSet<std::net::IpAddr> = ["dl0", "dl1"]
        .iter()
        .map(|r| std::net::IpAddr::V4(cluster.machines[cluster.machine(r)].ns.addr))
        .collect();
    assert_eq!(
        out.clients, downloaders,
        "websim was asked by other addresses than the downloaders' machines"
    );
}

#[test]
fn crawl_on_six_machines_is_exact_and_polite() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let ws = start_websim();
    let knobs = knobs();
    let mut cluster = Cluster::new(&ws, &knobs);
    cluster.start();
    eprintln!("machines:\n{}", cluster.placement().join("\n"));
    let mut inotify: BTreeMap<String, usize> = BTreeMap::new();
    let took = cluster.wait_complete(|c| {
        for name in c.inotify_users() {
            *inotify.entry(name).or_default() += 1;
        }
    });
    let out = measure(&ws, &cluster);
    println!(
        "machines: crawl of {} pages on {} machines took {:.1} s; {} duplicates; \
         {} pages stored",
        out.expected,
        cluster.machines.len(),
        took.as_secs_f64(),
        out.duplicates.len(),
        out.pages,
    );
    assert!(inotify.is_empty(), "processes using inotify: {inotify:?}");
    assert_complete_and_exact(&cluster, &out);
    assert!(
        out.duplicates.is_empty(),
        "{} URLs fetched twice, e.g. {:?}",
        out.duplicates.len(),
        &out.duplicates[..out.duplicates.len().min(10)]
    );
    // Politeness per origin. Per IP it is not judged: two crawling systems do not
    // share their per-IP limits (websim's hosts share addresses).
    let interval_us = interval_rule(&ws, &knobs);
    let rules = politeness::Rules {
        interval_us: &interval_us,
        ip_spacing_us: 0,
        ip_max_in_flight: 0,
    };
    let wire = tests::wirelog::read(&cluster.logs.join("wire.tsv"));
    let judged = politeness::judge(&wire, &ws.log(), &rules);
    println!("machines: politeness: {}", judged.figures(&rules));
    judged.assert_polite();
    let errors = cluster.error_lines();
    assert!(errors.is_empty(), "ERROR lines:\n{}", errors.join("\n"));
}

#[test]
fn a_machine_killed_mid_crawl_loses_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let ws = start_websim();
    let knobs = knobs();
    let expected = ws.manifest().iter().filter(|r| r.status == 200).count() as u64;
    let mut cluster = Cluster::new(&ws, &knobs);
    cluster.start();
    let victim = "mgr1";
    let mut killed = Vec::new();
    cluster.wait_complete(|c| {
        if killed.is_empty() && c.pages_stored() >= expected / 3 {
            killed = c.kill_machine_and_wait_lost(victim);
            eprintln!("killed {killed:?} on {victim}");
            c.restart_machine(victim);
        }
    });
    assert_eq!(
        killed,
        ["manager-s1", "resolver-s1"],
        "the crawl ended before the kill"
    );
    let out = measure(&ws, &cluster);
    println!(
        "machines: kill -9 of {victim} ({killed:?}): {} of {} pages stored, {} URLs \
         fetched twice",
        out.covered,
        out.expected,
        out.duplicates.len()
    );
    assert_complete_and_exact(&cluster, &out);
    let bound = knobs.jobs_bound(1);
    assert!(
        out.duplicates.len() <= bound,
        "{} URLs fetched twice, more than the {bound} jobs system 1's downloader may \
         hold: {:?}",
        out.duplicates.len(),
        &out.duplicates[..out.duplicates.len().min(10)]
    );
}

/// `polycrawl demo --machines`: the same layout made by the demo, which prints
/// where each process runs, crawls exactly, and leaves no namespace or mount.
#[test]
fn demo_on_machines_places_crawls_and_cleans_up() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    require_namespaces_and_fuse();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out_dir = dir.path().join("demo-out");
    let mut cmd = std::process::Command::new(bin::polycrawl());
    cmd.args(["demo", "--machines", "--hosts", "20", "--pages", "300"])
        .args(["--parts", "4", "--systems", "2", "--downloaders", "2"])
        .args(["--interval-ms", "50", "--out"])
        .arg(&out_dir)
        .env("RUST_LOG", "info");
    let mut demo = ProcessGuard::spawn("demo", cmd, dir.path()).expect("starting the demo");
    let status = demo
        .wait_exit(CRAWL_TIMEOUT)
        .expect("waiting for the demo")
        .unwrap_or_else(|| panic!("{}", demo.report("still running")));
    let out = demo.stdout();
    assert!(
        status.success(),
        "{}",
        demo.report(&format!("exited {status}"))
    );
    let machines: Vec<&String> = out.iter().filter(|l| l.starts_with("machine ")).collect();
    assert_eq!(machines.len(), 6, "{}", out.join("\n"));
    for role in ["mgr0", "mgr1"] {
        let l = machines
            .iter()
            .find(|l| l.contains(role))
            .expect("a manager machine");
        assert!(l.contains("manager") && l.contains("resolver"), "{l}");
    }
    for role in ["app0", "app1"] {
        let l = machines
            .iter()
            .find(|l| l.contains(role))
            .expect("a parts machine");
        assert_eq!(l.matches("app-p").count(), 2, "{l}");
    }
    let line = |p: &str| {
        out.iter()
            .find(|l| l.starts_with(p))
            .unwrap_or_else(|| panic!("no {p} line in\n{}", out.join("\n")))
            .clone()
    };
    assert!(
        line("coverage: ").contains("(100.0 %)"),
        "{}",
        out.join("\n")
    );
    assert_eq!(line("duplicate fetches: "), "duplicate fetches: 0");
    assert_eq!(
        line("robots-disallowed fetches: "),
        "robots-disallowed fetches: 0"
    );
    // The same, judged on the four parts' WARC files and websim's log.
    let grade = tests::grade::Grade::demo(&out_dir);
    println!("machines: demo {}", grade.figures());
    assert_eq!(grade.scans.len(), 4, "four parts' repositories");
    grade.assert_exact();
    assert_eq!(
        grade.pages(),
        grade.stored.len(),
        "a page stored by two parts"
    );
    // Nothing left behind: the demo's namespaces are named after its pid.
    let netns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    let prefix = format!("pcd{}-", demo.pid());
    assert!(
        !String::from_utf8_lossy(&netns.stdout).contains(&prefix),
        "namespaces left: {}",
        String::from_utf8_lossy(&netns.stdout)
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let mnt = out_dir.join("mnt").display().to_string();
    assert!(!mounts.contains(&mnt), "mounts left under {mnt}");
}

/// `ip netns list` and `ip -o link show` names made by the demo of pid `pid`
/// (`pcd<PID>`, `pcd<PID>-<role>`, `pcdv<PID>x<I>`).
fn demo_leftovers(pid: u32) -> Vec<String> {
    let mut names = Vec::new();
    for args in [&["netns", "list"][..], &["-o", "link", "show"][..]] {
        let out = std::process::Command::new("ip")
            .args(args)
            .output()
            .expect("running ip");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let name = if args[0] == "netns" {
                words.first()
            } else {
                words.get(1)
            };
            let Some(name) = name.map(|n| n.trim_end_matches(':').split('@').next().unwrap_or(n))
            else {
                continue;
            };
            let ours = [format!("pcd{pid}"), format!("pcdv{pid}x")];
            if name == ours[0]
                || name.starts_with(&format!("pcd{pid}-"))
                || name.starts_with(&ours[1])
            {
                names.push(name.to_owned());
            }
        }
    }
    names
}

/// `polycrawl demo --machines` killed with SIGKILL cannot clean up: its
/// namespaces, bridge and (dead) mounts stay. The next `demo --machines` on the
/// same directory removes them (their maker's pid is dead) and crawls.
#[test]
fn the_next_demo_removes_what_a_killed_demo_left() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    require_namespaces_and_fuse();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out_dir = dir.path().join("demo-out");
    // The next demo crawls another web (seed 2): it starts afresh on the
    // directory, rather than resuming the killed one's crawl.
    let demo = |name: &str, seed: &str| {
        let mut cmd = std::process::Command::new(bin::polycrawl());
        cmd.args(["demo", "--machines", "--hosts", "20", "--pages", "100"])
            .args(["--seed", seed])
            .args(["--interval-ms", "50", "--out"])
            .arg(&out_dir)
            .env("RUST_LOG", "info");
        ProcessGuard::spawn(name, cmd, dir.path()).expect("starting the demo")
    };
    let mut first = demo("killed-demo", "1");
    // The machines' table is printed once every process runs on its machine.
    first
        .wait_for_line(|l| l.starts_with("machine "), CRAWL_TIMEOUT)
        .unwrap_or_else(|e| panic!("{e}"));
    let pid = first.pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL to the demo");
    first
        .wait_exit(Duration::from_secs(10))
        .expect("waiting for the killed demo")
        .expect("the killed demo exits");
    let left = demo_leftovers(pid);
    assert!(
        left.iter().any(|n| n == &format!("pcd{pid}")) && left.iter().any(|n| n.contains('-')),
        "a SIGKILLed demo leaves its bridge and namespaces (or this test checks nothing): {left:?}"
    );

    let mut next = demo("next-demo", "2");
    let status = next
        .wait_exit(CRAWL_TIMEOUT)
        .expect("waiting for the next demo")
        .unwrap_or_else(|| panic!("{}", next.report("still running")));
    assert!(
        status.success(),
        "{}",
        next.report(&format!("exited {status}"))
    );
    assert!(
        next.stderr()
            .contains("demo: removed what a killed demo left behind: "),
        "{}",
        next.report("no removal line")
    );
    assert_eq!(
        demo_leftovers(pid),
        Vec::<String>::new(),
        "left after the next demo"
    );
    assert_eq!(
        demo_leftovers(next.pid()),
        Vec::<String>::new(),
        "the next demo's own"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let mnt = out_dir.join("mnt").display().to_string();
    assert!(!mounts.contains(&mnt), "mounts left under {mnt}");
    let coverage = next
        .stdout()
        .into_iter()
        .find(|l| l.starts_with("coverage: "))
        .unwrap_or_default();
    assert!(
        coverage.contains("(100.0 %)"),
        "{}",
        next.report("coverage")
    );
    // The same, judged on the WARC files and websim's log (the next demo's: it
    // started afresh on the directory).
    let grade = tests::grade::Grade::demo(&out_dir);
    println!("machines: next demo {}", grade.figures());
    grade.assert_exact();
}
