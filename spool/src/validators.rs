//! Validators: what a recrawl knows about an earlier response of a URL and sends
//! back as conditional request headers (RFC 9110 section 13): the `ETag` as
//! `If-None-Match`, the `Last-Modified` as `If-Modified-Since`.
//!
//! They travel with the URL from the application to the downloader: the `etag` and
//! `modified` hints of a request file ([`crate::formats::urls`]), the manager's
//! queue entry, the fetch job ([`crate::protocol::FetchJob`]). The downloader writes
//! them as request headers (so they are in the WARC request record too).
//!
//! This module checks values so that none can break a request head or a text line:
//! an entity tag is printable ASCII without spaces (RFC 9110's `entity-tag`
//! characters), at most [`MAX_ETAG_LEN`] bytes.

use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

/// Longest entity tag kept (longer ones are not sent back).
pub const MAX_ETAG_LEN: usize = 256;

/// The validators of an earlier response; either may be absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Validators {
    /// The earlier response's `ETag`, exactly as sent (quotes and a `W/` included):
    /// sent as `If-None-Match`.
    pub etag: Option<String>,
    /// The earlier response's `Last-Modified`, in seconds since the Unix epoch:
    /// sent as `If-Modified-Since`.
    pub modified: Option<u64>,
}

impl Validators {
    /// True when neither is set (the request is not conditional).
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.modified.is_none()
    }

    /// The validators of a response with these `ETag` and `Last-Modified` header
    /// values: an entity tag that [`valid_etag`] rejects, or a date that does not
    /// parse as an HTTP-date, is left out.
    pub fn from_headers(etag: Option<&str>, last_modified: Option<&str>) -> Validators {
        Validators {
            etag: etag
                .map(str::trim)
                .filter(|e| valid_etag(e))
                .map(str::to_owned),
            modified: last_modified
                .and_then(|d| httpdate::parse_http_date(d.trim()).ok())
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map(|d| d.as_secs()),
        }
    }

    /// The `If-Modified-Since` value (an IMF-fixdate), if `modified` is set.
    pub fn if_modified_since(&self) -> Option<String> {
        self.modified
            .map(|secs| httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)))
    }
}

/// True when `etag` may be sent back: 1 to [`MAX_ETAG_LEN`] bytes of visible ASCII
/// (`!` to `~`), which keeps it to one header line and one hint field.
pub fn valid_etag(etag: &str) -> bool {
    !etag.is_empty() && etag.len() <= MAX_ETAG_LEN && etag.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_headers_keeps_what_can_be_sent_back() {
        let v =
            Validators::from_headers(Some(" W/\"abc\" "), Some("Thu, 01 Jan 2026 00:00:00 GMT"));
        assert_eq!(v.etag.as_deref(), Some("W/\"abc\""));
        assert_eq!(v.modified, Some(1_767_225_600));
        assert_eq!(
            v.if_modified_since().as_deref(),
            Some("Thu, 01 Jan 2026 00:00:00 GMT")
        );
        let bad = Validators::from_headers(Some("\"a b\""), Some("yesterday"));
        assert!(bad.is_empty());
        assert!(!valid_etag(""));
        assert!(!valid_etag(&"x".repeat(MAX_ETAG_LEN + 1)));
        assert!(!valid_etag("\"caf\u{e9}\""));
        assert!(valid_etag("\"0123456789abcdef\""));
    }
}
