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
//! - **Eager when idle, batched when busy** (Nagle's rule, DESIGN.md section 2):
//!   [`Command::Publish`] comes when no job of the application is left at this
//!   downloader. The batch goes out at once if the application has claimed our
//!   previous batch (it is waiting for work); if that batch is still in
//!   `pages/<app>/`, the application is busy, so the batch keeps growing and is
//!   published the moment the previous one is claimed (checked every
//!   [`CLAIM_POLL`]: one `stat`), or by size or age, whichever comes first. Every
//!   published file costs the application a claim, an ingest and their fsyncs, so
//!   this is what keeps batches large under load and latency low when idle. Robots files are written
//!   and published at once, then reported.
//! - A write or publish error is fatal ([`Event::Failed`]): the failed batch is
//!   dropped (its temp file deleted) and the service stops (see
//!   [`crate::service::error`]). A header-field error loses one record only and is
//!   reported as `invalid_url`.
//!
//! This module must never block a tokio worker thread, never publish a batch whose
//! records did not all write, and never report a page before its records are
//! written. Cost: O(record bytes) per record; O(apps) per wake-up.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spool::protocol::{FetchReport, FetchResult, StoredPage};
use spool::publish::Publisher;
use spool::{AppId, ComponentId, OutcomeReason, Spool};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};
use tracing::{debug, error};

use crate::service::batch::{Batch, Exchange, JobTag, publish_robots};
use crate::service::error::{DownloaderError, WriteError};
use crate::service::metrics::Metrics;

/// Responses waiting for the writer thread, at most.
pub const QUEUE: usize = 64;

/// How often a batch held back for a busy application checks whether the
/// application has claimed our previous batch.
pub const CLAIM_POLL: Duration = Duration::from_millis(2);

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
}

impl WriterHandle {
    /// Starts the thread.
    pub(crate) fn spawn(
        settings: WriterSettings,
        events: mpsc::UnboundedSender<Event>,
        metrics: Arc<Metrics>,
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
        };
        let thread = std::thread::Builder::new()
            .name("warc-writer".into())
            .spawn(move || runtime.block_on(writer.serve(rx)))
            .map_err(DownloaderError::WriterThread)?;
        Ok(Self { commands, thread })
    }

    /// A sender for fetch tasks and the session.
    pub(crate) fn sender(&self) -> mpsc::Sender<Command> {
        self.commands.clone()
    }

    /// Publishes every open batch and waits for the thread to exit.
    pub(crate) async fn shutdown(self) -> Result<(), WriteError> {
        // Fails only if the thread is already gone (it panicked).
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
    /// Applications whose open batch goes out once `last_published` is claimed.
    held: HashSet<AppId>,
}

impl Writer {
    async fn serve(mut self, mut rx: mpsc::Receiver<Command>) {
        loop {
            self.publish_aged();
            self.publish_claimed();
            let oldest = self.open.values().map(Batch::opened).min();
            let mut deadline = oldest.map(|t| Instant::from_std(t) + self.settings.max_batch_age);
            if !self.held.is_empty() {
                let poll = Instant::now() + CLAIM_POLL;
                deadline = Some(deadline.map_or(poll, |d| d.min(poll)));
            }
            let far = Instant::now() + Duration::from_secs(86_400);
            tokio::select! {
                command = rx.recv() => match command {
                    Some(Command::Store(store)) => self.store(*store),
                    Some(Command::Publish { app }) => self.publish_when_waited_for(app),
                    Some(Command::Flush { session }) => {
                        self.publish_all();
                        self.emit(Event::Flushed { session });
                    }
                    Some(Command::Shutdown) | None => {
                        self.publish_all();
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

    fn store(&mut self, store: Store) {
        let Store {
            tag,
            app,
            destination,
            exchange,
            mut page,
        } = store;
        let written = match destination {
            Destination::Robots => self.write_robots(&exchange),
            Destination::Page => self.write_page(&app, &exchange, tag),
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

    /// Publishes the held batches whose application claimed our last batch.
    fn publish_claimed(&mut self) {
        if self.held.is_empty() {
            return;
        }
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
        let apps: Vec<AppId> = self.open.keys().cloned().collect();
        for app in apps {
            self.publish(&app);
        }
    }

    fn publish(&mut self, app: &AppId) {
        self.held.remove(app);
        let Some(batch) = self.open.remove(app) else {
            return;
        };
        match batch.publish() {
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
