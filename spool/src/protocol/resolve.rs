//! Resolve batches (manager -> resolver) and their answers.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// A resolve batch, numbered by the manager; echoed in the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "resolve-{}", self.0)
    }
}

/// The answer for one host name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostAnswer {
    /// The host name exactly as it was asked.
    pub host: String,
    /// What the name resolved to.
    pub result: Resolution,
}

/// A positive or negative DNS answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Resolution {
    /// The name has addresses.
    Addresses {
        /// IPv4 and IPv6 addresses, in the order the resolver prefers (never empty).
        addrs: Vec<IpAddr>,
        /// How long the manager may cache them, in seconds (already clamped).
        ttl_secs: u32,
    },
    /// The name has no usable address.
    Negative {
        /// Whether the name does not exist or the lookup failed.
        kind: NegativeKind,
        /// How long the manager may cache this answer, in seconds.
        ttl_secs: u32,
        /// Human-readable detail ("SERVFAIL from 10.0.0.53", "timed out after 5 s").
        detail: String,
    },
}

/// Why a name has no usable address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NegativeKind {
    /// NXDOMAIN: the name does not exist (authoritative).
    NxDomain,
    /// The name exists but has no A or AAAA record.
    NoAddresses,
    /// The lookup failed (SERVFAIL, refused, timeout): the name may work later.
    Failure,
}
