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
//! **Supervision** ([`super::supervise`], [`super::supervised`]). A process that dies otherwise
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

//! This module holds the run's plan, its record ([`Finished`], [`Stopped`]), the
//! running system's watch loop and stop order, and what it answers (addresses,
//! pids, the managers' added-up status); the start order is [`super::launch`]'s.
//! It must never decide the restart rule ([`super::supervise`]) nor name a run's
//! files ([`super::layout`]).

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use anyhow::Context;
use spool::protocol::{StatusSnapshot, Token};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::child::{Child, describe};
use super::exits;
use super::progress::Progress;
use super::supervise::{Verdict, crash_loop_line};
use super::supervised::{Event, note_in_log};

use super::layout::Layout;
pub use super::supervise::{Supervision, SupervisionArgs};
use super::supervised::Supervised;
use super::threads::ThreadCpu;
use crate::config::Config;

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
    pub site_policy: coordinator::Policy,
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
    /// Every death the watch loop saw (not a process's expected end): the
    /// process's name and when, unix µs, in time order.
    pub deaths: Vec<(String, u64)>,
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
    /// Part `proc`, just started.
    fn new(proc: Supervised) -> AppPart {
        AppPart {
            proc,
            lines: Vec::new(),
            complete: false,
            judged: false,
        }
    }

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
        let started = super::launch::start(plan, shutdown, what)?;
        let l = &plan.layout;
        let system = System {
            managers: started.managers,
            coordinator: started.coordinator,
            resolvers: started.resolvers,
            downloaders: started.downloaders,
            apps: started.parts.into_iter().map(AppPart::new).collect(),
            manager_addrs: started.manager_addrs,
            admin_addr: started.admin_addr,
            admin_token: started.admin_token,
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
            .map(|s| (s.name().to_owned(), s.child().pid()))
            .collect()
    }

    /// Every running process, as (name, pid, network namespace if not here).
    pub fn placed(&self) -> Vec<(String, u32, Option<String>)> {
        self.all()
            .filter(|s| s.alive())
            .map(|s| {
                (
                    s.name().to_owned(),
                    s.child().pid(),
                    s.netns().map(str::to_owned),
                )
            })
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
            let complete = self.judge_parts()?;
            if let Some(why) = self.check_processes(progress)? {
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
            .filter(|s| s.restarts() > 0)
            .map(|s| (s.name().to_owned(), s.restarts()))
            .collect();
        let mut deaths: Vec<(String, u64)> = self
            .all()
            .flat_map(|s| s.died_at().iter().map(|t| (s.name().to_owned(), *t)))
            .collect();
        deaths.sort_by_key(|(_, t)| *t);
        let part_summaries = self.part_summaries();
        Ok(Finished {
            ending,
            app_summary: part_summaries.first().cloned().flatten(),
            part_summaries,
            elapsed: started.elapsed(),
            last_status,
            manager_addr: self.manager_addr().to_owned(),
            restarts,
            deaths,
        })
    }

    /// Reads the parts' new lines and judges their exits: a part's exit 0 is its
    /// end if its summary says the crawl is done; an exit 0 after a SIGTERM from
    /// outside is a death like any. Whether every part is complete.
    fn judge_parts(&mut self) -> anyhow::Result<bool> {
        for app in &mut self.apps {
            app.lines.extend(app.proc.child_mut().new_lines());
            app.judged = false;
            if !app.complete
                && app.proc.alive()
                && app.proc.child_mut().exited()?.is_some_and(|s| s.success())
            {
                app.judged = true;
                app.complete = read_summary(app);
            }
        }
        Ok(self.apps.iter().all(|a| a.complete))
    }

    /// Checks every process for a death and performs due restarts, saying so on
    /// the progress display; rewrites `<out>/pids` when one started or died. The
    /// reason, if one is given up on.
    fn check_processes(&mut self, progress: &mut Progress) -> anyhow::Result<Option<String>> {
        let mut gave_up = None;
        let mut changed = false;
        // (process, its crawl is complete, an exit 0 is still to be judged)
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
                        s.restarts()
                    ));
                }
                Event::Died {
                    pid,
                    status,
                    verdict,
                    ran,
                } => {
                    changed = true;
                    let death = Death {
                        pid,
                        status,
                        verdict,
                        ran,
                    };
                    gave_up = death.report(self.what, s, progress);
                }
            }
            if gave_up.is_some() {
                break;
            }
        }
        if changed {
            self.write_pids()?;
        }
        Ok(gave_up)
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
                app.proc.child_mut().terminate();
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        for app in &mut self.apps {
            if app.proc.alive() {
                let s = app.proc.child_mut().wait_or_kill(deadline);
                note(app.proc.child(), s);
            }
        }
        for app in &mut self.apps {
            // Every app has exited: its reader thread reaches the end of the pipe.
            app.lines.extend(
                app.proc
                    .child_mut()
                    .rest_of_lines(Duration::from_millis(500)),
            );
            app_cpu.push((app.proc.name().to_owned(), app.proc.cpu()));
            threads.push((
                app.proc.name().to_owned(),
                app.proc.child_mut().threads().busiest(),
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
                c.child_mut().terminate();
            }
        }
        for c in self
            .downloaders
            .iter_mut()
            .chain(self.resolvers.iter_mut())
            .chain(self.coordinator.iter_mut())
        {
            if c.alive() {
                let s = c.child_mut().wait_or_kill(deadline);
                note(c.child(), s);
            }
        }
        for m in self.managers.iter_mut().filter(|m| m.alive()) {
            m.child_mut().terminate();
        }
        let deadline = Instant::now() + STOP_GRACE;
        let mut manager_stages = Vec::new();
        for m in self.managers.iter_mut().filter(|m| m.alive()) {
            let s = m.child_mut().wait_or_kill(deadline);
            note(m.child(), s);
            let lines = m.child_mut().rest_of_lines(Duration::from_millis(500));
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
            threads.push((c.name().to_owned(), c.child_mut().threads().busiest()));
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

/// Reads part `app`'s lines until its summary line says whether its crawl is
/// complete. The reader thread may still hold the last line for a moment (longer
/// on a loaded machine): it waits for it, a bounded time.
fn read_summary(app: &mut AppPart) -> bool {
    let deadline = Instant::now() + SUMMARY_WAIT;
    let done = |app: &AppPart| {
        app.summary().is_some_and(|l| {
            l.contains(": Complete:") || l.contains(": Incomplete:") || l.contains(": MaxPages:")
        })
    };
    app.lines.extend(app.proc.child_mut().new_lines());
    while !done(app) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        // Woken by the reader thread's next line, not after a fixed nap: the
        // crawl's end waits on this. `None`: its output ended or the wait ran out.
        let Some(line) = app.proc.child_mut().next_line(left) else {
            return false;
        };
        app.lines.push(line);
    }
    true
}

/// One death the watch loop saw.
struct Death {
    pid: u32,
    status: ExitStatus,
    verdict: Verdict,
    ran: Duration,
}

impl Death {
    /// Says what happened to `s` on the progress display and in its log; the
    /// reason (with its log's tail) when it is given up on.
    fn report(&self, what: &str, s: &Supervised, progress: &mut Progress) -> Option<String> {
        let pid = self.pid;
        let how = describe(Some(self.status));
        match self.verdict {
            Verdict::Restart { delay, in_a_row } => {
                let why = if in_a_row > 0 {
                    format!(
                        "before it registered: crash-loop death {in_a_row} of {} in a row",
                        s.policy().max_deaths
                    )
                } else {
                    format!("after {:.1} s", self.ran.as_secs_f64())
                };
                let line = format!(
                    "{what}: {} (pid {pid}) died ({how}) {why}; starting it again in {:.1} s",
                    s.name(),
                    delay.as_secs_f64(),
                );
                note_in_log(
                    s.child().log_path(),
                    &format!("--- polycrawl supervisor: {line}"),
                );
                progress.println(&line);
                None
            }
            Verdict::GiveUp { in_a_row } => {
                let line = crash_loop_line(s.name(), pid, &how, in_a_row, s.policy());
                note_in_log(
                    s.child().log_path(),
                    &format!("--- polycrawl supervisor: {line}"),
                );
                // The reason on its own line; the log tail after it.
                let tail = s.child().log_tail(15);
                Some(match tail.strip_prefix("; ") {
                    Some(tail) => format!("{line}\n{tail}"),
                    None => line,
                })
            }
        }
    }
}

/// The admin page's address if `line` is the manager's
/// `manager admin listening addr=IP:PORT`.
pub(super) fn admin_address(line: &str) -> Option<&str> {
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
}
