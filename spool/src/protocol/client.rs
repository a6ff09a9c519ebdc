//! The client side every component shares (resolver, downloader, application,
//! admin tools): [`ControlSettings`] (where the manager is, the token, this
//! component's id, limits, reconnect pacing), [`connect`] (TCP connect plus the
//! handshake, both bounded), the reconnect [`Backoff`], [`default_id`], and the
//! session driver every client runs ([`run`] with a [`ClientRole`], in
//! `session.rs`).
//!
//! This module must never print the token (a [`Token`] is redacted in `Debug`) or
//! retry without a pause. Everything here is O(1).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::timeout;

use super::{
    Connection, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_FRAME, Hello, Limits, ProtocolError, Role,
    Token, Welcome, client_handshake,
};
use crate::ids::ComponentId;

pub use super::session::{ClientRole, Link, Outcome, Step, Stop, run};

/// How long work in flight gets to finish when the process is asked to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Where the manager is and how to talk to it.
#[derive(Debug, Clone)]
pub struct ControlSettings {
    /// The manager's control port, `HOST:PORT` (`control.manager_addr`). A host name
    /// here is looked up by the system resolver: it is the crawler's own
    /// infrastructure, not a crawled name.
    pub manager_addr: String,
    /// The shared secret presented in the `Hello` (`control.token`).
    pub token: Token,
    /// This component's id, unique among components of its role; also its producer
    /// and consumer id in the spool.
    pub id: ComponentId,
    /// Largest frame sent or accepted, in bytes (`control.max_frame_bytes`).
    pub max_frame: u32,
    /// Time allowed for the TCP connect plus the handshake, each.
    pub handshake_timeout: Duration,
    /// First pause before reconnecting after a failure; doubles up to `reconnect_max`.
    pub reconnect_min: Duration,
    /// Longest pause between reconnect attempts.
    pub reconnect_max: Duration,
    /// How long work in flight gets to finish when the shutdown token fires.
    pub shutdown_grace: Duration,
}

impl ControlSettings {
    /// Settings with the protocol's default limits, reconnecting after 200 ms at
    /// first and at most every 10 s.
    pub fn new(manager_addr: impl Into<String>, token: Token, id: ComponentId) -> Self {
        Self {
            manager_addr: manager_addr.into(),
            token,
            id,
            max_frame: DEFAULT_MAX_FRAME,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            reconnect_min: Duration::from_millis(200),
            reconnect_max: Duration::from_secs(10),
            shutdown_grace: SHUTDOWN_GRACE,
        }
    }

    /// The frame and handshake limits for the protocol.
    pub fn limits(&self) -> Limits {
        Limits {
            max_frame: self.max_frame,
            handshake_timeout: self.handshake_timeout,
        }
    }
}

/// Connects to the manager and registers as `role`; the connect and the handshake
/// are each bounded by `control.handshake_timeout`.
pub async fn connect(
    control: &ControlSettings,
    role: Role,
) -> Result<(Connection, Welcome), ProtocolError> {
    let limit = control.handshake_timeout;
    let stream = match timeout(limit, TcpStream::connect(control.manager_addr.as_str())).await {
        Ok(stream) => stream?,
        Err(_) => return Err(ProtocolError::HandshakeTimeout(limit)),
    };
    stream.set_nodelay(true)?;
    let hello = Hello::new(role, control.id.clone(), control.token.clone());
    client_handshake(stream, hello, control.limits()).await
}

/// Handshake failures that reconnecting cannot fix: a refusal (wrong token, bad
/// Hello) or another protocol version.
pub fn is_final(e: &ProtocolError) -> bool {
    matches!(
        e,
        ProtocolError::Refused { .. } | ProtocolError::VersionMismatch { .. }
    )
}

/// `<prefix>-<hostname>-<pid>`: the hostname lower-cased with every character
/// outside `[a-z0-9_-]` turned into `-`, cut so the id fits 64 bytes.
pub fn default_id(prefix: &str) -> ComponentId {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    id_from(prefix, host.trim(), std::process::id())
}

fn id_from(prefix: &str, host: &str, pid: u32) -> ComponentId {
    let suffix = format!("-{pid}");
    let room = ComponentId::MAX_LEN.saturating_sub(prefix.len() + 1 + suffix.len());
    let mut clean: String = host
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_' | '-') => c,
            _ => '-',
        })
        .take(room)
        .collect();
    if clean.is_empty() {
        clean.push_str("host");
    }
    ComponentId::new(format!("{prefix}-{clean}{suffix}"))
        .or_else(|_| ComponentId::new(prefix))
        .unwrap_or_else(|_| ComponentId::new("component").expect("a valid literal id"))
}

/// Exponential back-off with jitter between reconnect attempts.
#[derive(Debug)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Starts at `min` and doubles up to `max`.
    pub fn new(min: Duration, max: Duration) -> Self {
        let min = min.max(Duration::from_millis(1));
        let max = max.max(min);
        Self {
            min,
            max,
            next: min,
        }
    }

    /// The pause before the next attempt: the current step plus up to 25 % random
    /// jitter (so many components do not reconnect in step); the step doubles.
    pub fn next_delay(&mut self) -> Duration {
        let step = self.next;
        self.next = (step * 2).min(self.max);
        let quarter = step.as_millis() as u64 / 4;
        let jitter = match quarter {
            0 => 0,
            q => RandomState::new().hash_one(step) % q,
        };
        step + Duration::from_millis(jitter)
    }

    /// Back to the shortest pause (after a session that lasted).
    pub fn reset(&mut self) {
        self.next = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ids_are_valid() {
        assert_eq!(
            id_from("dl", "Crawl01.Example.COM", 42).as_str(),
            "dl-crawl01-example-com-42"
        );
        assert_eq!(id_from("resolver", "", 7).as_str(), "resolver-host-7");
        let long = id_from("resolver", &"h".repeat(200), u32::MAX);
        assert_eq!(long.as_str().len(), ComponentId::MAX_LEN);
        default_id("dl");
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(350));
        let steps: Vec<u128> = (0..4).map(|_| b.next_delay().as_millis()).collect();
        for (got, base) in steps.iter().zip([100, 200, 350, 350]) {
            assert!((base..=base + base / 4).contains(got), "{steps:?}");
        }
        b.reset();
        assert!(b.next_delay() < Duration::from_millis(126));
    }
}
