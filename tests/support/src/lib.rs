//! What the workspace's tests and benchmarks share, written once (as hickory-dns
//! keeps `tests/test-support`): every crate's `tests/` and `benches/` and the
//! `tests` package use it as a dev-dependency instead of copying it.
//!
//! - [`manager`]: [`manager::FakeManager`], the test side of the control protocol:
//!   the real `server_handshake` on 127.0.0.1:0, accepting services and handing
//!   each connection to the test; [`manager::FakeManager::report_progress`], a
//!   manager that reports an application's crawl busy or idle.
//! - [`process`]: [`process::ProcessGuard`], a child process killed and reaped
//!   on drop, its stdout read line by line; the processes a polycrawl process
//!   started.
//! - [`proc`]: what `/proc` says: a process's or thread's CPU time, state and
//!   start ([`proc::Stat`]), its threads, `VmRSS`-like fields, the CPU model.
//! - [`proxy`]: [`proxy::TestProxy`], a small real HTTP proxy (absolute form,
//!   `CONNECT`) or SOCKS5 server that records what it forwarded.
//! - [`reports`]: the one `Stored` fetch report the manager's tests start from.
//! - [`wait`]: waiting for a state with a deadline ([`wait::until`],
//!   [`wait::until_async`], [`wait::poll_async_with`] for a probe that awaits), so
//!   that no test sleeps a fixed time hoping a state has come, and no test polls
//!   with a sleep of its own (the two poll intervals there are the workspace's
//!   listed ones, `ops/house/sleeps.txt`).
//!
//! Why `spool` types here and no cycle: this crate depends on `spool`, and
//! `spool`'s integration tests (`spool/tests/`) dev-depend on this crate. That is
//! one `spool` library: an integration test links the same `spool` rlib this crate
//! was built against. Only `spool`'s own `#[cfg(test)]` unit tests (a second build
//! of `spool`) must not use it, and they do not.
//!
//! The namespace harness and the mount helpers that `polycrawl demo --machines`
//! needs are the binary package's (`polycrawl::orchestrate::netns`, `nfsim::mount`);
//! the multi-machine tests reach them through the `tests` package.
//!
//! This crate must never be a normal dependency of any shipping crate, the
//! `polycrawl` binary's included (`ops/check-house.sh` checks); it binds and
//! connects only on 127.0.0.0/8, port 0; it never sleeps a fixed time to wait for a
//! state (the poll interval of [`wait`], inside a deadline, is its only sleep).

pub mod manager;
pub mod proc;
pub mod process;
pub mod proxy;
pub mod reports;
pub mod wait;
