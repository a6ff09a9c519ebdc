//! What a component says about itself beyond its load ([`Message::Status`]):
//! whether it is paused, and why. Components send it when it changes and again
//! on every new connection; the manager keeps the last one per component and
//! shows it on the admin page ([`ComponentStatus::state`]), next to its own
//! ([`StatusSnapshot::pause`]).
//!
//! Bounded: a pause names one path (cut to [`MAX_PATH_LEN`] bytes); nothing here
//! grows with the crawl.
//!
//! [`Message::Status`]: super::Message::Status
//! [`ComponentStatus::state`]: super::ComponentStatus::state
//! [`StatusSnapshot::pause`]: super::StatusSnapshot::pause

use serde::{Deserialize, Serialize};

/// Longest path a [`Pause`] carries, in bytes.
pub const MAX_PATH_LEN: usize = 512;

/// A component's own state, as it last reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentState {
    /// Why the component stopped taking new work, if it did.
    pub pause: Option<Pause>,
}

/// A component stopped taking new work that would write somewhere, keeps what it
/// has, and retries by itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    /// Why.
    pub reason: PauseReason,
    /// Where the write failed (a folder or file; cut to [`MAX_PATH_LEN`] bytes).
    pub path: String,
    /// When the pause began, Unix milliseconds.
    pub since_ms: u64,
    /// The longest wait between two retries, in milliseconds.
    pub retry_ms: u64,
}

/// Why a component paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseReason {
    /// A write failed with `ENOSPC` or `EDQUOT`: the file system is full.
    DiskFull,
}

impl Pause {
    /// A disk-full pause at `path`, beginning now.
    pub fn disk_full(path: &std::path::Path, retry_ms: u64) -> Self {
        let mut path = path.display().to_string();
        if path.len() > MAX_PATH_LEN {
            let mut cut = MAX_PATH_LEN;
            while !path.is_char_boundary(cut) {
                cut -= 1;
            }
            path.truncate(cut);
        }
        let since_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Self {
            reason: PauseReason::DiskFull,
            path,
            since_ms,
            retry_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_path_is_cut_on_a_char_boundary() {
        let long = "é".repeat(400);
        let p = Pause::disk_full(std::path::Path::new(&long), 1000);
        assert!(p.path.len() <= MAX_PATH_LEN);
        assert!(long.starts_with(&p.path));
        assert_eq!(p.reason, PauseReason::DiskFull);
        assert!(p.since_ms > 0);
    }
}
