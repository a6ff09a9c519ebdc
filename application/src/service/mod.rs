//! The breadth-first application service, `polycrawl app` (DESIGN.md section 7).
//!
//! [`run`] registers with the manager ([`control`]), and runs the crawl loop on a
//! blocking thread (`crawl.rs`):
//!
//! 1. on the first start the seeds take the links' path: canonicalize, scope, seen
//!    insert at depth 0;
//! 2. page batches are claimed from `pages/<app>/` (own `.claimed/` first); every
//!    response record gives links ([`pages`]: HTML links, 3xx `Location`), which
//!    pass the [`scope`] and trap rules and go into the seen set with the
//!    host-reversed key and the depth as payload;
//! 3. each merge's new keys are unshuffled ([`unshuffle`]), cut into request files
//!    of `urls_per_request_file` URLs with a `depth` hint, and published into
//!    `requests/<app>/` (one producer id per instance); then the generation is
//!    recorded in the progress file ([`state`]) and released in the seen set;
//! 4. a page batch whose links are all published is moved into the repository
//!    (`storage::Repository::ingest`; a batch fault quarantines it);
//! 5. outcome files from `outcomes/<app>/` are counted by reason and deleted.
//!
//! Parsing never waits on a merge: the seen set merges in the background and the
//! loop only drains finished merges ([`SeenSet::try_recv_new`](crate::seen::SeenSet::try_recv_new));
//! it flushes the buffer only when it has nothing else to do.
//!
//! **Completion.** The crawl is complete when nothing is buffered, merging or
//! unpublished, no page batch waits for publication, `pages/<app>/` and
//! `outcomes/<app>/` are empty, and the manager's newest `AppProgress`, received
//! after our last action, says idle — at two checks `idle_check_ms` apart. Then the
//! loop checkpoints and returns a [`Summary`] (printed as one line). With
//! `max_pages`, once that many pages are stored new merges are no longer published
//! (the outstanding URLs finish) and the crawl ends the same way.
//!
//! # Crash safety: kill -9 at any point loses no URL
//!
//! - A page batch stays in our `.claimed/` until its links are published: it is
//!   ingested (moved out) only after the generation covering its last insert is
//!   recorded as published. After a restart every batch still claimed is read again
//!   and its links re-inserted; the seen set reopens at the last published
//!   generation ([`SeenSet::open_at`](crate::seen::SeenSet::open_at)), so links merged
//!   but not published are found new again, and links published stay seen.
//! - Seeds are re-inserted at every start until a published generation covers them
//!   (`seeds_done` in the progress file).
//! - Request files are published (fsync, rename) before the generation is recorded:
//!   a crash in between republishes that batch's URLs (duplicates the manager's
//!   queues and storage's digest dedup absorb); never the reverse.
//! - Storage ingest is idempotent: a crash inside it is finished by the next call.
//! - Outcome files are counted, the counts saved, then the file deleted; a crash in
//!   between counts one file twice (counts are statistics, not URLs).
//!
//! Known limits: the depth of a page comes from an in-memory map of outstanding
//! requests (memory O(URLs in flight)); after a restart the pages of URLs requested
//! before it are taken as depth 0. `max_pages_per_host` counts per run. The page
//! count misses a batch stored just before a crash (saved right after the ingest).

pub mod config;
pub mod control;
mod crawl;
pub mod error;
pub mod pages;
pub mod scope;
pub mod state;
pub mod summary;
pub mod unshuffle;

use spool::Spool;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use config::AppConfig;
pub use control::{ControlSettings, default_id};
#[doc(hidden)]
pub use crawl::CrashHook;
pub use error::AppError;
pub use summary::{End, Summary};

/// Runs the application until the crawl is complete, `shutdown` is cancelled (after
/// a checkpoint), or the manager refuses it. `seeds` add to `config.seeds_file`.
pub async fn run(
    config: AppConfig,
    spool: Spool,
    seeds: Vec<String>,
    control: ControlSettings,
    shutdown: CancellationToken,
) -> Result<Summary, AppError> {
    run_with_hook(
        config,
        spool,
        seeds,
        control,
        shutdown,
        CrashHook::default(),
    )
    .await
}

/// [`run`] with a test crash hook.
#[doc(hidden)]
pub async fn run_with_hook(
    config: AppConfig,
    spool: Spool,
    seeds: Vec<String>,
    control: ControlSettings,
    shutdown: CancellationToken,
    hook: CrashHook,
) -> Result<Summary, AppError> {
    config.scope()?;
    let app = config.app_id()?;
    let (tx, rx) = watch::channel(None);
    let stop = shutdown.child_token();
    let ctl_stop = CancellationToken::new();
    let mut ctl = tokio::spawn(control::serve(control.clone(), app, tx, ctl_stop.clone()));
    let loop_stop = stop.clone();
    let id = control.id.clone();
    let mut job = tokio::task::spawn_blocking(move || {
        crawl::Crawl::open(config, &spool, id, seeds, rx, loop_stop, hook)?.run()
    });
    let result = tokio::select! {
        r = &mut job => r.map_err(|_| AppError::Panicked).and_then(|r| r),
        c = &mut ctl => {
            stop.cancel();
            let crawl = (&mut job).await.map_err(|_| AppError::Panicked).and_then(|r| r);
            match c {
                Ok(Err(e)) => Err(e),
                _ => crawl,
            }
        }
    };
    ctl_stop.cancel();
    ctl.abort();
    result
}
