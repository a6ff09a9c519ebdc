//! The HTTP/1.1 server, hand-written on tokio and httparse (no framework, because
//! websim must also misbehave on purpose).
//!
//! One accept loop per listener; one task per connection. A connection serves
//! requests in order (pipelining works: parsed requests are answered one by one)
//! and is kept alive until the client sends `Connection: close` (or speaks
//! HTTP/1.0 without `Connection: keep-alive`), sends nothing for [`IDLE_TIMEOUT`],
//! sends a request websim cannot parse (400 and close), a head over
//! [`MAX_HEAD`] bytes or with more than 64 header lines (431 and close), or a
//! request body (`Content-Length` over 1 MiB: 413 and close; any
//! `Transfer-Encoding`: 400 and close). Smaller request bodies are read and ignored.
//!
//! Per host, after routing ([`super::respond`]):
//! - `gzip` hosts send `Content-Encoding: gzip` (flate2, fast level) when the request's
//!   `Accept-Encoding` lists `gzip` (or `x-gzip`, or `*`) with a non-zero q, and send
//!   `Vary: Accept-Encoding` always;
//! - `chunked` hosts send every body with `Transfer-Encoding: chunked` (4 KiB chunks);
//!   other responses carry `Content-Length`;
//! - `slow` hosts send their first byte `--slow-ms` after the request head arrived;
//!   with `--latency-ms`, every host waits at least that long before its first byte
//!   (the network's round trip, for network-bound benchmarks);
//! - with `--throttle`, the throttling hosts answer some page requests 429 or 503
//!   (with `Retry-After` where [`super::throttle`] says);
//! - with `--pace-per-client`, every response goes out at the client address's
//!   share of bandwidth ([`super::pace`]);
//! - generated pages of validating hosts carry `ETag` and `Last-Modified` and a
//!   conditional GET that matches gets 304 with no body; a page changed at the
//!   served revision gets its revision paragraph ([`super::revision`]).
//!
//! Hot path: the page is rendered into a per-connection buffer, the response head is
//! written into a second one followed by the body, and the result goes out in one
//! write; the buffers live as long as the connection. Memory per connection: a few
//! buffers of the largest response sent on it (about 30 KB for pages).
//!
//! This module never binds (see [`super::listen`]) and never connects anywhere.

use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use flate2::Compression;
use flate2::write::GzEncoder;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::hosts::Host;
use super::html::{Charset, render_page};
use super::linkform::Scratch;
use super::log::{self, Record, RequestLog};
use super::misbehave;
use super::model::Web;
use super::pace::{PACE_CHUNK, Pacer};
use super::respond::{self, Reply, Request, Scheme};
use super::revision::{Conditional, Revision, Validators, mark_changed};
use super::throttle::Throttled;

/// A connection that sends no complete request for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest request head accepted.
pub const MAX_HEAD: usize = 64 * 1024;
/// Largest request body accepted (and ignored).
pub const MAX_REQUEST_BODY: u64 = 1024 * 1024;
/// A TLS handshake must finish within this.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const CHUNK: usize = 4096;

/// What every connection shares.
#[derive(Debug)]
pub struct Server {
    /// The web.
    pub web: Arc<Web>,
    /// The request log.
    pub log: Arc<RequestLog>,
    /// First-byte delay of slow hosts.
    pub slow: Duration,
    /// First-byte delay of every host (`--latency-ms`; zero: none).
    pub latency: Duration,
    /// The throttling hosts (`--throttle`), if on.
    pub throttle: Option<Throttled>,
    /// The revision served (`--revision`, `--change-share`).
    pub revision: Revision,
    /// Per-client pacing (`--pace-per-client`), if on.
    pub pace: Option<Pacer>,
}

/// Accepts connections on `listener` (address `addr_index`) forever; with `tls`,
/// each connection is an https one.
pub async fn accept_loop(
    listener: TcpListener,
    server: Arc<Server>,
    addr_index: u32,
    tls: Option<TlsAcceptor>,
) {
    accept_with(listener, Arc::new(OnAddress { server, addr_index }), tls).await;
}

/// The generated web's server as one address's listener sees it.
struct OnAddress {
    server: Arc<Server>,
    addr_index: u32,
}

impl Connections for OnAddress {
    async fn serve<S>(
        self: Arc<Self>,
        stream: S,
        local: SocketAddr,
        peer: SocketAddr,
        scheme: Scheme,
    ) where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        connection(stream, &self.server, local, peer, self.addr_index, scheme).await;
    }
}

/// What serves the connections [`accept_with`] accepts: the generated web's
/// server (one listener's address) and the disk web's.
pub(crate) trait Connections: Send + Sync + 'static {
    /// Serves `stream` (plain, or after the TLS handshake) from `peer` on `local`
    /// until it closes.
    fn serve<S>(
        self: Arc<Self>,
        stream: S,
        local: SocketAddr,
        peer: SocketAddr,
        scheme: Scheme,
    ) -> impl Future<Output = ()> + Send
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static;
}

/// Accepts connections on `listener` forever, each served by `server` on a task
/// of its own; with `tls`, after the TLS handshake (at most [`HANDSHAKE_TIMEOUT`]).
/// An accept that fails (EMFILE and friends) backs off instead of spinning.
pub(crate) async fn accept_with<C: Connections>(
    listener: TcpListener,
    server: Arc<C>,
    tls: Option<TlsAcceptor>,
) {
    let Ok(local) = listener.local_addr() else {
        return;
    };
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(%local, error = %e, "websim: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let server = Arc::clone(&server);
        let tls = tls.clone();
        tokio::spawn(async move {
            let Some(acceptor) = tls else {
                return server.serve(tcp, local, peer, Scheme::Http).await;
            };
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => server.serve(stream, local, peer, Scheme::Https).await,
                Ok(Err(e)) => {
                    tracing::debug!(%local, %peer, error = %e, "websim: tls handshake failed");
                }
                Err(_) => tracing::debug!(%local, %peer, "websim: tls handshake timed out"),
            }
        });
    }
}

/// Per-connection buffers, reused for every request.
#[derive(Default)]
struct Buffers {
    input: Vec<u8>,
    body: Vec<u8>,
    gz: Vec<u8>,
    out: Vec<u8>,
    scratch: Scratch,
    line: Vec<u8>,
}

/// The parts of a parsed request head websim keeps.
pub(crate) struct Head {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) host: Option<String>,
    pub(crate) user_agent: Option<String>,
    gzip: bool,
    pub(crate) close: bool,
    pub(crate) body_len: u64,
    pub(crate) chunked_body: bool,
    conditional: Conditional,
}

enum Parsed {
    Head(Head, usize),
    Partial,
    Bad(u16),
}

fn parse(input: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let n = match req.parse(input) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::Bad(431),
        Err(_) => return Parsed::Bad(400),
    };
    let version = req.version.unwrap_or(1);
    let mut head = Head {
        method: req.method.unwrap_or("GET").to_owned(),
        target: req.path.unwrap_or("/").to_owned(),
        host: None,
        user_agent: None,
        gzip: false,
        close: version == 0,
        body_len: 0,
        chunked_body: false,
        conditional: Conditional::default(),
    };
    for h in req.headers.iter() {
        let value = String::from_utf8_lossy(h.value);
        let name = h.name;
        if name.eq_ignore_ascii_case("host") {
            head.host = Some(value.into_owned());
        } else if name.eq_ignore_ascii_case("user-agent") {
            head.user_agent = Some(value.into_owned());
        } else if name.eq_ignore_ascii_case("accept-encoding") {
            head.gzip = accepts_gzip(&value);
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    head.close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") && version == 0 {
                    head.close = false;
                }
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            match value.trim().parse() {
                Ok(n) => head.body_len = n,
                Err(_) => return Parsed::Bad(400),
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            head.chunked_body = true;
        } else if name.eq_ignore_ascii_case("if-none-match") {
            head.conditional.if_none_match = Some(value.into_owned());
        } else if name.eq_ignore_ascii_case("if-modified-since") {
            head.conditional.if_modified_since = Some(value.into_owned());
        }
    }
    Parsed::Head(head, n)
}

/// True if an `Accept-Encoding` value accepts gzip.
pub fn accepts_gzip(value: &str) -> bool {
    value.split(',').any(|item| {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or("").trim();
        let q_ok = parts.all(|p| {
            let p = p.trim();
            match p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")) {
                Some(q) => q.trim().parse::<f32>().is_ok_and(|q| q > 0.0),
                None => true,
            }
        });
        q_ok && (coding.eq_ignore_ascii_case("gzip")
            || coding.eq_ignore_ascii_case("x-gzip")
            || coding == "*")
    })
}

/// What reading the next request on a connection gave.
pub(crate) enum Next {
    /// A request head (its small body, if any, already skipped).
    Request(Head),
    /// A request websim refuses with this status, then closes.
    Reject(u16),
    /// The client closed, failed, or sent nothing for [`IDLE_TIMEOUT`].
    Gone,
}

/// Reads the next request head from `stream` into `input` (which keeps bytes of
/// pipelined requests after it) and skips its body.
pub(crate) async fn next_request<S>(stream: &mut S, input: &mut Vec<u8>) -> Next
where
    S: AsyncRead + Unpin,
{
    let (head, used) = loop {
        match parse(input) {
            Parsed::Head(head, used) => break (head, used),
            Parsed::Bad(status) => return Next::Reject(status),
            Parsed::Partial if input.len() > MAX_HEAD => return Next::Reject(431),
            Parsed::Partial => {
                input.reserve(8192);
                match tokio::time::timeout(IDLE_TIMEOUT, stream.read_buf(input)).await {
                    Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Next::Gone,
                    Ok(Ok(_)) => {}
                }
            }
        }
    };
    input.drain(..used);
    if head.chunked_body {
        return Next::Reject(400);
    }
    if head.body_len > MAX_REQUEST_BODY {
        return Next::Reject(413);
    }
    // Skip a (small) request body.
    let mut skip = head.body_len as usize;
    while skip > 0 {
        if input.is_empty() {
            input.reserve(8192);
            match tokio::time::timeout(IDLE_TIMEOUT, stream.read_buf(input)).await {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Next::Gone,
                Ok(Ok(_)) => {}
            }
        }
        let n = skip.min(input.len());
        input.drain(..n);
        skip -= n;
    }
    Next::Request(head)
}

async fn connection<S>(
    mut stream: S,
    server: &Server,
    local: SocketAddr,
    peer: SocketAddr,
    addr_index: u32,
    scheme: Scheme,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut b = Buffers::default();
    loop {
        let head = match next_request(&mut stream, &mut b.input).await {
            Next::Request(head) => head,
            Next::Reject(status) => {
                let _ = error_reply(
                    &mut stream,
                    &server.log,
                    &mut b.line,
                    local,
                    peer,
                    scheme,
                    status,
                )
                .await;
                return;
            }
            Next::Gone => return,
        };
        match respond_one(
            &mut stream,
            server,
            &mut b,
            &head,
            local,
            peer,
            addr_index,
            scheme,
        )
        .await
        {
            Ok(true) if !head.close => {}
            _ => {
                let _ = stream.shutdown().await;
                return;
            }
        }
    }
}

/// Answers one request; returns whether the connection may stay open.
#[allow(clippy::too_many_arguments)]
async fn respond_one<S>(
    stream: &mut S,
    server: &Server,
    b: &mut Buffers,
    head: &Head,
    local: SocketAddr,
    peer: SocketAddr,
    addr_index: u32,
    scheme: Scheme,
) -> io::Result<bool>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let start_us = log::now_us();
    let started = tokio::time::Instant::now();
    let web = &*server.web;
    let req = Request {
        method: &head.method,
        target: &head.target,
        host: head.host.as_deref(),
        scheme,
        addr_index,
    };
    let (host, mut reply) = respond::route(web, &req);
    let mut retry_after = None;
    if let (Some(t), Reply::Page { host, .. }) = (&server.throttle, &reply) {
        if let Some((status, secs)) = t.on_page(*host) {
            retry_after = secs;
            reply = respond::throttled(status);
        }
    }
    let head_only = head.method == "HEAD";
    let mut record = Record {
        start_us,
        end_us: 0,
        write_from_us: 0,
        service_us: 0,
        scheme: scheme.as_str(),
        host: head.host.as_deref(),
        server: local,
        client: peer,
        method: &head.method,
        target: &head.target,
        status: 0,
        bytes: 0,
        user_agent: head.user_agent.as_deref(),
    };
    let page_reply = match reply {
        Reply::Misbehave(m) => {
            record.write_from_us = log::now_us();
            let result = misbehave::serve(stream, m, head_only).await;
            (record.end_us, record.service_us) = (log::now_us(), micros(started.elapsed()));
            if let Ok((status, bytes)) = result {
                record.status = status;
                record.bytes = bytes;
            }
            log_record(server, b, &record);
            return result.map(|_| false);
        }
        reply => reply,
    };
    let mut answer = fill_body(server, b, head, page_reply);
    answer.retry_after = retry_after;
    let status = answer.status;
    let h = host.map(|h| &web.hosts[h as usize]);
    let keep = !head.close && status != 400;
    let sent = frame(b, &answer, h, head, keep)?;
    let delay = if h.is_some_and(|h| h.slow) {
        server.slow.max(server.latency)
    } else {
        server.latency
    };
    if !delay.is_zero() {
        tokio::time::sleep_until(started + delay).await;
    }
    record.write_from_us = log::now_us();
    let result = async {
        write_paced(stream, &b.out, server.pace.as_ref(), peer).await?;
        stream.flush().await
    }
    .await;
    // First thing after the last byte is handed over: the stamps.
    (record.end_us, record.service_us) = (log::now_us(), micros(started.elapsed()));
    record.status = status;
    record.bytes = if result.is_ok() { sent } else { 0 };
    log_record(server, b, &record);
    result.map(|()| keep)
}

/// A request's answer before its framing: status and headers, its body in the
/// buffers.
struct Answer {
    status: u16,
    content_type: &'static str,
    location: Option<String>,
    /// `Retry-After`, in seconds (a throttled page).
    retry_after: Option<u32>,
    /// `ETag` and `Last-Modified` (a page of a host that validates).
    validators: Option<Validators>,
    /// `X-Robots-Tag` lines of a page of `--robots-tags` (CRLF-terminated).
    robots: &'static str,
}

/// Puts the body of `reply` (a page, rendered, or a fixed reply; never a
/// misbehaving one) into `b.body`: a 304 with no body for a page the request's
/// validators match.
fn fill_body(server: &Server, b: &mut Buffers, head: &Head, reply: Reply) -> Answer {
    let web = &*server.web;
    let mut answer = Answer {
        status: 200,
        content_type: "text/html; charset=utf-8",
        location: None,
        retry_after: None,
        validators: None,
        robots: "",
    };
    b.body.clear();
    match reply {
        Reply::Page { host, page } => {
            answer.validators = server.revision.validators(web, host, page);
            if answer
                .validators
                .as_ref()
                .is_some_and(|v| head.conditional.not_modified(v))
            {
                answer.status = 304;
            } else {
                let charset = render_page(web, host, page, &mut b.body, &mut b.scratch);
                answer.robots = web.robots_tag(host, page).map_or("", |t| t.header);
                if server.revision.changed(web, host, page) {
                    mark_changed(&mut b.body, server.revision.number);
                }
                if charset == Charset::Legacy {
                    answer.content_type = "text/html";
                }
            }
        }
        Reply::Fixed {
            status,
            content_type,
            location,
            body,
        } => {
            b.body.extend_from_slice(body.as_bytes());
            (answer.status, answer.content_type, answer.location) =
                (status, content_type, location);
        }
        Reply::Misbehave(_) => {}
    }
    answer
}

/// Writes the response of `answer` into `b.out`: its head, then its body from
/// `b.body` (none for HEAD), gzipped and chunked as host `h` does. Returns the
/// body bytes it holds.
fn frame(
    b: &mut Buffers,
    answer: &Answer,
    h: Option<&Host>,
    head: &Head,
    keep: bool,
) -> io::Result<u64> {
    let status = answer.status;
    let gzip_host = h.is_some_and(|h| h.gzip);
    let gzip = gzip_host && head.gzip && !b.body.is_empty();
    // A 304 has no body: no chunked framing, no Content-Length of a body.
    let chunked = h.is_some_and(|h| h.chunked) && status != 304;
    if gzip {
        b.gz.clear();
        let mut enc = GzEncoder::new(std::mem::take(&mut b.gz), Compression::fast());
        enc.write_all(&b.body)?;
        b.gz = enc.finish()?;
        std::mem::swap(&mut b.body, &mut b.gz);
    }
    b.out.clear();
    let out = &mut b.out;
    write!(
        out,
        "HTTP/1.1 {status} {}\r\nServer: websim\r\nContent-Type: {}\r\n",
        respond::reason(status),
        answer.content_type
    )?;
    if let Some(loc) = &answer.location {
        write!(out, "Location: {loc}\r\n")?;
    }
    if status == 405 {
        out.extend_from_slice(b"Allow: GET, HEAD\r\n");
    }
    if let Some(secs) = answer.retry_after {
        write!(out, "Retry-After: {secs}\r\n")?;
    }
    out.extend_from_slice(answer.robots.as_bytes());
    if let Some(v) = &answer.validators {
        write!(
            out,
            "ETag: {}\r\nLast-Modified: {}\r\n",
            v.etag,
            httpdate::fmt_http_date(v.modified)
        )?;
    }
    if gzip_host {
        out.extend_from_slice(b"Vary: Accept-Encoding\r\n");
    }
    if gzip {
        out.extend_from_slice(b"Content-Encoding: gzip\r\n");
    }
    if chunked {
        out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
    } else if status != 304 {
        write!(out, "Content-Length: {}\r\n", b.body.len())?;
    }
    out.extend_from_slice(if keep {
        b"Connection: keep-alive\r\n\r\n"
    } else {
        b"Connection: close\r\n\r\n"
    });
    if head.method == "HEAD" {
        return Ok(0);
    }
    if chunked {
        for chunk in b.body.chunks(CHUNK) {
            write!(out, "{:x}\r\n", chunk.len())?;
            out.extend_from_slice(chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        out.extend_from_slice(&b.body);
    }
    Ok(b.body.len() as u64)
}

/// Writes `out`, with `pace` in pieces of at most [`PACE_CHUNK`] bytes, each after
/// the client's pacer allows it.
pub(crate) async fn write_paced<S>(
    stream: &mut S,
    out: &[u8],
    pace: Option<&Pacer>,
    peer: SocketAddr,
) -> io::Result<()>
where
    S: AsyncWrite + Unpin,
{
    let Some(pacer) = pace else {
        return stream.write_all(out).await;
    };
    for piece in out.chunks(PACE_CHUNK) {
        pacer.wait(peer.ip(), piece.len()).await;
        stream.write_all(piece).await?;
    }
    Ok(())
}

/// Whole microseconds of `d`.
pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn log_record(server: &Server, b: &mut Buffers, record: &Record<'_>) {
    b.line.clear();
    log::format_line(&mut b.line, record);
    server.log.append(&b.line);
}

/// Sends a small error response (and logs it to `log`, formatting into `line`)
/// before the connection is closed.
pub(crate) async fn error_reply<S>(
    stream: &mut S,
    log: &RequestLog,
    line: &mut Vec<u8>,
    local: SocketAddr,
    peer: SocketAddr,
    scheme: Scheme,
    status: u16,
) -> io::Result<()>
where
    S: AsyncWrite + Unpin,
{
    let start_us = log::now_us();
    let started = tokio::time::Instant::now();
    let body = format!("{status} {}\n", respond::reason(status));
    let msg = format!(
        "HTTP/1.1 {status} {}\r\nServer: websim\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        respond::reason(status),
        body.len()
    );
    let write_from_us = log::now_us();
    let result = stream.write_all(msg.as_bytes()).await;
    let (end_us, service_us) = (log::now_us(), micros(started.elapsed()));
    let _ = stream.shutdown().await;
    let record = Record {
        start_us,
        end_us,
        write_from_us,
        service_us,
        scheme: scheme.as_str(),
        host: None,
        server: local,
        client: peer,
        method: "-",
        target: "-",
        status,
        bytes: body.len() as u64,
        user_agent: None,
    };
    line.clear();
    log::format_line(line, &record);
    log.append(line);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_encoding() {
        assert!(accepts_gzip("gzip"));
        assert!(accepts_gzip("deflate, gzip;q=0.5"));
        assert!(accepts_gzip("br, *"));
        assert!(!accepts_gzip("gzip;q=0"));
        assert!(!accepts_gzip("deflate, br"));
        assert!(!accepts_gzip("identity"));
    }

    #[test]
    fn parses_heads() {
        let raw = b"GET /a?b=1 HTTP/1.1\r\nHost: x.test\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\nGET";
        let Parsed::Head(h, n) = parse(raw) else {
            panic!()
        };
        assert_eq!(
            (h.method.as_str(), h.target.as_str(), h.host.as_deref()),
            ("GET", "/a?b=1", Some("x.test"))
        );
        assert!(h.gzip && h.close);
        assert_eq!(&raw[n..], b"GET");
        assert!(matches!(parse(b"GET / HTTP/1.1\r\nHost"), Parsed::Partial));
        assert!(matches!(
            parse(b"\x16\x03\x01garbage\r\n\r\n"),
            Parsed::Bad(400)
        ));
        let Parsed::Head(h, _) = parse(b"GET / HTTP/1.0\r\n\r\n") else {
            panic!()
        };
        assert!(h.close);
        let Parsed::Head(h, _) = parse(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n") else {
            panic!()
        };
        assert!(!h.close);
    }
}
