//! Robots files: a downloader publishes each robots.txt fetch over
//! `spool::protocol::INLINE_ROBOTS_MAX` bytes as
//! `robots/<00-<downloader>-<seq>.robots>` (a WARC `response` record, then its
//! `request` record, gzip members) and then reports `Stored` naming it. The manager
//! reads the response's entity body ([`read_body`]), hands it to the frontier, and
//! deletes the file ([`remove`]). A smaller robots.txt comes in the report itself
//! (`StoredPage::response`); [`body_of`] reads both.
//!
//! Decision: the file is deleted, not kept for audit. The verdict and the body that
//! produced it are cached in the frontier's database (`origin` family) for the
//! robots TTL, and robots files would otherwise pile up forever in a directory that
//! nobody else consumes; the downloader's logs name every fetch. A file whose job is
//! unknown (reported to an earlier run of the manager) is deleted too, and at start
//! the manager sweeps files older than an hour ([`sweep_orphans`]): their jobs
//! went back to the queues, so they would never be read. (Only old files: several
//! crawling systems may share one spool.)
//!
//! This module does blocking file I/O on small files (at most a few hundred KiB);
//! it must never read a file outside `robots/` (names are checked first).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use spool::SpoolDir;
use spool::name::{FileKind, SpoolName};
use spool::warc::{DEFAULT_MAX_HEADER, RecordType, WarcReader};

use spool::http::{HttpError, StoredResponse};

/// Largest WARC block read from a robots file: the raw response, whose body the
/// downloader already capped (`max_robots_bytes`, compressed or chunked).
const MAX_BLOCK: u64 = 8 << 20;

/// Why a robots file gave no body.
#[derive(Debug, thiserror::Error)]
pub enum RobotsFileError {
    /// The report names something that is not a robots file name.
    #[error("{0:?} is not a robots file name")]
    BadName(String),
    /// The file could not be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid WARC.
    #[error("{path}: {source}")]
    Warc {
        /// The file.
        path: PathBuf,
        /// The reader's error.
        source: spool::warc::WarcError,
    },
    /// The file holds no `response` record.
    #[error("{0}: no response record")]
    NoResponse(PathBuf),
    /// The response's HTTP body could not be decoded.
    #[error("{path}: {source}")]
    Body {
        /// The file.
        path: PathBuf,
        /// What is wrong with the body.
        source: HttpError,
    },
}

/// The path of robots file `name` in the robots folder `dir`, if `name` is one.
pub fn path_of(dir: &Path, name: &str) -> Result<PathBuf, RobotsFileError> {
    match name.parse::<SpoolName>() {
        Ok(parsed) if parsed.kind == FileKind::Robots && parsed.to_string() == name => {
            Ok(dir.join(name))
        }
        _ => Err(RobotsFileError::BadName(name.to_owned())),
    }
}

/// The entity body (de-chunked, decompressed, at most `max` bytes) of the first
/// `response` record of the robots file at `path`.
pub fn read_body(path: &Path, max: usize) -> Result<Vec<u8>, RobotsFileError> {
    let file = File::open(path).map_err(|source| RobotsFileError::Open {
        path: path.to_owned(),
        source,
    })?;
    let reader = WarcReader::new(BufReader::new(file)).with_limits(DEFAULT_MAX_HEADER, MAX_BLOCK);
    for record in reader {
        let record = record.map_err(|source| RobotsFileError::Warc {
            path: path.to_owned(),
            source,
        })?;
        if record.headers.record_type() == Some(RecordType::Response) {
            return body_of(&record.block, max).map_err(|source| RobotsFileError::Body {
                path: path.to_owned(),
                source,
            });
        }
    }
    Err(RobotsFileError::NoResponse(path.to_owned()))
}

/// The entity body (de-chunked, decompressed, at most `max` bytes) of `response`,
/// an HTTP response as received (a robots file's `response` block, or the one a
/// downloader sent in its report). A body cut by the downloader's cap (or longer
/// than `max`) is kept as far as it goes: robots.txt parsing reads at most 500 KiB
/// anyway.
pub fn body_of(response: &[u8], max: usize) -> Result<Vec<u8>, HttpError> {
    let response = StoredResponse::parse(response)?;
    let body = response.entity_body(max)?;
    Ok(body.bytes.into_owned())
}

/// Deletes the robots file at `path` (already gone is fine; other failures are
/// logged: a stray file costs nothing but space).
pub fn remove(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot delete robots file"),
    }
}

/// Deletes robots files in `dir` not modified for `older_than`: files of jobs a
/// previous run of the manager never read (it crashed between the report and the
/// read, or the report never came). Returns how many were deleted. Their hosts'
/// robots.txt is fetched again anyway: the jobs went back to the queues.
pub fn sweep_orphans(dir: &SpoolDir, older_than: Duration) -> usize {
    let names = match dir.list() {
        Ok(names) => names,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list robots/ for orphaned files");
            return 0;
        }
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for name in names.into_iter().filter(|n| n.kind == FileKind::Robots) {
        let path = dir.file_path(&name);
        let age = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        if age >= older_than {
            remove(&path);
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use spool::warc::{Capture, RecordId, WarcDate, WarcHeaders, WarcWriter, payload_digest};

    use super::*;

    fn write_robots(path: &Path, raw_response: &[u8]) {
        let capture = Capture {
            target_uri: "http://a.test/robots.txt",
            date: WarcDate::now(),
            ip: None,
            warcinfo_id: None,
        };
        let mut w = WarcWriter::new(File::create(path).unwrap());
        let request = WarcHeaders::request(RecordId::random(), &capture).unwrap();
        let response =
            WarcHeaders::response(RecordId::random(), &capture, payload_digest(b"")).unwrap();
        w.write_record(&response, raw_response).unwrap();
        w.write_record(&request, b"GET /robots.txt HTTP/1.1\r\n\r\n")
            .unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn names_are_checked_and_bodies_read() {
        let dir = tempfile::tempdir().unwrap();
        let name = "00-dl-1-00000000000000000007.robots";
        let path = path_of(dir.path(), name).unwrap();
        for bad in ["../x.robots", "00-dl-00000000000000000007.warc.gz", ".tmp"] {
            assert!(path_of(dir.path(), bad).is_err(), "{bad}");
        }
        write_robots(
            &path,
            b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\nUser-agent: *\n",
        );
        assert_eq!(read_body(&path, 1000).unwrap(), b"User-agent: *\n");
        remove(&path);
        assert!(!path.exists());
        remove(&path);
        assert!(matches!(
            read_body(&path, 1000),
            Err(RobotsFileError::Open { .. })
        ));
        std::fs::write(&path, b"not a warc file").unwrap();
        assert!(matches!(
            read_body(&path, 1000),
            Err(RobotsFileError::Warc { .. })
        ));
        let spool_dir = SpoolDir::open(dir.path()).unwrap();
        assert_eq!(sweep_orphans(&spool_dir, Duration::from_secs(3600)), 0);
        assert!(path.exists(), "a fresh file is kept");
        assert_eq!(sweep_orphans(&spool_dir, Duration::ZERO), 1);
        assert!(!path.exists());
    }
}
