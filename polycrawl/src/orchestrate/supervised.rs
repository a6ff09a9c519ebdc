//! `Supervised`: one process of a run under the supervisor, kept so it can be
//! started again: its command (`Spec`: a `Command` cannot be cloned), its
//! current process, whether this start is ready, its deaths and restarts, and its
//! CPU time over all its starts. [`super::supervise`] holds the rule it applies
//! (restart with back-off, or give up on a crash loop); [`super::system`] runs the
//! loop that checks every supervised process.
//!
//! A supervised process is signalled only through its own [`Child`] guard (its own
//! pid); this module must never signal anything else, nor decide when a run ends.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use super::child::Child;
use super::supervise::{
    COORDINATOR, COORDINATOR_READY, Deaths, LISTENING, ReadyWatch, Supervision, Verdict,
};

/// How to start one process, kept so it can be started again (a `Command` cannot
/// be cloned).
#[derive(Debug, Clone)]
pub(super) struct Spec {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(String, OsString)>,
    /// The network namespace to run in (`ip netns exec`, which execs the
    /// program: the pid stays the program's).
    netns: Option<String>,
}

impl Spec {
    /// `EXE SUB --config CONFIG` with the control token in `POLYCRAWL_TOKEN`.
    pub(super) fn new(exe: &Path, sub: &str, config: &Path, token: &str) -> Spec {
        Spec {
            program: exe.to_owned(),
            args: vec![sub.into(), "--config".into(), config.into()],
            env: vec![("POLYCRAWL_TOKEN".to_owned(), token.into())],
            netns: None,
        }
    }

    pub(super) fn arg(&mut self, arg: impl Into<OsString>) -> &mut Spec {
        self.args.push(arg.into());
        self
    }

    pub(super) fn env(&mut self, key: &str, value: impl Into<OsString>) -> &mut Spec {
        self.env.push((key.to_owned(), value.into()));
        self
    }

    /// Sets the value following flag `flag` (which must be there).
    pub(super) fn set_flag(&mut self, flag: &str, value: impl Into<OsString>) {
        if let Some(i) = self.args.iter().position(|a| a == flag) {
            if let Some(v) = self.args.get_mut(i + 1) {
                *v = value.into();
                return;
            }
        }
        self.args.push(flag.into());
        self.args.push(value.into());
    }

    /// Runs it in network namespace `netns` (`ip netns exec`), or here.
    pub(super) fn in_netns(&mut self, netns: Option<String>) -> &mut Spec {
        self.netns = netns;
        self
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
pub(super) struct Supervised {
    spec: Spec,
    child: Child,
    started: Instant,
    /// Whether this start registered (or, for a manager, listens).
    ready: ReadyWatch,
    deaths: Deaths,
    /// Dead, to be started again at this time.
    restart_at: Option<Instant>,
    restarts: u32,
    /// When it was seen to die, unix µs, each time (the demo attributes
    /// refetches to these, see `websim_check`).
    died_at: Vec<u64>,
    /// CPU time of its earlier processes.
    cpu_before: Duration,
}

/// What one check of a supervised process found.
pub(super) enum Event {
    /// Nothing happened.
    None,
    /// It died (and is started again later, or given up on: the verdict).
    Died {
        pid: u32,
        status: ExitStatus,
        verdict: Verdict,
        ran: Duration,
    },
    /// It was started again.
    Restarted { pid: u32 },
}

impl Supervised {
    /// Starts `spec` as process `name`, its output in `logs/<name>.log`.
    pub(super) fn spawn(
        name: &str,
        spec: Spec,
        logs: &Path,
        policy: Supervision,
    ) -> anyhow::Result<Self> {
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
            died_at: Vec::new(),
            cpu_before: Duration::ZERO,
        })
    }

    pub(super) fn name(&self) -> &str {
        self.child.name()
    }

    /// Running (not dead and waiting for its restart).
    pub(super) fn alive(&self) -> bool {
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
    pub(super) fn check(
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
        self.died_at.push(unix_us());
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

    /// CPU time (user + system) over all its starts.
    pub(super) fn cpu(&mut self) -> Duration {
        self.cpu_before + self.child.cpu()
    }

    /// Its current process.
    pub(super) fn child(&self) -> &Child {
        &self.child
    }

    /// Its current process, to read its lines or signal it.
    pub(super) fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// How many times it was started again.
    pub(super) fn restarts(&self) -> u32 {
        self.restarts
    }

    /// When it was seen to die (not its expected end), unix µs, in order.
    pub(super) fn died_at(&self) -> &[u64] {
        &self.died_at
    }

    /// The rule it is supervised by.
    pub(super) fn policy(&self) -> Supervision {
        self.deaths.policy()
    }

    /// The network namespace it runs in, if not here.
    pub(super) fn netns(&self) -> Option<&str> {
        self.spec.netns.as_deref()
    }

    /// Waits (at most `timeout`, or until `cancelled`) for the stdout line that
    /// starts with `prefix`, which makes this start ready; returns it.
    pub(super) fn wait_ready_line(
        &mut self,
        prefix: &str,
        timeout: Duration,
        cancelled: impl Fn() -> bool,
    ) -> anyhow::Result<String> {
        let line = self
            .child
            .wait_line(|l| l.starts_with(prefix), timeout, cancelled)?;
        self.ready.set_ready();
        Ok(line)
    }

    /// Starts it again, after a death, with `flag` set to `value` (the ports a
    /// manager chose at its first start, where the others look for it).
    pub(super) fn keep_flag(&mut self, flag: &str, value: impl Into<OsString>) {
        self.spec.set_flag(flag, value);
    }
}

/// Appends `line` to a child's log file (best effort: it is a note for people).
pub(super) fn note_in_log(log: &Path, line: &str) {
    use std::io::Write as _;
    if let Ok(mut f) = std::fs::File::options().append(true).open(log) {
        let _ = writeln!(f, "{line}");
    }
}

/// Now, unix µs (the clock websim stamps its request log with).
fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
