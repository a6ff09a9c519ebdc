//! The manager connection: register as [`Role::Application`], `Subscribe { app }`,
//! send heartbeats, and keep the newest [`AppProgress`] in a watch channel for the
//! crawl loop. Reconnects with exponential back-off (the manager may restart) until
//! shutdown; a refusal (bad token, version) is final.
//!
//! The crawl loop talks to the manager through [`Outbound`]: `Published` hints for
//! the request files it publishes (the manager loads them at once instead of at its
//! next folder scan) and `SyncProgress` when it runs out of work. Every
//! `AppProgress` and every `Published` hint from the manager wakes the crawl loop
//! (a [`Waker`] of its page-folder discovery). While the connection is down, hints
//! are dropped (the folders are still scanned) and only the newest sync is kept,
//! to be sent after the next `Subscribe`.
//!
//! [`ControlSettings`] and the connect/back-off helpers are the ones every component
//! shares (`spool::protocol::client`). The token is never logged.

use std::time::{Duration, Instant};

use spool::discover::Waker;
use spool::protocol::client::{Backoff, connect, is_final};
use spool::protocol::{ConnWriter, Load, Message, ProtocolError, Role};
use spool::{AppId, ComponentId};
use tokio::sync::{mpsc, watch};
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

/// Messages from the crawl loop to the manager (`Published` hints, `SyncProgress`).
pub type Outbound = mpsc::UnboundedReceiver<Message>;

/// What the connection hands to the crawl loop.
#[derive(Debug, Clone)]
pub struct ToCrawl {
    /// The newest progress report.
    pub progress: watch::Sender<ProgressSeen>,
    /// Wakes the crawl loop.
    pub waker: Waker,
}

/// Serves the manager connection until `shutdown`; returns `Err` only on a refusal.
pub async fn serve(
    control: ControlSettings,
    app: AppId,
    to_crawl: ToCrawl,
    mut outbound: Outbound,
    shutdown: CancellationToken,
) -> Result<(), AppError> {
    let mut backoff = Backoff::new(control.reconnect_min, control.reconnect_max);
    let mut resync: Option<Message> = None;
    loop {
        let attempt = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            a = session(&control, &app, &to_crawl, &mut outbound, resync.take(), &shutdown) => a,
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
        // Hints are stale by now; the newest sync still wants an answer.
        while let Ok(msg) = outbound.try_recv() {
            if matches!(msg, Message::SyncProgress { .. }) {
                resync = Some(msg);
            }
        }
    }
}

/// One connection: returns `Ok` at shutdown, `Err` when lost.
async fn session(
    control: &ControlSettings,
    app: &AppId,
    to_crawl: &ToCrawl,
    outbound: &mut Outbound,
    resync: Option<Message>,
    shutdown: &CancellationToken,
) -> Result<(), ProtocolError> {
    let (conn, welcome) = connect(control, Role::Application).await?;
    info!(manager = %control.manager_addr, id = %control.id, "app: registered with the manager");
    let (mut reader, writer) = conn.into_split();
    writer
        .send(&Message::Subscribe { app: app.clone() })
        .await?;
    if let Some(msg) = resync {
        writer.send(&msg).await?;
    }
    let beat = Duration::from_millis(welcome.heartbeat_interval_ms.max(100));
    let heartbeats = tokio::spawn(heartbeat(writer.clone(), beat));
    let result = loop {
        let msg = tokio::select! {
            () = shutdown.cancelled() => break Ok(()),
            msg = reader.recv() => msg,
            out = outbound.recv() => match out {
                Some(out) => {
                    if let Err(e) = writer.send(&out).await {
                        break Err(e);
                    }
                    continue;
                }
                // The crawl loop is gone: nothing more to say.
                None => break Ok(()),
            },
        };
        match msg {
            Ok(Some(Message::AppProgress(p))) if &p.app == app => {
                to_crawl.progress.send_replace(Some((Instant::now(), p)));
                to_crawl.waker.wake();
            }
            Ok(Some(Message::Published { .. })) => to_crawl.waker.wake(),
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
