//! An incremental decoder for the chunked transfer coding (RFC 9112 section 7.1).
//!
//! Fed the body bytes as they arrive, it appends the chunk data to a payload buffer
//! and says when the last chunk and the trailer section are complete. Chunk
//! extensions and trailer fields are skipped (they stay in the raw bytes kept for the
//! archive). Bare LF line ends are accepted. Work is linear in the input; the size of
//! a chunk is bounded only by `u64` here: the caller's body cap bounds memory.

use bytes::{BufMut, BytesMut};

use crate::error::FetchError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading hex digits of a chunk size.
    Size { value: u64, digits: u8 },
    /// Skipping a chunk extension up to the end of the line.
    Ext { value: u64 },
    /// Saw CR after the size line; expecting LF.
    SizeLf { value: u64 },
    /// Copying chunk data.
    Data { left: u64 },
    /// Expecting the CR (or bare LF) after chunk data.
    DataCr,
    /// Expecting the LF after chunk data.
    DataLf,
    /// In the trailer section; `line` counts bytes of the current field line.
    Trailer { line: u64 },
    /// The terminating empty line has been read.
    Done,
}

/// The chunked-body decoder state.
#[derive(Debug)]
pub(crate) struct ChunkedDecoder {
    state: State,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self {
            state: State::Size {
                value: 0,
                digits: 0,
            },
        }
    }
}

impl ChunkedDecoder {
    /// Whether the whole body, trailers included, has been consumed.
    pub(crate) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes bytes of `input`, appending chunk data to `out`. Returns how many bytes
    /// were consumed: all of them unless the body ended inside `input`.
    pub(crate) fn feed(&mut self, input: &[u8], out: &mut BytesMut) -> Result<usize, FetchError> {
        let mut i = 0;
        while i < input.len() {
            if let State::Data { left } = self.state {
                let n = usize::try_from(left)
                    .unwrap_or(usize::MAX)
                    .min(input.len() - i);
                out.put_slice(&input[i..i + n]);
                i += n;
                let left = left - n as u64;
                self.state = if left == 0 {
                    State::DataCr
                } else {
                    State::Data { left }
                };
                continue;
            }
            let b = input[i];
            i += 1;
            self.state = match self.state {
                State::Size { value, digits } => match b {
                    b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                        if digits >= 16 {
                            return Err(FetchError::bad("chunk size too large"));
                        }
                        let d = (b as char).to_digit(16).unwrap_or(0);
                        State::Size {
                            value: value << 4 | u64::from(d),
                            digits: digits + 1,
                        }
                    }
                    _ if digits == 0 => return Err(FetchError::bad("chunk size missing")),
                    b';' | b' ' | b'\t' => State::Ext { value },
                    b'\r' => State::SizeLf { value },
                    b'\n' => Self::after_size(value),
                    _ => return Err(FetchError::bad("bad byte in chunk size")),
                },
                State::Ext { value } => match b {
                    b'\n' => Self::after_size(value),
                    _ => State::Ext { value },
                },
                State::SizeLf { value } => match b {
                    b'\n' => Self::after_size(value),
                    _ => return Err(FetchError::bad("CR without LF after chunk size")),
                },
                State::DataCr => match b {
                    b'\r' => State::DataLf,
                    b'\n' => Self::start(),
                    _ => return Err(FetchError::bad("chunk data longer than its size")),
                },
                State::DataLf => match b {
                    b'\n' => Self::start(),
                    _ => return Err(FetchError::bad("CR without LF after chunk data")),
                },
                State::Trailer { line } => match b {
                    b'\n' if line == 0 => {
                        self.state = State::Done;
                        return Ok(i);
                    }
                    b'\n' => State::Trailer { line: 0 },
                    b'\r' => State::Trailer { line },
                    _ => State::Trailer { line: line + 1 },
                },
                State::Data { .. } | State::Done => return Ok(i - 1),
            };
        }
        Ok(i)
    }

    fn start() -> State {
        State::Size {
            value: 0,
            digits: 0,
        }
    }

    fn after_size(value: u64) -> State {
        if value == 0 {
            State::Trailer { line: 0 }
        } else {
            State::Data { left: value }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] = b"5;name=value\r\nhello\r\n7\r\n, world\r\nA ; x\r\n0123456789\r\n0\r\nX-Trailer: t\r\nY: u\r\n\r\nEXTRA";

    fn decode_in_pieces(input: &[u8], piece: usize) -> (Vec<u8>, usize, bool) {
        let mut d = ChunkedDecoder::default();
        let mut out = BytesMut::new();
        let mut used = 0;
        for part in input.chunks(piece) {
            let n = d.feed(part, &mut out).unwrap();
            used += n;
            if n < part.len() {
                break;
            }
        }
        (out.to_vec(), used, d.is_done())
    }

    #[test]
    fn decodes_with_extensions_and_trailers_at_any_split() {
        for piece in [1, 2, 3, 7, 64, BODY.len()] {
            let (out, used, done) = decode_in_pieces(BODY, piece);
            assert_eq!(out, b"hello, world0123456789", "piece {piece}");
            assert!(done);
            assert_eq!(used, BODY.len() - "EXTRA".len(), "piece {piece}");
        }
    }

    #[test]
    fn bare_lf_and_no_trailers() {
        let (out, used, done) = decode_in_pieces(b"3\nabc\n0\n\n", 4);
        assert_eq!((out.as_slice(), used, done), (&b"abc"[..], 9, true));
    }

    #[test]
    fn incomplete_is_not_done() {
        let (out, _, done) = decode_in_pieces(b"5\r\nhel", 100);
        assert_eq!((out.as_slice(), done), (&b"hel"[..], false));
        let (_, _, done) = decode_in_pieces(b"0\r\nX: y\r\n", 100);
        assert!(!done);
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            &b"zz\r\n"[..],
            b"\r\n",
            b"3\r\nabcd\r\n",
            b"3\rx",
            b"11111111111111111\r\n",
        ] {
            let mut d = ChunkedDecoder::default();
            assert!(
                d.feed(bad, &mut BytesMut::new()).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
