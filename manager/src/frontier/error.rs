//! [`FrontierError`]: everything that can go wrong in the frontier, typed, with the
//! context needed to act on it.
//!
//! Bad *input* is never an error here: an invalid URL or a blacklisted host becomes an
//! outcome, a request file that does not parse is quarantined, a report for a job
//! the frontier does not know is ignored (and logged). What remains are failures of
//! the frontier's own storage (RocksDB, the spool) and misuse of the API.

use std::path::PathBuf;

use spool::SpoolError;
use spool::protocol::JobId;

/// An error of the frontier.
#[derive(Debug, thiserror::Error)]
pub enum FrontierError {
    /// A config value is out of range.
    #[error("frontier config: {field} {why}")]
    Config {
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A RocksDB operation failed.
    #[error("rocksdb: {what}: {source}")]
    Db {
        /// What the frontier was doing ("open", "write batch", "read queue of host 7").
        what: String,
        /// The RocksDB error.
        #[source]
        source: rocksdb::Error,
    },
    /// A value stored in RocksDB does not decode: the database is corrupt or was
    /// written by an incompatible version.
    #[error("rocksdb: cannot decode {what}: {source}")]
    Decode {
        /// Which record ("host record 7", "meta key counters").
        what: String,
        /// The postcard error.
        #[source]
        source: postcard::Error,
    },
    /// A spool operation (claim, list, publish, done) failed.
    #[error("spool: {what}: {source}")]
    Spool {
        /// What the frontier was doing ("claim request file", "publish outcomes").
        what: String,
        /// The spool error.
        #[source]
        source: SpoolError,
    },
    /// Reading a claimed request file failed for a reason other than its content (an
    /// I/O error: the file stays claimed and is retried).
    #[error("reading request file {path}: {source}")]
    RequestFile {
        /// The claimed file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// `on_report` got a stored robots.txt response: its body is in the spool, so the
    /// service must call `on_robots_fetched` with it instead.
    #[error("{job} is a robots.txt fetch: call on_robots_fetched with its body")]
    RobotsBodyRequired {
        /// The robots job.
        job: JobId,
    },
    /// Creating a checkpoint failed.
    #[error("checkpoint into {dir}: {source}")]
    Checkpoint {
        /// The target folder.
        dir: PathBuf,
        /// The RocksDB error.
        #[source]
        source: rocksdb::Error,
    },
}

impl FrontierError {
    /// A RocksDB error with what the frontier was doing.
    pub(crate) fn db(what: impl Into<String>, source: rocksdb::Error) -> Self {
        Self::Db {
            what: what.into(),
            source,
        }
    }

    /// Whether a spool write failed because the file system is full (`ENOSPC`,
    /// `EDQUOT`): the caller pauses and retries instead of stopping.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, Self::Spool { source, .. } if source.is_disk_full())
    }

    /// The spool path a spool error is about.
    pub(crate) fn spool_path(&self) -> Option<&std::path::Path> {
        match self {
            Self::Spool { source, .. } => Some(source.path()),
            _ => None,
        }
    }

    /// A spool error with what the frontier was doing.
    pub(crate) fn spool(what: impl Into<String>, source: SpoolError) -> Self {
        Self::Spool {
            what: what.into(),
            source,
        }
    }
}
