//! `Retry-After` (RFC 9110 section 10.2.3): how long a server that answered 429 Too
//! Many Requests or 503 Service Unavailable asks us to wait. The downloader parses
//! the header of such a response into a [`RetryAfter`] and sends it with the fetch
//! report; the manager decides what to do with it (cap, back-off).
//!
//! Both forms of the header are read: delta-seconds (`120`) and an HTTP-date
//! (`Fri, 31 Dec 1999 23:59:59 GMT`, and the obsolete RFC 850 and asctime forms,
//! via the `httpdate` crate). Anything else is no header at all: the manager then
//! backs off on its own rule. This module must never read a clock: the date form is
//! kept as a date and turned into a wait against the caller's `now`.

use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Longest header value looked at; longer ones are not a valid `Retry-After`.
const MAX_LEN: usize = 64;

/// A parsed `Retry-After` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RetryAfter {
    /// Wait this many seconds from the response.
    Seconds(u64),
    /// Wait until this time, in seconds since the UNIX epoch.
    Date(u64),
}

impl RetryAfter {
    /// Parses a header value (surrounding spaces ignored); `None` if it is neither
    /// delta-seconds nor an HTTP-date.
    pub fn parse(value: &[u8]) -> Option<RetryAfter> {
        if value.len() > MAX_LEN {
            return None;
        }
        let text = std::str::from_utf8(value).ok()?.trim();
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            // Too many digits for a u64 is a wait longer than any cap.
            return Some(RetryAfter::Seconds(text.parse().unwrap_or(u64::MAX)));
        }
        let when = httpdate::parse_http_date(text).ok()?;
        let secs = when.duration_since(UNIX_EPOCH).ok()?.as_secs();
        Some(RetryAfter::Date(secs))
    }

    /// The wait it asks for, counted from `now_ms` (wall-clock ms since the epoch):
    /// a date in the past asks for none.
    pub fn wait_ms(self, now_ms: u64) -> u64 {
        match self {
            RetryAfter::Seconds(s) => s.saturating_mul(1000),
            RetryAfter::Date(secs) => secs.saturating_mul(1000).saturating_sub(now_ms),
        }
    }

    /// The wait as a [`Duration`], counted from `now_ms`.
    pub fn wait(self, now_ms: u64) -> Duration {
        Duration::from_millis(self.wait_ms(now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_seconds() {
        assert_eq!(RetryAfter::parse(b"5"), Some(RetryAfter::Seconds(5)));
        assert_eq!(RetryAfter::parse(b" 120 "), Some(RetryAfter::Seconds(120)));
        assert_eq!(RetryAfter::parse(b"0"), Some(RetryAfter::Seconds(0)));
        assert_eq!(
            RetryAfter::parse(b"99999999999999999999999"),
            Some(RetryAfter::Seconds(u64::MAX))
        );
        assert_eq!(RetryAfter::Seconds(5).wait_ms(123), 5000);
        assert_eq!(RetryAfter::Seconds(u64::MAX).wait_ms(0), u64::MAX);
    }

    #[test]
    fn http_dates_in_all_three_forms() {
        // 1999-12-31T23:59:59Z = 946684799.
        for v in [
            "Fri, 31 Dec 1999 23:59:59 GMT",
            "Friday, 31-Dec-99 23:59:59 GMT",
            "Fri Dec 31 23:59:59 1999",
        ] {
            assert_eq!(
                RetryAfter::parse(v.as_bytes()),
                Some(RetryAfter::Date(946_684_799)),
                "{v}"
            );
        }
        let date = RetryAfter::Date(946_684_799);
        assert_eq!(date.wait_ms(946_684_794_000), 5000);
        assert_eq!(
            date.wait_ms(946_684_800_000),
            0,
            "a past date asks for no wait"
        );
    }

    #[test]
    fn anything_else_is_no_header() {
        for v in [
            &b""[..],
            b"soon",
            b"-5",
            b"5.5",
            b"1e3",
            b"Fri, 31 Dec 1999",
            b"\xff\xfe",
            &[b'1'; 65][..],
        ] {
            assert_eq!(RetryAfter::parse(v), None, "{v:?}");
        }
    }
}
