//! [`Repository`] (the single writer: ingest, compaction) and [`RepositoryReader`]
//! (lookups, any number of them, in any process, while the writer runs).
//!
//! ```text
//! <repo>/
//!   warc/<YYYY>/<prefix>-<YYYYMMDDhhmmss>-<serial>.warc.gz
//!                                          WARC files of about `rotation.max_bytes`:
//!                                          batches appended unchanged, each followed
//!                                          by the revisit records of its duplicates
//!   index/<first>-<last>.cdxj              sorted CDXJ, per batch until merged
//!   catalog/                               RocksDB: digest index, ingest journal,
//!                                          the open WARC file's durable length
//!   .tmp/                                  files being written (emptied at open)
//! ```
//!
//! `<YYYY>` is the year the WARC file was started (module [`crate::warcfile`] has the
//! names, the rotation and the crash rules). A batch is copied into the open file
//! (a kernel copy) and then removed from the spool, wherever the spool is.
//! Repositories written before shared files hold one file per batch
//! (`warc/<YYYY>/<batch>.warc.gz`, and `<batch>.revisits.warc.gz`): they stay
//! readable, and new batches go to shared files beside them.

use std::path::{Path, PathBuf};

use crate::catalog::{Catalog, CatalogOptions};
use crate::error::Result;
use crate::fsutil::{empty_dir, ensure_dir};
use crate::index::IndexDir;
use crate::warcfile::{Rotation, WarcFiles};

/// Folder of the WARC files, under the repository root.
pub const WARC_DIR: &str = "warc";
/// Folder of the CDXJ files.
pub const INDEX_DIR: &str = "index";
/// Folder of the catalog (RocksDB).
pub const CATALOG_DIR: &str = "catalog";
/// Folder of files being written.
pub const TMP_DIR: &str = ".tmp";

/// How a [`Repository`] behaves; every field has a documented default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryOptions {
    /// When the open WARC file is closed and the next started.
    pub rotation: Rotation,
    /// First part of the WARC file names, `[A-Za-z0-9_-]{1,64}`: the application id,
    /// so the files of several applications or parts never share a name. Default
    /// `"polycrawl"`.
    pub warc_prefix: String,
    /// Memory bounds of the digest index.
    pub catalog: CatalogOptions,
    /// Index files of one level merged at once (see [`crate::index`]). Default 8.
    pub index_fanout: u64,
    /// Payloads shorter than this are never deduplicated. Default 1 (empty bodies
    /// only).
    pub min_dedup_payload: u64,
}

impl Default for RepositoryOptions {
    fn default() -> Self {
        Self {
            rotation: Rotation::default(),
            warc_prefix: "polycrawl".to_owned(),
            catalog: CatalogOptions::default(),
            index_fanout: 8,
            min_dedup_payload: 1,
        }
    }
}

/// Read access to a repository: lookups through the CDXJ index and reads of WARC
/// records. Takes no lock and opens no database, so `polycrawl get` works while the
/// application ingests.
#[derive(Debug, Clone)]
pub struct RepositoryReader {
    pub(crate) root: PathBuf,
    pub(crate) warc: PathBuf,
    pub(crate) index: IndexDir,
}

impl RepositoryReader {
    /// Opens the repository at `dir` for reading (it must exist).
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self> {
        let root = dir.into();
        let reader = Self::at(root);
        for d in [&reader.warc, reader.index.path()] {
            std::fs::metadata(d).map_err(crate::error::StorageError::io(d))?;
        }
        Ok(reader)
    }

    fn at(root: PathBuf) -> Self {
        Self {
            warc: root.join(WARC_DIR),
            index: IndexDir::new(root.join(INDEX_DIR)),
            root,
        }
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Calls `line` once for every CDXJ line of the index: one per stored response
    /// or revisit record. O(index size) time and I/O, one line in memory. Use it when
    /// no ingest runs (after a crawl): an index merge running meanwhile makes it fail.
    pub fn for_each_index_line(&self, line: impl FnMut(crate::CdxjLine)) -> Result<()> {
        self.index.for_each(line)
    }

    /// The path of a WARC file named in the index (relative to `warc/`).
    pub fn warc_path(&self, file: &str) -> PathBuf {
        self.warc.join(file)
    }
}

impl AsRef<RepositoryReader> for RepositoryReader {
    fn as_ref(&self) -> &RepositoryReader {
        self
    }
}

/// The repository, opened for writing. One per repository at a time: the catalog's
/// RocksDB lock refuses a second one (in this or another process).
#[derive(Debug)]
pub struct Repository {
    pub(crate) reader: RepositoryReader,
    pub(crate) catalog: Catalog,
    pub(crate) options: RepositoryOptions,
    pub(crate) warcs: WarcFiles,
    pub(crate) tmp: PathBuf,
    pub(crate) crash_at: Option<CrashPoint>,
}

/// A step of [`Repository::ingest`] after which crash tests stop it
/// ([`Repository::inject_crash`]); see [`crate::ingest`] for the steps.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// After the pending mark (step 3).
    AfterPendingMark,
    /// After the append of the batch and its revisits (step 5).
    AfterAppend,
    /// After the index file (step 6).
    AfterIndex,
}

impl AsRef<RepositoryReader> for Repository {
    fn as_ref(&self) -> &RepositoryReader {
        &self.reader
    }
}

impl Repository {
    /// Opens (creating) the repository at `dir` with default options.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self> {
        Self::open_with(dir, RepositoryOptions::default())
    }

    /// Opens (creating) the repository at `dir`, then recovers from a crash: deletes
    /// temp files and the inputs of an interrupted index merge, deletes the index file
    /// of every ingest that did not commit, and cuts the open WARC file at its durable
    /// length (the caller ingests those batches again; see [`Self::pending`]).
    pub fn open_with(dir: impl Into<PathBuf>, options: RepositoryOptions) -> Result<Self> {
        let prefix = &options.warc_prefix;
        let prefix_ok = (1..=64).contains(&prefix.len())
            && prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !prefix_ok {
            return Err(crate::error::StorageError::BadWarcPrefix(
                prefix.chars().take(80).collect(),
            ));
        }
        let reader = RepositoryReader::at(dir.into());
        let tmp = reader.root.join(TMP_DIR);
        for d in [&reader.root, &reader.warc, reader.index.path(), &tmp] {
            ensure_dir(d)?;
        }
        let catalog = Catalog::open(&reader.root.join(CATALOG_DIR), &options.catalog)?;
        empty_dir(&tmp)?;
        reader.index.cleanup()?;
        for (name, seq) in catalog.all_pending()? {
            if reader.index.forget_batch(seq)? {
                tracing::info!(batch = %name, "dropped the index of an ingest interrupted by a crash");
            }
        }
        let warcs = WarcFiles::open(
            reader.warc.clone(),
            options.warc_prefix.clone(),
            options.rotation,
            catalog.open_warc()?,
        )?;
        Ok(Self {
            reader,
            catalog,
            options,
            warcs,
            tmp,
            crash_at: None,
        })
    }

    /// For crash tests: the next ingest stops with an I/O error right after `at`, as
    /// if the process had died there (drop the repository and open it again to
    /// continue the test as a restarted process would).
    #[doc(hidden)]
    pub fn inject_crash(&mut self, at: Option<CrashPoint>) {
        self.crash_at = at;
    }

    pub(crate) fn crash_point(&mut self, here: CrashPoint) -> Result<()> {
        if self.crash_at == Some(here) {
            self.crash_at = None;
            return Err(crate::error::StorageError::Io {
                path: self.reader.root.clone(),
                source: std::io::Error::other(format!("injected crash {here:?}")),
            });
        }
        Ok(())
    }

    /// The read side (also reachable through `AsRef`).
    pub fn reader(&self) -> &RepositoryReader {
        &self.reader
    }

    /// Names of batches whose ingest started but did not finish and that are not in
    /// the repository yet: the caller still has them (in its `.claimed/` folder) and
    /// must ingest them again. Index merges leave these batches and later ones alone
    /// until then. O(pending).
    pub fn pending(&self) -> Result<Vec<String>> {
        Ok(self
            .catalog
            .all_pending()?
            .into_iter()
            .map(|(name, _)| name)
            .collect())
    }

    /// Merges every index file of completed batches into one (a quiet-time job;
    /// ingest already merges size-tiered as it goes). Returns the merges done (0 or 1).
    pub fn compact_index(&mut self) -> Result<usize> {
        let below = self.oldest_pending()?;
        self.reader
            .index
            .compact(self.options.index_fanout, below, true, &self.tmp)
    }

    /// Size-tiered merge after an ingest.
    pub(crate) fn compact_tiered(&mut self) -> Result<usize> {
        let below = self.oldest_pending()?;
        self.reader
            .index
            .compact(self.options.index_fanout, below, false, &self.tmp)
    }

    fn oldest_pending(&self) -> Result<u64> {
        let pending = self.catalog.all_pending()?;
        Ok(pending.iter().map(|p| p.1).min().unwrap_or(u64::MAX))
    }
}
