//! The request log: one TSV line per request, so tests can check what a crawler
//! fetched, when, and from which address (politeness, robots). The format is
//! written ([`format_line`]) and read back ([`Line::parse_all`]) here only: tests
//! and benchmarks read the file through [`Line`], never with a parser of their own.
//!
//! Columns (tab-separated; `-` for a missing value). The file starts with one
//! comment line ([`HEADER`], starting with `#`) that names the columns and the clock
//! of each stamp; readers skip lines starting with `#`.
//!
//! | # | column | example |
//! |---|---|---|
//! | 1 | start: unix µs, `CLOCK_REALTIME`, read right after the request head was parsed (so at or after its last byte arrived) | `1732269600123456` |
//! | 2 | end: unix µs, `CLOCK_REALTIME`, read right after the response's last byte was handed to the kernel (or the connection given up), before any logging or bookkeeping | `1732269600123789` |
//! | 3 | scheme of the listener | `http` |
//! | 4 | `Host` header as sent | `www.acme17.test:8080` |
//! | 5 | server address (listener) | `127.1.0.7:8080` |
//! | 6 | client address | `127.0.0.1:51234` |
//! | 7 | method | `GET` |
//! | 8 | request target (path and query) as sent | `/item?id=7&cat=3` |
//! | 9 | status sent (0 when no status line was sent) | `200` |
//! | 10 | body bytes sent (after content encoding) | `13012` |
//! | 11 | `User-Agent` | `polycrawl/0.1 (+https://...)` |
//! | 12 | write from: unix µs, `CLOCK_REALTIME`, read right before the response's first byte was handed to the kernel (after a slow host's delay) | `1732269600123700` |
//! | 13 | service time: µs, `CLOCK_MONOTONIC`, from the start stamp's reading to the end stamp's | `333` |
//!
//! What the stamps bound: a stamp is read after the event it marks (start, end)
//! or before it (write from), and the task can be descheduled in between, so the
//! request arrived at or before `start`, the last byte was handed over at or
//! before `end`, and the first byte at or after `write from`. A crawler's next
//! request therefore came at least `start(next) - write_from(previous)` after it
//! could have had the previous response: a smaller figure than its interval is
//! proof of an early request. `start(next) - end(previous)` proves nothing: `end`
//! can be late by however long the task was not running (a 16 ms service time for
//! a 90-byte redirect was seen on a loaded machine).
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

/// The comment line the log file starts with.
pub const HEADER: &str = "# start_us end_us scheme host server client method target status bytes \
user_agent write_from_us service_us; *_us stamps: unix microseconds of CLOCK_REALTIME \
(start: after the request head was parsed; end: after the last response byte was handed \
to the kernel; write_from: before the first was); service_us: CLOCK_MONOTONIC \
microseconds from start to end\n";

/// How often the buffer goes to the file.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// One request, as logged.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Unix microseconds when the request head was complete.
    pub start_us: u64,
    /// Unix microseconds right after the response's last byte was handed to the
    /// kernel.
    pub end_us: u64,
    /// Unix microseconds right before its first byte was (0: nothing was written).
    pub write_from_us: u64,
    /// Microseconds from `start_us` to `end_us` on the monotonic clock.
    pub service_us: u64,
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
    let _ = writeln!(out, "\t{}\t{}", r.write_from_us, r.service_us);
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
    /// Creates (truncates) the log file and writes its [`HEADER`].
    pub fn create(path: &Path) -> io::Result<Arc<RequestLog>> {
        let with_path = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        let mut file = File::create(path).map_err(with_path)?;
        file.write_all(HEADER.as_bytes()).map_err(with_path)?;
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

/// robots.txt paths: websim's `/robots.txt` and the target of its `redirect`
/// variant (see `respond`).
pub const ROBOTS_PATHS: [&str; 2] = ["/robots.txt", "/robots-real.txt"];

/// One request read back from the log file: a [`Record`] as [`format_line`] wrote
/// it, owned (a missing value is the `-` it was written as).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Unix microseconds (`CLOCK_REALTIME`), read after the request head was parsed:
    /// the request arrived at or before it.
    pub start_us: u64,
    /// Unix microseconds, read after the response's last byte was handed to the
    /// kernel: an upper bound of that moment (late when websim's task was
    /// descheduled).
    pub end_us: u64,
    /// Unix microseconds, read before the response's first byte was handed to the
    /// kernel: a lower bound of that moment.
    pub write_from_us: u64,
    /// Microseconds from `start_us` to `end_us` on websim's monotonic clock.
    pub service_us: u64,
    /// `http` or `https`.
    pub scheme: String,
    /// Host header.
    pub host: String,
    /// Listener address.
    pub server: SocketAddr,
    /// Client address.
    pub client: SocketAddr,
    /// Method.
    pub method: String,
    /// Request target.
    pub target: String,
    /// Status.
    pub status: u16,
    /// Body bytes sent.
    pub bytes: u64,
    /// User agent.
    pub user_agent: String,
}

/// A log line that is not what [`format_line`] writes.
#[derive(Debug, thiserror::Error)]
#[error("websim request log: {what} in {line:?}")]
pub struct LineError {
    /// What is wrong (the column that is missing or does not parse).
    pub what: &'static str,
    /// The line.
    pub line: String,
}

impl Line {
    /// Parses one line written by [`format_line`] (without its newline).
    pub fn parse(line: &str) -> Result<Line, LineError> {
        let mut f = line.split('\t');
        let mut next = |what: &'static str| {
            f.next().ok_or_else(|| LineError {
                what,
                line: line.to_owned(),
            })
        };
        let (start, end, scheme, host) =
            (next("start")?, next("end")?, next("scheme")?, next("host")?);
        let (server, client, method, target) = (
            next("server")?,
            next("client")?,
            next("method")?,
            next("target")?,
        );
        let (status, bytes, user_agent) = (next("status")?, next("bytes")?, next("user agent")?);
        let (write_from, service) = (next("write from")?, next("service time")?);
        fn num<T: std::str::FromStr>(
            v: &str,
            what: &'static str,
            line: &str,
        ) -> Result<T, LineError> {
            v.parse().map_err(|_| LineError {
                what,
                line: line.to_owned(),
            })
        }
        Ok(Line {
            start_us: num(start, "start", line)?,
            end_us: num(end, "end", line)?,
            write_from_us: num(write_from, "write from", line)?,
            service_us: num(service, "service time", line)?,
            scheme: scheme.to_owned(),
            host: host.to_owned(),
            server: num(server, "server", line)?,
            client: num(client, "client", line)?,
            method: method.to_owned(),
            target: target.to_owned(),
            status: num(status, "status", line)?,
            bytes: num(bytes, "bytes", line)?,
            user_agent: user_agent.to_owned(),
        })
    }

    /// Every request of a log file's text, in the order logged (the [`HEADER`]
    /// and any other `#` line skipped; a last line without its newline, being
    /// written, left out).
    pub fn parse_all(text: &str) -> Result<Vec<Line>, LineError> {
        let whole = text.rfind('\n').map_or(0, |i| i + 1);
        text[..whole]
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(Line::parse)
            .collect()
    }

    /// The URL as requested: `scheme://Host/target`.
    pub fn url(&self) -> String {
        format!("{}://{}{}", self.scheme, self.host, self.target)
    }

    /// `scheme://Host` (the manager's unit of politeness).
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.host)
    }

    /// The Host header without its port, lower-case.
    pub fn name(&self) -> String {
        let host = self.host.as_str();
        host.rsplit_once(':')
            .map_or(host, |(n, _)| n)
            .to_ascii_lowercase()
    }

    /// Whether this was a robots.txt fetch (see [`ROBOTS_PATHS`]).
    pub fn is_robots(&self) -> bool {
        ROBOTS_PATHS.contains(&self.target.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_thirteen_columns_and_reach_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.tsv");
        let log = RequestLog::create(&path).unwrap();
        let flusher = log.start_flusher();
        let mut line = Vec::new();
        format_line(
            &mut line,
            &Record {
                start_us: 1,
                end_us: 3,
                write_from_us: 2,
                service_us: 2,
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
        // The flusher writes it within FLUSH_EVERY: wait for the file to hold it.
        test_support::wait::poll_every(Duration::from_secs(10), Duration::from_millis(5), || {
            let text = std::fs::read_to_string(&path).unwrap();
            (text.lines().count() == 2).then_some(())
        });
        let text = std::fs::read_to_string(&path).unwrap();
        let (header, line) = text.split_once('\n').unwrap();
        assert!(header.starts_with("# start_us") && header.contains("CLOCK_REALTIME"));
        assert_eq!(
            line,
            "1\t3\thttp\ta.test\t127.1.0.1:80\t127.0.0.1:5000\tGET\t/x y\t200\t10\t-\t2\t2\n"
        );
        assert_eq!(HEADER.split_whitespace().nth(13), Some("service_us;"));
        drop(flusher);
    }

    #[test]
    fn lines_read_back_as_written() {
        let record = Record {
            start_us: 10,
            end_us: 30,
            write_from_us: 20,
            service_us: 19,
            scheme: "https",
            host: Some("A.test:8443"),
            server: "127.1.0.1:8443".parse().unwrap(),
            client: "127.0.0.1:5000".parse().unwrap(),
            method: "GET",
            target: "/robots.txt",
            status: 404,
            bytes: 7,
            user_agent: Some("bot\t1"),
        };
        let mut text = HEADER.as_bytes().to_vec();
        format_line(&mut text, &record);
        format_line(&mut text, &record);
        text.extend_from_slice(b"11\t31\thttp"); // a line being written
        let lines = Line::parse_all(std::str::from_utf8(&text).unwrap()).unwrap();
        assert_eq!(lines.len(), 2);
        let line = &lines[0];
        assert_eq!(
            (
                line.start_us,
                line.end_us,
                line.write_from_us,
                line.service_us
            ),
            (10, 30, 20, 19)
        );
        assert_eq!((line.status, line.bytes), (404, 7));
        assert_eq!(line.user_agent, "bot 1");
        assert_eq!(line.url(), "https://A.test:8443/robots.txt");
        assert_eq!(line.origin(), "https://A.test:8443");
        assert_eq!(line.name(), "a.test");
        assert!(line.is_robots());
        assert_eq!(line.server, record.server);
        let err = Line::parse("1\t2\thttp").unwrap_err();
        assert_eq!(err.what, "host");
        let err = Line::parse(&"x\t".repeat(13)).unwrap_err();
        assert_eq!(err.what, "start");
    }
}
