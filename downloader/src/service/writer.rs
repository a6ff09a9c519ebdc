//! The batch writer: one dedicated OS thread that owns every open page batch and
//! does all the service's file I/O, so that compression, `write` and `fsync` never
//! run on (and never stall) the tokio runtime that drives the sockets.
//!
//! # Design
//!
//! - Fetch tasks hand finished responses to the thread as [`Command::Store`] over a
//!   **bounded** tokio channel ([`QUEUE`] entries). When the disk is slower than
//!   the network the channel fills and fetch tasks wait in `send`, which holds
//!   their concurrency slot: back-pressure reaches the network instead of memory.
//!   Memory is bounded by (concurrency + [`QUEUE`]) × `max_body_bytes`.
//! - The thread runs a current-thread tokio runtime of its own only to wait on that
//!   channel and on the oldest batch's age deadline at once; everything it does
//!   between waits is plain blocking I/O, which is fine on a thread of its own.
//! - It answers through an unbounded channel of [`Event`]s, in order: the `Report`
//!   of a page (sent as soon as its records are written), later the `Committed` of
//!   the batch holding it (right after publishing), `Flushed` after a flush. One
//!   ordered stream is what guarantees that the manager never sees a job committed
//!   before it was reported. The event channel is unbounded so that the thread can
//!   never block on the session while the session waits for room in the command
//!   channel (that would deadlock); it holds at most one event per command plus one
//!   per published file, and the session drains it continuously.
//! - Batches: one open batch per application, opened at its first record, published
//!   when it reaches `max_batch_bytes`, when it is `max_batch_age_ms` old, on
//!   [`Command::Publish`], on [`Command::Flush`] and on [`Command::Shutdown`].
//! - **Eager when idle, batched when busy** (Nagle's rule, DESIGN.md section 2): a
//!   batch becomes *ripe* when [`Command::Publish`] comes (no job of the
//!   application is left at this downloader) or when it is [`RIPE_AGE`] old. A
//!   ripe batch goes out at once if the application has claimed our previous
//!   batch (it is waiting for work); if that batch is still in `pages/<app>/`, the
//!   application is busy, so the batch keeps growing and is published the moment
//!   the previous one is claimed (checked every [`CLAIM_POLL`]: one `stat`), or by
//!   size or age, whichever comes first. Every published file costs the
//!   application a claim, an ingest and their fsyncs, so this is what keeps
//!   batches large under load and latency low when idle; the ripe age is what
//!   keeps an application that has claimed everything from waiting on a
//!   downloader that is still busy fetching (a crawl's first seconds: every seed
//!   page in one batch, published only when the last one is fetched, left the
//!   application idle and then one reader thread parsing it while the downloader
//!   waited for links: issue 39). Robots files (a robots.txt over
//!   `INLINE_ROBOTS_MAX` bytes) are written and published at once, then
//!   reported; a smaller one never comes here: its task reports it with the
//!   response in the report (`task::report_robots`).
//! - **Spool full** (`ENOSPC`, `EDQUOT`: [`WriteError::is_disk_full`]): the writer
//!   pauses. A record that failed is cut off its batch ([`Batch::recover`]
//!   truncates the temp file to the last complete record) and kept in memory, not
//!   reported; a batch that could not be published stays open and whole. The
//!   thread logs one line (`spool full at PATH: pausing, retrying every N s at
//!   most`), tells the session (which tells the manager: [`Event::Pause`]), stops
//!   reading commands (so fetch tasks wait in `send`, holding their slots: no new
//!   fetch starts, nothing fetched is dropped), and retries the failed publishes,
//!   then the kept record, with a back-off from [`RETRY_MIN`] doubling to
//!   [`RETRY_MAX`]. When they succeed it logs `resumed` and goes on. At shutdown
//!   (the `give_up` token) a paused writer tries once more, then gives up: its
//!   unpublished pages were reported but never committed, so the manager fetches
//!   them again.
//! - Any other write or publish error is fatal ([`Event::Failed`]): the failed
//!   batch is dropped (its temp file deleted) and the service stops (see
//!   [`crate::service::error`]). A header-field error loses one record only and is
//!   reported as `invalid_url`.
//!
//! This module must never block a tokio worker thread, never publish a batch whose
//! records did not all write, never report a page before its records are written,
//! and never drop a record or a batch because the spool is full. Cost: O(record
//! bytes) per record; O(apps) per wake-up.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spool::protocol::{FetchReport, FetchResult, Pause, StoredPage};
use spool::publish::Publisher;
use spool::{AppId, ComponentId, OutcomeReason, Spool};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use crate::service::batch::{Batch, Exchange, JobTag, publish_robots};
use crate::service::error::{DownloaderError, WriteError};
use crate::service::metrics::Metrics;

/// Responses waiting for the writer thread, at most.
pub const QUEUE: usize = 64;

/// How often a batch held back for a busy application checks whether the
/// application has claimed our previous batch.
pub const CLAIM_POLL: Duration = Duration::from_millis(2);

/// Age at which an open batch is published as soon as its application has claimed
/// our previous batch, though the application still has jobs here (see the module
/// docs: eager when idle).
pub const RIPE_AGE: Duration = Duration::from_millis(100);

/// First wait before retrying a write that failed because the spool is full.
pub const RETRY_MIN: Duration = Duration::from_millis(50);
/// Longest wait between two retries while the spool is full.
pub const RETRY_MAX: Duration = Duration::from_secs(1);

/// Where a response goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Destination {
    /// The open page batch of the job's application.
    Page,
    /// A robots file of its own, published at once.
    Robots,
}

/// A response to store, with its report (whose `file` the writer fills in).
#[derive(Debug)]
pub(crate) struct Store {
    pub tag: JobTag,
    pub app: AppId,
    pub destination: Destination,
    pub exchange: Exchange,
    pub page: StoredPage,
}

/// What the writer thread is asked to do.
#[derive(Debug)]
pub(crate) enum Command {
    /// Write a response (and report it).
    Store(Box<Store>),
    /// No job of `app` is left here: publish its open batch as soon as the
    /// application is waiting for work (see the module docs).
    Publish {
        /// The application.
        app: AppId,
    },
    /// Publish every open batch, then send [`Event::Flushed`].
    Flush {
        /// Echoed in `Flushed`.
        session: u64,
    },
    /// Publish every open batch and exit.
    Shutdown,
}

/// What the writer thread (and the fetch tasks) tell the session, in order.
#[derive(Debug)]
pub(crate) enum Event {
    /// A job ended: its report for the manager.
    Report {
        /// The session the job came on.
        session: u64,
        /// The report.
        report: FetchReport,
        /// The report is `Stored` in a page batch not published yet (a
        /// `Committed` follows).
        in_batch: bool,
    },
    /// A page batch was published.
    Committed {
        /// Its name in `pages/<app>/`.
        file: String,
        /// Every job whose records it holds.
        jobs: Vec<JobTag>,
    },
    /// Every batch open when the flush was asked for is published.
    Flushed {
        /// The session that asked.
        session: u64,
    },
    /// Writing failed; the service must stop.
    Failed(WriteError),
    /// The writer paused (the spool is full: `Some`) or resumed (`None`): the
    /// pause to report.
    Pause(Option<Pause>),
}

/// What the writer needs to know.
#[derive(Debug, Clone)]
pub(crate) struct WriterSettings {
    pub spool: Spool,
    pub producer: ComponentId,
    pub gzip_level: u32,
    pub max_batch_bytes: u64,
    pub max_batch_age: Duration,
    pub user_agent: String,
}

/// The running writer thread.
#[derive(Debug)]
pub(crate) struct WriterHandle {
    commands: mpsc::Sender<Command>,
    thread: std::thread::JoinHandle<()>,
    give_up: CancellationToken,
}

impl WriterHandle {
    /// Starts the thread. Once `give_up` is cancelled (the service stops), a
    /// writer paused on a full spool tries once more and then gives up.
    pub(crate) fn spawn(
        settings: WriterSettings,
        events: mpsc::UnboundedSender<Event>,
        metrics: Arc<Metrics>,
        give_up: CancellationToken,
    ) -> Result<Self, DownloaderError> {
        let (commands, rx) = mpsc::channel(QUEUE);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(DownloaderError::WriterThread)?;
        let writer = Writer {
            settings,
            events,
            metrics,
            publishers: HashMap::new(),
            robots: None,
            open: HashMap::new(),
            last_published: HashMap::new(),
            held: HashSet::new(),
            next_claim_check: Instant::now(),
            paused: None,
            give_up: give_up.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("warc-writer".into())
            .spawn(move || runtime.block_on(writer.serve(rx)))
            .map_err(DownloaderError::WriterThread)?;
        Ok(Self {
            commands,
            thread,
            give_up,
        })
    }

    /// A sender for fetch tasks and the session.
    pub(crate) fn sender(&self) -> mpsc::Sender<Command> {
        self.commands.clone()
    }

    /// Publishes every open batch and waits for the thread to exit.
    pub(crate) async fn shutdown(self) -> Result<(), WriteError> {
        // A writer paused on a full spool gives up instead of waiting forever.
        self.give_up.cancel();
        // Fails only if the thread is already gone (it panicked or gave up).
        let _ = self.commands.send(Command::Shutdown).await;
        drop(self.commands);
        let thread = self.thread;
        match tokio::task::spawn_blocking(move || thread.join()).await {
            Ok(Ok(())) => Ok(()),
            _ => Err(WriteError::Panicked),
        }
    }
}

/// The thread's state.
struct Writer {
    settings: WriterSettings,
    events: mpsc::UnboundedSender<Event>,
    metrics: Arc<Metrics>,
    publishers: HashMap<AppId, Publisher>,
    robots: Option<Publisher>,
    open: HashMap<AppId, Batch>,
    /// The last batch published per application, while it may be unclaimed.
    last_published: HashMap<AppId, PathBuf>,
    /// Applications whose open batch is ripe: it goes out once `last_published` is
    /// claimed.
    held: HashSet<AppId>,
    /// When `held` is checked next (every [`CLAIM_POLL`], not at every command).
    next_claim_check: Instant,
    /// Set while the spool is full.
    paused: Option<Paused>,
    /// Cancelled when the service stops (see [`WriterHandle::spawn`]).
    give_up: CancellationToken,
}

/// What waits while the spool is full, and when to try again.
struct Paused {
    /// What is reported to the manager.
    state: Pause,
    /// The response whose records could not be written (not reported yet).
    store: Option<Box<Store>>,
    /// Applications whose open batch could not be published.
    publish: Vec<AppId>,
    /// A flush that could not finish: `Flushed` goes out once it does.
    flushed: Option<u64>,
    /// A retry failed again (set by the failure, read by [`Writer::retry`]).
    failed_again: bool,
    backoff: Duration,
    next_try: Instant,
}

impl Writer {
    async fn serve(mut self, mut rx: mpsc::Receiver<Command>) {
        loop {
            if self.paused.is_some() {
                if !self.wait_out_pause().await {
                    return;
                }
                continue;
            }
            let now = Instant::now();
            self.publish_aged();
            self.ripen(now);
            self.publish_claimed(now);
            if self.paused.is_some() {
                continue;
            }
            let oldest = self.open.values().map(Batch::opened).min();
            let mut deadline = oldest.map(|t| Instant::from_std(t) + self.settings.max_batch_age);
            if let Some(opened) = self.unripe().map(|(_, b)| b.opened()).min() {
                let ripe = Instant::from_std(opened) + RIPE_AGE;
                deadline = Some(deadline.map_or(ripe, |d| d.min(ripe)));
            }
            if !self.held.is_empty() {
                let poll = self.next_claim_check.max(now);
                deadline = Some(deadline.map_or(poll, |d| d.min(poll)));
            }
            let far = now + Duration::from_secs(86_400);
            tokio::select! {
                command = rx.recv() => match command {
                    Some(Command::Store(store)) => self.store(*store),
                    Some(Command::Publish { app }) => self.publish_when_waited_for(app),
                    Some(Command::Flush { session }) => {
                        self.publish_all();
                        match &mut self.paused {
                            Some(p) => p.flushed = Some(session),
                            None => self.emit(Event::Flushed { session }),
                        }
                    }
                    Some(Command::Shutdown) | None => {
                        self.publish_all();
                        while self.paused.is_some() {
                            if !self.wait_out_pause().await {
                                return;
                            }
                            self.publish_all();
                        }
                        return;
                    }
                },
                () = sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {}
            }
        }
    }

    fn emit(&self, event: Event) {
        // The receiver is gone only when the service is over.
        let _ = self.events.send(event);
    }

    fn report(&self, tag: JobTag, result: FetchResult, in_batch: bool) {
        let report = FetchReport {
            job: tag.job,
            result,
        };
        self.emit(Event::Report {
            session: tag.session,
            report,
            in_batch,
        });
    }

    fn fatal(&self, error: WriteError) {
        error!(%error, "downloader: cannot write to the spool");
        self.emit(Event::Failed(error));
    }

    /// The spool is full: start a pause (one log line, the state to the manager),
    /// or, during a retry, note that it failed again.
    fn spool_full(&mut self, error: &WriteError) {
        if let Some(p) = &mut self.paused {
            p.failed_again = true;
            return;
        }
        let path = error.path().unwrap_or(self.settings.spool.root());
        let retry_ms = u64::try_from(RETRY_MAX.as_millis()).unwrap_or(u64::MAX);
        warn!(
            %error,
            "downloader: spool full at {}: pausing, retrying every {} s at most",
            path.display(),
            RETRY_MAX.as_secs_f32()
        );
        let state = Pause::disk_full(path, retry_ms);
        self.emit(Event::Pause(Some(state.clone())));
        self.paused = Some(Paused {
            state,
            store: None,
            publish: Vec::new(),
            flushed: None,
            failed_again: true,
            backoff: RETRY_MIN,
            next_try: Instant::now() + RETRY_MIN,
        });
    }

    /// Waits for the next retry (or for `give_up`) and retries. `false`: the
    /// writer gave up (at shutdown) and must exit.
    async fn wait_out_pause(&mut self) -> bool {
        let Some(next_try) = self.paused.as_ref().map(|p| p.next_try) else {
            return true;
        };
        if !self.give_up.is_cancelled() {
            tokio::select! {
                () = sleep_until(next_try) => {}
                () = self.give_up.cancelled() => {}
            }
        }
        self.retry();
        let Some(p) = &self.paused else {
            return true;
        };
        if !self.give_up.is_cancelled() {
            return true;
        }
        let pages = p.store.is_some() as usize
            + p.publish
                .iter()
                .filter_map(|app| self.open.get(app))
                .map(Batch::records)
                .sum::<usize>();
        warn!(
            path = %p.state.path,
            pages,
            "downloader: spool still full at shutdown: giving up on pages not committed (the manager fetches them again)"
        );
        false
    }

    /// Tries again what failed on the full spool: the publishes first, then the
    /// kept record, then a pending flush. Clears the pause if all of it went through.
    fn retry(&mut self) {
        let Some(p) = &mut self.paused else {
            return;
        };
        p.failed_again = false;
        let publish = std::mem::take(&mut p.publish);
        let store = p.store.take();
        for app in publish {
            self.publish(&app);
        }
        if let Some(store) = store {
            match &mut self.paused {
                Some(p) if p.failed_again => p.store = Some(store),
                _ => self.store(*store),
            }
        }
        let flushed = match &mut self.paused {
            Some(p) if !p.failed_again => p.flushed.take(),
            _ => None,
        };
        if let Some(session) = flushed {
            self.publish_all();
            match &mut self.paused {
                Some(p) if p.failed_again => p.flushed = Some(session),
                _ => self.emit(Event::Flushed { session }),
            }
        }
        let Some(p) = &mut self.paused else {
            return;
        };
        if p.failed_again {
            p.backoff = (p.backoff * 2).min(RETRY_MAX);
            p.next_try = Instant::now() + p.backoff;
            return;
        }
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            .saturating_sub(p.state.since_ms);
        info!(
            path = %p.state.path,
            paused_ms = since,
            "downloader: spool has room again: resumed"
        );
        self.paused = None;
        self.emit(Event::Pause(None));
    }

    fn store(&mut self, store: Store) {
        let written = match store.destination {
            Destination::Robots => self.write_robots(&store.exchange),
            Destination::Page => self.write_page(&store.app, &store.exchange, store.tag),
        };
        let Store {
            tag,
            app,
            destination,
            mut page,
            ..
        } = match written {
            Err(e) if e.is_disk_full() => {
                self.spool_full(&e);
                if let Some(p) = &mut self.paused {
                    debug_assert!(p.store.is_none(), "a store while paused");
                    p.store = Some(Box::new(store));
                }
                return;
            }
            _ => store,
        };
        match written {
            Ok(file) => {
                match destination {
                    Destination::Robots => self.metrics.robots_stored(page.wire_bytes),
                    Destination::Page => self.metrics.page_stored(page.wire_bytes),
                }
                page.file = file;
                let in_batch = destination == Destination::Page;
                self.report(tag, FetchResult::Stored(page), in_batch);
                if destination == Destination::Page {
                    self.rotate_if_full(&app);
                }
            }
            Err(WriteError::Field(e)) => {
                self.metrics.failed(OutcomeReason::InvalidUrl);
                let detail = format!("cannot archive: {e}");
                let reason = OutcomeReason::InvalidUrl;
                self.report(tag, FetchResult::Failed { reason, detail }, false);
            }
            Err(e) => self.fatal(e),
        }
    }

    /// Publishes a robots file; returns its name.
    fn write_robots(&mut self, exchange: &Exchange) -> Result<String, WriteError> {
        let publisher = match &mut self.robots {
            Some(p) => p,
            slot => slot.insert(Publisher::new(
                self.settings.spool.robots()?,
                self.settings.producer.clone(),
            )?),
        };
        let name = publish_robots(publisher, exchange, self.settings.gzip_level)?;
        debug!(file = %name, uri = %exchange.target_uri, "downloader: robots file published");
        Ok(name)
    }

    /// Appends to the app's open batch (opening one if needed); returns its name.
    fn write_page(
        &mut self,
        app: &AppId,
        exchange: &Exchange,
        tag: JobTag,
    ) -> Result<String, WriteError> {
        let batch = match self.open.entry(app.clone()) {
            Entry::Occupied(open) => open.into_mut(),
            Entry::Vacant(slot) => {
                slot.insert(open_batch(&mut self.publishers, &self.settings, app)?)
            }
        };
        match batch.append(exchange, tag) {
            Ok(()) => Ok(batch.name().to_owned()),
            Err(e @ WriteError::Field(_)) => Err(e),
            // Cut the failed record off; the batch keeps every earlier one.
            Err(e) if e.is_disk_full() => match batch.recover() {
                Ok(()) => Err(e),
                Err(unrecoverable) => {
                    self.open.remove(app);
                    Err(unrecoverable)
                }
            },
            Err(e) => {
                // Unusable now: dropping it deletes its temp file.
                self.open.remove(app);
                Err(e)
            }
        }
    }

    fn rotate_if_full(&mut self, app: &AppId) {
        let full = self
            .open
            .get(app)
            .is_some_and(|b| b.bytes() >= self.settings.max_batch_bytes);
        if full {
            self.publish(app);
        }
    }

    fn publish_aged(&mut self) {
        let max_age = self.settings.max_batch_age;
        let aged: Vec<AppId> = self
            .open
            .iter()
            .filter(|(_, b)| b.opened().elapsed() >= max_age)
            .map(|(app, _)| app.clone())
            .collect();
        for app in aged {
            self.publish(&app);
        }
    }

    /// `app` has no job left here: publish now if it claimed our last batch,
    /// else hold the batch until it does.
    fn publish_when_waited_for(&mut self, app: AppId) {
        if !self.open.contains_key(&app) {
            return;
        }
        if self.unclaimed(&app) {
            self.held.insert(app);
        } else {
            self.publish(&app);
        }
    }

    /// Batches [`RIPE_AGE`] old become ripe: published now if their application
    /// claimed our last batch, else held until it does.
    fn ripen(&mut self, now: Instant) {
        let ripe: Vec<AppId> = self
            .unripe()
            .filter(|(_, b)| now >= Instant::from_std(b.opened()) + RIPE_AGE)
            .map(|(app, _)| app.clone())
            .collect();
        for app in ripe {
            self.publish_when_waited_for(app);
        }
    }

    /// The open batches not ripe yet (not held).
    fn unripe(&self) -> impl Iterator<Item = (&AppId, &Batch)> {
        self.open
            .iter()
            .filter(|(app, _)| !self.held.contains(*app))
    }

    /// Publishes the held batches whose application claimed our last batch; at most
    /// once per [`CLAIM_POLL`] (one `stat` per held application).
    fn publish_claimed(&mut self, now: Instant) {
        if self.held.is_empty() || now < self.next_claim_check {
            return;
        }
        self.next_claim_check = now + CLAIM_POLL;
        let ready: Vec<AppId> = self
            .held
            .iter()
            .filter(|app| !self.unclaimed(app))
            .cloned()
            .collect();
        for app in ready {
            self.publish(&app);
        }
    }

    /// Whether our last batch for `app` is still waiting in `pages/<app>/`.
    fn unclaimed(&self, app: &AppId) -> bool {
        self.last_published
            .get(app)
            .is_some_and(|path| path.try_exists().unwrap_or(false))
    }

    fn publish_all(&mut self) {
        let waiting: &[AppId] = self.paused.as_ref().map_or(&[], |p| &p.publish);
        let apps: Vec<AppId> = self
            .open
            .keys()
            .filter(|app| !waiting.contains(app))
            .cloned()
            .collect();
        for app in apps {
            self.publish(&app);
        }
    }

    fn publish(&mut self, app: &AppId) {
        self.held.remove(app);
        let Some(batch) = self.open.get_mut(app) else {
            return;
        };
        let published = batch.publish();
        if let Err(e) = &published {
            if e.is_disk_full() {
                // Kept open and whole; published again after the pause.
                self.spool_full(e);
                if let Some(p) = &mut self.paused {
                    p.publish.push(app.clone());
                }
                return;
            }
        }
        self.open.remove(app);
        match published {
            Ok(published) => {
                if let Some(publisher) = self.publishers.get(app) {
                    let path = publisher.dir().path().join(&published.name);
                    self.last_published.insert(app.clone(), path);
                }
                self.metrics.batch_published(published.bytes);
                debug!(
                    %app,
                    file = %published.name,
                    bytes = published.bytes,
                    records = published.jobs.len(),
                    "downloader: page batch published"
                );
                self.emit(Event::Committed {
                    file: published.name,
                    jobs: published.jobs,
                });
            }
            Err(e) => self.fatal(e),
        }
    }
}

/// Starts a batch for `app`, creating the app's publisher on first use (which
/// lists `pages/<app>/` once and removes temp files a previous run left).
fn open_batch(
    publishers: &mut HashMap<AppId, Publisher>,
    settings: &WriterSettings,
    app: &AppId,
) -> Result<Batch, WriteError> {
    let publisher = match publishers.entry(app.clone()) {
        Entry::Occupied(p) => p.into_mut(),
        Entry::Vacant(slot) => {
            let dir = settings.spool.pages(app)?;
            slot.insert(Publisher::new(dir, settings.producer.clone())?)
        }
    };
    let s = settings;
    Batch::open(publisher, s.gzip_level, &s.user_agent, app.as_str())
}
