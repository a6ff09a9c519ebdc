//! Whether a directory is a mount point, and the lazy unmount: what `polycrawl
//! demo --machines` and the multi-machine tests (the `tests` package's
//! `nfsim::Mount`) both need around `polycrawl nfsim`'s FUSE mounts, and why FUSE
//! cannot be used here, if it cannot.
//!
//! This module must never unmount anything its caller did not mount.

use std::path::Path;
use std::process::Command;

/// Why `/dev/fuse` or `fusermount3` cannot be used, if they cannot.
pub fn unusable() -> Option<String> {
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
    {
        return Some(format!("/dev/fuse cannot be opened: {e}"));
    }
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("fusermount3").exists()));
    (!found).then(|| "fusermount3 is not installed (ops/setup.sh installs fuse3)".to_owned())
}

/// Whether `dir` (absolute, canonical) is a mount point now.
pub fn mounted(dir: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = dir.to_string_lossy();
    info.lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_ref()))
}

/// Detaches the FUSE mount at `dir` (`fusermount3 -u -z`): for a mount whose
/// server is gone or did not unmount in time. Whether it succeeded.
pub fn unmount_lazily(dir: &Path) -> bool {
    Command::new("fusermount3")
        .arg("-u")
        .arg("-z")
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
