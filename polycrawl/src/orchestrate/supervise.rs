//! The restart rule of `polycrawl crawl` and `polycrawl demo`: what the
//! supervisor ([`super::system`], over [`super::supervised`]) does when one of its
//! processes dies.
//!
//! A process dies for two kinds of reasons, and the rule tells them apart:
//! - **Killed after it worked**: the OOM killer, an operator, a node reboot, a
//!   crash after minutes of work. It is always started again, after a back-off of
//!   [`BACKOFF_MIN`] doubling to [`BACKOFF_MAX`] (back to the minimum once a
//!   process has run [`BACKOFF_RESET`]). Its state is crash-safe, so nothing is
//!   lost, and giving up on it would end a crawl for no fault of its own.
//! - **A crash loop**: it dies again within [`Supervision::crash_window`] of its
//!   start *before it is ready* (the manager: it printed its listening line; every
//!   other component: it logged `registered with the manager`). A bad config, a
//!   damaged state file or a missing library does that at every start, and
//!   restarting it forever only hides the fault. After
//!   [`Supervision::max_deaths`] such deaths in a row it is given up on: the run
//!   ends with a one-line reason ([`crash_loop_line`]). One death after the
//!   process was ready, or after the window, starts the count again.
//!
//! systemd can only count starts in a time window (`StartLimitIntervalSec`,
//! `StartLimitBurst`); `ops/systemd/` sets them so that only processes dying
//! within seconds of every start reach the limit (see `ops/systemd/README.md`).
//!
//! Readiness is read from the process's own output: its log file from the offset
//! where this start began (a component's `registered with the manager` line, at
//! `info`, the level the supervisor starts it at), or its stdout for the
//! manager. O(new log bytes) per look, and a process stops being looked at once
//! ready.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// First delay before a dead process is started again.
pub const BACKOFF_MIN: Duration = Duration::from_millis(200);
/// Longest delay before a dead process is started again.
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// A process that ran this long before it died starts again after [`BACKOFF_MIN`].
pub const BACKOFF_RESET: Duration = Duration::from_secs(30);
/// The log line every component but the manager writes once it registered.
pub const REGISTERED: &str = "registered with the manager";
/// The stdout line the manager prints once it listens.
pub const LISTENING: &str = "manager listening addr=";
/// The coordinator's process name (two-level mode).
pub const COORDINATOR: &str = "coordinator";
/// The stdout line `polycrawl coordinator` prints once it runs.
pub const COORDINATOR_READY: &str = "coordinator ready ";

/// When a process that keeps dying is given up on (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Supervision {
    /// Crash-loop deaths in a row that end the run (at least 1).
    pub max_deaths: u32,
    /// A death this soon after the start, before the process was ready, is a
    /// crash-loop death.
    pub crash_window: Duration,
}

impl Default for Supervision {
    fn default() -> Self {
        Supervision {
            max_deaths: 5,
            crash_window: Duration::from_secs(10),
        }
    }
}

/// The supervision flags of `polycrawl demo` and `polycrawl crawl`.
#[derive(Debug, Clone, clap::Args)]
pub struct SupervisionArgs {
    /// Give up (stop the run, exit non-zero) on a process in a crash loop: one
    /// that died this many times in a row within --crash-window seconds of its
    /// start, before it registered with the manager. A process that dies after it
    /// registered (killed, or crashed after working) is always started again,
    /// with back-off.
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_deaths: u32,
    /// How soon after its start a death, before registering, counts toward
    /// --max-deaths, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub crash_window: u64,
}

impl SupervisionArgs {
    /// The policy these flags describe.
    pub fn policy(&self) -> Supervision {
        Supervision {
            max_deaths: self.max_deaths,
            crash_window: Duration::from_secs(self.crash_window),
        }
    }
}

/// What the supervisor does about one death.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Start it again after `delay`.
    Restart {
        /// How long to wait before the restart.
        delay: Duration,
        /// Crash-loop deaths in a row so far (0: this death was not one).
        in_a_row: u32,
    },
    /// It died `in_a_row` times in a row in a crash loop: give up.
    GiveUp {
        /// Crash-loop deaths in a row.
        in_a_row: u32,
    },
}

/// The death record of one process: its back-off and its crash-loop deaths in a
/// row.
#[derive(Debug, Clone)]
pub struct Deaths {
    policy: Supervision,
    in_a_row: u32,
    backoff: Duration,
}

impl Deaths {
    /// No death yet.
    pub fn new(policy: Supervision) -> Deaths {
        Deaths {
            policy,
            in_a_row: 0,
            backoff: BACKOFF_MIN,
        }
    }

    /// The policy it applies.
    pub fn policy(&self) -> Supervision {
        self.policy
    }

    /// Records a death of a process that ran `ran` since its start and was
    /// `ready` (see the module docs) or not.
    pub fn died(&mut self, ran: Duration, ready: bool) -> Verdict {
        if !ready && ran < self.policy.crash_window {
            self.in_a_row += 1;
        } else {
            self.in_a_row = 0;
        }
        if self.in_a_row >= self.policy.max_deaths {
            return Verdict::GiveUp {
                in_a_row: self.in_a_row,
            };
        }
        // A run that was ready and lasted past the crash window, or a long one,
        // was healthy: its restart need not wait.
        if ran >= BACKOFF_RESET || (ready && ran >= self.policy.crash_window) {
            self.backoff = BACKOFF_MIN;
        }
        let delay = self.backoff;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
        Verdict::Restart {
            delay,
            in_a_row: self.in_a_row,
        }
    }
}

/// The one line that reports giving up on `name` (pid `pid`), whose last death
/// was `how`.
pub fn crash_loop_line(
    name: &str,
    pid: u32,
    how: &str,
    in_a_row: u32,
    policy: Supervision,
) -> String {
    format!(
        "{name} (pid {pid}) is in a crash loop: it died {in_a_row} times in a row within {} s of \
         starting, before it registered (last: {how}); not restarting it",
        policy.crash_window.as_secs()
    )
}

/// Whether one start of a process became ready (see the module docs), read from
/// its log file where this start's lines begin.
#[derive(Debug)]
pub struct ReadyWatch {
    log: PathBuf,
    /// Where the next look reads from (the start of a line).
    offset: u64,
    ready: bool,
}

impl ReadyWatch {
    /// Watches `log` from its current end (call it just before the start).
    pub fn new(log: &Path) -> ReadyWatch {
        let offset = std::fs::metadata(log).map_or(0, |m| m.len());
        ReadyWatch {
            log: log.to_owned(),
            offset,
            ready: false,
        }
    }

    /// Ready now, whatever the log says (the manager's listening line was read).
    pub fn set_ready(&mut self) {
        self.ready = true;
    }

    /// Whether [`set_ready`](Self::set_ready) was called (the log is not read).
    pub fn ready_set(&self) -> bool {
        self.ready
    }

    /// Whether this start is ready: looks at the log lines written since the last
    /// look for [`REGISTERED`].
    pub fn ready(&mut self) -> bool {
        if self.ready {
            return true;
        }
        let Ok(mut file) = std::fs::File::open(&self.log) else {
            return false;
        };
        let mut text = Vec::new();
        if file.seek(SeekFrom::Start(self.offset)).is_err() || file.read_to_end(&mut text).is_err()
        {
            return false;
        }
        // Only whole lines: a line being written is read again next time.
        let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let found = text[..whole]
            .split(|b| *b == b'\n')
            .any(|line| String::from_utf8_lossy(line).contains(REGISTERED));
        self.offset += whole as u64;
        self.ready = found;
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: Supervision = Supervision {
        max_deaths: 3,
        crash_window: Duration::from_secs(10),
    };

    fn restart(ms: u64, in_a_row: u32) -> Verdict {
        Verdict::Restart {
            delay: Duration::from_millis(ms),
            in_a_row,
        }
    }

    #[test]
    fn a_process_killed_after_it_worked_is_always_restarted() {
        let mut d = Deaths::new(POLICY);
        let s = Duration::from_secs;
        // Killed soon after its start, but registered: not a crash loop, however
        // often.
        for _ in 0..50 {
            assert!(matches!(
                d.died(s(2), true),
                Verdict::Restart { in_a_row: 0, .. }
            ));
        }
        // Killed before it registered, but after the window: not one either.
        assert!(matches!(
            d.died(s(11), false),
            Verdict::Restart { in_a_row: 0, .. }
        ));
        // The back-off grows to its maximum; a healthy run (ready and past the
        // window, or long) resets it.
        assert_eq!(d.died(s(1), true), restart(5_000, 0));
        assert_eq!(d.died(s(10), true), restart(200, 0));
        assert_eq!(d.died(s(1), true), restart(400, 0));
        assert_eq!(d.died(s(29), false), restart(800, 0));
        assert_eq!(d.died(BACKOFF_RESET, false), restart(200, 0));
    }

    #[test]
    fn a_crash_loop_is_given_up_on_after_max_deaths_in_a_row() {
        let mut d = Deaths::new(POLICY);
        let early = Duration::from_millis(300);
        assert_eq!(d.died(early, false), restart(200, 1));
        assert_eq!(d.died(early, false), restart(400, 2));
        // One start that registered breaks the row.
        assert_eq!(d.died(early, true), restart(800, 0));
        assert_eq!(d.died(early, false), restart(1_600, 1));
        assert_eq!(d.died(early, false), restart(3_200, 2));
        assert_eq!(d.died(early, false), Verdict::GiveUp { in_a_row: 3 });
        let line = crash_loop_line("app", 42, "exit status: 1", 3, POLICY);
        assert_eq!(
            line,
            "app (pid 42) is in a crash loop: it died 3 times in a row within 10 s of starting, \
             before it registered (last: exit status: 1); not restarting it"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn readiness_is_read_from_this_starts_log_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("dl-1.log");
        std::fs::write(&log, format!("old start: downloader: {REGISTERED}\n")).unwrap();
        let mut w = ReadyWatch::new(&log);
        assert!(!w.ready(), "an earlier start's line does not count");
        let append = |text: &str| {
            use std::io::Write as _;
            let mut f = std::fs::File::options().append(true).open(&log).unwrap();
            f.write_all(text.as_bytes()).unwrap();
        };
        append("INFO downloader: starting\nINFO downloader: registered with");
        assert!(!w.ready(), "half a line");
        append(" the manager id=dl-1\n");
        assert!(w.ready());
        let mut missing = ReadyWatch::new(&dir.path().join("none.log"));
        assert!(!missing.ready());
        missing.set_ready();
        assert!(missing.ready());
    }
}
