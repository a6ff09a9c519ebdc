//! The manager connection: register as [`Role::Application`], `Subscribe { app }`,
//! send heartbeats, and keep the newest [`AppProgress`] in a watch channel for the
//! crawl loop. Reconnects with exponential back-off (the manager may restart) until
//! shutdown; a refusal (bad token, version) is final.
//!
//! [`ControlSettings`] and the connect/back-off helpers are the ones every component
//! shares (`spool::protocol::client`). The token is never logged.

use std::time::{Duration, Instant};

use spool::protocol::client::{Backoff, connect, is_final};
use spool::protocol::{ConnWriter, Load, Message, ProtocolError, Role};
use spool::{AppId, ComponentId};
use tokio::sync::watch;
use tokio::time::sleep;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::error::AppError;

pub use spool::protocol::client::ControlSettings;

/// `app-<app>`: stable across restarts, as claims need (the consumer id of
/// `pages/<app>/` and `outcomes/<app>/`, the producer id in `requests/<app>/`).
pub fn default_id(app: &AppId) -> ComponentId {
    ComponentId::new(format!("app-{app}"))
        .unwrap_or_else(|_| ComponentId::new("app").expect("a valid literal id"))
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
    let mut backoff = Backoff::new(control.reconnect_min, control.reconnect_max);
    loop {
        let attempt = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            a = session(&control, &app, &progress, &shutdown) => a,
        };
        match attempt {
            Ok(()) => return Ok(()),
            Err(e) if is_final(&e) => {
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
            () = sleep(backoff.next_delay()) => {}
        }
    }
}

/// One connection: returns `Ok` at shutdown, `Err` when lost.
async fn session(
    control: &ControlSettings,
    app: &AppId,
    progress: &watch::Sender<ProgressSeen>,
    shutdown: &CancellationToken,
) -> Result<(), ProtocolError> {
    let (conn, welcome) = connect(control, Role::Application).await?;
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
