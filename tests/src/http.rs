//! A small HTTP/1.1 client for tests: one request per connection
//! (`Connection: close`), plain or TLS trusting only a given CA, the response read
//! to the end and decoded (chunked, gzip). It is deliberately independent of the
//! crawler's downloader, so tests can check websim and the downloader against it.
//! [`pipelined_bytes`] measures what a paced server gives one client address.

use std::io::{self, Read};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Whole-request timeout.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Responses larger than this are an error (tests never need more).
pub const MAX_RESPONSE: usize = 8 * 1024 * 1024;

/// A response, read to the end.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Header lines in order (names as sent).
    pub headers: Vec<(String, String)>,
    /// The body as sent, after removing chunked framing.
    pub raw_body: Vec<u8>,
    /// The body after content decoding (gzip).
    pub body: Vec<u8>,
    /// Time from sending the request to the first response byte.
    pub first_byte: Duration,
}

impl Response {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A client; `tls` is used for `https` requests.
#[derive(Debug, Clone)]
pub struct Client {
    tls: Option<Arc<ClientConfig>>,
    /// `User-Agent` sent with every request.
    pub user_agent: String,
}

/// A rustls client config trusting only the CA certificates in `ca_pem`.
pub fn client_config(ca_pem: &str) -> io::Result<Arc<ClientConfig>> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots
            .add(cert.map_err(io::Error::other)?)
            .map_err(io::Error::other)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

impl Client {
    /// A client for plain http only.
    pub fn plain() -> Client {
        Client {
            tls: None,
            user_agent: "polycrawl-tests/0.1".to_owned(),
        }
    }

    /// A client that also speaks https, trusting only `ca_pem`.
    pub fn trusting(ca_pem: &str) -> io::Result<Client> {
        Ok(Client {
            tls: Some(client_config(ca_pem)?),
            ..Client::plain()
        })
    }

    /// GET `target` from `addr` with `Host: host` (`host` may carry a port); the
    /// TLS server name is `host` without its port.
    pub async fn get(
        &self,
        addr: SocketAddr,
        https: bool,
        host: &str,
        target: &str,
        extra: &[(&str, &str)],
    ) -> io::Result<Response> {
        self.request(addr, https, "GET", host, target, extra).await
    }

    /// GET an absolute `url` from `addr`.
    pub async fn get_url(
        &self,
        addr: SocketAddr,
        url: &str,
        extra: &[(&str, &str)],
    ) -> io::Result<Response> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| io::Error::other("not an absolute URL"))?;
        let split = rest.find('/').unwrap_or(rest.len());
        let (authority, target) = rest.split_at(split);
        let target = if target.is_empty() { "/" } else { target };
        let target = target.split('#').next().unwrap_or("/");
        self.get(
            addr,
            scheme.eq_ignore_ascii_case("https"),
            authority,
            target,
            extra,
        )
        .await
    }

    /// Any method.
    pub async fn request(
        &self,
        addr: SocketAddr,
        https: bool,
        method: &str,
        host: &str,
        target: &str,
        extra: &[(&str, &str)],
    ) -> io::Result<Response> {
        self.send(addr, https, method, host, target, extra, b"")
            .await
    }

    /// Any method with a body (sent with its `Content-Length` unless empty).
    #[allow(clippy::too_many_arguments)]
    pub async fn send(
        &self,
        addr: SocketAddr,
        https: bool,
        method: &str,
        host: &str,
        target: &str,
        extra: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Response> {
        let mut head = format!(
            "{method} {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {}\r\nConnection: close\r\n",
            self.user_agent
        );
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut head = head.into_bytes();
        head.extend_from_slice(body);
        let fut = async {
            let tcp = TcpStream::connect(addr).await?;
            tcp.set_nodelay(true)?;
            if https {
                let tls = self
                    .tls
                    .as_ref()
                    .ok_or_else(|| io::Error::other("no CA configured for https"))?;
                let name = host.rsplit_once(':').map_or(host, |(n, _)| n).to_owned();
                let name = ServerName::try_from(name).map_err(io::Error::other)?;
                let stream = TlsConnector::from(Arc::clone(tls))
                    .connect(name, tcp)
                    .await?;
                exchange(stream, &head, method == "HEAD").await
            } else {
                exchange(tcp, &head, method == "HEAD").await
            }
        };
        tokio::time::timeout(TIMEOUT, fut).await.map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("GET {host}{target} timed out"),
            )
        })?
    }
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    head: &[u8],
    head_only: bool,
) -> io::Result<Response> {
    // Stamped before the write: the server may read the request (and start its
    // clock) before this task runs again after the write, so a stamp taken after
    // it could make a server-side delay look shorter than it was.
    let sent = Instant::now();
    s.write_all(head).await?;
    s.flush().await?;
    let mut buf = Vec::with_capacity(32 * 1024);
    let mut first_byte = None;
    loop {
        buf.reserve(16 * 1024);
        let n = match s.read_buf(&mut buf).await {
            Ok(n) => n,
            // A TLS peer that closes without close_notify: treat as the end.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        first_byte.get_or_insert_with(|| sent.elapsed());
        if buf.len() > MAX_RESPONSE {
            return Err(io::Error::other("response too large for the test client"));
        }
    }
    parse_response(&buf, head_only, first_byte.unwrap_or_default())
}

/// Parses a complete response (`bytes` read to the end of the connection).
pub fn parse_response(bytes: &[u8], head_only: bool, first_byte: Duration) -> io::Result<Response> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut resp = httparse::Response::new(&mut headers);
    let n = match resp.parse(bytes).map_err(io::Error::other)? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return Err(io::Error::other("incomplete response head")),
    };
    let status = resp.code.unwrap_or(0);
    let headers: Vec<(String, String)> = resp
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_owned(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let rest = &bytes[n..];
    let raw_body = if head_only {
        Vec::new()
    } else if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        dechunk(rest)?
    } else if let Some(len) = find("content-length") {
        let len: usize = len.trim().parse().map_err(io::Error::other)?;
        if rest.len() < len {
            return Err(io::Error::other(format!(
                "body has {} of {len} bytes",
                rest.len()
            )));
        }
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    let body = if find("content-encoding").is_some_and(|v| v.eq_ignore_ascii_case("gzip")) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw_body[..]).read_to_end(&mut out)?;
        out
    } else {
        raw_body.clone()
    };
    Ok(Response {
        status,
        headers,
        raw_body,
        body,
        first_byte,
    })
}

/// Removes chunked framing (strictly: sizes in hex, CRLF after each chunk, a final
/// zero-size chunk).
pub fn dechunk(mut rest: &[u8]) -> io::Result<Vec<u8>> {
    let bad = |what: &str| io::Error::other(format!("bad chunked body: {what}"));
    let mut out = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| bad("no size line"))?;
        let size_text = std::str::from_utf8(&rest[..line_end]).map_err(|_| bad("size"))?;
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| bad("size"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if rest.len() < size + 2 || &rest[size..size + 2] != b"\r\n" {
            return Err(bad("chunk data"));
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// Bytes of responses a client at `source` (a 127.0.0.0/8 address to bind)
/// receives from `server` in `window` over `connections` keep-alive connections,
/// each asking for `/` of host `authority` again and again (requests pipelined by
/// a writer task beside the reader), per connection: what a paced server gives
/// one client address.
///
/// # Panics
/// If a connection cannot be made.
pub async fn pipelined_bytes(
    source: std::net::Ipv4Addr,
    server: SocketAddr,
    authority: &str,
    connections: usize,
    window: Duration,
) -> Vec<u64> {
    let request = format!("GET / HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    let deadline = tokio::time::Instant::now() + window;
    let mut readers = Vec::new();
    for _ in 0..connections {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind(SocketAddr::from((source, 0)))
            .unwrap_or_else(|e| panic!("binding {source}: {e}"));
        let stream = socket
            .connect(server)
            .await
            .unwrap_or_else(|e| panic!("connecting to {server}: {e}"));
        let (mut rd, mut wr) = stream.into_split();
        let request = request.clone();
        let writer = tokio::spawn(async move {
            for _ in 0..5000 {
                if wr.write_all(request.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
        readers.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = 0u64;
            while let Ok(Ok(n)) = tokio::time::timeout_at(deadline, rd.read(&mut buf)).await {
                if n == 0 {
                    break;
                }
                got += n as u64;
            }
            writer.abort();
            got
        }));
    }
    let mut got = Vec::new();
    for r in readers {
        got.push(r.await.expect("a reader task"));
    }
    got
}
