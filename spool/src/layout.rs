//! The spool's folder layout, and [`SpoolError`], the error of every spool-directory
//! module (`layout`, `name`, `publish`, `claim`, `discover`).
//!
//! One spool root holds:
//! ```text
//! requests/<app>/      request files  (application -> manager)
//! pages/<app>/         page batches   (downloader  -> application), WARC
//! outcomes/<app>/      per-URL results that produced no page (manager -> application)
//! robots/              robots.txt fetches (downloader -> manager)
//! exchange/<app>/      inter-partition URL batches (application part -> part)
//! ```
//! and each of these folders (a [`SpoolDir`]) holds, besides its published files:
//! - `.tmp/`: files being written (`<name>.<owner>.<nonce>`); never read by consumers;
//! - `.claimed/<consumer>/`: files a consumer has claimed and not finished;
//! - `.bad/`: quarantined files, each with a `<name>.why` beside it.
//!
//! Every name in the layout is built from validated ids ([`AppId`], [`ComponentId`]),
//! so no path can escape the root. This module must never rely on locks or on
//! file-system events: the spool may be NFS, where only `rename` is atomic.
//! Listing a folder ([`SpoolDir::list`]) costs O(files in the folder).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::ids::{AppId, ComponentId};
use crate::name::SpoolName;

/// How long [`create_dir_all_shared`] waits for a folder another machine made to
/// show here.
const SHOW_WAIT: Duration = Duration::from_secs(30);

/// `fs::create_dir_all` for a folder other machines may be making too. On NFS a
/// folder another machine made a moment ago may not show here yet (attribute
/// caching): `mkdir` answers "exists" while a lookup does not find it, and
/// `create_dir_all` gives up. Then this waits (up to `SHOW_WAIT`, 30 s, polling) for
/// it to show.
pub fn create_dir_all_shared(path: &Path) -> io::Result<()> {
    let deadline = std::time::Instant::now() + SHOW_WAIT;
    loop {
        match fs::create_dir_all(path) {
            Err(e)
                if e.kind() == io::ErrorKind::AlreadyExists
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Name of the sub-folder holding files being written.
pub const TMP_DIR: &str = ".tmp";
/// Name of the sub-folder holding one folder per consumer with its claimed files.
pub const CLAIMED_DIR: &str = ".claimed";
/// Name of the sub-folder holding quarantined files and their `.why` notes.
pub const BAD_DIR: &str = ".bad";

/// An error of the spool directory rules; every I/O variant names the path involved.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// A spool folder (or one of its `.tmp`, `.claimed`, `.bad` sub-folders) could not
    /// be created.
    #[error("cannot create spool folder {path}: {source}")]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A spool folder could not be listed.
    #[error("cannot list spool folder {path}: {source}")]
    ListDir {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A file could not be created, written, read or opened.
    #[error("cannot access spool file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// `fsync` of a file or of a folder failed: the data may not be durable.
    #[error("cannot fsync {path}: {source}")]
    Sync {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A rename failed (other than losing a claim race, which is not an error).
    #[error("cannot rename {from} to {to}: {source}")]
    Rename {
        /// The file being moved.
        from: PathBuf,
        /// Where it was going.
        to: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A file could not be removed.
    #[error("cannot remove spool file {path}: {source}")]
    Remove {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A file about to be published already exists: two live producers share one id.
    #[error("spool file {path} already exists: is another producer running with the same id?")]
    NameTaken {
        /// The existing file.
        path: PathBuf,
    },
}

impl SpoolError {
    /// Whether this failure may pass by itself and the operation should simply be
    /// tried again on a later scan: `EIO`, `ESTALE`, `EAGAIN` or `EINTR` from the
    /// file system (an NFS server or network blip), as opposed to a missing folder,
    /// a permission problem or a full disk.
    pub fn is_transient(&self) -> bool {
        match self {
            SpoolError::CreateDir { source, .. }
            | SpoolError::ListDir { source, .. }
            | SpoolError::File { source, .. }
            | SpoolError::Sync { source, .. }
            | SpoolError::Rename { source, .. }
            | SpoolError::Remove { source, .. } => is_transient_io(source),
            SpoolError::NameTaken { .. } => false,
        }
    }

    /// Whether this failure is a full file system (`ENOSPC`, `EDQUOT`): the
    /// operation should be retried, with a back-off, once space is freed; nothing
    /// was published by it (a [`PendingFile`](crate::publish::PendingFile) that
    /// failed this way can be rewound or committed again).
    ///
    /// A failed `fsync` ([`SpoolError::Sync`]) never counts: after one, the kernel
    /// may have dropped the unwritten data while the file still reads back whole, so
    /// retrying could publish a file that is not on disk.
    pub fn is_disk_full(&self) -> bool {
        match self {
            SpoolError::CreateDir { source, .. }
            | SpoolError::ListDir { source, .. }
            | SpoolError::File { source, .. }
            | SpoolError::Rename { source, .. }
            | SpoolError::Remove { source, .. } => is_disk_full_io(source),
            SpoolError::Sync { .. } | SpoolError::NameTaken { .. } => false,
        }
    }

    /// The path the failure is about (for "spool full at PATH").
    pub fn path(&self) -> &Path {
        match self {
            SpoolError::CreateDir { path, .. }
            | SpoolError::ListDir { path, .. }
            | SpoolError::File { path, .. }
            | SpoolError::Sync { path, .. }
            | SpoolError::Remove { path, .. }
            | SpoolError::NameTaken { path } => path,
            SpoolError::Rename { to, .. } => to,
        }
    }
}

/// Whether an I/O error says the file system is full: `ENOSPC` (no space left) or
/// `EDQUOT` (quota exceeded). See [`SpoolError::is_disk_full`].
pub fn is_disk_full_io(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(nix::libc::ENOSPC | nix::libc::EDQUOT)
    ) || err.kind() == io::ErrorKind::StorageFull
        || err
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<SpoolError>())
            .is_some_and(SpoolError::is_disk_full)
}

/// Whether an I/O error is one a network file system raises for a passing fault
/// (see [`SpoolError::is_transient`]).
pub fn is_transient_io(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(nix::libc::EIO | nix::libc::ESTALE | nix::libc::EAGAIN | nix::libc::EINTR)
    )
}

impl From<SpoolError> for io::Error {
    /// Keeps the OS error kind where there is one, so `?` works in `io::Result` code.
    fn from(err: SpoolError) -> io::Error {
        let kind = match &err {
            SpoolError::CreateDir { source, .. }
            | SpoolError::ListDir { source, .. }
            | SpoolError::File { source, .. }
            | SpoolError::Sync { source, .. }
            | SpoolError::Rename { source, .. }
            | SpoolError::Remove { source, .. } => source.kind(),
            SpoolError::NameTaken { .. } => io::ErrorKind::AlreadyExists,
        };
        io::Error::new(kind, err)
    }
}

/// A spool root: the folder every machine mounts. Cheap to clone; touches no disk until
/// a folder is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spool {
    root: PathBuf,
    notify: bool,
}

impl Spool {
    /// A spool rooted at `root` (nothing is created yet), whose consumers use
    /// change events as a wake-up hint on top of their scans.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            notify: true,
        }
    }

    /// The same spool, with change events used (`true`) or not (`false`: a file
    /// system that does not deliver them, such as NFS, where only the periodic
    /// scans find files other machines published).
    #[must_use]
    pub fn with_notify(mut self, notify: bool) -> Self {
        self.notify = notify;
        self
    }

    /// Whether consumers of this spool watch for change events (see
    /// [`Spool::with_notify`]).
    pub fn notify(&self) -> bool {
        self.notify
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Opens (creating if needed) `requests/<app>/`: request files, application -> manager.
    pub fn requests(&self, app: &AppId) -> Result<SpoolDir, SpoolError> {
        SpoolDir::open(self.root.join("requests").join(app.as_str()))
    }

    /// Opens `pages/<app>/`: WARC page batches, downloader -> application.
    pub fn pages(&self, app: &AppId) -> Result<SpoolDir, SpoolError> {
        SpoolDir::open(self.root.join("pages").join(app.as_str()))
    }

    /// Opens `outcomes/<app>/`: URLs that ended without a page, manager -> application.
    pub fn outcomes(&self, app: &AppId) -> Result<SpoolDir, SpoolError> {
        SpoolDir::open(self.root.join("outcomes").join(app.as_str()))
    }

    /// Opens `robots/`: robots.txt fetches, downloader -> manager.
    pub fn robots(&self) -> Result<SpoolDir, SpoolError> {
        SpoolDir::open(self.root.join("robots"))
    }

    /// Opens `exchange/<app>/`: inter-partition URL batches between application parts.
    pub fn exchange(&self, app: &AppId) -> Result<SpoolDir, SpoolError> {
        SpoolDir::open(self.root.join("exchange").join(app.as_str()))
    }
}

/// One spool folder with its `.tmp/`, `.claimed/` and `.bad/` sub-folders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolDir {
    path: PathBuf,
}

impl SpoolDir {
    /// Opens the folder at `path`, creating it and its sub-folders if needed
    /// (idempotent; safe to race with other processes doing the same).
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, SpoolError> {
        let dir = Self { path: path.into() };
        for sub in [dir.tmp_dir(), dir.claimed_root(), dir.bad_dir()] {
            create_dir_all_shared(&sub)
                .map_err(|source| SpoolError::CreateDir { path: sub, source })?;
        }
        Ok(dir)
    }

    /// The folder itself, where published files appear.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `.tmp/`: files being written.
    pub fn tmp_dir(&self) -> PathBuf {
        self.path.join(TMP_DIR)
    }

    /// `.claimed/`: holds one folder per consumer.
    pub fn claimed_root(&self) -> PathBuf {
        self.path.join(CLAIMED_DIR)
    }

    /// `.claimed/<consumer>/`: the files `consumer` has claimed and not finished.
    pub fn claimed_dir(&self, consumer: &ComponentId) -> PathBuf {
        self.claimed_root().join(consumer.as_str())
    }

    /// `.bad/`: quarantined files and their `.why` notes.
    pub fn bad_dir(&self) -> PathBuf {
        self.path.join(BAD_DIR)
    }

    /// Where a published file with this name lives.
    pub fn file_path(&self, name: &SpoolName) -> PathBuf {
        self.path.join(name.to_string())
    }

    /// The published files waiting in the folder, sorted by `(priority, seq, producer)`.
    ///
    /// Skips dot-entries (sub-folders, hidden files) and names that do not parse
    /// (logged at debug level: a stray file never stops a consumer). O(files).
    pub fn list(&self) -> Result<Vec<SpoolName>, SpoolError> {
        let mut names = list_names(&self.path)?;
        names.sort();
        Ok(names)
    }

    /// Removes files in `.tmp/` not modified for `older_than`: leftovers of producers
    /// that crashed and never came back under the same id. Returns how many were
    /// removed. For an operator or the manager; choose `older_than` well above the
    /// longest pause between two writes of a producer. O(files in `.tmp/`).
    pub fn remove_stale_tmp(&self, older_than: Duration) -> Result<usize, SpoolError> {
        let tmp = self.tmp_dir();
        let now = SystemTime::now();
        let mut removed = 0;
        for entry in read_dir(&tmp)? {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            let age = meta
                .modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .unwrap_or_default();
            if meta.is_file() && age >= older_than {
                match fs::remove_file(&path) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(source) => return Err(SpoolError::Remove { path, source }),
                }
            }
        }
        Ok(removed)
    }
}

/// The entries of `dir`, as an iterator of entries that could be read.
pub(crate) fn read_dir(dir: &Path) -> Result<Vec<fs::DirEntry>, SpoolError> {
    let list_err = |source| SpoolError::ListDir {
        path: dir.to_owned(),
        source,
    };
    fs::read_dir(dir)
        .map_err(list_err)?
        .map(|e| e.map_err(list_err))
        .collect()
}

/// The parsable spool names directly in `dir`, unsorted, skipping dot-entries.
pub(crate) fn list_names(dir: &Path) -> Result<Vec<SpoolName>, SpoolError> {
    let mut names = Vec::new();
    for entry in read_dir(dir)? {
        let file_name = entry.file_name();
        let Some(text) = file_name.to_str() else {
            tracing::debug!(dir = %dir.display(), name = ?file_name, "skipping non-UTF-8 name");
            continue;
        };
        if text.starts_with('.') {
            continue;
        }
        match text.parse::<SpoolName>() {
            Ok(name) => names.push(name),
            Err(error) => {
                tracing::debug!(dir = %dir.display(), name = text, %error, "skipping foreign file");
            }
        }
    }
    Ok(names)
}

/// Fsyncs the folder holding `path` (`.` for a bare file name).
pub(crate) fn sync_parent(path: &Path) -> Result<(), SpoolError> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => sync_dir(dir),
        _ => sync_dir(Path::new(".")),
    }
}

/// Fsyncs a folder so that renames into or out of it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), SpoolError> {
    let sync_err = |source| SpoolError::Sync {
        path: dir.to_owned(),
        source,
    };
    fs::File::open(dir)
        .map_err(sync_err)?
        .sync_all()
        .map_err(sync_err)
}

#[cfg(test)]
mod tests {
    use super::test_support::TestDir;
    use super::*;

    #[test]
    fn opens_every_folder_with_its_subfolders() {
        let t = TestDir::new("layout");
        let spool = Spool::new(t.path());
        let app = AppId::new("bfs").unwrap();
        let dirs = [
            (spool.requests(&app).unwrap(), "requests/bfs"),
            (spool.pages(&app).unwrap(), "pages/bfs"),
            (spool.outcomes(&app).unwrap(), "outcomes/bfs"),
            (spool.robots().unwrap(), "robots"),
            (spool.exchange(&app).unwrap(), "exchange/bfs"),
        ];
        for (dir, rel) in dirs {
            assert_eq!(dir.path(), t.path().join(rel));
            for sub in [".tmp", ".claimed", ".bad"] {
                assert!(dir.path().join(sub).is_dir(), "{rel}/{sub}");
            }
            // Idempotent.
            assert_eq!(SpoolDir::open(dir.path()).unwrap(), dir);
        }
    }

    #[test]
    fn list_skips_dot_entries_and_foreign_names() {
        let t = TestDir::new("list");
        let dir = SpoolDir::open(t.path().join("d")).unwrap();
        for name in [
            "50-b-00000000000000000002.requests",
            "50-a-00000000000000000003.requests",
            "10-c-00000000000000000009.requests",
            "notes.txt",
            ".hidden",
        ] {
            fs::write(dir.path().join(name), b"x").unwrap();
        }
        let got: Vec<_> = dir.list().unwrap().iter().map(|n| n.to_string()).collect();
        assert_eq!(
            got,
            [
                "10-c-00000000000000000009.requests",
                "50-b-00000000000000000002.requests",
                "50-a-00000000000000000003.requests",
            ]
        );
    }

    #[test]
    fn error_keeps_path_and_kind() {
        let err = SpoolDir::open("/proc/definitely/not/here").unwrap_err();
        assert!(
            err.to_string().contains("/proc/definitely/not/here"),
            "{err}"
        );
        let io: io::Error = err.into();
        assert_ne!(io.kind(), io::ErrorKind::Other);
    }
}

/// Scratch folders for the unit tests of the spool-directory modules.
#[cfg(test)]
pub(crate) mod test_support {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fresh folder under the system temp dir, removed on drop unless the test failed.
    pub(crate) struct TestDir(PathBuf);

    impl TestDir {
        pub(crate) fn new(label: &str) -> Self {
            static N: AtomicU32 = AtomicU32::new(0);
            let path = std::env::temp_dir().join(format!(
                "polycrawl-spool-unit-{label}-{}-{}-{}",
                std::process::id(),
                crate::name::now_micros(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TestDir {
        fn drop(&mut self) {
            if std::thread::panicking() {
                eprintln!("keeping {} for inspection", self.0.display());
            } else {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }
}
