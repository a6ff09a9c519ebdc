//! [`RepoScan`]: what a run stored, read back from the repository's CDXJ index
//! (`<repo>/index/`, one line per stored response or revisit record): records by HTTP
//! status, the set of URLs stored with status 200, and bytes of WARC
//! (`<repo>/warc/**/*.warc.gz`, by their sizes).
//!
//! It reads the index, not the WARC files: inflating every stored page again only to
//! count it cost the summary about a tenth of a whole crawl's CPU (the peer benchmark
//! of issue 9). The index is written by the same ingest step that moves a batch into
//! the repository and is what `polycrawl get` looks pages up in, so a page it lists is
//! a page a user can read. Run it only when the application has stopped (an index
//! merge running meanwhile makes it fail).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use storage::RepositoryReader;

/// What the repository holds.
#[derive(Debug, Clone, Default)]
pub struct RepoScan {
    /// The `.warc.gz` files, sorted.
    pub files: Vec<PathBuf>,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Stored responses (revisits included) by HTTP status (0: unknown).
    pub by_status: BTreeMap<u16, u64>,
    /// Revisit records (duplicate content stored by reference).
    pub revisits: u64,
    /// URLs of the responses (revisits included) with status 200.
    pub ok_urls: HashSet<String>,
    /// Stored responses in all, revisits included (a URL stored twice counts twice).
    pub responses: u64,
}

impl RepoScan {
    /// Reads the index and lists the WARC files of the repository at `repo`; an
    /// absent repository is empty.
    pub fn read(repo: &Path) -> anyhow::Result<RepoScan> {
        let mut scan = RepoScan::default();
        collect_warcs(&repo.join(storage::repository::WARC_DIR), &mut scan.files)?;
        scan.files.sort();
        for path in &scan.files {
            let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
            scan.bytes += meta.len();
        }
        if !repo.join(storage::repository::INDEX_DIR).is_dir() {
            return Ok(scan);
        }
        let reader = RepositoryReader::open(repo)
            .with_context(|| format!("opening the repository {}", repo.display()))?;
        reader
            .for_each_index_line(|line| {
                scan.responses += 1;
                if line.is_revisit() {
                    scan.revisits += 1;
                }
                let status = line.status.parse().unwrap_or(0);
                *scan.by_status.entry(status).or_default() += 1;
                if status == 200 {
                    scan.ok_urls.insert(line.url);
                }
            })
            .with_context(|| format!("reading the index of {}", repo.display()))?;
        Ok(scan)
    }

    /// The scans of several repositories (the parts of a split crawl) as one: counts
    /// added, files listed together, 200 URLs united.
    pub fn merge(scans: &[RepoScan]) -> RepoScan {
        let mut all = RepoScan::default();
        for s in scans {
            all.files.extend(s.files.iter().cloned());
            all.bytes += s.bytes;
            for (status, n) in &s.by_status {
                *all.by_status.entry(*status).or_default() += n;
            }
            all.revisits += s.revisits;
            all.ok_urls.extend(s.ok_urls.iter().cloned());
            all.responses += s.responses;
        }
        all
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

/// Appends the `.warc.gz` files under `dir` (recursively) to `out`; a missing `dir`
/// adds none.
pub fn collect_warcs(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
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
    fn missing_repository_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let scan = RepoScan::read(&dir.path().join("nope")).unwrap();
        assert_eq!((scan.files.len(), scan.bytes, scan.responses), (0, 0, 0));
        assert_eq!(scan.other_statuses(), "none");
    }
}
