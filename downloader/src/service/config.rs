//! The `downloader: (...)` section of the polycrawl config: the fetch engine's
//! settings and the page-batch settings, with documented defaults, the checks for
//! values that parse but make no sense ([`DownloaderConfig::validate`]), and the
//! conversion into the engine's runtime [`FetcherConfig`].
//!
//! The documented copy of the defaults lives in `polycrawl/src/config/default.ron`; a test
//! in `polycrawl` checks the two agree. This module must never touch the network or the
//! file system (the CA file is read when the fetcher is built). O(1).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{FetcherConfig, PRODUCT_TOKEN};
use crate::proxy::ProxyConfig;

/// The largest concurrency accepted from the config.
pub const MAX_CONCURRENCY: u32 = 100_000;

/// The smallest batch size accepted, in bytes (a batch holds at least its warcinfo
/// record and one record pair, whatever the size).
pub const MIN_BATCH_BYTES: u64 = 4096;

/// The downloader's settings (`downloader: (...)` in the config file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DownloaderConfig {
    /// The `User-Agent` header; must be printable ASCII containing `polycrawl`.
    /// Empty means `polycrawl/<version>`. Default empty.
    pub user_agent: String,
    /// TCP connect plus TLS handshake timeout, in milliseconds. Default 10000.
    pub connect_timeout_ms: u64,
    /// Time from the request being sent to the first response byte, in
    /// milliseconds. Default 30000.
    pub first_byte_timeout_ms: u64,
    /// Time for a whole fetch, in milliseconds. Default 120000.
    pub total_timeout_ms: u64,
    /// Largest response head (status line and headers), in bytes. Default 65536.
    pub max_header_bytes: u64,
    /// Most header fields in one response head. Default 256.
    pub max_header_fields: u64,
    /// Largest body kept, as received, in bytes; longer bodies are cut and the
    /// record marked truncated. Default 10485760 (10 MiB).
    pub max_body_bytes: u64,
    /// Largest decompressed body, in bytes (gzip-bomb protection). Default
    /// 33554432 (32 MiB).
    pub max_decoded_bytes: u64,
    /// Allow connecting to private, loopback and link-local addresses (the
    /// simulated web needs it). Default `false`.
    pub allow_private: bool,
    /// A PEM file of extra CA certificates trusted besides the built-in roots.
    /// Default `None`.
    pub extra_ca_file: Option<PathBuf>,
    /// Speak HTTP/2 with https servers that offer it (ALPN); the records are
    /// HTTP/1.1-normalised with `WARC-Protocol: h2`. `false`: HTTP/1.1 only.
    /// Default `true`.
    pub http2: bool,
    /// Fetches running at once until the manager sets another limit (1 to
    /// [`MAX_CONCURRENCY`]). Default 500.
    pub concurrency: u32,
    /// An idle keep-alive connection older than this is closed, in milliseconds.
    /// Default 15000.
    pub pool_idle_timeout_ms: u64,
    /// Idle keep-alive connections kept per address (and TLS host). Default 4.
    pub pool_max_idle_per_key: u64,
    /// Idle keep-alive connections kept in total; 0 turns reuse off. Default 1024.
    pub pool_max_idle: u64,
    /// A page batch is published once it holds this many bytes (compressed), in
    /// bytes (at least [`MIN_BATCH_BYTES`]). Default 67108864 (64 MiB).
    pub max_batch_bytes: u64,
    /// A page batch is published at the latest this long after its first record,
    /// in milliseconds. Pages are durable only once published. Default 2000.
    pub max_batch_age_ms: u64,
    /// Gzip level of page batches and robots files, 0 (stored) to 9 (smallest).
    /// Response blocks are deflated by igzip (ISA-L): 1 is its fastest level, 2 to 5
    /// its level 1 (about 10 % smaller, twice the CPU), 6 to 9 its level 3. Default 1.
    pub gzip_level: u32,
    /// A file to append one line per request to, with the request's wire stamps
    /// (see the service's `wire_log` module); several downloaders may share it.
    /// Default `None`.
    pub wire_log: Option<PathBuf>,
    /// The proxy every host goes through unless a rule of `proxy_rules` says
    /// otherwise: `http://[user:pass@]host:port`, `socks5://...` (the resolved
    /// address is sent) or `socks5h://...` (the name is sent, the proxy resolves);
    /// `None` (or `Some("direct")`): direct. Default `None`.
    pub proxy: Option<String>,
    /// Per-host rules, first match wins: hosts matching `hosts` (a domain, a glob
    /// with `*`, or `*`) go through `proxy` (a proxy URL or `"direct"`). Default
    /// none.
    pub proxy_rules: Vec<ProxyRuleConfig>,
}

/// One entry of `downloader.proxy_rules`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyRuleConfig {
    /// The hosts: `example.org` (it and every name under it), `*.example.org`
    /// (a glob), or `*` (every host).
    pub hosts: String,
    /// A proxy URL, or `"direct"`.
    pub proxy: String,
}

impl Default for DownloaderConfig {
    fn default() -> Self {
        let fetcher = FetcherConfig::default();
        Self {
            user_agent: String::new(),
            connect_timeout_ms: millis(fetcher.connect_timeout),
            first_byte_timeout_ms: millis(fetcher.first_byte_timeout),
            total_timeout_ms: millis(fetcher.total_timeout),
            max_header_bytes: fetcher.max_header_bytes as u64,
            max_header_fields: fetcher.max_header_fields as u64,
            max_body_bytes: fetcher.max_body_bytes as u64,
            max_decoded_bytes: fetcher.max_decoded_bytes as u64,
            allow_private: fetcher.allow_private,
            extra_ca_file: None,
            http2: fetcher.http2,
            concurrency: fetcher.concurrency as u32,
            pool_idle_timeout_ms: millis(fetcher.pool_idle_timeout),
            pool_max_idle_per_key: fetcher.pool_max_idle_per_key as u64,
            pool_max_idle: fetcher.pool_max_idle as u64,
            max_batch_bytes: 64 * 1024 * 1024,
            max_batch_age_ms: 2000,
            gzip_level: 1,
            wire_log: None,
            proxy: None,
            proxy_rules: Vec::new(),
        }
    }
}

fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// A config value that parses but makes no sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct InvalidConfig {
    /// Dotted path of the field in the polycrawl config (`downloader.gzip_level`).
    pub field: &'static str,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl DownloaderConfig {
    /// Checks values that parse but make no sense; the error names the field.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let invalid = |field: &'static str, message: String| Err(InvalidConfig { field, message });
        let ua = self.user_agent();
        let printable = ua.bytes().all(|b| (0x20..0x7f).contains(&b));
        if !printable || !ua.to_ascii_lowercase().contains(PRODUCT_TOKEN) {
            return invalid(
                "downloader.user_agent",
                format!("{ua:?} must be printable ASCII containing \"{PRODUCT_TOKEN}\""),
            );
        }
        let positive = [
            ("downloader.connect_timeout_ms", self.connect_timeout_ms),
            (
                "downloader.first_byte_timeout_ms",
                self.first_byte_timeout_ms,
            ),
            ("downloader.total_timeout_ms", self.total_timeout_ms),
            ("downloader.max_header_bytes", self.max_header_bytes),
            ("downloader.max_header_fields", self.max_header_fields),
            ("downloader.max_body_bytes", self.max_body_bytes),
            ("downloader.max_decoded_bytes", self.max_decoded_bytes),
            ("downloader.pool_idle_timeout_ms", self.pool_idle_timeout_ms),
            ("downloader.max_batch_age_ms", self.max_batch_age_ms),
        ];
        for (field, value) in positive {
            if value == 0 {
                return invalid(field, "must be greater than 0".into());
            }
        }
        if !(1..=MAX_CONCURRENCY).contains(&self.concurrency) {
            return invalid(
                "downloader.concurrency",
                format!("{} is outside 1..={MAX_CONCURRENCY}", self.concurrency),
            );
        }
        if self.max_batch_bytes < MIN_BATCH_BYTES {
            return invalid(
                "downloader.max_batch_bytes",
                format!("{} is below {MIN_BATCH_BYTES}", self.max_batch_bytes),
            );
        }
        if self.gzip_level > 9 {
            return invalid(
                "downloader.gzip_level",
                format!("{} is outside 0..=9", self.gzip_level),
            );
        }
        if self
            .extra_ca_file
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            return invalid(
                "downloader.extra_ca_file",
                "must be None or a path, not an empty string".into(),
            );
        }
        self.proxy_config()?;
        Ok(())
    }

    /// The parsed proxy settings; the error names the field and the bad value.
    pub fn proxy_config(&self) -> Result<ProxyConfig, InvalidConfig> {
        let field = if self.proxy_rules.is_empty() {
            "downloader.proxy"
        } else {
            "downloader.proxy or downloader.proxy_rules"
        };
        let rules: Vec<(&str, &str)> = self
            .proxy_rules
            .iter()
            .map(|r| (r.hosts.as_str(), r.proxy.as_str()))
            .collect();
        ProxyConfig::parse(self.proxy.as_deref(), &rules).map_err(|e| InvalidConfig {
            field,
            message: e.to_string(),
        })
    }

    /// The user agent sent: the configured one, or `polycrawl/<version>`.
    pub fn user_agent(&self) -> String {
        if self.user_agent.is_empty() {
            FetcherConfig::default().user_agent
        } else {
            self.user_agent.clone()
        }
    }

    /// The fetch engine's runtime config; fails only on bad proxy settings.
    pub fn fetcher_config(&self) -> Result<FetcherConfig, InvalidConfig> {
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Ok(FetcherConfig {
            user_agent: self.user_agent(),
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            first_byte_timeout: Duration::from_millis(self.first_byte_timeout_ms),
            total_timeout: Duration::from_millis(self.total_timeout_ms),
            max_header_bytes: size(self.max_header_bytes),
            max_header_fields: size(self.max_header_fields),
            max_body_bytes: size(self.max_body_bytes),
            max_decoded_bytes: size(self.max_decoded_bytes),
            allow_private: self.allow_private,
            extra_ca_file: self.extra_ca_file.clone(),
            pool_idle_timeout: Duration::from_millis(self.pool_idle_timeout_ms),
            pool_max_idle_per_key: size(self.pool_max_idle_per_key),
            pool_max_idle: size(self.pool_max_idle),
            concurrency: self.concurrency as usize,
            proxy: self.proxy_config()?,
            http2: self.http2,
        })
    }

    /// The longest a page batch stays open.
    pub fn max_batch_age(&self) -> Duration {
        Duration::from_millis(self.max_batch_age_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_matches_the_engine() {
        let c = DownloaderConfig::default();
        c.validate().unwrap();
        assert_eq!(c.fetcher_config().unwrap(), FetcherConfig::default());
        assert!(!c.allow_private);
        assert_eq!((c.max_batch_bytes, c.max_batch_age_ms), (64 << 20, 2000));
    }

    /// Spoils one field of a config.
    type Spoil = fn(&mut DownloaderConfig);

    #[test]
    fn bad_values_name_the_field() {
        let cases: [(Spoil, &str); 10] = [
            (
                |c| c.proxy = Some("socks4://127.0.0.1:1080".into()),
                "downloader.proxy",
            ),
            (
                |c| {
                    c.proxy_rules = vec![ProxyRuleConfig {
                        hosts: "*.test".into(),
                        proxy: "http://proxy:3128/x".into(),
                    }];
                },
                "downloader.proxy or downloader.proxy_rules",
            ),
            (
                |c| c.user_agent = "Mozilla/5.0".into(),
                "downloader.user_agent",
            ),
            (
                |c| c.user_agent = "polycrawl\r\nX: y".into(),
                "downloader.user_agent",
            ),
            (|c| c.total_timeout_ms = 0, "downloader.total_timeout_ms"),
            (|c| c.max_body_bytes = 0, "downloader.max_body_bytes"),
            (|c| c.concurrency = 0, "downloader.concurrency"),
            (|c| c.max_batch_bytes = 10, "downloader.max_batch_bytes"),
            (|c| c.gzip_level = 10, "downloader.gzip_level"),
            (|c| c.max_batch_age_ms = 0, "downloader.max_batch_age_ms"),
        ];
        for (spoil, field) in cases {
            let mut config = DownloaderConfig::default();
            spoil(&mut config);
            let err = config.validate().unwrap_err();
            assert_eq!(err.field, field, "{err}");
        }
    }

    #[test]
    fn proxy_settings_reach_the_engine() {
        let c = DownloaderConfig {
            proxy: Some("socks5h://u:secret@127.0.0.1:1080".into()),
            proxy_rules: vec![ProxyRuleConfig {
                hosts: "intranet.example".into(),
                proxy: "direct".into(),
            }],
            ..DownloaderConfig::default()
        };
        c.validate().unwrap();
        let proxy = c.fetcher_config().unwrap().proxy;
        assert!(proxy.route("www.intranet.example").is_none());
        let p = proxy.route("a.test").unwrap();
        assert_eq!((p.kind, p.port), (crate::ProxyKind::Socks5h, 1080));
        let bad = DownloaderConfig {
            proxy: Some("http://u:secret@proxy:3128/path".into()),
            ..DownloaderConfig::default()
        };
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains("no path") && !err.contains("secret"), "{err}");
    }
}
