//! `polycrawl-bench measure [FLAGS] -- CMD ARGS...`: runs a command and reports
//! what it cost, counting every process it starts.
//!
//! - **Wall time**: from the spawn to the command's exit (it is reaped at once by a
//!   blocking `waitpid`, so the figure is not rounded to the sampling period).
//! - **CPU**: `getrusage(RUSAGE_CHILDREN)` after every descendant is reaped: user
//!   and system time of the command and of every process below it. This process
//!   makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`) before the spawn, so
//!   a descendant whose parent died or did not wait for it is re-parented here and
//!   reaped here, and its CPU is counted too. Processes the command did not start
//!   (a server it talks to) are not counted.
//! - **Memory**: the peak of the sum of `VmRSS` over the whole process tree,
//!   sampled from `/proc` every `--sample-ms` (a short spike between two samples is
//!   missed), and `ru_maxrss`, the largest peak of any single process.
//!
//! SIGINT and SIGTERM sent to this process are passed on to the command (SIGTERM);
//! `--timeout-s` does the same at a deadline. Whatever is still running
//! `--grace-s` after that, or after the command exited (leftover descendants), is
//! killed (SIGKILL), each by its own pid, found as a descendant of this process.
//!
//! The result is one line on stderr (and in `--out`):
//! `measure wall_s=.. cpu_s=.. user_s=.. sys_s=.. tree_rss_peak_mib=..
//! max_proc_rss_mib=.. exit=.. timed_out=0|1 leftover=N samples=N`; the exit code
//! is the command's (128 + signal if a signal ended it).
//!
//! Cost: one `/proc` scan (every process's `stat`) per sample, O(processes on the
//! machine); nothing grows with the run's length.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::errno::Errno;
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

/// Flags of `polycrawl-bench measure`.
#[derive(Debug, Clone, clap::Args)]
pub struct MeasureArgs {
    /// Also write the result line to FILE.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// How often the process tree's memory is sampled, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub sample_ms: u64,
    /// Stop the command (SIGTERM) after this many seconds; 0 means no limit.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub timeout_s: u64,
    /// How long a stopped command, or what it leaves running after its exit, gets
    /// before it is killed (SIGKILL), in seconds.
    #[arg(long, value_name = "S", default_value_t = 30)]
    pub grace_s: u64,
    /// The command and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

/// What one measured run cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Measured {
    /// Spawn to exit of the command.
    pub wall: Duration,
    /// User CPU of the command and all its descendants.
    pub user: Duration,
    /// System CPU of the same.
    pub sys: Duration,
    /// Peak of the summed `VmRSS` of the process tree, KiB (sampled).
    pub tree_rss_peak_kib: u64,
    /// Largest peak RSS of one process (`ru_maxrss`), KiB.
    pub max_proc_rss_kib: u64,
    /// The command's exit code (128 + signal number when a signal ended it).
    pub exit: i32,
    /// Stopped by `--timeout-s` or a signal to this process.
    pub timed_out: bool,
    /// Descendants still running when the command exited.
    pub leftover: usize,
    /// Memory samples taken.
    pub samples: u64,
}

impl Measured {
    /// The `measure key=value ...` line.
    pub fn line(&self) -> String {
        let mib = |kib: u64| kib as f64 / 1024.0;
        format!(
            "measure wall_s={:.3} cpu_s={:.3} user_s={:.3} sys_s={:.3} tree_rss_peak_mib={:.1} \
             max_proc_rss_mib={:.1} exit={} timed_out={} leftover={} samples={}",
            self.wall.as_secs_f64(),
            (self.user + self.sys).as_secs_f64(),
            self.user.as_secs_f64(),
            self.sys.as_secs_f64(),
            mib(self.tree_rss_peak_kib),
            mib(self.max_proc_rss_kib),
            self.exit,
            u8::from(self.timed_out),
            self.leftover,
            self.samples
        )
    }
}

/// Runs `polycrawl-bench measure`; returns the command's exit code (1 if it
/// does not fit in a byte).
pub fn run(args: &MeasureArgs) -> anyhow::Result<u8> {
    let m = measure(args)?;
    let line = m.line();
    eprintln!("{line}");
    if let Some(out) = &args.out {
        std::fs::write(out, format!("{line}\n"))
            .with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(u8::try_from(m.exit).unwrap_or(1))
}

/// State shared by the reaping thread (this one) and the sampler.
#[derive(Debug, Default)]
struct Shared {
    /// The command's pid.
    child: AtomicI32,
    /// The command has exited (set by the reaper).
    child_done: AtomicBool,
    /// Every descendant is reaped (set by the reaper; the sampler ends).
    all_done: AtomicBool,
    /// SIGINT or SIGTERM arrived.
    signalled: AtomicBool,
}

/// Runs the command and measures it.
pub fn measure(args: &MeasureArgs) -> anyhow::Result<Measured> {
    let (program, rest) = args.command.split_first().context("no command given")?;
    nix::sys::prctl::set_child_subreaper(true).context("becoming a child subreaper")?;
    let before = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let shared = Arc::new(Shared::default());
    watch_signals(Arc::clone(&shared))?;

    let started = Instant::now();
    let child = Command::new(program)
        .args(rest)
        .spawn()
        .with_context(|| format!("starting {}", program.to_string_lossy()))?;
    let pid = i32::try_from(child.id()).context("pid out of range")?;
    // The child is reaped below with waitpid(-1), not through `child`.
    drop(child);
    shared.child.store(pid, Ordering::SeqCst);

    let sampler = {
        let shared = Arc::clone(&shared);
        let period = Duration::from_millis(args.sample_ms);
        let timeout = (args.timeout_s > 0).then(|| Duration::from_secs(args.timeout_s));
        let grace = Duration::from_secs(args.grace_s);
        std::thread::Builder::new()
            .name("measure-sampler".into())
            .spawn(move || sample_until_done(&shared, started, period, timeout, grace))
            .context("starting the sampler thread")?
    };

    let mut exit = None;
    let mut wall = Duration::ZERO;
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(p, code)) if p.as_raw() == pid => {
                wall = started.elapsed();
                exit = Some(code);
                shared.child_done.store(true, Ordering::SeqCst);
            }
            Ok(WaitStatus::Signaled(p, sig, _)) if p.as_raw() == pid => {
                wall = started.elapsed();
                exit = Some(128 + sig as i32);
                shared.child_done.store(true, Ordering::SeqCst);
            }
            Ok(_) | Err(Errno::EINTR) => {}
            Err(Errno::ECHILD) => break,
            Err(e) => return Err(e).context("waitpid"),
        }
    }
    shared.all_done.store(true, Ordering::SeqCst);
    let sampled = sampler
        .join()
        .map_err(|_| anyhow::anyhow!("the sampler thread panicked"))?;
    let after = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec().max(0) as u64)
            + Duration::from_micros(t.tv_usec().max(0) as u64)
    };
    Ok(Measured {
        wall,
        user: tv(after.user_time()).saturating_sub(tv(before.user_time())),
        sys: tv(after.system_time()).saturating_sub(tv(before.system_time())),
        tree_rss_peak_kib: sampled.peak_kib,
        max_proc_rss_kib: u64::try_from(after.max_rss()).unwrap_or(0),
        exit: exit.context("the command was never reaped")?,
        timed_out: sampled.stopped,
        leftover: sampled.leftover,
        samples: sampled.samples,
    })
}

/// Sets `shared.signalled` on SIGINT or SIGTERM (which then no longer end this
/// process: the sampler passes them on to the command).
fn watch_signals(shared: Arc<Shared>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal runtime")?;
    // Register the handlers before the command starts, so no signal is missed.
    let (mut term, mut int) = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        Ok::<_, std::io::Error>((
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
        ))
    })?;
    std::thread::Builder::new()
        .name("measure-signals".into())
        .spawn(move || {
            runtime.block_on(async {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            });
            shared.signalled.store(true, Ordering::SeqCst);
        })
        .context("starting the signal thread")?;
    Ok(())
}

/// What the sampler saw.
#[derive(Debug, Default)]
struct Sampled {
    peak_kib: u64,
    samples: u64,
    stopped: bool,
    leftover: usize,
}

/// Samples the tree's memory every `period` until the reaper is done; stops the
/// command at `timeout` (or on a signal) and kills what is left `grace` later.
fn sample_until_done(
    shared: &Shared,
    started: Instant,
    period: Duration,
    timeout: Option<Duration>,
    grace: Duration,
) -> Sampled {
    let me = std::process::id() as i32;
    let mut s = Sampled::default();
    let mut kill_at: Option<Instant> = None;
    let mut counted_leftover = false;
    while !shared.all_done.load(Ordering::SeqCst) {
        // `child_done` before the scan: a command that lives less than one scan
        // (a shell that starts a job and exits) must not have its leftovers judged
        // on a scan taken before it even started.
        let child_done = shared.child_done.load(Ordering::SeqCst);
        let tree = descendants(me);
        let kib: u64 = tree.iter().filter_map(|&p| rss_kib(p)).sum();
        s.peak_kib = s.peak_kib.max(kib);
        s.samples += 1;
        let stop = shared.signalled.load(Ordering::SeqCst)
            || timeout.is_some_and(|t| started.elapsed() >= t);
        if stop && !s.stopped && !child_done {
            s.stopped = true;
            let child = shared.child.load(Ordering::SeqCst);
            let _ = kill(Pid::from_raw(child), Signal::SIGTERM);
            kill_at = Some(Instant::now() + grace);
        }
        if child_done && !counted_leftover {
            counted_leftover = true;
            s.leftover = tree.len();
            if !tree.is_empty() {
                kill_at =
                    Some(kill_at.map_or(Instant::now() + grace, |k| k.min(Instant::now() + grace)));
            }
        }
        if kill_at.is_some_and(|k| Instant::now() >= k) {
            for p in &tree {
                let _ = kill(Pid::from_raw(*p), Signal::SIGKILL);
            }
        }
        std::thread::sleep(period);
    }
    s
}

/// Every process below `root` (not `root` itself), from `/proc/<pid>/stat`.
fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, parent) in polycrawl::procs::parents() {
        children.entry(parent).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        if let Some(kids) = children.get(&p) {
            out.extend(kids);
            stack.extend(kids);
        }
    }
    out
}

/// `VmRSS` of a process in KiB (`None` for a zombie or a process gone).
fn rss_kib(pid: i32) -> Option<u64> {
    polycrawl::procs::rss_kib(u32::try_from(pid).ok()?)
}

#[cfg(test)]
mod tests {
    use std::sync::{Mutex, MutexGuard};

    use super::*;

    /// `measure` is process-wide by design (it reaps any child with
    /// `waitpid(-1)` and reads `RUSAGE_CHILDREN`): two measurements at once in one
    /// process reap each other's children. `cargo test` runs a binary's tests on
    /// threads of one process, so these tests take turns.
    fn one_at_a_time() -> MutexGuard<'static, ()> {
        static TURN: Mutex<()> = Mutex::new(());
        TURN.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn args(cmd: &[&str]) -> MeasureArgs {
        MeasureArgs {
            out: None,
            sample_ms: 10,
            timeout_s: 0,
            grace_s: 5,
            command: cmd.iter().map(OsString::from).collect(),
        }
    }

    #[test]
    fn counts_the_cpu_of_grandchildren_whose_parent_did_not_wait() {
        let _turn = one_at_a_time();
        // The shell starts a busy grandchild in the background and exits at once
        // without waiting: the grandchild is re-parented to the measuring process,
        // reaped there, and its CPU counted.
        let a = args(&[
            "sh",
            "-c",
            "(i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done) & exit 3",
        ]);
        let m = measure(&a).unwrap();
        assert_eq!(m.exit, 3);
        assert!(m.user + m.sys >= Duration::from_millis(50), "{m:?}");
        assert!(
            m.wall < m.user + m.sys,
            "wall {m:?} is the shell's life only"
        );
        assert_eq!(m.leftover, 1, "{m:?}");
        assert!(m.max_proc_rss_kib > 0);
        assert!(m.samples >= 1);
        assert!(m.line().starts_with("measure wall_s="));
    }

    #[test]
    fn a_timeout_stops_the_command() {
        let _turn = one_at_a_time();
        let mut a = args(&["sleep", "30"]);
        a.timeout_s = 1;
        let t = Instant::now();
        let m = measure(&a).unwrap();
        assert!(m.timed_out);
        assert_eq!(m.exit, 128 + Signal::SIGTERM as i32);
        assert!(t.elapsed() < Duration::from_secs(10));
    }
}
