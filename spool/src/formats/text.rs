//! Line machinery shared by the text formats: a bounded, numbered line reader, the
//! `#polycrawl-<kind> v1 key=value...` header, and the URL field check.

use std::io::{self, BufRead, Read, Write};

use super::MAX_LINE_BYTES;
use super::error::{FormatError, FormatErrorKind as K};

/// Reads a text spool file line by line into one reused buffer, counting lines.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: R,
    /// The last line read, with its line ending; valid UTF-8.
    buf: String,
    /// End of the last line's text, before its `\n` or `\r\n`.
    end: usize,
    line: u64,
}

impl<R: BufRead> LineReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self {
            inner,
            buf: String::with_capacity(256),
            end: 0,
            line: 0,
        }
    }

    /// Number of the line last returned (0 before the first).
    pub(crate) fn line(&self) -> u64 {
        self.line
    }

    pub(crate) fn error(&self, kind: K) -> FormatError {
        FormatError::new(self.line, kind)
    }

    /// The next line without its `\n` or `\r\n`, or `None` at the end of the file.
    pub(crate) fn next_line(&mut self) -> Result<Option<&str>, FormatError> {
        let mut bytes = std::mem::take(&mut self.buf).into_bytes();
        bytes.clear();
        self.end = 0;
        self.line += 1;
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n = (&mut self.inner)
            .take(limit)
            .read_until(b'\n', &mut bytes)
            .map_err(|e| self.error(K::Io(e)))?;
        if n == 0 {
            self.line -= 1;
            return Ok(None);
        }
        if n > MAX_LINE_BYTES {
            return Err(self.error(K::LineTooLong {
                max: MAX_LINE_BYTES,
            }));
        }
        let mut end = bytes.len();
        if bytes.ends_with(b"\n") {
            end -= 1;
            if bytes[..end].ends_with(b"\r") {
                end -= 1;
            }
        }
        self.buf = String::from_utf8(bytes).map_err(|_| self.error(K::NotUtf8))?;
        self.end = end;
        Ok(Some(&self.buf[..end]))
    }

    /// The next line that is neither blank (empty or whitespace only) nor a comment
    /// (starting with `#`), with its line number.
    pub(crate) fn next_content_line(&mut self) -> Result<Option<(u64, &str)>, FormatError> {
        loop {
            match self.next_line()? {
                None => return Ok(None),
                Some(l) if l.trim_ascii().is_empty() || l.starts_with('#') => continue,
                Some(_) => return Ok(Some((self.line, &self.buf[..self.end]))),
            }
        }
    }
}

/// The `key=value` fields of a header line, after its tag and version.
#[derive(Debug)]
pub(crate) struct HeaderFields<'a> {
    fields: Vec<(&'a str, &'a str)>,
    line: u64,
}

/// Parses a header line `<tag> v1[ key=value]...` (fields separated by spaces).
pub(crate) fn parse_header<'a>(
    text: Option<&'a str>,
    tag: &'static str,
    line: u64,
) -> Result<HeaderFields<'a>, FormatError> {
    let err = |kind| FormatError::new(line.max(1), kind);
    let text = text.ok_or_else(|| err(K::MissingHeader { expected: tag }))?;
    let mut words = text.split_ascii_whitespace();
    let first = words.next().unwrap_or_default();
    if first != tag {
        return Err(err(if first.starts_with("#polycrawl-") {
            K::WrongKind {
                expected: tag,
                found: first.chars().take(64).collect(),
            }
        } else {
            K::MissingHeader { expected: tag }
        }));
    }
    match words.next() {
        Some("v1") => {}
        found => {
            return Err(err(K::UnsupportedVersion {
                found: found.unwrap_or_default().chars().take(64).collect(),
            }));
        }
    }
    let mut fields: Vec<(&str, &str)> = Vec::new();
    for word in words {
        let (key, value) = word.split_once('=').ok_or_else(|| {
            err(K::MalformedHeaderField {
                field: word.to_owned(),
            })
        })?;
        if fields.iter().any(|(k, _)| *k == key) {
            return Err(err(K::DuplicateHeaderField {
                key: key.to_owned(),
            }));
        }
        fields.push((key, value));
    }
    Ok(HeaderFields { fields, line })
}

impl<'a> HeaderFields<'a> {
    /// Fails on any key not in `known`.
    pub(crate) fn deny_unknown(&self, known: &[&str]) -> Result<(), FormatError> {
        match self.fields.iter().find(|(k, _)| !known.contains(k)) {
            Some((k, _)) => Err(FormatError::new(
                self.line,
                K::UnknownHeaderField {
                    key: (*k).to_owned(),
                },
            )),
            None => Ok(()),
        }
    }

    /// The value of a required key, parsed as a decimal number no larger than `max`.
    pub(crate) fn number(
        &self,
        key: &'static str,
        max: u32,
        expected: &'static str,
    ) -> Result<u32, FormatError> {
        let value = self
            .fields
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .ok_or_else(|| FormatError::new(self.line, K::MissingHeaderField { key }))?;
        parse_decimal(value)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n <= max)
            .ok_or_else(|| {
                FormatError::new(
                    self.line,
                    K::BadHeaderValue {
                        key,
                        value: value.to_owned(),
                        expected,
                    },
                )
            })
    }
}

/// Parses 1 to 20 ASCII digits (no sign, no spaces) as a `u64`.
pub(crate) fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Checks a URL field: non-empty, no whitespace, no control character.
pub(crate) fn check_url(url: &str) -> Result<(), K> {
    if url.is_empty() {
        return Err(K::EmptyUrl);
    }
    match url
        .char_indices()
        .find(|(_, c)| c.is_whitespace() || c.is_control())
    {
        Some((byte, ch)) => Err(K::UrlChar { ch, byte }),
        None => Ok(()),
    }
}

/// Tracks the line number of a text writer and maps I/O errors.
#[derive(Debug)]
pub(crate) struct LineWriter<W> {
    pub(crate) inner: W,
    pub(crate) line: u64,
}

impl<W: Write> LineWriter<W> {
    pub(crate) fn new(inner: W) -> Self {
        Self { inner, line: 0 }
    }

    /// Error for the line about to be written.
    pub(crate) fn error(&self, kind: K) -> FormatError {
        FormatError::new(self.line + 1, kind)
    }

    /// Writes one complete line (the caller's `buf` must end with `\n`).
    pub(crate) fn write_line(&mut self, buf: &[u8]) -> Result<(), FormatError> {
        debug_assert!(buf.ends_with(b"\n"));
        self.inner
            .write_all(buf)
            .map_err(|e| FormatError::new(self.line + 1, K::Io(e)))?;
        self.line += 1;
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> Result<(), FormatError> {
        self.inner
            .flush()
            .map_err(|e: io::Error| FormatError::new(self.line, K::Io(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_bounded_and_crlf_tolerant() {
        let text = "a\r\nb\n\n  \n# note\nc";
        let mut r = LineReader::new(text.as_bytes());
        assert_eq!(r.next_content_line().unwrap(), Some((1, "a")));
        assert_eq!(r.next_content_line().unwrap(), Some((2, "b")));
        assert_eq!(r.next_content_line().unwrap(), Some((6, "c")));
        assert_eq!(r.next_content_line().unwrap(), None);

        let long = "x".repeat(MAX_LINE_BYTES + 5);
        let mut r = LineReader::new(long.as_bytes());
        let e = r.next_line().unwrap_err();
        assert!(
            matches!(e.kind, K::LineTooLong { .. }) && e.line == 1,
            "{e}"
        );

        let mut r = LineReader::new(&b"ok\n\xff\n"[..]);
        r.next_line().unwrap();
        let e = r.next_line().unwrap_err();
        assert!(matches!(e.kind, K::NotUtf8) && e.line == 2, "{e}");
    }

    #[test]
    fn header_errors_are_specific() {
        let tag = "#polycrawl-requests";
        let kind = |t: Option<&str>| parse_header(t, tag, 1).unwrap_err().kind;
        assert!(matches!(kind(None), K::MissingHeader { .. }));
        assert!(matches!(kind(Some("http://x/")), K::MissingHeader { .. }));
        assert!(matches!(
            kind(Some("#polycrawl-outcomes v1")),
            K::WrongKind { .. }
        ));
        assert!(matches!(
            kind(Some("#polycrawl-requests v2")),
            K::UnsupportedVersion { .. }
        ));
        assert!(matches!(
            kind(Some("#polycrawl-requests v1 a")),
            K::MalformedHeaderField { .. }
        ));
        assert!(
            matches!(kind(Some("#polycrawl-requests v1 a=1 a=2")), K::DuplicateHeaderField { key } if key == "a")
        );
    }

    #[test]
    fn url_check_names_the_character() {
        assert!(check_url("http://a.example/x?y=1#z").is_ok());
        assert!(check_url("http://bücher.example/").is_ok());
        assert!(matches!(check_url(""), Err(K::EmptyUrl)));
        assert!(matches!(
            check_url("http://a/ b"),
            Err(K::UrlChar { ch: ' ', byte: 9 })
        ));
        assert!(matches!(
            check_url("http://a/\u{7}"),
            Err(K::UrlChar { ch: '\u{7}', .. })
        ));
    }
}
