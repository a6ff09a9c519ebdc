//! Applications: `Subscribe { app }` makes a connection receive that application's
//! [`AppProgress`] (at once, then every `progress_interval_ms`) and the
//! `Published` hints of its spool areas; `Published` hints from anyone are relayed
//! to the connections that consume the area, and a hint about `requests/` makes
//! the frontier list its request folders at once.
//!
//! Eager when idle (DESIGN.md section 2), the manager's half:
//! - `SyncProgress { app, seq }` lists the request folders now and answers with an
//!   `AppProgress` whose `synced` is `seq`: a report that counts every request file
//!   the application published before it asked. That is how an application knows,
//!   without a timer, that the crawl is over.
//! - Each step, an application that has run dry (nothing queued, nothing in flight,
//!   no request file waiting, no page uncommitted) gets its pending outcomes
//!   published at once and its progress pushed once, instead of waiting for the
//!   outcome age and the next progress round.
//!
//! Progress counts a page reported but not yet committed as in flight: until its
//! batch is published the page may still be fetched again, so an application that
//! waits for `is_idle()` never stops one batch too early.
//!
//! This module must never read the spool itself: hints are only wake-ups (the
//! frontier lists the folders). Cost per round: O(application connections x
//! subscriptions) progress reports; the dry check is O(1) for an application with
//! URLs queued.

use std::collections::BTreeSet;

use spool::AppId;
use spool::protocol::{AppProgress, Message, SpoolArea};
use tokio::time::Instant;

use super::super::conn::ConnId;
use super::super::error::ManagerError;
use super::Engine;

/// Application progress rounds. See the [module docs](self).
#[derive(Debug)]
pub(super) struct Progress {
    /// Next `AppProgress` round.
    pub next: Instant,
    /// Applications that ran dry and were told so.
    pub idle: BTreeSet<AppId>,
}

impl Engine {
    /// `conn` subscribes to `app`.
    pub(super) fn on_subscribe(&mut self, conn: ConnId, app: AppId) {
        if self.registry.subscribe(conn, app.clone()) {
            tracing::info!(%app, "application subscribed");
            self.send_progress_to(conn);
        } else {
            tracing::warn!(%app, "Subscribe from a component that is not an application ignored");
        }
    }

    /// `conn` asks for a progress report that counts every request file it
    /// published before asking.
    pub(super) fn on_sync(
        &mut self,
        conn: ConnId,
        app: AppId,
        seq: u64,
        now_ms: u64,
    ) -> Result<(), ManagerError> {
        if !self.registry.synced(conn, &app, seq) {
            tracing::warn!(%app, "SyncProgress for an application this connection did not subscribe to ignored");
            return Ok(());
        }
        self.frontier.list_requests_now(now_ms)?;
        // A sync is a moment to look again: the app may be dry already.
        self.progress.idle.remove(&app);
        self.apps_step()?;
        let mut progress = self.progress_of(&app);
        progress.synced = seq;
        self.send(conn, Message::AppProgress(progress));
        Ok(())
    }

    /// The progress of `app` as applications see it.
    pub(super) fn progress_of(&self, app: &AppId) -> AppProgress {
        let mut progress = self.frontier.app_progress(app);
        progress.in_flight += self.frontier.awaiting_commit_of(app);
        progress
    }

    /// Sends every subscription of `conn` its progress.
    pub(super) fn send_progress_to(&mut self, conn: ConnId) {
        for (app, synced) in self.registry.subscriptions(conn) {
            let mut progress = self.progress_of(&app);
            progress.synced = synced;
            self.send(conn, Message::AppProgress(progress));
        }
    }

    /// Sends every application connection its progress.
    pub(super) fn send_progress(&mut self) {
        for conn in self.registry.app_conns(None) {
            self.send_progress_to(conn);
        }
    }

    /// Eager when idle: an application that ran dry gets its pending outcomes
    /// published and its progress pushed, once per time it runs dry.
    pub(super) fn apps_step(&mut self) -> Result<(), ManagerError> {
        let subscribed = self.registry.subscribed_apps();
        self.progress.idle.retain(|app| subscribed.contains(app));
        for app in subscribed {
            let dry =
                self.frontier.app_drained(&app) && self.frontier.awaiting_commit_of(&app) == 0;
            if !dry {
                self.progress.idle.remove(&app);
                continue;
            }
            if self.progress.idle.contains(&app) {
                continue;
            }
            self.frontier.flush_outcomes_of(&app)?;
            self.progress.idle.insert(app.clone());
            for conn in self.registry.app_conns(Some(&app)) {
                self.send_progress_to(conn);
            }
        }
        Ok(())
    }

    /// A peer published a file.
    pub(super) fn on_published(&mut self, from: ConnId, area: SpoolArea, name: &str) {
        if let SpoolArea::Requests(_) = area {
            self.frontier.rescan_requests();
        }
        self.relay(Some(from), &area, name);
    }

    /// Relays a `Published` hint to the application connections that consume
    /// `area` (never back to `from`).
    pub(super) fn relay(&mut self, from: Option<ConnId>, area: &SpoolArea, name: &str) {
        let app = match area {
            SpoolArea::Pages(app) | SpoolArea::Outcomes(app) | SpoolArea::Exchange(app) => app,
            SpoolArea::Requests(_) | SpoolArea::Robots => return,
        };
        let conns: Vec<ConnId> = self
            .registry
            .app_conns(Some(app))
            .into_iter()
            .filter(|conn| Some(*conn) != from)
            .collect();
        for conn in conns {
            let msg = Message::Published {
                area: area.clone(),
                name: name.to_owned(),
            };
            self.send(conn, msg);
        }
    }
}
