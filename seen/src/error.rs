//! The seen set's one error type, and what exactly was wrong with a bad file.

use std::io;
use std::path::PathBuf;

use spool::SpoolError;

/// Everything the seen set can fail with.
#[derive(Debug, thiserror::Error)]
pub enum SeenError {
    /// A [`SeenConfig`](super::SeenConfig) field is out of range.
    #[error("invalid seen-set config: {field} {reason}")]
    InvalidConfig {
        /// The field.
        field: &'static str,
        /// What it must be.
        reason: &'static str,
    },
    /// A key longer than [`MAX_KEY_LEN`](super::MAX_KEY_LEN) was inserted.
    #[error("key of {len} bytes is longer than the limit of {max}")]
    KeyTooLong {
        /// The key's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A payload longer than [`MAX_PAYLOAD_LEN`](super::MAX_PAYLOAD_LEN) was inserted.
    #[error("payload of {len} bytes is longer than the limit of {max}")]
    PayloadTooLong {
        /// The payload's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Reading, writing, listing or removing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The fsync-rename-fsync hand-off of a merged file failed; the previous file is
    /// still the set.
    #[error("publishing a merged file: {0}")]
    Publish(#[from] SpoolError),
    /// A set file is damaged or is not a set file.
    #[error("{path}: corrupt seen-set file: {what}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: Corruption,
    },
    /// [`SeenSet::open_at`](super::SeenSet::open_at) asked for a generation whose file
    /// is not in the folder.
    #[error("{dir}: no file of generation {generation}")]
    MissingGeneration {
        /// The set's folder.
        dir: PathBuf,
        /// The generation asked for.
        generation: u64,
    },
    /// [`SeenSet::release`](super::SeenSet::release) named a generation not delivered yet.
    #[error("cannot release generation {requested}: only {delivered} delivered")]
    ReleaseAhead {
        /// The generation passed.
        requested: u64,
        /// The newest generation delivered (or opened).
        delivered: u64,
    },
    /// An earlier merge failed (its error was returned once); the set takes no more
    /// keys. Reopen it and replay from the last published generation.
    #[error("the seen set stopped after an earlier merge failed")]
    Stopped,
    /// The merge thread panicked.
    #[error("the seen set's merge thread panicked")]
    WorkerPanicked,
}

/// What is wrong with a damaged set file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Corruption {
    /// The file does not start with the set's magic bytes.
    #[error("bad magic bytes at the start")]
    BadMagic,
    /// The file does not end with the set's end marker.
    #[error("bad end marker (truncated or overwritten)")]
    BadEndMagic,
    /// The format version is not one this build reads.
    #[error("unsupported format version {0}")]
    UnsupportedVersion(u32),
    /// The restart interval in the header is 0 or too large.
    #[error("bad restart interval {0}")]
    BadRestartInterval(u32),
    /// Header and footer disagree, or the sizes do not add up to the file's length.
    #[error("header and footer disagree with each other or with the file length")]
    Inconsistent,
    /// The generation inside the file is not the one in its name.
    #[error("file holds generation {found}, its name says {expected}")]
    GenerationMismatch {
        /// The generation in the name.
        expected: u64,
        /// The generation in the header.
        found: u64,
    },
    /// The file ended early.
    #[error("truncated")]
    Truncated,
    /// A key's encoding is impossible (shared prefix longer than the previous key,
    /// a restart entry sharing a prefix, an entry running into the index).
    #[error("bad entry for key {index}")]
    BadEntry {
        /// The key's position in the file.
        index: u64,
    },
    /// A key is not strictly greater than the one before it.
    #[error("key {index} is out of order")]
    Unsorted {
        /// The key's position in the file.
        index: u64,
    },
    /// The restart index does not point at the restart entries.
    #[error("restart index does not match the entries")]
    BadRestartIndex,
    /// The CRC-32 of the file does not match the one in its footer.
    #[error("checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    Checksum {
        /// The CRC in the footer.
        stored: u32,
        /// The CRC of the bytes read.
        computed: u32,
    },
}

impl SeenError {
    /// An [`SeenError::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> SeenError {
        let path = path.into();
        move |source| SeenError::Io { path, source }
    }
}
