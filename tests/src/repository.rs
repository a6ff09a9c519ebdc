//! What an application's WARC repository holds (`<repo>/warc/**/*.warc.gz`), read
//! with `spool`'s WARC reader: `response` records by HTTP status and the URLs
//! stored with status 200.
//!
//! Batches are appended to the repository's open WARC file, so while an application
//! runs the last file may end in an unfinished append (a read then fails: retry); a
//! repository whose application has stopped (or restarted, which cuts a torn tail)
//! reads whole.
//!
//! Why this is not `polycrawl`'s own scan (`polycrawl::orchestrate::repo_scan`, the one
//! behind a run's summary): that one reads the repository's CDXJ index, written by
//! the same ingest step the tests check; this one reads the WARC records
//! themselves, so a test judges what a user's WARC tools would see, not what the
//! index says was stored.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use spool::warc::{DEPTH_FIELD, Record, RecordType, WarcReader};

/// The response records of a repository.
#[derive(Debug, Clone, Default)]
pub struct RepoScan {
    /// `.warc.gz` files read.
    pub files: usize,
    /// Response records in all (a URL stored twice counts twice).
    pub responses: usize,
    /// Response records by HTTP status (0: no readable status line).
    pub by_status: BTreeMap<u16, usize>,
    /// `WARC-Target-URI`s of the responses with status 200.
    pub ok_urls: HashSet<String>,
    /// The `Polycrawl-Depth` of every response record that has one, by
    /// `WARC-Target-URI` (a URL stored twice has two entries).
    pub depths: HashMap<String, Vec<u32>>,
}

impl RepoScan {
    /// Reads every WARC file under `<repo>/warc` (none yet: an empty scan).
    ///
    /// # Errors
    /// A file that cannot be listed, opened or parsed, with its path.
    pub fn read(repo: &Path) -> Result<RepoScan, String> {
        let files = warc_files(repo)?;
        let mut scan = RepoScan {
            files: files.len(),
            ..RepoScan::default()
        };
        for path in files {
            let file = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut reader = WarcReader::new(BufReader::new(file));
            let mut rec = Record::default();
            while reader
                .read_into(&mut rec)
                .map_err(|e| format!("{}: {e}", path.display()))?
            {
                if rec.headers.record_type() != Some(RecordType::Response) {
                    continue;
                }
                scan.responses += 1;
                let status = http_status(&rec.block).unwrap_or(0);
                let depth = rec.headers.get(DEPTH_FIELD).map(str::parse::<u32>);
                if let (Some(uri), Some(depth)) = (rec.headers.target_uri(), depth) {
                    let depth =
                        depth.map_err(|e| format!("{}: {uri} depth: {e}", path.display()))?;
                    scan.depths.entry(uri.to_owned()).or_default().push(depth);
                }
                *scan.by_status.entry(status).or_default() += 1;
                if status == 200 {
                    if let Some(uri) = rec.headers.target_uri() {
                        scan.ok_urls.insert(uri.to_owned());
                    }
                }
            }
        }
        Ok(scan)
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

/// The `.warc.gz` files of repository `repo` (under `<repo>/warc`, any depth), in
/// path order; none if it has no `warc` folder yet.
///
/// # Errors
/// A folder that cannot be listed, with its path.
pub fn warc_files(repo: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    collect(&repo.join("warc"), &mut files)?;
    files.sort();
    Ok(files)
}

/// The length of the first append to repository WARC file `path`: every page
/// batch starts with its `warcinfo` record (the downloader's, `software:
/// polycrawl/...`) and is appended whole, with the revisit records storage adds
/// after it, which open with a `warcinfo` of their own (`software:
/// polycrawl-storage/...`). So the first append ends where the second batch's
/// `warcinfo` starts, or at the end of the file.
///
/// # Errors
/// A file that cannot be opened or parsed, with its path.
pub fn first_append_len(path: &Path) -> Result<u64, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let len = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let mut reader = WarcReader::new(BufReader::new(file));
    let mut rec = Record::default();
    let mut infos = 0;
    while reader
        .read_into(&mut rec)
        .map_err(|e| format!("{}: {e}", path.display()))?
    {
        let revisits_info = rec
            .block
            .windows(REVISITS_SOFTWARE.len())
            .any(|w| w == REVISITS_SOFTWARE);
        if rec.headers.record_type() == Some(RecordType::Warcinfo) && !revisits_info {
            infos += 1;
            if infos == 2 {
                return Ok(rec.location.offset);
            }
        }
    }
    Ok(len)
}

/// The `software` field of the warcinfo record that opens storage's revisit
/// records (part of an append, not the start of one).
const REVISITS_SOFTWARE: &[u8] = b"software: polycrawl-storage/";

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.to_string_lossy().ends_with(".warc.gz") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool::warc::{RecordId, RecordLocation, WarcDate, WarcHeaders, WarcWriter};

    fn warcinfo(w: &mut WarcWriter<Vec<u8>>, software: &str) -> RecordLocation {
        let block = spool::warc::warc_fields_block(&[("software", software)]).unwrap();
        let head = WarcHeaders::warcinfo(RecordId::random(), WarcDate::now(), None).unwrap();
        w.write_record(&head, &block).unwrap()
    }

    /// A batch, its revisit records (opened by storage's own warcinfo), then the
    /// next batch: the first append is the batch and its revisits together.
    #[test]
    fn the_first_append_takes_in_the_revisit_records_after_the_batch() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = WarcWriter::new(Vec::new());
        warcinfo(&mut w, "polycrawl/0.1.0");
        warcinfo(&mut w, "polycrawl-storage/0.1.0");
        let second = warcinfo(&mut w, "polycrawl/0.1.0");
        warcinfo(&mut w, "polycrawl-storage/0.1.0");
        let bytes = w.finish().unwrap();
        let path = dir.path().join("two.warc.gz");
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(first_append_len(&path), Ok(second.offset));

        // One batch with its revisits: the whole file.
        let mut w = WarcWriter::new(Vec::new());
        warcinfo(&mut w, "polycrawl/0.1.0");
        warcinfo(&mut w, "polycrawl-storage/0.1.0");
        let bytes = w.finish().unwrap();
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(first_append_len(&path), Ok(bytes.len() as u64));
    }
}
