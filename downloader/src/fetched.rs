//! The result of a successful fetch: the exact bytes exchanged, the parsed head, the
//! body in three forms, and timings.
//!
//! # Raw, payload and decoded body (the archive decision)
//!
//! A WARC `response` record must hold the HTTP message *as received*, so
//! [`Fetched::raw`] is the final response's bytes exactly as they came off the
//! connection (after TLS): status line, headers, and the body still chunked and still
//! compressed if it was sent that way. Interim 1xx responses are not part of it (they
//! are counted in [`Fetched::bytes_received`]). If the body was cut,
//! [`Fetched::truncated`] says why, and the record gets `WARC-Truncated`.
//!
//! Over HTTP/2 there are no such bytes: `raw` is the response's HTTP/1.1 form
//! (status line with the canonical reason, the fields as received, the body as
//! received in DATA frames), and [`Fetched::protocols`] says `h2`.
//!
//! [`Fetched::payload`] is the body with the transfer coding (chunking) removed but
//! the content coding kept. (`WARC-Payload-Digest` is computed over the entity as
//! stored in the record, chunks kept, as `spool::warc::payload_digest` defines
//! it.) For a non-chunked body it is a zero-copy slice of `raw`.
//!
//! [`Fetched::decode`] gives the payload with Content-Encoding undone (gzip, deflate),
//! capped at `max_decoded_bytes`: what link extraction reads. It runs only when
//! called: the crawler's downloader archives the payload as received and never
//! decodes it (the application does, once, when it reads the stored page), so an
//! inflate per page is not paid twice. Without a content coding the decoded body
//! shares `payload`'s memory. A decoding failure does not fail the fetch: the server
//! did answer and the answer is archived; `decode` reports it as a
//! [`FetchError::BodyDecode`].

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::decode;
use crate::error::FetchError;
use crate::head::ResponseHead;

/// Why the raw body is incomplete; the WARC `WARC-Truncated` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    /// The body reached the body cap and the rest was not read.
    Length,
    /// The server closed or reset the connection before the body was complete.
    Disconnect,
}

impl Truncation {
    /// `length` or `disconnect`, as written in `WARC-Truncated`.
    pub fn as_warc_str(self) -> &'static str {
        match self {
            Self::Length => "length",
            Self::Disconnect => "disconnect",
        }
    }
}

/// Where the time of one fetch went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timings {
    /// Waiting for a concurrency permit (not part of `total`).
    pub queued: Duration,
    /// TCP connect plus TLS handshake; `None` when a pooled connection was reused.
    pub connect: Option<Duration>,
    /// From the request being written to the first response byte.
    pub first_byte: Duration,
    /// From taking the permit to the last body byte (decoding excluded).
    pub total: Duration,
}

/// When one request and its response crossed the wire: unix microseconds of the
/// system clock (`CLOCK_REALTIME`), 0 for what did not happen. Each stamp is read so
/// that gaps measured from them are never longer than the real ones (see
/// `exchange`): the politeness contract is judged on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WireTimes {
    /// Read right before the request's first byte was written.
    pub sent_us: u64,
    /// Read right after its last byte was handed to the kernel.
    pub written_us: u64,
    /// Read right after the response's last byte was read (the end of the request).
    pub received_us: u64,
}

/// Microseconds since the Unix epoch on the system clock (0 before it).
pub fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// A response, complete or cut at the body cap.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The address the manager resolved for the job (connected to, unless through a
    /// proxy).
    pub addr: SocketAddr,
    /// The target's address where known (`WARC-IP-Address`): `addr`, unless a
    /// proxy resolved the name (HTTP and `socks5h` proxies): then `None`.
    pub target_ip: Option<IpAddr>,
    /// The proxy the fetch went through (its URL, password hidden); `None`: direct.
    pub proxy: Option<String>,
    /// The request bytes exactly as sent (for the WARC request record).
    pub request: Bytes,
    /// The final response exactly as received: head, then body as transferred.
    pub raw: Bytes,
    /// Length of the head (status line, headers, empty line) at the start of `raw`.
    pub head_len: usize,
    /// The parsed head.
    pub head: ResponseHead,
    /// Why the body is incomplete, if it is.
    pub truncated: Option<Truncation>,
    /// The body with chunking removed, content coding kept (WARC payload).
    pub payload: Bytes,
    /// The cap [`Fetched::decode`] applies (the fetcher's `max_decoded_bytes`).
    pub max_decoded_bytes: usize,
    /// Where the time went.
    pub timings: Timings,
    /// When the request and the response crossed the wire.
    pub wire: WireTimes,
    /// Bytes written to the network for this fetch (TLS overhead included).
    pub bytes_sent: u64,
    /// Bytes read from the network for this fetch (TLS overhead included).
    pub bytes_received: u64,
    /// Whether the fetch ran on a pooled keep-alive connection.
    pub reused_connection: bool,
    /// The protocols the exchange ran on, as `WARC-Protocol` values, application
    /// protocol first: `["h2", "tls/1.3"]` over HTTP/2; empty over HTTP/1.1, whose
    /// records are what they have always been. Over HTTP/2 `request` and `raw` are
    /// the HTTP/1.1 forms of what was sent and received (see `http2`).
    pub protocols: Vec<&'static str>,
}

impl Fetched {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.head.status
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.head.get(name)
    }

    /// The entity body with Content-Encoding undone, at most `max_decoded_bytes` of
    /// it, or the decoding failure as a [`FetchError::BodyDecode`]. Runs the inflate
    /// on every call, on the calling thread (O(decoded bytes)); without a content
    /// coding it is a cheap clone of `payload`.
    pub fn decode(&self) -> Result<DecodedBody, FetchError> {
        let codings =
            decode::codings(&self.head.tokens("content-encoding")).map_err(FetchError::from)?;
        let d = decode::decode(
            self.payload.clone(),
            &codings,
            self.max_decoded_bytes,
            self.truncated.is_some(),
        )?;
        Ok(DecodedBody {
            body: d.body,
            truncated: d.truncated,
        })
    }
}

/// A body with its Content-Encoding undone ([`Fetched::decode`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedBody {
    /// The decoded bytes.
    pub body: Bytes,
    /// Incomplete: the decoded-size cap was reached, or the payload itself was cut.
    pub truncated: bool,
}
