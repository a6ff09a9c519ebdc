//! [`http_body`]: the entity body of an HTTP/1.x response exactly as a downloader
//! archived it (status line, headers, then the body as received), which is what a
//! robots file's `response` record holds.
//!
//! The head is parsed with httparse; the body is de-chunked (`Transfer-Encoding:
//! chunked`) or cut at `Content-Length`, then decoded (`Content-Encoding: gzip`,
//! `x-gzip`, `deflate` in zlib or raw form, `identity`). The result is capped at the
//! caller's limit: robots.txt parsing reads at most 500 KiB anyway, so a longer body
//! is cut, not an error, and so is a chunked body that ends early (the downloader
//! truncates long responses). Anything else unreadable is an error, which the caller
//! treats as "robots.txt unreachable".
//!
//! This module must never allocate more than `max` bytes of output, whatever the
//! compression ratio. Cost: O(input + output).

use std::io::Read;

use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

/// Most header fields accepted in one response head.
const MAX_HEADERS: usize = 128;

/// Why a response body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The status line or a header field is malformed.
    #[error("malformed HTTP response head: {0}")]
    Head(#[from] httparse::Error),
    /// The record ends before the end of the response head.
    #[error("HTTP response head is incomplete")]
    IncompleteHead,
    /// The chunked transfer coding is broken (not just cut short).
    #[error("malformed chunked body: {0}")]
    Chunked(&'static str),
    /// A content coding other than gzip, deflate and identity.
    #[error("unsupported Content-Encoding {0:?}")]
    UnsupportedCoding(String),
    /// The compressed body does not decode.
    #[error("cannot decode {coding} body: {source}")]
    Decode {
        /// The content coding.
        coding: &'static str,
        /// The decoder's error.
        source: std::io::Error,
    },
}

/// The decoded entity body of `raw` (an HTTP/1.x response head and body), at most
/// `max` bytes.
pub fn http_body(raw: &[u8], max: usize) -> Result<Vec<u8>, BodyError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(raw)? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return Err(BodyError::IncompleteHead),
    };
    let mut chunked = false;
    let mut length: Option<usize> = None;
    let mut coding = String::new();
    for h in response.headers.iter() {
        let value = String::from_utf8_lossy(h.value).trim().to_ascii_lowercase();
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.rsplit(',').next().map(str::trim) == Some("chunked");
        } else if h.name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok();
        } else if h.name.eq_ignore_ascii_case("content-encoding") && !value.is_empty() {
            coding = value;
        }
    }
    let rest = raw.get(head_len..).unwrap_or_default();
    let payload = if chunked {
        dechunk(rest)?
    } else {
        let n = length.unwrap_or(rest.len()).min(rest.len());
        rest[..n].to_vec()
    };
    decode(&payload, &coding, max)
}

/// Removes the chunked transfer coding; a body cut short yields what arrived.
fn dechunk(mut input: &[u8]) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::with_capacity(input.len());
    loop {
        let Some(eol) = input.iter().position(|b| *b == b'\n') else {
            return Ok(out); // Cut inside a size line.
        };
        let line = &input[..eol];
        let digits = line
            .iter()
            .take_while(|b| b.is_ascii_hexdigit())
            .copied()
            .collect::<Vec<u8>>();
        if digits.is_empty() || digits.len() > 15 {
            return Err(BodyError::Chunked("bad chunk size line"));
        }
        let text = std::str::from_utf8(&digits).map_err(|_| BodyError::Chunked("bad size"))?;
        let size = usize::from_str_radix(text, 16).map_err(|_| BodyError::Chunked("bad size"))?;
        input = &input[eol + 1..];
        if size == 0 {
            return Ok(out); // Trailers ignored.
        }
        let take = size.min(input.len());
        out.extend_from_slice(&input[..take]);
        if take < size {
            return Ok(out); // Cut inside a chunk.
        }
        input = &input[size..];
        input = input
            .strip_prefix(b"\r\n")
            .or_else(|| input.strip_prefix(b"\n"))
            .unwrap_or(input);
    }
}

/// Applies the content coding, reading at most `max` bytes of output.
fn decode(payload: &[u8], coding: &str, max: usize) -> Result<Vec<u8>, BodyError> {
    let limit = u64::try_from(max).unwrap_or(u64::MAX);
    let mut out = Vec::new();
    let result = match coding {
        "" | "identity" => {
            out.extend_from_slice(&payload[..payload.len().min(max)]);
            return Ok(out);
        }
        "gzip" | "x-gzip" => (
            "gzip",
            MultiGzDecoder::new(payload)
                .take(limit)
                .read_to_end(&mut out),
        ),
        "deflate" => {
            let zlib = ZlibDecoder::new(payload).take(limit).read_to_end(&mut out);
            if zlib.is_err() {
                // Some servers send raw deflate, without the zlib wrapper.
                out.clear();
                (
                    "deflate",
                    DeflateDecoder::new(payload)
                        .take(limit)
                        .read_to_end(&mut out),
                )
            } else {
                ("deflate", zlib)
            }
        }
        other => return Err(BodyError::UnsupportedCoding(other.to_owned())),
    };
    match result {
        (_, Ok(_)) => Ok(out),
        // A compressed body cut short by the downloader's cap: keep what decoded.
        (_, Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => Ok(out),
        (coding, Err(source)) => Err(BodyError::Decode { coding, source }),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::{GzEncoder, ZlibEncoder};

    use super::*;

    const ROBOTS: &[u8] = b"User-agent: *\nDisallow: /private\n";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn response(headers: &str, body: &[u8]) -> Vec<u8> {
        let mut raw = format!("HTTP/1.1 200 OK\r\n{headers}\r\n").into_bytes();
        raw.extend_from_slice(body);
        raw
    }

    #[test]
    fn plain_and_content_length_bodies() {
        let raw = response("Content-Type: text/plain\r\n", ROBOTS);
        assert_eq!(http_body(&raw, 1 << 20).unwrap(), ROBOTS);
        let raw = response("Content-Length: 13\r\n", ROBOTS);
        assert_eq!(http_body(&raw, 1 << 20).unwrap(), b"User-agent: *");
        assert_eq!(http_body(&raw, 4).unwrap(), b"User");
        let raw = response("", b"");
        assert!(http_body(&raw, 10).unwrap().is_empty());
    }

    #[test]
    fn chunked_and_gzipped_bodies_are_decoded() {
        let raw = response(
            "Transfer-Encoding: chunked\r\n",
            b"5;ext=1\r\nUser-\r\n8\r\nagent: *\r\n0\r\nX-Trailer: 1\r\n\r\n",
        );
        assert_eq!(http_body(&raw, 100).unwrap(), b"User-agent: *");
        let gz = gzip(ROBOTS);
        let mut chunked = format!("{:x}\r\n", gz.len()).into_bytes();
        chunked.extend_from_slice(&gz);
        chunked.extend_from_slice(b"\r\n0\r\n\r\n");
        let raw = response(
            "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
            &chunked,
        );
        assert_eq!(http_body(&raw, 1 << 20).unwrap(), ROBOTS);
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(ROBOTS).unwrap();
        let raw = response("Content-Encoding: deflate\r\n", &z.finish().unwrap());
        assert_eq!(http_body(&raw, 1 << 20).unwrap(), ROBOTS);
    }

    #[test]
    fn output_is_capped_even_for_a_gzip_bomb() {
        let bomb = gzip(&vec![b'a'; 8 << 20]);
        assert!(bomb.len() < 64 * 1024);
        let raw = response("Content-Encoding: gzip\r\n", &bomb);
        assert_eq!(http_body(&raw, 512 * 1024).unwrap().len(), 512 * 1024);
    }

    #[test]
    fn truncated_bodies_yield_what_arrived_and_garbage_is_an_error() {
        let raw = response("Transfer-Encoding: chunked\r\n", b"a\r\nUser-ag");
        assert_eq!(http_body(&raw, 100).unwrap(), b"User-ag");
        let raw = response("Transfer-Encoding: chunked\r\n", b"zz\r\nhello");
        assert!(matches!(http_body(&raw, 100), Err(BodyError::Chunked(_))));
        let raw = response("Content-Encoding: gzip\r\n", b"not gzip at all");
        assert!(matches!(
            http_body(&raw, 100),
            Err(BodyError::Decode { .. })
        ));
        let raw = response("Content-Encoding: br\r\n", b"x");
        assert!(matches!(
            http_body(&raw, 100),
            Err(BodyError::UnsupportedCoding(_))
        ));
        assert!(matches!(
            http_body(b"HTTP/1.1 200 OK\r\nContent-", 100),
            Err(BodyError::IncompleteHead)
        ));
        assert!(http_body(b"garbage\r\n\r\n", 100).is_err());
    }
}
