//! [`Child`]: one crawler process started by `polycrawl demo` / `polycrawl crawl`,
//! owned by a guard.
//!
//! Its stdout is read line by line on a thread (so the pipe never fills), copied to
//! `<logs>/<name>.stdout` and handed to the orchestrator; its stderr (the `tracing`
//! log) goes to `<logs>/<name>.log`. Both files are appended to, so a restarted
//! process (and a resumed run) keeps the earlier lines. [`Child::stop`] asks it to
//! finish (SIGTERM), waits, then kills it (SIGKILL); dropping the guard kills
//! (SIGKILL) and reaps a child still running, so no process outlives the
//! orchestrator on an error or a panic. Processes are only ever signalled by their
//! own pid.
//!
//! **Dying with the parent.** A guard cannot run when the orchestrator itself is
//! killed (SIGKILL), so every child is also tied to it by the kernel: [`Child::spawn`]
//! sets [`PARENT_ENV`] to the orchestrator's pid, and a `polycrawl` child started
//! that way calls [`die_with_parent`] first thing, which sets `PR_SET_PDEATHSIG`
//! to SIGKILL and exits at once if its parent is already gone (the race between
//! the fork and the `prctl`). It is done in the child after `exec` rather than in a
//! `pre_exec` hook because the workspace forbids `unsafe`; the effect is the same
//! for a binary that is not set-uid. SIGKILL rather than SIGTERM: a component
//! whose orchestrator vanished must not linger for a drain, and every component
//! is crash-safe (kill -9 loses no URL). The kernel sends the signal when the
//! *thread* that forked the child exits, so children must be spawned from a thread
//! that lives as long as the orchestrator: `polycrawl demo` / `crawl` spawn (and
//! restart) every child from the main thread.
//!
//! **Own process group.** Each child gets a process group of its own, so a Ctrl-C
//! in the terminal (SIGINT to the foreground group) reaches only the orchestrator,
//! which then stops the children in order instead of all of them at once.
//!
//! [`Child::cpu`] is the CPU time (user + system) the process used: read from
//! `/proc/<pid>/stat` before every reaping attempt, so the last reading of a process
//! that exited is its final figure (a zombie keeps its times until it is reaped).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::threads::Threads;
use crate::procs::cpu_time;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The environment variable that carries the orchestrator's pid to a child that
/// must die with it (see [`die_with_parent`]).
pub const PARENT_ENV: &str = "POLYCRAWL_PARENT_PID";

/// How often a stopping child is checked for its exit if no exit wakes the wait
/// (`exits.rs`).
const POLL: Duration = Duration::from_millis(5);

/// A running child process, killed and reaped on drop.
#[derive(Debug)]
pub struct Child {
    name: String,
    child: std::process::Child,
    lines: Receiver<String>,
    log: PathBuf,
    status: Option<ExitStatus>,
    cpu: Duration,
    threads: Threads,
}

impl Child {
    /// Starts `cmd` (stdin closed, stdout piped, stderr appended to
    /// `<logs>/<name>.log`) in a process group of its own, with [`PARENT_ENV`] set to
    /// this process's pid. Call it from the main thread (see the module docs).
    pub fn spawn(name: &str, mut cmd: Command, logs: &Path) -> anyhow::Result<Child> {
        let log = logs.join(format!("{name}.log"));
        let stderr = append(&log)?;
        let stdout_copy = logs.join(format!("{name}.stdout"));
        let mut copy = append(&stdout_copy)?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .process_group(0)
            .env(PARENT_ENV, std::process::id().to_string());
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting the {name} process"))?;
        let out = child.stdout.take().context("no stdout pipe")?;
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("{name}-stdout"))
            .spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    let _ = writeln!(copy, "{line}");
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .context("starting a stdout reader thread")?;
        Ok(Child {
            name: name.to_owned(),
            child,
            lines,
            log,
            status: None,
            cpu: Duration::ZERO,
            threads: Threads::default(),
        })
    }

    /// The name it was started under (`manager`, `dl-1`...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Where its stderr (log) goes.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Waits up to `timeout` for a stdout line for which `pred` holds; an error if
    /// the process exits first, the time runs out or `cancelled()` turns true.
    pub fn wait_line(
        &mut self,
        pred: impl Fn(&str) -> bool,
        timeout: Duration,
        cancelled: impl Fn() -> bool,
    ) -> anyhow::Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            anyhow::ensure!(!cancelled(), "interrupted");
            let left = deadline.saturating_duration_since(Instant::now());
            anyhow::ensure!(
                !left.is_zero(),
                "{} printed no ready line within {timeout:?}{}",
                self.name,
                self.log_tail(10)
            );
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(100)))
            {
                Ok(line) if pred(&line) => return Ok(line),
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().ok();
                    anyhow::bail!(
                        "{} exited ({}) before it was ready{}",
                        self.name,
                        describe(status),
                        self.log_tail(10)
                    );
                }
            }
        }
    }

    /// The stdout lines printed since the last call.
    pub fn new_lines(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            match self.lines.try_recv() {
                Ok(line) => out.push(line),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return out,
            }
        }
    }

    /// Its next line, waiting at most `timeout`; `None` at the end of its stdout or
    /// when the wait runs out.
    pub fn next_line(&mut self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// The lines not yet taken, up to the end of its stdout (once it has exited),
    /// waiting at most `timeout` for the reader thread to reach that end.
    pub fn rest_of_lines(&mut self, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => out.push(line),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return out,
            }
        }
    }

    /// CPU time (user + system) used so far; once it has exited, in total.
    pub fn cpu(&mut self) -> Duration {
        if self.status.is_none() {
            self.sample_cpu();
        }
        self.cpu
    }

    /// Reads its CPU time from `/proc` (kept as is if the process is gone), and its
    /// threads' at most every [`super::threads::EVERY`].
    fn sample_cpu(&mut self) {
        if let Some(cpu) = cpu_time(self.child.id()) {
            self.cpu = cpu;
        }
        self.threads.sample(self.child.id());
    }

    /// Its threads' CPU times as last sampled (see [`super::threads`]).
    pub fn threads(&self) -> &Threads {
        &self.threads
    }

    /// Takes over the thread figures of the process it replaces (a restart).
    pub fn carry_threads(&mut self, earlier: Threads) {
        self.threads.absorb(earlier);
    }

    /// Gives up its thread figures (before it is replaced).
    pub fn take_threads(&mut self) -> Threads {
        std::mem::take(&mut self.threads)
    }

    /// Its exit status if it has exited (the process is reaped then).
    pub fn exited(&mut self) -> anyhow::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.sample_cpu();
            self.status = self
                .child
                .try_wait()
                .with_context(|| format!("checking on {}", self.name))?;
        }
        Ok(self.status)
    }

    /// Sends SIGTERM (unless it has exited already); its threads are sampled first,
    /// since they end with it.
    pub fn terminate(&mut self) {
        if self.status.is_none() {
            self.threads.sample_now(self.child.id());
        }
        if let Ok(None) = self.exited() {
            let pid = Pid::from_raw(self.child.id() as i32);
            let _ = kill(pid, Signal::SIGTERM);
        }
    }

    /// Waits until `deadline` for the exit, then kills it (SIGKILL); reaps it.
    pub fn wait_or_kill(&mut self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            let seen = super::exits::seen();
            match self.exited() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => super::exits::wait_after(seen, POLL),
                _ => {
                    tracing::warn!(process = %self.name, pid = self.pid(), "did not stop in time: killing it");
                    let _ = self.child.kill();
                    self.sample_cpu();
                    self.status = self.child.wait().ok();
                    return self.status;
                }
            }
        }
    }

    /// SIGTERM, up to `grace` to finish, then SIGKILL; reaped either way.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.terminate();
        self.wait_or_kill(Instant::now() + grace)
    }

    /// The last `n` lines of its log, for an error message (empty if none).
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        if lines.is_empty() {
            return String::new();
        }
        let tail = lines[lines.len().saturating_sub(n)..].join("\n  ");
        format!("; last lines of {}:\n  {tail}", self.log.display())
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Opens `path` for appending (created if missing).
fn append(path: &Path) -> anyhow::Result<File> {
    File::options()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

/// Ties this process to the orchestrator that started it, if it was started by
/// [`Child::spawn`] ([`PARENT_ENV`] set): the kernel sends SIGKILL when the parent
/// dies. Returns an error if the variable is malformed; exits at once (code 1) if
/// the parent is already gone. Without the variable it does nothing.
pub fn die_with_parent() -> anyhow::Result<()> {
    let Some(value) = std::env::var_os(PARENT_ENV) else {
        return Ok(());
    };
    let parent: u32 = value
        .to_str()
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("{PARENT_ENV}={value:?} is not a process id"))?;
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .context("setting the parent-death signal (prctl)")?;
    // The parent may have died between our fork and the prctl: then we were
    // already re-parented and no signal will come.
    if std::os::unix::process::parent_id() != parent {
        eprintln!("polycrawl: the process that started this one (pid {parent}) is gone; exiting");
        std::process::exit(1);
    }
    Ok(())
}

/// An exit status in words.
pub fn describe(status: Option<ExitStatus>) -> String {
    match status {
        Some(s) => s.to_string(),
        None => "status unknown".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_child_reports_its_cpu_time_after_exit() {
        let logs = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"]);
        let mut child = Child::spawn("busy", cmd, logs.path()).unwrap();
        let status = child.wait_or_kill(Instant::now() + Duration::from_secs(60));
        assert!(status.is_some_and(|s| s.success()));
        let cpu = child.cpu();
        assert!(cpu >= Duration::from_millis(50), "{cpu:?}");
        assert_eq!(child.cpu(), cpu, "the figure stays once reaped");
    }
}
