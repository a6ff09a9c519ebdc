//! The breadth-first application service, `polycrawl app` (DESIGN.md section 7).
//!
//! [`run`] registers with the manager ([`control`]), and runs the crawl loop on a
//! blocking thread (`crawl.rs`):
//!
//! 1. on the first start the seeds take the links' path: canonicalize, scope, seen
//!    insert at depth 0;
//! 2. page batches are claimed from `pages/<app>/` (own `.claimed/` first, at most
//!    one per reader thread ahead) and read on a pool of reader threads
//!    (`read_ahead.rs`: inflate, storage's check, link extraction; one per core),
//!    so that reading batches overlaps inserting the previous one's links; every
//!    response record gives links ([`pages`]: HTML links, 3xx `Location`), which
//!    pass the [`scope`](app_core::scope) rules and the [`traps`](app_core::traps) detectors and go into the seen set
//!    with the host-reversed key and the depth as payload;
//! 3. each merge's new keys are unshuffled ([`unshuffle`]), cut into request files
//!    of `urls_per_request_file` URLs with a `depth` hint, and published into
//!    `requests/<app>/` (one producer id per instance); then the generation is
//!    recorded in the progress file ([`state`]) and released in the seen set;
//! 4. a page batch whose links are all published is appended to the repository's
//!    open WARC file and removed from the spool (`storage::Repository::ingest`; a
//!    batch fault quarantines it);
//! 5. outcome files from `outcomes/<app>/` are counted by reason and deleted; their
//!    `sitemap` lines (sitemaps a host's robots.txt names, reported by the manager
//!    with a depth) are offered like links when `sitemaps` is on (the default), and
//!    a fetched sitemap's URLs are the links of that page (`pages.rs`).
//!
//! Parsing never waits on a merge: the seen set merges in the background and the
//! loop only drains finished merges ([`SeenSet::try_recv_new`](seen::SeenSet::try_recv_new)).
//!
//! **Eager when idle, batched when busy** (DESIGN.md section 2). When the loop has
//! nothing else to do, or the manager is short of URLs (even while page batches
//! are being read), it starts a merge of what is buffered as the pace allows
//! ([`SeenSet::merge_now`](seen::SeenSet::merge_now), `pace.rs`); while a merge runs,
//! new links keep collecting in the buffer and go with the next one, so merges
//! grow with the load. Every request file published is announced to the manager
//! with a `Published` hint, so it is loaded at once, not at the manager's next
//! folder scan. Page batches wake the loop through the folder watcher and through
//! the manager's relayed hints (the only wake-up that crosses machines).
//!
//! **Completion.** When nothing is buffered, merging, unpublished or waiting for
//! publication and `pages/<app>/` and `outcomes/<app>/` are empty, the loop sends
//! `SyncProgress` and waits for the answer: an `AppProgress` that counts every
//! request file published before the sync. If it says idle (and the folders are
//! still empty, since a batch committed just before the answer is visible by now),
//! the crawl is complete. With `idle_check_ms > 0` the verdict is confirmed by a
//! second sync at least that much later: that is for a spool shared over NFS, where
//! the manager's machine may see our newest request file only after its attribute
//! cache expires. Then the loop checkpoints and returns a [`Summary`] (printed as
//! one line). With `max_pages`, once that many pages are stored new merges are no
//! longer published (the outstanding URLs finish) and the crawl ends the same way.
//!
//! **Parts.** A crawl split into K parts runs K of these services, each an
//! ordinary application with its own id; [`exchange`] says what a part does with
//! links to hosts it does not own and when a split crawl is over.
//!
//! # Crash safety: kill -9 at any point loses no URL
//!
//! - A page batch stays in our `.claimed/` until its links are published: it is
//!   ingested (stored, then removed) only after the generation covering its last insert is
//!   recorded as published. After a restart every batch still claimed is read again
//!   and its links re-inserted; the seen set reopens at the last published
//!   generation ([`SeenSet::open_at`](seen::SeenSet::open_at)), so links merged
//!   but not published are found new again, and links published stay seen.
//! - Seeds are re-inserted at every start until a published generation covers them
//!   (`seeds_done` in the progress file).
//! - Request files are published (fsync, rename) before the generation is recorded:
//!   a crash in between republishes that batch's URLs (duplicates the manager's
//!   queues and storage's digest dedup absorb); never the reverse.
//! - Storage ingest is idempotent: a crash inside it is finished by the next call.
//! - Outcome files are counted, the counts saved, then the file deleted; a crash in
//!   between counts one file twice (counts are statistics, not URLs). A file with
//!   `sitemap` lines (the `Sitemap:` URLs of a robots.txt, see
//!   [`OutcomeReason::Sitemap`](spool::OutcomeReason::Sitemap)) is counted, saved
//!   and deleted only once the generation holding those URLs is published, like a
//!   page batch.
//!
//! Depths travel with the URL (the request file's `depth` hint, carried by the
//! downloader into the page's WARC record), so the app holds nothing per URL in
//! flight and a restart keeps them (`tests/tests/app_crash.rs` checks).
//! Host budgets (and `max_pages_per_host`) are saved in `<state_dir>/budgets` after
//! a recorded generation (at most every 10 s, and at checkpoints) and survive a
//! restart; a crash forgets at most the last 10 s of counts, never over-counts.
//! Known limits: the page count misses a batch stored just before a crash (saved
//! right after the ingest).

mod crawl;
mod deferred;
pub mod exchange;
pub mod given_up;
mod importance;
mod pace;
mod read_ahead;
pub mod state;
pub mod summary;
pub mod unshuffle;

use app_core::{AppConfig, AppError, ControlSettings, CrashHook, control};
use spool::Spool;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

pub use summary::{CutSummary, PageCounts, Summary};

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
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let stop = shutdown.child_token();
    let loop_stop = stop.clone();
    let id = control.id.clone();
    let link = crawl::ManagerLink {
        progress: rx,
        outbound: out_tx,
    };
    let crawl = tokio::task::spawn_blocking(move || {
        crawl::Crawl::open(config, &spool, id, seeds, link, loop_stop, hook)
    })
    .await
    .map_err(|_| AppError::Panicked)??;
    let to_crawl = control::ToCrawl {
        progress: tx,
        waker: crawl.waker(),
    };
    control::drive(control, app, to_crawl, out_rx, &stop, move || crawl.run()).await
}
