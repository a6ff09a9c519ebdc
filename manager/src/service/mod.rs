//! The crawl manager service (`polycrawl manager`): the control server that
//! downloaders, resolvers, applications and admin tools register with, around the
//! [`Frontier`].
//!
//! # Shape
//!
//! [`run`] accepts connections on the control port; each gets a task (`conn.rs`)
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
//! - **Admin page** (`web/`): [`run_with_admin`] also serves the admin page and its
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
//! [`config`] ([`ManagerConfig`]), [`error`], `conn.rs`, `engine/` (the
//! coordinator: `mod.rs`, with resolvers and checkpoints; `downloaders.rs`,
//! `apps.rs`, `admin.rs`, `status.rs`), and the owners it coordinates:
//! `registry.rs` (components and their work), `pacing.rs`, `ip_owner.rs`,
//! `dns.rs`, `checkpoint.rs`, `history.rs` (pages/s figures), `speed/` (the speed
//! target: schedule, connection counts); [`metrics`], [`robots_file`], `web/` (the
//! admin page and API).
//!
//! # What this service must never do
//!
//! - call the frontier from anywhere but the core loop, or block that loop on a
//!   peer (sends are non-blocking; a peer that cannot keep up is dropped);
//! - consider a page done before its batch is committed;
//! - let work pile up unbounded: the event queue, every outbox, DNS batches per
//!   resolver and jobs per downloader are bounded.

mod checkpoint;
pub mod config;
mod conn;
mod dns;
mod engine;
pub mod error;
mod history;
mod ip_owner;
pub mod metrics;
mod pacing;
mod registry;
pub mod robots_file;
mod speed;
mod stages;
mod web;

use std::sync::Arc;
use std::time::Duration;

use spool::protocol::{
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_FRAME, Limits, Role, ServerConfig, Token,
};
use spool::{ComponentId, Spool};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::sleep_until;
use tokio_util::sync::CancellationToken;

pub use config::{InvalidConfig, ManagerConfig};
pub use error::ManagerError;
pub use speed::config::{ScheduleEntry, SpeedConfig};
pub use stages::StageTimes;

use crate::frontier::Frontier;
use conn::{ConnId, ConnSettings, Event};
use engine::Engine;

/// Events queued from connection tasks before they wait for the engine.
const EVENT_QUEUE: usize = 4096;
/// Events handled in one burst before the core's step runs.
const EVENT_BURST: usize = 1024;
/// Connections at once (registered or in their handshake); more are closed at once.
const MAX_CONNECTIONS: usize = 4096;
/// Robots files older than this at start belong to jobs of earlier runs.
const ORPHAN_ROBOTS_AGE: Duration = Duration::from_secs(3600);
/// Time given to connection tasks to send their last `Bye` at the end.
const FAREWELL: Duration = Duration::from_secs(1);

/// Everything [`run`] needs besides the listener.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The `manager:` config section.
    pub config: ManagerConfig,
    /// The spool (request files, outcomes, robots files).
    pub spool: Spool,
    /// The control token every component presents (`control.token`).
    pub token: Token,
    /// Heartbeat period announced to components and used by the manager
    /// (`control.heartbeat_interval_ms`).
    pub heartbeat_interval: Duration,
    /// Silence after which a component is dropped (`control.heartbeat_timeout_ms`).
    pub heartbeat_timeout: Duration,
    /// Largest frame sent or accepted (`control.max_frame_bytes`).
    pub max_frame: u32,
}

impl Settings {
    /// Settings with the protocol's default limits and heartbeats every 2 s
    /// (timeout 10 s).
    pub fn new(config: ManagerConfig, spool: Spool, token: Token) -> Self {
        Self {
            config,
            spool,
            token,
            heartbeat_interval: Duration::from_secs(2),
            heartbeat_timeout: Duration::from_secs(10),
            max_frame: DEFAULT_MAX_FRAME,
        }
    }
}

/// Opens the control port on `addr` (`HOST:PORT`; port 0 picks a free one).
pub async fn bind(addr: &str) -> Result<TcpListener, ManagerError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ManagerError::Listen {
            addr: addr.to_owned(),
            source,
        })
}

/// Runs the manager on `listener` until `shutdown` is cancelled or an admin asks
/// for a shutdown (then drains downloaders and returns `Ok(())`), or until the
/// frontier fails (`Err`). Dropping the future is a crash: nothing is lost, the
/// next run on the same state directory takes over. No admin page: see
/// [`run_with_admin`].
pub async fn run(
    listener: TcpListener,
    settings: Settings,
    shutdown: CancellationToken,
) -> Result<(), ManagerError> {
    run_with_admin(listener, None, settings, shutdown).await
}

/// [`run`], also serving the admin page and its JSON API on `admin` (bound with
/// [`bind`] to `manager.admin_http`) while the manager runs.
pub async fn run_with_admin(
    listener: TcpListener,
    admin: Option<TcpListener>,
    settings: Settings,
    shutdown: CancellationToken,
) -> Result<(), ManagerError> {
    run_measured(listener, admin, settings, shutdown)
        .await
        .map(|_| ())
}

/// [`run_with_admin`], returning at the end how long dispatch starved over the
/// manager's life ([`StageTimes`]; `polycrawl manager` prints it).
pub async fn run_measured(
    listener: TcpListener,
    admin: Option<TcpListener>,
    settings: Settings,
    shutdown: CancellationToken,
) -> Result<StageTimes, ManagerError> {
    let Settings {
        config,
        spool,
        token,
        heartbeat_interval,
        heartbeat_timeout,
        max_frame,
    } = settings;
    config.validate()?;
    let admin_token = match config.admin_token.as_str() {
        "" => None,
        secret => Some(Token::new(secret).map_err(|e| InvalidConfig {
            field: "manager.admin_token",
            message: e.to_string(),
        })?),
    };
    let state = config.state_dir.clone();
    std::fs::create_dir_all(&state).map_err(|source| ManagerError::StateDir {
        path: state.clone(),
        source,
    })?;
    let robots_dir = spool
        .robots()
        .map_err(|e| crate::FrontierError::spool("open robots/", e))?;
    let orphans = robots_file::sweep_orphans(&robots_dir, ORPHAN_ROBOTS_AGE);
    if orphans > 0 {
        tracing::info!(orphans, "old robots files of earlier runs deleted");
    }
    let mut frontier = Frontier::open(&state.join("db"), spool, config.frontier.clone())?;
    frontier.rest_after_restart(crate::frontier::wall_clock_ms());
    let id =
        ComponentId::new(config.frontier.component_id.as_str()).map_err(|e| InvalidConfig {
            field: "manager.frontier.component_id",
            message: e.to_string(),
        })?;
    let admin_writes = admin_token.is_some();
    let web_settings = web::WebSettings {
        admin_token: admin_token.clone(),
        grace_ms: config.shutdown_grace_ms,
    };
    let mut server = ServerConfig::new(Role::Manager, id, token);
    server.admin_token = admin_token;
    server.limits = Limits {
        max_frame,
        handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
    };
    server.heartbeat_interval_ms =
        u64::try_from(heartbeat_interval.as_millis()).unwrap_or(u64::MAX);
    server.heartbeat_timeout_ms = u64::try_from(heartbeat_timeout.as_millis()).unwrap_or(u64::MAX);
    let conn_settings = Arc::new(ConnSettings {
        server,
        heartbeat_interval,
        heartbeat_timeout,
    });
    let grace = Duration::from_millis(config.shutdown_grace_ms);
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, state = %state.display(), "manager: control port open");
    }
    let mut engine = Engine::new(
        frontier,
        config,
        robots_dir.path().to_owned(),
        admin_writes,
        heartbeat_timeout,
    )?;
    let (events_tx, mut events) = mpsc::channel::<Event>(EVENT_QUEUE);
    // Not a child of `shutdown`: the page keeps answering while the manager drains.
    let web_stop = CancellationToken::new();
    let web_task = admin.map(|listener| {
        if let Ok(addr) = listener.local_addr() {
            if addr.ip().is_loopback() {
                tracing::info!(%addr, "manager: admin page at http://{addr}/");
            } else {
                tracing::warn!(%addr, "manager: admin page at http://{addr}/ on a non-loopback \
                    address: anyone who reaches it reads the figures (changes need the token)");
            }
        }
        let asker = engine::AdminAsker::new(events_tx.clone());
        let serve = web::serve(listener, web_settings, asker, web_stop.clone());
        tokio::spawn(serve)
    });
    let mut conns = JoinSet::new();
    let mut next_conn: ConnId = 1;
    let result: Result<(), ManagerError> = loop {
        let wake = engine.next_wake();
        tokio::select! {
            () = shutdown.cancelled(), if !engine.is_stopping() => engine.begin_shutdown(grace, false),
            accepted = listener.accept(), if !engine.is_stopping() => match accepted {
                Ok((stream, peer)) if conns.len() < MAX_CONNECTIONS => {
                    let _ = stream.set_nodelay(true);
                    let task = conn::serve(stream, peer, next_conn, conn_settings.clone(), events_tx.clone());
                    next_conn += 1;
                    conns.spawn(task);
                }
                Ok((_, peer)) => tracing::warn!(%peer, max = MAX_CONNECTIONS, "too many control connections: closing a new one"),
                Err(e) => {
                    // Out of file descriptors, usually: pause instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(event) = events.recv() => {
                let mut burst = Some(event);
                let mut handled = 0;
                let mut failed = None;
                while let Some(event) = burst.take() {
                    if let Err(e) = engine.handle(event) {
                        failed = Some(e);
                        break;
                    }
                    handled += 1;
                    if handled < EVENT_BURST {
                        burst = events.try_recv().ok();
                    }
                }
                if let Some(e) = failed {
                    break Err(e);
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            () = sleep_until(wake) => {}
        }
        if let Err(e) = engine.step() {
            break Err(e);
        }
        if engine.finished() {
            break Ok(());
        }
    };
    let result = match result {
        Ok(()) => engine.close(),
        Err(e) => Err(e),
    };

    // Connection tasks blocked on the event queue see it closed and end; the others
    // get a moment to send the Bye the core queued.
    drop(events);
    // The web server answers what it is answering (a shutdown's own answer), then
    // stops; requests that were queued for the core get a 503.
    web_stop.cancel();
    if let Some(task) = web_task {
        let _ = task.await;
    }
    let _ = tokio::time::timeout(FAREWELL, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    conns.abort_all();
    let stages = engine.stage_times();
    drop(engine); // Closes the database.
    result.map(|()| stages)
}
