//! The misbehaving host, [`super::hosts::MISBEHAVE_HOST`]
//! (`misbehave.websim.test`, http only, on an address of its own), for downloader
//! tests. No page links to it and it is not in the manifest; tests request it
//! directly. Every response closes the connection afterwards. Paths:
//!
//! | path | what happens |
//! |---|---|
//! | `/` | 200, a small page listing these paths (as text, not links) |
//! | `/garbage` | 4,096 bytes that are not HTTP, then close |
//! | `/huge-headers` | 200 with about 200 KB of `X-Filler-N` header lines, then a 2-byte body |
//! | `/short-body` | `Content-Length: 100000`, 1,000 bytes of body, then close |
//! | `/huge-body` | 200, `Content-Length: 52428800`, 50 MiB of `x` streamed |
//! | `/stall` | `Content-Length: 100000`, 1,000 bytes, then nothing for 10 minutes (until the client closes) |
//! | `/no-length` | 200 without `Content-Length` or chunking: the body ends at close |
//! | `/bad-chunked` | `Transfer-Encoding: chunked` with an invalid chunk size line |
//! | `/gzip-bomb` | 200, `Content-Encoding: gzip`, about 100 KB that inflate to 100 MiB of zeros |
//! | `/silent` | nothing: the request is read and never answered, until the client closes (or [`STALL`] passes); logged with status 0 |
//! | anything else (including `/robots.txt`) | 404 |
//!
//! The stuck hosts of `--stuck-hosts` ([`super::stuck`]) answer with `/silent`'s
//! silence too.
//!
//! Memory: the gzip bomb is built once on first use (about 100 KB kept); everything
//! else is streamed from small static buffers.

use std::io::{self, Write};
use std::sync::OnceLock;
use std::time::Duration;

use flate2::Compression;
use flate2::write::GzEncoder;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::rng::Rng;

/// How long `/stall` holds the connection without sending anything.
pub const STALL: Duration = Duration::from_secs(600);
/// Body size of `/huge-body`.
pub const HUGE_BODY: u64 = 50 * 1024 * 1024;
/// Inflated size of `/gzip-bomb`.
pub const BOMB_INFLATED: usize = 100 * 1024 * 1024;
/// Approximate size of the `/huge-headers` header block.
pub const HUGE_HEADERS: usize = 200 * 1024;

/// A misbehaving-host path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehavior {
    /// `/`
    Index,
    /// `/garbage`
    Garbage,
    /// `/huge-headers`
    HugeHeaders,
    /// `/short-body`
    ShortBody,
    /// `/huge-body`
    HugeBody,
    /// `/stall`
    Stall,
    /// `/no-length`
    NoLength,
    /// `/bad-chunked`
    BadChunked,
    /// `/gzip-bomb`
    GzipBomb,
    /// `/silent`
    Silent,
    /// Anything else.
    NotFound,
}

/// The behaviour for a request target.
pub fn route(target: &str) -> Misbehavior {
    match target {
        "/" => Misbehavior::Index,
        "/garbage" => Misbehavior::Garbage,
        "/huge-headers" => Misbehavior::HugeHeaders,
        "/short-body" => Misbehavior::ShortBody,
        "/huge-body" => Misbehavior::HugeBody,
        "/stall" => Misbehavior::Stall,
        "/no-length" => Misbehavior::NoLength,
        "/bad-chunked" => Misbehavior::BadChunked,
        "/gzip-bomb" => Misbehavior::GzipBomb,
        "/silent" => Misbehavior::Silent,
        _ => Misbehavior::NotFound,
    }
}

const INDEX: &str = "<!DOCTYPE html>\n<html><head><title>misbehave</title></head><body>\n\
<p>Paths: /garbage /huge-headers /short-body /huge-body /stall /no-length /bad-chunked \
/gzip-bomb /silent</p>\n</body></html>\n";

/// Plays `m` on `stream`; returns the status sent (0 if none) and the body bytes sent.
pub async fn serve<S>(stream: &mut S, m: Misbehavior, head_only: bool) -> io::Result<(u16, u64)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let simple = |status: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
            body.len(),
            if head_only { "" } else { body }
        )
    };
    let (status, sent) = match m {
        Misbehavior::Index => {
            stream.write_all(simple("200 OK", INDEX).as_bytes()).await?;
            (200, INDEX.len() as u64)
        }
        Misbehavior::NotFound => {
            let body = "<html><body>Not Found</body></html>\n";
            stream
                .write_all(simple("404 Not Found", body).as_bytes())
                .await?;
            (404, body.len() as u64)
        }
        Misbehavior::Garbage => {
            let mut r = Rng::new(0x6761_7262);
            let bytes: Vec<u8> = (0..4096).map(|_| r.next_u64() as u8).collect();
            stream.write_all(&bytes).await?;
            (0, bytes.len() as u64)
        }
        Misbehavior::HugeHeaders => huge_headers(stream).await?,
        Misbehavior::ShortBody => {
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n";
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&[b's'; 1000]).await?;
            (200, 1000)
        }
        Misbehavior::HugeBody => huge_body(stream, head_only).await?,
        Misbehavior::Stall => stall(stream).await?,
        Misbehavior::NoLength => {
            let body = "<html><body>The body ends when the connection does.</body></html>\n";
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n";
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
            (200, body.len() as u64)
        }
        Misbehavior::BadChunked => {
            let raw = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n";
            stream.write_all(raw.as_bytes()).await?;
            (200, 16)
        }
        Misbehavior::GzipBomb => gzip_bomb(stream, head_only).await?,
        Misbehavior::Silent => {
            hold(stream).await;
            (0, 0)
        }
    };
    stream.flush().await?;
    let _ = stream.shutdown().await;
    Ok((status, sent))
}

/// Headers beyond any sane limit ([`HUGE_HEADERS`] bytes), then a 2-byte body.
async fn huge_headers<S>(stream: &mut S) -> io::Result<(u16, u64)>
where
    S: AsyncWrite + Unpin,
{
    let mut head = String::with_capacity(HUGE_HEADERS + 256);
    head.push_str("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n");
    let mut n = 0;
    while head.len() < HUGE_HEADERS {
        head.push_str(&format!("X-Filler-{n}: {}\r\n", "f".repeat(64)));
        n += 1;
    }
    head.push_str("Content-Length: 2\r\nConnection: close\r\n\r\nok");
    stream.write_all(head.as_bytes()).await?;
    Ok((200, 2))
}

/// A [`HUGE_BODY`]-byte body (none for HEAD).
async fn huge_body<S>(stream: &mut S, head_only: bool) -> io::Result<(u16, u64)>
where
    S: AsyncWrite + Unpin,
{
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {HUGE_BODY}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await?;
    let block = [b'x'; 64 * 1024];
    let mut sent = 0u64;
    while !head_only && sent < HUGE_BODY {
        let n = (HUGE_BODY - sent).min(block.len() as u64) as usize;
        stream.write_all(&block[..n]).await?;
        sent += n as u64;
    }
    Ok((200, sent))
}

/// A head promising 100,000 bytes, 1,000 of them, then silence until the client
/// gives up (or [`STALL`] passes).
async fn stall<S>(stream: &mut S) -> io::Result<(u16, u64)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n";
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&[b'w'; 1000]).await?;
    stream.flush().await?;
    hold(stream).await;
    Ok((200, 1000))
}

/// Holds the connection, reading and dropping whatever comes, until the client
/// closes it (or [`STALL`] passes).
async fn hold<S>(stream: &mut S)
where
    S: AsyncRead + Unpin,
{
    let mut sink = [0u8; 1024];
    let _ = tokio::time::timeout(STALL, async {
        while let Ok(n) = stream.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

/// A small gzip body that inflates to [`BOMB_INFLATED`] bytes (built once).
async fn gzip_bomb<S>(stream: &mut S, head_only: bool) -> io::Result<(u16, u64)>
where
    S: AsyncWrite + Unpin,
{
    let bomb = match BOMB.get() {
        Some(b) => b,
        None => {
            let built = tokio::task::spawn_blocking(build_bomb)
                .await
                .map_err(io::Error::other)??;
            BOMB.get_or_init(|| built)
        }
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        bomb.len()
    );
    stream.write_all(head.as_bytes()).await?;
    if !head_only {
        stream.write_all(bomb).await?;
    }
    Ok((200, bomb.len() as u64))
}

static BOMB: OnceLock<Vec<u8>> = OnceLock::new();

fn build_bomb() -> io::Result<Vec<u8>> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::best());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..BOMB_INFLATED / zeros.len() {
        enc.write_all(&zeros)?;
    }
    enc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn bomb_inflates_to_its_size() {
        let bomb = build_bomb().unwrap();
        assert!(bomb.len() < 200 * 1024, "{}", bomb.len());
        let mut d = flate2::read::GzDecoder::new(&bomb[..]);
        let mut n = 0usize;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let k = d.read(&mut buf).unwrap();
            if k == 0 {
                break;
            }
            n += k;
        }
        assert_eq!(n, BOMB_INFLATED);
    }

    #[test]
    fn routes() {
        assert_eq!(route("/stall"), Misbehavior::Stall);
        assert_eq!(route("/silent"), Misbehavior::Silent);
        assert_eq!(route("/robots.txt"), Misbehavior::NotFound);
    }
}
