//! Applications: `Subscribe { app }` makes a connection receive that application's
//! [`AppProgress`] (at once, then every `progress_interval_ms`) and the
//! `Published` hints of its spool areas; `Published` hints from anyone are relayed
//! to the connections that consume the area, and a hint about `requests/` makes
//! the frontier list its request folders at once.
//!
//! Progress counts a page reported but not yet committed as in flight: until its
//! batch is published the page may still be fetched again, so an application that
//! waits for `is_idle()` never stops one batch too early.
//!
//! This module must never read the spool: hints are only wake-ups. Cost per round:
//! O(application connections x subscriptions) frontier stats snapshots.

use spool::AppId;
use spool::protocol::{AppProgress, Message, SpoolArea};

use super::conn::ConnId;
use super::engine::Engine;
use super::registry::Kind;

impl Engine {
    /// `conn` subscribes to `app`.
    pub(crate) fn on_subscribe(&mut self, conn: ConnId, app: AppId) {
        match self.registry.get_mut(conn).map(|c| &mut c.kind) {
            Some(Kind::Application(apps)) => {
                tracing::info!(%app, "application subscribed");
                apps.insert(app);
                self.send_progress_to(conn);
            }
            _ => {
                tracing::warn!(%app, "Subscribe from a component that is not an application ignored")
            }
        }
    }

    /// The progress of `app` as applications see it.
    pub(crate) fn progress_of(&self, app: &AppId) -> AppProgress {
        let mut progress = self.frontier.app_progress(app);
        progress.in_flight += self.uncommitted_of(app);
        progress
    }

    /// Sends every subscription of `conn` its progress.
    pub(crate) fn send_progress_to(&mut self, conn: ConnId) {
        let apps: Vec<AppId> = match self.registry.get(conn).map(|c| &c.kind) {
            Some(Kind::Application(apps)) => apps.iter().cloned().collect(),
            _ => return,
        };
        for app in apps {
            let progress = self.progress_of(&app);
            self.send(conn, Message::AppProgress(progress));
        }
    }

    /// Sends every application connection its progress.
    pub(crate) fn send_progress(&mut self) {
        let conns: Vec<ConnId> = self
            .registry
            .iter()
            .filter(|(_, c)| matches!(&c.kind, Kind::Application(apps) if !apps.is_empty()))
            .map(|(conn, _)| conn)
            .collect();
        for conn in conns {
            self.send_progress_to(conn);
        }
    }

    /// A peer published a file.
    pub(crate) fn on_published(&mut self, from: ConnId, area: SpoolArea, name: &str) {
        if let SpoolArea::Requests(_) = area {
            self.frontier.rescan_requests();
        }
        self.relay(Some(from), &area, name);
    }

    /// Relays a `Published` hint to the application connections that consume
    /// `area` (never back to `from`).
    pub(crate) fn relay(&mut self, from: Option<ConnId>, area: &SpoolArea, name: &str) {
        let app = match area {
            SpoolArea::Pages(app) | SpoolArea::Outcomes(app) | SpoolArea::Exchange(app) => app,
            SpoolArea::Requests(_) | SpoolArea::Robots => return,
        };
        let conns: Vec<ConnId> = self
            .registry
            .iter()
            .filter(|(conn, c)| {
                Some(*conn) != from
                    && matches!(&c.kind, Kind::Application(apps) if apps.contains(app))
            })
            .map(|(conn, _)| conn)
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
