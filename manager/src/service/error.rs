//! [`ManagerError`]: why the manager service could not start or had to stop.
//!
//! Problems with one peer (a refused handshake, a lost connection, a bad report) are
//! not errors of the service: they are logged and the peer is dropped. What remains
//! is configuration, the state directory, the listening socket and the frontier's own
//! storage, without which the manager must not go on.

use std::path::PathBuf;

use crate::frontier::FrontierError;

use super::config::InvalidConfig;

/// An error that stops the manager service.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// A config value makes no sense.
    #[error("manager config: {0}")]
    Config(#[from] InvalidConfig),
    /// The state directory could not be created.
    #[error("cannot create state directory {path}: {source}")]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The control port could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The frontier failed (its RocksDB database or the spool): the crawl state can
    /// no longer be kept, so the manager stops rather than lose work.
    #[error(transparent)]
    Frontier(#[from] FrontierError),
}
