//! One request/response exchange on an open connection: write the request, read the
//! head (skipping interim 1xx heads) and the body, and say whether the connection may
//! be reused.
//!
//! Every byte read is accounted against a cap: the head against `max_header_bytes`
//! (interim heads included), the body *as transferred* against `max_body_bytes`. At
//! the body cap reading stops and the response is marked [`Truncation::Length`];
//! a close or reset before the body is complete gives [`Truncation::Disconnect`].
//! Neither fails the fetch: what arrived is archived. The connection is reusable only
//! when the body ended exactly where its framing said, no stray bytes followed, and
//! the server allows keep-alive. Redirects are just responses here: never followed.
//!
//! Timeouts: the first-byte timeout wraps the reads until the first response byte;
//! the total timeout is applied by the caller around the whole exchange.
//!
//! Politeness stamps ([`WireTimes`]): before the request's first byte is written the
//! exchange waits for its turn at the `HostGate` when the job has a host spacing,
//! then at the `IpGate` (each spacing runs from the end of the previous write to
//! the host or address, and for the address also from the end of the previous
//! exchange with it: an `ExchangeEnd` guard marks this exchange's end however it
//! ends), then reads the clock (`sent_us`, a lower bound of when the request
//! left), writes, reads it again (`written_us`, an upper bound), and reads it once
//! more right after the response's last byte (`received_us`, an upper bound of
//! when the response was complete). So a gap
//! measured from these stamps is never longer than the real one.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use spool::http::ChunkedDecoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::conn::Conn;
use crate::error::FetchError;
use crate::fetched::{Truncation, WireTimes, unix_us};
use crate::head::{self, Framing, HeadEnd, ResponseHead};
use crate::ip_gate::{ExchangeEnd, HostGate, IpGate, Turn};
use crate::job::Method;

/// Reads ask for at least this much room.
const READ_CHUNK: usize = 16 * 1024;
/// Content-Length bodies up to this size get their whole buffer up front.
const PREALLOCATE_MAX: usize = 1024 * 1024;

/// The limits one exchange needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// TCP connect plus TLS handshake (used by the fetcher, not the exchange).
    pub connect_timeout: Duration,
    pub first_byte_timeout: Duration,
    pub max_header_bytes: usize,
    pub max_header_fields: usize,
    pub max_body_bytes: usize,
}

/// A response read off the wire (over HTTP/2: its HTTP/1.1 form, see `http2`).
#[derive(Debug)]
pub(crate) struct RawResponse {
    pub raw: Bytes,
    pub head_len: usize,
    pub head: ResponseHead,
    pub payload: Bytes,
    pub truncated: Option<Truncation>,
    pub reusable: bool,
    pub first_byte: Duration,
}

/// A failed exchange; `retryable` when nothing of a response arrived because the
/// (reused) connection was already dead: write failed, or EOF/reset before any byte.
#[derive(Debug)]
pub(crate) struct ExchangeError {
    pub error: FetchError,
    pub retryable: bool,
}

impl From<FetchError> for ExchangeError {
    fn from(error: FetchError) -> Self {
        Self {
            error,
            retryable: false,
        }
    }
}

/// Where one request goes and how it is paced: the address, the gate that spaces
/// requests to it, the spacing, the same for its host (origin key and spacing:
/// `None` for none), and the stamps to fill in.
pub(crate) struct Wire<'a> {
    pub addr: SocketAddr,
    pub gate: &'a IpGate,
    pub spacing: Duration,
    pub host_gate: &'a HostGate,
    pub host: Option<(String, Duration)>,
    pub times: &'a mut WireTimes,
}

/// Sends `request` on `conn` (once its address's turn has come) and reads the
/// response.
pub(crate) async fn exchange(
    conn: &mut Conn,
    wire: &mut Wire<'_>,
    request: &[u8],
    method: Method,
    limits: &Limits,
) -> Result<RawResponse, ExchangeError> {
    let addr = wire.addr;
    // Dropped when this exchange ends, however it ends: the address's spacing runs
    // from then too (a host's, with several requests in flight, runs from start to
    // start only).
    let _ip_over = ExchangeEnd::new(wire.gate, addr.ip(), wire.spacing);
    send(conn, wire, request).await?;
    let sent_at = Instant::now();
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let (head, head_len, first_byte) =
        read_final_head(conn, &mut buf, addr, sent_at, limits).await?;
    let framing = head::framing(&head, method)?;
    let body = read_body(conn, buf, head_len, framing, limits.max_body_bytes).await?;
    wire.times.received_us = unix_us();
    let reusable = body.complete_and_alone && framing != Framing::Close && head.keep_alive();
    Ok(RawResponse {
        raw: body.raw,
        head_len,
        head,
        payload: body.payload,
        truncated: body.truncated,
        reusable,
        first_byte,
    })
}

/// The turns one request holds while it is written: its host's (when the job
/// has a host spacing), then its address's. Dropping them ends the write.
pub(crate) struct Turns<'a> {
    _host: Option<Turn<'a, String>>,
    _ip: Turn<'a, IpAddr>,
}

/// Waits for the host's turn, then the address's (see `ip_gate`), and stamps
/// `sent_us` (clearing the later stamps).
pub(crate) async fn take_turns<'a>(wire: &mut Wire<'a>) -> Turns<'a> {
    let (gate, host_gate) = (wire.gate, wire.host_gate);
    let host = match &wire.host {
        Some((key, spacing)) => Some(host_gate.turn(key.clone(), *spacing).await),
        None => None,
    };
    let ip = gate.turn(wire.addr.ip(), wire.spacing).await;
    wire.times.sent_us = unix_us();
    wire.times.written_us = 0;
    wire.times.received_us = 0;
    Turns {
        _host: host,
        _ip: ip,
    }
}

/// Takes the turns ([`take_turns`]) and writes `request`, stamping `sent_us`
/// and `written_us`. A failed write is retryable: the (reused) connection was
/// dead already.
async fn send(conn: &mut Conn, wire: &mut Wire<'_>, request: &[u8]) -> Result<(), ExchangeError> {
    let addr = wire.addr;
    let dead = |source| ExchangeError {
        error: FetchError::Io { addr, source },
        retryable: true,
    };
    let _turns = take_turns(wire).await;
    conn.write_all(request).await.map_err(dead)?;
    conn.flush().await.map_err(dead)?;
    wire.times.written_us = unix_us();
    Ok(())
}

/// Reads heads into `buf` until the final (non-1xx) one: it, its length (the body
/// starts there in `buf`) and the time to the first response byte. Interim heads
/// are dropped from `buf` and count against `max_header_bytes` with the final one.
async fn read_final_head(
    conn: &mut Conn,
    buf: &mut BytesMut,
    addr: SocketAddr,
    sent_at: Instant,
    limits: &Limits,
) -> Result<(ResponseHead, usize, Duration), ExchangeError> {
    let mut first_byte = None;
    let mut interim_bytes = 0;
    loop {
        let head_len = read_head_end(
            conn,
            buf,
            addr,
            sent_at,
            &mut first_byte,
            interim_bytes,
            limits,
        )
        .await?;
        if interim_bytes + head_len > limits.max_header_bytes {
            return Err(too_large(limits).into());
        }
        let head = head::parse(
            &buf[..head_len],
            limits.max_header_fields,
            limits.max_header_bytes,
        )?;
        if head.status == 101 {
            return Err(FetchError::bad("unrequested 101 Switching Protocols").into());
        }
        if head.is_interim() {
            interim_bytes += head_len;
            buf.advance(head_len);
            continue;
        }
        return Ok((head, head_len, first_byte.unwrap_or_default()));
    }
}

/// Reads until `buf` holds a whole head: its length. The reads before the first
/// response byte (`first_byte`, set here) run under the first-byte timeout; an EOF
/// or error before it is retryable.
async fn read_head_end(
    conn: &mut Conn,
    buf: &mut BytesMut,
    addr: SocketAddr,
    sent_at: Instant,
    first_byte: &mut Option<Duration>,
    interim_bytes: usize,
    limits: &Limits,
) -> Result<usize, ExchangeError> {
    let mut end = HeadEnd::default();
    loop {
        if let Some(n) = end.find(buf) {
            return Ok(n);
        }
        if interim_bytes + buf.len() >= limits.max_header_bytes {
            return Err(too_large(limits).into());
        }
        let read = if first_byte.is_none() {
            tokio::time::timeout(limits.first_byte_timeout, read_some(conn, buf))
                .await
                .map_err(|_| FetchError::FirstByteTimeout {
                    after: limits.first_byte_timeout,
                })?
        } else {
            read_some(conn, buf).await
        };
        match read {
            Ok(0) if first_byte.is_none() => {
                return Err(ExchangeError {
                    error: FetchError::EmptyResponse,
                    retryable: true,
                });
            }
            Ok(0) => return Err(FetchError::bad("connection closed inside the head").into()),
            Ok(_) => {
                first_byte.get_or_insert_with(|| sent_at.elapsed());
            }
            Err(source) => {
                return Err(ExchangeError {
                    error: FetchError::Io { addr, source },
                    retryable: first_byte.is_none(),
                });
            }
        }
    }
}

fn too_large(limits: &Limits) -> FetchError {
    FetchError::HeadersTooLarge {
        limit: limits.max_header_bytes,
        max_fields: limits.max_header_fields,
    }
}

/// Reads into `buf`, growing it geometrically in steps of at least [`READ_CHUNK`].
async fn read_some(conn: &mut Conn, buf: &mut BytesMut) -> io::Result<usize> {
    if buf.capacity() - buf.len() < READ_CHUNK / 2 {
        buf.reserve(READ_CHUNK.max(buf.len()));
    }
    conn.read_buf(buf).await
}

struct Body {
    raw: Bytes,
    payload: Bytes,
    truncated: Option<Truncation>,
    /// The body ended where the framing said and no byte followed it.
    complete_and_alone: bool,
}

/// Reads the body after a head of `head_len` bytes at the start of `buf`.
async fn read_body(
    conn: &mut Conn,
    mut buf: BytesMut,
    head_len: usize,
    framing: Framing,
    cap: usize,
) -> Result<Body, FetchError> {
    let limit = head_len.saturating_add(cap);
    let mut truncated = None;
    let mut alone = true;
    let mut chunked_payload = None;
    match framing {
        Framing::Empty => {
            alone = buf.len() == head_len;
            buf.truncate(head_len);
        }
        Framing::Length(n) => {
            let end = head_len.saturating_add(usize::try_from(n).unwrap_or(usize::MAX));
            let want = end.min(limit);
            if want <= head_len + PREALLOCATE_MAX {
                buf.reserve(want.saturating_sub(buf.len()));
            }
            while buf.len() < want {
                if !matches!(read_some(conn, &mut buf).await, Ok(n) if n > 0) {
                    truncated = Some(Truncation::Disconnect);
                    break;
                }
            }
            if truncated.is_none() && want < end {
                truncated = Some(Truncation::Length);
            }
            alone = buf.len() == end;
            buf.truncate(want);
        }
        Framing::Chunked => {
            let mut decoder = ChunkedDecoder::default();
            let mut payload = BytesMut::new();
            let mut fed = head_len;
            loop {
                let upto = buf.len().min(limit);
                fed += decoder
                    .feed(&buf[fed..upto], &mut payload)
                    .map_err(|e| FetchError::bad(e.to_string()))?;
                if decoder.is_done() {
                    alone = buf.len() == fed;
                    buf.truncate(fed);
                    break;
                }
                if fed >= limit {
                    truncated = Some(Truncation::Length);
                    buf.truncate(limit);
                    break;
                }
                if !matches!(read_some(conn, &mut buf).await, Ok(n) if n > 0) {
                    truncated = Some(Truncation::Disconnect);
                    break;
                }
            }
            chunked_payload = Some(payload.freeze());
        }
        Framing::Close => loop {
            if buf.len() >= limit {
                truncated = Some(Truncation::Length);
                buf.truncate(limit);
                break;
            }
            match read_some(conn, &mut buf).await {
                Ok(0) => break,
                // A TLS peer that closes without close_notify: the usual end of a
                // close-delimited body in practice.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                Ok(_) => {}
                Err(_) => {
                    truncated = Some(Truncation::Disconnect);
                    break;
                }
            }
        },
    }
    let raw = buf.freeze();
    let payload = chunked_payload.unwrap_or_else(|| raw.slice(head_len..));
    Ok(Body {
        raw,
        payload,
        complete_and_alone: alone && truncated.is_none(),
        truncated,
    })
}
