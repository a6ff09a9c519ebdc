//! [`SeenStats`]: what [`SeenSet::stats`](super::SeenSet::stats) reports.

use std::time::Duration;

/// Counters and sizes, for logs and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeenStats {
    /// The newest completed merge (0: none yet).
    pub generation: u64,
    /// Keys in the newest file.
    pub keys_on_disk: u64,
    /// Length of the newest file (older generations kept until released add to the
    /// disk used).
    pub bytes_on_disk: u64,
    /// Merges completed since open.
    pub merges_done: u64,
    /// Merges handed off and not completed (0 or 1).
    pub merges_in_flight: u64,
    /// Wall time of the last merge, sorting included.
    pub last_merge: Duration,
    /// Sorting time of the last merge.
    pub last_sort: Duration,
    /// Wall time of all merges since open.
    pub total_merge: Duration,
    /// Sorting time of all merges since open.
    pub total_sort: Duration,
    /// Inserts since open, repeats included.
    pub inserts: u64,
    /// Inserts in the filling buffer.
    pub buffered_inserts: u64,
    /// Bytes in the filling buffer (compared with [`SeenConfig::buffer_bytes`](super::SeenConfig::buffer_bytes)).
    pub buffered_bytes: u64,
    /// Time inserts spent blocked because a merge was still running (back-pressure).
    pub blocked: Duration,
}
