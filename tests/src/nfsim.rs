//! One NFS client's view of a shared directory for multi-machine tests: a running
//! `polycrawl nfsim` (a FUSE pass-through with a visibility delay for other
//! clients' new entries and attributes, and injectable EIO/ESTALE; see
//! `nfsim/src/lib.rs`), owned by a [`Mount`] guard that unmounts on drop
//! (SIGTERM, then `fusermount3 -u -z` if the mount is still there, then SIGKILL),
//! also when the test panicked. [`unusable`] says why FUSE cannot be used here,
//! if it cannot; [`mounted`], [`unmount_lazily`] and [`unusable`] are the binary
//! package's (`nfsim::mount`), which `polycrawl demo --machines` uses for its
//! own mounts. The multi-machine tests and the nfsim tests mount through [`Mount`].
//!
//! This module must never unmount anything it did not mount.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

pub use nfsim::mount::{mounted, unmount_lazily, unusable};

use crate::process::ProcessGuard;

/// How long a mount may take to appear.
const MOUNT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long `polycrawl nfsim` gets to unmount after SIGTERM.
const UNMOUNT_GRACE: Duration = Duration::from_secs(5);

/// A mounted `polycrawl nfsim`.
#[derive(Debug)]
pub struct Mount {
    process: Option<ProcessGuard>,
    dir: PathBuf,
}

impl Mount {
    /// Mounts `backing` at `dir` (created if needed) with `polycrawl` (the binary
    /// to run `nfsim` of), `delay_ms` of visibility delay and `extra` flags (e.g.
    /// `--eio-per-million 100`), and waits until the mount is there. `name` names
    /// the process's stderr file in `log_dir`.
    ///
    /// # Panics
    /// If it does not mount, with nfsim's output.
    pub fn start(
        polycrawl: &Path,
        name: &str,
        backing: &Path,
        dir: &Path,
        delay_ms: u64,
        extra: &[&str],
        log_dir: &Path,
    ) -> Mount {
        std::fs::create_dir_all(dir).expect("creating the mount point");
        let dir = std::fs::canonicalize(dir).expect("the mount point");
        let mut cmd = Command::new(polycrawl);
        cmd.arg("nfsim")
            .arg("--backing")
            .arg(backing)
            .arg("--mount")
            .arg(&dir)
            .arg("--visibility-delay-ms")
            .arg(delay_ms.to_string())
            .args(extra)
            .env("RUST_LOG", "info");
        let mut process =
            ProcessGuard::spawn(name, cmd, log_dir).expect("starting polycrawl nfsim");
        let up = test_support::wait::poll(MOUNT_TIMEOUT, || {
            if mounted(&dir) {
                return Some(());
            }
            if let Ok(Some(status)) = process.wait_exit(Duration::ZERO) {
                panic!(
                    "{}",
                    process.report(&format!("exited {status} before mounting"))
                );
            }
            None
        });
        if up.is_none() {
            panic!(
                "{}",
                process.report(&format!("not mounted after {MOUNT_TIMEOUT:?}"))
            );
        }
        Mount {
            process: Some(process),
            dir,
        }
    }

    /// The mount point: this client's view of the backing directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `rel` as this client sees it.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// The nfsim process's pid.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ProcessGuard::pid)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let Some(mut process) = self.process.take() else {
            return;
        };
        let _ = kill(Pid::from_raw(process.pid() as i32), Signal::SIGTERM);
        let _ = process.wait_exit(UNMOUNT_GRACE);
        if mounted(&self.dir) {
            unmount_lazily(&self.dir);
        }
        drop(process); // SIGKILL if still running, and reap.
    }
}
