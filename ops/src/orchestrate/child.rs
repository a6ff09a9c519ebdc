//! [`Child`]: one crawler process started by `polycrawl demo` / `polycrawl crawl`,
//! owned by a guard.
//!
//! Its stdout is read line by line on a thread (so the pipe never fills), copied to
//! `<logs>/<name>.stdout` and handed to the orchestrator; its stderr (the `tracing`
//! log) goes straight to `<logs>/<name>.log`. [`Child::stop`] asks it to finish
//! (SIGTERM), waits, then kills it (SIGKILL); dropping the guard kills (SIGKILL) and
//! reaps a child still running, so no process outlives the orchestrator on an error
//! or a panic. Processes are only ever signalled by their own pid.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// How often a stopping child is checked for its exit.
const POLL: Duration = Duration::from_millis(20);

/// A running child process, killed and reaped on drop.
#[derive(Debug)]
pub struct Child {
    name: String,
    child: std::process::Child,
    lines: Receiver<String>,
    log: PathBuf,
    status: Option<ExitStatus>,
}

impl Child {
    /// Starts `cmd` (stdin closed, stdout piped, stderr to `<logs>/<name>.log`).
    pub fn spawn(name: &str, mut cmd: Command, logs: &Path) -> anyhow::Result<Child> {
        let log = logs.join(format!("{name}.log"));
        let stderr = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let stdout_copy = logs.join(format!("{name}.stdout"));
        let mut copy = File::create(&stdout_copy)
            .with_context(|| format!("creating {}", stdout_copy.display()))?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr);
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

    /// Its exit status if it has exited (the process is reaped then).
    pub fn exited(&mut self) -> anyhow::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = self
                .child
                .try_wait()
                .with_context(|| format!("checking on {}", self.name))?;
        }
        Ok(self.status)
    }

    /// Sends SIGTERM (unless it has exited already).
    pub fn terminate(&mut self) {
        if let Ok(None) = self.exited() {
            let pid = Pid::from_raw(self.child.id() as i32);
            let _ = kill(pid, Signal::SIGTERM);
        }
    }

    /// Waits until `deadline` for the exit, then kills it (SIGKILL); reaps it.
    pub fn wait_or_kill(&mut self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            match self.exited() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
                _ => {
                    tracing::warn!(process = %self.name, pid = self.pid(), "did not stop in time: killing it");
                    let _ = self.child.kill();
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

/// An exit status in words.
pub fn describe(status: Option<ExitStatus>) -> String {
    match status {
        Some(s) => s.to_string(),
        None => "status unknown".to_owned(),
    }
}
