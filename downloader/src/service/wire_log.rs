//! The wire log (`downloader.wire_log`): one TSV line per request this downloader
//! sent or tried, with its wire stamps, so the politeness of a crawl can be judged
//! on the crawler's own clock (the system tests do) and audited afterwards.
//!
//! Columns (tab-separated; the file may be shared by several downloaders, each
//! line names its writer):
//!
//! | # | column |
//! |---|---|
//! | 1 | `sent_us`: unix µs (`CLOCK_REALTIME`), before the request's first byte was written; 0 if none was |
//! | 2 | `written_us`: after its last byte was handed to the kernel; 0 if it was not |
//! | 3 | `received_us`: after the response's last byte was read; for a failure, when the downloader gave up |
//! | 4 | downloader id |
//! | 5 | job number |
//! | 6 | `page` or `robots` |
//! | 7 | address connected to (`IP:port`) |
//! | 8 | the URL as requested on the wire |
//! | 9 | the status, or the failure's outcome reason |
//!
//! Every line goes to the file in one `write` on a file opened for appending, so
//! lines of concurrent writers never mix. The write blocks the calling task for the
//! time a small write to the page cache takes (microseconds); it is never
//! flushed to disk (the log is for audits, not durability). O(1) memory.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::Path;

use crate::fetched::WireTimes;

/// An open wire log.
#[derive(Debug)]
pub(crate) struct WireLog {
    file: File,
    id: String,
}

/// One line's facts besides the stamps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'a> {
    pub job: u64,
    pub purpose: &'a str,
    pub addr: SocketAddr,
    pub url: &'a str,
    pub result: &'a str,
}

impl WireLog {
    /// Opens (creates, appends to) the log at `path` for downloader `id`.
    pub fn open(path: &Path, id: &str) -> io::Result<WireLog> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(WireLog {
            file,
            id: id.to_owned(),
        })
    }

    /// Appends one line; a failed write is logged, never fatal.
    pub fn write(&self, t: &WireTimes, l: &Line<'_>) {
        let text = format_line(t, &self.id, l);
        if let Err(e) = (&self.file).write_all(text.as_bytes()) {
            tracing::warn!(error = %e, "downloader: writing the wire log failed");
        }
    }
}

fn format_line(t: &WireTimes, id: &str, l: &Line<'_>) -> String {
    let mut s = String::with_capacity(128 + l.url.len());
    let _ = writeln!(
        s,
        "{}\t{}\t{}\t{id}\t{}\t{}\t{}\t{}\t{}",
        t.sent_us,
        t.written_us,
        t.received_us,
        l.job,
        l.purpose,
        l.addr,
        l.url.replace(['\t', '\n', '\r'], " "),
        l.result
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_from_two_writers_append_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wire.tsv");
        let a = WireLog::open(&path, "dl-1").unwrap();
        let b = WireLog::open(&path, "dl-2").unwrap();
        let t = WireTimes {
            sent_us: 10,
            written_us: 11,
            received_us: 20,
        };
        let line = Line {
            job: 7,
            purpose: "page",
            addr: "127.1.0.1:80".parse().unwrap(),
            url: "http://a.test/x",
            result: "200",
        };
        a.write(&t, &line);
        b.write(
            &WireTimes::default(),
            &Line {
                result: "timeout",
                ..line
            },
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "10\t11\t20\tdl-1\t7\tpage\t127.1.0.1:80\thttp://a.test/x\t200\n\
             0\t0\t0\tdl-2\t7\tpage\t127.1.0.1:80\thttp://a.test/x\ttimeout\n"
        );
    }
}
