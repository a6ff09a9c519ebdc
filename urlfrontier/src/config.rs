//! The `frontier:` config section: where the gRPC service listens and how it
//! treats the URLs the manager releases to it. Every field has a default right for
//! one machine (`polycrawl config --default` prints them).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::FrontierError;

/// The URL Frontier API's conventional port, on loopback.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7071";

/// Settings of the URL Frontier service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FrontierConfig {
    /// Where the gRPC service listens (`IP:PORT`; port 0 picks a free one).
    pub listen: String,
    /// The application id its URLs are crawled under (`requests/<app>/`).
    pub app: String,
    /// Where the seen set of discovered URLs lives.
    pub state_dir: PathBuf,
    /// A `GetURLs` lease when the client leaves `delay_requestable` at 0: a URL
    /// not reported within it is handed out again. Milliseconds.
    pub lease_ms: u64,
    /// Jobs held from the manager at most (handed out or waiting); the manager
    /// keeps twice this many out to the frontier, as to a downloader.
    pub max_jobs: u32,
    /// The seen set's buffer, in bytes.
    pub seen_buffer_bytes: usize,
    /// How often discovered URLs are merged into the seen set and the new ones
    /// written to a request file, in milliseconds.
    pub merge_interval_ms: u64,
}

impl Default for FrontierConfig {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN.to_owned(),
            app: "frontier".to_owned(),
            state_dir: PathBuf::from("frontier-state"),
            lease_ms: 30_000,
            max_jobs: 1024,
            seen_buffer_bytes: 16 << 20,
            merge_interval_ms: 200,
        }
    }
}

impl FrontierConfig {
    /// Checks every field; the error names the first at fault.
    pub fn validate(&self) -> Result<(), FrontierError> {
        let bad = |field: &'static str, reason: &str| {
            Err(FrontierError::Config {
                field,
                reason: reason.to_owned(),
            })
        };
        if self.listen.parse::<std::net::SocketAddr>().is_err() {
            return bad("frontier.listen", "must be IP:PORT");
        }
        if spool::AppId::new(self.app.clone()).is_err() {
            return bad("frontier.app", "must be 1-32 bytes of [a-z0-9_-]");
        }
        if self.lease_ms == 0 {
            return bad("frontier.lease_ms", "must be greater than 0");
        }
        if self.max_jobs == 0 {
            return bad("frontier.max_jobs", "must be greater than 0");
        }
        if !(1 << 16..=seen::MAX_BUFFER_BYTES).contains(&self.seen_buffer_bytes) {
            return bad("frontier.seen_buffer_bytes", "must be 64 KiB to 2 GiB");
        }
        if self.merge_interval_ms == 0 {
            return bad("frontier.merge_interval_ms", "must be greater than 0");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_fields_are_named() {
        FrontierConfig::default().validate().unwrap();
        let c = FrontierConfig {
            listen: "localhost".into(),
            ..FrontierConfig::default()
        };
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("frontier.listen")
        );
        let c = FrontierConfig {
            app: "Bad App".into(),
            ..FrontierConfig::default()
        };
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("frontier.app")
        );
    }
}
