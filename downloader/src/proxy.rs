//! Proxies: which requests go through which HTTP or SOCKS5 proxy, and the
//! handshakes that open a connection to a target through one.
//!
//! **Settings** ([`ProxyConfig`]): a default proxy for the crawl (or none: direct)
//! and per-host-pattern rules, first match wins, each naming a proxy URL or
//! `direct` (a `no_proxy`-like exception). Proxy URLs:
//! - `http://[user:pass@]host[:port]` (port 80 by default): a plain-http target is
//!   asked for in absolute form (`GET http://host:port/path HTTP/1.1`), an https
//!   target through a `CONNECT host:port` tunnel; the proxy resolves the name.
//! - `socks5://[user:pass@]host[:port]` (port 1080 by default): the address the
//!   manager resolved is sent (SOCKS5 `CONNECT` with an IPv4 or IPv6 address).
//! - `socks5h://...`: the host name is sent and the proxy resolves it.
//!
//! Host patterns ([`HostPattern`]): `*` (every host), a glob with `*` (any run of
//! characters, dots included: `*.example.org`, `crawl-*.test`), or a domain
//! (`example.org` or `.example.org`: that name and every name under it). They are
//! matched against the URL's host name, lower-case; an IP literal host matches a
//! pattern that spells it.
//!
//! **Connections** (`connect_proxy`, `handshake`): a connection through a proxy is bound to one target
//! origin (a CONNECT tunnel or a SOCKS stream is; a plain-http proxy connection is
//! kept to one origin too, so the pool and politeness see the same connections as
//! without a proxy). Everything from the TCP connect to the proxy to the end of its
//! handshake counts against the connect timeout, and its bytes are counted like
//! any other wire bytes. A failure of the proxy (refused, `407`, a SOCKS error
//! code, a reply that is not the protocol) is a [`FetchError::Proxy`], reported
//! like a connection failure.
//!
//! What this module must never do: send credentials anywhere but to their proxy,
//! print a proxy password (the [`Debug`] and [`Display`](fmt::Display) forms hide
//! it), or resolve a target's name (only the proxy's own host name, when it is not
//! an IP literal, is looked up with the operating system's resolver). Cost: O(rules)
//! string matches per fetch (rules come from the config and do not grow with the
//! crawl); a handshake is one or two round trips to the proxy.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::FetchError;

/// The kind of a proxy, from its URL scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProxyKind {
    /// `http://`: absolute-form requests for http, `CONNECT` for https.
    Http,
    /// `socks5://`: the client resolves; the address is sent.
    Socks5,
    /// `socks5h://`: the proxy resolves; the host name is sent.
    Socks5h,
}

impl ProxyKind {
    /// The URL scheme.
    pub fn scheme(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Socks5 => "socks5",
            Self::Socks5h => "socks5h",
        }
    }

    /// Whether the proxy resolves the target's name (so the address it connects to
    /// is not known here).
    pub fn proxy_resolves(self) -> bool {
        !matches!(self, Self::Socks5)
    }
}

/// User name and password for a proxy. Never printed.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Credentials {
    /// The user name (percent-decoded from the URL).
    pub user: String,
    /// The password (percent-decoded from the URL; may be empty).
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credentials({:?}, <hidden>)", self.user)
    }
}

/// One proxy, parsed from its URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Proxy {
    /// http, socks5 or socks5h.
    pub kind: ProxyKind,
    /// Host name or IP literal (IPv6 without brackets), lower-case.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Credentials, if the URL has any.
    pub auth: Option<Credentials>,
}

/// Why a proxy URL or rule was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?}: {reason}")]
pub struct ProxyConfigError {
    /// The value as configured (a proxy URL's password replaced by `***`).
    pub input: String,
    /// What is wrong and what is allowed.
    pub reason: String,
}

impl Proxy {
    /// Parses `http://`, `socks5://` or `socks5h://` `[user:pass@]host[:port]`,
    /// with nothing after the authority but an optional `/`.
    pub fn parse(input: &str) -> Result<Self, ProxyConfigError> {
        let err = |reason: &str| ProxyConfigError {
            input: redact(input),
            reason: reason.to_owned(),
        };
        let url = url::Url::parse(input).map_err(|e| err(&format!("not a URL: {e}")))?;
        let kind = match url.scheme() {
            "http" => ProxyKind::Http,
            "socks5" => ProxyKind::Socks5,
            "socks5h" => ProxyKind::Socks5h,
            "https" => {
                return Err(err(
                    "https:// proxies (TLS to the proxy) are not supported; use http:// (https targets still go through an end-to-end TLS tunnel) or socks5://",
                ));
            }
            other => {
                return Err(err(&format!(
                    "scheme {other:?}: use http://, socks5:// or socks5h://"
                )));
            }
        };
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err(err("a proxy URL has no path, query or fragment"));
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) if !d.is_empty() => d.to_ascii_lowercase(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            _ => return Err(err("no proxy host")),
        };
        if host.parse::<IpAddr>().is_err()
            && !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
        {
            return Err(err("the proxy host is not a DNS name or IP address"));
        }
        let port = url.port().unwrap_or(match kind {
            ProxyKind::Http => 80,
            ProxyKind::Socks5 | ProxyKind::Socks5h => 1080,
        });
        if port == 0 {
            return Err(err("port 0"));
        }
        let auth = if url.username().is_empty() && url.password().is_none() {
            None
        } else {
            let bad_utf8 = || err("the credentials are not UTF-8 once percent-decoded");
            let user = percent_decode(url.username()).ok_or_else(bad_utf8)?;
            let password = match url.password() {
                Some(p) => percent_decode(p).ok_or_else(bad_utf8)?,
                None => String::new(),
            };
            if user.is_empty() {
                return Err(err("credentials without a user name"));
            }
            if kind != ProxyKind::Http && (user.len() > 255 || password.len() > 255) {
                return Err(err(
                    "SOCKS5 user name and password are at most 255 bytes each",
                ));
            }
            if user.contains(':')
                || user
                    .bytes()
                    .chain(password.bytes())
                    .any(|b| b < 0x20 || b == 0x7f)
            {
                return Err(err(
                    "the user name holds ':' or control characters, or the password control characters",
                ));
            }
            Some(Credentials { user, password })
        };
        Ok(Self {
            kind,
            host,
            port,
            auth,
        })
    }

    /// `host:port` (IPv6 bracketed), for messages.
    pub fn authority(&self) -> String {
        authority(&self.host, self.port)
    }

    /// `Basic <base64(user:password)>` for `Proxy-Authorization`, if any credentials.
    pub(crate) fn basic_auth(&self) -> Option<String> {
        self.auth.as_ref().map(|c| {
            format!(
                "Basic {}",
                base64(format!("{}:{}", c.user, c.password).as_bytes())
            )
        })
    }
}

impl fmt::Display for Proxy {
    /// The URL with the password hidden.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.kind.scheme())?;
        if let Some(c) = &self.auth {
            write!(f, "{}:***@", c.user)?;
        }
        f.write_str(&self.authority())
    }
}

/// Percent-decodes `s` as UTF-8; `None` if it is not valid after decoding.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        if let (b'%', Some(Ok(byte))) = (b[i], hex.map(|h| u8::from_str_radix(h, 16))) {
            out.push(byte);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `input` with anything between `:` after the scheme's `//` and the last `@`
/// replaced, so a password never reaches a log or an error message.
fn redact(input: &str) -> String {
    let Some((scheme, rest)) = input.split_once("://") else {
        return input.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        None => input.to_owned(),
    }
}

fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Standard base64 with padding (RFC 4648), for `Proxy-Authorization: Basic`.
fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Which hosts a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// `*`: every host.
    Any,
    /// A domain: the name itself and every name under it.
    Domain(String),
    /// A glob; `*` matches any run of characters.
    Glob(String),
}

impl HostPattern {
    /// Parses a pattern (see the module docs).
    pub fn parse(input: &str) -> Result<Self, ProxyConfigError> {
        let p = input.trim().to_ascii_lowercase();
        let err = |reason: &str| ProxyConfigError {
            input: input.to_owned(),
            reason: reason.to_owned(),
        };
        if p == "*" {
            return Ok(Self::Any);
        }
        let p = p.strip_prefix('.').unwrap_or(&p).to_owned();
        if p.is_empty() {
            return Err(err("an empty host pattern; use \"*\" for every host"));
        }
        if !p
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'*' | b':'))
        {
            return Err(err(
                "a host pattern holds letters, digits, '-', '.', '_', ':' and '*' only",
            ));
        }
        Ok(if p.contains('*') {
            Self::Glob(p)
        } else {
            Self::Domain(p)
        })
    }

    /// Whether `host` (lower-case) matches.
    pub fn matches(&self, host: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Domain(d) => {
                host == d
                    || host
                        .strip_suffix(d.as_str())
                        .is_some_and(|rest| rest.ends_with('.'))
            }
            Self::Glob(g) => glob(g.as_bytes(), host.as_bytes()),
        }
    }
}

/// Glob match with `*` only; O(pattern × text) at worst.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

/// One rule: hosts matching the pattern go through `proxy` (`None`: direct).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRule {
    /// Which hosts.
    pub hosts: HostPattern,
    /// Through which proxy; `None` connects directly.
    pub proxy: Option<Arc<Proxy>>,
}

/// The proxy settings of a fetcher. The default is direct for every host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Per-host rules, first match wins.
    pub rules: Vec<ProxyRule>,
    /// The proxy for hosts no rule matches; `None`: direct.
    pub default: Option<Arc<Proxy>>,
}

impl ProxyConfig {
    /// Parses a default proxy URL (`None` or `"direct"`: direct) and rules of
    /// (host pattern, proxy URL or `"direct"`).
    pub fn parse(default: Option<&str>, rules: &[(&str, &str)]) -> Result<Self, ProxyConfigError> {
        let proxy = |s: &str| -> Result<Option<Arc<Proxy>>, ProxyConfigError> {
            if s.trim().eq_ignore_ascii_case("direct") {
                Ok(None)
            } else {
                Proxy::parse(s.trim()).map(|p| Some(Arc::new(p)))
            }
        };
        Ok(Self {
            default: default.map(proxy).transpose()?.flatten(),
            rules: rules
                .iter()
                .map(|(hosts, p)| {
                    Ok(ProxyRule {
                        hosts: HostPattern::parse(hosts)?,
                        proxy: proxy(p)?,
                    })
                })
                .collect::<Result<_, ProxyConfigError>>()?,
        })
    }

    /// The proxy for `host` (lower-case), or `None` for a direct connection.
    pub fn route(&self, host: &str) -> Option<&Arc<Proxy>> {
        match self.rules.iter().find(|r| r.hosts.matches(host)) {
            Some(rule) => rule.proxy.as_ref(),
            None => self.default.as_ref(),
        }
    }

    /// Whether every host is fetched directly.
    pub fn is_direct(&self) -> bool {
        self.default.is_none() && self.rules.iter().all(|r| r.proxy.is_none())
    }
}

/// Where the proxy is asked to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dest<'a> {
    /// An address (SOCKS5 with client-side resolution).
    Addr(SocketAddr),
    /// A host name (or IP literal) and port: the proxy resolves.
    Name(&'a str, u16),
}

impl fmt::Display for Dest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Addr(a) => write!(f, "{a}"),
            Self::Name(h, p) => f.write_str(&authority(h, *p)),
        }
    }
}

/// What the connection is for, besides the destination.
pub(crate) struct OpenParams<'a> {
    /// The proxy.
    pub proxy: &'a Proxy,
    /// Where it is asked to connect.
    pub dest: Dest<'a>,
    /// For an HTTP proxy: open a `CONNECT` tunnel (an https target); otherwise the
    /// connection to the proxy is returned as it is (absolute-form requests follow).
    pub tunnel: bool,
    /// The `User-Agent` sent with `CONNECT`.
    pub user_agent: &'a str,
    /// The cap on the proxy's `CONNECT` reply head.
    pub max_head_bytes: usize,
}

/// Connects to the proxy; the timeout is the caller's.
pub(crate) async fn connect_proxy(proxy: &Proxy) -> Result<TcpStream, FetchError> {
    let fail = |reason: String| FetchError::Proxy {
        proxy: proxy.to_string(),
        reason,
    };
    let addrs: Vec<SocketAddr> = match proxy.host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, proxy.port)],
        Err(_) => tokio::net::lookup_host((proxy.host.as_str(), proxy.port))
            .await
            .map_err(|e| fail(format!("cannot resolve the proxy's name: {e}")))?
            .collect(),
    };
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(tcp) => {
                let _ = tcp.set_nodelay(true);
                return Ok(tcp);
            }
            Err(e) => last = Some(format!("connect to {addr} failed: {e}")),
        }
    }
    Err(fail(last.unwrap_or_else(|| {
        "the proxy's name has no address".into()
    })))
}

/// Runs the handshake on `stream`, a fresh connection to `p.proxy`: `CONNECT` for
/// an HTTP proxy's tunnel, the SOCKS5 greeting, authentication and `CONNECT`.
/// Reads nothing past the proxy's reply.
pub(crate) async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    p: &OpenParams<'_>,
) -> Result<(), FetchError> {
    match p.proxy.kind {
        ProxyKind::Http if !p.tunnel => Ok(()),
        ProxyKind::Http => http_connect(stream, p).await,
        ProxyKind::Socks5 | ProxyKind::Socks5h => socks5(stream, p).await,
    }
}

/// An HTTP proxy's `CONNECT` tunnel.
async fn http_connect<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    p: &OpenParams<'_>,
) -> Result<(), FetchError> {
    let fail = |reason: String| FetchError::Proxy {
        proxy: p.proxy.to_string(),
        reason,
    };
    let io = |what: &str, e: std::io::Error| fail(format!("{what}: {e}"));
    let request = connect_request(p);
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| io("writing CONNECT", e))?;
    let head = read_head(stream, p.max_head_bytes)
        .await
        .map_err(|e| io("reading the CONNECT reply", e))?
        .ok_or_else(|| fail("the CONNECT reply head is too large or cut off".into()))?;
    let parsed =
        spool::http::parse_head(&head, 64).map_err(|e| fail(format!("bad CONNECT reply: {e}")))?;
    match parsed.status {
        200..=299 => Ok(()),
        407 => Err(fail(format!(
            "407 Proxy Authentication Required ({})",
            if p.proxy.auth.is_some() {
                "credentials refused"
            } else {
                "no credentials configured"
            }
        ))),
        s => Err(fail(format!(
            "CONNECT {} answered {s} {}",
            p.dest, parsed.reason
        ))),
    }
}

/// The SOCKS5 greeting, authentication and `CONNECT` (RFC 1928, RFC 1929).
async fn socks5<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    p: &OpenParams<'_>,
) -> Result<(), FetchError> {
    let fail = |reason: String| FetchError::Proxy {
        proxy: p.proxy.to_string(),
        reason,
    };
    let io = |what: &str, e: std::io::Error| fail(format!("{what}: {e}"));
    let auth = p.proxy.auth.as_ref();
    stream
        .write_all(&socks5_greeting(auth.is_some()))
        .await
        .map_err(|e| io("writing the SOCKS5 greeting", e))?;
    let mut choice = [0u8; 2];
    stream
        .read_exact(&mut choice)
        .await
        .map_err(|e| io("reading the SOCKS5 method", e))?;
    match (choice, auth) {
        ([5, 0], _) => {}
        ([5, 2], Some(c)) => {
            stream
                .write_all(&socks5_auth(c))
                .await
                .map_err(|e| io("writing SOCKS5 credentials", e))?;
            let mut status = [0u8; 2];
            stream
                .read_exact(&mut status)
                .await
                .map_err(|e| io("reading the SOCKS5 authentication reply", e))?;
            if status[1] != 0 {
                return Err(fail("SOCKS5 authentication failed".into()));
            }
        }
        ([5, 0xff], _) => {
            return Err(fail(format!(
                "SOCKS5 proxy accepts none of our methods ({})",
                if auth.is_some() {
                    "no authentication, user/password"
                } else {
                    "no authentication; it may need credentials"
                }
            )));
        }
        (other, _) => {
            return Err(fail(format!("bad SOCKS5 method reply {other:02x?}")));
        }
    }
    stream
        .write_all(&socks5_connect(&p.dest))
        .await
        .map_err(|e| io("writing the SOCKS5 CONNECT", e))?;
    let mut head = [0u8; 4];
    stream
        .read_exact(&mut head)
        .await
        .map_err(|e| io("reading the SOCKS5 reply", e))?;
    if head[0] != 5 {
        return Err(fail(format!("bad SOCKS5 reply version {}", head[0])));
    }
    if head[1] != 0 {
        return Err(fail(format!(
            "SOCKS5 CONNECT {} failed: {}",
            p.dest,
            socks5_reply_text(head[1])
        )));
    }
    let rest = match head[3] {
        1 => 4 + 2,
        4 => 16 + 2,
        3 => {
            let mut len = [0u8; 1];
            stream
                .read_exact(&mut len)
                .await
                .map_err(|e| io("reading the SOCKS5 reply", e))?;
            usize::from(len[0]) + 2
        }
        t => return Err(fail(format!("bad SOCKS5 reply address type {t}"))),
    };
    let mut bound = vec![0u8; rest];
    stream
        .read_exact(&mut bound)
        .await
        .map_err(|e| io("reading the SOCKS5 reply", e))?;
    Ok(())
}

/// The `CONNECT` request for an HTTP proxy's tunnel.
fn connect_request(p: &OpenParams<'_>) -> String {
    let dest = p.dest.to_string();
    let mut r = format!(
        "CONNECT {dest} HTTP/1.1\r\nHost: {dest}\r\nUser-Agent: {}\r\n",
        p.user_agent
    );
    if let Some(auth) = p.proxy.basic_auth() {
        r.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    r.push_str("\r\n");
    r
}

/// Reads one head byte by byte (so nothing past it is consumed); `None` past
/// `max` bytes or at EOF before its end.
async fn read_head<S: AsyncRead + Unpin>(
    stream: &mut S,
    max: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(128);
    let mut byte = [0u8; 1];
    while head.len() < max {
        if stream.read(&mut byte).await? == 0 {
            return Ok(None);
        }
        head.push(byte[0]);
        if head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n") {
            return Ok(Some(head));
        }
    }
    Ok(None)
}

/// The SOCKS5 greeting: version 5 and the methods offered (no authentication, and
/// user/password when there are credentials).
pub(crate) fn socks5_greeting(with_auth: bool) -> Vec<u8> {
    if with_auth {
        vec![5, 2, 0, 2]
    } else {
        vec![5, 1, 0]
    }
}

/// The user/password sub-negotiation (RFC 1929); lengths checked at parse time.
pub(crate) fn socks5_auth(c: &Credentials) -> Vec<u8> {
    let mut out = Vec::with_capacity(3 + c.user.len() + c.password.len());
    out.push(1);
    out.push(c.user.len() as u8);
    out.extend_from_slice(c.user.as_bytes());
    out.push(c.password.len() as u8);
    out.extend_from_slice(c.password.as_bytes());
    out
}

/// The SOCKS5 `CONNECT` request for `dest`: an IP literal name is sent as an
/// address, any other name as a domain name (at most 255 bytes: host names are).
pub(crate) fn socks5_connect(dest: &Dest<'_>) -> Vec<u8> {
    let mut out = vec![5, 1, 0];
    let (ip, port) = match dest {
        Dest::Addr(a) => (Some(a.ip()), a.port()),
        Dest::Name(h, p) => (h.parse::<IpAddr>().ok(), *p),
    };
    match (ip, dest) {
        (Some(IpAddr::V4(v4)), _) => {
            out.push(1);
            out.extend_from_slice(&v4.octets());
        }
        (Some(IpAddr::V6(v6)), _) => {
            out.push(4);
            out.extend_from_slice(&v6.octets());
        }
        (None, Dest::Name(h, _)) => {
            let name = &h.as_bytes()[..h.len().min(255)];
            out.push(3);
            out.push(name.len() as u8);
            out.extend_from_slice(name);
        }
        (None, Dest::Addr(_)) => unreachable!("an address always has an IP"),
    }
    out.extend_from_slice(&port.to_be_bytes());
    out
}

/// RFC 1928's text for a SOCKS5 reply code.
fn socks5_reply_text(code: u8) -> String {
    match code {
        1 => "general SOCKS server failure".into(),
        2 => "connection not allowed by ruleset".into(),
        3 => "network unreachable".into(),
        4 => "host unreachable".into(),
        5 => "connection refused".into(),
        6 => "TTL expired".into(),
        7 => "command not supported".into(),
        8 => "address type not supported".into(),
        other => format!("reply code {other}"),
    }
}

/// The request written to an HTTP proxy for a plain-http target: `request` (the
/// origin-form bytes archived in the WARC request record) with its request target
/// made absolute (`http://authority/path`) and `Proxy-Authorization` added after
/// the request line when the proxy has credentials.
pub(crate) fn absolute_form(request: &[u8], absolute_url: &str, auth: Option<&str>) -> Vec<u8> {
    let line_end = request
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(request.len());
    let line = &request[..line_end];
    let method_end = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
    let version_start = line.iter().rposition(|&b| b == b' ').unwrap_or(line.len());
    let mut out = Vec::with_capacity(request.len() + absolute_url.len() + 64);
    out.extend_from_slice(&line[..method_end]);
    out.push(b' ');
    out.extend_from_slice(absolute_url.as_bytes());
    out.extend_from_slice(&line[version_start..]);
    out.extend_from_slice(b"\r\n");
    if let Some(auth) = auth {
        out.extend_from_slice(b"Proxy-Authorization: ");
        out.extend_from_slice(auth.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(request.get(line_end + 2..).unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proxy_urls() {
        let p = Proxy::parse("http://proxy.example.org:3128").unwrap();
        assert_eq!(
            (p.kind, p.host.as_str(), p.port, p.auth.is_none()),
            (ProxyKind::Http, "proxy.example.org", 3128, true)
        );
        assert_eq!(Proxy::parse("http://10.0.0.1/").unwrap().port, 80);
        let p = Proxy::parse("socks5h://al%40x:p%3Ass@[::1]").unwrap();
        assert_eq!(
            (p.kind, p.host.as_str(), p.port),
            (ProxyKind::Socks5h, "::1", 1080)
        );
        let c = p.auth.clone().unwrap();
        assert_eq!((c.user.as_str(), c.password.as_str()), ("al@x", "p:ss"));
        assert_eq!(p.to_string(), "socks5h://al@x:***@[::1]:1080");
        assert!(!format!("{p:?}").contains("p:ss"), "{p:?}");
        assert_eq!(
            Proxy::parse("socks5://127.0.0.1:9050").unwrap().kind,
            ProxyKind::Socks5
        );

        for (bad, why) in [
            ("proxy:3128", "scheme"),
            ("https://proxy:3128", "not supported"),
            ("ftp://proxy", "scheme"),
            ("http://proxy:3128/path", "no path"),
            ("http://proxy:99999", "not a URL"),
            ("http://:3128", "not a URL"),
            ("socks5://:pw@host", "without a user"),
            ("http://proxy:0", "port 0"),
            ("not a url", "not a URL"),
        ] {
            let err = Proxy::parse(bad).unwrap_err();
            assert!(err.reason.contains(why), "{bad}: {err}");
        }
        let err = Proxy::parse("https://user:secret@proxy:1").unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
    }

    #[test]
    fn patterns_and_rules() {
        let d = HostPattern::parse(".Example.org").unwrap();
        assert!(d.matches("example.org") && d.matches("www.example.org"));
        assert!(!d.matches("badexample.org") && !d.matches("example.org.evil"));
        let g = HostPattern::parse("*.test").unwrap();
        assert!(g.matches("a.test") && g.matches("a.b.test") && !g.matches("test"));
        let g = HostPattern::parse("crawl-*.ex*le").unwrap();
        assert!(g.matches("crawl-1.example") && !g.matches("crawl.example"));
        assert!(HostPattern::parse("*").unwrap().matches("anything"));
        assert!(HostPattern::parse("").is_err());
        assert!(HostPattern::parse("a b").is_err());

        let c = ProxyConfig::parse(
            Some("socks5h://127.0.0.1:1080"),
            &[
                ("intranet.example", "direct"),
                ("*.slow.test", "http://127.0.0.1:3128"),
            ],
        )
        .unwrap();
        assert!(c.route("www.intranet.example").is_none());
        assert_eq!(c.route("a.slow.test").unwrap().kind, ProxyKind::Http);
        assert_eq!(c.route("other.test").unwrap().kind, ProxyKind::Socks5h);
        assert!(!c.is_direct());
        let direct = ProxyConfig::parse(Some("direct"), &[]).unwrap();
        assert!(direct.is_direct() && direct.route("x").is_none());
        assert_eq!(direct, ProxyConfig::default());
        assert!(ProxyConfig::parse(None, &[("*", "gopher://x")]).is_err());
    }

    #[test]
    fn socks5_bytes() {
        assert_eq!(socks5_greeting(false), [5, 1, 0]);
        assert_eq!(socks5_greeting(true), [5, 2, 0, 2]);
        let c = Credentials {
            user: "ab".into(),
            password: "xyz".into(),
        };
        assert_eq!(socks5_auth(&c), [1, 2, b'a', b'b', 3, b'x', b'y', b'z']);
        let a: SocketAddr = "127.1.0.7:8080".parse().unwrap();
        assert_eq!(
            socks5_connect(&Dest::Addr(a)),
            [5, 1, 0, 1, 127, 1, 0, 7, 0x1f, 0x90]
        );
        assert_eq!(
            socks5_connect(&Dest::Name("a.test", 443)),
            [5, 1, 0, 3, 6, b'a', b'.', b't', b'e', b's', b't', 1, 0xbb]
        );
        let v6 = socks5_connect(&Dest::Name("::1", 80));
        assert_eq!((v6[3], v6.len()), (4, 4 + 16 + 2));
    }

    #[test]
    fn http_proxy_bytes() {
        assert_eq!(
            base64(b"Aladdin:open sesame"),
            "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        let got = absolute_form(
            b"GET /a?b HTTP/1.1\r\nHost: x.test:81\r\n\r\n",
            "http://x.test:81/a?b",
            Some("Basic YQ=="),
        );
        assert_eq!(
            std::str::from_utf8(&got).unwrap(),
            "GET http://x.test:81/a?b HTTP/1.1\r\nProxy-Authorization: Basic YQ==\r\nHost: x.test:81\r\n\r\n"
        );
        let p = Proxy::parse("http://u:p@127.0.0.1:3128").unwrap();
        let params = OpenParams {
            proxy: &p,
            dest: Dest::Name("x.test", 443),
            tunnel: true,
            user_agent: "polycrawl/1",
            max_head_bytes: 1024,
        };
        assert_eq!(
            connect_request(&params),
            "CONNECT x.test:443 HTTP/1.1\r\nHost: x.test:443\r\nUser-Agent: polycrawl/1\r\n\
             Proxy-Authorization: Basic dTpw\r\n\r\n"
        );
    }
}
