//! A framed control connection after a successful handshake: `send` and `recv`
//! whole [`Message`]s, or split it into a reader and a cloneable writer for
//! services that read and write from different tasks.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio_util::codec::FramedRead;

use super::frame::{FrameCodec, encode_frame};
use super::{ByeReason, Limits, Message, ProtocolError};

pub(crate) type BoxRead = Box<dyn AsyncRead + Send + Unpin>;
pub(crate) type BoxWrite = Box<dyn AsyncWrite + Send + Unpin>;

/// How long a closing side waits to get its last bytes (`Bye` or refusal) out.
const FAREWELL_TIMEOUT: Duration = Duration::from_secs(1);
/// After refusing, the longest we keep reading (and discarding) what the peer had
/// already sent, so that closing with unread data does not reset the connection
/// and destroy our explanation before the peer reads it. Never longer than the
/// handshake timeout.
const LINGER_TIME: Duration = Duration::from_secs(1);
/// The most bytes discarded while lingering.
const LINGER_BYTES: usize = 64 * 1024;
/// Longest `Bye` detail sent, in bytes (fits any frame limit a config allows).
const MAX_BYE_DETAIL: usize = 512;

/// Splits any byte stream (a `TcpStream`, a TLS stream, `tokio::io::duplex`) into
/// boxed halves, so that nothing above this layer is generic.
pub(crate) fn split_boxed<S>(stream: S) -> (BoxRead, BoxWrite)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (r, w) = tokio::io::split(stream);
    (Box::new(r), Box::new(w))
}

/// An established control connection (returned by the handshake functions).
pub struct Connection {
    reader: ConnReader,
    writer: ConnWriter,
}

impl Connection {
    pub(crate) fn from_parts(reader: ConnReader, writer: ConnWriter) -> Self {
        Self { reader, writer }
    }

    /// Sends one message; see [`ConnWriter::send`].
    pub async fn send(&self, msg: &Message) -> Result<(), ProtocolError> {
        self.writer.send(msg).await
    }

    /// Receives the next message; see [`ConnReader::recv`].
    pub async fn recv(&mut self) -> Result<Option<Message>, ProtocolError> {
        self.reader.recv().await
    }

    /// Sends `Bye` and closes the sending direction; see [`ConnWriter::close`].
    pub async fn close(&self, reason: ByeReason, detail: &str) -> Result<(), ProtocolError> {
        self.writer.close(reason, detail).await
    }

    /// Splits the connection for a reading task and any number of writing tasks.
    pub fn into_split(self) -> (ConnReader, ConnWriter) {
        (self.reader, self.writer)
    }
}

/// The receiving half of a [`Connection`].
pub struct ConnReader {
    frames: FramedRead<BoxRead, FrameCodec>,
    /// Used to send the `Bye` that explains why we stop reading.
    writer: ConnWriter,
    /// How long to linger after refusing.
    linger: Duration,
}

impl ConnReader {
    pub(crate) fn new(io: BoxRead, writer: ConnWriter, limits: Limits) -> Self {
        Self {
            frames: FramedRead::new(
                io,
                FrameCodec {
                    max: limits.max_frame,
                },
            ),
            writer,
            linger: limits.handshake_timeout.min(LINGER_TIME),
        }
    }

    /// Receives the next message; `Ok(None)` when the peer closed cleanly between
    /// frames. Cancel-safe: may be used in `tokio::select!`.
    ///
    /// A frame over the limit, or one that does not decode, is answered with a
    /// final `Bye { reason: ProtocolViolation }` naming the problem, the connection
    /// is closed and the error is returned. A `Bye { reason: ProtocolViolation }`
    /// from the peer is returned as [`ProtocolError::PeerRejected`] with the peer's
    /// explanation; any other `Bye` is an ordinary message (the peer closes next).
    /// After an error, drop the connection.
    pub async fn recv(&mut self) -> Result<Option<Message>, ProtocolError> {
        let frame = match self.frames.next().await {
            None => return Ok(None),
            Some(Ok(frame)) => frame,
            Some(Err(e)) if e.is_violation() => return Err(self.reject(e).await),
            Some(Err(e)) => return Err(e),
        };
        match Message::from_bytes(&frame) {
            Ok(Message::Bye {
                reason: ByeReason::ProtocolViolation,
                detail,
            }) => Err(ProtocolError::PeerRejected { detail }),
            Ok(msg) => Ok(Some(msg)),
            Err(e) => Err(self.reject(e).await),
        }
    }

    /// The next raw frame body (handshake use: no `Bye` on errors).
    pub(crate) async fn next_frame(&mut self) -> Result<BytesMut, ProtocolError> {
        self.frames
            .next()
            .await
            .unwrap_or(Err(ProtocolError::ClosedDuringHandshake))
    }

    /// The unframed stream, for the preamble (nothing is buffered before the first frame).
    pub(crate) fn raw(&mut self) -> &mut BoxRead {
        self.frames.get_mut()
    }

    /// Changes the frame limit (raised once the handshake is done).
    pub(crate) fn set_max_frame(&mut self, max: u32) {
        self.frames.decoder_mut().max = max;
    }

    /// Tells the peer why we stop, closes, and hands the error back.
    async fn reject(&mut self, e: ProtocolError) -> ProtocolError {
        if let Err(bye) = self
            .writer
            .close(ByeReason::ProtocolViolation, &e.to_string())
            .await
        {
            tracing::debug!(error = %bye, "could not send Bye after a protocol violation");
        }
        self.linger().await;
        e
    }

    /// Discards what the peer already sent (bounded in time and bytes), so that our
    /// last words reach it before the connection is torn down.
    pub(crate) async fn linger(&mut self) {
        let io = self.frames.get_mut();
        let mut scratch = [0u8; 4096];
        let mut total = 0;
        let drain = async {
            while total < LINGER_BYTES {
                match io.read(&mut scratch).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => total += n,
                }
            }
        };
        let _ = tokio::time::timeout(self.linger, drain).await;
    }
}

/// The sending half of a [`Connection`]. Clones share the connection; each message
/// is written whole, one at a time.
#[derive(Clone)]
pub struct ConnWriter {
    inner: Arc<Mutex<Sink>>,
    max_frame: u32,
}

struct Sink {
    io: BoxWrite,
    /// No more frames may be written: `Bye` sent, an error happened, or a send was
    /// cancelled half-way (the stream would be out of frame sync).
    closed: bool,
}

impl ConnWriter {
    pub(crate) fn new(io: BoxWrite, max_frame: u32) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Sink { io, closed: false })),
            max_frame,
        }
    }

    /// Sends one message and flushes it.
    ///
    /// A message over the frame limit is refused with
    /// [`ProtocolError::MessageTooLarge`] and nothing is sent. Not cancel-safe: if
    /// the future is dropped mid-write, later sends fail with
    /// [`ProtocolError::Closed`]. Wrap it in a timeout if the peer may stall.
    pub async fn send(&self, msg: &Message) -> Result<(), ProtocolError> {
        let frame = encode_frame(msg, self.max_frame)?;
        let mut sink = self.inner.lock().await;
        if sink.closed {
            return Err(ProtocolError::Closed);
        }
        sink.closed = true; // until the whole frame is out
        sink.io.write_all(&frame).await?;
        sink.io.flush().await?;
        sink.closed = false;
        Ok(())
    }

    /// Sends a final `Bye` (detail cut to 512 bytes) and shuts the sending
    /// direction; receiving continues until the peer closes. Gives up after one
    /// second if the peer does not read. Closing twice is a no-op.
    pub async fn close(&self, reason: ByeReason, detail: &str) -> Result<(), ProtocolError> {
        let bye = Message::Bye {
            reason,
            detail: cut(detail, MAX_BYE_DETAIL).to_owned(),
        };
        self.finish(&encode_frame(&bye, u32::MAX)?).await
    }

    /// Writes `bytes` unframed (preamble, status), without closing.
    pub(crate) async fn write_raw(&self, bytes: &[u8]) -> Result<(), ProtocolError> {
        let mut sink = self.inner.lock().await;
        if sink.closed {
            return Err(ProtocolError::Closed);
        }
        sink.io.write_all(bytes).await?;
        sink.io.flush().await?;
        Ok(())
    }

    /// Writes `bytes` (a `Bye` frame or a refusal) as the last thing on the
    /// connection, then shuts the sending direction.
    pub(crate) async fn finish(&self, bytes: &[u8]) -> Result<(), ProtocolError> {
        let last_words = async {
            let mut sink = self.inner.lock().await;
            if sink.closed {
                return Ok(());
            }
            sink.closed = true;
            sink.io.write_all(bytes).await?;
            sink.io.shutdown().await
        };
        match tokio::time::timeout(FAREWELL_TIMEOUT, last_words).await {
            Ok(result) => result.map_err(ProtocolError::from),
            Err(_) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into()),
        }
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("reader", &self.reader)
            .field("writer", &self.writer)
            .finish()
    }
}

impl fmt::Debug for ConnReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnReader")
            .field("max_frame", &self.frames.decoder().max)
            .field("buffered", &self.frames.read_buffer().len())
            .finish()
    }
}

impl fmt::Debug for ConnWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnWriter")
            .field("max_frame", &self.max_frame)
            .finish_non_exhaustive()
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub(crate) fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
