//! What `/proc` says about the processes this binary starts, read through the
//! `procfs` crate: a process's CPU time (its summary's CPU figures), its threads'
//! names and CPU times (the `busiest thread:` line), the process tree and a
//! process's resident memory (`polycrawl bench measure`).
//!
//! This module only reads; it must never signal or change a process. (The tests
//! and the benchmarks read the same files through `test_support::proc`, which is
//! not linked into this binary.)

use std::time::Duration;

use procfs::process::{Process, Stat};

/// `utime + stime` of a stat record as a duration.
fn cpu_of(stat: &Stat) -> Duration {
    let ticks = stat.utime.saturating_add(stat.stime);
    let per_second = procfs::ticks_per_second().max(1);
    Duration::from_micros(ticks.saturating_mul(1_000_000) / per_second)
}

fn process(pid: u32) -> Option<Process> {
    Process::new(i32::try_from(pid).ok()?).ok()
}

/// CPU time (user + system) process `pid` has used so far, all its threads;
/// `None` once it is reaped (or on a system without `/proc`).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    Some(cpu_of(&process(pid)?.stat().ok()?))
}

/// One thread of a process: its name and the CPU time it has used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadStat {
    /// The thread's name (`comm`).
    pub name: String,
    /// Its user + system CPU time.
    pub cpu: Duration,
}

/// Every thread of process `pid` now, as `(tid, figures)`; empty once it is gone.
pub fn threads(pid: u32) -> Vec<(u32, ThreadStat)> {
    let Some(tasks) = process(pid).and_then(|p| p.tasks().ok()) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let stat = task.stat().ok()?;
            let tid = u32::try_from(task.tid).ok()?;
            let cpu = cpu_of(&stat);
            Some((
                tid,
                ThreadStat {
                    name: stat.comm,
                    cpu,
                },
            ))
        })
        .collect()
}

/// Every process now, as `(pid, parent pid)` (those gone while listing are left out).
pub fn parents() -> Vec<(i32, i32)> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.flatten()
        .filter_map(|p| Some((p.pid, p.stat().ok()?.ppid)))
        .collect()
}

/// `VmRSS` of process `pid` in KiB; `None` for a zombie or a process gone.
pub fn rss_kib(pid: u32) -> Option<u64> {
    process(pid)?.status().ok()?.vmrss
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_cpu_time_threads_a_parent_and_memory() {
        let me = std::process::id();
        // Spin until the kernel has counted a tick of CPU (10 ms at USER_HZ 100),
        // however loaded the machine: the figure must grow with work done.
        let start = std::time::Instant::now();
        let mut spent = 0u64;
        while cpu_time(me).is_none_or(|c| c == Duration::ZERO) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no CPU time counted"
            );
            for _ in 0..100_000 {
                spent = spent.wrapping_add(std::hint::black_box(1));
            }
        }
        std::hint::black_box(spent);
        let threads = threads(me);
        assert!(threads.iter().any(|(tid, _)| *tid == me), "{threads:?}");
        let parent = std::os::unix::process::parent_id();
        let me = i32::try_from(me).unwrap();
        assert!(
            parents()
                .iter()
                .any(|&(p, pp)| p == me && i64::from(pp) == i64::from(parent))
        );
        assert!(rss_kib(std::process::id()).is_some_and(|k| k > 0));
        assert!(cpu_time(u32::MAX).is_none());
    }
}
