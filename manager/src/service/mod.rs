//! The crawl manager service (`polycrawl manager`): the control server that
//! downloaders, resolvers, applications and admin tools register with, around the
//! [`Frontier`](crate::Frontier).
//!
//! # Shape
//!
//! [`run`](fn@crate::run) accepts connections on the control port; each gets a task (`conn.rs`)
//! that does the handshake ([`server_handshake`](spool::protocol::server_handshake),
//! token and version checked there), then reads messages into one bounded event
//! queue and writes what the core puts in its outbox, plus heartbeats. One loop,
//! the core (`engine/`), owns the frontier and the service's other state owners
//! (registry, speed control, DNS batches, checkpoints, each with private fields):
//! it handles the events one at a time and, between bursts, runs the frontier's
//! timers, hands out jobs and DNS names, and does the periodic work, by calling
//! the owners' methods. The frontier is synchronous (RocksDB) and is never shared
//! or locked.
//!
//! # Contract with the components
//!
//! - **Registration**: role and id from the `Hello`; a second connection with the
//!   same role and id replaces the first, which gets `Bye { Replaced }` and whose
//!   work is taken back. Heartbeats go both ways every `heartbeat_interval_ms`; a
//!   peer silent for `heartbeat_timeout_ms` gets `Bye { TimedOut }` and is dropped.
//! - **Downloaders** (`engine/downloaders.rs`): about `jobs_per_downloader_factor` x their
//!   concurrency jobs outstanding each, paced by the global pages/s target (a
//!   token bucket); the manager sets their concurrency (`SetConcurrency`) to what
//!   the target needs (`speed/`). A `Stored` page is durable only once
//!   `Committed`: until then the manager remembers it, and if the downloader goes
//!   away first the URL is queued again; unreported jobs go back to their queues.
//!   robots.txt reports are read from `robots/` (`robots_file.rs`, with
//!   `spool::http`) and the file deleted.
//! - **Resolvers** (`dns.rs`): names in batches of `dns_batch_size`, round-robin;
//!   batches unanswered when a resolver goes away or within
//!   `dns_batch_timeout_ms` are sent again.
//! - **Applications** (`engine/apps.rs`): `Subscribe { app }` brings `AppProgress` every
//!   `progress_interval_ms` and the `Published` hints of the app's areas;
//!   `Published` about `requests/` makes the frontier look for request files now.
//! - **Admin** (`engine/admin.rs`): `Status` for anyone; speed, blacklist, checkpoint and
//!   shutdown need the admin token (`manager.admin_token`).
//! - **Admin page** (`web/`): [`run_with_admin`](crate::run_with_admin) also serves the admin page and its
//!   JSON API on a second listener (`manager.admin_http`); each request becomes one
//!   admin command in the same event queue, answered by the same code as the
//!   control port's.
//!
//! # Durability and shutdown
//!
//! Every frontier change is a RocksDB batch with the WAL on, so `kill -9` loses
//! nothing: URLs in flight are at the head of their queues and go out again, pages
//! reported but not committed are still published by their (running) downloader.
//! When each host was last contacted is not stored, so after a restart every host
//! rests one interval before its first request
//! ([`Frontier::rest_after_restart`](crate::Frontier::rest_after_restart)).
//! On the shutdown token (SIGTERM) or `Admin(Shutdown)`, no new work goes out,
//! downloaders get `Drain { grace }` (resolvers too for `Shutdown`), their last
//! reports and commits are taken in, what is still held after the grace goes back
//! to the queues, pending outcomes are published, and the database is closed.
//! Checkpoints go to `<state_dir>/checkpoints/<n>` (`checkpoint.rs`).
//!
//! # Files
//!
//! `run.rs` at the crate's root (the loop that feeds the core; outside this folder,
//! so nothing here depends on it), [`config`] ([`ManagerConfig`], with the speed
//! settings and their schedule), [`error`], `conn.rs`, `engine/` (the
//! coordinator: `mod.rs`, with resolvers and checkpoints; `downloaders.rs`,
//! `apps.rs`, `admin.rs`, `status.rs`), and the owners it coordinates:
//! `registry.rs` (components and their work), `pacing.rs`, `ip_owner.rs`,
//! `dns.rs`, `checkpoint.rs`, `history.rs` (pages/s figures), `speed/` (the speed
//! target in force, connection counts); [`metrics`], [`robots_file`], `web/` (the
//! admin page and API).
//!
//! # What this service must never do
//!
//! - call the frontier from anywhere but the core loop, or block that loop on a
//!   peer (sends are non-blocking; a peer that cannot keep up is dropped);
//! - consider a page done before its batch is committed;
//! - let work pile up unbounded: the event queue, every outbox, DNS batches per
//!   resolver and jobs per downloader are bounded.

pub(crate) mod ask;
mod checkpoint;
pub mod config;
pub(crate) mod conn;
mod dns;
pub(crate) mod engine;
pub mod error;
mod history;
mod ip_owner;
pub mod metrics;
mod pacing;
mod registry;
pub mod robots_file;
mod speed;
mod stages;
pub(crate) mod web;

pub use config::speed::{ScheduleEntry, SpeedConfig};
pub use config::{InvalidConfig, ManagerConfig};
pub use error::ManagerError;
pub use stages::StageTimes;
