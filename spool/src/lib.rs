//! `spool` is polycrawl's one contract crate: everything that crosses a process
//! boundary lives here, so that every service depends on it and on nothing else.
//!
//! - [`layout`]: the spool root and its folders ([`Spool`], [`SpoolDir`]); [`SpoolError`].
//! - [`name`]: FIFO-sortable file names `<priority>-<producer>-<seq>.<kind>`.
//! - [`publish`]: crash-safe publishing (tmp, fsync, rename, fsync dir).
//! - [`claim`]: claiming files by rename, resuming after a restart, quarantine.
//! - [`discover`]: change events as a wake-up hint plus a periodic scan.
//! - [`formats`]: request, outcome and exchange files (versioned text; examples in
//!   the module docs).
//! - [`warc`]: the WARC 1.1 record reader and writer for page batches (one gzip member
//!   per record).
//! - [`ids`]: validated application and component ids.
//! - [`outcome`]: the reasons a URL ends without a page.
//! - [`protocol`]: the control protocol (messages, framing, handshake) spoken over TCP.
//! - [`validators`]: an earlier response's `ETag` and `Last-Modified`, carried to
//!   the downloader for a conditional request (recrawls).
//! - [`http`]: reading a stored HTTP response (head, de-chunked payload, decoded
//!   entity body with a size cap), as kept in a WARC response record.
//!
//! This crate must never depend on a service crate (manager, downloader, resolver,
//! application, storage) or on `polycrawl`.

pub mod claim;
pub mod discover;
pub mod formats;
pub mod http;
pub mod ids;
pub mod layout;
pub mod name;
pub mod outcome;
pub mod protocol;
pub mod publish;
pub mod validators;
pub mod warc;

pub use ids::{AppId, ComponentId, InvalidId};
pub use layout::{Spool, SpoolDir, SpoolError};
pub use outcome::OutcomeReason;
pub use validators::Validators;
