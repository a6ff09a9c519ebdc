//! [`ManagerConfig`]: the `manager: (...)` section of the polycrawl config, the
//! service's knobs around the scheduling core (whose own settings are embedded as
//! `frontier`).
//!
//! File layer of the two-layer config (STYLE.md habit 6): serde with
//! `deny_unknown_fields` and a default for every field; [`ManagerConfig::validate`]
//! names the field at fault as `manager.<field>` (`manager.frontier.<field>` for the
//! core's). Times are milliseconds. This module must never read files or the
//! environment: `polycrawl` does, and overrides fields from flags.

pub(crate) mod schedule;
pub mod speed;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use self::speed::SpeedConfig;
use crate::FrontierConfig;
use crate::frontier::FrontierError;

/// The crawl manager service's settings (DESIGN.md section 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ManagerConfig {
    /// The manager's own state: the RocksDB database in `<state_dir>/db` and the
    /// checkpoints in `<state_dir>/checkpoints/<n>`. Default `state`.
    pub state_dir: PathBuf,
    /// The secret admin connections (`polycrawl status`) must present. Empty: not
    /// set, admin connections use the control token and may only read the status.
    /// Default empty.
    pub admin_token: String,
    /// Where the admin page and its JSON API listen, as `IP:PORT` (port 0 picks a
    /// free one); empty turns them off. Loopback by default: on any other address
    /// everyone who reaches it reads the figures (changes still need the admin
    /// token). Default `127.0.0.1:7401`.
    pub admin_http: String,
    /// Host names per `ResolveBatch`. Small batches keep one slow name from holding
    /// many answers back. Default 64.
    pub dns_batch_size: usize,
    /// A resolve batch not answered within this time is sent to another resolver.
    /// Default 30,000.
    pub dns_batch_timeout_ms: u64,
    /// Jobs kept outstanding per downloader, as a multiple of its concurrency (from
    /// its heartbeats), so it never waits for the next batch. Default 2.
    pub jobs_per_downloader_factor: f64,
    /// How often a checkpoint of the database is written; 0 turns periodic
    /// checkpoints off. Default 600,000 (10 min).
    pub checkpoint_interval_ms: u64,
    /// Checkpoints kept; older ones are deleted. Default 2.
    pub checkpoints_kept: usize,
    /// How often one INFO status line is logged. Default 10,000.
    pub status_interval_ms: u64,
    /// How often subscribed applications are sent their `AppProgress`. Default 1,000.
    pub progress_interval_ms: u64,
    /// On SIGTERM, how long downloaders get to finish, publish and report their
    /// work before the manager stops anyway. Default 10,000.
    pub shutdown_grace_ms: u64,
    /// Speed control: the time-of-day schedule and downloaders' connection counts
    /// (the base target is `frontier.target_pages_per_sec`).
    pub speed: SpeedConfig,
    /// The scheduling core: queues, politeness, robots.txt, DNS cache, speed target.
    pub frontier: FrontierConfig,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        Self {
            state_dir: PathBuf::from("state"),
            admin_token: String::new(),
            admin_http: "127.0.0.1:7401".to_owned(),
            dns_batch_size: 64,
            dns_batch_timeout_ms: 30_000,
            jobs_per_downloader_factor: 2.0,
            checkpoint_interval_ms: 600_000,
            checkpoints_kept: 2,
            status_interval_ms: 10_000,
            progress_interval_ms: 1_000,
            shutdown_grace_ms: 10_000,
            speed: SpeedConfig::default(),
            frontier: FrontierConfig::default(),
        }
    }
}

/// A manager config value that parses but makes no sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct InvalidConfig {
    /// Dotted path of the field in the polycrawl config (`manager.dns_batch_size`).
    pub field: &'static str,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ManagerConfig {
    /// Checks the values; the error names the field as `manager.<field>`.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let invalid = |field: &'static str, message: &str| {
            Err(InvalidConfig {
                field,
                message: message.to_owned(),
            })
        };
        if self.state_dir.as_os_str().is_empty() {
            return invalid("manager.state_dir", "must not be empty");
        }
        if self.admin_token.len() > spool::protocol::Token::MAX_LEN {
            return invalid("manager.admin_token", "must be at most 256 bytes");
        }
        if !self.admin_http.is_empty() && self.admin_http.parse::<std::net::SocketAddr>().is_err() {
            return invalid(
                "manager.admin_http",
                "must be IP:PORT (e.g. 127.0.0.1:7401), or empty to turn the admin page off",
            );
        }
        if !(1..=10_000).contains(&self.dns_batch_size) {
            return invalid("manager.dns_batch_size", "must be 1 to 10000");
        }
        if self.dns_batch_timeout_ms == 0 {
            return invalid("manager.dns_batch_timeout_ms", "must be greater than 0");
        }
        let factor = self.jobs_per_downloader_factor;
        if !(factor.is_finite() && (1.0..=100.0).contains(&factor)) {
            return invalid(
                "manager.jobs_per_downloader_factor",
                "must be a number from 1 to 100",
            );
        }
        if self.checkpoints_kept == 0 {
            return invalid("manager.checkpoints_kept", "must be at least 1");
        }
        if self.status_interval_ms == 0 {
            return invalid("manager.status_interval_ms", "must be greater than 0");
        }
        if self.progress_interval_ms == 0 {
            return invalid("manager.progress_interval_ms", "must be greater than 0");
        }
        self.speed.validate()?;
        match self.frontier.validate() {
            Err(FrontierError::Config { field, why }) => invalid(frontier_field(field), why),
            _ => Ok(()),
        }
    }
}

/// `manager.frontier.<field>` for a field named by [`FrontierConfig::validate`].
fn frontier_field(field: &str) -> &'static str {
    match field {
        "robots_agent" => "manager.frontier.robots_agent",
        "component_id" => "manager.frontier.component_id",
        "target_pages_per_sec" => "manager.frontier.target_pages_per_sec",
        "ready_factor" => "manager.frontier.ready_factor",
        "adaptive_factor" => "manager.frontier.adaptive_factor",
        "backoff_ms" => "manager.frontier.backoff_ms",
        "max_failures" => "manager.frontier.max_failures",
        "max_url_attempts" => "manager.frontier.max_url_attempts",
        "outcome_batch_lines" => "manager.frontier.outcome_batch_lines",
        "pop_batch/load_chunk_urls/max_load_chunks_per_call" => {
            "manager.frontier.pop_batch/load_chunk_urls/max_load_chunks_per_call"
        }
        _ => "manager.frontier",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_errors_name_the_field() {
        ManagerConfig::default().validate().unwrap();
        let bad = ManagerConfig {
            dns_batch_size: 0,
            ..ManagerConfig::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "manager.dns_batch_size");
        let mut bad = ManagerConfig::default();
        bad.frontier.backoff_ms.clear();
        assert_eq!(
            bad.validate().unwrap_err().field,
            "manager.frontier.backoff_ms"
        );
        let bad = ManagerConfig {
            admin_http: "localhost:7401".into(),
            ..ManagerConfig::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "manager.admin_http");
        let off = ManagerConfig {
            admin_http: String::new(),
            ..ManagerConfig::default()
        };
        off.validate().unwrap();
        let mut bad = ManagerConfig::default();
        bad.frontier.max_failures = 0;
        assert_eq!(
            bad.validate().unwrap_err().field,
            "manager.frontier.max_failures"
        );
    }

    #[test]
    fn partial_ron_takes_defaults_and_unknown_keys_are_errors() {
        let c: ManagerConfig =
            ron::from_str("(dns_batch_size: 8, frontier: (interval_ms: 5))").unwrap();
        assert_eq!(c.dns_batch_size, 8);
        assert_eq!(c.frontier.interval_ms, 5);
        assert_eq!(c.checkpoints_kept, 2);
        assert!(ron::from_str::<ManagerConfig>("(dns_batch: 8)").is_err());
    }
}
