//! Request files, version 1: the URLs an application asks the crawling system to
//! fetch (`requests/<app>/`, application → manager).
//!
//! # Format
//!
//! UTF-8 text, one record per line, lines ending in `\n` (a `\r\n` is accepted too; the
//! last line may lack its newline). No line may exceed 64 KiB.
//!
//! 1. **Header** (line 1, exactly): `#polycrawl-requests v1 priority=NN`, words
//!    separated by spaces. `priority` is required: a decimal 0 to 99 (a
//!    [`Priority`]; the writer pads it to two digits), 0 served first, the same
//!    number as the priority in the file's name. Any other header key is an error.
//! 2. **URL lines**: the URL, then optionally a TAB and `key=value` hints, each
//!    after its own TAB. URLs are taken as written (the manager canonicalizes); they
//!    must be non-empty and hold no whitespace or control characters. The hints are
//!    `interval_ms`, `depth`, `via`, `hops`, `etag` and `modified`, described in
//!    [`Hints`]; an unknown
//!    key is an error naming the line and the key. A missing `hops` means 0 (files
//!    written before the hint existed read the same). The manager carries `depth`
//!    and `hops` to the fetch job, and the downloader writes them on the stored
//!    response record (`Polycrawl-Depth`, `Polycrawl-Hops`), so the application
//!    knows both for every page without remembering the URLs it asked for.
//!    `etag` and `modified` (an earlier response's validators, for a recrawl) go
//!    with the URL to the fetch job, and the downloader sends them as
//!    `If-None-Match` and `If-Modified-Since`.
//! 3. **Blank lines** (empty or whitespace only) and **comment lines** (starting with
//!    `#`) after the header are ignored.
//!
//! A file with one bad line is rejected whole (and quarantined by its consumer); the
//! error names the line. The reader is streaming: it holds one line at a time, so
//! the manager can load a file of millions of URLs lazily. It stops at the first
//! error, after yielding the lines before it; a consumer that must not act on half a
//! bad file runs the reader over the file once to validate before loading.
//!
//! # Example
//!
//! Fields are separated by a single TAB character, not spaces (this file is
//! `spool/src/formats/examples/requests.txt` in the source tree):
//!
#![doc = concat!("```text\n", include_str!("examples/requests.txt"), "```")]
//!
//! By hand, from a list of seeds, one per line:
//!
//! ```sh
//! { echo '#polycrawl-requests v1 priority=10'; sed 's/$/\tdepth=0/' seeds.txt; } > batch
//! ```
//!
//! then publish it into `requests/<app>/` as `<priority>-<producer>-<seq>.requests`
//! (see [`crate::name`]) with a temporary file and a rename (see [`crate::publish`]),
//! never by writing in place.

use std::io::{BufRead, Write};

use super::error::{FormatError, FormatErrorKind as K};
use super::text::{LineReader, parse_header};
use super::urls::{Hints, Request, UrlLines, UrlLinesWriter};
use crate::name::Priority;

/// First word of a request file's header.
pub const REQUESTS_TAG: &str = "#polycrawl-requests";

/// The header of a request file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestHeader {
    /// `00` (served first) to `99`; the same as in the file's name.
    pub priority: Priority,
}

impl RequestHeader {
    /// The header line, without its newline.
    pub fn to_line(&self) -> String {
        format!("{REQUESTS_TAG} v1 priority={}", self.priority)
    }
}

/// Streaming reader of a request file: yields one [`Request`] per URL line.
#[derive(Debug)]
pub struct RequestReader<R> {
    body: UrlLines<R>,
    header: RequestHeader,
}

impl<R: BufRead> RequestReader<R> {
    /// Reads and checks the header; the URL lines are read on demand.
    pub fn new(inner: R) -> Result<Self, FormatError> {
        let mut lines = LineReader::new(inner);
        let fields = parse_header(lines.next_line()?, REQUESTS_TAG, 1)?;
        fields.deny_unknown(&["priority"])?;
        const EXPECTED: &str = "a number from 0 to 99";
        let n = fields.number("priority", 99, EXPECTED)?;
        let priority = u8::try_from(n)
            .ok()
            .and_then(|n| Priority::new(n).ok())
            .ok_or_else(|| {
                FormatError::new(
                    1,
                    K::BadHeaderValue {
                        key: "priority",
                        value: n.to_string(),
                        expected: EXPECTED,
                    },
                )
            })?;
        Ok(Self {
            body: UrlLines::new(lines),
            header: RequestHeader { priority },
        })
    }

    /// The file's header.
    pub fn header(&self) -> RequestHeader {
        self.header
    }

    /// Reads the next request into `into`, reusing its buffers; `Ok(false)` at the end.
    /// After an error, every later call returns `Ok(false)`.
    pub fn read_into(&mut self, into: &mut Request) -> Result<bool, FormatError> {
        self.body.read_into(into)
    }

    /// Number of the last line read (1 after the header).
    pub fn line(&self) -> u64 {
        self.body.lines.line()
    }
}

impl<R: BufRead> Iterator for RequestReader<R> {
    type Item = Result<Request, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.body.next_owned()
    }
}

/// Writes a request file: the header, then one line per [`write`](Self::write).
///
/// Every URL and hint is checked before it is written, so the writer never produces
/// a file the reader rejects.
#[derive(Debug)]
pub struct RequestWriter<W: Write> {
    body: UrlLinesWriter<W>,
}

impl<W: Write> RequestWriter<W> {
    /// Writes the header line.
    pub fn new(inner: W, header: RequestHeader) -> Result<Self, FormatError> {
        Ok(Self {
            body: UrlLinesWriter::new(inner, &header.to_line())?,
        })
    }

    /// Writes one URL line.
    pub fn write(&mut self, url: &str, hints: &Hints) -> Result<(), FormatError> {
        self.body.write(url, hints)
    }

    /// URL lines written so far.
    pub fn count(&self) -> u64 {
        self.body.count()
    }

    /// Flushes and returns the inner writer (the caller then fsyncs and publishes).
    pub fn finish(self) -> Result<W, FormatError> {
        self.body.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("examples/requests.txt");

    fn prio(n: u8) -> Priority {
        Priority::new(n).unwrap()
    }

    #[test]
    fn golden_bytes() {
        let mut w = RequestWriter::new(Vec::new(), RequestHeader { priority: prio(7) }).unwrap();
        w.write("https://www.example.com/", &Hints::default())
            .unwrap();
        let hints = Hints {
            interval_ms: Some(60000),
            depth: Some(2),
            via: Some("http://example.net/".into()),
            hops: None,
            validators: Default::default(),
            links: None,
        };
        w.write("http://example.net/a?b=c", &hints).unwrap();
        assert_eq!(w.count(), 2);
        let bytes = w.finish().unwrap();
        let golden = "#polycrawl-requests v1 priority=07\n\
                      https://www.example.com/\n\
                      http://example.net/a?b=c\tinterval_ms=60000\tdepth=2\tvia=http://example.net/\n";
        assert_eq!(String::from_utf8(bytes.clone()).unwrap(), golden);

        let r = RequestReader::new(&bytes[..]).unwrap();
        assert_eq!(r.header(), RequestHeader { priority: prio(7) });
        let got: Vec<Request> = r.map(Result::unwrap).collect();
        assert_eq!(got[0], Request::new("https://www.example.com/"));
        assert_eq!(got[1].url, "http://example.net/a?b=c");
        assert_eq!(got[1].hints, hints);
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn documented_example_parses() {
        let mut r = RequestReader::new(EXAMPLE.as_bytes()).unwrap();
        assert_eq!(r.header().priority.get(), 10);
        let mut req = Request::default();
        let mut got = Vec::new();
        while r.read_into(&mut req).unwrap() {
            got.push((r.line(), req.clone()));
        }
        let lines: Vec<u64> = got.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [3, 4, 6, 7]);
        assert_eq!(got[1].1.hints.interval_ms, Some(60000));
        assert_eq!(got[2].1.hints.via.as_deref(), Some("http://example.net/"));
        assert_eq!(got[2].1.hints.hops, None);
        assert_eq!(got[3].1.hints.hops, Some(1));
    }

    #[test]
    fn errors_name_the_line() {
        let text =
            "#polycrawl-requests v1 priority=1\nhttp://a/\n\nhttp://b/\tdpeth=1\nhttp://c/\n";
        let mut r = RequestReader::new(text.as_bytes()).unwrap();
        assert_eq!(r.next().unwrap().unwrap().url, "http://a/");
        let e = r.next().unwrap().unwrap_err();
        assert_eq!(e.line, 4);
        assert!(matches!(&e.kind, K::UnknownHint { key } if key == "dpeth"));
        assert_eq!(
            e.to_string(),
            "line 4: unknown hint \"dpeth\" (known: interval_ms, depth, via)"
        );
        assert!(r.next().is_none(), "the reader stops after an error");
    }

    #[test]
    fn header_is_checked() {
        let kind = |t: &str| RequestReader::new(t.as_bytes()).unwrap_err().kind;
        assert!(matches!(kind(""), K::MissingHeader { .. }));
        assert!(matches!(kind("http://a/\n"), K::MissingHeader { .. }));
        assert!(matches!(
            kind("#polycrawl-requests v1\n"),
            K::MissingHeaderField { key: "priority" }
        ));
        assert!(matches!(
            kind("#polycrawl-requests v1 priority=100\n"),
            K::BadHeaderValue { .. }
        ));
        assert!(matches!(
            kind("#polycrawl-requests v1 priority=+1\n"),
            K::BadHeaderValue { .. }
        ));
        assert!(matches!(
            kind("#polycrawl-requests v1 priority=1 app=x\n"),
            K::UnknownHeaderField { .. }
        ));
        assert!(matches!(
            kind("#polycrawl-requests v9 priority=1\n"),
            K::UnsupportedVersion { .. }
        ));
        let r = RequestReader::new("#polycrawl-requests v1 priority=5\r\n".as_bytes()).unwrap();
        assert_eq!(r.header().priority.get(), 5);
    }

    #[test]
    fn writer_rejects_what_the_reader_would() {
        let mut w = RequestWriter::new(Vec::new(), RequestHeader { priority: prio(0) }).unwrap();
        let e = w.write("http://a/ b", &Hints::default()).unwrap_err();
        assert_eq!(e.line, 2);
        w.write("http://a/b", &Hints::default()).unwrap();
        assert_eq!(
            w.finish().unwrap(),
            b"#polycrawl-requests v1 priority=00\nhttp://a/b\n"
        );
    }
}
