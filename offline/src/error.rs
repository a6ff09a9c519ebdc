//! [`AssignError`]: why an assignment could not be computed, read or written.

use std::path::PathBuf;

use spool::formats::FormatError;

/// Why a host graph could not be read, partitioned or saved.
#[derive(Debug, thiserror::Error)]
pub enum AssignError {
    /// `--repo` has no `warc/` folder.
    #[error("{} is not a repository (no warc/ folder)", path.display())]
    NotARepository {
        /// The folder given.
        path: PathBuf,
    },
    /// Listing the repository failed.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A batch file of the repository fails storage's checks.
    #[error("batch {}: {source}", path.display())]
    Batch {
        /// The batch file.
        path: PathBuf,
        /// Storage's verdict.
        source: storage::StorageError,
    },
    /// The repository holds no page: nothing to balance.
    #[error("the repository holds no stored page: nothing to assign")]
    NoPages,
    /// Zero parts asked for.
    #[error("--parts must be at least 1")]
    NoParts,
    /// More parts than hosts: some part would get no host.
    #[error("{parts} parts but only {hosts} hosts in the crawl: use --parts {hosts} or fewer")]
    TooManyParts {
        /// Parts asked for.
        parts: u32,
        /// Hosts in the graph.
        hosts: usize,
    },
    /// The imbalance is below 1.0 (or not a number).
    #[error("--imbalance must be a number >= 1.0 (largest part / mean), got {imbalance}")]
    BadImbalance {
        /// The value given.
        imbalance: f64,
    },
    /// A weight or size does not fit METIS's 32-bit integers.
    #[error("the host graph is too large for METIS's 32-bit indices")]
    TooLarge,
    /// METIS refused the graph or failed.
    #[error("METIS failed: {0:?}")]
    Metis(metis::Error),
    /// Writing the assignment file failed.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O or publish error.
        source: std::io::Error,
    },
    /// The table does not encode (a host or part the format refuses).
    #[error("encoding the assignment: {0}")]
    Format(#[from] FormatError),
}
