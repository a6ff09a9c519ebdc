//! Serving the disk web over HTTP/1.1: the same connection handling as the
//! generated web ([`crate::http`]: keep-alive, pipelining, timeouts, refusals, the
//! request log, pacing), answering from the stored crawl.
//!
//! Rules, in order:
//! 1. No `Host` header: 400. A host the stored crawl does not have, or one that
//!    lives on another address: 421.
//! 2. Methods other than GET and HEAD: 405.
//! 3. The URL `scheme://host[:port]target` (the listener's scheme and port, the
//!    default port omitted, as the crawler stores URLs) stored: its response as
//!    stored, status line, headers and body byte for byte (chunked framing and
//!    content coding as they were received: the stored `Content-Encoding` is sent
//!    whatever the request's `Accept-Encoding` says), except the `Connection` and
//!    `Keep-Alive` headers, which are websim's own. robots.txt is a URL like any
//!    other: served as stored, 404 where none was stored.
//! 4. Anything else: websim's 404 page.
//! 5. A stored record that cannot be read back: 500, and a warning in websim's log.
//!
//! Reading a record is blocking file I/O and runs on tokio's blocking threads.
//! Memory per connection: its input buffer and the response being written.

use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::index::DiskWeb;
use crate::http::{
    Connections, Head, Next, accept_with, error_reply, micros, next_request, write_paced,
};
use crate::log::{self, Record, RequestLog};
use crate::pace::Pacer;
use crate::respond::{self, Body, Reply, Scheme, host_name};

/// What every connection of the disk web shares.
#[derive(Debug)]
pub struct DiskServer {
    /// The stored crawl.
    pub web: Arc<DiskWeb>,
    /// The request log.
    pub log: Arc<RequestLog>,
    /// Per-client pacing (`--pace-per-client`), if on.
    pub pace: Option<Pacer>,
}

/// Accepts connections on `listener` (the address of host `host`, or of several)
/// forever; with `tls`, each connection is an https one.
pub async fn accept_loop(listener: TcpListener, server: Arc<DiskServer>, tls: Option<TlsAcceptor>) {
    accept_with(listener, server, tls).await;
}

impl Connections for DiskServer {
    async fn serve<S>(
        self: Arc<Self>,
        stream: S,
        local: SocketAddr,
        peer: SocketAddr,
        scheme: Scheme,
    ) where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        connection(stream, &self, local, peer, scheme).await;
    }
}

async fn connection<S>(
    mut stream: S,
    server: &DiskServer,
    local: SocketAddr,
    peer: SocketAddr,
    scheme: Scheme,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut input = Vec::new();
    let mut out = Vec::new();
    let mut line = Vec::new();
    loop {
        let head = match next_request(&mut stream, &mut input).await {
            Next::Request(head) => head,
            Next::Reject(status) => {
                let _ = error_reply(
                    &mut stream,
                    &server.log,
                    &mut line,
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
        let keep = respond_one(
            &mut stream,
            server,
            &head,
            local,
            peer,
            scheme,
            &mut out,
            &mut line,
        )
        .await;
        if !matches!(keep, Ok(true)) || head.close {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// What a request gets: a stored response block, or a reply of websim's own.
enum Answer {
    Stored(Vec<u8>),
    Own(Reply),
}

/// Routes a request (rules 1 to 4 of the module docs; the stored block is read
/// for rule 3).
async fn route(web: &Arc<DiskWeb>, head: &Head, local: SocketAddr, scheme: Scheme) -> Answer {
    let Some(header) = head.host.as_deref() else {
        return Answer::Own(fixed(400, b"missing Host header\n"));
    };
    let name = host_name(header);
    let misdirected = || Answer::Own(fixed(421, b"websim does not serve this host here\n"));
    let Some(h) = web.host_by_name(&name) else {
        return misdirected();
    };
    if std::net::IpAddr::V4(web.hosts[h as usize].addr) != local.ip() {
        return misdirected();
    }
    if head.method != "GET" && head.method != "HEAD" {
        return Answer::Own(fixed(405, b"GET and HEAD only\n"));
    }
    let url = DiskWeb::request_url(scheme, &name, local.port(), &head.target);
    let Some(&stored) = web.urls.get(&url) else {
        return Answer::Own(respond::not_found());
    };
    let reader = Arc::clone(web);
    let read = tokio::task::spawn_blocking(move || reader.read_block(&url, &stored)).await;
    match read {
        Ok(Ok(block)) => Answer::Stored(block),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "websim: a stored record could not be read back");
            Answer::Own(fixed(500, b"the stored record could not be read\n"))
        }
        Err(e) => {
            tracing::warn!(error = %e, "websim: reading a stored record failed");
            Answer::Own(fixed(500, b"the stored record could not be read\n"))
        }
    }
}

fn fixed(status: u16, body: &'static [u8]) -> Reply {
    Reply::Fixed {
        status,
        content_type: "text/plain; charset=utf-8",
        location: None,
        body: Body::Static(body),
    }
}

/// Answers one request; returns whether the connection may stay open.
#[allow(clippy::too_many_arguments)]
async fn respond_one<S>(
    stream: &mut S,
    server: &DiskServer,
    head: &Head,
    local: SocketAddr,
    peer: SocketAddr,
    scheme: Scheme,
    out: &mut Vec<u8>,
    line: &mut Vec<u8>,
) -> io::Result<bool>
where
    S: AsyncWrite + Unpin,
{
    let start_us = log::now_us();
    let started = tokio::time::Instant::now();
    let head_only = head.method == "HEAD";
    let keep = !head.close;
    out.clear();
    let (status, body_len) = match route(&server.web, head, local, scheme).await {
        Answer::Stored(block) => stored_response(out, &block, keep, head_only),
        Answer::Own(reply) => own_response(out, &reply, keep, head_only)?,
    };
    let keep = keep && status != 400;
    let write_from_us = log::now_us();
    let result = async {
        write_paced(stream, out, server.pace.as_ref(), peer).await?;
        stream.flush().await
    }
    .await;
    let (end_us, service_us) = (log::now_us(), micros(started.elapsed()));
    let record = Record {
        start_us,
        end_us,
        write_from_us,
        service_us,
        scheme: scheme.as_str(),
        host: head.host.as_deref(),
        server: local,
        client: peer,
        method: &head.method,
        target: &head.target,
        status,
        bytes: if result.is_ok() { body_len } else { 0 },
        user_agent: head.user_agent.as_deref(),
    };
    line.clear();
    log::format_line(line, &record);
    server.log.append(line);
    result.map(|()| keep)
}

/// Writes a stored response block into `out`: its head without `Connection` and
/// `Keep-Alive`, websim's `Connection`, then the body unless `head_only`. Returns
/// the status and the body bytes written.
pub fn stored_response(out: &mut Vec<u8>, block: &[u8], keep: bool, head_only: bool) -> (u16, u64) {
    let status = super::index::block_status(block);
    let split = block
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(block.len(), |i| i + 4);
    let (stored_head, body) = block.split_at(split);
    let head_text = stored_head.strip_suffix(b"\r\n\r\n").unwrap_or(stored_head);
    for field in head_text.split(|&b| b == b'\n') {
        let field = field.strip_suffix(b"\r").unwrap_or(field);
        let name = field.split(|&b| b == b':').next().unwrap_or_default();
        if name.eq_ignore_ascii_case(b"connection") || name.eq_ignore_ascii_case(b"keep-alive") {
            continue;
        }
        out.extend_from_slice(field);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(if keep {
        b"Connection: keep-alive\r\n\r\n"
    } else {
        b"Connection: close\r\n\r\n"
    });
    if head_only {
        return (status, 0);
    }
    out.extend_from_slice(body);
    (status, body.len() as u64)
}

/// Writes one of websim's own replies (a 404, 421 and the like) into `out`.
fn own_response(
    out: &mut Vec<u8>,
    reply: &Reply,
    keep: bool,
    head_only: bool,
) -> io::Result<(u16, u64)> {
    let Reply::Fixed {
        status,
        content_type,
        body,
        ..
    } = reply
    else {
        return Err(io::Error::other("the disk web answers fixed replies only"));
    };
    let body = body.as_bytes();
    write!(
        out,
        "HTTP/1.1 {status} {}\r\nServer: websim\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{}\r\n",
        respond::reason(*status),
        body.len(),
        if keep && *status != 400 {
            "Connection: keep-alive\r\n"
        } else {
            "Connection: close\r\n"
        }
    )?;
    if head_only {
        return Ok((*status, 0));
    }
    out.extend_from_slice(body);
    Ok((*status, body.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_responses_keep_everything_but_the_connection_headers() {
        let block = b"HTTP/1.1 200 OK\r\nServer: websim\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let mut out = Vec::new();
        let (status, n) = stored_response(&mut out, block, false, false);
        assert_eq!((status, n), (200, 13));
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nServer: websim\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        );
        out.clear();
        let redirect = b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://a.test/\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(stored_response(&mut out, redirect, true, true), (301, 0));
        assert_eq!(
            out,
            b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://a.test/\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
        );
    }

    #[test]
    fn own_replies_have_a_length_and_websims_connection() {
        let mut out = Vec::new();
        let (status, n) = own_response(&mut out, &respond::not_found(), true, false).unwrap();
        assert_eq!(status, 404);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"), "{text}");
        assert!(text.contains(&format!("Content-Length: {n}\r\n")), "{text}");
        assert!(text.contains("Connection: keep-alive\r\n\r\n"), "{text}");
    }
}
