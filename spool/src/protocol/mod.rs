//! The control protocol: the small messages that travel over TCP between the
//! manager and the downloaders, resolvers, applications and admin tools (bulk data
//! travels as spool files, never here).
//!
//! - [`Message`]: the one versioned message enum, and the types it carries
//!   ([`FetchJob`], [`FetchReport`], [`HostAnswer`], [`AdminCommand`], ...).
//! - [`client_handshake`] / [`server_handshake`]: open a connection; [`client`]: the
//!   settings, connect, back-off, default ids and the session driver every
//!   component shares.
//! - [`Connection`] (or its halves [`ConnReader`] / [`ConnWriter`]): `send` and
//!   `recv` whole messages.
//! - [`ProtocolError`]: every failure, with a message an operator understands.
//!
//! Files: `message.rs` (enum, session types), `fetch.rs`, `resolve.rs`, `app.rs`,
//! `admin.rs` (payloads), `token.rs`, `preamble.rs` (version-independent bytes),
//! `frame.rs` (length prefix), `handshake.rs`, `connection.rs`, `error.rs`,
//! `client.rs` and `session.rs` (the client side: settings, connect, back-off, and
//! the session driver every component runs).
//!
//! # Wire format
//!
//! Every connection is a TCP stream that starts with a **preamble** in each
//! direction, 8 bytes:
//!
//! ```text
//! offset 0..4  magic    50 43 52 4c   "PCRL"
//! offset 4..6  version  u16 big-endian (PROTOCOL_VERSION, 00 0b today)
//! offset 6..8  reserved 00 00 (sent as zero, ignored on receipt)
//! ```
//!
//! After the preamble the stream is a sequence of **frames**:
//!
//! ```text
//! u32 big-endian body length N | N bytes: one Message, postcard-encoded
//! ```
//!
//! A receiver refuses a frame whose announced length exceeds its limit
//! (`control.max_frame_bytes`, default [`DEFAULT_MAX_FRAME`]; during the handshake
//! at most [`HANDSHAKE_MAX_FRAME`]) before buffering any of it. It then sends a final
//! `Bye { reason: ProtocolViolation, detail: "frame of N bytes exceeds the M-byte
//! limit" }`, closes, and returns [`ProtocolError::FrameTooLarge`]; the peer's next
//! `recv` returns [`ProtocolError::PeerRejected`] with that detail. A frame that does
//! not decode to exactly one `Message` is treated the same way. A sender never sends
//! a message over its own limit ([`ProtocolError::MessageTooLarge`]).
//!
//! Postcard encodes a message as its variant index (a varint), then its fields in
//! declaration order: unsigned integers as LEB128 varints (`u8` as one raw byte),
//! `bool` as `00`/`01`, `f32` as 4 little-endian bytes, strings and vectors as a
//! varint length then the contents, `Option` as `00` or `01` + value, enums as a
//! varint variant index then their fields, `IpAddr` as a variant index (`00` v4,
//! `01` v6) + 4 or 16 raw octets, and `SocketAddr` as the same + the port varint.
//!
//! # Handshake
//!
//! ```text
//! client                                  server
//!   preamble(v) + frame(Hello) ------------>   check 1: magic        (refuse 0x01)
//!                                              check 2: version == v (refuse 0x02)
//!                                              check 3: Hello frame  (refuse 0x04)
//!                                              check 4: token        (refuse 0x03)
//!   <------------ preamble(server v) + 00 + frame(Welcome)     accepted
//!   <------------ preamble(server v) + code + u16 len + UTF-8 reason, close   refused
//! ```
//!
//! The server's reply starts with its own preamble, then one **status byte**:
//! `00` = accepted, followed by a normal frame holding [`Message::Welcome`];
//! anything else is a [`RefusalCode`], followed by a u16 big-endian length and that
//! many bytes of UTF-8 reason (at most [`MAX_REASON_LEN`]), after which the server
//! closes. The reason is the text of the server's own error, so both sides log the
//! same sentence, e.g. `wrong token for downloader dl-1` or `protocol version
//! mismatch: peer speaks v4, this manager speaks v3`. The refusal does not depend
//! on the message enum, so peers of any two versions can read it. Tokens are
//! compared in constant time; the whole handshake is bounded by
//! [`Limits::handshake_timeout`] on both sides.
//!
//! # Byte-level example
//!
//! Downloader `dl-1` with token `s3cret` opens a connection:
//!
//! ```text
//! 50 43 52 4c 00 0b 00 00                   preamble, v11
//! 00 00 00 1f                               frame of 31 bytes:
//!   00                                      Message::Hello
//!   01                                      Role::Downloader
//!   04 64 6c 2d 31                          id "dl-1"
//!   0b                                      version 11
//!   06 73 33 63 72 65 74                    token "s3cret"
//!   0f 70 6f 6c 79 ... 2e 30                software "polycrawl 0.1.0"
//! ```
//!
//! With the wrong token the server answers
//!
//! ```text
//! 50 43 52 4c 00 0b 00 00                   preamble, v11
//! 03 00 1f 77 72 6f 6e 67 ...               refused, bad token, 31 bytes:
//!                                           "wrong token for downloader dl-1"
//! ```
//!
//! and later, on an accepted connection, `SetConcurrency { limit: 300 }` is the
//! frame `00 00 00 03 05 ac 02` (variant 5, varint 300).
//!
//! # Using a connection
//!
//! [`Connection::recv`] returns `Ok(None)` when the peer closed cleanly and is
//! cancel-safe (use it in `tokio::select!`, e.g. against a heartbeat-timeout
//! sleep: this module sends no heartbeats and enforces no timeouts after the
//! handshake; services do, with the values in [`Welcome`]). A received `Bye` is an
//! ordinary message, except `Bye { reason: ProtocolViolation }`, which becomes
//! [`ProtocolError::PeerRejected`]. [`Connection::into_split`] gives a reader for
//! one task and a cloneable writer for any number of tasks; each `send` writes one
//! whole frame. After any error, drop the connection.
//!
//! # Versioning rule
//!
//! Postcard is not self-describing, so **any change to the encoded shape of a
//! message** bumps [`PROTOCOL_VERSION`]: adding, removing or reordering a variant
//! of `Message` or of any enum it carries (including [`OutcomeReason`](crate::OutcomeReason)
//! and the ids), or adding, removing, reordering or retyping a field. Peers of
//! different versions refuse each other at the handshake with a readable reason.
//! `spool/tests/protocol.rs` guards this: golden bytes for a sample of every
//! variant and every `OutcomeReason`, and an exhaustive match that stops compiling
//! when a `Message` variant is added.
//!
//! What may change without a bump: names of Rust types, fields and variants (never
//! encoded), documentation, error and refusal texts, default limits and timeouts,
//! the values a field may hold (within its type), and new refusal codes (an older
//! peer shows them as [`RefusalCode::Unknown`]). The preamble layout, the status
//! byte and the refusal encoding never change.
//!
//! # What this module must never do
//!
//! - allocate or wait for more than the limit because a peer announced a length
//!   (garbage and hostile lengths are refused from the 4-byte header alone);
//! - panic on anything read from the network;
//! - print a token (its `Debug` is redacted; it has no `Display`), or compare one in
//!   time that depends on its contents;
//! - wait forever in a handshake, or send anything after a refusal or a `Bye`;
//! - carry bulk data (pages, URL lists of request files) or crawl policy: messages
//!   are small and typed, with no untyped maps;
//! - depend on any service crate.

mod admin;
mod app;
pub mod client;
mod connection;
mod error;
mod fetch;
mod frame;
mod handshake;
mod message;
mod preamble;
mod resolve;
mod retry_after;
mod session;
mod state;
mod token;

use std::time::Duration;

pub use admin::{
    AdminCommand, AdminReply, BackOffReason, BackedOffHost, ComponentStatus, HostCounts,
    MAX_BACKED_OFF, ReasonCount, Speed, SpeedLimit, SpeedStatus, StatusCount, StatusSnapshot,
    TargetSource,
};
pub use app::{AppProgress, SpoolArea};
pub use connection::{ConnReader, ConnWriter, Connection};
pub use error::ProtocolError;
pub use fetch::{
    After, FetchJob, FetchLimits, FetchPurpose, FetchReport, FetchResult, INLINE_ROBOTS_MAX, JobId,
    StoredPage, Timing,
};
pub use frame::FrameCodec;
pub use handshake::{Limits, ServerConfig, client_handshake, server_handshake};
pub use message::{ByeReason, Hello, Load, Message, Role, Welcome};
pub use preamble::{MAGIC, MAX_REASON_LEN, PREAMBLE_LEN, RefusalCode, encode_refusal, preamble};
pub use resolve::{HostAnswer, NegativeKind, RequestId, Resolution};
pub use retry_after::RetryAfter;
pub use state::{
    AppFigures, BudgetCut, ComponentState, MAX_CUT_RULES, MAX_DETECTORS, MAX_PATH_LEN,
    MAX_TOP_HOSTS, MAX_TOP_PARTIES, MAX_TRAP_EXAMPLES, MAX_WORKERS_SHOWN, PartFigures, PartyPages,
    Pause, PauseReason, RuleCut, SeedFigures, TrapCut,
};
pub use token::{InvalidToken, Token};

/// The protocol version this build speaks; see the versioning rule above.
pub const PROTOCOL_VERSION: u16 = 11;

/// Default largest frame body, in bytes (16 MiB, as `control.max_frame_bytes`).
pub const DEFAULT_MAX_FRAME: u32 = 16 * 1024 * 1024;

/// Largest frame accepted before the handshake completes (the `Hello` and
/// `Welcome`), so an unauthenticated peer cannot make us buffer more.
pub const HANDSHAKE_MAX_FRAME: u32 = 64 * 1024;

/// Default time allowed for a whole handshake.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
