//! The service's errors: [`DownloaderError`], why [`run`](crate::run) could not
//! start or had to stop, and [`WriteError`], why the batch writer could not store a
//! page.
//!
//! A failed fetch is not an error here: it is a report
//! ([`FetchResult::Failed`](spool::protocol::FetchResult)). A lost manager connection
//! is not one either: the service reconnects, and neither is a full spool
//! ([`WriteError::is_disk_full`]): the writer pauses and retries (see `writer.rs`).
//! Only what retrying cannot fix ends `run`. Other disk trouble (a read-only spool,
//! a failed fsync) is one of those: pages already reported as stored could no
//! longer be committed, and the only way to get them fetched again is for the
//! manager to see this downloader go.

use std::path::PathBuf;

use spool::SpoolError;
use spool::protocol::ProtocolError;
use spool::warc::{InvalidField, WarcWriteError};

use crate::error::ConfigError;
use crate::service::config::InvalidConfig;

/// Why the downloader could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum DownloaderError {
    /// A config value makes no sense.
    #[error("invalid downloader config: {0}")]
    Config(#[from] InvalidConfig),
    /// The fetch engine could not be built (unreadable CA file, bad TLS setup).
    #[error("cannot build the fetch engine: {0}")]
    Fetcher(#[from] ConfigError),
    /// The wire log (`downloader.wire_log`) could not be opened.
    #[error("cannot open the wire log: {0}")]
    WireLog(#[source] std::io::Error),
    /// The batch writer thread could not be started.
    #[error("cannot start the batch writer thread: {0}")]
    WriterThread(#[source] std::io::Error),
    /// Writing or publishing a spool file failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The manager refused the handshake (wrong token, other protocol version):
    /// retrying cannot help.
    #[error("the manager at {manager} refused this downloader: {source}")]
    Refused {
        /// The manager's address, as configured.
        manager: String,
        /// The refusal, with the manager's reason.
        source: ProtocolError,
    },
    /// The manager closed this connection because another downloader registered
    /// with the same id; this one stops so the two do not take turns.
    #[error("another downloader registered with the manager under the same id {id}")]
    Replaced {
        /// The id both downloaders use.
        id: String,
    },
}

/// Why the batch writer could not store a page or publish a file.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A spool folder or file could not be created, written or published.
    #[error("spool: {0}")]
    Spool(#[from] SpoolError),
    /// A WARC record could not be written into the file at `path`.
    #[error("cannot write a WARC record to {path}: {source}")]
    Warc {
        /// The temp file being written.
        path: PathBuf,
        /// The writer's error.
        source: WarcWriteError,
    },
    /// A WARC header field could not be built (never expected: targets are
    /// validated); only the one record is lost.
    #[error("cannot build a WARC header: {0}")]
    Field(#[from] InvalidField),
    /// The writer thread panicked (a bug).
    #[error("the batch writer thread panicked")]
    Panicked,
    /// The writer thread stopped before it could take a command (it gave up on a
    /// full spool at shutdown, or failed).
    #[error("the batch writer stopped")]
    Stopped,
}

impl WriteError {
    /// Whether the spool is full (`ENOSPC`, `EDQUOT`): the writer pauses and tries
    /// again instead of stopping the service.
    pub fn is_disk_full(&self) -> bool {
        match self {
            WriteError::Spool(e) => e.is_disk_full(),
            WriteError::Warc {
                source: WarcWriteError::Io(e),
                ..
            } => spool::layout::is_disk_full_io(e),
            _ => false,
        }
    }

    /// The file or folder the error is about, if it names one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            WriteError::Spool(e) => Some(e.path()),
            WriteError::Warc { path, .. } => Some(path),
            _ => None,
        }
    }
}
