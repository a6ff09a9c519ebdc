//! Shared helpers of the `dir_*` integration tests: scratch folders, child processes
//! that re-execute this test binary, self-checking file contents and a small PRNG.
//!
//! A child process is this same test binary run with
//! `--exact <child test> --nocapture --include-ignored` and `SPOOL_TEST_CHILD=<role>` in
//! its environment; the child test is `#[ignore]`d and does nothing without that
//! variable, so plain `cargo test` / `cargo nextest run` skip it.

#![allow(
    dead_code,
    reason = "compiled into several test binaries, each using a part of it"
)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use spool::ComponentId;

/// Environment variable naming the role of a child process.
pub const ROLE_VAR: &str = "SPOOL_TEST_CHILD";
/// Environment variable with the spool folder a child works on.
pub const DIR_VAR: &str = "SPOOL_TEST_DIR";

/// A fresh folder under the system temp dir; removed on drop unless the test failed.
pub struct TestDir(PathBuf);

impl TestDir {
    pub fn new(label: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "polycrawl-spool-{label}-{}-{}-{}",
            std::process::id(),
            now_nanos(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("test failed: keeping {} for inspection", self.0.display());
        } else {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

/// The role this process was started in, if it is a child.
pub fn child_role() -> Option<String> {
    std::env::var(ROLE_VAR).ok()
}

/// A required environment variable of a child.
pub fn child_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("child started without {name}"))
}

/// A child process that is killed (SIGKILL) and reaped when dropped, so no child
/// outlives a failing test.
pub struct ChildGuard {
    child: Option<Child>,
    what: String,
}

impl ChildGuard {
    /// Re-executes this test binary, running only `child_test` in role `role`.
    pub fn spawn(child_test: &str, role: &str, envs: &[(&str, &str)]) -> Self {
        let exe = std::env::current_exe().expect("current test binary");
        let mut cmd = Command::new(exe);
        cmd.args(["--exact", child_test, "--nocapture", "--include-ignored"])
            .env(ROLE_VAR, role)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn child test process");
        Self {
            what: format!("{role} (pid {})", child.id()),
            child: Some(child),
        }
    }

    /// Sends SIGKILL and reaps the child.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits i32"));
            // ESRCH only if it was already reaped, which cannot happen while we hold it.
            let _ = kill(pid, Signal::SIGKILL);
            let _ = child.wait();
        }
    }

    /// Waits for the child to exit by itself; kills it and panics after `limit`.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let child = self.child.as_mut().expect("child already reaped");
        let exited = test_support::wait::poll_every(limit, Duration::from_millis(5), || {
            child.try_wait().expect("try_wait")
        });
        let Some(status) = exited else {
            self.kill();
            panic!("child {} did not finish within {limit:?}", self.what);
        };
        self.child = None;
        status
    }

    /// Waits for the child and asserts it succeeded.
    pub fn wait_success(&mut self, limit: Duration) {
        let what = self.what.clone();
        let status = self.wait(limit);
        assert!(status.success(), "child {what} failed: {status}");
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `cond` every millisecond until it holds; false after `limit`.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    test_support::wait::poll_every(limit, Duration::from_millis(1), || cond().then_some(()))
        .is_some()
}

/// xorshift64*: a small deterministic PRNG (seed printed by tests to reproduce).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// Seeded from the clock and the pid.
    pub fn from_time() -> Self {
        Self::new(now_nanos() ^ (u64::from(std::process::id()) << 32))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }

    /// Log-uniform in `lo..hi`: mostly small, some large.
    pub fn log_range(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        let x = a + (b - a) * (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (x.exp() as u64).clamp(lo, hi - 1)
    }
}

pub fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

const HEADER: usize = 16;

fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A self-checking file body of `len` bytes in total: payload length (u64 LE),
/// FNV-1a of the payload (u64 LE), then pseudo-random payload.
pub fn make_body(seed: u64, len: usize) -> Vec<u8> {
    let len = len.max(HEADER);
    let mut rng = Rng::new(seed);
    let mut payload = Vec::with_capacity(len - HEADER);
    while payload.len() < len - HEADER {
        payload.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    payload.truncate(len - HEADER);
    let mut body = Vec::with_capacity(len);
    body.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    body.extend_from_slice(&fnv1a(&payload).to_le_bytes());
    body.extend_from_slice(&payload);
    body
}

/// Checks a body written by [`make_body`].
pub fn check_body(body: &[u8]) -> Result<(), String> {
    if body.len() < HEADER {
        return Err(format!("{} bytes: shorter than the header", body.len()));
    }
    let want_len = u64::from_le_bytes(body[..8].try_into().unwrap());
    let want_sum = u64::from_le_bytes(body[8..16].try_into().unwrap());
    let payload = &body[HEADER..];
    if want_len != payload.len() as u64 {
        return Err(format!(
            "payload is {} bytes, header says {want_len}",
            payload.len()
        ));
    }
    if fnv1a(payload) != want_sum {
        return Err("checksum mismatch".into());
    }
    Ok(())
}

pub fn id(s: &str) -> ComponentId {
    ComponentId::new(s).unwrap()
}

/// Names of the regular files directly in `dir` (dot-entries included), sorted.
pub fn file_names(dir: &Path) -> BTreeSet<String> {
    match fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
        Err(_) => BTreeSet::new(),
    }
}

/// Complete lines of a record file (a trailing partial line, torn by a kill, is dropped).
pub fn record_lines(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap_or_default();
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    complete.lines().map(str::to_owned).collect()
}

/// Appends one line with a single `write` call (whole or nothing under SIGKILL).
pub fn append_line(file: &mut fs::File, line: &str) {
    use std::io::Write;
    file.write_all(format!("{line}\n").as_bytes()).unwrap();
}

pub fn open_append(path: &Path) -> fs::File {
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
}
