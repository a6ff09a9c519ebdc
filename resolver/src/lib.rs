//! `resolver`: the DNS resolver service of the crawling system (DESIGN.md section 6).
//!
//! `polycrawl resolver` starts it on any machine. It registers with the crawl
//! manager over the control protocol ([`spool::protocol`], role `Resolver`), takes
//! batches of host names (`ResolveBatch`), resolves them with hickory-resolver
//! against the configured name servers, and answers each batch with one
//! `ResolveAnswers`: addresses with a clamped TTL, or a negative answer that tells
//! NXDOMAIN, no address record and failure (timeout, SERVFAIL, refused) apart.
//!
//! Main types:
//! - [`Resolver`]: the library part, usable without the service:
//!   [`Resolver::resolve_batch`] with at most `max_concurrent` queries at once.
//! - [`run`]: the service (register, serve, heartbeat, drain, reconnect).
//! - [`Config`]: the `resolver: (...)` config section; [`ControlSettings`]: how to
//!   reach the manager; [`ResolverError`]: why the service stopped.
//!
//! # Contract with the manager
//!
//! - Every host of a `ResolveBatch` gets exactly one answer, all of them together
//!   in one `ResolveAnswers` with the batch's request id, sent when the batch's last
//!   name is done, in any order. Only if that message would exceed the frame limit
//!   is it split into several `ResolveAnswers` with the same request id. (Small
//!   batches keep one slow name from holding many answers back; the manager
//!   chooses the batch size.)
//! - A batch is answered on the connection it arrived on or not at all. When the
//!   connection ends (manager restart, network, heartbeat timeout), the resolver
//!   drops its unanswered batches and reconnects with back-off; **the manager must
//!   re-send every batch it has no answer for** (after the resolver registers
//!   again, or to another resolver). Re-sent names are answered from the
//!   resolver's cache when they were resolved before the break.
//! - Heartbeats go out every `heartbeat_interval_ms` of the `Welcome`, carrying
//!   queries in flight, the concurrency limit, names waiting for a query slot and
//!   names answered per second. Silence from the manager for
//!   `heartbeat_timeout_ms` ends the connection (`Bye { TimedOut }`).
//! - `SetConcurrency { limit }` changes the number of concurrent queries
//!   (clamped to 1..=[`MAX_CONCURRENCY`]) without cancelling any.
//! - `Drain { grace_ms }`: no new batches; running ones get `grace_ms` to be
//!   answered; then `Bye { Drained }` and [`run`] returns `Ok(())`. Cancelling the
//!   token (SIGTERM in `polycrawl`) does the same with [`SHUTDOWN_GRACE`] and
//!   `Bye { ShuttingDown }`.
//! - A refused handshake (wrong token, other version) or `Bye { Replaced }` (another
//!   resolver took this id) ends [`run`] with an error: retrying cannot help.
//!
//! # Answers
//!
//! TTLs of positive answers are the smallest record TTL clamped to
//! `[min_ttl_secs, max_ttl_secs]`; NXDOMAIN and no-address answers carry the
//! zone's negative TTL capped at `negative_ttl_secs`; failures carry
//! `failure_ttl_secs`. Names that cannot be host names are answered `NxDomain`
//! without a query; IP literals are answered with themselves. Details in
//! `answer.rs`.
//!
//! # Modules
//!
//! `config.rs` (settings and checks), `lookup.rs` ([`Resolver`]), `answer.rs`
//! (classification and TTLs), `limit.rs` (resizable concurrency bound, load
//! counters), `service.rs` ([`run`]),
//! `session.rs` (the resolver's role on a manager connection, for the shared
//! session driver `spool::protocol::client::run`), `error.rs`.
//!
//! # What this crate must never do
//!
//! - resolve through anything but the configured name servers when some are given
//!   (no hosts file, no search list, no system resolver for crawled names);
//! - block the runtime (all DNS I/O is hickory's async I/O);
//! - let work pile up unbounded: queries are bounded by a semaphore, accepted names
//!   by `max_pending_names`, each name by a deadline;
//! - depend on another service crate or on `polycrawl`: it depends on `spool` only.
//!
//! Cost: each name is one query per record type asked (A, plus AAAA with `ipv6`),
//! retried at most `attempts` times; memory is O(names pending + cache_size).

mod answer;
mod config;
mod error;
mod limit;
mod lookup;
mod service;
mod session;

pub use config::{Config, InvalidConfig, MAX_CONCURRENCY};
pub use error::ResolverError;
pub use limit::Stats;
pub use lookup::Resolver;
pub use service::run;
pub use spool::protocol::client::ControlSettings;
pub use spool::protocol::client::SHUTDOWN_GRACE;
