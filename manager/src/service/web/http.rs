//! The admin server's HTTP/1.1, as little as a browser and `curl` need: one request
//! per connection (every response says `Connection: close`), the head parsed with
//! httparse, a body only with `Content-Length` (no chunked uploads), and hard size
//! limits on both.
//!
//! The head and the body are read in two steps ([`read_head`], then
//! [`Head::read_body`]) so the caller can refuse a request (no token) before its
//! body, or even the body's framing, is looked at.
//!
//! This module must never allocate more than [`MAX_HEAD`] + [`MAX_BODY`] for a
//! request, whatever the peer announces, or wait for one without the caller's
//! timeout around it. It knows nothing of routes or tokens.

use std::fmt::Write as _;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Largest request head (request line and headers), in bytes.
pub(crate) const MAX_HEAD: usize = 8 * 1024;
/// Largest request body, in bytes: JSON of one blacklist entry or one speed.
pub(crate) const MAX_BODY: usize = 16 * 1024;
/// Most header fields in one request.
const MAX_HEADERS: usize = 64;

/// A request read in full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// `GET`, `POST`...
    pub method: String,
    /// The path of the target, without the query (`/api/stats`).
    pub path: String,
    /// The query without its `?` (empty when there is none).
    pub query: String,
    /// Header fields as sent, names lower-cased; values that are not UTF-8 dropped.
    pub headers: Vec<(String, String)>,
    /// The body (empty without `Content-Length`).
    pub body: Vec<u8>,
}

impl Request {
    /// The first header field called `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request could not be read; each maps to the status code answered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RequestError {
    /// The connection closed before a whole request arrived (nothing is answered).
    #[error("connection closed before a whole request")]
    Closed,
    /// Reading the socket failed (nothing is answered).
    #[error("reading the request: {0}")]
    Io(#[from] std::io::Error),
    /// Not HTTP/1.x syntax.
    #[error("malformed request: {0}")]
    Malformed(String),
    /// The head exceeds [`MAX_HEAD`] or has more than 64 fields.
    #[error("request head over {MAX_HEAD} bytes or 64 fields")]
    HeadTooLarge,
    /// The body exceeds [`MAX_BODY`].
    #[error("request body of {0} bytes is over {MAX_BODY}")]
    BodyTooLarge(u64),
    /// A body framed some other way than `Content-Length`.
    #[error("only Content-Length bodies are accepted")]
    Unsupported,
}

impl RequestError {
    /// The status code to answer with, or `None` when there is no one to answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Closed | Self::Io(_) => None,
            Self::Malformed(_) => Some(400),
            Self::HeadTooLarge => Some(431),
            Self::BodyTooLarge(_) => Some(413),
            Self::Unsupported => Some(411),
        }
    }
}

/// A request whose head is read and whose body is still on the socket: the token
/// can be checked before a byte of the body is looked at.
#[derive(Debug)]
pub(crate) struct Head {
    /// The request, body empty.
    pub request: Request,
    /// Bytes after the head that arrived with it (the start of the body).
    rest: Vec<u8>,
}

impl Head {
    /// The body's announced length (0 without `Content-Length`), unchecked: for
    /// discarding the body of a refused request.
    pub fn announced_len(&self) -> u64 {
        self.request
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Checks the body's framing, reads it and returns the whole request.
    pub async fn read_body<S: AsyncRead + Unpin>(
        self,
        stream: &mut S,
    ) -> Result<Request, RequestError> {
        let Head { mut request, rest } = self;
        if request.header("transfer-encoding").is_some() {
            return Err(RequestError::Unsupported);
        }
        let body_len = match request.header("content-length") {
            None => 0,
            Some(v) => v
                .parse::<u64>()
                .map_err(|_| RequestError::Malformed(format!("Content-Length {v:?}")))?,
        };
        let body_len = usize::try_from(body_len)
            .ok()
            .filter(|n| *n <= MAX_BODY)
            .ok_or(RequestError::BodyTooLarge(body_len))?;
        let mut body = rest;
        if body.len() > body_len {
            return Err(RequestError::Malformed(
                "more bytes than Content-Length (pipelining is not supported)".to_owned(),
            ));
        }
        let have = body.len();
        body.resize(body_len, 0);
        stream
            .read_exact(&mut body[have..])
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => RequestError::Closed,
                _ => RequestError::Io(e),
            })?;
        request.body = body;
        Ok(request)
    }
}

/// Reads one request's head from `stream` (the body stays unread).
pub(crate) async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Result<Head, RequestError> {
    let mut buf = Vec::with_capacity(1024);
    loop {
        if buf.len() >= MAX_HEAD {
            return Err(RequestError::HeadTooLarge);
        }
        let mut chunk = [0u8; 1024];
        let room = chunk.len().min(MAX_HEAD - buf.len());
        let n = stream.read(&mut chunk[..room]).await?;
        if n == 0 {
            return Err(RequestError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some((request, head_len)) = parse_head(&buf)? {
            let rest = buf.split_off(head_len);
            return Ok(Head { request, rest });
        }
    }
}

/// Reads one whole request from `stream`: [`read_head`], then [`Head::read_body`].
#[cfg(test)]
pub(crate) async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> Result<Request, RequestError> {
    read_head(stream).await?.read_body(stream).await
}

/// The request in `buf` once its head is complete: the request (body empty) and
/// the head's length. The body's framing is not looked at here.
fn parse_head(buf: &[u8]) -> Result<Option<(Request, usize)>, RequestError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(RequestError::HeadTooLarge),
        Err(e) => return Err(RequestError::Malformed(e.to_string())),
    };
    let method = req.method.unwrap_or_default().to_owned();
    let target = req.path.unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .filter_map(|h| {
            let value = std::str::from_utf8(h.value).ok()?;
            Some((h.name.to_ascii_lowercase(), value.trim().to_owned()))
        })
        .collect();
    let request = Request {
        method,
        path: path.to_owned(),
        query: query.to_owned(),
        headers,
        body: Vec::new(),
    };
    if !request.path.starts_with('/') {
        return Err(RequestError::Malformed(format!(
            "target {:?} is not a path",
            request.path
        )));
    }
    Ok(Some((request, head_len)))
}

/// A response: status, content type, body and a few extra header fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Response {
    /// The status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Further header fields.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A JSON response.
    pub fn json(status: u16, body: &impl serde::Serialize) -> Response {
        match serde_json::to_vec(body) {
            Ok(body) => Response {
                status,
                content_type: "application/json",
                headers: Vec::new(),
                body,
            },
            // Our own types always serialize; say so if one ever does not.
            Err(e) => Response::error(500, &format!("cannot encode the answer: {e}")),
        }
    }

    /// `{"ok": false, "detail": ...}` with `status`.
    pub fn error(status: u16, detail: &str) -> Response {
        let body = format!(
            "{{\"ok\":false,\"detail\":{}}}",
            serde_json::Value::from(detail)
        );
        Response {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            body: body.into_bytes(),
        }
    }

    /// Adds a header field.
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }

    /// The response on the wire (`HEAD` requests get the head only).
    pub fn to_bytes(&self, head_only: bool) -> Vec<u8> {
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        let _ = write!(
            head,
            "Content-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\
             Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n",
            self.content_type,
            self.body.len()
        );
        for (name, value) in &self.headers {
            let _ = write!(head, "{name}: {value}\r\n");
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        if !head_only {
            bytes.extend_from_slice(&self.body);
        }
        bytes
    }
}

/// The reason phrase of the codes this server answers with.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(bytes: &[u8]) -> Result<Request, RequestError> {
        let mut stream = bytes;
        read_request(&mut stream).await
    }

    #[tokio::test]
    async fn reads_head_query_headers_and_body() {
        let r = read(
            b"POST /api/blacklist?entry=.a.test HTTP/1.1\r\nHost: 127.0.0.1\r\n\
              Authorization: Bearer s3cret\r\nContent-Length: 5\r\n\r\nhello",
        )
        .await
        .unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/api/blacklist");
        assert_eq!(r.query, "entry=.a.test");
        assert_eq!(r.header("authorization"), Some("Bearer s3cret"));
        assert_eq!(r.body, b"hello");
        let r = read(b"GET / HTTP/1.0\r\n\r\n").await.unwrap();
        assert_eq!((r.path.as_str(), r.query.as_str()), ("/", ""));
        assert!(r.body.is_empty());
    }

    #[tokio::test]
    async fn the_head_is_read_without_the_body() {
        let bytes: &[u8] = b"POST /api/speed HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n{{{";
        let mut stream = bytes;
        let head = read_head(&mut stream).await.unwrap();
        assert_eq!(head.request.path, "/api/speed");
        assert!(head.request.body.is_empty());
        assert_eq!(head.announced_len(), 99_999_999_999);
        let chunked: &[u8] = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz";
        let mut stream = chunked;
        assert!(
            read_head(&mut stream).await.is_ok(),
            "framing is the body's business"
        );
    }

    #[tokio::test]
    async fn refuses_what_it_does_not_read() {
        let status = |r: Result<Request, RequestError>| r.unwrap_err().status();
        assert_eq!(status(read(b"GET / HTTP/1.1\r\nHost").await), None, "cut");
        assert_eq!(status(read(b"BLAH\r\n\r\n").await), Some(400));
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(status(read(long.as_bytes()).await), Some(431));
        let huge = b"POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n";
        assert_eq!(status(read(huge).await), Some(413));
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        assert_eq!(status(read(chunked).await), Some(411));
        let bad = b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n";
        assert_eq!(status(read(bad).await), Some(400));
        let short = b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc";
        assert_eq!(status(read(short).await), None);
        let extra = b"POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nabc";
        assert_eq!(status(read(extra).await), Some(400));
        let absolute = b"GET http://a/ HTTP/1.1\r\n\r\n";
        assert_eq!(status(read(absolute).await), Some(400));
    }

    #[test]
    fn responses_close_and_carry_their_length() {
        let r = Response::error(401, "no \"token\"").with("WWW-Authenticate", "Bearer");
        let text = String::from_utf8(r.to_bytes(false)).unwrap();
        assert!(text.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{text}");
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.contains("WWW-Authenticate: Bearer\r\n"));
        assert!(text.ends_with("\r\n\r\n{\"ok\":false,\"detail\":\"no \\\"token\\\"\"}"));
        assert!(text.contains(&format!("Content-Length: {}\r\n", r.body.len())));
        let head = String::from_utf8(r.to_bytes(true)).unwrap();
        assert!(head.ends_with("\r\n\r\n"));
    }
}
