//! [`StorageError`], the one error of this crate, and [`Result`].
//!
//! Two variants are the batch's fault ([`StorageError::is_batch_fault`]): the caller
//! quarantines the batch (`spool::claim::Claimed::quarantine`) and goes on. Every
//! other variant is the repository's or the machine's problem: the batch stays where
//! it is and the call can be retried.

use std::io;
use std::path::PathBuf;

use spool::SpoolError;
use spool::warc::{WarcError, WarcWriteError};

/// A `Result` whose error is [`StorageError`].
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Why a record of a batch cannot be stored, although it parses as WARC.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordProblem {
    /// A `response` or `revisit` record has no `WARC-Target-URI`.
    #[error("no WARC-Target-URI")]
    NoTargetUri,
    /// The `WARC-Target-URI` is not an absolute http(s) URL.
    #[error("WARC-Target-URI {0:?} is not an http(s) URL")]
    BadTargetUri(String),
    /// `WARC-Payload-Digest` is present but not `sha1:` and base32.
    #[error("WARC-Payload-Digest {0:?} is not a SHA-1 digest")]
    BadPayloadDigest(String),
    /// `WARC-Payload-Digest` is not the SHA-1 of the payload stored in the record.
    #[error("WARC-Payload-Digest {stated} does not match the payload ({computed})")]
    PayloadDigestMismatch {
        /// The digest in the header.
        stated: String,
        /// The digest of the stored payload.
        computed: String,
    },
    /// The batch holds no record at all.
    #[error("the batch holds no record")]
    Empty,
    /// A field of the record cannot be written into another record (withholding).
    #[error("a field cannot be carried over: {0}")]
    Field(String),
}

/// An error of the repository.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The batch is not valid WARC (bad gzip member, malformed record, truncated
    /// file): quarantine it. Nothing in the repository changed.
    #[error("corrupt batch {path}: {source}")]
    CorruptBatch {
        /// The batch.
        path: PathBuf,
        /// What the WARC reader found.
        source: WarcError,
    },
    /// The batch is valid WARC but a record cannot be stored (say, a response
    /// without a target URI): quarantine it. Nothing in the repository changed.
    #[error("batch {path}, record at offset {offset}: {problem}")]
    BadRecord {
        /// The batch.
        path: PathBuf,
        /// File offset of the record.
        offset: u64,
        /// What is wrong.
        problem: RecordProblem,
    },
    /// The batch file is not where the caller said, and the repository has no
    /// unfinished ingest of that name to complete.
    #[error("batch {path} not found")]
    BatchNotFound {
        /// The path given.
        path: PathBuf,
    },
    /// The batch's file name is not a usable `*.warc.gz` name.
    #[error("batch file name {0:?} must be a plain `<name>.warc.gz`")]
    BadBatchName(String),
    /// A batch of this name is already stored and a file of that name is still at the
    /// source: two different batches share a name, or the file was copied back. Nothing
    /// was changed; an operator must look.
    #[error("a batch named {name} is already stored, and {path} still exists")]
    NameCollision {
        /// The batch name.
        name: String,
        /// The source file that is still there.
        path: PathBuf,
    },
    /// A file or folder of the repository could not be read, written or listed.
    #[error("repository I/O on {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The open WARC file is shorter than the length the catalog recorded as durable:
    /// committed records are missing (the file was cut or replaced by hand). Nothing
    /// is written until an operator looks.
    #[error("WARC file {path} holds {len} bytes, fewer than the {durable} committed")]
    WarcTooShort {
        /// The WARC file.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The durable length the catalog recorded.
        durable: u64,
    },
    /// The WARC file name prefix is not `[A-Za-z0-9_-]{1,64}`.
    #[error("WARC file prefix {0:?} must be 1 to 64 of A-Z, a-z, 0-9, '_' and '-'")]
    BadWarcPrefix(String),
    /// Writing the WACZ (ZIP) file failed.
    #[error("writing the WACZ {path}: {source}")]
    Wacz {
        /// The file being written.
        path: PathBuf,
        /// What the ZIP writer said.
        source: zip::result::ZipError,
    },
    /// Two WARC files of the repository share a file name, and a WACZ keeps them in
    /// one folder.
    #[error("two WARC files named {name}: {first} and {second}")]
    WaczNameClash {
        /// The file name.
        name: String,
        /// The first file.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// A crash-safe rename or fsync failed.
    #[error(transparent)]
    Spool(#[from] SpoolError),
    /// Writing a revisit record failed.
    #[error("writing revisit records: {0}")]
    WarcWrite(#[from] WarcWriteError),
    /// The digest index (RocksDB) failed.
    #[error("digest index: {0}")]
    Db(#[from] rocksdb::Error),
    /// A digest index entry does not decode: the index is damaged.
    #[error("digest index entry {key} is damaged")]
    BadDigestEntry {
        /// The key, printable.
        key: String,
    },
    /// A CDXJ line does not parse: the index file is damaged.
    #[error("index file {path}: bad line at offset {offset}: {reason}")]
    BadIndexLine {
        /// The index file.
        path: PathBuf,
        /// Byte offset of the line.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The record an index line points at cannot be read, or is not what the line
    /// says: the repository is damaged.
    #[error("stored record {file} at offset {offset}: {reason}")]
    BadStoredRecord {
        /// The WARC file, relative to the repository's `warc/` folder.
        file: String,
        /// Offset of the record.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// Writing a page out (to `print_page`'s writer) failed.
    #[error("writing the page out: {0}")]
    Output(io::Error),
    /// A URL given to look up cannot be parsed or is not http(s).
    #[error("cannot look up {url:?}: {reason}")]
    BadUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
}

impl StorageError {
    /// True when the batch itself is at fault and should be quarantined; false when
    /// the repository or the machine failed and the ingest should be retried.
    pub fn is_batch_fault(&self) -> bool {
        matches!(
            self,
            Self::CorruptBatch { .. } | Self::BadRecord { .. } | Self::BadBatchName(_)
        )
    }

    /// Whether the repository's file system is full (`ENOSPC`, `EDQUOT`): the
    /// batch stays where it is and the call should be retried once space is freed.
    /// RocksDB reports a full disk as an I/O error whose text says so; it recovers
    /// by itself when space comes back.
    pub fn is_disk_full(&self) -> bool {
        match self {
            Self::Io { source, .. } | Self::Output(source) => {
                spool::layout::is_disk_full_io(source)
            }
            Self::Spool(e) => e.is_disk_full(),
            Self::WarcWrite(WarcWriteError::Io(e)) => spool::layout::is_disk_full_io(e),
            Self::Db(e) => {
                let text = e.to_string();
                text.contains("No space left on device") || text.contains("Disk quota exceeded")
            }
            _ => false,
        }
    }

    /// The file or folder the error is about, if it names one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Self::Io { path, .. } => Some(path),
            Self::Spool(e) => Some(e.path()),
            _ => None,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
