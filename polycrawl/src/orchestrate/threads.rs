//! CPU time of each thread of a child process, sampled from `/proc/<pid>/task`, so
//! a crawl's summary can name its busiest thread and that thread's share of the
//! crawl's CPU (issue 24): a thread doing a fixed share of all the work bounds the
//! speed-up whatever the machine.
//!
//! The kernel keeps no figure for a thread once it has exited (its time folds into
//! the process's), so a thread's figure is its last sample: [`Threads::sample`] reads
//! every thread at most once per [`EVERY`], and a thread that ended since is kept at
//! what it had then (short of at most one interval of its CPU). The threads of a
//! process that was restarted are kept beside those of the new one, by thread id.
//!
//! Cost: one small file read per thread per sample; O(threads ever seen) memory.
//! This module must never signal or otherwise touch the process it reads.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Shortest time between two samples of one process's threads.
pub const EVERY: Duration = Duration::from_millis(250);

/// One thread's CPU time, as last sampled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadCpu {
    /// Its name (`comm`, at most 15 bytes: `app-reader`, `tokio-runtime-w`).
    pub name: String,
    /// User + system time.
    pub cpu: Duration,
}

/// The threads of one supervised process (all its restarts), by thread id.
#[derive(Debug, Default)]
pub struct Threads {
    by_tid: BTreeMap<u32, ThreadCpu>,
    sampled_at: Option<Instant>,
}

impl Threads {
    /// Reads the threads of `pid` unless it was done less than [`EVERY`] ago.
    pub fn sample(&mut self, pid: u32) {
        let now = Instant::now();
        if self
            .sampled_at
            .is_some_and(|at| now.duration_since(at) < EVERY)
        {
            return;
        }
        self.sample_now(pid);
        self.sampled_at = Some(now);
    }

    /// Reads the threads of `pid` now (a process that is gone leaves the figures
    /// as they were).
    pub fn sample_now(&mut self, pid: u32) {
        for (tid, stat) in crate::procs::threads(pid) {
            self.by_tid.insert(
                tid,
                ThreadCpu {
                    name: stat.name,
                    cpu: stat.cpu,
                },
            );
        }
    }

    /// Adds the threads of an earlier process (a restart), keeping this one's
    /// figure for a thread id both have.
    pub fn absorb(&mut self, earlier: Threads) {
        for (tid, t) in earlier.by_tid {
            self.by_tid.entry(tid).or_insert(t);
        }
    }

    /// Every thread seen, busiest first.
    pub fn busiest(&self) -> Vec<ThreadCpu> {
        let mut all: Vec<ThreadCpu> = self.by_tid.values().cloned().collect();
        all.sort_by(|a, b| b.cpu.cmp(&a.cpu).then_with(|| a.name.cmp(&b.name)));
        all
    }
}

/// The busiest thread among `processes` (name, its threads) as the summary line's
/// text: `app-reader (app) 18.2 % of the crawl's CPU`; `None` without threads or CPU.
pub fn busiest_line(processes: &[(String, Vec<ThreadCpu>)], total: Duration) -> Option<String> {
    let (process, thread) = processes
        .iter()
        .flat_map(|(p, ts)| ts.iter().map(move |t| (p, t)))
        .max_by(|a, b| a.1.cpu.cmp(&b.1.cpu))?;
    if total.is_zero() {
        return None;
    }
    Some(format!(
        "{} ({process}) {:.1} % of the crawl's CPU ({:.1} of {:.1} s)",
        thread.name,
        100.0 * thread.cpu.as_secs_f64() / total.as_secs_f64(),
        thread.cpu.as_secs_f64(),
        total.as_secs_f64()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_of_this_process_is_found() {
        // The thread spins until the samples have seen it use 100 ms of CPU: on a
        // loaded machine that takes longer than 100 ms of wall time.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinning = stop.clone();
        let spin = std::thread::Builder::new()
            .name("busy-test".into())
            .spawn(move || {
                let mut x = 0u64;
                while !spinning.load(std::sync::atomic::Ordering::Relaxed) {
                    x = x.wrapping_mul(31).wrapping_add(7);
                }
                std::hint::black_box(x);
            })
            .unwrap();
        let seen = test_support::wait::poll_every(
            Duration::from_secs(60),
            Duration::from_millis(20),
            || {
                let mut threads = Threads::default();
                threads.sample_now(std::process::id());
                let busy = threads.busiest();
                let t = busy.iter().find(|t| t.name == "busy-test").cloned();
                t.filter(|t| t.cpu >= Duration::from_millis(100))
            },
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spin.join().unwrap();
        assert!(seen.is_some(), "the spinning thread was never seen busy");
    }

    #[test]
    fn the_line_names_the_busiest_thread_and_its_share() {
        let t = |name: &str, ms| ThreadCpu {
            name: name.into(),
            cpu: Duration::from_millis(ms),
        };
        let processes = vec![
            ("manager".to_owned(), vec![t("manager", 1000)]),
            ("app".to_owned(), vec![t("app-reader", 2500), t("app", 500)]),
        ];
        assert_eq!(
            busiest_line(&processes, Duration::from_secs(10)).as_deref(),
            Some("app-reader (app) 25.0 % of the crawl's CPU (2.5 of 10.0 s)")
        );
        assert_eq!(busiest_line(&[], Duration::from_secs(1)), None);
    }
}
