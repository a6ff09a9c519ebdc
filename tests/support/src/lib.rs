//! What the workspace's tests and benchmarks share, written once (as hickory-dns
//! keeps `tests/test-support`): every crate's `tests/` and `benches/`, the `tests`
//! package and `polycrawl bench` use it as a dependency instead of copying it.
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
//! - [`netns`]: network namespaces on a bridge as machines on one host
//!   ([`netns::Net`], [`netns::Isolated`]), and removing what a killed maker left.
//! - [`nfsim`]: [`nfsim::Mount`], one machine's NFS-like view of a shared
//!   directory (`polycrawl nfsim`), unmounted on drop; whether FUSE can be used.
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
//! `polycrawl` (the `ops` package, the orchestrator rather than a service) uses
//! [`netns`] for `demo --machines`, [`proc`] for its CPU figures and the fake
//! manager for `bench app-memory`: one harness for the demo and the tests.
//!
//! This crate must never be a dependency of a service's shipping code; it binds and
//! connects only on 127.0.0.0/8, port 0; it never sleeps a fixed time to wait for a
//! state (the poll interval of [`wait`], inside a deadline, is its only sleep).

pub mod manager;
pub mod netns;
pub mod nfsim;
pub mod proc;
pub mod process;
pub mod wait;
