//! HTTP/2 over TLS: the connection (hyperium's `h2` crate does the framing, HPACK
//! and flow control) and one exchange on it, with the same caps, timeouts and
//! politeness stamps as the HTTP/1.1 exchange (`exchange`), and the response
//! turned into its HTTP/1.1 form for the archive.
//!
//! # When
//!
//! TLS offers ALPN `h2, http/1.1` when the fetcher's `http2` switch is on (the
//! default); when the server picks `h2`, [`handshake`] starts an HTTP/2 client on
//! the connection and the fetcher pools the resulting [`H2Conn`] under the same key
//! and idle rules as an HTTP/1.1 connection. Plain http stays HTTP/1.1 (no h2c, no
//! upgrade). A pooled `H2Conn` is checked out by one fetch at a time, so one
//! connection carries one request at a time, as the manager's politeness assumes.
//!
//! # The archived form (the WARC decision)
//!
//! Readers of WARC files (warcio, pywb, jwarc) expect HTTP/1.x messages in
//! records, so the response record's block is [`normalised_head`] — `HTTP/1.1
//! <code> <canonical reason>`, then every response field as received (HTTP/2 names
//! are lower-case; pseudo-fields such as `:status` are not fields and do not
//! appear), then the empty line — followed by the body exactly as received in DATA
//! frames (content coding kept; HTTP/2 has no chunking, and forbids
//! `Transfer-Encoding`, so the body is never chunked). No `Content-Length` is
//! invented: without one the HTTP/1.1 message runs to the end of the block, which
//! is how readers delimit it anyway. The request record holds the HTTP/1.1 form of
//! what was sent ([`crate::request::normalised`]). Both records carry
//! `WARC-Protocol: h2` (and the TLS version), which the batch writer adds from
//! [`Fetched::protocols`](crate::Fetched::protocols).
//!
//! # Politeness stamps
//!
//! The connection is written by its own task, so the moment the request's frames
//! reach the kernel is not observable here; the request's turns (`ip_gate`) are
//! held and `written_us` is stamped when the response head arrives, which is an
//! upper bound of that moment (the server read the request before answering). So
//! spacings judged on the stamps are never longer than the real ones, as for
//! HTTP/1.1; the price is that the turns are held a round trip longer.
//!
//! What this module must never do: send more than one request on a connection at
//! once, accept a pushed stream (push is off), hold more than the head and body caps
//! in memory, or archive a pseudo-field. Cost: O(head + body) per exchange.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use h2::client::SendRequest;

use crate::conn::{Conn, WireCount};
use crate::error::FetchError;
use crate::exchange::{ExchangeError, Limits, RawResponse, Wire, take_turns};
use crate::fetched::{Truncation, unix_us};
use crate::head;
use crate::ip_gate::ExchangeEnd;
use crate::job::{Method, Target};

/// Per-stream receive window: one request at a time, so one window of this size
/// is what a fast server can send per round trip (the HTTP/2 default, 64 KiB,
/// would cap a distant server at 64 KiB per round trip).
const STREAM_WINDOW: u32 = 1024 * 1024;
/// Connection receive window (one stream at a time: the same).
const CONNECTION_WINDOW: u32 = STREAM_WINDOW;
/// Bodies with a Content-Length up to this size get their whole buffer up front.
const PREALLOCATE_MAX: usize = 1024 * 1024;

/// An HTTP/2 client connection, driven by a task of its own.
pub(crate) struct H2Conn {
    send: SendRequest<Bytes>,
    count: Arc<WireCount>,
    tls: Option<&'static str>,
    driver: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for H2Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Conn")
            .field("tls", &self.tls)
            .field("closed", &self.driver.is_finished())
            .finish_non_exhaustive()
    }
}

impl H2Conn {
    /// Bytes (sent, received) on the wire since the connection was opened.
    pub(crate) fn wire_bytes(&self) -> (u64, u64) {
        self.count.get()
    }

    /// The negotiated TLS version as a `WARC-Protocol` value.
    pub(crate) fn tls_protocol(&self) -> Option<&'static str> {
        self.tls
    }

    /// Whether the connection has ended (closed by either side, or failed).
    pub(crate) fn is_closed(&self) -> bool {
        self.driver.is_finished()
    }
}

/// Starts HTTP/2 on `conn` (TLS that negotiated `h2`): sends the preface and our
/// settings (no push, [`STREAM_WINDOW`], a header list cap of `max_header_bytes`)
/// and spawns the task that drives the connection until it ends.
pub(crate) async fn handshake(
    conn: Conn,
    addr: SocketAddr,
    limits: &Limits,
) -> Result<H2Conn, FetchError> {
    let count = conn.counter();
    let tls = conn.tls_protocol();
    let (send, connection) = h2::client::Builder::new()
        .enable_push(false)
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX))
        .handshake::<_, Bytes>(conn)
        .await
        .map_err(|source| FetchError::Http2 { addr, source })?;
    let driver = tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(%addr, error = %e, "HTTP/2 connection ended");
        }
    });
    Ok(H2Conn {
        send,
        count,
        tls,
        driver,
    })
}

/// What one HTTP/2 exchange produced: the response in its HTTP/1.1 form and the
/// request's HTTP/1.1 form for the archive.
#[derive(Debug)]
pub(crate) struct H2Response {
    pub response: RawResponse,
    pub request: Bytes,
}

/// Sends one request for `target` with `fields` on `h2` (once its turns have come)
/// and reads the response within `limits`. Errors before the response head are
/// retryable: on a pooled connection they mean it was closed meanwhile (GOAWAY,
/// reset, EOF).
pub(crate) async fn exchange(
    h2: &mut H2Conn,
    wire: &mut Wire<'_>,
    method: Method,
    target: &Target,
    fields: &[(&'static str, String)],
    limits: &Limits,
) -> Result<H2Response, ExchangeError> {
    let addr = wire.addr;
    let failed = |source, retryable| ExchangeError {
        error: FetchError::Http2 { addr, source },
        retryable,
    };
    let _ip_over = ExchangeEnd::new(wire.gate, addr.ip(), wire.spacing);
    let request = h2_request(method, target, fields)?;
    let mut send = h2.send.clone().ready().await.map_err(|e| failed(e, true))?;
    let turns = take_turns(wire).await;
    let sent_at = Instant::now();
    let (pending, _stream) = send
        .send_request(request, true)
        .map_err(|e| failed(e, true))?;
    let response = tokio::time::timeout(limits.first_byte_timeout, pending)
        .await
        .map_err(|_| FetchError::FirstByteTimeout {
            after: limits.first_byte_timeout,
        })?
        .map_err(|e| failed(e, true))?;
    let first_byte = sent_at.elapsed();
    wire.times.written_us = unix_us();
    drop(turns);
    h2.send = send;

    let (parts, mut recv) = response.into_parts();
    if parts.headers.len() > limits.max_header_fields {
        return Err(too_large(limits).into());
    }
    let head_bytes = normalised_head(parts.status, &parts.headers);
    if head_bytes.len() > limits.max_header_bytes {
        return Err(too_large(limits).into());
    }
    let head_len = head_bytes.len();
    let head = head::parse(
        &head_bytes,
        limits.max_header_fields,
        limits.max_header_bytes,
    )?;
    let mut raw = BytesMut::from(&head_bytes[..]);
    let expected = head
        .get("content-length")
        .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<usize>().ok());
    if let Some(n) = expected {
        raw.reserve(n.min(limits.max_body_bytes).min(PREALLOCATE_MAX));
    }
    let mut truncated = None;
    let cap = head_len.saturating_add(limits.max_body_bytes);
    while let Some(chunk) = recv.data().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(%addr, error = %e, "HTTP/2 stream ended early");
                truncated = Some(Truncation::Disconnect);
                break;
            }
        };
        // Frees the window at once: the bytes are ours, under the body cap.
        let _ = recv.flow_control().release_capacity(chunk.len());
        let room = cap - raw.len();
        if chunk.len() > room {
            raw.put_slice(&chunk[..room]);
            truncated = Some(Truncation::Length);
            break;
        }
        raw.put_slice(&chunk);
    }
    wire.times.received_us = unix_us();
    // A cut stream is reset when `recv` drops; the connection stays usable, but
    // like HTTP/1.1 only a response read to its end gives the connection back.
    let reusable = truncated.is_none() && !h2.is_closed();
    let raw = raw.freeze();
    Ok(H2Response {
        response: RawResponse {
            payload: raw.slice(head_len..),
            raw,
            head_len,
            head,
            truncated,
            reusable,
            first_byte,
        },
        request: crate::request::normalised(method, target, fields),
    })
}

fn too_large(limits: &Limits) -> FetchError {
    FetchError::HeadersTooLarge {
        limit: limits.max_header_bytes,
        max_fields: limits.max_header_fields,
    }
}

/// The HTTP/2 request: the URL's scheme, authority and path as pseudo-fields,
/// then `fields` (names lower-cased on the wire by `http`).
fn h2_request(
    method: Method,
    target: &Target,
    fields: &[(&'static str, String)],
) -> Result<http::Request<()>, FetchError> {
    let uri = format!(
        "{}://{}{}",
        target.scheme().as_str(),
        target.authority(),
        target.path_and_query()
    );
    let mut b = http::Request::builder()
        .method(match method {
            Method::Get => http::Method::GET,
            Method::Head => http::Method::HEAD,
        })
        .uri(uri);
    for (name, value) in fields {
        b = b.header(*name, value.as_str());
    }
    b.body(())
        .map_err(|e| FetchError::invalid(format!("cannot make an HTTP/2 request: {e}")))
}

/// The HTTP/1.1 head of an HTTP/2 response, as archived: `HTTP/1.1 <code>
/// <canonical reason>` (no reason for a code without one), each field as
/// `name: value` in the order received (names lower-case as HTTP/2 sends them;
/// values as received: `http` has refused any with CR, LF or NUL), the empty line.
pub(crate) fn normalised_head(status: http::StatusCode, headers: &http::HeaderMap) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        32 + headers
            .iter()
            .map(|(n, v)| n.as_str().len() + v.len() + 4)
            .sum::<usize>(),
    );
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue, StatusCode};

    use super::*;

    #[test]
    fn head_is_http11_with_canonical_reason_and_fields_as_received() {
        let mut h = HeaderMap::new();
        h.append("content-type", HeaderValue::from_static("text/html"));
        h.append("set-cookie", HeaderValue::from_static("a=1"));
        h.append("set-cookie", HeaderValue::from_static("b=2"));
        h.append("content-length", HeaderValue::from_static("5"));
        let got = normalised_head(StatusCode::NOT_FOUND, &h);
        assert_eq!(
            std::str::from_utf8(&got).unwrap(),
            "HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\nset-cookie: a=1\r\n\
             set-cookie: b=2\r\ncontent-length: 5\r\n\r\n"
        );
        // The workspace's head parser reads it back as HTTP/1.1.
        let parsed = head::parse(&got, 16, 1024).unwrap();
        assert_eq!((parsed.version, parsed.status), (1, 404));
        assert_eq!(parsed.reason, "Not Found");
        assert_eq!(parsed.get_all("set-cookie").count(), 2);
    }

    #[test]
    fn a_code_without_a_reason_keeps_the_space() {
        let got = normalised_head(StatusCode::from_u16(299).unwrap(), &HeaderMap::new());
        assert_eq!(got, b"HTTP/1.1 299 \r\n\r\n");
        let parsed = head::parse(&got, 16, 1024).unwrap();
        assert_eq!((parsed.status, parsed.reason.as_str()), (299, ""));
        let got = normalised_head(StatusCode::MOVED_PERMANENTLY, &HeaderMap::new());
        assert!(got.starts_with(b"HTTP/1.1 301 Moved Permanently\r\n"));
    }

    #[test]
    fn request_carries_the_fields_and_the_authority() {
        let t = Target::parse("https://Example.org:8443/a?b=1").unwrap();
        let fields = vec![("User-Agent", "polycrawl/1".to_owned())];
        let r = h2_request(Method::Head, &t, &fields).unwrap();
        assert_eq!(r.method(), http::Method::HEAD);
        assert_eq!(r.uri().to_string(), "https://example.org:8443/a?b=1");
        assert_eq!(r.headers()["user-agent"], "polycrawl/1");
        assert!(r.headers().get("host").is_none());
    }
}
