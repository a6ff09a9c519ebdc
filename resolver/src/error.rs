//! The resolver's one error type: the reasons the service cannot start or must stop.
//!
//! Lookup failures are not errors here: they are answers
//! ([`Resolution::Negative`](spool::protocol::Resolution)). A lost manager connection
//! is not one either: the service reconnects. Only what retrying cannot fix ends
//! [`run`](crate::run).

use hickory_resolver::net::NetError;
use spool::protocol::ProtocolError;

use crate::config::InvalidConfig;

/// Why the resolver could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ResolverError {
    /// A config value makes no sense.
    #[error("invalid resolver config: {0}")]
    Config(#[from] InvalidConfig),
    /// `name_servers` is empty and the system's resolver config could not be read.
    #[error("resolver.name_servers is empty and the system resolver config cannot be used: {0}")]
    SystemConfig(#[source] NetError),
    /// `name_servers` is empty and the system's resolver config names no server.
    #[error("resolver.name_servers is empty and the system resolver config lists no name server")]
    NoNameServers,
    /// hickory could not build a resolver from the config.
    #[error("cannot build the DNS resolver: {0}")]
    Build(#[source] NetError),
    /// The manager refused the handshake (wrong token, other protocol version):
    /// retrying cannot help.
    #[error("the manager at {manager} refused this resolver: {source}")]
    Refused {
        /// The manager's address, as configured.
        manager: String,
        /// The refusal, with the manager's reason.
        source: ProtocolError,
    },
    /// The manager closed this connection because another resolver registered with
    /// the same id; this one stops so the two do not take turns.
    #[error("another resolver registered with the manager under the same id {id}")]
    Replaced {
        /// The id both resolvers use.
        id: String,
    },
}
