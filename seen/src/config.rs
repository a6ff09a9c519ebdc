//! [`SeenConfig`]: buffer size and file layout.

use super::error::SeenError;
use super::format::MAX_RESTART_INTERVAL;

/// Default [`SeenConfig::buffer_bytes`]: 64 MiB.
pub const DEFAULT_BUFFER_BYTES: usize = 64 << 20;
/// Largest [`SeenConfig::buffer_bytes`]: 2 GiB (entries address the arena with `u32`).
pub const MAX_BUFFER_BYTES: usize = 2 << 30;
/// Default [`SeenConfig::restart_interval`].
pub const DEFAULT_RESTART_INTERVAL: u32 = 64;

/// Seen-set settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenConfig {
    /// A buffer is handed to the merge thread once its keys, payloads and 8 bytes per
    /// insert reach this many bytes. The set holds at most two buffers (one filling,
    /// one merging). Default [`DEFAULT_BUFFER_BYTES`]; 1 to [`MAX_BUFFER_BYTES`].
    pub buffer_bytes: usize,
    /// Every this many keys the file stores a key whole (a restart point, listed in
    /// the file's index). Default [`DEFAULT_RESTART_INTERVAL`]; 1 to 65,536.
    pub restart_interval: u32,
}

impl Default for SeenConfig {
    fn default() -> SeenConfig {
        SeenConfig {
            buffer_bytes: DEFAULT_BUFFER_BYTES,
            restart_interval: DEFAULT_RESTART_INTERVAL,
        }
    }
}

impl SeenConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), SeenError> {
        if self.buffer_bytes == 0 || self.buffer_bytes > MAX_BUFFER_BYTES {
            return Err(SeenError::InvalidConfig {
                field: "buffer_bytes",
                reason: "must be 1 to 2 GiB",
            });
        }
        if self.restart_interval == 0 || self.restart_interval > MAX_RESTART_INTERVAL {
            return Err(SeenError::InvalidConfig {
                field: "restart_interval",
                reason: "must be 1 to 65,536",
            });
        }
        Ok(())
    }
}
