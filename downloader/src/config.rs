//! The fetch engine's runtime configuration, with documented defaults.
//!
//! This is the validated runtime struct; the serde layer (RON file plus flags) lives
//! in `polycrawl` and fills it in. [`FetcherConfig::validate`] runs inside
//! [`Fetcher::new`](crate::Fetcher::new), so an invalid config never reaches a fetch.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::ConfigError;
use crate::proxy::ProxyConfig;

/// The product token every user agent must carry, so site operators can find us.
pub const PRODUCT_TOKEN: &str = "polycrawl";

/// Limits and switches for a [`Fetcher`](crate::Fetcher).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetcherConfig {
    /// The `User-Agent` header. Must contain `polycrawl`. Default `polycrawl/<version>`.
    pub user_agent: String,
    /// TCP connect plus TLS handshake. Default 10 s.
    pub connect_timeout: Duration,
    /// From the request being written to the first response byte. Default 30 s.
    pub first_byte_timeout: Duration,
    /// The whole fetch, from taking a concurrency permit to the last body byte.
    /// Default 120 s. A [`JobLimits`](crate::JobLimits) value may lower it per job.
    pub total_timeout: Duration,
    /// Cap on the response head (status line and headers, 1xx heads included).
    /// Larger heads fail with `HeadersTooLarge`. Default 64 KiB.
    pub max_header_bytes: usize,
    /// Cap on header fields in one head. Default 256.
    pub max_header_fields: usize,
    /// Cap on body bytes as received (chunk framing included). Past it the body is
    /// cut, marked truncated and the connection closed. Default 10 MiB.
    pub max_body_bytes: usize,
    /// Cap on the decoded (decompressed) entity body: gzip-bomb protection.
    /// Default 32 MiB.
    pub max_decoded_bytes: usize,
    /// Allow private, loopback, link-local and other non-public addresses
    /// (the simulated web needs this). Default `false`.
    pub allow_private: bool,
    /// A PEM file of extra CA certificates trusted besides the webpki roots.
    /// Default none.
    pub extra_ca_file: Option<PathBuf>,
    /// An idle pooled connection older than this is closed, not reused. Default 15 s.
    pub pool_idle_timeout: Duration,
    /// Idle connections kept per (address, scheme, TLS host). Default 4.
    pub pool_max_idle_per_key: usize,
    /// Idle connections kept in total; 0 disables reuse. Default 1024.
    pub pool_max_idle: usize,
    /// Fetches running at once; changeable at run time. 0 pauses. Default 500.
    pub concurrency: usize,
    /// Which hosts go through which proxy. Default: every host direct.
    pub proxy: ProxyConfig,
    /// Offer HTTP/2 in TLS (ALPN `h2, http/1.1`) and speak it where the server
    /// picks it; `false`: HTTP/1.1 only. Plain http is always HTTP/1.1. Default
    /// `true`.
    pub http2: bool,
}

impl Default for FetcherConfig {
    fn default() -> Self {
        Self {
            user_agent: concat!("polycrawl/", env!("CARGO_PKG_VERSION")).to_owned(),
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(30),
            total_timeout: Duration::from_secs(120),
            max_header_bytes: 64 * 1024,
            max_header_fields: 256,
            max_body_bytes: 10 * 1024 * 1024,
            max_decoded_bytes: 32 * 1024 * 1024,
            allow_private: false,
            extra_ca_file: None,
            pool_idle_timeout: Duration::from_secs(15),
            pool_max_idle_per_key: 4,
            pool_max_idle: 1024,
            concurrency: 500,
            proxy: ProxyConfig::default(),
            http2: true,
        }
    }
}

impl FetcherConfig {
    /// Checks the values that would make every fetch fail or the requests malformed.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let ua = &self.user_agent;
        let printable = ua.bytes().all(|b| (0x20..0x7f).contains(&b));
        if !printable || !ua.to_ascii_lowercase().contains(PRODUCT_TOKEN) {
            return Err(ConfigError::UserAgent(ua.clone()));
        }
        let durations = [
            ("connect_timeout", self.connect_timeout),
            ("first_byte_timeout", self.first_byte_timeout),
            ("total_timeout", self.total_timeout),
        ];
        for (field, d) in durations {
            if d.is_zero() {
                return Err(ConfigError::Zero { field });
            }
        }
        let sizes = [
            ("max_header_bytes", self.max_header_bytes),
            ("max_header_fields", self.max_header_fields),
            ("max_body_bytes", self.max_body_bytes),
            ("max_decoded_bytes", self.max_decoded_bytes),
        ];
        for (field, n) in sizes {
            if n == 0 {
                return Err(ConfigError::Zero { field });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_safe() {
        let c = FetcherConfig::default();
        c.validate().unwrap();
        assert!(!c.allow_private);
        assert!(c.user_agent.starts_with("polycrawl/"));
    }

    #[test]
    fn rejects_bad_values() {
        let mut c = FetcherConfig {
            user_agent: "Mozilla/5.0".into(),
            ..FetcherConfig::default()
        };
        assert!(matches!(c.validate(), Err(ConfigError::UserAgent(_))));
        c.user_agent = "polycrawl/1\r\nX-Evil: 1".into();
        assert!(matches!(c.validate(), Err(ConfigError::UserAgent(_))));
        c.user_agent = "MyBot (polycrawl; +https://example.org/bot)".into();
        c.validate().unwrap();
        c.max_body_bytes = 0;
        assert!(matches!(
            c.validate(),
            Err(ConfigError::Zero {
                field: "max_body_bytes"
            })
        ));
    }
}
