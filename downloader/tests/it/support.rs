//! Test servers on loopback and config helpers.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use downloader::{FetchJob, Fetcher, FetcherConfig, Target};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A server on 127.0.0.1:0 running `handler` for every accepted connection.
pub struct Server {
    pub addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    pub requests: Arc<Mutex<Vec<Vec<u8>>>>,
    task: JoinHandle<()>,
}

impl Server {
    /// Starts a server calling `handler(stream, requests_log)` per connection.
    pub async fn start<F, Fut>(handler: F) -> Self
    where
        F: Fn(TcpStream, Arc<Mutex<Vec<Vec<u8>>>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (count, log) = (accepted.clone(), requests.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(handler(stream, log.clone()));
            }
        });
        Self {
            addr,
            accepted,
            requests,
            task,
        }
    }

    /// A keep-alive server answering every request with `response`.
    pub async fn respond(response: impl Into<Vec<u8>>) -> Self {
        let response = Arc::new(response.into());
        Self::start(move |mut s, log| {
            let response = response.clone();
            async move {
                while let Some(req) = read_request(&mut s).await {
                    log.lock().unwrap().push(req);
                    if s.write_all(&response).await.is_err() {
                        return;
                    }
                }
            }
        })
        .await
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Requests read so far.
    pub fn request_count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    /// An http job for `path` on this server, with host `site.test`.
    pub fn job(&self, path: &str) -> FetchJob {
        job_for(
            &format!("http://site.test:{}{path}", self.addr.port()),
            self.addr,
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A GET job for `url` connecting to `addr`.
pub fn job_for(url: &str, addr: SocketAddr) -> FetchJob {
    FetchJob::get(Target::parse(url).unwrap(), addr)
}

/// Reads one request head (up to the empty line); `None` on EOF or error.
pub async fn read_request<S: AsyncRead + Unpin>(s: &mut S) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1024];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut byte[..1]).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&byte[..n]);
    }
    Some(buf)
}

/// Writes `data` and ignores errors (the client may have gone).
pub async fn send<S: AsyncWrite + Unpin>(s: &mut S, data: &[u8]) {
    let _ = s.write_all(data).await;
    let _ = s.flush().await;
}

/// Short timeouts and private addresses allowed (everything here is on loopback).
pub fn config() -> FetcherConfig {
    FetcherConfig {
        allow_private: true,
        connect_timeout: Duration::from_millis(500),
        first_byte_timeout: Duration::from_millis(500),
        total_timeout: Duration::from_secs(2),
        ..FetcherConfig::default()
    }
}

/// A fetcher with [`config`].
pub fn fetcher() -> Fetcher {
    Fetcher::new(config()).unwrap()
}

/// gzip-compresses `data`.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// zlib-compresses `data` (HTTP `deflate`).
pub fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A 200 response head with `extra` header lines, followed by `body`.
pub fn response(extra: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}
