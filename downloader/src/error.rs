//! The typed errors of the fetch engine and the crawl outcome each one maps to.
//!
//! Every way a fetch can fail is one [`FetchError`] variant with a doc line;
//! [`FetchError::class`] maps it onto the shared outcome vocabulary
//! ([`spool::OutcomeReason`]) that fetch reports and outcome files use. A response that
//! arrived but whose Content-Encoding cannot be decoded is *not* a failed fetch: the
//! raw bytes are still archived, and the [`DecodeError`] travels inside the
//! [`Fetched`](crate::Fetched) value (see [`crate::fetched`]).
//!
//! [`ConfigError`] covers building a [`Fetcher`](crate::Fetcher) from a config.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use spool::OutcomeReason;

use crate::address::AddressClass;

/// Why one fetch produced no response.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The URL or job cannot be turned into a request (bad scheme, host or path).
    #[error("invalid target: {reason}")]
    InvalidTarget {
        /// What is wrong with it.
        reason: String,
    },
    /// The address is private, loopback, link-local or otherwise not public, and the
    /// config does not allow it; no connection was attempted.
    #[error("refusing to connect to {class} address {ip}")]
    ForbiddenAddress {
        /// The address that was refused.
        ip: IpAddr,
        /// Which non-public range it falls in.
        class: AddressClass,
    },
    /// The TCP connection was refused, reset or could not be routed.
    #[error("connect to {addr} failed: {source}")]
    Connect {
        /// The address connected to.
        addr: SocketAddr,
        /// The operating system's error.
        source: io::Error,
    },
    /// The proxy the job goes through could not be reached or did not open the
    /// connection to the target: refused, `407` (authentication), a SOCKS5 error
    /// code, a `CONNECT` refused, a reply that is not the protocol, or, for a
    /// plain-http request through an HTTP proxy, a response whose `Proxy-Status`
    /// field reports an error (RFC 9209). Reported like a connection failure.
    #[error("proxy {proxy}: {reason}")]
    Proxy {
        /// The proxy's URL, password hidden.
        proxy: String,
        /// What went wrong, readable.
        reason: String,
    },
    /// TCP connect plus TLS handshake did not finish within the connect timeout.
    #[error("connect to {addr} timed out after {after:?}")]
    ConnectTimeout {
        /// The address connected to.
        addr: SocketAddr,
        /// The timeout that expired.
        after: Duration,
    },
    /// The TLS handshake failed (untrusted certificate, name mismatch, protocol error).
    #[error("TLS handshake with {host} failed: {source}")]
    Tls {
        /// The server name sent as SNI and verified against the certificate.
        host: String,
        /// The handshake error (wraps a `rustls::Error` where rustls produced it).
        source: io::Error,
    },
    /// Writing the request or reading the response failed at the socket level before
    /// the response head was complete (reset, broken pipe).
    #[error("connection to {addr} failed during the exchange: {source}")]
    Io {
        /// The address connected to.
        addr: SocketAddr,
        /// The operating system's error.
        source: io::Error,
    },
    /// The HTTP/2 connection or stream failed before the response head was complete:
    /// the handshake, a GOAWAY or stream reset from the server, a protocol error,
    /// the connection lost.
    #[error("HTTP/2 with {addr} failed: {source}")]
    Http2 {
        /// The address connected to.
        addr: SocketAddr,
        /// What `h2` reported.
        source: h2::Error,
    },
    /// No response byte arrived within the first-byte timeout after the request was sent.
    #[error("no response byte within {after:?}")]
    FirstByteTimeout {
        /// The timeout that expired.
        after: Duration,
    },
    /// The whole fetch (connect, request, response) took longer than the total timeout.
    #[error("fetch did not finish within {after:?}")]
    TotalTimeout {
        /// The timeout that expired.
        after: Duration,
    },
    /// The server closed the connection without sending a single response byte.
    #[error("server closed the connection without a response")]
    EmptyResponse,
    /// The server sent something that is not a valid HTTP/1.x response.
    #[error("bad response: {reason}")]
    BadResponse {
        /// What was wrong with it.
        reason: String,
    },
    /// The response head (status line and headers, interim 1xx heads included) is larger
    /// than the configured cap or has too many header fields.
    #[error("response head larger than {limit} bytes or {max_fields} fields")]
    HeadersTooLarge {
        /// The byte cap in force.
        limit: usize,
        /// The header field count cap in force.
        max_fields: usize,
    },
    /// The body's Content-Encoding could not be decoded; only returned by
    /// [`Fetched::decode`](crate::Fetched::decode), never by `fetch`.
    #[error("cannot decode the response body: {0}")]
    BodyDecode(#[from] DecodeError),
}

impl FetchError {
    /// The crawl outcome this error is reported as.
    pub fn class(&self) -> OutcomeReason {
        match self {
            Self::InvalidTarget { .. } => OutcomeReason::InvalidUrl,
            Self::ForbiddenAddress { .. } => OutcomeReason::ForbiddenAddress,
            Self::Connect { .. } | Self::Tls { .. } | Self::Io { .. } | Self::Proxy { .. } => {
                OutcomeReason::ConnectFailure
            }
            // The server's protocol error is a bad response; a reset, GOAWAY or a
            // lost connection is the connection failing.
            Self::Http2 { source, .. } if source.is_remote() && source.is_reset() => {
                if source.reason() == Some(h2::Reason::PROTOCOL_ERROR) {
                    OutcomeReason::BadResponse
                } else {
                    OutcomeReason::ConnectFailure
                }
            }
            Self::Http2 { source, .. } if source.is_library() => OutcomeReason::BadResponse,
            Self::Http2 { .. } => OutcomeReason::ConnectFailure,
            Self::ConnectTimeout { .. }
            | Self::FirstByteTimeout { .. }
            | Self::TotalTimeout { .. } => OutcomeReason::Timeout,
            Self::EmptyResponse
            | Self::BadResponse { .. }
            | Self::HeadersTooLarge { .. }
            | Self::BodyDecode(_) => OutcomeReason::BadResponse,
        }
    }

    pub(crate) fn bad(reason: impl Into<String>) -> Self {
        Self::BadResponse {
            reason: reason.into(),
        }
    }

    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        Self::InvalidTarget {
            reason: reason.into(),
        }
    }
}

/// Why a body's Content-Encoding could not be undone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The server used a content coding we did not offer and cannot decode.
    #[error("unsupported content coding {0:?}")]
    Unsupported(String),
    /// The gzip or deflate stream is corrupt.
    #[error("corrupt {coding} stream: {message}")]
    Corrupt {
        /// `gzip` or `deflate`.
        coding: &'static str,
        /// flate2's description of the problem.
        message: String,
    },
}

/// Why a [`FetcherConfig`](crate::FetcherConfig) was rejected.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A numeric limit that must be positive is zero.
    #[error("{field} must be greater than zero")]
    Zero {
        /// The config field.
        field: &'static str,
    },
    /// The user agent is empty, lacks the `polycrawl` product token, or holds bytes
    /// that cannot appear in a header value.
    #[error("invalid user agent {0:?}: must be printable ASCII containing \"polycrawl\"")]
    UserAgent(String),
    /// The extra CA file cannot be read.
    #[error("cannot read CA file {path}: {source}")]
    CaFile {
        /// The configured path.
        path: PathBuf,
        /// The I/O or PEM error.
        source: io::Error,
    },
    /// The extra CA file holds no usable certificate.
    #[error("CA file {path} holds no usable certificate ({reason})")]
    CaCertificate {
        /// The configured path.
        path: PathBuf,
        /// Why nothing could be added.
        reason: String,
    },
    /// rustls refused to build a client configuration.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        let io = || io::Error::from(io::ErrorKind::ConnectionRefused);
        let addr: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let cases = [
            (FetchError::invalid("x"), OutcomeReason::InvalidUrl),
            (
                FetchError::ForbiddenAddress {
                    ip: addr.ip(),
                    class: AddressClass::Loopback,
                },
                OutcomeReason::ForbiddenAddress,
            ),
            (
                FetchError::Connect { addr, source: io() },
                OutcomeReason::ConnectFailure,
            ),
            (
                FetchError::Tls {
                    host: "a".into(),
                    source: io(),
                },
                OutcomeReason::ConnectFailure,
            ),
            (
                FetchError::Proxy {
                    proxy: "socks5://127.0.0.1:1080".into(),
                    reason: "SOCKS5 CONNECT failed: connection refused".into(),
                },
                OutcomeReason::ConnectFailure,
            ),
            (
                FetchError::TotalTimeout {
                    after: Duration::ZERO,
                },
                OutcomeReason::Timeout,
            ),
            (
                FetchError::FirstByteTimeout {
                    after: Duration::ZERO,
                },
                OutcomeReason::Timeout,
            ),
            (FetchError::EmptyResponse, OutcomeReason::BadResponse),
            (
                FetchError::HeadersTooLarge {
                    limit: 1,
                    max_fields: 1,
                },
                OutcomeReason::BadResponse,
            ),
            (
                DecodeError::Unsupported("br".into()).into(),
                OutcomeReason::BadResponse,
            ),
        ];
        for (err, class) in cases {
            assert_eq!(err.class(), class, "{err}");
        }
    }
}
