//! The downloaders' wire log (`downloader.wire_log`, see the downloader's
//! `service/wire_log.rs`): one line per request a downloader sent or tried, with
//! its own stamps of when the request went out and the response came in.
//!
//! These are the crawler's measurements, the ones politeness is judged on
//! ([`crate::politeness`]): unix microseconds of the system clock
//! (`CLOCK_REALTIME`), `sent_us` read before the request's first byte was written,
//! `written_us` after its last byte was handed to the kernel, `received_us` after
//! the response's last byte was read (for a failure: when the downloader gave up).
//! A gap measured from them is never longer than the real one.

use std::net::SocketAddr;
use std::path::Path;

/// One request as the downloader logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireLine {
    /// Before the request's first byte was written (0: no request was written,
    /// e.g. the connection failed).
    pub sent_us: u64,
    /// After its last byte was handed to the kernel (0: it was not).
    pub written_us: u64,
    /// After the response's last byte was read, or when the downloader gave up.
    pub received_us: u64,
    /// The downloader's id.
    pub downloader: String,
    /// The manager's job number.
    pub job: u64,
    /// `page` or `robots`.
    pub purpose: String,
    /// The address connected to.
    pub addr: SocketAddr,
    /// The URL as requested on the wire (scheme, lower-case host, port unless the
    /// default, path and query).
    pub url: String,
    /// The status, or the failure's outcome reason.
    pub result: String,
}

impl WireLine {
    /// Whether a request was written (its stamps are a request's).
    pub fn was_sent(&self) -> bool {
        self.sent_us > 0
    }

    /// Whether a response came back (the result is a status).
    pub fn answered(&self) -> bool {
        self.result.parse::<u16>().is_ok()
    }

    /// `scheme://authority` of the URL: the manager's unit of politeness.
    pub fn origin(&self) -> String {
        origin_of(&self.url)
    }
}

/// `scheme://authority` of a URL.
pub fn origin_of(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    format!("{scheme}://{authority}")
}

/// Every line of the wire log at `path` (none if it does not exist yet).
///
/// # Panics
/// On a malformed line.
pub fn read(path: &Path) -> Vec<WireLine> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => panic!("{}: {e}", path.display()),
    };
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| parse(l).unwrap_or_else(|| panic!("malformed wire log line {l:?}")))
        .collect()
}

fn parse(line: &str) -> Option<WireLine> {
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() != 9 {
        return None;
    }
    Some(WireLine {
        sent_us: f[0].parse().ok()?,
        written_us: f[1].parse().ok()?,
        received_us: f[2].parse().ok()?,
        downloader: f[3].to_owned(),
        job: f[4].parse().ok()?,
        purpose: f[5].to_owned(),
        addr: f[6].parse().ok()?,
        url: f[7].to_owned(),
        result: f[8].to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_origins() {
        let l = parse("10\t11\t20\tdl-1\t7\tpage\t127.1.0.1:8080\thttp://a.test:8080/x?y\t301")
            .unwrap();
        assert_eq!(
            (l.sent_us, l.written_us, l.received_us, l.job),
            (10, 11, 20, 7)
        );
        assert!(l.was_sent() && l.answered());
        assert_eq!(l.origin(), "http://a.test:8080");
        let f = parse(
            "0\t0\t5\tdl-2\t8\trobots\t127.1.0.2:443\thttps://b.test/robots.txt\tconnect_failure",
        )
        .unwrap();
        assert!(!f.was_sent() && !f.answered());
        assert!(parse("1\t2\t3").is_none());
    }
}
