//! Two small real proxies for tests of crawling through a proxy: an HTTP proxy
//! ([`Kind::Http`]: absolute-form requests forwarded in origin form, `CONNECT`
//! tunnels) and a SOCKS5 server ([`Kind::Socks5`]: no authentication or user and
//! password, `CONNECT` to an IPv4 address, an IPv6 address or a domain name).
//!
//! Each listens on 127.0.0.1 (a port of the kernel's choosing) and opens its
//! outgoing connections from the address the test names ([`ProxyOptions::outgoing`],
//! e.g. 127.0.0.3), so a server's log shows which requests came through the proxy.
//! Names are resolved from the test's table ([`ProxyOptions::names`]: websim's
//! hosts), IP literals as they are. Every forwarded request (HTTP) or connection
//! (`CONNECT`, SOCKS5) is recorded with its target ([`TestProxy::forwarded`]), and
//! everything refused with a reason ([`TestProxy::refusals`]).
//!
//! A plain-http client connection is bound to the first origin it asks for (as the
//! downloader keeps one connection per origin through a proxy): a request for
//! another origin on it is refused and recorded. A destination that cannot be
//! reached gets `502` with `Proxy-Status: ...; error=destination_unavailable` (RFC
//! 9209), or SOCKS5 reply 5 (refused) / 4 (unknown name).
//!
//! What it must never do: connect anywhere outside 127.0.0.0/8 (a name or address
//! outside it is refused), or outlive its [`TestProxy`] (dropping it stops the
//! runtime and closes every connection). Memory: one record per forwarded request.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::runtime::Runtime;

/// Which protocol the proxy speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// HTTP/1.1 proxy: absolute-form requests and `CONNECT`.
    Http,
    /// SOCKS5 (RFC 1928, RFC 1929).
    Socks5,
}

/// How to start a [`TestProxy`].
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// HTTP or SOCKS5.
    pub kind: Kind,
    /// The address outgoing connections are opened from (in 127.0.0.0/8).
    pub outgoing: Ipv4Addr,
    /// Names the proxy resolves (lower-case), e.g. websim's hosts.
    pub names: HashMap<String, IpAddr>,
    /// User and password the proxy demands; `None`: no authentication.
    pub auth: Option<(String, String)>,
}

/// One request (HTTP absolute form) or connection (`CONNECT`, SOCKS5) forwarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarded {
    /// The client's address.
    pub client: SocketAddr,
    /// `GET`/`HEAD` (forwarded request), `CONNECT` or `SOCKS5`.
    pub what: String,
    /// The target as the client named it: `host:port`.
    pub target: String,
    /// For SOCKS5: whether the client sent a domain name (not an address).
    pub by_name: bool,
    /// The address connected to.
    pub upstream: SocketAddr,
}

#[derive(Debug, Default)]
struct Log {
    forwarded: Vec<Forwarded>,
    refusals: Vec<String>,
}

/// A running proxy; stopped on drop.
#[derive(Debug)]
pub struct TestProxy {
    addr: SocketAddr,
    kind: Kind,
    log: Arc<Mutex<Log>>,
    runtime: Option<Runtime>,
}

struct Shared {
    opts: ProxyOptions,
    log: Arc<Mutex<Log>>,
}

impl Shared {
    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refuse(&self, why: String) {
        self.log().refusals.push(why);
    }

    /// The loopback address `host` names (a table name or an IP literal).
    fn resolve(&self, host: &str) -> Option<IpAddr> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let ip = host
            .parse::<IpAddr>()
            .ok()
            .or_else(|| self.opts.names.get(&host.to_ascii_lowercase()).copied())?;
        ip.is_loopback().then_some(ip)
    }

    async fn connect(&self, ip: IpAddr, port: u16) -> io::Result<TcpStream> {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(IpAddr::V4(self.opts.outgoing), 0))?;
        let tcp = socket.connect(SocketAddr::new(ip, port)).await?;
        tcp.set_nodelay(true)?;
        Ok(tcp)
    }
}

impl TestProxy {
    /// Starts the proxy on 127.0.0.1 with a runtime of its own.
    pub fn start(opts: ProxyOptions) -> io::Result<TestProxy> {
        if !opts.outgoing.is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("outgoing address {} is not loopback", opts.outgoing),
            ));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-proxy")
            .enable_all()
            .build()?;
        // Bound here, outside any runtime, so a test may start a proxy from inside
        // its own runtime too.
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let log = Arc::new(Mutex::new(Log::default()));
        let kind = opts.kind;
        let shared = Arc::new(Shared {
            opts,
            log: Arc::clone(&log),
        });
        runtime.spawn(async move {
            let Ok(listener) = TcpListener::from_std(std_listener) else {
                return;
            };
            while let Ok((client, peer)) = listener.accept().await {
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let _ = client.set_nodelay(true);
                    let result = match shared.opts.kind {
                        Kind::Http => http_client(&shared, client, peer).await,
                        Kind::Socks5 => socks_client(&shared, client, peer).await,
                    };
                    if let Err(e) = result {
                        shared.refuse(format!("{peer}: {e}"));
                    }
                });
            }
        });
        Ok(TestProxy {
            addr,
            kind,
            log,
            runtime: Some(runtime),
        })
    }

    /// Where the proxy listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The proxy URL for the downloader's config (`http://` or `socks5h://` when
    /// `proxy_resolves`, else `socks5://`), with `auth` credentials if given.
    pub fn url(&self, proxy_resolves: bool, auth: Option<(&str, &str)>) -> String {
        let scheme = match (self.kind, proxy_resolves) {
            (Kind::Http, _) => "http",
            (Kind::Socks5, true) => "socks5h",
            (Kind::Socks5, false) => "socks5",
        };
        let creds = auth.map(|(u, p)| format!("{u}:{p}@")).unwrap_or_default();
        format!("{scheme}://{creds}{}", self.addr)
    }

    /// Everything forwarded so far, in order.
    pub fn forwarded(&self) -> Vec<Forwarded> {
        self.lock().forwarded.clone()
    }

    /// Everything refused or failed so far, with the reason.
    pub fn refusals(&self) -> Vec<String> {
        self.lock().refusals.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Reads one request head into `buf` (which may hold bytes already); returns its
/// length, or `None` at a clean EOF before any byte.
async fn read_head(client: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<Option<usize>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok(Some(end + 4));
        }
        if buf.len() > 64 * 1024 {
            return Err(bad("request head over 64 KiB".into()));
        }
        let mut chunk = [0u8; 4096];
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(bad("EOF inside a request head".into()))
            };
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Splits `host:port` (IPv6 bracketed).
fn host_port(s: &str) -> Option<(String, u16)> {
    let (host, port) = s.rsplit_once(':')?;
    Some((host.to_ascii_lowercase(), port.parse().ok()?))
}

fn basic(user: &str, pass: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let input = format!("{user}:{pass}").into_bytes();
    let mut out = String::new();
    for c in input.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    format!("Basic {out}")
}

const UNAVAILABLE: &str = "HTTP/1.1 502 Bad Gateway\r\nProxy-Status: test-proxy; \
error=destination_unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// One parsed request head.
struct Request {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
}

impl Request {
    fn parse(head: &[u8]) -> Request {
        let text = String::from_utf8_lossy(head);
        let mut lines = text.split("\r\n");
        let mut parts = lines.next().unwrap_or_default().split(' ');
        let mut part = || parts.next().unwrap_or_default().to_owned();
        let (method, target, version) = (part(), part(), part());
        let headers = lines
            .filter(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Request {
            method,
            target,
            version,
            headers,
        }
    }

    /// Whether the request carries the credentials `shared` demands (if any).
    fn authorized(&self, shared: &Shared) -> bool {
        let Some((user, pass)) = &shared.opts.auth else {
            return true;
        };
        let given = self
            .headers
            .iter()
            .find(|(n, _)| n == "proxy-authorization")
            .map(|(_, v)| v.as_str());
        given == Some(basic(user, pass).as_str())
    }

    /// For an absolute-form request: the origin (`host:port`) and the path.
    fn absolute(&self) -> io::Result<(String, u16, String)> {
        let rest = self.target.strip_prefix("http://").ok_or_else(|| {
            bad(format!(
                "{} {}: not absolute http",
                self.method, self.target
            ))
        })?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = host_port(authority).unwrap_or((authority.to_ascii_lowercase(), 80));
        let path = if path.is_empty() { "/" } else { path };
        Ok((host, port, path.to_owned()))
    }

    /// The request in origin form, proxy fields dropped.
    fn origin_form(&self, path: &str) -> String {
        let mut out = format!("{} {path} {}\r\n", self.method, self.version);
        for (name, value) in &self.headers {
            if name != "proxy-authorization" && name != "proxy-connection" {
                out.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        out.push_str("\r\n");
        out
    }
}

/// One client connection of the HTTP proxy: its first request decides between a
/// `CONNECT` tunnel and forwarding to one origin.
async fn http_client(shared: &Shared, mut client: TcpStream, peer: SocketAddr) -> io::Result<()> {
    let mut buf = Vec::new();
    let Some(len) = read_head(&mut client, &mut buf).await? else {
        return Ok(());
    };
    let req = Request::parse(&buf[..len]);
    buf.drain(..len);
    if !req.authorized(shared) {
        shared.refuse(format!("{peer}: {} {}: 407", req.method, req.target));
        client
            .write_all(
                b"HTTP/1.1 407 Proxy Authentication Required\r\n\
                  Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\
                  Connection: close\r\n\r\n",
            )
            .await?;
        return Ok(());
    }
    let (host, port, path) = if req.method == "CONNECT" {
        let (host, port) =
            host_port(&req.target).ok_or_else(|| bad(format!("CONNECT {}", req.target)))?;
        (host, port, String::new())
    } else {
        req.absolute()?
    };
    let origin = format!("{host}:{port}");
    let connected = match shared.resolve(&host) {
        Some(ip) => shared
            .connect(ip, port)
            .await
            .map(|up| (up, SocketAddr::new(ip, port)))
            .map_err(|e| e.to_string()),
        None => Err("unknown name or not loopback".to_owned()),
    };
    let (mut up, upstream) = match connected {
        Ok(c) => c,
        Err(e) => {
            shared.refuse(format!("{peer}: {} {}: {e}", req.method, req.target));
            client.write_all(UNAVAILABLE.as_bytes()).await?;
            return Ok(());
        }
    };
    if req.method == "CONNECT" {
        shared.log().forwarded.push(Forwarded {
            client: peer,
            what: req.method,
            target: origin,
            by_name: true,
            upstream,
        });
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
        up.write_all(&buf).await?;
        let _ = tokio::io::copy_bidirectional(&mut client, &mut up).await;
        return Ok(());
    }
    let (up_read, up_write) = up.into_split();
    let (client_read, mut client_write) = client.into_split();
    // Responses are relayed as they come, byte for byte.
    let relay = tokio::spawn(async move {
        let mut up_read = up_read;
        let _ = tokio::io::copy(&mut up_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    });
    let bound = Bound {
        origin,
        upstream,
        up: up_write,
    };
    http_forwarding(shared, client_read, peer, buf, bound, relay, (req, path)).await
}

/// A plain-http client connection's origin and upstream connection.
struct Bound {
    origin: String,
    upstream: SocketAddr,
    up: tokio::net::tcp::OwnedWriteHalf,
}

/// The forwarding loop of a plain-http connection bound to one origin: writes the
/// first request and every later one in origin form to the upstream.
async fn http_forwarding(
    shared: &Shared,
    mut client: tokio::net::tcp::OwnedReadHalf,
    peer: SocketAddr,
    mut buf: Vec<u8>,
    mut bound: Bound,
    relay: tokio::task::JoinHandle<()>,
    first: (Request, String),
) -> io::Result<()> {
    let mut next = Some(first);
    let result = async {
        loop {
            let (req, path) = match next.take() {
                Some(first) => first,
                None => {
                    let len = loop {
                        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break end + 4;
                        }
                        let mut chunk = [0u8; 4096];
                        let n = client.read(&mut chunk).await?;
                        if n == 0 {
                            return Ok(());
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    };
                    let req = Request::parse(&buf[..len]);
                    buf.drain(..len);
                    if !req.authorized(shared) {
                        return Err(bad(format!(
                            "{} {}: bad credentials",
                            req.method, req.target
                        )));
                    }
                    let (host, port, path) = req.absolute()?;
                    if format!("{host}:{port}") != bound.origin {
                        return Err(bad(format!(
                            "{} {} on a connection bound to {}",
                            req.method, req.target, bound.origin
                        )));
                    }
                    (req, path)
                }
            };
            bound
                .up
                .write_all(req.origin_form(&path).as_bytes())
                .await?;
            shared.log().forwarded.push(Forwarded {
                client: peer,
                what: req.method,
                target: bound.origin.clone(),
                by_name: true,
                upstream: bound.upstream,
            });
        }
    }
    .await;
    // The client is gone (or broke the rules): nobody is left to relay to.
    let _ = bound.up.shutdown().await;
    relay.abort();
    result
}

/// One client connection of the SOCKS5 server.
async fn socks_client(shared: &Shared, mut client: TcpStream, peer: SocketAddr) -> io::Result<()> {
    let mut greeting = [0u8; 2];
    client.read_exact(&mut greeting).await?;
    if greeting[0] != 5 {
        return Err(bad(format!("SOCKS version {}", greeting[0])));
    }
    let mut methods = vec![0u8; usize::from(greeting[1])];
    client.read_exact(&mut methods).await?;
    let want = if shared.opts.auth.is_some() { 2 } else { 0 };
    if !methods.contains(&want) {
        client.write_all(&[5, 0xff]).await?;
        return Err(bad(format!("no acceptable method in {methods:?}")));
    }
    client.write_all(&[5, want]).await?;
    if let Some((user, pass)) = &shared.opts.auth {
        let mut ver_len = [0u8; 2];
        client.read_exact(&mut ver_len).await?;
        let mut u = vec![0u8; usize::from(ver_len[1])];
        client.read_exact(&mut u).await?;
        let mut plen = [0u8; 1];
        client.read_exact(&mut plen).await?;
        let mut p = vec![0u8; usize::from(plen[0])];
        client.read_exact(&mut p).await?;
        if ver_len[0] != 1 || u != user.as_bytes() || p != pass.as_bytes() {
            client.write_all(&[1, 1]).await?;
            return Err(bad("SOCKS5 authentication failed".into()));
        }
        client.write_all(&[1, 0]).await?;
    }
    let mut req = [0u8; 4];
    client.read_exact(&mut req).await?;
    let reply = |code: u8| [5, code, 0, 1, 0, 0, 0, 0, 0, 0];
    if req[0] != 5 || req[1] != 1 {
        client.write_all(&reply(7)).await?;
        return Err(bad(format!("SOCKS5 request {req:?}")));
    }
    let (host, by_name) = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            client.read_exact(&mut a).await?;
            (Ipv4Addr::from(a).to_string(), false)
        }
        4 => {
            let mut a = [0u8; 16];
            client.read_exact(&mut a).await?;
            (std::net::Ipv6Addr::from(a).to_string(), false)
        }
        3 => {
            let mut len = [0u8; 1];
            client.read_exact(&mut len).await?;
            let mut name = vec![0u8; usize::from(len[0])];
            client.read_exact(&mut name).await?;
            (String::from_utf8_lossy(&name).into_owned(), true)
        }
        t => {
            client.write_all(&reply(8)).await?;
            return Err(bad(format!("SOCKS5 address type {t}")));
        }
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).await?;
    let port = u16::from_be_bytes(port);
    let target = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let Some(ip) = shared.resolve(&host) else {
        client.write_all(&reply(4)).await?;
        return Err(bad(format!("SOCKS5 {target}: unknown or not loopback")));
    };
    let mut up = match shared.connect(ip, port).await {
        Ok(up) => up,
        Err(e) => {
            client.write_all(&reply(5)).await?;
            return Err(bad(format!("SOCKS5 {target}: {e}")));
        }
    };
    let local = up.local_addr()?;
    let mut ok = vec![5, 0, 0, 1];
    match local.ip() {
        IpAddr::V4(v4) => ok.extend_from_slice(&v4.octets()),
        IpAddr::V6(_) => ok.extend_from_slice(&[0, 0, 0, 0]),
    }
    ok.extend_from_slice(&local.port().to_be_bytes());
    client.write_all(&ok).await?;
    shared.log().forwarded.push(Forwarded {
        client: peer,
        what: "SOCKS5".into(),
        target,
        by_name,
        upstream: SocketAddr::new(ip, port),
    });
    let _ = tokio::io::copy_bidirectional(&mut client, &mut up).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials() {
        assert_eq!(
            basic("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
    }
}
