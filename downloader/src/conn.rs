//! One connection: a TCP stream, possibly wrapped in TLS, that counts the bytes it
//! moves on the wire.
//!
//! [`connect`] opens a socket to exactly the address it is given (it never resolves a
//! name; the address policy has already been applied by the caller), or to a proxy
//! and through its handshake to the target (`crate::proxy`), and, for https, runs
//! the TLS handshake with SNI set to the URL's host, end to end with the target;
//! all steps together are bounded by the connect timeout. What ALPN chose
//! ([`Conn::is_h2`]) decides whether the fetcher speaks HTTP/2 on it. Byte counts are taken below TLS, so they are the
//! bytes that crossed the network, record framing and handshake included.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::error::FetchError;
use crate::proxy::{self, OpenParams};

/// Bytes moved on one connection, shared with whoever drives it (an HTTP/2
/// connection runs on a task of its own that owns the stream).
#[derive(Debug, Default)]
pub(crate) struct WireCount {
    read: AtomicU64,
    written: AtomicU64,
}

impl WireCount {
    /// (sent, received) so far.
    pub(crate) fn get(&self) -> (u64, u64) {
        (
            self.written.load(Ordering::Relaxed),
            self.read.load(Ordering::Relaxed),
        )
    }
}

/// A TCP stream that counts bytes read and written.
#[derive(Debug)]
pub(crate) struct Counted {
    inner: TcpStream,
    count: Arc<WireCount>,
}

impl Counted {
    fn new(inner: TcpStream) -> Self {
        Self {
            inner,
            count: Arc::default(),
        }
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        self.count.read.fetch_add(n, Ordering::Relaxed);
        poll
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = poll {
            self.count.written.fetch_add(n as u64, Ordering::Relaxed);
        }
        poll
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A plain or TLS connection.
#[derive(Debug)]
pub(crate) enum Conn {
    /// http.
    Plain(Counted),
    /// https; boxed because the TLS state is large.
    Tls(Box<TlsStream<Counted>>),
}

impl Conn {
    /// Wraps an open TCP stream.
    #[cfg(test)]
    pub(crate) fn plain(tcp: TcpStream) -> Self {
        Self::Plain(Counted::new(tcp))
    }

    /// Bytes (sent, received) on the wire since the connection was opened.
    pub(crate) fn wire_bytes(&self) -> (u64, u64) {
        self.counter().get()
    }

    /// The connection's byte counter (it outlives a move of the stream).
    pub(crate) fn counter(&self) -> Arc<WireCount> {
        let c = match self {
            Self::Plain(c) => c,
            Self::Tls(t) => t.get_ref().0,
        };
        Arc::clone(&c.count)
    }

    /// Whether TLS negotiated HTTP/2 through ALPN.
    pub(crate) fn is_h2(&self) -> bool {
        match self {
            Self::Plain(_) => false,
            Self::Tls(t) => t.get_ref().1.alpn_protocol() == Some(b"h2"),
        }
    }

    /// The negotiated TLS version as a `WARC-Protocol` value (`tls/1.3`), `None`
    /// for plain http.
    pub(crate) fn tls_protocol(&self) -> Option<&'static str> {
        match self {
            Self::Plain(_) => None,
            Self::Tls(t) => match t.get_ref().1.protocol_version()? {
                rustls::ProtocolVersion::TLSv1_3 => Some("tls/1.3"),
                rustls::ProtocolVersion::TLSv1_2 => Some("tls/1.2"),
                _ => None,
            },
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(c) => Pin::new(c).poll_read(cx, buf),
            Self::Tls(t) => Pin::new(t.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(c) => Pin::new(c).poll_write(cx, buf),
            Self::Tls(t) => Pin::new(t.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(c) => Pin::new(c).poll_flush(cx),
            Self::Tls(t) => Pin::new(t.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(c) => Pin::new(c).poll_shutdown(cx),
            Self::Tls(t) => Pin::new(t.as_mut()).poll_shutdown(cx),
        }
    }
}

/// What a TLS connection needs besides the address.
pub(crate) struct TlsParams<'a> {
    pub connector: &'a TlsConnector,
    pub server_name: ServerName<'static>,
    pub host: &'a str,
}

/// Opens a connection to `addr` (directly, or through the proxy of `via`), TLS if
/// `tls` is given, within `timeout`.
pub(crate) async fn connect(
    addr: SocketAddr,
    via: Option<OpenParams<'_>>,
    tls: Option<TlsParams<'_>>,
    timeout: Duration,
) -> Result<Conn, FetchError> {
    let attempt = async {
        let counted = match via {
            None => {
                let tcp = TcpStream::connect(addr)
                    .await
                    .map_err(|source| FetchError::Connect { addr, source })?;
                // One write per request: no reason to let Nagle delay it.
                let _ = tcp.set_nodelay(true);
                Counted::new(tcp)
            }
            Some(p) => {
                let mut counted = Counted::new(proxy::connect_proxy(p.proxy).await?);
                proxy::handshake(&mut counted, &p).await?;
                counted
            }
        };
        match tls {
            None => Ok(Conn::Plain(counted)),
            Some(p) => p
                .connector
                .connect(p.server_name, counted)
                .await
                .map(|s| Conn::Tls(Box::new(s)))
                .map_err(|source| FetchError::Tls {
                    host: p.host.to_owned(),
                    source,
                }),
        }
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or(Err(FetchError::ConnectTimeout {
            addr,
            after: timeout,
        }))
}
