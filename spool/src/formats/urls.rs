//! URL lines, shared by request files and exchange files: a URL, then optional
//! tab-separated `key=value` hints. One parser and one writer serve both formats.
//!
//! Known hints (each at most once per line, in any order; the writer emits them in
//! this order):
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `interval_ms` | decimal `u64` | politeness interval for the URL's host, in milliseconds; the manager clamps it to its configured floor and applies it to the whole host |
//! | `depth` | decimal `u32` | link depth: 0 for a seed, parent depth + 1 for a discovered link |
//! | `via` | a URL (same rules as the URL field) | the page on which this URL was found, for crawl logs and debugging |
//! | `hops` | decimal `u32` | redirects followed to reach this URL: 0 (or no hint) for a link, the redirecting URL's hops + 1 for a `Location`; carried to the stored page so a chain can be cut |
//! | `etag` | an entity tag, visible ASCII without spaces, at most 256 bytes ([`crate::validators::valid_etag`]) | an earlier response's `ETag`: the downloader sends it as `If-None-Match` (a recrawl) |
//! | `modified` | decimal `u64`, seconds since the Unix epoch | an earlier response's `Last-Modified`: the downloader sends it as `If-Modified-Since` |
//! | `links` | decimal `u64` | links to this URL its sender found: an importance-ordered split crawl's exchange files carry it to the URL's owner; the manager ignores it |
//!
//! Any other key is an error naming the line and the key, so a typo never silently
//! changes what gets crawled.

use std::io::{BufRead, Write};

use super::error::{FormatError, FormatErrorKind as K};
use super::text::{LineReader, LineWriter, check_url, parse_decimal};
use crate::validators::{Validators, valid_etag};

/// Per-URL hints carried by request and exchange lines; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Hints {
    /// Per-host politeness interval override, in milliseconds (`interval_ms=`).
    pub interval_ms: Option<u64>,
    /// Link depth from the seeds; 0 is a seed (`depth=`).
    pub depth: Option<u32>,
    /// The URL of the page that linked here (`via=`).
    pub via: Option<String>,
    /// Redirects followed to reach this URL (`hops=`); no hint means 0.
    pub hops: Option<u32>,
    /// An earlier response's validators (`etag=`, `modified=`), for a conditional
    /// request; empty for an ordinary one.
    pub validators: Validators,
    /// Links to this URL its sender found (`links=`): exchange files of an
    /// importance-ordered split crawl, so that the owner ranks it by every
    /// part's links. The manager ignores it.
    pub links: Option<u64>,
}

impl Hints {
    /// True when no hint is set.
    pub fn is_empty(&self) -> bool {
        self.interval_ms.is_none()
            && self.depth.is_none()
            && self.via.is_none()
            && self.hops.is_none()
            && self.validators.is_empty()
            && self.links.is_none()
    }
}

/// One URL to fetch, with its hints: a line of a request or exchange file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Request {
    /// The URL, exactly as written (not canonicalized here).
    pub url: String,
    /// Optional per-URL hints.
    pub hints: Hints,
}

impl Request {
    /// A request for `url` with no hints.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            hints: Hints::default(),
        }
    }
}

/// Parses the text of one URL line into `into`, reusing its allocations.
pub(crate) fn parse_url_line(text: &str, into: &mut Request) -> Result<(), K> {
    let mut fields = text.split('\t');
    let url = fields.next().unwrap_or_default();
    check_url(url)?;
    into.url.clear();
    into.url.push_str(url);
    let mut via = into.hints.via.take();
    into.hints = Hints::default();
    for field in fields {
        if field.is_empty() {
            return Err(K::EmptyField);
        }
        let Some((key, value)) = field.split_once('=') else {
            return Err(K::MalformedHint {
                field: field.to_owned(),
            });
        };
        let h = &mut into.hints;
        match key {
            "interval_ms" => {
                dup(h.interval_ms.is_some(), "interval_ms")?;
                let n = parse_decimal(value).ok_or_else(|| bad("interval_ms", value, U64))?;
                h.interval_ms = Some(n);
            }
            "depth" => {
                dup(h.depth.is_some(), "depth")?;
                let n = parse_decimal(value)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad("depth", value, U32))?;
                h.depth = Some(n);
            }
            "hops" => {
                dup(h.hops.is_some(), "hops")?;
                let n = parse_decimal(value)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad("hops", value, U32))?;
                h.hops = Some(n);
            }
            "etag" => {
                dup(h.validators.etag.is_some(), "etag")?;
                if !valid_etag(value) {
                    return Err(bad("etag", value, ETAG));
                }
                h.validators.etag = Some(value.to_owned());
            }
            "links" => {
                dup(h.links.is_some(), "links")?;
                let n = parse_decimal(value).ok_or_else(|| bad("links", value, U64))?;
                h.links = Some(n);
            }
            "modified" => {
                dup(h.validators.modified.is_some(), "modified")?;
                let n = parse_decimal(value).ok_or_else(|| bad("modified", value, U64))?;
                h.validators.modified = Some(n);
            }
            "via" => {
                dup(h.via.is_some(), "via")?;
                check_url(value).map_err(|_| bad("via", value, URL))?;
                let mut s = via.take().unwrap_or_default();
                s.clear();
                s.push_str(value);
                h.via = Some(s);
            }
            _ => {
                return Err(K::UnknownHint {
                    key: key.to_owned(),
                });
            }
        }
    }
    Ok(())
}

const U64: &str = "a decimal number (0 to 18446744073709551615)";
const U32: &str = "a decimal number (0 to 4294967295)";
const URL: &str = "a URL without whitespace or control characters";
const ETAG: &str = "an entity tag: 1 to 256 visible ASCII characters, no spaces";

fn dup(seen: bool, key: &'static str) -> Result<(), K> {
    if seen {
        Err(K::DuplicateHint { key })
    } else {
        Ok(())
    }
}

fn bad(key: &'static str, value: &str, expected: &'static str) -> K {
    K::BadHintValue {
        key,
        value: value.chars().take(256).collect(),
        expected,
    }
}

/// Appends one URL line (with its `\n`) to `out`, validating URL and hints first.
pub(crate) fn encode_url_line(url: &str, hints: &Hints, out: &mut Vec<u8>) -> Result<(), K> {
    check_url(url)?;
    if let Some(via) = &hints.via {
        check_url(via).map_err(|_| bad("via", via, URL))?;
    }
    if let Some(etag) = &hints.validators.etag {
        if !valid_etag(etag) {
            return Err(bad("etag", etag, ETAG));
        }
    }
    out.extend_from_slice(url.as_bytes());
    // Writing to a Vec cannot fail.
    if let Some(n) = hints.interval_ms {
        let _ = write!(out, "\tinterval_ms={n}");
    }
    if let Some(n) = hints.depth {
        let _ = write!(out, "\tdepth={n}");
    }
    if let Some(via) = &hints.via {
        out.extend_from_slice(b"\tvia=");
        out.extend_from_slice(via.as_bytes());
    }
    if let Some(n) = hints.hops {
        let _ = write!(out, "\thops={n}");
    }
    if let Some(etag) = &hints.validators.etag {
        out.extend_from_slice(b"\tetag=");
        out.extend_from_slice(etag.as_bytes());
    }
    if let Some(n) = hints.validators.modified {
        let _ = write!(out, "\tmodified={n}");
    }
    if let Some(n) = hints.links {
        let _ = write!(out, "\tlinks={n}");
    }
    out.push(b'\n');
    Ok(())
}

/// The body of a request or exchange file: URL lines after the header.
#[derive(Debug)]
pub(crate) struct UrlLines<R> {
    pub(crate) lines: LineReader<R>,
    failed: bool,
}

impl<R: BufRead> UrlLines<R> {
    pub(crate) fn new(lines: LineReader<R>) -> Self {
        Self {
            lines,
            failed: false,
        }
    }

    /// Reads the next request into `into`; `Ok(false)` at the end of the file.
    /// After an error every later call returns `Ok(false)`.
    pub(crate) fn read_into(&mut self, into: &mut Request) -> Result<bool, FormatError> {
        if self.failed {
            return Ok(false);
        }
        let result = match self.lines.next_content_line() {
            Ok(None) => return Ok(false),
            Ok(Some((line, text))) => {
                parse_url_line(text, into).map_err(|kind| FormatError::new(line, kind))
            }
            Err(e) => Err(e),
        };
        self.failed = result.is_err();
        result.map(|()| true)
    }

    pub(crate) fn next_owned(&mut self) -> Option<Result<Request, FormatError>> {
        let mut r = Request::default();
        match self.read_into(&mut r) {
            Ok(true) => Some(Ok(r)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

/// Writes URL lines after a header, reusing one line buffer.
#[derive(Debug)]
pub(crate) struct UrlLinesWriter<W> {
    pub(crate) out: LineWriter<W>,
    buf: Vec<u8>,
}

impl<W: Write> UrlLinesWriter<W> {
    /// Writes `header` (one line, without `\n`) and returns the writer.
    pub(crate) fn new(inner: W, header: &str) -> Result<Self, FormatError> {
        let mut out = LineWriter::new(inner);
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(header.as_bytes());
        buf.push(b'\n');
        out.write_line(&buf)?;
        Ok(Self { out, buf })
    }

    pub(crate) fn write(&mut self, url: &str, hints: &Hints) -> Result<(), FormatError> {
        self.buf.clear();
        encode_url_line(url, hints, &mut self.buf).map_err(|k| self.out.error(k))?;
        self.out.write_line(&self.buf)
    }

    /// URL lines written so far.
    pub(crate) fn count(&self) -> u64 {
        self.out.line.saturating_sub(1)
    }

    pub(crate) fn finish(mut self) -> Result<W, FormatError> {
        self.out.flush()?;
        Ok(self.out.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Request, K> {
        let mut r = Request::default();
        parse_url_line(text, &mut r).map(|()| r)
    }

    #[test]
    fn hints_parse_in_any_order() {
        let r = parse("http://a.example/\tvia=http://b.example/p?q=1\tdepth=3\tinterval_ms=500")
            .unwrap();
        assert_eq!(r.url, "http://a.example/");
        assert_eq!(r.hints.interval_ms, Some(500));
        assert_eq!(r.hints.depth, Some(3));
        assert_eq!(r.hints.via.as_deref(), Some("http://b.example/p?q=1"));
        assert_eq!(r.hints.hops, None, "no hint: 0 hops");
        let r = parse("http://a.example/\thops=2\tdepth=1").unwrap();
        assert_eq!((r.hints.hops, r.hints.depth), (Some(2), Some(1)));
        assert!(parse("http://a.example/").unwrap().hints.is_empty());
    }

    #[test]
    fn bad_hints_are_named() {
        let k = |t| parse(t).unwrap_err();
        assert!(matches!(k("http://a/\tcolour=red"), K::UnknownHint { key } if key == "colour"));
        assert!(matches!(
            k("http://a/\tdepth=1\tdepth=2"),
            K::DuplicateHint { key: "depth" }
        ));
        assert!(matches!(
            k("http://a/\tdepth=-1"),
            K::BadHintValue { key: "depth", .. }
        ));
        assert!(matches!(
            k("http://a/\tdepth=4294967296"),
            K::BadHintValue { .. }
        ));
        assert!(matches!(
            k("http://a/\tinterval_ms="),
            K::BadHintValue { .. }
        ));
        assert!(matches!(
            k("http://a/\tvia="),
            K::BadHintValue { key: "via", .. }
        ));
        assert!(matches!(k("http://a/\tdepth"), K::MalformedHint { .. }));
        assert!(matches!(
            k("http://a/\thops=1\thops=1"),
            K::DuplicateHint { key: "hops" }
        ));
        assert!(matches!(
            k("http://a/\thops=x"),
            K::BadHintValue { key: "hops", .. }
        ));
        assert!(matches!(
            k("http://a/\tetag=\"x\"\tetag=\"y\""),
            K::DuplicateHint { key: "etag" }
        ));
        assert!(matches!(
            k("http://a/\tetag="),
            K::BadHintValue { key: "etag", .. }
        ));
        assert!(matches!(
            k("http://a/\tmodified=soon"),
            K::BadHintValue {
                key: "modified",
                ..
            }
        ));
        assert!(matches!(k("http://a/\t"), K::EmptyField));
        assert!(matches!(k("http://a/\t\tdepth=1"), K::EmptyField));
        assert!(matches!(k("\tdepth=1"), K::EmptyUrl));
        assert!(matches!(k("http://a/ depth=1"), K::UrlChar { ch: ' ', .. }));
    }

    #[test]
    fn encode_then_parse_round_trips() {
        let hints = Hints {
            interval_ms: Some(u64::MAX),
            depth: Some(0),
            via: Some("https://x.example/a=b".into()),
            hops: Some(3),
            validators: Validators {
                etag: Some("W/\"e=1\"".into()),
                modified: Some(1_767_225_600),
            },
            links: Some(7),
        };
        let mut out = Vec::new();
        encode_url_line("https://y.example/", &hints, &mut out).unwrap();
        assert_eq!(
            out,
            b"https://y.example/\tinterval_ms=18446744073709551615\tdepth=0\tvia=https://x.example/a=b\thops=3\tetag=W/\"e=1\"\tmodified=1767225600\tlinks=7\n"
        );
        let text = std::str::from_utf8(&out).unwrap().trim_end();
        assert_eq!(parse(text).unwrap().hints, hints);
        let bad_via = Hints {
            via: Some("a b".into()),
            ..Hints::default()
        };
        assert!(encode_url_line("http://a/", &bad_via, &mut out).is_err());
        assert!(matches!(
            encode_url_line("", &Hints::default(), &mut out),
            Err(K::EmptyUrl)
        ));
    }
}
