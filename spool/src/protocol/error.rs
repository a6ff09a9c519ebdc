//! The one error type of the control protocol. Every variant's message is written
//! for the operator reading the log; the server sends the same text to a refused
//! client, so both ends of a failed handshake read the same sentence.

use std::fmt;
use std::io;
use std::time::Duration;

use super::message::Role;
use super::preamble::RefusalCode;
use crate::ids::ComponentId;

/// Everything that can go wrong on a control connection.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// Reading from or writing to the socket failed.
    #[error("control connection I/O error: {0}")]
    Io(#[from] io::Error),
    /// The peer's first bytes are not the polycrawl magic `PCRL`.
    #[error("not a polycrawl control connection: got bytes {}", ShowBytes(got))]
    BadMagic {
        /// The four bytes received instead.
        got: [u8; 4],
    },
    /// The peer speaks another protocol version.
    #[error("protocol version mismatch: peer speaks v{peer}, this {role} speaks v{ours}")]
    VersionMismatch {
        /// The peer's version.
        peer: u16,
        /// Our version.
        ours: u16,
        /// Our role, to name this side in the message.
        role: Role,
    },
    /// The client's token is not the configured one.
    #[error("wrong token for {role} {id}")]
    BadToken {
        /// The role the client claimed.
        role: Role,
        /// The id the client claimed.
        id: ComponentId,
    },
    /// The server refused the handshake; `reason` is the server's own message.
    #[error("the control server refused the connection: {reason}")]
    Refused {
        /// Which check failed.
        code: RefusalCode,
        /// The server's explanation.
        reason: String,
    },
    /// The peer did not complete the handshake in time.
    #[error("no complete handshake from the peer within {} ms", .0.as_millis())]
    HandshakeTimeout(Duration),
    /// The peer closed the connection before the handshake was complete.
    #[error("the peer closed the connection during the handshake")]
    ClosedDuringHandshake,
    /// A handshake frame held another message than the one expected there.
    #[error("expected {expected} but the peer sent {got}")]
    Unexpected {
        /// The message that belongs here.
        expected: &'static str,
        /// The message received.
        got: &'static str,
    },
    /// The peer announced a frame larger than our limit; it was not read.
    #[error("frame of {size} bytes exceeds the {limit}-byte limit")]
    FrameTooLarge {
        /// The length the peer announced.
        size: u32,
        /// Our limit.
        limit: u32,
    },
    /// A message to send is larger than our frame limit; nothing was sent.
    #[error("{kind} message of {size} bytes exceeds the {limit}-byte frame limit; not sent")]
    MessageTooLarge {
        /// The message's variant name.
        kind: &'static str,
        /// Its encoded size.
        size: usize,
        /// Our limit.
        limit: u32,
    },
    /// The peer closed the connection in the middle of a frame.
    #[error("the peer closed the connection after {got} of the {expected} bytes of a frame")]
    TruncatedFrame {
        /// Bytes received (length prefix included).
        got: usize,
        /// Bytes the frame needed (length prefix included; 4 if the prefix itself was cut).
        expected: usize,
    },
    /// A frame is not a message of this protocol version.
    #[error("could not decode a {size}-byte message: {source}")]
    Undecodable {
        /// The frame's length.
        size: usize,
        /// What postcard found wrong.
        source: postcard::Error,
    },
    /// A frame holds one message followed by extra bytes.
    #[error("a {size}-byte frame holds a {kind} message followed by {trailing} extra bytes")]
    TrailingBytes {
        /// The message's variant name.
        kind: &'static str,
        /// The frame's length.
        size: usize,
        /// Bytes left over.
        trailing: usize,
    },
    /// A message could not be encoded (a bug: every message type is encodable).
    #[error("could not encode a {kind} message: {source}")]
    Encode {
        /// The message's variant name.
        kind: &'static str,
        /// What postcard reported.
        source: postcard::Error,
    },
    /// The peer closed the connection because we broke the protocol; `detail` is
    /// its explanation (from a `Bye { reason: ProtocolViolation }`).
    #[error("the peer closed the connection: {detail}")]
    PeerRejected {
        /// The peer's explanation.
        detail: String,
    },
    /// This side already closed the connection (sent `Bye` or hit an error).
    #[error("the control connection is already closed")]
    Closed,
}

impl ProtocolError {
    /// The refusal code the server sends for this handshake failure, or `None` when
    /// the connection is beyond talking to (I/O error, peer gone).
    pub(crate) fn refusal_code(&self) -> Option<RefusalCode> {
        match self {
            Self::BadMagic { .. } => Some(RefusalCode::NotPolycrawl),
            Self::VersionMismatch { .. } => Some(RefusalCode::VersionMismatch),
            Self::BadToken { .. } => Some(RefusalCode::BadToken),
            Self::HandshakeTimeout(_)
            | Self::Unexpected { .. }
            | Self::FrameTooLarge { .. }
            | Self::Undecodable { .. }
            | Self::TrailingBytes { .. } => Some(RefusalCode::BadHello),
            Self::Io(_)
            | Self::Refused { .. }
            | Self::ClosedDuringHandshake
            | Self::MessageTooLarge { .. }
            | Self::TruncatedFrame { .. }
            | Self::Encode { .. }
            | Self::PeerRejected { .. }
            | Self::Closed => None,
        }
    }

    /// Whether the peer broke the framing or encoding rules (and is owed a `Bye`).
    pub(crate) fn is_violation(&self) -> bool {
        matches!(
            self,
            Self::FrameTooLarge { .. } | Self::Undecodable { .. } | Self::TrailingBytes { .. }
        )
    }
}

/// Shows raw bytes as hex and as escaped ASCII: `47 45 54 20 ("GET ")`.
struct ShowBytes<'a>(&'a [u8]);

impl fmt::Display for ShowBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{b:02x}")?;
        }
        write!(f, " (\"{}\")", self.0.escape_ascii())
    }
}
