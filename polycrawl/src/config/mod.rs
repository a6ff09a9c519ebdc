//! The polycrawl config: one RON file, every field documented with its default in
//! `default.ron` (printed by `polycrawl config --default`).
//!
//! Two layers, as the style guide asks: serde structs with `deny_unknown_fields` and
//! defaults for every field, then [`Config::validate`] for values that parse but make
//! no sense. Every error names the field (`control.max_frame_bytes`), the file and,
//! for parse errors, the line.
//!
//! This module must never hold per-process state: it only reads and checks files.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The documented default config, exactly as `polycrawl config --default` prints it.
pub const DEFAULT_RON: &str = include_str!("default.ron");

/// The whole config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The shared spool directory.
    pub spool: SpoolConfig,
    /// The control connection to the manager.
    pub control: ControlConfig,
    /// The DNS resolver service (`polycrawl resolver`).
    pub resolver: resolver::Config,
    /// The downloader service (`polycrawl downloader`).
    pub downloader: downloader::DownloaderConfig,
    /// The breadth-first application (`polycrawl app`).
    pub app: app_core::AppConfig,
    /// The crawl manager (`polycrawl manager`).
    pub manager: manager::ManagerConfig,
    /// The URL Frontier gRPC service (`polycrawl frontier`).
    pub frontier: urlfrontier::FrontierConfig,
}

/// `spool: (...)`: where the spool is and how consumers discover files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SpoolConfig {
    /// Root directory of the spool.
    pub root: PathBuf,
    /// Whether change events are used as a wake-up hint.
    pub notify: bool,
}

/// `control: (...)`: the manager's control port and its rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControlConfig {
    /// HOST:PORT of the manager's control port.
    pub manager_addr: String,
    /// Shared secret presented in every Hello; empty means not set.
    pub token: String,
    /// Largest accepted frame, in bytes.
    pub max_frame_bytes: u32,
    /// Heartbeat period, in milliseconds.
    pub heartbeat_interval_ms: u64,
    /// Silence after which a component is dropped, in milliseconds.
    pub heartbeat_timeout_ms: u64,
}

impl Default for SpoolConfig {
    fn default() -> Self {
        Self {
            root: PathBuf::from("spool"),
            notify: true,
        }
    }
}

impl Default for ControlConfig {
    fn default() -> Self {
        Self {
            manager_addr: "127.0.0.1:7400".to_owned(),
            token: String::new(),
            max_frame_bytes: 16 * 1024 * 1024,
            heartbeat_interval_ms: 2000,
            heartbeat_timeout_ms: 10_000,
        }
    }
}

/// A config that could not be read, parsed or validated.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The config file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The text is not valid RON for the config, or names an unknown field.
    #[error("config {origin}: field `{field}`: {message}")]
    Parse {
        /// The file name, or "(text)".
        origin: String,
        /// Dotted path of the field at fault (`.` for the top level).
        field: String,
        /// What is wrong, with the position in the file.
        message: String,
    },
    /// A field parsed but holds a value that makes no sense.
    #[error("config {origin}: field `{field}`: {message}")]
    Invalid {
        /// The file name, or "(text)".
        origin: String,
        /// Dotted path of the field at fault.
        field: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
}

impl Config {
    /// Reads, parses and validates the config file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Reads `path` if given, else returns the defaults.
    pub fn load_or_default(path: Option<&Path>) -> Result<Self, ConfigError> {
        match path {
            Some(p) => Self::load(p),
            None => Ok(Self::default()),
        }
    }

    /// Parses and validates config text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let parse_err = |field: String, message: String| ConfigError::Parse {
            origin: origin.to_owned(),
            field,
            message,
        };
        let mut de = ron::Deserializer::from_str(text)
            .map_err(|e| parse_err(".".to_owned(), e.to_string()))?;
        let config: Config = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            parse_err(field, de.span_error(inner).to_string())
        })?;
        de.end()
            .map_err(|e| parse_err(".".to_owned(), de.span_error(e).to_string()))?;
        config.validate(origin)?;
        Ok(config)
    }

    /// Checks values that parse but make no sense.
    pub fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let invalid = |field: &'static str, message: String| {
            Err(ConfigError::Invalid {
                origin: origin.to_owned(),
                field,
                message,
            })
        };
        if self.spool.root.as_os_str().is_empty() {
            return invalid("spool.root", "must not be empty".into());
        }
        let c = &self.control;
        if !valid_host_port(&c.manager_addr) {
            return invalid(
                "control.manager_addr",
                format!("{:?} is not HOST:PORT", c.manager_addr),
            );
        }
        if !(1024..=1 << 30).contains(&c.max_frame_bytes) {
            return invalid(
                "control.max_frame_bytes",
                format!("{} is outside 1024..=1073741824", c.max_frame_bytes),
            );
        }
        if c.heartbeat_interval_ms == 0 {
            return invalid(
                "control.heartbeat_interval_ms",
                "must be greater than 0".into(),
            );
        }
        if c.heartbeat_timeout_ms <= c.heartbeat_interval_ms {
            return invalid(
                "control.heartbeat_timeout_ms",
                format!(
                    "{} must exceed heartbeat_interval_ms ({})",
                    c.heartbeat_timeout_ms, c.heartbeat_interval_ms
                ),
            );
        }
        if let Err(e) = self.resolver.validate() {
            return invalid(e.field, e.message);
        }
        if let Err(e) = self.downloader.validate() {
            return invalid(e.field, e.message);
        }
        if let Err(app_core::AppError::Config { field, reason }) = self.app.scope() {
            return invalid(field, reason);
        }
        if let Err(e) = self.manager.validate() {
            return invalid(e.field, e.message);
        }
        if let Err(urlfrontier::FrontierError::Config { field, reason }) = self.frontier.validate()
        {
            return invalid(field, reason);
        }
        Ok(())
    }
}

/// `HOST:PORT` with a non-empty host and a numeric port (IPv6 hosts in brackets).
fn valid_host_port(s: &str) -> bool {
    match s.rsplit_once(':') {
        Some((host, port)) => !host.is_empty() && port.parse::<u16>().is_ok(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_default_equals_default() {
        let parsed = Config::parse(DEFAULT_RON, "default.ron").unwrap();
        assert_eq!(parsed, Config::default());
    }

    /// Every field of the config appears in default.ron, under a comment.
    #[test]
    fn every_field_is_documented() {
        let text = ron::to_string(&Config::default()).unwrap();
        let value: ron::Value = ron::from_str(&text).unwrap();
        let mut fields = Vec::new();
        collect_fields(&value, &mut fields);
        assert!(fields.len() >= 8, "{fields:?}");
        let lines: Vec<&str> = DEFAULT_RON.lines().map(str::trim).collect();
        for field in fields {
            let at = lines
                .iter()
                .position(|l| l.starts_with(&format!("{field}:")))
                .unwrap_or_else(|| panic!("field {field} missing from default.ron"));
            assert!(
                at > 0 && lines[at - 1].starts_with("//"),
                "field {field} has no comment above it in default.ron"
            );
        }
    }

    fn collect_fields(value: &ron::Value, out: &mut Vec<String>) {
        if let ron::Value::Map(map) = value {
            for (k, v) in map.iter() {
                if let ron::Value::String(name) = k {
                    out.push(name.clone());
                }
                collect_fields(v, out);
            }
        }
    }

    #[test]
    fn empty_and_partial_configs_take_defaults() {
        assert_eq!(Config::parse("()", "t").unwrap(), Config::default());
        let c = Config::parse("(spool: (root: \"/srv/spool\"))", "t").unwrap();
        assert_eq!(c.spool.root, PathBuf::from("/srv/spool"));
        assert_eq!(c.control, ControlConfig::default());
    }

    #[test]
    fn unknown_field_is_named() {
        let err = Config::parse("(spool: (scan_intervall_ms: 5))", "my.ron").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("my.ron"), "{msg}");
        assert!(msg.contains("scan_intervall_ms"), "{msg}");
    }

    /// `spool.scan_interval_ms` was read by no service (each consumer has its own
    /// scan period: `app.scan_interval_ms`, `manager.frontier.request_scan_interval_ms`):
    /// a config that still sets it is refused like any unknown field, naming it.
    #[test]
    fn the_removed_spool_scan_interval_is_refused() {
        let err = Config::parse("(spool: (scan_interval_ms: 2000))", "old.ron").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("old.ron"), "{msg}");
        assert!(msg.contains("spool"), "{msg}");
        assert!(msg.contains("scan_interval_ms"), "{msg}");
    }

    #[test]
    fn bad_type_names_the_field() {
        let err = Config::parse("(control: (max_frame_bytes: \"big\"))", "t").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("control.max_frame_bytes"), "{msg}");
    }

    #[test]
    fn bad_values_name_the_field() {
        for (text, field) in [
            (
                "(control: (max_frame_bytes: 10))",
                "control.max_frame_bytes",
            ),
            (
                "(control: (manager_addr: \"nohost\"))",
                "control.manager_addr",
            ),
            (
                "(control: (heartbeat_interval_ms: 5000, heartbeat_timeout_ms: 100))",
                "control.heartbeat_timeout_ms",
            ),
            (
                "(resolver: (min_ttl_secs: 600, max_ttl_secs: 60))",
                "resolver.min_ttl_secs",
            ),
            ("(resolver: (max_concurrent: 0))", "resolver.max_concurrent"),
            ("(downloader: (gzip_level: 12))", "downloader.gzip_level"),
            (
                "(downloader: (proxy: Some(\"socks4://127.0.0.1:1080\")))",
                "downloader.proxy",
            ),
            (
                "(downloader: (proxy_rules: [(hosts: \"a b\", proxy: \"direct\")]))",
                "downloader.proxy or downloader.proxy_rules",
            ),
            ("(manager: (dns_batch_size: 0))", "manager.dns_batch_size"),
            (
                "(manager: (frontier: (max_failures: 0)))",
                "manager.frontier.max_failures",
            ),
            (
                "(downloader: (user_agent: \"Mozilla/5.0\"))",
                "downloader.user_agent",
            ),
            (
                "(resolver: (name_servers: [\"127.0.0.1:0\"]))",
                "resolver.name_servers",
            ),
        ] {
            let msg = Config::parse(text, "t").unwrap_err().to_string();
            assert!(msg.contains(field), "{text}: {msg}");
        }
    }

    #[test]
    fn trailing_garbage_is_an_error() {
        assert!(Config::parse("() junk", "t").is_err());
    }
}
