//! The manager connection: the application's role for the shared session driver
//! (`spool::protocol::client::run`, which registers as [`Role::Application`], sends
//! heartbeats, watches the manager's silence and reconnects with exponential
//! back-off until shutdown; a refusal or `Bye { Replaced }` is final). The role
//! sends `Subscribe { app }` on each connection and keeps the newest
//! [`AppProgress`](spool::protocol::AppProgress) in a watch channel for the crawl loop.
//!
//! The crawl loop talks to the manager through [`Outbound`]: `Published` hints for
//! the request files it publishes (the manager loads them at once instead of at its
//! next folder scan) and `SyncProgress` when it runs out of work. Every
//! `AppProgress` and every `Published` hint from the manager wakes the crawl loop
//! (a [`Waker`] of its page-folder discovery). While the connection is down, hints
//! are dropped (the folders are still scanned) and only the newest sync is kept,
//! to be sent after the next `Subscribe`.
//!
//! [`ControlSettings`] and the driver are the ones every component shares
//! (`spool::protocol::client`). The token is never logged.
//!
//! [`AppProgress`]: spool::protocol::AppProgress

use std::convert::Infallible;
use std::time::{Duration, Instant};

use spool::discover::Waker;
use spool::protocol::client::{self, ClientRole, Link, Step, Stop};
use spool::protocol::{ComponentState, Message, ProtocolError, Role, Welcome};
use spool::{AppId, ComponentId};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::error::AppError;

pub use spool::protocol::client::ControlSettings;

/// How long [`drive`] lets the session say goodbye once the crawl loop returned.
const LEAVE_WAIT: Duration = Duration::from_secs(2);

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

/// Runs an application's crawl loop (`run`, on a blocking thread) beside its
/// control session ([`serve`]) until either ends: the loop's end is the result; if
/// the session ends first (the manager refused the application), `stop` tells the
/// loop to stop and the session's error wins. The session is stopped at the end,
/// after its `Bye` to the manager (at most 2 s).
pub async fn drive<T: Send + 'static>(
    control: ControlSettings,
    app: AppId,
    to_crawl: ToCrawl,
    outbound: Outbound,
    stop: &CancellationToken,
    run: impl FnOnce() -> Result<T, AppError> + Send + 'static,
) -> Result<T, AppError> {
    let ctl_stop = CancellationToken::new();
    let mut ctl = tokio::spawn(serve(control, app, to_crawl, outbound, ctl_stop.clone()));
    let mut job = tokio::task::spawn_blocking(run);
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
    // The session leaves at once (nothing runs on it once the loop is gone), with
    // a `Bye` to the manager; it is cut only if that does not come in time (a link
    // that takes no more bytes).
    if !ctl.is_finished() && tokio::time::timeout(LEAVE_WAIT, &mut ctl).await.is_err() {
        ctl.abort();
    }
    result
}

/// Serves the manager connection until `shutdown` (or until the crawl loop drops
/// its [`Outbound`] sender); returns `Err` only on a refusal or when another
/// application took our id.
pub async fn serve(
    control: ControlSettings,
    app: AppId,
    to_crawl: ToCrawl,
    outbound: Outbound,
    shutdown: CancellationToken,
) -> Result<(), AppError> {
    let mut role = AppRole {
        app,
        to_crawl,
        outbound,
        state: ComponentState::default(),
    };
    match client::run(&control, &mut role, &shutdown).await {
        Ok(_) => Ok(()),
        Err(Stop::Refused(source)) => Err(AppError::Refused {
            manager: control.manager_addr.clone(),
            source,
        }),
        Err(Stop::Replaced) => Err(AppError::Replaced {
            id: control.id.to_string(),
        }),
        Err(Stop::Role(never)) => match never {},
    }
}

/// What an application does on a manager connection.
struct AppRole {
    app: AppId,
    to_crawl: ToCrawl,
    outbound: Outbound,
    /// The crawl loop's last `Status` (paused on a full disk or not), told again
    /// after every reconnect.
    state: ComponentState,
}

impl ClientRole for AppRole {
    /// A message from the crawl loop, `None` once the crawl loop is gone.
    type Work = Option<Message>;
    type Error = Infallible;
    const ROLE: Role = Role::Application;
    const NAME: &'static str = "app";

    /// `Subscribe { app }`, then the newest `SyncProgress` the crawl loop asked for
    /// while the connection was down (hints are stale by then and dropped).
    async fn on_connected(
        &mut self,
        link: &Link,
        _welcome: &Welcome,
        session: u64,
    ) -> Result<(), ProtocolError> {
        let mut resync = None;
        if session > 1 {
            while let Ok(msg) = self.outbound.try_recv() {
                match msg {
                    Message::SyncProgress { .. } => resync = Some(msg),
                    Message::Status(state) => self.state = *state,
                    _ => {}
                }
            }
        }
        link.send(&Message::Subscribe {
            app: self.app.clone(),
        })
        .await?;
        if self.state != ComponentState::default() {
            link.send(&Message::Status(Box::new(self.state.clone())))
                .await?;
        }
        if let Some(msg) = resync {
            link.send(&msg).await?;
        }
        Ok(())
    }

    async fn next_work(&mut self) -> Option<Message> {
        self.outbound.recv().await
    }

    async fn on_work(&mut self, link: &Link, work: Option<Message>) -> Step<Infallible> {
        let Some(msg) = work else {
            // The crawl loop is gone: nothing more to say.
            return Step::Leave("application done".into());
        };
        if let Message::Status(state) = &msg {
            self.state = (**state).clone();
        }
        match link.send(&msg).await {
            Ok(()) => Step::Continue,
            Err(e) => Step::Lost(format!("cannot send {}: {e}", msg.kind())),
        }
    }

    async fn on_message(&mut self, _link: &Link, msg: Message) -> Step<Infallible> {
        match msg {
            Message::AppProgress(p) if p.app == self.app => {
                self.to_crawl
                    .progress
                    .send_replace(Some((Instant::now(), p)));
                self.to_crawl.waker.wake();
            }
            Message::Published { .. } => self.to_crawl.waker.wake(),
            _ => {}
        }
        Step::Continue
    }

    /// Nothing runs on the connection: leave at once.
    async fn wind_down(&mut self, _link: &Link) -> Step<Infallible> {
        Step::Leave("application done".into())
    }

    async fn grace_over(&mut self, _link: &Link) -> Step<Infallible> {
        Step::Leave("application done".into())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc as std_mpsc;

    use spool::discover::Discovery;
    use spool::layout::SpoolDir;
    use spool::protocol::{ByeReason, Token};
    use test_support::manager::{FakeManager, next_non_heartbeat};

    use super::*;

    const TOKEN: &str = "test-token";

    /// The crawl loop returns; the manager still hears the application leave
    /// (before, the session was aborted at once and the `Bye` was sometimes
    /// never sent).
    #[tokio::test]
    async fn the_manager_hears_goodbye_when_the_crawl_loop_returns() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SpoolDir::open(tmp.path().join("pages")).unwrap();
        let discovery = Discovery::new(&dir, Duration::from_secs(1), false);
        let manager = FakeManager::start(FakeManager::config(TOKEN)).await;
        let control = ControlSettings::new(
            manager.addr().to_string(),
            Token::new(TOKEN).unwrap(),
            ComponentId::new("app-bfs").unwrap(),
        );
        let app = AppId::new("bfs").unwrap();
        let to_crawl = ToCrawl {
            progress: watch::channel(None).0,
            waker: discovery.waker(),
        };
        let (out_tx, out_rx) = mpsc::unbounded_channel::<Message>();
        let (go, wait) = std_mpsc::channel::<()>();
        let driven = tokio::spawn(async move {
            let stop = CancellationToken::new();
            drive(control, app, to_crawl, out_rx, &stop, move || {
                // The loop ends once the manager has its subscription. Its
                // sender outlives the drive, so that only the stop after the
                // loop's end can make the session leave.
                wait.recv().unwrap();
                Ok(out_tx)
            })
            .await
        });
        let (mut conn, _hello) = manager.accept().await;
        let (first, _) = next_non_heartbeat(&mut conn).await;
        assert!(matches!(first, Message::Subscribe { .. }), "{first:?}");
        go.send(()).unwrap();
        let (last, _) = next_non_heartbeat(&mut conn).await;
        assert!(
            matches!(
                last,
                Message::Bye {
                    reason: ByeReason::ShuttingDown,
                    ..
                }
            ),
            "{last:?}"
        );
        let sender = driven.await.unwrap().unwrap();
        assert!(sender.is_closed(), "the session is over");
    }
}
