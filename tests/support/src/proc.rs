//! What `/proc` says about a process and the machine, read in one place: a
//! process's or a thread's CPU time, state, parent and start time
//! (`/proc/<pid>/stat`), its threads, a `kB` field of `/proc/<pid>/status`, and the
//! CPU model a benchmark prints. The orchestrator's CPU figures (`polycrawl crawl`,
//! `polycrawl bench`), the tests and the benchmarks all read through it.
//!
//! This module only reads; it must never signal or change a process.

use std::time::Duration;

/// Units of the times in `/proc/<pid>/stat`: the kernel reports them in USER_HZ,
/// which is 100 on every Linux architecture (`getconf CLK_TCK`).
const USER_HZ: u64 = 100;

/// The fields of a `/proc/<pid>/stat` (or `/proc/<pid>/task/<tid>/stat`) line that
/// the workspace uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The command or thread name (field 2, without its parentheses).
    pub name: String,
    /// The state (field 3): `R`, `S`, `Z`, ...
    pub state: char,
    /// The parent's pid (field 4).
    pub parent: u32,
    /// utime + stime (fields 14 and 15).
    pub cpu: Duration,
    /// When it started, in clock ticks after boot (field 22): with the pid, it
    /// names one process even after the pid is reused.
    pub start: u64,
}

impl Stat {
    /// Reads a stat line. The name is in parentheses and may hold spaces and
    /// parentheses itself: fields are counted after the last `)`.
    pub fn parse(line: &str) -> Option<Stat> {
        let open = line.find('(')?;
        let close = line.rfind(')')?;
        let name = line.get(open + 1..close)?.to_owned();
        let fields: Vec<&str> = line.get(close + 1..)?.split_ascii_whitespace().collect();
        // fields[0] is field 3.
        let at = |field: usize| fields.get(field - 3).copied();
        let number = |field: usize| at(field)?.parse::<u64>().ok();
        Some(Stat {
            name,
            state: at(3)?.chars().next()?,
            parent: at(4)?.parse().ok()?,
            cpu: Duration::from_millis((number(14)? + number(15)?) * 1000 / USER_HZ),
            start: number(22)?,
        })
    }

    /// Process `pid`'s stat; `None` once it is reaped (a zombie still has one).
    pub fn of(pid: u32) -> Option<Stat> {
        Stat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }
}

/// CPU time (user + system) process `pid` has used so far, all its threads;
/// `None` once it is reaped (or on a system without `/proc`).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    Stat::of(pid).map(|s| s.cpu)
}

/// Every thread of process `pid` now, as `(tid, stat)`; empty once it is gone.
pub fn threads(pid: u32) -> Vec<(u32, Stat)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| {
            let tid = entry.file_name().to_str()?.parse().ok()?;
            let line = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            Some((tid, Stat::parse(&line)?))
        })
        .collect()
}

/// Every process now, as `(pid, stat)` (those gone while listing are left out).
pub fn processes() -> Vec<(u32, Stat)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse().ok()?;
            Some((pid, Stat::of(pid)?))
        })
        .collect()
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, ...), in KiB; `None` for
/// a zombie, a process gone, or a field it does not have. `pid` `None` is this
/// process.
pub fn status_kib(pid: Option<u32>, field: &str) -> Option<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_owned(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    let line = status
        .lines()
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    line.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// The CPU model as `/proc/cpuinfo` names it, for a benchmark's machine line.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

/// The cores this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// `<CPU model>, <N> cores`: the machine line every benchmark prints.
pub fn machine() -> String {
    format!("{}, {} cores", cpu_model(), cores())
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`), as the kernel writes
/// them: `0.52 0.61 0.70`.
pub fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_ascii_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_counted_after_the_last_parenthesis() {
        let line =
            "4242 (dl 1 (x)) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 1 0 9876 1000";
        let stat = Stat::parse(line).expect("a stat line");
        assert_eq!(stat.name, "dl 1 (x)");
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.parent, 17);
        assert_eq!(stat.cpu, Duration::from_millis(2_800));
        assert_eq!(stat.start, 9876);
        assert_eq!(Stat::parse("4242 (x) S 1"), None);
        assert_eq!(Stat::parse("no parentheses"), None);
    }

    #[test]
    fn a_busy_process_shows_its_cpu_time() {
        // Spins until /proc shows 100 ms more (on a loaded machine that takes longer
        // than 100 ms of wall time); a reader that does not see it fails at 30 s.
        let me = std::process::id();
        let before = cpu_time(me).expect("/proc/self/stat");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut x = 0u64;
        let mut used = Duration::ZERO;
        while used < Duration::from_millis(100) && std::time::Instant::now() < deadline {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            used = cpu_time(me).expect("/proc/self/stat") - before;
        }
        assert!(
            used >= Duration::from_millis(100),
            "{used:?} after 30 s of spinning"
        );
        let mine = threads(me);
        assert!(
            mine.iter().any(|(tid, _)| *tid == me),
            "the main thread is listed"
        );
    }

    #[test]
    fn status_fields_and_the_process_list() {
        let rss = status_kib(None, "VmRSS").expect("VmRSS of this process");
        assert!(rss > 0);
        assert_eq!(status_kib(None, "VmRS"), None, "a prefix is not a field");
        assert_eq!(
            status_kib(Some(std::process::id()), "VmRSS").map(|_| ()),
            Some(())
        );
        let me = std::process::id();
        assert!(processes().iter().any(|(pid, _)| *pid == me));
        assert!(cores() >= 1);
        assert_eq!(load_average().split(' ').count(), 3);
        assert!(machine().ends_with(" cores"));
    }
}
