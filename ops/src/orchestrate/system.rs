//! [`System`]: the crawling system and the breadth-first application started as
//! separate child processes of this binary, wired exactly as on many machines:
//! every child gets the generated config file, the control token in
//! `POLYCRAWL_TOKEN` (the manager also gets the admin token in
//! `POLYCRAWL_ADMIN_TOKEN`) and the manager's address, which it prints when it
//! listens on a port chosen by the kernel.
//!
//! **Split crawls** ([`Plan::systems`], [`Plan::parts`]): S crawling systems, each a
//! manager (`manager`, `manager-s1`, ...) with its own spool ([`Layout::spool_of`]),
//! state and resolver, the downloaders dealt round-robin among them; and K
//! application parts (`app-p0`, ...), part I registered with system I % S only and
//! given its own id (`<app>-pI`), state and repository. The parts exchange URLs
//! through the first system's spool (`app.exchange_root`). The run is complete
//! when every part has exited with its crawl complete. In two-level mode
//! (`app.part_mode: two_level`) a supervised `polycrawl coordinator` (state in
//! `<out>/state/coordinator`, the seeds file, [`Plan::site_policy`]) starts before
//! the parts and stops with the resolvers. The progress display adds
//! up the managers' counts; the admin page announced is the first manager's.
//!
//! Start order: manager (wait for `manager listening addr=` and, when the admin
//! page is on, `manager admin listening addr=`), resolver, downloaders,
//! application. The admin token is random per run and written to
//! `<out>/admin-token` (mode 0600) for the operator to paste into the admin page.
//! `<out>/pids` lists every running child (`NAME PID` a line), rewritten whenever
//! one starts or dies. The run ends when the application exits 0 with its crawl complete
//! (or `--max-pages` reached), or when the shutdown token fires (SIGTERM, Ctrl-C).
//!
//! **Supervision** ([`super::supervise`]). A process that dies otherwise
//! (killed, crashed, or exited while the crawl is not done) is started again with
//! the same command, after a back-off, with a line on stderr and in its log. The
//! components make this safe: their state is crash-safe, downloaders, resolvers
//! and the application reconnect to the manager with back-off, and a restarted
//! manager listens on the same control and admin ports as the first one (they
//! are fixed after the first start), on the same state directory. A process in a
//! crash loop (dying within seconds of every start, before it registered) is
//! given up on after [`Supervision::max_deaths`] such deaths in a row: the run
//! ends ([`Ending::GaveUp`]), everything is stopped in order and the caller
//! reports it.
//!
//! Stop order: application, then downloaders and resolver (SIGTERM: they stop
//! taking work, finish or return their fetches and publish their batches), then
//! the manager (SIGTERM: it saves its state); each has `STOP_GRACE`, then
//! SIGKILL. Nothing is lost by a stop: the next run on the same directories
//! resumes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::Context;
use spool::protocol::{StatusSnapshot, Token};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::child::{Child, describe};
use super::exits;
use super::machines::Machine;
use super::progress::Progress;
use super::supervise::{Deaths, LISTENING, ReadyWatch, Verdict, crash_loop_line};
pub use super::supervise::{Supervision, SupervisionArgs};
use super::threads::ThreadCpu;
use crate::config::Config;

/// How long the manager may take to print its listening line.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a process gets to finish after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(15);
/// How often the manager's status is read for the progress display.
const STATUS_EVERY: Duration = Duration::from_millis(500);
/// How long the summary line of an application that exited 0 may take to be read.
const SUMMARY_WAIT: Duration = Duration::from_secs(3);
/// A seed-by-seed part's per-second sample of the seeds its workers hold, in its
/// state folder.
pub const HELD_SAMPLES: &str = "held.tsv";
/// How often the children are checked when none exits (an exit wakes the loop at
/// once: `exits.rs`).
const TICK: Duration = Duration::from_millis(100);
/// Where a run keeps its files, all under one output directory.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The output directory (absolute).
    pub out: PathBuf,
    /// The generated config, `<out>/config.ron`.
    pub config: PathBuf,
    /// The spool, `<out>/spool`.
    pub spool: PathBuf,
    /// The manager's state, `<out>/state/manager`.
    pub manager_state: PathBuf,
    /// The application's state, `<out>/state/app`.
    pub app_state: PathBuf,
    /// The WARC repository, `<out>/repository`.
    pub repository: PathBuf,
    /// Every process's stderr and stdout, `<out>/logs`.
    pub logs: PathBuf,
    /// The run's admin token (readable by the owner only), `<out>/admin-token`.
    pub admin_token: PathBuf,
    /// The running children, `NAME PID` a line, `<out>/pids`.
    pub pids: PathBuf,
}

impl Layout {
    /// The layout under `out` (made absolute).
    pub fn new(out: &Path) -> anyhow::Result<Layout> {
        let out =
            std::path::absolute(out).with_context(|| format!("resolving {}", out.display()))?;
        Ok(Layout {
            config: out.join("config.ron"),
            spool: out.join("spool"),
            manager_state: out.join("state").join("manager"),
            app_state: out.join("state").join("app"),
            repository: out.join("repository"),
            logs: out.join("logs"),
            admin_token: out.join("admin-token"),
            pids: out.join("pids"),
            out,
        })
    }

    /// Creates the folders.
    pub fn create(&self) -> anyhow::Result<()> {
        for dir in [
            &self.spool,
            &self.manager_state,
            &self.app_state,
            &self.repository,
            &self.logs,
        ] {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(())
    }

    /// The spool of crawling system `s` (`<out>/spool` for the first, then
    /// `<out>/spool-s<S>`): each system's manager, resolver and downloaders share
    /// one spool; parts exchange URLs through the first one's `exchange/`.
    pub fn spool_of(&self, s: u32) -> PathBuf {
        if s == 0 {
            self.spool.clone()
        } else {
            self.spool.with_file_name(format!("spool-s{s}"))
        }
    }

    /// The same layout with the spools in `<out>/export` (the directory the
    /// simulated machines of `demo --machines` mount) instead of `<out>`.
    #[must_use]
    pub fn with_export(mut self) -> Layout {
        self.spool = self.export().join("spool");
        self
    }

    /// `<out>/export`: the spools' directory with `--machines`.
    pub fn export(&self) -> PathBuf {
        self.out.join("export")
    }

    /// The manager state of system `s`.
    pub fn manager_state_of(&self, s: u32) -> PathBuf {
        if s == 0 {
            self.manager_state.clone()
        } else {
            self.out.join("state").join(format!("manager-s{s}"))
        }
    }

    /// The state directory of part `i` of `parts` (`<out>/state/app` unsplit).
    pub fn app_state_of(&self, i: u32, parts: u32) -> PathBuf {
        if parts <= 1 {
            self.app_state.clone()
        } else {
            self.out.join("state").join(format!("app-p{i}"))
        }
    }

    /// The repository of part `i` of `parts` (`<out>/repository` unsplit).
    pub fn repository_of(&self, i: u32, parts: u32) -> PathBuf {
        if parts <= 1 {
            self.repository.clone()
        } else {
            self.out.join(format!("repository-p{i}"))
        }
    }

    /// Every part's repository.
    pub fn repositories(&self, parts: u32) -> Vec<PathBuf> {
        (0..parts.max(1))
            .map(|i| self.repository_of(i, parts))
            .collect()
    }

    /// Points the config's directories at this layout. Every process of the run
    /// sees the spool through this machine's file system, so the application's
    /// "idle" verdict needs no confirmation delay (`app.idle_check_ms = 0`).
    pub fn apply(&self, config: &mut Config) {
        config.app.idle_check_ms = 0;
        config.spool.root = self.spool.clone();
        config.manager.state_dir = self.manager_state.clone();
        config.app.state_dir = self.app_state.clone();
        config.app.repository_dir = self.repository.clone();
        config.app.exchange_root = Some(self.spool.clone());
    }
}

/// The coordinator's process name (two-level mode).
const COORDINATOR: &str = "coordinator";
/// The stdout line `polycrawl coordinator` prints once it runs.
const COORDINATOR_READY: &str = "coordinator ready ";

/// What to start.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Where the files go.
    pub layout: Layout,
    /// The config every process reads (written to `layout.config`).
    pub config: Config,
    /// The seed URLs.
    pub seeds: PathBuf,
    /// Number of downloader processes: at least one per crawling system (fewer
    /// are raised to `systems`, with a note on stderr: a system without a
    /// downloader would hold its parts' URLs forever).
    pub downloaders: u32,
    /// Stop after this many stored pages.
    pub max_pages: Option<u64>,
    /// Crawling systems (manager, resolver, its share of the downloaders), at
    /// least 1; part `i` is served by system `i % systems` (Polybot Figure 3).
    pub systems: u32,
    /// Application parts, at least 1 (the mode and the assignment are in
    /// `config.app`).
    pub parts: u32,
    /// Two-level mode (`config.app.part_mode`): how the coordinator deals sites.
    pub site_policy: application::coordinator::Policy,
    /// Pages expected, for the progress bar.
    pub expected_pages: Option<u64>,
    /// When to give up restarting a process.
    pub supervision: Supervision,
    /// Which simulated machine each process runs on (`demo --machines`); `None`:
    /// all here.
    pub placement: Option<super::machines::Placement>,
    /// Which application the parts are (breadth-first or seed-by-seed).
    pub strategy: super::strategy::StrategyArgs,
}

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The application finished the crawl (or reached `--max-pages`).
    Complete,
    /// SIGTERM or Ctrl-C: everything was stopped in order; the next run resumes.
    Interrupted,
    /// A process kept dying: what happened, for the report.
    GaveUp(String),
}

/// How a run went.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Why it ended.
    pub ending: Ending,
    /// The application's one-line summary (of its last process); of the first
    /// part in a split crawl.
    pub app_summary: Option<String>,
    /// Every part's summary line, in part order (one for an unsplit crawl).
    pub part_summaries: Vec<Option<String>>,
    /// Time from the manager's start to the end.
    pub elapsed: Duration,
    /// The manager's last status snapshot.
    pub last_status: Option<StatusSnapshot>,
    /// The manager's address.
    pub manager_addr: String,
    /// Restarts by process name (only those restarted at least once).
    pub restarts: Vec<(String, u32)>,
}

/// How the processes ended.
#[derive(Debug, Clone)]
pub struct Stopped {
    /// The processes that did not exit cleanly, with how they ended.
    pub unclean: Vec<String>,
    /// CPU time (user + system) of each process over its life (all its restarts),
    /// by name.
    pub cpu: Vec<(String, Duration)>,
    /// Each process's threads (all its restarts), busiest first, by process name.
    pub threads: Vec<(String, Vec<ThreadCpu>)>,
    /// Each manager's `manager stages ...` line (`manager::StageTimes`), if it
    /// printed one as it stopped.
    pub manager_stages: Vec<String>,
    /// The application's last summary line, if it printed one while stopping.
    pub app_summary: Option<String>,
    /// Every part's last summary line.
    pub part_summaries: Vec<Option<String>>,
}

/// Writes `token` to `path`, readable and writable by the owner only.
fn write_secret(path: &Path, token: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    writeln!(file, "{token}").with_context(|| format!("writing {}", path.display()))
}

/// A random secret: 32 hex digits from the kernel's generator.
pub fn random_token() -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `config` as RON, with a comment saying where it came from.
pub fn write_config(path: &Path, config: &Config, origin: &str) -> anyhow::Result<()> {
    let pretty = ron::ser::PrettyConfig::default();
    let body = ron::ser::to_string_pretty(config, pretty).context("writing the config as RON")?;
    let text = format!(
        "// Written by {origin}; every process of the run reads it. Tokens are not\n\
         // here: they go to the processes in POLYCRAWL_TOKEN / POLYCRAWL_ADMIN_TOKEN.\n{body}\n"
    );
    // Check it reads back exactly as the processes will read it.
    let back = Config::parse(&text, &path.display().to_string())
        .context("the generated config does not read back")?;
    anyhow::ensure!(
        &back == config,
        "the generated config does not read back unchanged"
    );
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// How to start one process, kept so it can be started again (a `Command` cannot
/// be cloned).
#[derive(Debug, Clone)]
struct Spec {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(String, OsString)>,
    /// The network namespace to run in (`ip netns exec`, which execs the
    /// program: the pid stays the program's).
    netns: Option<String>,
}

impl Spec {
    /// `EXE SUB --config CONFIG` with the control token in `POLYCRAWL_TOKEN`.
    fn new(exe: &Path, sub: &str, config: &Path, token: &str) -> Spec {
        Spec {
            program: exe.to_owned(),
            args: vec![sub.into(), "--config".into(), config.into()],
            env: vec![("POLYCRAWL_TOKEN".to_owned(), token.into())],
            netns: None,
        }
    }

    fn arg(&mut self, arg: impl Into<OsString>) -> &mut Spec {
        self.args.push(arg.into());
        self
    }

    fn env(&mut self, key: &str, value: impl Into<OsString>) -> &mut Spec {
        self.env.push((key.to_owned(), value.into()));
        self
    }

    /// Sets the value following flag `flag` (which must be there).
    fn set_flag(&mut self, flag: &str, value: impl Into<OsString>) {
        if let Some(i) = self.args.iter().position(|a| a == flag) {
            if let Some(v) = self.args.get_mut(i + 1) {
                *v = value.into();
                return;
            }
        }
        self.args.push(flag.into());
        self.args.push(value.into());
    }

    fn command(&self) -> Command {
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", ns]).arg(&self.program);
                cmd
            }
            None => Command::new(&self.program),
        };
        cmd.args(&self.args);
        cmd.env_remove("POLYCRAWL_ADMIN_TOKEN");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if std::env::var_os("RUST_LOG").is_none() {
            cmd.env("RUST_LOG", "info");
        }
        cmd
    }
}

/// One supervised process: its command, its current process (running or dead),
/// whether this start is ready, and its deaths.
#[derive(Debug)]
struct Supervised {
    spec: Spec,
    child: Child,
    started: Instant,
    /// Whether this start registered (or, for a manager, listens).
    ready: ReadyWatch,
    deaths: Deaths,
    /// Dead, to be started again at this time.
    restart_at: Option<Instant>,
    restarts: u32,
    /// CPU time of its earlier processes.
    cpu_before: Duration,
}

/// What one check of a supervised process found.
enum Event {
    None,
    Died {
        pid: u32,
        status: ExitStatus,
        verdict: Verdict,
        ran: Duration,
    },
    Restarted {
        pid: u32,
    },
}

impl Supervised {
    fn spawn(name: &str, spec: Spec, logs: &Path, policy: Supervision) -> anyhow::Result<Self> {
        let ready = ReadyWatch::new(&logs.join(format!("{name}.log")));
        let child = Child::spawn(name, spec.command(), logs)?;
        Ok(Supervised {
            spec,
            child,
            started: Instant::now(),
            ready,
            deaths: Deaths::new(policy),
            restart_at: None,
            restarts: 0,
            cpu_before: Duration::ZERO,
        })
    }

    fn name(&self) -> &str {
        self.child.name()
    }

    /// Running (not dead and waiting for its restart).
    fn alive(&self) -> bool {
        self.restart_at.is_none()
    }

    /// Whether this start is ready: a manager printed its listening line (its
    /// stdout is read only here once it runs), any other process logged that it
    /// registered.
    fn is_ready(&mut self) -> bool {
        let line = if self.name().starts_with("manager") {
            Some(LISTENING)
        } else if self.name() == COORDINATOR {
            Some(COORDINATOR_READY)
        } else {
            None
        };
        if let Some(line) = line {
            if self.child.new_lines().iter().any(|l| l.starts_with(line)) {
                self.ready.set_ready();
            }
            // Its log never says `registered`: only the line sets it ready.
            return self.ready.ready_set();
        }
        self.ready.ready()
    }

    /// Checks for a death (`finished` says whether an exit is the expected end)
    /// and performs a due restart.
    fn check(
        &mut self,
        logs: &Path,
        finished: impl Fn(ExitStatus) -> bool,
    ) -> anyhow::Result<Event> {
        let now = Instant::now();
        if let Some(at) = self.restart_at {
            if now < at {
                return Ok(Event::None);
            }
            self.cpu_before += self.child.cpu();
            let threads = self.child.take_threads();
            note_in_log(
                self.child.log_path(),
                &format!("--- polycrawl supervisor: starting {} again", self.name()),
            );
            let name = self.name().to_owned();
            self.ready = ReadyWatch::new(self.child.log_path());
            self.child = Child::spawn(&name, self.spec.command(), logs)?;
            self.child.carry_threads(threads);
            self.started = now;
            self.restart_at = None;
            self.restarts += 1;
            return Ok(Event::Restarted {
                pid: self.child.pid(),
            });
        }
        let exited = self.child.exited()?;
        let ready = self.is_ready();
        let Some(status) = exited else {
            return Ok(Event::None);
        };
        if finished(status) {
            return Ok(Event::None);
        }
        let ran = now.duration_since(self.started);
        let verdict = self.deaths.died(ran, ready);
        if let Verdict::Restart { delay, .. } = verdict {
            self.restart_at = Some(now + delay);
        }
        Ok(Event::Died {
            pid: self.child.pid(),
            status,
            verdict,
            ran,
        })
    }

    fn cpu(&mut self) -> Duration {
        self.cpu_before + self.child.cpu()
    }
}

/// Appends `line` to a child's log file (best effort: it is a note for people).
fn note_in_log(log: &Path, line: &str) {
    use std::io::Write as _;
    if let Ok(mut f) = std::fs::File::options().append(true).open(log) {
        let _ = writeln!(f, "{line}");
    }
}

/// One application part as it runs: its process and the lines it printed.
#[derive(Debug)]
struct AppPart {
    proc: Supervised,
    lines: Vec<String>,
    /// It exited 0 with its crawl complete.
    complete: bool,
    /// This round of the watch loop looked at its exit (and its summary line).
    /// An exit 0 that comes after that look, within the same round, is judged
    /// in the next round, never taken for a death.
    judged: bool,
}

impl AppPart {
    /// Its last summary line so far.
    fn summary(&self) -> Option<String> {
        self.lines
            .iter()
            .rev()
            .find(|l| l.starts_with("app "))
            .cloned()
    }
}

/// The running processes: one or more crawling systems (manager, resolver,
/// downloaders) and the application's parts, each served by one system.
#[derive(Debug)]
pub struct System {
    managers: Vec<Supervised>,
    /// Two-level mode's coordinator.
    coordinator: Option<Supervised>,
    resolvers: Vec<Supervised>,
    downloaders: Vec<Supervised>,
    apps: Vec<AppPart>,
    manager_addrs: Vec<String>,
    admin_addr: Option<String>,
    admin_token: String,
    max_frame: u32,
    logs: PathBuf,
    pids_file: PathBuf,
    what: &'static str,
}

impl System {
    /// Writes the config and starts every process; returns once they are started
    /// (the managers listening). `what` names the run in log lines (`crawl`, `demo`).
    pub fn start(
        plan: &Plan,
        shutdown: &CancellationToken,
        what: &'static str,
    ) -> anyhow::Result<System> {
        let l = &plan.layout;
        l.create()?;
        let systems = plan.systems.max(1);
        let parts = plan.parts.max(1);
        for s in 0..systems {
            for dir in [l.spool_of(s), l.manager_state_of(s)] {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
        }
        let mut config = plan.config.clone();
        config.app.parts = parts;
        write_config(&l.config, &config, "polycrawl")?;
        let exe = std::env::current_exe().context("finding the polycrawl binary")?;
        let token = random_token()?;
        let admin_token = random_token()?;
        write_secret(&l.admin_token, &admin_token)?;
        let policy = plan.supervision;
        let suffix = |s: u32| {
            if s == 0 {
                String::new()
            } else {
                format!("-s{s}")
            }
        };

        let mut managers = Vec::new();
        let mut manager_addrs = Vec::new();
        let mut admin_addr = None;
        // With machines: the machine of `role` (its namespace, address and view
        // of the export) and a path as that machine sees it.
        let placement = plan.placement.as_ref();
        let machine = |role: String| placement.map(|p| p.get(&role));
        let view = |m: Option<&Machine>, path: PathBuf| match (placement, m) {
            (Some(p), Some(m)) => p.view(m, &path),
            _ => path,
        };
        for s in 0..systems {
            let m = machine(format!("mgr{s}"));
            let mut spec = Spec::new(&exe, "manager", &l.config, &token);
            let listen = m.map_or("127.0.0.1".to_owned(), |m| m.addr.to_string());
            spec.arg("--listen")
                .arg(format!("{listen}:0"))
                .arg("--state")
                .arg(l.manager_state_of(s))
                .arg("--spool")
                .arg(view(m, l.spool_of(s)))
                .env("POLYCRAWL_ADMIN_TOKEN", &admin_token);
            if let Some(m) = m {
                // Reachable from this machine's root namespace, over the bridge.
                if !plan.config.manager.admin_http.is_empty() {
                    spec.arg("--admin-listen").arg(format!("{}:0", m.addr));
                }
                spec.netns = Some(m.netns.clone());
            }
            let name = format!("manager{}", suffix(s));
            let mut manager = Supervised::spawn(&name, spec, &l.logs, policy)?;
            let line = manager.child.wait_line(
                |l| l.starts_with("manager listening addr="),
                READY_TIMEOUT,
                || shutdown.is_cancelled(),
            )?;
            manager.ready.set_ready();
            let addr = line
                .trim_start_matches("manager listening addr=")
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
            let admin = if plan.config.manager.admin_http.is_empty() {
                None
            } else {
                let line = manager.child.wait_line(
                    |l| admin_address(l).is_some(),
                    READY_TIMEOUT,
                    || shutdown.is_cancelled(),
                )?;
                admin_address(&line).map(str::to_owned)
            };
            // A restarted manager must be where the others (and the operator's
            // browser) look for it: the ports chosen now are fixed from here on.
            manager.spec.set_flag("--listen", &addr);
            if let Some(admin) = &admin {
                manager.spec.set_flag("--admin-listen", admin);
            }
            if s == 0 {
                admin_addr = admin;
            }
            managers.push(manager);
            manager_addrs.push(addr);
        }

        let service = |sub: &str, s: u32| {
            let mut spec = Spec::new(&exe, sub, &l.config, &token);
            spec.arg("--manager").arg(&manager_addrs[s as usize]);
            spec
        };
        let mut resolvers = Vec::new();
        for s in 0..systems {
            let mut spec = service("resolver", s);
            spec.arg("--id").arg(format!("resolver-{}", s + 1));
            spec.netns = machine(format!("mgr{s}")).map(|m| m.netns.clone());
            let name = format!("resolver{}", suffix(s));
            resolvers.push(Supervised::spawn(&name, spec, &l.logs, policy)?);
        }
        let mut downloaders = Vec::new();
        if plan.downloaders < systems {
            eprintln!(
                "polycrawl {what}: {systems} crawling systems need a downloader each: starting {systems} downloaders, not {}",
                plan.downloaders
            );
        }
        for n in 1..=plan.downloaders.max(systems) {
            let s = (n - 1) % systems;
            let id = format!("dl-{n}");
            let mut spec = service("downloader", s);
            let m = machine(format!("dl{s}"));
            spec.arg("--spool")
                .arg(view(m, l.spool_of(s)))
                .arg("--id")
                .arg(&id);
            spec.netns = m.map(|m| m.netns.clone());
            downloaders.push(Supervised::spawn(&id, spec, &l.logs, policy)?);
        }
        // Two-level mode: the coordinator, before the agents (its own process
        // on the first system's spool, like a part; it needs no manager).
        let coordinator =
            if parts > 1 && config.app.part_mode == application::service::PartMode::TwoLevel {
                let mut spec = Spec::new(&exe, "coordinator", &l.config, &token);
                spec.arg("--state")
                    .arg(l.app_state.with_file_name(COORDINATOR))
                    .arg("--seeds")
                    .arg(&plan.seeds)
                    .arg("--policy")
                    .arg(plan.site_policy.to_string())
                    .arg("--parts")
                    .arg(parts.to_string());
                let mut co = Supervised::spawn(COORDINATOR, spec, &l.logs, policy)?;
                co.child.wait_line(
                    |l| l.starts_with(COORDINATOR_READY),
                    READY_TIMEOUT,
                    || shutdown.is_cancelled(),
                )?;
                co.ready.set_ready();
                Some(co)
            } else {
                None
            };
        let mut apps = Vec::new();
        for i in 0..parts {
            let s = i % systems;
            let mut spec = service("app", s);
            let m = machine(format!("app{s}"));
            if let Some(m) = m {
                spec.netns = Some(m.netns.clone());
                spec.arg("--exchange-root")
                    .arg(view(Some(m), l.spool.clone()));
            }
            spec.arg("--spool")
                .arg(view(m, l.spool_of(s)))
                .arg("--state")
                .arg(l.app_state_of(i, parts))
                .arg("--repo")
                .arg(l.repository_of(i, parts))
                .arg("--seeds")
                .arg(&plan.seeds);
            let name = if parts == 1 {
                "app".to_owned()
            } else {
                spec.arg("--app")
                    .arg(format!("{}-p{i}", plan.config.app.app))
                    .arg("--part")
                    .arg(i.to_string());
                format!("app-p{i}")
            };
            if let Some(n) = plan.max_pages {
                spec.arg("--max-pages").arg(n.to_string());
            }
            for flag in plan
                .strategy
                .app_flags(&l.app_state_of(i, parts).join(HELD_SAMPLES))
            {
                spec.arg(flag);
            }
            apps.push(AppPart {
                proc: Supervised::spawn(&name, spec, &l.logs, policy)?,
                lines: Vec::new(),
                complete: false,
                judged: false,
            });
        }
        let system = System {
            managers,
            coordinator,
            resolvers,
            downloaders,
            apps,
            manager_addrs,
            admin_addr,
            admin_token,
            max_frame: plan.config.control.max_frame_bytes,
            logs: l.logs.clone(),
            pids_file: l.pids.clone(),
            what,
        };
        system.write_pids()?;
        Ok(system)
    }

    /// The first manager's control address.
    pub fn manager_addr(&self) -> &str {
        self.manager_addrs.first().map_or("", String::as_str)
    }

    /// Every manager's control address, by system.
    pub fn manager_addrs(&self) -> &[String] {
        &self.manager_addrs
    }

    /// The first manager's admin page address, if it is on.
    pub fn admin_addr(&self) -> Option<&str> {
        self.admin_addr.as_deref()
    }

    /// Prints `admin: http://ADDR/` on stdout (where to point a browser) and where
    /// the admin token is on stderr; nothing when the admin page is off.
    pub fn announce_admin(&self, layout: &Layout) {
        if let Some(addr) = &self.admin_addr {
            println!("admin: http://{addr}/");
            eprintln!(
                "admin page: the admin token is in {}",
                layout.admin_token.display()
            );
        }
    }

    fn all(&self) -> impl Iterator<Item = &Supervised> {
        self.managers
            .iter()
            .chain(self.coordinator.iter())
            .chain(self.resolvers.iter())
            .chain(self.downloaders.iter())
            .chain(self.apps.iter().map(|a| &a.proc))
    }

    /// Every running process, as (name, pid).
    pub fn pids(&self) -> Vec<(String, u32)> {
        self.all()
            .filter(|s| s.alive())
            .map(|s| (s.name().to_owned(), s.child.pid()))
            .collect()
    }

    /// Every running process, as (name, pid, network namespace if not here).
    pub fn placed(&self) -> Vec<(String, u32, Option<String>)> {
        self.all()
            .filter(|s| s.alive())
            .map(|s| (s.name().to_owned(), s.child.pid(), s.spec.netns.clone()))
            .collect()
    }

    /// Rewrites `<out>/pids` (temporary file, then rename).
    fn write_pids(&self) -> anyhow::Result<()> {
        let text: String = self
            .pids()
            .iter()
            .map(|(n, p)| format!("{n} {p}\n"))
            .collect();
        let tmp = self.pids_file.with_extension("tmp");
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &self.pids_file)
            .with_context(|| format!("writing {}", self.pids_file.display()))
    }

    /// Reads the managers' status (admin role) and adds up their counts (pages,
    /// speed, queues, hosts) into the first one's; `None` if the first does not
    /// answer.
    pub fn status(&self, rt: &Handle) -> Option<StatusSnapshot> {
        let token = Token::new(self.admin_token.clone()).ok()?;
        let mut total: Option<StatusSnapshot> = None;
        for addr in &self.manager_addrs {
            let fetch = crate::status::fetch(addr, token.clone(), self.max_frame);
            let s = rt
                .block_on(async { tokio::time::timeout(Duration::from_secs(2), fetch).await })
                .ok()
                .and_then(Result::ok);
            match (&mut total, s) {
                (None, Some(s)) if addr == self.manager_addr() => total = Some(s),
                (None, _) => return None,
                (Some(t), Some(s)) => {
                    t.pages_total += s.pages_total;
                    t.bytes_total += s.bytes_total;
                    t.pages_per_sec += s.pages_per_sec;
                    t.pages_per_sec_now += s.pages_per_sec_now;
                    t.queued_urls += s.queued_urls;
                    t.in_flight += s.in_flight;
                    t.hosts.ready += s.hosts.ready;
                    t.hosts.waiting += s.hosts.waiting;
                    t.hosts.backed_off += s.hosts.backed_off;
                    t.components.extend(s.components);
                }
                (Some(_), None) => {}
            }
        }
        total
    }

    fn part_summaries(&self) -> Vec<Option<String>> {
        self.apps.iter().map(AppPart::summary).collect()
    }

    /// Runs until the crawl is complete, `shutdown` fires or a process keeps
    /// dying; shows progress and restarts what dies. Processes are left running:
    /// [`System::stop`] stops them.
    pub fn wait(
        &mut self,
        progress: &mut Progress,
        shutdown: &CancellationToken,
        rt: &Handle,
    ) -> anyhow::Result<Finished> {
        let started = Instant::now();
        let mut last_status = None;
        let mut next_status = Instant::now();
        exits::watch(rt);
        let ending = loop {
            // Read before the checks: an exit after them ends the wait below.
            let exits_seen = exits::seen();
            if shutdown.is_cancelled() {
                break Ending::Interrupted;
            }
            // A part's exit 0 is its end if its summary says the crawl is done; an
            // exit 0 after a SIGTERM from outside is a death like any.
            for app in &mut self.apps {
                app.lines.extend(app.proc.child.new_lines());
                app.judged = false;
                if !app.complete
                    && app.proc.alive()
                    && app.proc.child.exited()?.is_some_and(|s| s.success())
                {
                    app.judged = true;
                    // The reader thread may still hold the last line for a moment
                    // (longer on a loaded machine): wait for it, a bounded time.
                    let deadline = Instant::now() + SUMMARY_WAIT;
                    loop {
                        app.lines.extend(app.proc.child.new_lines());
                        app.complete = app.summary().is_some_and(|l| {
                            l.contains(": Complete:") || l.contains(": MaxPages:")
                        });
                        if app.complete || Instant::now() >= deadline {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
            let complete = self.apps.iter().all(|a| a.complete);
            let mut gave_up = None;
            // A process started or died: `<out>/pids` is rewritten.
            let mut changed = false;
            let supervised = self
                .managers
                .iter_mut()
                .map(|s| (s, false, false))
                .chain(self.coordinator.iter_mut().map(|s| (s, false, false)))
                .chain(self.resolvers.iter_mut().map(|s| (s, false, false)))
                .chain(self.downloaders.iter_mut().map(|s| (s, false, false)))
                .chain(
                    self.apps
                        .iter_mut()
                        .map(|a| (&mut a.proc, a.complete, !a.judged)),
                );
            for (s, done, unjudged) in supervised {
                // A part that exited 0 after this round's look at the parts is
                // judged by its summary line in the next round.
                let event = s.check(&self.logs, |status| done || (unjudged && status.success()))?;
                match event {
                    Event::None => {}
                    Event::Restarted { pid } => {
                        changed = true;
                        progress.println(&format!(
                            "{}: {} started again (pid {pid}, restart {})",
                            self.what,
                            s.name(),
                            s.restarts
                        ));
                    }
                    Event::Died {
                        pid,
                        status,
                        verdict,
                        ran,
                    } => {
                        changed = true;
                        let how = describe(Some(status));
                        match verdict {
                            Verdict::Restart { delay, in_a_row } => {
                                let why = if in_a_row > 0 {
                                    format!(
                                        "before it registered: crash-loop death {in_a_row} of {} in a row",
                                        s.deaths.policy().max_deaths
                                    )
                                } else {
                                    format!("after {:.1} s", ran.as_secs_f64())
                                };
                                let line = format!(
                                    "{}: {} (pid {pid}) died ({how}) {why}; starting it again in {:.1} s",
                                    self.what,
                                    s.name(),
                                    delay.as_secs_f64(),
                                );
                                note_in_log(
                                    s.child.log_path(),
                                    &format!("--- polycrawl supervisor: {line}"),
                                );
                                progress.println(&line);
                            }
                            Verdict::GiveUp { in_a_row } => {
                                let line = crash_loop_line(
                                    s.name(),
                                    pid,
                                    &how,
                                    in_a_row,
                                    s.deaths.policy(),
                                );
                                note_in_log(
                                    s.child.log_path(),
                                    &format!("--- polycrawl supervisor: {line}"),
                                );
                                // The reason on its own line; the log tail after it.
                                let tail = s.child.log_tail(15);
                                gave_up = Some(match tail.strip_prefix("; ") {
                                    Some(tail) => format!("{line}\n{tail}"),
                                    None => line,
                                });
                            }
                        }
                    }
                }
                if gave_up.is_some() {
                    break;
                }
            }
            if changed {
                self.write_pids()?;
            }
            if let Some(why) = gave_up {
                break Ending::GaveUp(why);
            }
            if complete {
                break Ending::Complete;
            }
            if Instant::now() >= next_status {
                next_status = Instant::now() + STATUS_EVERY;
                if let Some(s) = self.status(rt) {
                    progress.update(&s);
                    last_status = Some(s);
                }
            }
            exits::wait_after(exits_seen, TICK);
        };
        if ending == Ending::Complete {
            if let Some(s) = self.status(rt) {
                progress.update(&s);
                last_status = Some(s);
            }
        }
        let restarts = self
            .all()
            .filter(|s| s.restarts > 0)
            .map(|s| (s.name().to_owned(), s.restarts))
            .collect();
        let part_summaries = self.part_summaries();
        Ok(Finished {
            ending,
            app_summary: part_summaries.first().cloned().flatten(),
            part_summaries,
            elapsed: started.elapsed(),
            last_status,
            manager_addr: self.manager_addr().to_owned(),
            restarts,
        })
    }

    /// Stops everything in order (the application's parts, then downloaders and
    /// resolvers, then the managers), each with SIGTERM and a grace period, then
    /// SIGKILL; a process waiting for its restart is left dead. Returns the
    /// processes that did not exit cleanly, the CPU time each one used and the
    /// parts' last summaries.
    pub fn stop(mut self) -> Stopped {
        let mut unclean = Vec::new();
        let mut note = |c: &Child, s: Option<ExitStatus>| {
            if !s.is_some_and(|s| s.success()) {
                unclean.push(format!("{} ({})", c.name(), describe(s)));
            }
        };
        let mut app_cpu = Vec::new();
        let mut threads = Vec::new();
        for app in &mut self.apps {
            if app.proc.alive() && !app.complete {
                app.proc.child.terminate();
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        for app in &mut self.apps {
            if app.proc.alive() {
                let s = app.proc.child.wait_or_kill(deadline);
                note(&app.proc.child, s);
            }
        }
        for app in &mut self.apps {
            // Every app has exited: its reader thread reaches the end of the pipe.
            app.lines
                .extend(app.proc.child.rest_of_lines(Duration::from_millis(500)));
            app_cpu.push((app.proc.name().to_owned(), app.proc.cpu()));
            threads.push((
                app.proc.name().to_owned(),
                app.proc.child.threads().busiest(),
            ));
        }
        let deadline = Instant::now() + STOP_GRACE;
        for c in self
            .downloaders
            .iter_mut()
            .chain(self.resolvers.iter_mut())
            .chain(self.coordinator.iter_mut())
        {
            if c.alive() {
                c.child.terminate();
            }
        }
        for c in self
            .downloaders
            .iter_mut()
            .chain(self.resolvers.iter_mut())
            .chain(self.coordinator.iter_mut())
        {
            if c.alive() {
                let s = c.child.wait_or_kill(deadline);
                note(&c.child, s);
            }
        }
        for m in self.managers.iter_mut().filter(|m| m.alive()) {
            m.child.terminate();
        }
        let deadline = Instant::now() + STOP_GRACE;
        let mut manager_stages = Vec::new();
        for m in self.managers.iter_mut().filter(|m| m.alive()) {
            let s = m.child.wait_or_kill(deadline);
            note(&m.child, s);
            let lines = m.child.rest_of_lines(Duration::from_millis(500));
            manager_stages.extend(
                lines
                    .into_iter()
                    .filter(|l| l.starts_with("manager stages ")),
            );
        }
        let mut cpu = Vec::new();
        for c in self
            .managers
            .iter_mut()
            .chain(self.coordinator.iter_mut())
            .chain(self.resolvers.iter_mut())
            .chain(self.downloaders.iter_mut())
        {
            cpu.push((c.name().to_owned(), c.cpu()));
            threads.push((c.name().to_owned(), c.child.threads().busiest()));
        }
        cpu.extend(app_cpu);
        let _ = std::fs::remove_file(&self.pids_file);
        let part_summaries = self.part_summaries();
        Stopped {
            unclean,
            cpu,
            threads,
            manager_stages,
            app_summary: part_summaries.first().cloned().flatten(),
            part_summaries,
        }
    }
}

/// The admin page's address if `line` is the manager's
/// `manager admin listening addr=IP:PORT`.
fn admin_address(line: &str) -> Option<&str> {
    line.strip_prefix("manager admin listening addr=")?
        .split_whitespace()
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_lines() {
        assert_eq!(
            admin_address("manager admin listening addr=127.0.0.1:7401"),
            Some("127.0.0.1:7401")
        );
        assert_eq!(admin_address("manager listening addr=127.0.0.1:1"), None);
    }

    #[test]
    fn a_restart_command_keeps_the_first_ports() {
        let mut spec = Spec::new(
            Path::new("/bin/polycrawl"),
            "manager",
            Path::new("/c.ron"),
            "t",
        );
        spec.arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--state")
            .arg("/s");
        spec.set_flag("--listen", "127.0.0.1:4000");
        spec.set_flag("--admin-listen", "127.0.0.1:4001");
        let args: Vec<String> = spec
            .command()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "manager",
                "--config",
                "/c.ron",
                "--listen",
                "127.0.0.1:4000",
                "--state",
                "/s",
                "--admin-listen",
                "127.0.0.1:4001"
            ]
        );
    }

    #[test]
    fn secrets_are_for_the_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("admin-token");
        write_secret(&path, "abc").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "abc\n");
    }

    #[test]
    fn tokens_are_random_hex() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn generated_config_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path()).unwrap();
        let mut config = Config::default();
        layout.apply(&mut config);
        config.downloader.extra_ca_file = Some(dir.path().join("ca.pem"));
        config.resolver.name_servers = vec!["127.0.0.1:5353".parse().unwrap()];
        write_config(&layout.config, &config, "a test").unwrap();
        assert_eq!(Config::load(&layout.config).unwrap(), config);
    }
}
