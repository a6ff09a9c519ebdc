//! The request log: one TSV line per request, so tests can check what a crawler
//! fetched, when, and from which address (politeness, robots).
//!
//! Columns (tab-separated, no header line; `-` for a missing value):
//!
//! | # | column | example |
//! |---|---|---|
//! | 1 | start, unix microseconds (request head received) | `1732269600123456` |
//! | 2 | end, unix microseconds (response written, or connection given up) | `1732269600123789` |
//! | 3 | scheme of the listener | `http` |
//! | 4 | `Host` header as sent | `www.acme17.test:8080` |
//! | 5 | server address (listener) | `127.1.0.7:8080` |
//! | 6 | client address | `127.0.0.1:51234` |
//! | 7 | method | `GET` |
//! | 8 | request target (path and query) as sent | `/item?id=7&cat=3` |
//! | 9 | status sent (0 when no status line was sent) | `200` |
//! | 10 | body bytes sent (after content encoding) | `13012` |
//! | 11 | `User-Agent` | `polycrawl/0.1 (+https://...)` |
//!
//! Tabs, CR and LF inside values are written as spaces. robots.txt fetches are
//! logged like any request. Lines are appended to a memory buffer and written to
//! the file by a flusher thread at least every [`FLUSH_EVERY`] and at exit, so a
//! test can read the file while websim runs. Memory: the buffer holds at most one
//! flush interval of lines.

use std::fs::File;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often the buffer goes to the file.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// One request, as logged.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Unix microseconds when the request head was complete.
    pub start_us: u64,
    /// Unix microseconds when the response was written.
    pub end_us: u64,
    /// `http` or `https`.
    pub scheme: &'a str,
    /// `Host` header.
    pub host: Option<&'a str>,
    /// Listener address.
    pub server: SocketAddr,
    /// Client address.
    pub client: SocketAddr,
    /// Method.
    pub method: &'a str,
    /// Request target.
    pub target: &'a str,
    /// Status sent (0: none).
    pub status: u16,
    /// Body bytes sent.
    pub bytes: u64,
    /// `User-Agent` header.
    pub user_agent: Option<&'a str>,
}

/// Microseconds since the Unix epoch.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Appends one log line for `r` to `out`.
pub fn format_line(out: &mut Vec<u8>, r: &Record<'_>) {
    let _ = write!(out, "{}\t{}\t{}\t", r.start_us, r.end_us, r.scheme);
    field(out, r.host);
    let _ = write!(out, "\t{}\t{}\t", r.server, r.client);
    field(out, Some(r.method));
    out.push(b'\t');
    field(out, Some(r.target));
    let _ = write!(out, "\t{}\t{}\t", r.status, r.bytes);
    field(out, r.user_agent);
    out.push(b'\n');
}

fn field(out: &mut Vec<u8>, v: Option<&str>) {
    match v {
        None | Some("") => out.push(b'-'),
        Some(s) => out.extend(s.bytes().map(|b| {
            if matches!(b, b'\t' | b'\r' | b'\n') {
                b' '
            } else {
                b
            }
        })),
    }
}

/// The log: a buffer and the file it is flushed to.
#[derive(Debug)]
pub struct RequestLog {
    buf: Mutex<Vec<u8>>,
    file: Mutex<File>,
}

impl RequestLog {
    /// Creates (truncates) the log file.
    pub fn create(path: &Path) -> io::Result<Arc<RequestLog>> {
        let file = File::create(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(Arc::new(RequestLog {
            buf: Mutex::new(Vec::with_capacity(1 << 16)),
            file: Mutex::new(file),
        }))
    }

    /// Appends already formatted lines (see [`format_line`]).
    pub fn append(&self, lines: &[u8]) {
        self.buf
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(lines);
    }

    /// Writes the buffer to the file.
    pub fn flush(&self) -> io::Result<()> {
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let pending = {
            let mut buf = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
            if buf.is_empty() {
                return Ok(());
            }
            std::mem::replace(&mut *buf, Vec::with_capacity(1 << 16))
        };
        file.write_all(&pending)?;
        file.flush()
    }

    /// Starts the flusher thread; dropping the returned handle stops it after a
    /// last flush.
    pub fn start_flusher(self: &Arc<Self>) -> Flusher {
        let (stop, stopped) = mpsc::channel::<()>();
        let log = Arc::clone(self);
        let thread = std::thread::Builder::new()
            .name("websim-log".into())
            .spawn(move || {
                loop {
                    let done = !matches!(
                        stopped.recv_timeout(FLUSH_EVERY),
                        Err(RecvTimeoutError::Timeout)
                    );
                    if let Err(e) = log.flush() {
                        tracing::warn!(error = %e, "websim: writing the request log failed");
                    }
                    if done {
                        break;
                    }
                }
            })
            .ok();
        Flusher {
            stop: Some(stop),
            thread,
        }
    }
}

/// Handle of the flusher thread.
#[derive(Debug)]
pub struct Flusher {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Flusher {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_eleven_columns_and_reach_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.tsv");
        let log = RequestLog::create(&path).unwrap();
        let flusher = log.start_flusher();
        let mut line = Vec::new();
        format_line(
            &mut line,
            &Record {
                start_us: 1,
                end_us: 2,
                scheme: "http",
                host: Some("a.test"),
                server: "127.1.0.1:80".parse().unwrap(),
                client: "127.0.0.1:5000".parse().unwrap(),
                method: "GET",
                target: "/x\ty",
                status: 200,
                bytes: 10,
                user_agent: None,
            },
        );
        log.append(&line);
        std::thread::sleep(FLUSH_EVERY * 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "1\t2\thttp\ta.test\t127.1.0.1:80\t127.0.0.1:5000\tGET\t/x y\t200\t10\t-\n"
        );
        drop(flusher);
    }
}
