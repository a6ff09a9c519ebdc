//! Reading a stored HTTP response: the block of a WARC `response` record, which holds
//! the response exactly as received (still chunked, still content-encoded).
//!
//! [`parse_head`] is the one HTTP/1.x response-head parser of the workspace: the
//! downloader parses the heads it reads off the socket with it, and
//! [`StoredResponse::parse`] splits a stored head (status, header fields; lookup by
//! name is case-insensitive) from the raw body with it. [`StoredResponse::payload`] removes the
//! chunked transfer coding (RFC 9112 section 7.1: chunk extensions and trailer fields
//! skipped, bare LF accepted, a cut body kept and marked truncated).
//! [`StoredResponse::entity_body`] then undoes `Content-Encoding` (gzip, x-gzip, and
//! deflate both zlib-wrapped and raw, in reverse order of application, `identity`
//! ignored) and never produces more than the caller's cap: a gzip bomb costs at most
//! the cap in memory. When the payload was cut, an unexpected end of the compressed
//! stream is expected: what was decoded so far is kept and marked truncated.
//!
//! The chunked decoder ([`ChunkedDecoder`]) is the one the downloader feeds from the
//! socket, and the content decoding follows the downloader's `decode.rs`, so the
//! downloader, the application and the manager's robots reading share one copy. This module must never panic on stored bytes or allocate more than the cap
//! plus the payload; work is linear in the input.

use bytes::BufMut;
use std::borrow::Cow;
use std::io::Read;

use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

/// Most header fields read from a stored head.
pub const MAX_FIELDS: usize = 256;

/// Why a stored response cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The head is not a valid HTTP/1.x response head.
    #[error("unparsable response head: {0}")]
    Head(String),
    /// The head never ends (no empty line).
    #[error("incomplete response head")]
    IncompleteHead,
    /// The head has more header fields than allowed.
    #[error("response head with more than {max} header fields")]
    TooManyFields {
        /// The most allowed.
        max: usize,
    },
    /// The chunked framing is broken.
    #[error("bad chunked body: {0}")]
    Chunked(&'static str),
    /// A content coding other than gzip, deflate or identity.
    #[error("unsupported content coding {0:?}")]
    Unsupported(String),
    /// The gzip or deflate stream is corrupt.
    #[error("corrupt {coding} stream: {message}")]
    Corrupt {
        /// `gzip` or `deflate`.
        coding: &'static str,
        /// flate2's description of the problem.
        message: String,
    },
}

/// A content coding this module can undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// `gzip` or `x-gzip`.
    Gzip,
    /// `deflate` (zlib-wrapped or raw).
    Deflate,
}

/// A body with the flag saying it is incomplete (input cut, or the cap reached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body<'a> {
    /// The bytes.
    pub bytes: Cow<'a, [u8]>,
    /// The body is shorter than what the server meant to send.
    pub truncated: bool,
}

/// A parsed stored response: the head, and the raw body it borrows.
#[derive(Debug, Clone)]
pub struct StoredResponse<'a> {
    /// The status code (`200`).
    pub status: u16,
    /// The minor HTTP version (`1` for HTTP/1.1).
    pub version: u8,
    /// Header fields in order: names lower-cased, values as sent.
    pub headers: Vec<(String, &'a [u8])>,
    /// The body as stored: still chunked and content-encoded.
    pub raw_body: &'a [u8],
}

impl<'a> StoredResponse<'a> {
    /// Parses `block` (a WARC response record's block).
    pub fn parse(block: &'a [u8]) -> Result<Self, HttpError> {
        let head = parse_head(block, MAX_FIELDS)?;
        Ok(Self {
            status: head.status,
            version: head.version,
            headers: head.headers,
            raw_body: &block[head.len..],
        })
    }

    /// The first value of header `name` (any case), as text; `None` when absent or
    /// not UTF-8.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
            .map(str::trim)
    }

    /// Every value of header `name` (any case), as text, in order.
    pub fn header_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a str> + 's {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .filter_map(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// `Content-Type`.
    pub fn content_type(&self) -> Option<&'a str> {
        self.header("content-type")
    }

    /// `Location` (unresolved).
    pub fn location(&self) -> Option<&'a str> {
        self.header("location")
    }

    /// A 3xx status.
    pub fn is_redirect(&self) -> bool {
        (300..400).contains(&self.status)
    }

    /// The lower-cased tokens of every comma-separated list in header `name`.
    pub fn tokens(&self, name: &str) -> Vec<String> {
        self.header_all(name)
            .flat_map(|v| v.split(','))
            .map(|t| t.trim().to_ascii_lowercase())
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// Whether the last transfer coding is `chunked`.
    pub fn is_chunked(&self) -> bool {
        self.tokens("transfer-encoding").last().map(String::as_str) == Some("chunked")
    }

    /// The content codings, in order of application (`Content-Encoding`).
    pub fn codings(&self) -> Result<Vec<Coding>, HttpError> {
        codings(&self.tokens("content-encoding"))
    }

    /// The payload: the body with the chunked coding removed (borrowed when there is
    /// none). Truncated when the chunked body ends before its last chunk.
    pub fn payload(&self) -> Result<Body<'a>, HttpError> {
        if !self.is_chunked() {
            return Ok(Body {
                bytes: Cow::Borrowed(self.raw_body),
                truncated: false,
            });
        }
        let mut out = Vec::with_capacity(self.raw_body.len());
        let mut decoder = ChunkedDecoder::default();
        decoder.feed(self.raw_body, &mut out)?;
        Ok(Body {
            bytes: Cow::Owned(out),
            truncated: !decoder.is_done(),
        })
    }

    /// The entity body: the payload with its content codings undone, at most `cap`
    /// bytes.
    pub fn entity_body(&self, cap: usize) -> Result<Body<'a>, HttpError> {
        let payload = self.payload()?;
        decode(payload, &self.codings()?, cap)
    }
}

/// A response head parsed from bytes it borrows: what [`StoredResponse::parse`]
/// reads from a WARC record and what the downloader reads off the socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head<'a> {
    /// The minor HTTP version (`1` for HTTP/1.1).
    pub version: u8,
    /// The status code (`200`).
    pub status: u16,
    /// The reason phrase (may be empty).
    pub reason: &'a str,
    /// Header fields in order: names lower-cased, values as sent.
    pub headers: Vec<(String, &'a [u8])>,
    /// The head's length in bytes, its final empty line included.
    pub len: usize,
}

/// Parses the response head at the start of `bytes`, with at most `max_fields`
/// header fields. Lenient where real servers are sloppy (bare LF, obsolete line
/// folding, spaces before the colon, several spaces in the status line); strict
/// about the rest: a head without an end, a status line without a version or code
/// ([`HttpError::IncompleteHead`]), more fields than allowed
/// ([`HttpError::TooManyFields`]), anything else not HTTP/1.x ([`HttpError::Head`]).
/// One allocation of `max_fields` slots, and the lower-cased names.
pub fn parse_head(bytes: &[u8], max_fields: usize) -> Result<Head<'_>, HttpError> {
    let mut fields = vec![httparse::EMPTY_HEADER; max_fields];
    let mut resp = httparse::Response::new(&mut fields);
    let mut config = httparse::ParserConfig::default();
    config
        .allow_spaces_after_header_name_in_responses(true)
        .allow_obsolete_multiline_headers_in_responses(true)
        .allow_multiple_spaces_in_response_status_delimiters(true);
    let len = match config.parse_response(&mut resp, bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err(HttpError::IncompleteHead),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HttpError::TooManyFields { max: max_fields });
        }
        Err(e) => return Err(HttpError::Head(e.to_string())),
    };
    let (Some(version), Some(status)) = (resp.version, resp.code) else {
        return Err(HttpError::IncompleteHead);
    };
    let headers = resp
        .headers
        .iter()
        .map(|h| (h.name.to_ascii_lowercase(), h.value))
        .collect();
    Ok(Head {
        version,
        status,
        reason: resp.reason.unwrap_or(""),
        headers,
        len,
    })
}

/// The codings named by `Content-Encoding` tokens (lower case), in order of
/// application; `identity` is dropped.
pub fn codings(tokens: &[String]) -> Result<Vec<Coding>, HttpError> {
    tokens
        .iter()
        .filter(|t| t.as_str() != "identity")
        .map(|t| match t.as_str() {
            "gzip" | "x-gzip" => Ok(Coding::Gzip),
            "deflate" => Ok(Coding::Deflate),
            other => Err(HttpError::Unsupported(other.to_owned())),
        })
        .collect()
}

/// Undoes `codings` on `payload` (in reverse order), never producing more than `cap`
/// bytes. A payload marked truncated may end inside a compressed stream.
pub fn decode<'a>(
    payload: Body<'a>,
    codings: &[Coding],
    cap: usize,
) -> Result<Body<'a>, HttpError> {
    let Body {
        mut bytes,
        mut truncated,
    } = payload;
    for &coding in codings.iter().rev() {
        if bytes.is_empty() {
            break;
        }
        let (out, cut) = decode_one(&bytes, coding, cap, truncated)?;
        bytes = Cow::Owned(out);
        truncated |= cut;
    }
    if bytes.len() > cap {
        bytes.to_mut().truncate(cap);
        truncated = true;
    }
    Ok(Body { bytes, truncated })
}

fn decode_one(
    input: &[u8],
    coding: Coding,
    cap: usize,
    input_truncated: bool,
) -> Result<(Vec<u8>, bool), HttpError> {
    if coding == Coding::Gzip
        && !input_truncated
        && let Some(out) = gzip_one_member(input, cap)
    {
        return Ok((out, false));
    }
    let limit = cap as u64 + 1;
    let mut out = Vec::with_capacity(input.len().saturating_mul(4).min(cap));
    let (name, result) = match coding {
        Coding::Gzip => (
            "gzip",
            MultiGzDecoder::new(input).take(limit).read_to_end(&mut out),
        ),
        Coding::Deflate if is_zlib(input) => (
            "deflate",
            ZlibDecoder::new(input).take(limit).read_to_end(&mut out),
        ),
        Coding::Deflate => (
            "deflate",
            DeflateDecoder::new(input).take(limit).read_to_end(&mut out),
        ),
    };
    let mut truncated = match result {
        Ok(_) => false,
        // read_to_end keeps what it read before the error.
        Err(_) if input_truncated => true,
        Err(e) => {
            return Err(HttpError::Corrupt {
                coding: name,
                message: e.to_string(),
            });
        }
    };
    if out.len() > cap {
        out.truncate(cap);
        truncated = true;
    }
    Ok((out, truncated))
}

/// The gzip header's magic bytes and compression method (deflate).
const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];
/// The fixed part of a gzip member's header; its trailer (CRC-32, ISIZE).
const GZIP_HEADER: usize = 10;
const GZIP_TRAILER: usize = 8;

thread_local! {
    /// libdeflate's decompressor, kept between bodies (one per thread).
    static INFLATER: std::cell::RefCell<Option<libdeflater::Decompressor>> =
        const { std::cell::RefCell::new(None) };
}

/// A whole gzip body of exactly one member, inflated in one shot by libdeflate into
/// a buffer of the size its trailer states (issue 39: 10.6 against the streaming
/// decoder's 15.1 us a page on 3,000 pages of the benchmark web, 12.5 KB each, one
/// core; no buffer growth). `None` sends the body to the
/// streaming decoder, which reads every case: a header with optional fields other
/// than a name, a stated size over `cap`, bad data, a size or CRC-32 that does not
/// match, and any body in which the gzip magic occurs after the first header (a
/// second member; libdeflate does not say where the first ended, so a body of
/// several members is never read as its first). O(input + output).
fn gzip_one_member(input: &[u8], cap: usize) -> Option<Vec<u8>> {
    if input.len() < GZIP_HEADER + GZIP_TRAILER || input[..3] != GZIP_MAGIC {
        return None;
    }
    let flags = input[3];
    // FNAME (0x08) only: FTEXT, FHCRC, FEXTRA and FCOMMENT go the streaming way.
    let mut start = GZIP_HEADER;
    if flags & !0x08 != 0 {
        return None;
    }
    if flags & 0x08 != 0 {
        start += memchr::memchr(0, &input[start..])? + 1;
    }
    let end = input.len().checked_sub(GZIP_TRAILER)?;
    if start > end || memchr::memmem::find(&input[start..], &GZIP_MAGIC).is_some() {
        return None;
    }
    let trailer = &input[end..];
    let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]) as usize;
    if size > cap {
        return None;
    }
    let mut out = vec![0u8; size];
    let inflated = INFLATER.with(|cell| {
        let mut slot = cell.borrow_mut();
        slot.get_or_insert_with(libdeflater::Decompressor::new)
            .deflate_decompress(&input[start..end], &mut out)
    });
    match inflated {
        Ok(n) if n == size && libdeflater::crc32(&out) == crc => Some(out),
        _ => None,
    }
}

/// A zlib header: compression method 8 and a header checksum divisible by 31.
fn is_zlib(input: &[u8]) -> bool {
    match input {
        [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
        _ => false,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading hex digits of a chunk size.
    Size { value: u64, digits: u8 },
    /// Skipping a chunk extension up to the end of the line.
    Ext { value: u64 },
    /// Saw CR after the size line; expecting LF.
    SizeLf { value: u64 },
    /// Copying chunk data.
    Data { left: u64 },
    /// Expecting the CR (or bare LF) after chunk data.
    DataCr,
    /// Expecting the LF after chunk data.
    DataLf,
    /// In the trailer section; `line` counts bytes of the current field line.
    Trailer { line: u64 },
    /// The terminating empty line has been read.
    Done,
}

/// An incremental decoder for the chunked transfer coding.
#[derive(Debug)]
pub struct ChunkedDecoder {
    state: State,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self {
            state: State::Size {
                value: 0,
                digits: 0,
            },
        }
    }
}

impl ChunkedDecoder {
    /// Whether the whole body, trailers included, has been consumed.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes bytes of `input`, appending chunk data to `out`. Returns how many
    /// bytes were consumed: all of them unless the body ended inside `input`.
    /// `out` is any growable buffer (`Vec<u8>` here, `BytesMut` in the downloader,
    /// which feeds the body as it arrives from the socket).
    pub fn feed(&mut self, input: &[u8], out: &mut impl BufMut) -> Result<usize, HttpError> {
        let bad = HttpError::Chunked;
        let mut i = 0;
        while i < input.len() {
            if let State::Data { left } = self.state {
                let n = usize::try_from(left)
                    .unwrap_or(usize::MAX)
                    .min(input.len() - i);
                out.put_slice(&input[i..i + n]);
                i += n;
                let left = left - n as u64;
                self.state = if left == 0 {
                    State::DataCr
                } else {
                    State::Data { left }
                };
                continue;
            }
            let b = input[i];
            i += 1;
            self.state = match self.state {
                State::Size { value, digits } => match b {
                    b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                        if digits >= 16 {
                            return Err(bad("chunk size too large"));
                        }
                        let d = (b as char).to_digit(16).unwrap_or(0);
                        State::Size {
                            value: value << 4 | u64::from(d),
                            digits: digits + 1,
                        }
                    }
                    _ if digits == 0 => return Err(bad("chunk size missing")),
                    b';' | b' ' | b'\t' => State::Ext { value },
                    b'\r' => State::SizeLf { value },
                    b'\n' => after_size(value),
                    _ => return Err(bad("bad byte in chunk size")),
                },
                State::Ext { value } => match b {
                    b'\n' => after_size(value),
                    _ => State::Ext { value },
                },
                State::SizeLf { value } => match b {
                    b'\n' => after_size(value),
                    _ => return Err(bad("CR without LF after chunk size")),
                },
                State::DataCr => match b {
                    b'\r' => State::DataLf,
                    b'\n' => start(),
                    _ => return Err(bad("chunk data longer than its size")),
                },
                State::DataLf => match b {
                    b'\n' => start(),
                    _ => return Err(bad("CR without LF after chunk data")),
                },
                State::Trailer { line } => match b {
                    b'\n' if line == 0 => {
                        self.state = State::Done;
                        return Ok(i);
                    }
                    b'\n' => State::Trailer { line: 0 },
                    b'\r' => State::Trailer { line },
                    _ => State::Trailer { line: line + 1 },
                },
                State::Data { .. } | State::Done => return Ok(i - 1),
            };
        }
        Ok(i)
    }
}

fn start() -> State {
    State::Size {
        value: 0,
        digits: 0,
    }
}

fn after_size(value: u64) -> State {
    if value == 0 {
        State::Trailer { line: 0 }
    } else {
        State::Data { left: value }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::GzBuilder;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};

    use super::*;

    const HTML: &[u8] = b"<html><body><a href=/x>hello hello hello</a></body></html>";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn chunked(data: &[u8], piece: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, c) in data.chunks(piece).enumerate() {
            out.extend(format!("{:x};ext{i}=v\r\n", c.len()).as_bytes());
            out.extend(c);
            out.extend(b"\r\n");
        }
        out.extend(b"0\r\nX-Trailer: t\r\n\r\n");
        out
    }

    fn response(head: &str, body: &[u8]) -> Vec<u8> {
        let mut r = head.replace('\n', "\r\n").into_bytes();
        r.extend(b"\r\n");
        r.extend(body);
        r
    }

    #[test]
    fn plain_response_and_case_insensitive_headers() {
        let block = response(
            "HTTP/1.1 200 OK\nCONTENT-type: text/html; charset=utf-8\nX-A: 1\n",
            HTML,
        );
        let r = StoredResponse::parse(&block).unwrap();
        assert_eq!((r.status, r.version), (200, 1));
        assert_eq!(r.content_type(), Some("text/html; charset=utf-8"));
        assert_eq!(r.header("x-a"), Some("1"));
        assert_eq!(r.location(), None);
        assert!(!r.is_chunked() && !r.is_redirect());
        let body = r.entity_body(1 << 20).unwrap();
        assert!(matches!(body.bytes, Cow::Borrowed(_)));
        assert_eq!((&body.bytes[..], body.truncated), (HTML, false));
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        for piece in [1, 5, 64] {
            let block = response(
                "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n",
                &chunked(HTML, piece),
            );
            let r = StoredResponse::parse(&block).unwrap();
            let payload = r.payload().unwrap();
            assert_eq!((&payload.bytes[..], payload.truncated), (HTML, false));
        }
        // Bare LF, cut body: kept, marked truncated.
        let block = response(
            "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n",
            b"3\nabc\n5\nde",
        );
        let p = StoredResponse::parse(&block).unwrap().payload().unwrap();
        assert_eq!((&p.bytes[..], p.truncated), (&b"abcde"[..], true));
    }

    #[test]
    fn gzip_zlib_raw_deflate_and_layers() {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(HTML).unwrap();
        let mut d = DeflateEncoder::new(Vec::new(), Compression::default());
        d.write_all(HTML).unwrap();
        let cases = [
            ("gzip", gzip(HTML)),
            ("x-gzip", gzip(HTML)),
            ("deflate", z.finish().unwrap()),
            ("deflate", d.finish().unwrap()),
            ("gzip, identity, gzip", gzip(&gzip(HTML))),
        ];
        for (coding, body) in cases {
            let block = response(
                &format!("HTTP/1.1 200 OK\nContent-Encoding: {coding}\n"),
                &body,
            );
            let got = StoredResponse::parse(&block)
                .unwrap()
                .entity_body(1 << 20)
                .unwrap();
            assert_eq!((&got.bytes[..], got.truncated), (HTML, false), "{coding}");
        }
    }

    #[test]
    fn chunked_and_gzip() {
        let block = response(
            "HTTP/1.1 200 OK\nContent-Encoding: gzip\nTransfer-Encoding: chunked\n",
            &chunked(&gzip(HTML), 7),
        );
        let got = StoredResponse::parse(&block)
            .unwrap()
            .entity_body(1 << 20)
            .unwrap();
        assert_eq!((&got.bytes[..], got.truncated), (HTML, false));
        // Cut in the middle of the gzip stream: what was decoded is kept.
        let big: Vec<u8> = (0..20_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut full = chunked(&gzip(&big), 1000);
        full.truncate(full.len() / 2);
        let block = response(
            "HTTP/1.1 200 OK\nContent-Encoding: gzip\nTransfer-Encoding: chunked\n",
            &full,
        );
        let got = StoredResponse::parse(&block)
            .unwrap()
            .entity_body(1 << 20)
            .unwrap();
        assert!(got.truncated && !got.bytes.is_empty() && big.starts_with(&got.bytes));
    }

    #[test]
    fn one_shot_gzip_reads_as_the_streaming_decoder() {
        let page: Vec<u8> = (0..3000u32)
            .flat_map(|i| format!("<p>word {} of the page</p>", i % 97).into_bytes())
            .collect();
        let one = gzip(&page);
        // One member: the one-shot path, equal to the streaming decoder's output.
        assert_eq!(gzip_one_member(&one, 1 << 20).as_deref(), Some(&page[..]));
        let mut named = GzBuilder::new()
            .filename("p.html")
            .write(Vec::new(), Compression::fast());
        named.write_all(&page).unwrap();
        let named = named.finish().unwrap();
        assert_eq!(gzip_one_member(&named, 1 << 20).as_deref(), Some(&page[..]));
        // Two members, even of the same text: never read as the first alone.
        let mut two = one.clone();
        two.extend_from_slice(&one);
        assert_eq!(gzip_one_member(&two, 1 << 20), None);
        let (got, cut) = decode_one(&two, Coding::Gzip, 1 << 20, false).unwrap();
        assert_eq!((got.len(), cut), (2 * page.len(), false));
        assert!(got.starts_with(&page) && got.ends_with(&page));
        // A stated size over the cap: the streaming decoder cuts at the cap.
        assert_eq!(gzip_one_member(&one, 100), None);
        let (got, cut) = decode_one(&one, Coding::Gzip, 100, false).unwrap();
        assert_eq!((&got[..], cut), (&page[..100], true));
        // A wrong CRC-32 or size: not taken, and the streaming decoder says why.
        for at in [one.len() - 8, one.len() - 1] {
            let mut bad = one.clone();
            bad[at] ^= 1;
            assert_eq!(gzip_one_member(&bad, 1 << 20), None, "byte {at}");
            assert!(matches!(
                decode_one(&bad, Coding::Gzip, 1 << 20, false),
                Err(HttpError::Corrupt { coding: "gzip", .. })
            ));
        }
        // An extra field goes the streaming way, and reads the same.
        let mut extra = GzBuilder::new()
            .extra(vec![1, 2, 3])
            .write(Vec::new(), Compression::fast());
        extra.write_all(&page).unwrap();
        let extra = extra.finish().unwrap();
        assert_eq!(gzip_one_member(&extra, 1 << 20), None);
        assert_eq!(
            decode_one(&extra, Coding::Gzip, 1 << 20, false).unwrap(),
            (page, false)
        );
    }

    #[test]
    fn bomb_stops_at_cap() {
        let bomb = gzip(&vec![0u8; 8 << 20]);
        assert!(bomb.len() < 20_000);
        let block = response("HTTP/1.1 200 OK\nContent-Encoding: gzip\n", &bomb);
        let got = StoredResponse::parse(&block)
            .unwrap()
            .entity_body(4096)
            .unwrap();
        assert_eq!((got.bytes.len(), got.truncated), (4096, true));
    }

    #[test]
    fn garbage_is_a_typed_error() {
        assert!(matches!(
            StoredResponse::parse(b"\x00\x01garbage\r\n\r\n"),
            Err(HttpError::Head(_))
        ));
        assert_eq!(
            StoredResponse::parse(b"HTTP/1.1 200 OK\r\nA: b\r\n").err(),
            Some(HttpError::IncompleteHead)
        );
        let block = response("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n", b"zz\r\n");
        let r = StoredResponse::parse(&block).unwrap();
        assert!(matches!(r.payload(), Err(HttpError::Chunked(_))));
        let block = response("HTTP/1.1 200 OK\nContent-Encoding: gzip\n", b"not gzip");
        let r = StoredResponse::parse(&block).unwrap();
        assert!(matches!(
            r.entity_body(100),
            Err(HttpError::Corrupt { coding: "gzip", .. })
        ));
        let block = response("HTTP/1.1 200 OK\nContent-Encoding: br\n", b"x");
        let r = StoredResponse::parse(&block).unwrap();
        assert_eq!(
            r.entity_body(100).err(),
            Some(HttpError::Unsupported("br".into()))
        );
    }

    #[test]
    fn one_head_parser_lenient_where_servers_are_sloppy() {
        let text = b"HTTP/1.1  404  Not Found\nX-A : 1\nX-Folded: a\r\n b\n\nbody";
        let head = parse_head(text, 8).unwrap();
        assert_eq!(
            (head.version, head.status, head.reason),
            (1, 404, "Not Found")
        );
        assert_eq!(head.headers[0], ("x-a".to_owned(), &b"1"[..]));
        assert_eq!(head.headers[1].0, "x-folded");
        assert_eq!(&text[head.len..], b"body");
        let many: String = (0..10).map(|i| format!("X-{i}: v\r\n")).collect();
        let text = format!("HTTP/1.1 200 OK\r\n{many}\r\n");
        assert_eq!(
            parse_head(text.as_bytes(), 8),
            Err(HttpError::TooManyFields { max: 8 })
        );
        assert!(parse_head(text.as_bytes(), 10).is_ok());
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\n", 8),
            Err(HttpError::IncompleteHead)
        );
        assert!(matches!(
            parse_head(b"SSH-2.0-OpenSSH\r\n\r\n", 8),
            Err(HttpError::Head(_))
        ));
    }

    #[test]
    fn redirect_location() {
        let block = response(
            "HTTP/1.1 301 Moved\nLocation: /next\nContent-Length: 0\n",
            b"",
        );
        let r = StoredResponse::parse(&block).unwrap();
        assert!(r.is_redirect());
        assert_eq!(r.location(), Some("/next"));
    }

    // The incremental decoder fed in pieces, as the downloader feeds it from the
    // socket.
    const CHUNKED_BODY: &[u8] = b"5;name=value\r\nhello\r\n7\r\n, world\r\nA ; x\r\n0123456789\r\n0\r\nX-Trailer: t\r\nY: u\r\n\r\nEXTRA";

    fn decode_in_pieces(input: &[u8], piece: usize) -> (Vec<u8>, usize, bool) {
        let mut d = ChunkedDecoder::default();
        let mut out = bytes::BytesMut::new();
        let mut used = 0;
        for part in input.chunks(piece) {
            let n = d.feed(part, &mut out).unwrap();
            used += n;
            if n < part.len() {
                break;
            }
        }
        (out.to_vec(), used, d.is_done())
    }

    #[test]
    fn decodes_with_extensions_and_trailers_at_any_split() {
        for piece in [1, 2, 3, 7, 64, CHUNKED_BODY.len()] {
            let (out, used, done) = decode_in_pieces(CHUNKED_BODY, piece);
            assert_eq!(out, b"hello, world0123456789", "piece {piece}");
            assert!(done);
            assert_eq!(used, CHUNKED_BODY.len() - "EXTRA".len(), "piece {piece}");
        }
    }

    #[test]
    fn bare_lf_and_no_trailers() {
        let (out, used, done) = decode_in_pieces(b"3\nabc\n0\n\n", 4);
        assert_eq!((out.as_slice(), used, done), (&b"abc"[..], 9, true));
    }

    #[test]
    fn incomplete_is_not_done() {
        let (out, _, done) = decode_in_pieces(b"5\r\nhel", 100);
        assert_eq!((out.as_slice(), done), (&b"hel"[..], false));
        let (_, _, done) = decode_in_pieces(b"0\r\nX: y\r\n", 100);
        assert!(!done);
    }

    #[test]
    fn chunked_decoder_rejects_garbage() {
        for bad in [
            &b"zz\r\n"[..],
            b"\r\n",
            b"3\r\nabcd\r\n",
            b"3\rx",
            b"11111111111111111\r\n",
        ] {
            let mut d = ChunkedDecoder::default();
            assert!(
                d.feed(bad, &mut bytes::BytesMut::new()).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
