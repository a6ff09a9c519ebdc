//! The manager connection: register as [`Role::Application`], `Subscribe { app }`,
//! send heartbeats, and keep the newest [`AppProgress`] in a watch channel for the
//! crawl loop. Reconnects with exponential back-off (the manager may restart) until
//! shutdown; a refusal (bad token, version) is final.
//!
//! [`ControlSettings`] has the resolver's shape (`control.manager_addr`,
//! `control.token`, an id, limits, reconnect pacing). The token is never logged.

use std::time::{Duration, Instant};

use spool::protocol::{
    ConnWriter, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_FRAME, Hello, Limits, Load, Message,
    ProtocolError, Role, Token, client_handshake,
};
use spool::{AppId, ComponentId};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::{sleep, timeout};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::error::AppError;

/// Where the manager is and how to talk to it.
#[derive(Debug, Clone)]
pub struct ControlSettings {
    /// The manager's control port, `HOST:PORT` (`control.manager_addr`).
    pub manager_addr: String,
    /// The shared secret presented in the `Hello` (`control.token`).
    pub token: Token,
    /// This application instance's id: its consumer id in `pages/<app>/` and
    /// `outcomes/<app>/` and its producer id in `requests/<app>/`. Must be stable
    /// across restarts (a restart resumes the claims of its id).
    pub id: ComponentId,
    /// Largest frame sent or accepted, in bytes (`control.max_frame_bytes`).
    pub max_frame: u32,
    /// Time allowed for the TCP connect plus the handshake, each.
    pub handshake_timeout: Duration,
    /// First pause before reconnecting after a failure; doubles up to `reconnect_max`.
    pub reconnect_min: Duration,
    /// Longest pause between reconnect attempts.
    pub reconnect_max: Duration,
}

impl ControlSettings {
    /// Settings with the protocol's default limits, reconnecting after 200 ms at
    /// first and at most every 10 s.
    pub fn new(manager_addr: impl Into<String>, token: Token, id: ComponentId) -> Self {
        Self {
            manager_addr: manager_addr.into(),
            token,
            id,
            max_frame: DEFAULT_MAX_FRAME,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            reconnect_min: Duration::from_millis(200),
            reconnect_max: Duration::from_secs(10),
        }
    }

    /// `app-<app>`: stable across restarts, as claims need.
    pub fn default_id(app: &AppId) -> ComponentId {
        ComponentId::new(format!("app-{app}"))
            .unwrap_or_else(|_| ComponentId::new("app").expect("a valid literal id"))
    }

    fn limits(&self) -> Limits {
        Limits {
            max_frame: self.max_frame,
            handshake_timeout: self.handshake_timeout,
        }
    }
}

/// The newest progress report and when it arrived.
pub type ProgressSeen = Option<(Instant, spool::protocol::AppProgress)>;

/// Serves the manager connection until `shutdown`; returns `Err` only on a refusal.
pub async fn serve(
    control: ControlSettings,
    app: AppId,
    progress: watch::Sender<ProgressSeen>,
    shutdown: CancellationToken,
) -> Result<(), AppError> {
    let mut delay = control.reconnect_min;
    loop {
        let attempt = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            a = session(&control, &app, &progress, &shutdown) => a,
        };
        match attempt {
            Ok(()) => return Ok(()),
            Err(e @ (ProtocolError::Refused { .. } | ProtocolError::VersionMismatch { .. })) => {
                return Err(AppError::Refused {
                    manager: control.manager_addr.clone(),
                    source: e,
                });
            }
            Err(e) => {
                warn!(manager = %control.manager_addr, error = %e, "app: manager connection failed, reconnecting");
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            () = sleep(delay) => {}
        }
        delay = (delay * 2).min(control.reconnect_max);
    }
}

/// One connection: returns `Ok` at shutdown, `Err` when lost.
async fn session(
    control: &ControlSettings,
    app: &AppId,
    progress: &watch::Sender<ProgressSeen>,
    shutdown: &CancellationToken,
) -> Result<(), ProtocolError> {
    let limit = control.handshake_timeout;
    let stream = timeout(limit, TcpStream::connect(control.manager_addr.as_str()))
        .await
        .map_err(|_| ProtocolError::HandshakeTimeout(limit))??;
    stream.set_nodelay(true)?;
    let hello = Hello::new(Role::Application, control.id.clone(), control.token.clone());
    let (conn, welcome) = client_handshake(stream, hello, control.limits()).await?;
    info!(manager = %control.manager_addr, id = %control.id, "app: registered with the manager");
    let (mut reader, writer) = conn.into_split();
    writer
        .send(&Message::Subscribe { app: app.clone() })
        .await?;
    let beat = Duration::from_millis(welcome.heartbeat_interval_ms.max(100));
    let heartbeats = tokio::spawn(heartbeat(writer.clone(), beat));
    let result = loop {
        let msg = tokio::select! {
            () = shutdown.cancelled() => break Ok(()),
            msg = reader.recv() => msg,
        };
        match msg {
            Ok(Some(Message::AppProgress(p))) if &p.app == app => {
                progress.send_replace(Some((Instant::now(), p)));
            }
            Ok(Some(Message::Bye { reason, detail })) => {
                break Err(ProtocolError::Io(std::io::Error::other(format!(
                    "manager said bye ({reason:?}): {detail}"
                ))));
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                break Err(ProtocolError::Io(std::io::ErrorKind::UnexpectedEof.into()));
            }
            Err(e) => break Err(e),
        }
    };
    heartbeats.abort();
    if result.is_ok() {
        let _ = writer
            .close(spool::protocol::ByeReason::ShuttingDown, "application done")
            .await;
    }
    result
}

async fn heartbeat(writer: ConnWriter, every: Duration) {
    loop {
        sleep(every).await;
        let load = Load::default();
        if writer.send(&Message::Heartbeat { load }).await.is_err() {
            return;
        }
    }
}
