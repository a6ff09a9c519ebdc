//! The crawl manager (DESIGN.md section 4): per-host FIFO queues, ready and waiting
//! queues of hosts, lazily loaded request files, robots.txt, DNS cache, politeness,
//! blacklist, speed control, checkpoints and the admin page.
//!
//! Two layers: the scheduling core that decides which URL goes to a downloader next,
//! with its durable state in RocksDB ([`frontier`], no I/O but its database and the
//! spool), and the network service around it ([`service`]: control server,
//! registry of downloaders/resolvers/applications, heartbeats, dispatch, DNS
//! batches, admin commands, checkpoints, the admin page and its JSON API), started
//! by [`run`](fn@run) or [`run_with_admin`].
//!
//! Main types: [`Frontier`] (the facade), [`FrontierConfig`] (its settings),
//! [`FrontierStats`], [`Blacklist`], [`robots::RobotsPolicy`]; [`run`](fn@run),
//! [`Settings`], [`ManagerConfig`], [`ManagerError`] for the service.
//!
//! Layout:
//! - [`frontier`]: the `Frontier` facade and its parts (store, hosts, ready and waiting
//!   heaps, per-IP table, DNS cache, dispatch, reports, robots fetches, loading), with
//!   its settings ([`frontier::config`], [`FrontierConfig`]), politeness
//!   ([`frontier::politeness`]: intervals, crawl delay, back-off, `s = k r d`), the
//!   request-file queue (`frontier::requests`: claim, validate, stream in chunks) and
//!   the outcome files per application (`frontier::outcomes`: durable first, then
//!   published);
//! - [`blacklist`]: hosts and domain suffixes never fetched;
//! - [`robots`]: the RFC 9309 robots.txt parser and matcher;
//! - [`service`]: the control server around the frontier (tokio).
//!
//! Depends only on `spool` among the workspace crates, never on another service
//! crate. The frontier does no network I/O and starts no task or thread; all of
//! that lives in [`service`].

pub mod blacklist;
#[cfg(feature = "store")]
pub mod frontier;
pub mod robots;
#[cfg(feature = "store")]
mod run;
#[cfg(feature = "store")]
pub mod service;

pub use blacklist::{Blacklist, BlacklistEntry};
#[cfg(feature = "store")]
pub use frontier::FrontierConfig;
#[cfg(feature = "store")]
pub use frontier::{FetchTotals, Frontier, FrontierError, FrontierStats, HostState, wall_clock_ms};
#[cfg(feature = "store")]
pub use run::{Settings, bind, run, run_measured, run_with_admin};
#[cfg(feature = "store")]
pub use service::{ManagerConfig, ManagerError, StageTimes};
