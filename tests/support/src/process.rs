//! A child process owned by the test: stdout is read line by line on a thread (so
//! the pipe never fills), stderr goes to a file (shown when something goes wrong),
//! and dropping the guard kills (SIGKILL) and reaps the process, even when the test
//! panics. [`children_by_environment`] finds the live processes a polycrawl process
//! started (they carry its pid in their environment), so a test waits for them to
//! be gone instead of sleeping.
//!
//! This module must never signal a process it did not start (or that a process it
//! started did not start), and never by name.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::proc::Stat;

/// A running child process, killed on drop.
#[derive(Debug)]
pub struct ProcessGuard {
    name: String,
    child: Child,
    lines: Receiver<String>,
    stdout: Arc<Mutex<Vec<String>>>,
    /// The thread reading stdout; finished once the pipe is at its end.
    reader: std::thread::JoinHandle<()>,
    stderr_path: PathBuf,
}

/// How long, after the process exits, its last stdout lines may take to be read
/// (the pipe ends when every holder of its write end is gone).
const DRAIN: Duration = Duration::from_secs(5);

impl ProcessGuard {
    /// Starts `cmd` with stdout piped and stderr written to `<log_dir>/<name>.stderr`.
    pub fn spawn(name: &str, mut cmd: Command, log_dir: &Path) -> io::Result<ProcessGuard> {
        let stderr_path = log_dir.join(format!("{name}.stderr"));
        let stderr = File::create(&stderr_path)?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let mut child = cmd.spawn()?;
        let out = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("no stdout pipe"))?;
        let (tx, lines) = mpsc::channel();
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&stdout);
        let reader = std::thread::Builder::new()
            .name(format!("{name}-stdout"))
            .spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    keep.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(line.clone());
                    let _ = tx.send(line);
                }
            })?;
        Ok(ProcessGuard {
            name: name.to_owned(),
            child,
            lines,
            stdout,
            reader,
            stderr_path,
        })
    }

    /// The name given to [`ProcessGuard::spawn`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the next stdout line for which `pred` holds; on timeout or exit,
    /// an error with the process's stdout and stderr so far.
    pub fn wait_for_line(
        &mut self,
        pred: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if pred(&line) => return Ok(line),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(self.report(&format!("no matching line within {timeout:?}")));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().ok();
                    return Err(self.report(&format!("exited ({status:?}) before the line")));
                }
            }
        }
    }

    /// Every stdout line so far.
    pub fn stdout(&self) -> Vec<String> {
        self.stdout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// A description of the process for a failure message.
    pub fn report(&self, what: &str) -> String {
        format!(
            "{}: {what}\n--- stdout\n{}\n--- stderr\n{}",
            self.name,
            self.stdout().join("\n"),
            self.stderr()
        )
    }

    /// Waits (up to [`DRAIN`]) until the stdout reader has read the pipe to its
    /// end, so that [`ProcessGuard::stdout`] holds every line of an exited
    /// process, however loaded the machine.
    fn drain(&self) {
        crate::wait::poll_every(DRAIN, Duration::from_millis(5), || {
            self.reader.is_finished().then_some(())
        });
    }

    /// Waits up to `timeout` for the process to exit by itself; `None` if it is still
    /// running (it is then killed when the guard drops). After an exit, stdout has
    /// been read to its end.
    pub fn wait_exit(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let exited = crate::wait::poll(timeout, || self.child.try_wait().transpose());
        match exited {
            Some(Ok(status)) => {
                self.drain();
                Ok(Some(status))
            }
            Some(Err(e)) => Err(e),
            None => Ok(None),
        }
    }

    /// Sends SIGTERM and waits up to `timeout` for the exit; SIGKILL after that.
    pub fn terminate(&mut self, timeout: Duration) -> io::Result<ExitStatus> {
        let pid = Pid::from_raw(self.child.id() as i32);
        kill(pid, Signal::SIGTERM).map_err(io::Error::from)?;
        if let Some(status) = self.wait_exit(timeout)? {
            return Ok(status);
        }
        self.child.kill()?;
        let status = self.child.wait();
        self.drain();
        status
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Live processes whose environment says `parent` started them
/// (`POLYCRAWL_PARENT_PID=<parent>`, set by `polycrawl crawl` and `demo` for
/// their children); a zombie is not live.
pub fn children_by_environment(parent: u32) -> Vec<u32> {
    let needle = format!("POLYCRAWL_PARENT_PID={parent}");
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let has = env.split(|b| *b == 0).any(|v| v == needle.as_bytes());
        if has && Stat::of(pid).is_some_and(|s| s.state != 'Z') {
            found.push(pid);
        }
    }
    found
}

/// Panics, saying what to run, unless `python3` can import `module` (the tests'
/// Python tools are installed by `ops/setup.sh`).
pub fn require_python(module: &str) {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the Python package {module} is missing: run ops/setup.sh (it installs what the tests need)"
    );
}

/// Runs `cmd` in `dir` to its end; its stdout and stderr, or a panic with them
/// (`what` failed) unless it succeeds.
pub fn run_ok(what: &str, mut cmd: Command, dir: &Path) -> String {
    let out = cmd
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed:\n{}",
        text.chars().take(6000).collect::<String>()
    );
    text
}
