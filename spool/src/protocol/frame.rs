//! Frames: a 4-byte big-endian length, then that many bytes of postcard-encoded
//! [`Message`]. The length is checked against the limit before a single body byte
//! is buffered, so a hostile length never turns into an allocation.

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

use super::{Message, ProtocolError};

/// Length of the frame header.
pub(crate) const HEADER_LEN: usize = 4;

/// Splits a byte stream into frame bodies of at most `max` bytes.
#[derive(Debug, Clone)]
pub struct FrameCodec {
    /// Largest accepted body, in bytes.
    pub max: u32,
}

impl FrameCodec {
    /// The announced body length of the frame at the start of `src`, if complete.
    fn announced(src: &[u8]) -> Option<u32> {
        let head: [u8; HEADER_LEN] = src.get(..HEADER_LEN)?.try_into().ok()?;
        Some(u32::from_be_bytes(head))
    }
}

impl Decoder for FrameCodec {
    type Item = BytesMut;
    type Error = ProtocolError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, ProtocolError> {
        let Some(size) = Self::announced(src) else {
            return Ok(None);
        };
        if size > self.max {
            return Err(ProtocolError::FrameTooLarge {
                size,
                limit: self.max,
            });
        }
        let total = HEADER_LEN + size as usize;
        if src.len() < total {
            src.reserve(total - src.len());
            return Ok(None);
        }
        src.advance(HEADER_LEN);
        Ok(Some(src.split_to(size as usize)))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, ProtocolError> {
        if let Some(frame) = self.decode(src)? {
            return Ok(Some(frame));
        }
        if src.is_empty() {
            return Ok(None);
        }
        let expected = Self::announced(src).map_or(HEADER_LEN, |n| HEADER_LEN + n as usize);
        Err(ProtocolError::TruncatedFrame {
            got: src.len(),
            expected,
        })
    }
}

/// Encodes `msg` as one complete frame, refusing it if the body exceeds `max`.
pub(crate) fn encode_frame(msg: &Message, max: u32) -> Result<Vec<u8>, ProtocolError> {
    let body = msg.to_bytes()?;
    let size = u32::try_from(body.len()).ok().filter(|&n| n <= max).ok_or(
        ProtocolError::MessageTooLarge {
            kind: msg.kind(),
            size: body.len(),
            limit: max,
        },
    )?;
    let mut frame = Vec::with_capacity(HEADER_LEN + body.len());
    frame.extend_from_slice(&size.to_be_bytes());
    frame.extend_from_slice(&body);
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(max: u32, bytes: &[u8]) -> Result<Option<BytesMut>, ProtocolError> {
        FrameCodec { max }.decode_eof(&mut BytesMut::from(bytes))
    }

    #[test]
    fn splits_frames_and_checks_lengths() {
        let mut buf = BytesMut::from(&[0, 0, 0, 2, 7, 8, 0, 0][..]);
        let mut codec = FrameCodec { max: 16 };
        assert_eq!(codec.decode(&mut buf).unwrap().unwrap(), &[7, 8][..]);
        assert!(codec.decode(&mut buf).unwrap().is_none());

        let err = decode_all(16, b"GET / HTTP/1.1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "frame of 1195725856 bytes exceeds the 16-byte limit"
        );
        let err = decode_all(16, &[0, 0, 0, 9, 1, 2]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the peer closed the connection after 6 of the 13 bytes of a frame"
        );
        assert!(decode_all(16, &[0, 0]).is_err());
        assert!(decode_all(16, &[]).unwrap().is_none());
    }
}
