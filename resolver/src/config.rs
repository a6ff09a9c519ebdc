//! The `resolver: (...)` section of the polycrawl config: name servers, limits,
//! timeouts and TTL bounds, with documented defaults, and the checks
//! ([`Config::validate`]) for values that parse but make no sense.
//!
//! The documented copy of the defaults lives in `polycrawl/src/config/default.ron`; a test
//! in `polycrawl` checks the two agree. This module must never touch the network or the
//! file system: it only describes and checks settings. Validation is O(number of
//! name servers).

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The largest concurrency accepted from the config or from the manager's
/// `SetConcurrency`; larger values are refused (config) or clamped (manager).
pub const MAX_CONCURRENCY: u32 = 65_536;

/// The resolver's settings (`resolver: (...)` in the config file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Name servers asked, as `IP:PORT`, in order of preference. Empty means the
    /// system's (`/etc/resolv.conf`). Default empty.
    pub name_servers: Vec<SocketAddr>,
    /// Queries in flight at once (1 to 65536); the manager may change it at run time
    /// with `SetConcurrency`. Default 256.
    pub max_concurrent: u32,
    /// Time allowed for one try of one query, in milliseconds (1 to 60000).
    /// Default 2000.
    pub timeout_ms: u64,
    /// Tries per query before the name is reported as a failure (1 to 10).
    /// Default 2.
    pub attempts: u32,
    /// Positive answers are cached by the manager for at least this long, in
    /// seconds, whatever TTL the name server gave. Default 60.
    pub min_ttl_secs: u32,
    /// ... and at most this long, in seconds (>= `min_ttl_secs`). Default 86400.
    pub max_ttl_secs: u32,
    /// Longest time an NXDOMAIN or no-address answer may be cached, in seconds; the
    /// zone's own negative TTL (from its SOA) is used when shorter, but never less
    /// than `min_ttl_secs`. Also used when the answer carries no SOA. Default 3600.
    pub negative_ttl_secs: u32,
    /// How long a failed lookup (timeout, SERVFAIL, refused) may be cached before
    /// the name is asked again, in seconds. Default 60.
    pub failure_ttl_secs: u32,
    /// Ask for AAAA (IPv6) records as well as A records. Default `false`.
    pub ipv6: bool,
    /// DNS responses kept in the resolver's own cache (0 turns it off). A batch the
    /// manager sends again after a reconnect is then answered from it.
    /// Default 16384.
    pub cache_size: u64,
    /// Host names accepted but not yet answered, across all batches; past it the
    /// resolver stops reading the control connection until answers go out.
    /// Default 65536.
    pub max_pending_names: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            name_servers: Vec::new(),
            max_concurrent: 256,
            timeout_ms: 2000,
            attempts: 2,
            min_ttl_secs: 60,
            max_ttl_secs: 86_400,
            negative_ttl_secs: 3600,
            failure_ttl_secs: 60,
            ipv6: false,
            cache_size: 16_384,
            max_pending_names: 65_536,
        }
    }
}

/// A config value that parses but makes no sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct InvalidConfig {
    /// Dotted path of the field in the polycrawl config (`resolver.min_ttl_secs`).
    pub field: &'static str,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl Config {
    /// Checks values that parse but make no sense; the error names the field.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let invalid = |field: &'static str, message: String| Err(InvalidConfig { field, message });
        if let Some(ns) = self.name_servers.iter().find(|ns| ns.port() == 0) {
            return invalid("resolver.name_servers", format!("{ns} has port 0"));
        }
        if !(1..=MAX_CONCURRENCY).contains(&self.max_concurrent) {
            return invalid(
                "resolver.max_concurrent",
                format!("{} is outside 1..={MAX_CONCURRENCY}", self.max_concurrent),
            );
        }
        if !(1..=60_000).contains(&self.timeout_ms) {
            return invalid(
                "resolver.timeout_ms",
                format!("{} is outside 1..=60000", self.timeout_ms),
            );
        }
        if !(1..=10).contains(&self.attempts) {
            return invalid(
                "resolver.attempts",
                format!("{} is outside 1..=10", self.attempts),
            );
        }
        if self.min_ttl_secs > self.max_ttl_secs {
            return invalid(
                "resolver.min_ttl_secs",
                format!(
                    "{} exceeds max_ttl_secs ({})",
                    self.min_ttl_secs, self.max_ttl_secs
                ),
            );
        }
        if self.max_pending_names == 0 {
            return invalid(
                "resolver.max_pending_names",
                "must be greater than 0".into(),
            );
        }
        Ok(())
    }

    /// The time allowed for one try of one query.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The longest one name may take from its first query to its answer: every try
    /// against every name server, plus one timeout of slack. A safety net around
    /// hickory's own timeouts, so no name can hold a batch forever.
    pub fn name_deadline(&self) -> Duration {
        let servers = self.name_servers.len().max(1) as u32;
        self.timeout() * (self.attempts * servers + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        Config::default().validate().unwrap();
    }

    /// Spoils one field of a config.
    type Spoil = fn(&mut Config);

    #[test]
    fn bad_values_name_the_field() {
        let cases: [(Spoil, &str); 6] = [
            (|c| c.max_concurrent = 0, "resolver.max_concurrent"),
            (|c| c.timeout_ms = 0, "resolver.timeout_ms"),
            (|c| c.attempts = 0, "resolver.attempts"),
            (
                |c| (c.min_ttl_secs, c.max_ttl_secs) = (100, 10),
                "resolver.min_ttl_secs",
            ),
            (|c| c.max_pending_names = 0, "resolver.max_pending_names"),
            (
                |c| c.name_servers = vec!["127.0.0.1:0".parse().unwrap()],
                "resolver.name_servers",
            ),
        ];
        for (spoil, field) in cases {
            let mut config = Config::default();
            spoil(&mut config);
            let err = config.validate().unwrap_err();
            assert_eq!(err.field, field, "{err}");
        }
    }

    #[test]
    fn deadline_covers_every_try() {
        let config = Config {
            name_servers: vec!["127.0.0.1:53".parse().unwrap(); 2],
            timeout_ms: 100,
            attempts: 3,
            ..Config::default()
        };
        assert_eq!(config.name_deadline(), Duration::from_millis(700));
    }
}
