//! Exchange files, version 1: URLs one application part found that belong to
//! another part (`exchange/<app>/`, part → part, when a crawl is split into K parts).
//!
//! # Format
//!
//! UTF-8 text, lines ending in `\n` (`\r\n` accepted), at most 64 KiB a line.
//!
//! 1. **Header** (line 1): `#polycrawl-exchange v1 from=F to=T parts=K`, words
//!    separated by spaces, all three fields required: the sending part `F`, the
//!    receiving part `T` and the number of parts `K` of the crawl, decimal, with
//!    `F != T`, `F < K` and `T < K`. A receiver checks `T` and `K` against its own
//!    configuration, so a file meant for another split is refused, not crawled.
//! 2. **URL lines**: exactly as in request files (see [`super::requests`]): the URL,
//!    then optional TAB-separated hints `interval_ms`, `depth`, `via` (see
//!    [`Hints`]). The same parser and writer serve both formats.
//! 3. Blank lines and lines starting with `#` after the header are ignored.
//!
//! Exchange files are named `<priority>-<producer>-<seq>.exchange` (see
//! [`crate::name`]).
//!
//! # Example
//!
//! Fields separated by a single TAB (this file is
//! `spool/src/formats/examples/exchange.txt` in the source tree):
//!
#![doc = concat!("```text\n", include_str!("examples/exchange.txt"), "```")]

use std::io::{BufRead, Write};

use super::error::{FormatError, FormatErrorKind as K};
use super::text::{LineReader, parse_header};
use super::urls::{Hints, Request, UrlLines, UrlLinesWriter};

/// First word of an exchange file's header.
pub const EXCHANGE_TAG: &str = "#polycrawl-exchange";

/// The header of an exchange file: who sent it, to whom, in a split of how many parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExchangeHeader {
    /// The sending part, `0..parts`.
    pub from: u32,
    /// The receiving part, `0..parts`, not `from`.
    pub to: u32,
    /// The number of parts the crawl is split into.
    pub parts: u32,
}

impl ExchangeHeader {
    /// Checks `from != to`, `from < parts` and `to < parts`.
    pub fn check(&self) -> Result<(), FormatError> {
        let Self { from, to, parts } = *self;
        if from == to || from >= parts || to >= parts {
            return Err(FormatError::new(1, K::BadParts { from, to, parts }));
        }
        Ok(())
    }

    /// The header line, without its newline.
    pub fn to_line(&self) -> String {
        let Self { from, to, parts } = self;
        format!("{EXCHANGE_TAG} v1 from={from} to={to} parts={parts}")
    }
}

/// Streaming reader of an exchange file: yields one [`Request`] per URL line.
#[derive(Debug)]
pub struct ExchangeReader<R> {
    body: UrlLines<R>,
    header: ExchangeHeader,
}

impl<R: BufRead> ExchangeReader<R> {
    /// Reads and checks the header; the URL lines are read on demand.
    pub fn new(inner: R) -> Result<Self, FormatError> {
        let mut lines = LineReader::new(inner);
        let fields = parse_header(lines.next_line()?, EXCHANGE_TAG, 1)?;
        fields.deny_unknown(&["from", "to", "parts"])?;
        const N: &str = "a decimal part number";
        let header = ExchangeHeader {
            from: fields.number("from", u32::MAX, N)?,
            to: fields.number("to", u32::MAX, N)?,
            parts: fields.number("parts", u32::MAX, "a decimal number of parts")?,
        };
        header.check()?;
        Ok(Self {
            body: UrlLines::new(lines),
            header,
        })
    }

    /// The file's header.
    pub fn header(&self) -> ExchangeHeader {
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

impl<R: BufRead> Iterator for ExchangeReader<R> {
    type Item = Result<Request, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.body.next_owned()
    }
}

/// Writes an exchange file: the header, then one line per [`write`](Self::write).
#[derive(Debug)]
pub struct ExchangeWriter<W: Write> {
    body: UrlLinesWriter<W>,
}

impl<W: Write> ExchangeWriter<W> {
    /// Checks and writes the header line.
    pub fn new(inner: W, header: ExchangeHeader) -> Result<Self, FormatError> {
        header.check()?;
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

    const EXAMPLE: &str = include_str!("examples/exchange.txt");

    #[test]
    fn golden_bytes() {
        let header = ExchangeHeader {
            from: 1,
            to: 0,
            parts: 2,
        };
        let mut w = ExchangeWriter::new(Vec::new(), header).unwrap();
        let hints = Hints {
            depth: Some(5),
            ..Hints::default()
        };
        w.write("http://b.example/", &hints).unwrap();
        w.write("http://c.example/", &Hints::default()).unwrap();
        let bytes = w.finish().unwrap();
        let golden = "#polycrawl-exchange v1 from=1 to=0 parts=2\n\
                      http://b.example/\tdepth=5\n\
                      http://c.example/\n";
        assert_eq!(String::from_utf8(bytes.clone()).unwrap(), golden);

        let r = ExchangeReader::new(&bytes[..]).unwrap();
        assert_eq!(r.header(), header);
        let got: Vec<Request> = r.map(Result::unwrap).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].hints, hints);
    }

    #[test]
    fn documented_example_parses() {
        let mut r = ExchangeReader::new(EXAMPLE.as_bytes()).unwrap();
        assert_eq!(
            r.header(),
            ExchangeHeader {
                from: 0,
                to: 3,
                parts: 4
            }
        );
        let first = r.next().unwrap().unwrap();
        assert_eq!(first.hints.via.as_deref(), Some("http://a.example/links"));
        assert_eq!(r.next().unwrap().unwrap().url, "http://d.example/x");
        assert!(r.next().is_none());
    }

    #[test]
    fn header_is_checked() {
        let kind = |t: &str| ExchangeReader::new(t.as_bytes()).unwrap_err().kind;
        let tag = EXCHANGE_TAG;
        assert!(matches!(
            kind(&format!("{tag} v1 from=1 to=1 parts=4")),
            K::BadParts { .. }
        ));
        assert!(matches!(
            kind(&format!("{tag} v1 from=1 to=4 parts=4")),
            K::BadParts { .. }
        ));
        assert!(matches!(
            kind(&format!("{tag} v1 from=1 to=2")),
            K::MissingHeaderField { key: "parts" }
        ));
        assert!(matches!(
            kind(&format!("{tag} v1 from=x to=2 parts=4")),
            K::BadHeaderValue { key: "from", .. }
        ));
        assert!(matches!(
            kind("#polycrawl-requests v1 priority=1"),
            K::WrongKind { .. }
        ));
        let bad = ExchangeHeader {
            from: 0,
            to: 0,
            parts: 1,
        };
        assert!(ExchangeWriter::new(Vec::new(), bad).is_err());
    }

    #[test]
    fn url_line_errors_match_request_files() {
        let text = format!("{EXCHANGE_TAG} v1 from=0 to=1 parts=2\nhttp://a/\tinterval=5\n");
        let e = ExchangeReader::new(text.as_bytes())
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err();
        assert!(matches!(&e.kind, K::UnknownHint { key } if key == "interval") && e.line == 2);
    }
}
