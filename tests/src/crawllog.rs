//! `crawl.log` as an outsider reads it: its lines split on white space (not the
//! application's parser), and the WARC repository's response records in the same
//! terms (URL, status, payload bytes), read with `spool`'s WARC reader, so a test
//! can hold the log to the records.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use spool::warc::{Record, RecordType, WarcReader};

use crate::repository::{http_status, warc_files};

/// One crawl.log line, split on white space: 12 columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Column 2: HTTP status, or a negative code.
    pub status: i32,
    /// Column 3 (`None` for `-`).
    pub size: Option<u64>,
    /// Column 4.
    pub url: String,
    /// Column 12, split at commas (empty for `-`).
    pub annotations: Vec<String>,
}

/// The lines of a crawl.log's text; panics naming a line not in the layout (12
/// columns, an ISO time with milliseconds, a fetch time `-` or
/// `yyyyMMddHHmmssSSS+ms`).
pub fn parse_log(text: &str) -> Vec<LogLine> {
    text.lines()
        .map(|line| {
            let cols: Vec<&str> = line.split_ascii_whitespace().collect();
            assert_eq!(cols.len(), 12, "not 12 columns: {line:?}");
            assert!(
                cols[0].ends_with('Z') && cols[0].len() == 24,
                "log time: {line:?}"
            );
            let fetch = cols[8];
            assert!(
                fetch == "-"
                    || fetch.split_once('+').is_some_and(|(t, ms)| {
                        t.len() == 17 && t.parse::<u64>().is_ok() && ms.parse::<u64>().is_ok()
                    }),
                "fetch time: {line:?}"
            );
            LogLine {
                status: cols[1].parse().expect("status"),
                size: (cols[2] != "-").then(|| cols[2].parse().expect("size")),
                url: cols[3].to_owned(),
                annotations: match cols[11] {
                    "-" => Vec::new(),
                    a => a.split(',').map(str::to_owned).collect(),
                },
            }
        })
        .collect()
}

/// Length of the HTTP head at the start of a response block (blank line included).
fn head_len(block: &[u8]) -> usize {
    for i in 0..block.len() {
        if block[i] == b'\n' {
            if block.get(i + 1) == Some(&b'\n') {
                return i + 2;
            }
            if block.get(i + 1..i + 3) == Some(b"\r\n") {
                return i + 3;
            }
        }
    }
    block.len()
}

/// The response records of the repository as (URL, status, payload bytes) with
/// their counts, and the number of revisit records.
///
/// # Panics
/// A WARC file that cannot be listed, opened or read.
pub fn warc_records(repo: &Path) -> (BTreeMap<(String, i32, u64), u64>, u64) {
    let mut responses = BTreeMap::new();
    let mut revisits = 0;
    for path in warc_files(repo).expect("listing the WARC files") {
        let mut reader = WarcReader::new(BufReader::new(File::open(&path).expect("open")));
        let mut rec = Record::default();
        while reader.read_into(&mut rec).expect("reading a WARC file") {
            match rec.headers.record_type() {
                Some(RecordType::Response) => {
                    let url = rec.headers.target_uri().expect("target URI").to_owned();
                    let status = i32::from(http_status(&rec.block).unwrap_or(0));
                    let size = (rec.block.len() - head_len(&rec.block)) as u64;
                    *responses.entry((url, status, size)).or_default() += 1;
                }
                Some(RecordType::Revisit) => revisits += 1,
                _ => {}
            }
        }
    }
    (responses, revisits)
}

/// A (URL, status, payload bytes) key whose count differs between the log's page
/// lines and the response records.
pub type Difference = ((String, i32, u64), u64, u64);

/// The keys whose count of page lines (status > 0) in `log` differs from their
/// count of response records in `responses` (from [`warc_records`]), each with
/// both counts (log, WARC); empty when every stored response has exactly one line
/// and every page line is a stored response.
///
/// # Panics
/// A page line without a size.
pub fn differences(
    log: &[LogLine],
    responses: &BTreeMap<(String, i32, u64), u64>,
) -> Vec<Difference> {
    let mut pages: BTreeMap<(String, i32, u64), u64> = BTreeMap::new();
    for l in log.iter().filter(|l| l.status > 0) {
        let size = l.size.expect("a page line has a size");
        *pages.entry((l.url.clone(), l.status, size)).or_default() += 1;
    }
    let mut diff = Vec::new();
    for (key, &n) in responses {
        let in_log = pages.get(key).copied().unwrap_or(0);
        if in_log != n {
            diff.push((key.clone(), in_log, n));
        }
    }
    for (key, &n) in &pages {
        if !responses.contains_key(key) {
            diff.push((key.clone(), n, 0));
        }
    }
    diff
}
