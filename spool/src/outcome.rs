//! Why a requested URL produced no page: the one outcome vocabulary shared by the
//! manager (which writes outcome files), the protocol (fetch reports) and the
//! application (which reads them to track completion).
//!
//! Each reason has a stable lower-case name used in text files; never renumber or
//! rename one, add new ones at the end.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The reason a URL ended without a page.
///
/// Serde names are the [`as_str`](Self::as_str) names (JSON of the admin API);
/// postcard encodes the variant index, never the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeReason {
    /// robots.txt of the host disallows the URL for our user agent.
    RobotsExcluded,
    /// The host or one of its domain suffixes is blacklisted.
    Blacklisted,
    /// The host name does not resolve (NXDOMAIN, no address, or the lookup failed).
    DnsFailure,
    /// The TCP or TLS connection could not be made.
    ConnectFailure,
    /// A connect, first-byte or total timeout expired.
    Timeout,
    /// The host failed too many times in a row; its remaining URLs were dropped.
    TooManyFailures,
    /// The URL could not be parsed or uses an unsupported scheme.
    InvalidUrl,
    /// The server sent a response that is not valid HTTP.
    BadResponse,
    /// The address is private, loopback or link-local and the config forbids it.
    ForbiddenAddress,
    /// Not the end of a requested URL: a sitemap that the robots.txt of a host
    /// holding this application's URLs names (`Sitemap:` lines). The manager writes
    /// one such line per sitemap when it fetches a robots.txt, with the detail
    /// `depth=N` (see [`sitemap_depth`]); the application requests the sitemap like
    /// a link found at that depth, or ignores it. Never counted as an outcome.
    Sitemap,
}

/// The detail of a [`OutcomeReason::Sitemap`] line: `depth=N`, the link depth the
/// sitemap is requested at (the depth of the host's URL that the robots.txt was
/// fetched for, plus one).
pub fn sitemap_detail(depth: u32) -> String {
    format!("depth={depth}")
}

/// The depth of a [`OutcomeReason::Sitemap`] line's detail (see [`sitemap_detail`]);
/// `None` when the detail says none.
pub fn sitemap_depth(detail: &str) -> Option<u32> {
    detail.trim().strip_prefix("depth=")?.parse().ok()
}

impl OutcomeReason {
    /// Every reason, in declaration order.
    pub const ALL: [OutcomeReason; 10] = [
        Self::RobotsExcluded,
        Self::Blacklisted,
        Self::DnsFailure,
        Self::ConnectFailure,
        Self::Timeout,
        Self::TooManyFailures,
        Self::InvalidUrl,
        Self::BadResponse,
        Self::ForbiddenAddress,
        Self::Sitemap,
    ];

    /// The stable name used in outcome files and statistics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RobotsExcluded => "robots_excluded",
            Self::Blacklisted => "blacklisted",
            Self::DnsFailure => "dns_failure",
            Self::ConnectFailure => "connect_failure",
            Self::Timeout => "timeout",
            Self::TooManyFailures => "too_many_failures",
            Self::InvalidUrl => "invalid_url",
            Self::BadResponse => "bad_response",
            Self::ForbiddenAddress => "forbidden_address",
            Self::Sitemap => "sitemap",
        }
    }
}

impl fmt::Display for OutcomeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text that names no known outcome reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown outcome reason {0:?}")]
pub struct UnknownReason(pub String);

impl FromStr for OutcomeReason {
    type Err = UnknownReason;
    fn from_str(s: &str) -> Result<Self, UnknownReason> {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownReason(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for r in OutcomeReason::ALL {
            assert_eq!(r.as_str().parse::<OutcomeReason>().unwrap(), r);
        }
        assert!("nope".parse::<OutcomeReason>().is_err());
    }

    #[test]
    fn sitemap_detail_round_trips() {
        assert_eq!(sitemap_depth(&sitemap_detail(7)), Some(7));
        assert_eq!(sitemap_depth("depth=x"), None);
        assert_eq!(sitemap_depth(""), None);
    }
}
