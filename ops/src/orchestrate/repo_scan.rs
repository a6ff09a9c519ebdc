//! [`RepoScan`]: what a run stored, read back from the repository's WARC files
//! with the spool's own reader (`<repo>/warc/**/*.warc.gz`): response records by
//! HTTP status, the set of URLs stored with status 200, and bytes of WARC.

use std::collections::{BTreeMap, HashSet};
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::Context;
use spool::warc::{RecordType, WarcReader};

/// What the repository holds.
#[derive(Debug, Clone, Default)]
pub struct RepoScan {
    /// The `.warc.gz` files, sorted.
    pub files: Vec<PathBuf>,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Response records by HTTP status (0: no readable status line).
    pub by_status: BTreeMap<u16, u64>,
    /// Revisit records (duplicate content stored by reference).
    pub revisits: u64,
    /// `WARC-Target-URI`s of the responses with status 200.
    pub ok_urls: HashSet<String>,
    /// Response records in all (a URL stored twice counts twice).
    pub responses: u64,
}

impl RepoScan {
    /// Reads every WARC file under `<repo>/warc`.
    pub fn read(repo: &Path) -> anyhow::Result<RepoScan> {
        let mut scan = RepoScan::default();
        collect_warcs(&repo.join(storage::repository::WARC_DIR), &mut scan.files)?;
        scan.files.sort();
        for path in scan.files.clone() {
            scan.read_file(&path)
                .with_context(|| format!("reading {}", path.display()))?;
        }
        Ok(scan)
    }

    fn read_file(&mut self, path: &Path) -> anyhow::Result<()> {
        let file = std::fs::File::open(path)?;
        self.bytes += file.metadata()?.len();
        for record in WarcReader::new(BufReader::new(file)) {
            let record = record?;
            match record.headers.record_type() {
                Some(RecordType::Response) => {
                    self.responses += 1;
                    let status = http_status(&record.block).unwrap_or(0);
                    *self.by_status.entry(status).or_default() += 1;
                    if status == 200 {
                        if let Some(uri) = record.headers.target_uri() {
                            self.ok_urls.insert(uri.to_owned());
                        }
                    }
                }
                Some(RecordType::Revisit) => self.revisits += 1,
                _ => {}
            }
        }
        Ok(())
    }

    /// Responses whose status is not 200, as `404=3 301=12`.
    pub fn other_statuses(&self) -> String {
        let parts: Vec<String> = self
            .by_status
            .iter()
            .filter(|(s, _)| **s != 200)
            .map(|(s, n)| format!("{s}={n}"))
            .collect();
        if parts.is_empty() {
            "none".to_owned()
        } else {
            parts.join(" ")
        }
    }
}

/// The status code of an HTTP response block (`HTTP/1.1 200 OK\r\n...`).
pub fn http_status(block: &[u8]) -> Option<u16> {
    let end = block
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(block.len());
    let line = std::str::from_utf8(&block[..end]).ok()?;
    let mut words = line.split_whitespace();
    if !words.next()?.starts_with("HTTP/") {
        return None;
    }
    words.next()?.parse().ok()
}

fn collect_warcs(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            collect_warcs(&path, out)?;
        } else if path.to_string_lossy().ends_with(".warc.gz") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        assert_eq!(http_status(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n"), Some(200));
        assert_eq!(http_status(b"HTTP/1.0 404\r\n"), Some(404));
        assert_eq!(http_status(b"garbage"), None);
        assert_eq!(http_status(b""), None);
    }

    #[test]
    fn missing_repository_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let scan = RepoScan::read(&dir.path().join("nope")).unwrap();
        assert_eq!((scan.files.len(), scan.bytes, scan.responses), (0, 0, 0));
        assert_eq!(scan.other_statuses(), "none");
    }
}
