//! One connection: a TCP stream, possibly wrapped in TLS, that counts the bytes it
//! moves on the wire.
//!
//! [`connect`] opens a socket to exactly the address it is given (it never resolves a
//! name; the address policy has already been applied by the caller), or to a proxy
//! and through its handshake to the target (`crate::proxy`), and, for https, runs
//! the TLS handshake with SNI set to the URL's host, end to end with the target;
//! all steps together are bounded by the connect timeout. Byte counts are taken below TLS, so they are the
//! bytes that crossed the network, record framing and handshake included.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::error::FetchError;
use crate::proxy::{self, OpenParams};

/// A TCP stream that counts bytes read and written.
#[derive(Debug)]
pub(crate) struct Counted {
    inner: TcpStream,
    read: u64,
    written: u64,
}

impl Counted {
    fn new(inner: TcpStream) -> Self {
        Self {
            inner,
            read: 0,
            written: 0,
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
        self.read += (buf.filled().len() - before) as u64;
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
            self.written += n as u64;
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
        let c = match self {
            Self::Plain(c) => c,
            Self::Tls(t) => t.get_ref().0,
        };
        (c.written, c.read)
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
