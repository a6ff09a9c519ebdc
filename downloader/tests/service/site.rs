//! A small keep-alive web site on 127.0.0.1:0 whose answer depends on the path,
//! counting requests and the most answered at once.
//!
//! - `/robots.txt`: [`ROBOTS`];
//! - `/redirect`: `301` with `Location: /target`;
//! - `/chunked`: [`CHUNKED_BODY`] in two chunks;
//! - `/gzip`: [`page_body`] gzip-compressed (`Content-Encoding: gzip`);
//! - `/slow/<ms>/...`: waits `<ms>` ms, then a page;
//! - `/bytes/<n>`: `<n>` bytes that do not compress;
//! - anything else: `200` with [`page_body`] of the path.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The robots.txt the site serves.
pub const ROBOTS: &[u8] = b"User-agent: *\nDisallow: /private\n";
/// The body of `/chunked`, as the client gets it once de-chunked.
pub const CHUNKED_BODY: &[u8] = b"hello, chunked world";

/// A running site.
pub struct Site {
    pub addr: SocketAddr,
    pub accepted: Arc<AtomicUsize>,
    pub requests: Arc<AtomicUsize>,
    pub max_active: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Site {
    /// Starts the site.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let active = Arc::new(AtomicUsize::new(0));
        let max_active = Arc::new(AtomicUsize::new(0));
        let counters = (accepted.clone(), requests.clone(), max_active.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                counters.0.fetch_add(1, Ordering::SeqCst);
                let (requests, active, max_active) =
                    (counters.1.clone(), active.clone(), counters.2.clone());
                tokio::spawn(async move {
                    while let Some(req) = read_request(&mut s).await {
                        requests.fetch_add(1, Ordering::SeqCst);
                        let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                        max_active.fetch_max(now, Ordering::SeqCst);
                        let answer = answer(&path_of(&req)).await;
                        active.fetch_sub(1, Ordering::SeqCst);
                        if s.write_all(&answer).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self {
            addr,
            accepted,
            requests,
            max_active,
            task,
        }
    }

    /// Sends one request of the test's own and waits for its answer: the site
    /// accepts connections in order, so every connection made before this one is
    /// counted in `accepted` by the time it returns (this one too).
    pub async fn barrier(&self) {
        let mut s = TcpStream::connect(self.addr).await.unwrap();
        s.write_all(b"GET /barrier HTTP/1.1\r\nHost: site.test\r\n\r\n")
            .await
            .unwrap();
        let mut first = [0u8; 1];
        assert_eq!(
            s.read(&mut first).await.unwrap(),
            1,
            "the site did not answer"
        );
    }

    /// `http://site.test:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://site.test:{}{path}", self.addr.port())
    }
}

fn path_of(request: &[u8]) -> String {
    let line = request.split(|&b| b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    line.split(' ').nth(1).unwrap_or("/").to_owned()
}

/// The HTML body served for `path`.
pub fn page_body(path: &str) -> Vec<u8> {
    format!("<html><body>page {path} {}</body></html>", "x".repeat(300)).into_bytes()
}

/// `n` bytes that gzip cannot shrink much (a xorshift stream).
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The full response for `path`.
pub async fn answer(path: &str) -> Vec<u8> {
    let ok = |extra: &str, body: &[u8]| response(extra, body);
    if path == "/robots.txt" {
        return ok("Content-Type: text/plain\r\n", ROBOTS);
    }
    if path == "/redirect" {
        return b"HTTP/1.1 301 Moved Permanently\r\nLocation: /target\r\nContent-Length: 5\r\n\r\nmoved"
            .to_vec();
    }
    if path == "/chunked" {
        let (a, b) = CHUNKED_BODY.split_at(7);
        let mut r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for part in [a, b] {
            r.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            r.extend_from_slice(part);
            r.extend_from_slice(b"\r\n");
        }
        r.extend_from_slice(b"0\r\n\r\n");
        return r;
    }
    if let Some(code) = path.strip_prefix("/status/") {
        let code: u16 = code.parse().unwrap_or(500);
        return format!("HTTP/1.1 {code} Status\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\nno")
            .into_bytes();
    }
    if path == "/gzip" {
        let body = gzip(&page_body(path));
        return ok("Content-Encoding: gzip\r\n", &body);
    }
    if let Some(rest) = path.strip_prefix("/slow/") {
        let ms: u64 = rest.split('/').next().unwrap_or("0").parse().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if let Some(n) = path.strip_prefix("/bytes/") {
        let n: usize = n.parse().unwrap_or(0);
        return ok(
            "Content-Type: application/octet-stream\r\n",
            &noise(n, n as u64),
        );
    }
    ok("Content-Type: text/html\r\n", &page_body(path))
}

/// Reads one request head (up to the empty line); `None` on EOF or error.
async fn read_request<S: AsyncRead + Unpin>(s: &mut S) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    Some(buf)
}

/// A 200 response with `extra` header lines and `body`.
pub fn response(extra: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// gzip-compresses `data`.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}
