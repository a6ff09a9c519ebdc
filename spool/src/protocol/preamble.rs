//! The version-independent first bytes of a connection: the 8-byte preamble each
//! side sends, and the server's status byte with its refusal encoding. Nothing here
//! may ever change, so that peers of any two versions can still tell each other why
//! they cannot talk.

use std::fmt;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::ProtocolError;
use super::connection::cut;

/// The first four bytes of every control connection, in both directions.
pub const MAGIC: [u8; 4] = *b"PCRL";

/// Length of the preamble: magic, version (u16 big-endian), two reserved zero bytes.
pub const PREAMBLE_LEN: usize = 8;

/// Longest refusal reason sent, in bytes; longer text is cut at a character boundary.
pub const MAX_REASON_LEN: usize = 1024;

/// The preamble announcing `version`: `50 43 52 4c` `vv vv` `00 00`.
pub fn preamble(version: u16) -> [u8; PREAMBLE_LEN] {
    let v = version.to_be_bytes();
    [MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], v[0], v[1], 0, 0]
}

/// Reads a peer's preamble and returns its version. The magic is checked as soon as
/// its four bytes are in, so garbage is refused without waiting for more.
pub(crate) async fn read_preamble<R: AsyncRead + Unpin>(r: &mut R) -> Result<u16, ProtocolError> {
    let mut magic = [0; 4];
    read_exact(r, &mut magic).await?;
    if magic != MAGIC {
        return Err(ProtocolError::BadMagic { got: magic });
    }
    let mut rest = [0; 4];
    read_exact(r, &mut rest).await?;
    // rest[2..4] is reserved: sent as zero, ignored on receipt.
    Ok(u16::from_be_bytes([rest[0], rest[1]]))
}

/// The server's verdict, sent right after its preamble: one status byte, `0x00` for
/// accepted, else one of these codes followed by the reason. Codes are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalCode {
    /// `0x01`: the client's first bytes were not the polycrawl magic.
    NotPolycrawl,
    /// `0x02`: the client speaks another protocol version.
    VersionMismatch,
    /// `0x03`: the token is wrong.
    BadToken,
    /// `0x04`: the `Hello` frame was missing, late, too large or malformed.
    BadHello,
    /// A code this version does not know (sent by a newer server).
    Unknown(u8),
}

impl RefusalCode {
    /// The status byte on the wire.
    pub fn to_byte(self) -> u8 {
        match self {
            Self::NotPolycrawl => 0x01,
            Self::VersionMismatch => 0x02,
            Self::BadToken => 0x03,
            Self::BadHello => 0x04,
            Self::Unknown(b) => b,
        }
    }

    /// The code for a non-zero status byte.
    pub fn from_byte(b: u8) -> Self {
        match b {
            0x01 => Self::NotPolycrawl,
            0x02 => Self::VersionMismatch,
            0x03 => Self::BadToken,
            0x04 => Self::BadHello,
            other => Self::Unknown(other),
        }
    }
}

impl fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotPolycrawl => f.write_str("not polycrawl"),
            Self::VersionMismatch => f.write_str("version mismatch"),
            Self::BadToken => f.write_str("bad token"),
            Self::BadHello => f.write_str("bad hello"),
            Self::Unknown(b) => write!(f, "unknown refusal code {b:#04x}"),
        }
    }
}

/// Status byte of an accepted handshake.
pub(crate) const ACCEPTED: u8 = 0x00;

/// A refusal after the server preamble: code, u16 big-endian length, UTF-8 reason.
pub fn encode_refusal(code: RefusalCode, reason: &str) -> Vec<u8> {
    let text = cut(reason, MAX_REASON_LEN).as_bytes();
    let mut out = Vec::with_capacity(3 + text.len());
    out.push(code.to_byte());
    // At most MAX_REASON_LEN, which fits in a u16.
    out.extend_from_slice(&(text.len() as u16).to_be_bytes());
    out.extend_from_slice(text);
    out
}

/// Reads the server's status byte: `Ok(())` if accepted, else the refusal as
/// [`ProtocolError::Refused`].
pub(crate) async fn read_status<R: AsyncRead + Unpin>(r: &mut R) -> Result<(), ProtocolError> {
    let mut status = [0; 1];
    read_exact(r, &mut status).await?;
    if status[0] == ACCEPTED {
        return Ok(());
    }
    let mut len = [0; 2];
    read_exact(r, &mut len).await?;
    // At most 64 KiB, whatever the peer claims.
    let mut reason = vec![0; usize::from(u16::from_be_bytes(len))];
    read_exact(r, &mut reason).await?;
    Err(ProtocolError::Refused {
        code: RefusalCode::from_byte(status[0]),
        reason: String::from_utf8_lossy(&reason).into_owned(),
    })
}

/// `read_exact`, with end of stream reported as a handshake failure.
async fn read_exact<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> Result<(), ProtocolError> {
    match r.read_exact(buf).await {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Err(ProtocolError::ClosedDuringHandshake)
        }
        Err(e) => Err(e.into()),
    }
}
