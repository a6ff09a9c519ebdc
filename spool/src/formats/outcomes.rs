//! Outcome files, version 1: requested URLs that ended without a page, and why
//! (`outcomes/<app>/`, manager → application).
//!
//! # Format
//!
//! UTF-8 text, lines ending in `\n` (`\r\n` accepted), at most 64 KiB a line.
//!
//! 1. **Header** (line 1): `#polycrawl-outcomes v1`. It has no fields; any
//!    `key=value` after the version is an error.
//! 2. **Outcome lines**: `URL<TAB>reason<TAB>detail`.
//!    - `URL` is the URL as it was requested (same rules as in request files).
//!    - `reason` is one of the stable names of [`OutcomeReason`]:
//!      `robots_excluded`, `blacklisted`, `dns_failure`, `connect_failure`, `timeout`,
//!      `too_many_failures`, `invalid_url`, `bad_response`, `forbidden_address`,
//!      and `sitemap`, which is no end of a requested URL: a sitemap a host's
//!      robots.txt names, with the detail `depth=N` (see
//!      [`OutcomeReason::Sitemap`]).
//!    - `detail` is free text for people (an error message, say), possibly empty.
//!      It is escaped so that it never holds a TAB or a line break: `\\` for a
//!      backslash, `\t`, `\n`, `\r`, and `\xNN` (two hex digits) for any other ASCII
//!      control character. The reader undoes the escapes and rejects any other
//!      backslash sequence or a raw control character. The writer always writes
//!      the third field (ending the line with a TAB when the detail is empty); the
//!      reader also accepts a line of just `URL<TAB>reason`.
//! 3. Blank lines and lines starting with `#` after the header are ignored.
//!
//! Outcome files are named `<priority>-<producer>-<seq>.outcomes` (see
//! [`crate::name`]).
//!
//! Every field can be cut with standard tools: `cut -f2 *.outcomes | sort | uniq -c`
//! counts outcomes by reason.
//!
//! # Example
//!
//! Fields separated by a single TAB (this file is
//! `spool/src/formats/examples/outcomes.txt` in the source tree); the last detail
//! holds an escaped CR LF:
//!
#![doc = concat!("```text\n", include_str!("examples/outcomes.txt"), "```")]

use std::io::{BufRead, Write};

use super::error::{FormatError, FormatErrorKind as K};
use super::text::{LineReader, LineWriter, check_url, parse_header};
use crate::OutcomeReason;

/// First word of an outcome file's header.
pub const OUTCOMES_TAG: &str = "#polycrawl-outcomes";

/// One line of an outcome file: a URL that produced no page.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// The URL as requested.
    pub url: String,
    /// Why it produced no page.
    pub reason: OutcomeReason,
    /// Free text for people (unescaped); may be empty.
    pub detail: String,
}

/// Streaming reader of an outcome file: yields one [`Outcome`] per line.
#[derive(Debug)]
pub struct OutcomeReader<R> {
    lines: LineReader<R>,
    failed: bool,
}

impl<R: BufRead> OutcomeReader<R> {
    /// Reads and checks the header.
    pub fn new(inner: R) -> Result<Self, FormatError> {
        let mut lines = LineReader::new(inner);
        parse_header(lines.next_line()?, OUTCOMES_TAG, 1)?.deny_unknown(&[])?;
        Ok(Self {
            lines,
            failed: false,
        })
    }

    /// Number of the last line read (1 after the header).
    pub fn line(&self) -> u64 {
        self.lines.line()
    }
}

impl<R: BufRead> Iterator for OutcomeReader<R> {
    type Item = Result<Outcome, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let result = match self.lines.next_content_line() {
            Ok(None) => return None,
            Ok(Some((line, text))) => parse_line(text).map_err(|k| FormatError::new(line, k)),
            Err(e) => Err(e),
        };
        self.failed = result.is_err();
        Some(result)
    }
}

fn parse_line(text: &str) -> Result<Outcome, K> {
    let mut fields = text.split('\t');
    let url = fields.next().unwrap_or_default();
    check_url(url)?;
    let reason = match fields.next() {
        None | Some("") => return Err(K::MissingReason),
        Some(r) => r
            .parse::<OutcomeReason>()
            .map_err(|e| K::UnknownReason(e.0.chars().take(64).collect()))?,
    };
    let detail = unescape(fields.next().unwrap_or_default())?;
    if fields.next().is_some() {
        return Err(K::TooManyFields { max: 3 });
    }
    Ok(Outcome {
        url: url.to_owned(),
        reason,
        detail,
    })
}

/// Writes an outcome file: the header, then one line per [`write`](Self::write).
#[derive(Debug)]
pub struct OutcomeWriter<W: Write> {
    out: LineWriter<W>,
    buf: Vec<u8>,
}

impl<W: Write> OutcomeWriter<W> {
    /// Writes the header line.
    pub fn new(inner: W) -> Result<Self, FormatError> {
        let mut out = LineWriter::new(inner);
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(OUTCOMES_TAG.as_bytes());
        buf.extend_from_slice(b" v1\n");
        out.write_line(&buf)?;
        Ok(Self { out, buf })
    }

    /// Writes one outcome line; `detail` may hold any text (it is escaped).
    pub fn write(
        &mut self,
        url: &str,
        reason: OutcomeReason,
        detail: &str,
    ) -> Result<(), FormatError> {
        check_url(url).map_err(|k| self.out.error(k))?;
        self.buf.clear();
        self.buf.extend_from_slice(url.as_bytes());
        self.buf.push(b'\t');
        self.buf.extend_from_slice(reason.as_str().as_bytes());
        self.buf.push(b'\t');
        escape_into(detail, &mut self.buf);
        self.buf.push(b'\n');
        self.out.write_line(&self.buf)
    }

    /// Outcome lines written so far.
    pub fn count(&self) -> u64 {
        self.out.line.saturating_sub(1)
    }

    /// Flushes and returns the inner writer (the caller then fsyncs and publishes).
    pub fn finish(mut self) -> Result<W, FormatError> {
        self.out.flush()?;
        Ok(self.out.inner)
    }
}

/// Appends `detail` to `out` with `\`, TAB, CR, LF and other ASCII controls escaped.
fn escape_into(detail: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in detail.as_bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => {
                out.extend_from_slice(&[
                    b'\\',
                    b'x',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 15)],
                ]);
            }
            _ => out.push(b),
        }
    }
}

/// Undoes [`escape_into`]; rejects raw controls and unknown escapes.
fn unescape(field: &str) -> Result<String, K> {
    if let Some(ch) = field.chars().find(|c| c.is_ascii_control()) {
        return Err(K::ControlInDetail { ch });
    }
    if !field.contains('\\') {
        return Ok(field.to_owned());
    }
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let byte = field.len() - rest.len() + i;
        let esc = &rest[i + 1..];
        let (ch, used) = match esc.as_bytes().first() {
            Some(b'\\') => ('\\', 1),
            Some(b't') => ('\t', 1),
            Some(b'n') => ('\n', 1),
            Some(b'r') => ('\r', 1),
            Some(b'x') => {
                let code = esc
                    .get(1..3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .filter(|c| c.is_ascii_control())
                    .ok_or(K::BadEscape { byte })?;
                (char::from(code), 3)
            }
            _ => return Err(K::BadEscape { byte }),
        };
        out.push(ch);
        rest = &esc[used..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("examples/outcomes.txt");

    #[test]
    fn golden_bytes() {
        let mut w = OutcomeWriter::new(Vec::new()).unwrap();
        w.write("http://a.example/", OutcomeReason::RobotsExcluded, "")
            .unwrap();
        w.write(
            "http://b.example/x",
            OutcomeReason::BadResponse,
            "bad\tline\r\n\\ \u{1}é",
        )
        .unwrap();
        assert_eq!(w.count(), 2);
        let bytes = w.finish().unwrap();
        let golden = "#polycrawl-outcomes v1\n\
                      http://a.example/\trobots_excluded\t\n\
                      http://b.example/x\tbad_response\tbad\\tline\\r\\n\\\\ \\x01é\n";
        assert_eq!(String::from_utf8(bytes.clone()).unwrap(), golden);

        let got: Vec<Outcome> = OutcomeReader::new(&bytes[..])
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].reason, OutcomeReason::RobotsExcluded);
        assert_eq!(got[0].detail, "");
        assert_eq!(got[1].url, "http://b.example/x");
        assert_eq!(got[1].detail, "bad\tline\r\n\\ \u{1}é");
    }

    #[test]
    fn every_reason_and_control_round_trips() {
        let detail: String = (0u8..=0x7f).map(char::from).chain("∂ü".chars()).collect();
        let mut w = OutcomeWriter::new(Vec::new()).unwrap();
        for r in OutcomeReason::ALL {
            w.write("http://x/", r, &detail).unwrap();
        }
        let bytes = w.finish().unwrap();
        let got: Vec<Outcome> = OutcomeReader::new(&bytes[..])
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got.len(), OutcomeReason::ALL.len());
        for (o, r) in got.iter().zip(OutcomeReason::ALL) {
            assert_eq!((o.reason, o.detail.as_str()), (r, detail.as_str()));
        }
    }

    #[test]
    fn documented_example_parses() {
        let got: Vec<Outcome> = OutcomeReader::new(EXAMPLE.as_bytes())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got[1].reason, OutcomeReason::DnsFailure);
        assert_eq!(got[1].detail, "NXDOMAIN");
        assert_eq!(got[3].detail, "invalid status line \"HTTP/1.1 2OO\r\n\"");
    }

    #[test]
    fn bad_lines_are_rejected_with_their_line() {
        type Check = fn(&K) -> bool;
        let cases: &[(&str, Check)] = &[
            ("http://a/", |k| matches!(k, K::MissingReason)),
            ("http://a/\t\tx", |k| matches!(k, K::MissingReason)),
            (
                "http://a/\tgone\tx",
                |k| matches!(k, K::UnknownReason(r) if r == "gone"),
            ),
            ("http://a/\ttimeout\tx\ty", |k| {
                matches!(k, K::TooManyFields { max: 3 })
            }),
            ("http://a/\ttimeout\tx\\qy", |k| {
                matches!(k, K::BadEscape { byte: 1 })
            }),
            ("http://a/\ttimeout\tx\\x4", |k| {
                matches!(k, K::BadEscape { .. })
            }),
            ("http://a/\ttimeout\t\\x41", |k| {
                matches!(k, K::BadEscape { .. })
            }),
            ("http://a/\ttimeout\ta\u{1}", |k| {
                matches!(k, K::ControlInDetail { ch: '\u{1}' })
            }),
            ("\ttimeout\t", |k| matches!(k, K::EmptyUrl)),
        ];
        for (line, check) in cases {
            let text = format!("#polycrawl-outcomes v1\n\nhttp://ok/\ttimeout\n{line}\n");
            let mut r = OutcomeReader::new(text.as_bytes()).unwrap();
            assert_eq!(r.next().unwrap().unwrap().detail, "");
            let e = r.next().unwrap().unwrap_err();
            assert!(check(&e.kind) && e.line == 4, "{line:?}: {e}");
            assert!(r.next().is_none());
        }
        let e = OutcomeReader::new("#polycrawl-outcomes v1 x=1\n".as_bytes()).unwrap_err();
        assert!(matches!(e.kind, K::UnknownHeaderField { .. }));
        let mut w = OutcomeWriter::new(Vec::new()).unwrap();
        assert!(w.write("a b", OutcomeReason::Timeout, "").is_err());
    }
}
