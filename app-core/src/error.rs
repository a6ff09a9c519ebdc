//! [`AppError`]: why the application service cannot start or must stop.

use std::path::PathBuf;

use spool::SpoolError;
use spool::protocol::ProtocolError;
use storage::StorageError;

use seen::SeenError;

/// Why the application service stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// A config field is out of range or does not parse.
    #[error("app config: {field}: {reason}")]
    Config {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The seen set failed (disk, corruption).
    #[error("seen set: {0}")]
    Seen(#[from] SeenError),
    /// A spool operation failed.
    #[error("spool: {0}")]
    Spool(#[from] SpoolError),
    /// The repository failed (not the batch's fault).
    #[error("storage: {0}")]
    Storage(#[from] StorageError),
    /// The progress file or seeds file could not be read or written.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The progress file is damaged.
    #[error("{}: bad line {line:?}", path.display())]
    BadState {
        /// The file.
        path: PathBuf,
        /// The offending line.
        line: String,
    },
    /// The manager refused us (bad token, version): retrying cannot help.
    #[error("manager {manager} refused the application: {source}")]
    Refused {
        /// The manager's address.
        manager: String,
        /// The refusal.
        source: ProtocolError,
    },
    /// Another application registered with our id (`app-<app>`): two processes
    /// must not crawl one application.
    #[error("another application registered with id {id}")]
    Replaced {
        /// The id both applications use.
        id: String,
    },
    /// A thread of the application could not be started.
    #[error("cannot start thread {name}: {source}")]
    Thread {
        /// The thread's name.
        name: &'static str,
        /// The error from the OS.
        source: std::io::Error,
    },
    /// The crawl loop thread (or its batch reader) panicked.
    #[error("the crawl loop panicked")]
    Panicked,
}

impl AppError {
    /// Whether a file system is full (`ENOSPC`, `EDQUOT`): the crawl loop pauses
    /// and retries the step (`pause.rs`) instead of stopping.
    pub fn is_disk_full(&self) -> bool {
        match self {
            AppError::Spool(e) => e.is_disk_full(),
            AppError::Storage(e) => e.is_disk_full(),
            AppError::Seen(SeenError::Io { source, .. }) | AppError::File { source, .. } => {
                spool::layout::is_disk_full_io(source)
            }
            AppError::Seen(SeenError::Publish(e)) => e.is_disk_full(),
            _ => false,
        }
    }

    /// The file or folder the error is about, if it names one.
    pub fn path(&self) -> Option<PathBuf> {
        match self {
            AppError::Spool(e) | AppError::Seen(SeenError::Publish(e)) => Some(e.path().to_owned()),
            AppError::Storage(e) => e.path().map(ToOwned::to_owned),
            AppError::Seen(SeenError::Io { path, .. }) | AppError::File { path, .. } => {
                Some(path.clone())
            }
            _ => None,
        }
    }
}
