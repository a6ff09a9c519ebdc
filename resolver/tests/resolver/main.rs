//! The resolver's integration tests: one binary, real sockets on 127.0.0.1 only,
//! port 0 everywhere, websim's DNS server as the only name server ever asked.
//!
//! - `lookup`: `Resolver::resolve_batch` (addresses, TTL clamps, NXDOMAIN,
//!   timeouts, the concurrency bound, the cache).
//! - `service`: `resolver::run` against a test-side manager (batches, heartbeats,
//!   `SetConcurrency`, drain, reconnects, refusal, replacement, shutdown).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod lookup;
mod service;
mod support;
