//! What every crawling application shares, so that the breadth-first application
//! (`app-bfs`) and the seed-by-seed one (`app-seeds`) are built on the same parts
//! and neither reaches into the other:
//!
//! - [`config`]: [`AppConfig`], the `app: (...)` section of the config file, and
//!   what it compiles into (scope, trap rules, budget rule, ownership, canonicalization);
//! - [`control`]: the connection to the manager (registration, progress, hints);
//! - [`scope`], [`traps`], [`budget`] and [`cuts`]: which links are followed, which
//!   are cut and why;
//! - [`parts`]: which of K parts owns a host; [`twolevel`]: the files between a
//!   two-level crawl's coordinator and its agents;
//! - [`output`] and [`reach`]: request files published into the spool, with the
//!   depth and redirect hops each URL carries;
//! - [`pause`]: waiting out a full disk; [`error`]: [`AppError`].
//!
//! Depends only on the page libraries (`pages`, `seen`), `spool` and `storage`;
//! never on an application or on the crawling system's crates (manager,
//! downloader, resolver).

pub mod budget;
pub mod config;
pub mod control;
pub mod crawllog;
pub mod cuts;
pub mod error;
pub mod output;
pub mod parts;
pub mod pause;
pub mod reach;
pub mod reports;
pub mod scope;
pub mod traps;
pub mod twolevel;

pub use budget::HostCut;
pub use config::{AppConfig, PartMode, Partitioning};
pub use control::{ControlSettings, default_id};
pub use error::AppError;

/// Why the crawl loop returned. A crawl that ended [`End::Complete`] with URLs in
/// scope cut says `Incomplete` in its summary line (the breadth-first application's summary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Everything requested ended as a page or an outcome.
    Complete,
    /// `max_pages` pages were stored and the outstanding URLs finished.
    MaxPages,
    /// Shut down by a signal (or the caller) after a checkpoint.
    Shutdown,
    /// The test crash hook fired (nothing was checkpointed).
    Crashed,
}

/// Test hook: stop dead (like `kill -9`: nothing more is written) after this many
/// request files have been published in this run.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CrashHook {
    /// Request files published before the simulated crash.
    pub after_request_files: Option<u64>,
}
