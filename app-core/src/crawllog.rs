//! `crawl.log`: one line per fetch in Heritrix's column layout, written in the
//! crawl's state folder as the crawl goes (`docs/archive.md` has the column table).
//!
//! A line is written for every response or revisit record of a page batch the
//! crawl stores, and for every outcome (a URL that ended without a page), when the
//! crawl loop accounts for its input: a page batch just before it is handed to
//! storage, an outcome file just before its counts are saved. Columns:
//!
//! | # | column | polycrawl writes |
//! |---|---|---|
//! | 1 | log time | when the line was written, ISO-8601 UTC with milliseconds |
//! | 2 | status | the HTTP status; an outcome's negative Heritrix code ([`outcome_status`]) |
//! | 3 | size | payload bytes as stored (after the HTTP head); `-` for an outcome |
//! | 4 | URL | `WARC-Target-URI`; the outcome's URL |
//! | 5 | discovery path | [`discovery_path`] of depth and redirect hops; `-` for a seed or unknown |
//! | 6 | via | `-` (the record does not say which page linked it) |
//! | 7 | MIME type | `Content-Type` without parameters, lowercased; `-` when none |
//! | 8 | thread | the downloader id that fetched it (from the batch name); `-` for an outcome |
//! | 9 | fetch time | `yyyyMMddHHmmssSSS+ms`: start and duration of the fetch; `-` when unknown |
//! | 10 | digest | `sha1:BASE32` (`WARC-Payload-Digest`); `-` for an outcome |
//! | 11 | source | `-` |
//! | 12 | annotations | comma list ([`Annotation`]), or `-` |
//!
//! **Exactly once across restarts.** Lines are appended in steps: the lines of the
//! inputs about to be stored or counted are written and fsynced, then the log's
//! length and those inputs' names (a [`LogMark`]) are saved with the crawl's
//! progress file, and only then are the inputs stored or deleted. At open the log
//! is cut back to the saved length (lines of a step whose mark was not saved: their
//! inputs are still claimed and are logged again), and an input named in the mark
//! is not logged again when it is read again (a crash between the save and its
//! removal). So a kill -9 at any point neither loses nor repeats the line of an
//! input that was accounted for.
//!
//! This module formats, parses and appends lines; it never decides what is logged
//! (the crawl loop does) and never reads the repository. Memory: the lines of one
//! step, and the names of its inputs.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use spool::OutcomeReason;
use spool::warc::WarcDate;
use tracing::warn;

use crate::error::AppError;

/// The log's file name in the state folder.
pub const LOG_FILE: &str = "crawl.log";

/// The Heritrix status code of an outcome (a URL that ended without a page). A
/// [`OutcomeReason::Sitemap`] line is not an outcome and has no line (`None`).
///
/// | reason | code | Heritrix's meaning |
/// |---|---|---|
/// | `dns_failure` | -6 | domain unresolvable |
/// | `connect_failure` | -2 | HTTP connect failed |
/// | `timeout` | -4 | HTTP timeout |
/// | `bad_response` | -3 | HTTP connection broken (no valid HTTP) |
/// | `invalid_url` | -7 | URI unsupported or illegal |
/// | `too_many_failures` | -60 | prerequisite failure for some time (the host was given up) |
/// | `robots_excluded` | -9998 | robots.txt precluded the fetch |
/// | `blacklisted` | -5001 | blocked by the operator |
/// | `forbidden_address` | -5002 | blocked by a processor (the address rule) |
pub fn outcome_status(reason: OutcomeReason) -> Option<i32> {
    Some(match reason {
        OutcomeReason::DnsFailure => -6,
        OutcomeReason::ConnectFailure => -2,
        OutcomeReason::Timeout => -4,
        OutcomeReason::BadResponse => -3,
        OutcomeReason::InvalidUrl => -7,
        OutcomeReason::TooManyFailures => -60,
        OutcomeReason::RobotsExcluded => -9998,
        OutcomeReason::Blacklisted => -5001,
        OutcomeReason::ForbiddenAddress => -5002,
        OutcomeReason::Sitemap => return None,
    })
}

/// The discovery path of a page at link depth `depth` reached through `hops`
/// redirects: Heritrix writes one letter per hop from the seed (`L` a link, `R` a
/// redirect). polycrawl carries only the depth (every hop, links and redirects)
/// and the redirects at the end of the way, so the path has the right length and
/// its last `hops` letters are `R`; the letters before are written `L` (an earlier
/// redirect is not remembered). A seed (depth 0) and an unknown depth are `-`.
pub fn discovery_path(depth: Option<u32>, hops: u32) -> String {
    match depth {
        None | Some(0) => "-".to_owned(),
        Some(d) => {
            let r = hops.min(d) as usize;
            let mut path = "L".repeat(d as usize - r);
            path.push_str(&"R".repeat(r));
            path
        }
    }
}

/// An annotation of column 12.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Annotation {
    /// `duplicate:digest`: storage kept it as an identical-payload revisit.
    DuplicateDigest,
    /// `duplicate:server-not-modified`: a 304 kept as a server-not-modified revisit.
    NotModified,
    /// `revisit`: a revisit record that was in the page batch.
    Revisit,
    /// `lenTrunc` / `midFetchTrunc` / `truncated:<why>`: the body was cut (`WARC-Truncated`).
    Truncated(String),
    /// `reason:<name>`: the outcome's reason, as in the summary.
    Reason(OutcomeReason),
}

impl Annotation {
    fn write(&self, out: &mut String) {
        match self {
            Self::DuplicateDigest => out.push_str("duplicate:digest"),
            Self::NotModified => out.push_str("duplicate:server-not-modified"),
            Self::Revisit => out.push_str("revisit"),
            Self::Truncated(why) => match why.as_str() {
                "length" => out.push_str("lenTrunc"),
                "disconnect" => out.push_str("midFetchTrunc"),
                other => {
                    out.push_str("truncated:");
                    push_field(out, other);
                }
            },
            Self::Reason(r) => {
                out.push_str("reason:");
                out.push_str(r.as_str());
            }
        }
    }
}

/// One line's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    /// When it is written, Unix milliseconds.
    pub log_ms: u64,
    /// HTTP status, or a negative Heritrix code.
    pub status: i32,
    /// Payload bytes as stored (`None`: `-`).
    pub size: Option<u64>,
    /// The URL.
    pub url: &'a str,
    /// Discovery path (see [`discovery_path`]).
    pub path: &'a str,
    /// The MIME type (`None` or empty: `-`).
    pub mime: Option<&'a str>,
    /// Downloader id.
    pub thread: Option<&'a str>,
    /// Fetch start (Unix milliseconds) and duration (milliseconds).
    pub fetch: Option<(u64, u64)>,
    /// `sha1:BASE32`.
    pub digest: Option<String>,
    /// Column 12.
    pub annotations: Vec<Annotation>,
}

impl Line<'_> {
    /// Appends the line, `\n` included, in Heritrix's layout (status right-aligned
    /// in 5 characters, size in 10). A field never holds white space: white space
    /// in a value is written `%20`, `%09`, ... and an empty value is `-`.
    pub fn write(&self, out: &mut String) {
        out.push_str(&iso_ms(self.log_ms));
        let _ = write!(out, " {:>5} ", self.status);
        match self.size {
            Some(n) => {
                let _ = write!(out, "{n:>10} ");
            }
            None => out.push_str("         - "),
        }
        push_field(out, self.url);
        out.push(' ');
        push_field(out, self.path);
        out.push_str(" - ");
        push_field(out, self.mime.unwrap_or("-"));
        out.push(' ');
        push_field(out, self.thread.unwrap_or("-"));
        out.push(' ');
        match self.fetch {
            Some((start, ms)) => {
                let _ = write!(out, "{}+{ms}", heritrix_ts(start));
            }
            None => out.push('-'),
        }
        out.push(' ');
        push_field(out, self.digest.as_deref().unwrap_or("-"));
        out.push_str(" - ");
        if self.annotations.is_empty() {
            out.push('-');
        }
        for (i, a) in self.annotations.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            a.write(out);
        }
        out.push('\n');
    }
}

/// Writes `value` with its white space and `%` percent-encoded (so a field is one
/// word); `-` when empty.
fn push_field(out: &mut String, value: &str) {
    if value.is_empty() {
        out.push('-');
        return;
    }
    for c in value.chars() {
        if c.is_whitespace() || c == '%' && value.contains(char::is_whitespace) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "%{b:02X}");
            }
        } else {
            out.push(c);
        }
    }
}

/// `2026-11-29T00:45:12.345Z`.
pub fn iso_ms(unix_ms: u64) -> String {
    let date = WarcDate::from_unix(unix_ms / 1000, 0).unwrap_or_else(WarcDate::now);
    let text = date.to_string();
    format!(
        "{}.{:03}Z",
        text.trim_end_matches('Z'),
        (unix_ms % 1000) as u32
    )
}

/// `yyyyMMddHHmmssSSS`: Heritrix's fetch-time stamp.
pub fn heritrix_ts(unix_ms: u64) -> String {
    let date = WarcDate::from_unix(unix_ms / 1000, 0).unwrap_or_else(WarcDate::now);
    format!("{}{:03}", date.to_cdx_timestamp(), unix_ms % 1000)
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What the reports and tests read of a line, borrowed from it (the reports read
/// every line of a crawl's log at its end: no allocation per line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLine<'a> {
    /// Column 2.
    pub status: i32,
    /// Column 3 (`None` for `-`).
    pub size: Option<u64>,
    /// Column 4.
    pub url: &'a str,
    /// Column 7.
    pub mime: &'a str,
    /// Column 12 as written (`-` for none): see [`ParsedLine::annotations`].
    annotations: &'a str,
}

/// A line that is not in the layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a crawl.log line ({why}): {line:?}")]
pub struct BadLine {
    /// What is wrong.
    pub why: &'static str,
    /// The line's start.
    pub line: String,
}

/// Columns of a line.
const COLUMNS: usize = 12;

impl<'a> ParsedLine<'a> {
    /// Parses one line (without its `\n`).
    pub fn parse(line: &'a str) -> Result<Self, BadLine> {
        let bad = |why| BadLine {
            why,
            line: line.chars().take(200).collect(),
        };
        let mut cols = [""; COLUMNS];
        let mut words = line.split_ascii_whitespace();
        for col in &mut cols {
            *col = words.next().ok_or_else(|| bad("not 12 columns"))?;
        }
        if words.next().is_some() {
            return Err(bad("not 12 columns"));
        }
        let status = cols[1].parse().map_err(|_| bad("status"))?;
        let size = match cols[2] {
            "-" => None,
            n => Some(n.parse().map_err(|_| bad("size"))?),
        };
        Ok(Self {
            status,
            size,
            url: cols[3],
            mime: cols[6],
            annotations: cols[11],
        })
    }

    /// Column 12 split at commas (none for `-`).
    pub fn annotations(&self) -> impl Iterator<Item = &'a str> {
        let text = match self.annotations {
            "-" => "",
            a => a,
        };
        text.split(',').filter(|a| !a.is_empty())
    }
}

/// What the progress file keeps of the log: its length after the last step, and
/// the inputs (spool file names) that step logged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogMark {
    /// Bytes of `crawl.log` accounted for.
    pub len: u64,
    /// Inputs whose lines are in those bytes and that may not be removed yet.
    pub inputs: BTreeSet<String>,
}

/// The open log (see the module docs).
#[derive(Debug)]
pub struct CrawlLog {
    path: PathBuf,
    file: File,
    /// Bytes in the file, all accounted for by a saved or pending mark.
    len: u64,
    /// Lines of the step being prepared.
    staged: String,
    /// Inputs of the step being prepared (logged now, or earlier per `skip`).
    staged_inputs: BTreeSet<String>,
    /// Inputs logged before the last restart (from the mark at open).
    skip: BTreeSet<String>,
}

impl CrawlLog {
    /// Opens (or creates) `<dir>/crawl.log` and cuts it back to `mark.len`.
    pub fn open(dir: &Path, mark: &LogMark) -> Result<Self, AppError> {
        let path = dir.join(LOG_FILE);
        let io = |source| AppError::File {
            path: path.clone(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        let actual = file.metadata().map_err(io)?.len();
        let len = if actual > mark.len {
            file.set_len(mark.len).map_err(io)?;
            file.sync_all().map_err(io)?;
            mark.len
        } else {
            if actual < mark.len {
                warn!(
                    path = %path.display(),
                    expected = mark.len,
                    actual,
                    "app: crawl.log is shorter than the progress file says (changed by hand?); appending to it"
                );
            }
            actual
        };
        Ok(Self {
            path,
            file,
            len,
            staged: String::new(),
            staged_inputs: BTreeSet::new(),
            skip: mark.inputs.clone(),
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds input `name`'s lines to the step being prepared; `lines` is called
    /// only if the input was not logged before a restart.
    pub fn stage(&mut self, name: &str, lines: impl FnOnce(&mut String)) {
        if !self.skip.contains(name) {
            lines(&mut self.staged);
        }
        self.staged_inputs.insert(name.to_owned());
    }

    /// Appends and fsyncs the step's lines and sets `mark` to the new length and
    /// the step's inputs; false when nothing was staged (`mark` unchanged). The
    /// caller saves `mark` before it removes those inputs. A failed write is cut
    /// back, so the step can be retried (a full disk).
    pub fn commit(&mut self, mark: &mut LogMark) -> Result<bool, AppError> {
        if self.staged_inputs.is_empty() {
            return Ok(false);
        }
        let io = |source| AppError::File {
            path: self.path.clone(),
            source,
        };
        if !self.staged.is_empty() {
            let written = self
                .file
                .write_all(self.staged.as_bytes())
                .and_then(|()| self.file.sync_data());
            if let Err(e) = written {
                // Best effort: a torn tail is cut at the next open anyway.
                let _ = self.file.set_len(self.len);
                return Err(io(e));
            }
            self.len += self.staged.len() as u64;
            self.staged.clear();
        }
        for name in &self.staged_inputs {
            self.skip.remove(name);
        }
        mark.len = self.len;
        mark.inputs = std::mem::take(&mut self.staged_inputs);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_line() -> String {
        let line = Line {
            log_ms: 1_764_377_112_345,
            status: 200,
            size: Some(1234),
            url: "http://a.test/x",
            path: &discovery_path(Some(3), 1),
            mime: Some("text/html"),
            thread: Some("dl-1"),
            fetch: Some((1_764_377_111_007, 42)),
            digest: Some("sha1:AAAA".into()),
            annotations: vec![Annotation::DuplicateDigest],
        };
        let mut out = String::new();
        line.write(&mut out);
        out
    }

    #[test]
    fn formats_a_page_line_in_heritrix_layout() {
        assert_eq!(
            page_line(),
            "2025-11-29T00:45:12.345Z   200       1234 http://a.test/x LLR - text/html dl-1 \
             20251129004511007+42 sha1:AAAA - duplicate:digest\n"
        );
        let line = page_line();
        let parsed = ParsedLine::parse(line.trim_end()).unwrap();
        assert_eq!(parsed.status, 200);
        assert_eq!(parsed.size, Some(1234));
        assert_eq!(parsed.url, "http://a.test/x");
        assert_eq!(parsed.mime, "text/html");
        assert_eq!(
            parsed.annotations().collect::<Vec<_>>(),
            ["duplicate:digest"]
        );
    }

    #[test]
    fn formats_an_outcome_line() {
        let line = Line {
            log_ms: 0,
            status: outcome_status(OutcomeReason::RobotsExcluded).unwrap(),
            size: None,
            url: "http://a.test/private",
            path: "-",
            mime: None,
            thread: None,
            fetch: None,
            digest: None,
            annotations: vec![Annotation::Reason(OutcomeReason::RobotsExcluded)],
        };
        let mut out = String::new();
        line.write(&mut out);
        assert_eq!(
            out,
            "1970-01-01T00:00:00.000Z -9998          - http://a.test/private - - - - - - - \
             reason:robots_excluded\n"
        );
        let parsed = ParsedLine::parse(out.trim_end()).unwrap();
        assert_eq!((parsed.status, parsed.size), (-9998, None));
    }

    #[test]
    fn white_space_never_splits_a_field() {
        let mut out = String::new();
        push_field(&mut out, "text/html x\t%");
        assert_eq!(out, "text/html%20x%09%25");
        out.clear();
        push_field(&mut out, "a%20b");
        assert_eq!(out, "a%20b", "no white space: written as it is");
        out.clear();
        push_field(&mut out, "");
        assert_eq!(out, "-");
    }

    #[test]
    fn maps_every_outcome_reason() {
        let mut seen = BTreeSet::new();
        for reason in OutcomeReason::ALL {
            match outcome_status(reason) {
                Some(code) => {
                    assert!(code < 0, "{reason}: {code}");
                    assert!(seen.insert(code), "{reason}: code {code} used twice");
                }
                None => assert_eq!(reason, OutcomeReason::Sitemap),
            }
        }
        assert_eq!(outcome_status(OutcomeReason::DnsFailure), Some(-6));
        assert_eq!(outcome_status(OutcomeReason::ConnectFailure), Some(-2));
        assert_eq!(outcome_status(OutcomeReason::Timeout), Some(-4));
        assert_eq!(outcome_status(OutcomeReason::RobotsExcluded), Some(-9998));
    }

    #[test]
    fn discovery_paths() {
        assert_eq!(discovery_path(None, 0), "-");
        assert_eq!(discovery_path(Some(0), 0), "-");
        assert_eq!(discovery_path(Some(2), 0), "LL");
        assert_eq!(discovery_path(Some(2), 2), "RR");
        assert_eq!(
            discovery_path(Some(1), 5),
            "R",
            "hops never exceed the depth"
        );
    }

    #[test]
    fn times() {
        assert_eq!(iso_ms(1_000_001), "1970-01-01T00:16:40.001Z");
        assert_eq!(heritrix_ts(1_000_001), "19700101001640001");
    }

    #[test]
    fn a_restart_cuts_unsaved_lines_and_skips_logged_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let mut mark = LogMark::default();
        let mut log = CrawlLog::open(dir.path(), &mark).unwrap();
        log.stage("a", |out| out.push_str("line a\n"));
        assert!(log.commit(&mut mark).unwrap());
        assert_eq!(mark.len, 7);
        assert_eq!(mark.inputs, BTreeSet::from(["a".to_owned()]));
        // The next step is written but its mark is never saved (a crash).
        let mut unsaved = mark.clone();
        log.stage("b", |out| out.push_str("line b\n"));
        log.commit(&mut unsaved).unwrap();
        drop(log);
        let path = dir.path().join(LOG_FILE);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "line a\nline b\n");

        let mut log = CrawlLog::open(dir.path(), &mark).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "line a\n");
        // "a" was logged (its removal may not have happened): not again; "b" again.
        log.stage("a", |out| out.push_str("line a\n"));
        log.stage("b", |out| out.push_str("line b\n"));
        log.commit(&mut mark).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "line a\nline b\n");
        assert_eq!(
            mark.inputs,
            BTreeSet::from(["a".to_owned(), "b".to_owned()]),
            "a skipped input stays in the mark until its step is saved"
        );
        assert!(!log.commit(&mut mark).unwrap(), "nothing staged");
    }
}
