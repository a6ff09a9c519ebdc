//! Running the manager service: [`bind`] the control port, then [`run`] (or
//! [`run_with_admin`], [`run_measured`]) opens the state, starts the core
//! ([`Engine`](crate::service::engine), in `service/engine/`) and the admin page, and
//! feeds the core the connections' events until a shutdown completes. What the
//! service does is described in [`service`](crate::service).
//!
//! This module must never change the frontier or a component's state itself: it
//! accepts connections, moves events to the core in bursts and runs the core's step.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spool::protocol::{
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_FRAME, Limits, Role, ServerConfig, Token,
};
use spool::{ComponentId, Spool};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::sleep_until;
use tokio_util::sync::CancellationToken;

use crate::frontier::Frontier;
use crate::service::ask::AdminAsker;
use crate::service::conn::{self, ConnId, ConnSettings, Event};
use crate::service::engine::Engine;
use crate::service::{InvalidConfig, ManagerConfig, ManagerError, StageTimes, robots_file, web};

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
    let admin_token = admin_token(&config)?;
    let (frontier, robots_dir) = open_state(&config, spool)?;
    let web_settings = web::WebSettings {
        admin_token: admin_token.clone(),
        grace_ms: config.shutdown_grace_ms,
    };
    let admin_writes = admin_token.is_some();
    let mut server = ServerConfig::new(Role::Manager, component_id(&config)?, token);
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
        tracing::info!(%addr, state = %config.state_dir.display(), "manager: control port open");
    }
    let mut engine = Engine::new(
        frontier,
        config,
        robots_dir,
        admin_writes,
        heartbeat_timeout,
    )?;
    let (events_tx, events) = mpsc::channel::<Event>(EVENT_QUEUE);
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
        let asker = AdminAsker::new(events_tx.clone());
        let serve = web::serve(listener, web_settings, asker, web_stop.clone());
        tokio::spawn(serve)
    });
    let mut control = Control {
        listener,
        conn_settings,
        events_tx,
        events,
        conns: JoinSet::new(),
        next_conn: 1,
    };
    let result = match control.run(&mut engine, &shutdown, grace).await {
        Ok(()) => engine.close(),
        Err(e) => Err(e),
    };
    // Connection tasks blocked on the event queue see it closed and end; the others
    // get a moment to send the Bye the core queued.
    let Control {
        events, mut conns, ..
    } = control;
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

/// The admin token of `config`, if one is set.
fn admin_token(config: &ManagerConfig) -> Result<Option<Token>, ManagerError> {
    match config.admin_token.as_str() {
        "" => Ok(None),
        secret => Ok(Some(Token::new(secret).map_err(|e| InvalidConfig {
            field: "manager.admin_token",
            message: e.to_string(),
        })?)),
    }
}

/// The manager's component id (`manager.frontier.component_id`).
fn component_id(config: &ManagerConfig) -> Result<ComponentId, ManagerError> {
    let id =
        ComponentId::new(config.frontier.component_id.as_str()).map_err(|e| InvalidConfig {
            field: "manager.frontier.component_id",
            message: e.to_string(),
        })?;
    Ok(id)
}

/// Opens the state directory's frontier (created if missing) and the spool's
/// `robots/` folder, deleting robots files that earlier runs left behind.
fn open_state(config: &ManagerConfig, spool: Spool) -> Result<(Frontier, PathBuf), ManagerError> {
    let state = &config.state_dir;
    std::fs::create_dir_all(state).map_err(|source| ManagerError::StateDir {
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
    Ok((frontier, robots_dir.path().to_owned()))
}

/// The control port's side of the loop: the listener, the connection tasks and the
/// queue of their events.
struct Control {
    listener: TcpListener,
    conn_settings: Arc<ConnSettings>,
    events_tx: mpsc::Sender<Event>,
    events: mpsc::Receiver<Event>,
    conns: JoinSet<()>,
    next_conn: ConnId,
}

impl Control {
    /// The loop: accepts connections, hands their events to `engine` in bursts and
    /// runs its step after each wake, until the engine finished its shutdown
    /// (`Ok`) or failed (`Err`).
    async fn run(
        &mut self,
        engine: &mut Engine,
        shutdown: &CancellationToken,
        grace: Duration,
    ) -> Result<(), ManagerError> {
        loop {
            let wake = engine.next_wake();
            tokio::select! {
                () = shutdown.cancelled(), if !engine.is_stopping() => engine.begin_shutdown(grace, false),
                accepted = self.listener.accept(), if !engine.is_stopping() => self.accepted(accepted).await,
                Some(event) = self.events.recv() => self.burst(engine, event)?,
                Some(_) = self.conns.join_next(), if !self.conns.is_empty() => {}
                () = sleep_until(wake) => {}
            }
            engine.step()?;
            if engine.finished() {
                return Ok(());
            }
        }
    }

    /// A connection accepted (or not): its task starts, unless there are too many.
    async fn accepted(&mut self, accepted: std::io::Result<(TcpStream, SocketAddr)>) {
        match accepted {
            Ok((stream, peer)) if self.conns.len() < MAX_CONNECTIONS => {
                let _ = stream.set_nodelay(true);
                let settings = self.conn_settings.clone();
                let task = conn::serve(
                    stream,
                    peer,
                    self.next_conn,
                    settings,
                    self.events_tx.clone(),
                );
                self.next_conn += 1;
                self.conns.spawn(task);
            }
            Ok((_, peer)) => {
                tracing::warn!(%peer, max = MAX_CONNECTIONS, "too many control connections: closing a new one");
            }
            Err(e) => {
                // Out of file descriptors, usually: pause instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// Hands `event` and up to [`EVENT_BURST`] queued after it to `engine`.
    fn burst(&mut self, engine: &mut Engine, event: Event) -> Result<(), ManagerError> {
        engine.handle(event)?;
        for _ in 1..EVENT_BURST {
            match self.events.try_recv() {
                Ok(event) => engine.handle(event)?,
                Err(_) => break,
            }
        }
        Ok(())
    }
}
