//! The response head: finding where it ends, parsing it (with the workspace's one
//! head parser, [`spool::http::parse_head`]), and deciding from it how the body is
//! framed and whether the connection may be reused.
//!
//! The end of the head is found by an incremental scan for an empty line, so a server
//! that trickles its head a byte at a time costs linear, not quadratic, work; the
//! parser then runs once on the complete head. Parsing is lenient where real servers are
//! sloppy (bare LF, obsolete line folding, spaces before the colon) and strict where
//! framing is at stake (conflicting Content-Length values are an error).

use bytes::Bytes;
use spool::http::{self, HttpError};

use crate::error::FetchError;
use crate::job::Method;

/// A parsed status line and header block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// Minor HTTP version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    /// The status code.
    pub status: u16,
    /// The reason phrase (may be empty), lossily decoded.
    pub reason: String,
    /// Header fields in order, names lower-cased, values as received.
    pub headers: Vec<(String, Bytes)>,
}

impl ResponseHead {
    /// The first value of header `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_ref())
    }

    /// Every value of header `name` (case-insensitive), in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_ref())
    }

    /// The comma-separated tokens of every `name` header, trimmed and lower-cased.
    pub fn tokens(&self, name: &str) -> Vec<String> {
        self.get_all(name)
            .flat_map(|v| v.split(|&b| b == b','))
            .map(|t| String::from_utf8_lossy(t).trim().to_ascii_lowercase())
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// Whether this is an interim (1xx) response to skip. 101 is not: we never ask to
    /// switch protocols, so a 101 is a bad response, caught by the caller.
    pub(crate) fn is_interim(&self) -> bool {
        (100..200).contains(&self.status) && self.status != 101
    }

    /// Whether the server allows another request on this connection.
    pub(crate) fn keep_alive(&self) -> bool {
        let tokens = self.tokens("connection");
        if tokens.iter().any(|t| t == "close") {
            return false;
        }
        self.version >= 1 || tokens.iter().any(|t| t == "keep-alive")
    }
}

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body (HEAD, 204, 304).
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Until the server closes the connection.
    Close,
}

/// Decides the body framing (RFC 9112 section 6.3).
pub(crate) fn framing(head: &ResponseHead, method: Method) -> Result<Framing, FetchError> {
    if method == Method::Head || head.status == 204 || head.status == 304 {
        return Ok(Framing::Empty);
    }
    let te = head.tokens("transfer-encoding");
    if !te.is_empty() {
        // Transfer-Encoding wins over Content-Length; if chunked is not the final
        // coding the body runs to the end of the connection.
        return Ok(if te.last().map(String::as_str) == Some("chunked") {
            Framing::Chunked
        } else {
            Framing::Close
        });
    }
    let mut length = None;
    for value in head.tokens("content-length") {
        let n: u64 = value
            .parse()
            .map_err(|_| FetchError::bad(format!("Content-Length {value:?}")))?;
        if length.is_some_and(|l| l != n) {
            return Err(FetchError::bad("conflicting Content-Length values"));
        }
        length = Some(n);
    }
    Ok(length.map_or(Framing::Close, Framing::Length))
}

/// Incremental search for the end of a head (the empty line after the headers).
#[derive(Debug, Default)]
pub struct HeadEnd {
    scanned: usize,
}

impl HeadEnd {
    /// The length of the head in `buf` including its final empty line, if complete.
    /// `buf` must only grow between calls.
    pub fn find(&mut self, buf: &[u8]) -> Option<usize> {
        let mut i = self.scanned;
        while let Some(off) = buf[i..].iter().position(|&b| b == b'\n') {
            let nl = i + off;
            match buf.get(nl + 1) {
                None => {
                    self.scanned = nl;
                    return None;
                }
                Some(b'\n') => return Some(nl + 2),
                Some(b'\r') => match buf.get(nl + 2) {
                    None => {
                        self.scanned = nl;
                        return None;
                    }
                    Some(b'\n') => return Some(nl + 3),
                    Some(_) => {}
                },
                Some(_) => {}
            }
            i = nl + 1;
        }
        self.scanned = buf.len();
        None
    }
}

/// Parses a complete head (as delimited by [`HeadEnd`]) with the parser the spool
/// reads stored responses with ([`spool::http::parse_head`]); `max_bytes` is only
/// named in the error.
pub fn parse(head: &[u8], max_fields: usize, max_bytes: usize) -> Result<ResponseHead, FetchError> {
    let parsed = http::parse_head(head, max_fields).map_err(|e| match e {
        HttpError::TooManyFields { .. } => FetchError::HeadersTooLarge {
            limit: max_bytes,
            max_fields,
        },
        HttpError::IncompleteHead => FetchError::bad("incomplete response head"),
        HttpError::Head(e) => FetchError::bad(format!("unparsable head: {e}")),
        other => FetchError::bad(other.to_string()),
    })?;
    let headers = parsed
        .headers
        .into_iter()
        .map(|(name, value)| (name, Bytes::copy_from_slice(value)))
        .collect();
    Ok(ResponseHead {
        version: parsed.version,
        status: parsed.status,
        reason: parsed.reason.to_owned(),
        headers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> ResponseHead {
        let mut end = HeadEnd::default();
        let n = end.find(text.as_bytes()).expect("complete");
        parse(&text.as_bytes()[..n], 32, 1024).unwrap()
    }

    #[test]
    fn finds_head_end_incrementally() {
        let text = b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody";
        let mut end = HeadEnd::default();
        for i in 0..text.len() {
            let got = end.find(&text[..i]);
            if i < 25 {
                assert_eq!(got, None, "prefix {i}");
            } else {
                assert_eq!(got, Some(25), "prefix {i}");
            }
        }
        assert_eq!(
            HeadEnd::default().find(b"HTTP/1.0 200 OK\nA: b\n\nx"),
            Some(22)
        );
    }

    #[test]
    fn parses_and_frames() {
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A : 1\r\n\r\n");
        assert_eq!((h.version, h.status, h.reason.as_str()), (1, 200, "OK"));
        assert_eq!(h.get("x-a"), Some(&b"1"[..]));
        assert_eq!(framing(&h, Method::Get).unwrap(), Framing::Length(5));
        assert_eq!(framing(&h, Method::Head).unwrap(), Framing::Empty);
        assert!(h.keep_alive());

        let h = head(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\nContent-Length: 3\r\n\r\n",
        );
        assert_eq!(framing(&h, Method::Get).unwrap(), Framing::Chunked);
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n");
        assert_eq!(framing(&h, Method::Get).unwrap(), Framing::Close);
        let h = head("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n");
        assert_eq!(framing(&h, Method::Get).unwrap(), Framing::Empty);
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\n\r\n");
        assert_eq!(framing(&h, Method::Get).unwrap(), Framing::Length(4));
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n");
        assert!(framing(&h, Method::Get).is_err());
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n");
        assert!(framing(&h, Method::Get).is_err());
    }

    #[test]
    fn keep_alive_rules() {
        assert!(!head("HTTP/1.1 200 OK\r\nConnection: Close\r\n\r\n").keep_alive());
        assert!(!head("HTTP/1.0 200 OK\r\n\r\n").keep_alive());
        assert!(head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n").keep_alive());
        assert!(head("HTTP/1.1 100 Continue\r\n\r\n").is_interim());
        assert!(!head("HTTP/1.1 101 Switching\r\n\r\n").is_interim());
    }

    #[test]
    fn rejects_garbage_and_too_many_fields() {
        assert!(matches!(
            parse(b"SSH-2.0-OpenSSH\r\n\r\n", 8, 1024),
            Err(FetchError::BadResponse { .. })
        ));
        let many: String = (0..10).map(|i| format!("X-{i}: v\r\n")).collect();
        let text = format!("HTTP/1.1 200 OK\r\n{many}\r\n");
        assert!(matches!(
            parse(text.as_bytes(), 8, 1024),
            Err(FetchError::HeadersTooLarge { .. })
        ));
    }
}
