//! Operator commands over the control port (`polycrawl status`, scripts): each
//! `Admin` message gets one `AdminReply`.
//!
//! `Status` is always allowed. Everything that changes the crawl (speed, blacklist,
//! checkpoint, shutdown) needs the admin token: when `manager.admin_token` is set,
//! the handshake already checked it for every admin connection; when it is not set,
//! admin connections come in with the control token and are refused every
//! mutation, with a reply that says why.
//!
//! This module must never take a command from a component that is not an admin
//! connection. Cost: `Status` is one frontier stats snapshot.

use std::time::Duration;

use spool::protocol::{AdminCommand, AdminReply, Message, Role, StatusSnapshot};
use tokio::time::Instant;

use super::conn::ConnId;
use super::engine::Engine;
use super::error::ManagerError;
use crate::{BlacklistEntry, HostState};

impl Engine {
    /// An admin command from `conn`.
    pub(crate) fn on_admin(
        &mut self,
        conn: ConnId,
        command: AdminCommand,
    ) -> Result<(), ManagerError> {
        if self.registry.get(conn).map(|c| c.peer.role) != Some(Role::Admin) {
            tracing::warn!(
                ?command,
                "admin command from a component that is not an admin connection ignored"
            );
            return Ok(());
        }
        let reply = self.admin_reply(&command)?;
        match &reply {
            AdminReply::Failed { detail } => {
                tracing::warn!(?command, detail, "admin command refused")
            }
            AdminReply::Done { detail } => tracing::info!(?command, detail, "admin command done"),
            AdminReply::Status(_) => {}
        }
        self.send(conn, Message::AdminReply(reply));
        if let AdminCommand::Shutdown { grace_ms } = command {
            if self.admin_writes {
                self.begin_shutdown(Duration::from_millis(grace_ms), true);
            }
        }
        Ok(())
    }

    fn admin_reply(&mut self, command: &AdminCommand) -> Result<AdminReply, ManagerError> {
        let done = |detail: String| Ok(AdminReply::Done { detail });
        let failed = |detail: String| Ok(AdminReply::Failed { detail });
        if let AdminCommand::Status = command {
            return Ok(AdminReply::Status(self.snapshot(Instant::now())));
        }
        if !self.admin_writes {
            return failed(
                "no admin token is configured (manager.admin_token): \
                 admin connections may only read the status"
                    .to_owned(),
            );
        }
        match command {
            AdminCommand::Status => Ok(AdminReply::Status(self.snapshot(Instant::now()))),
            AdminCommand::SetSpeed { pages_per_sec } => {
                let rate = f64::from(*pages_per_sec);
                if !(rate.is_finite() && rate > 0.0) {
                    return failed(format!("{pages_per_sec} is not a positive speed"));
                }
                done(self.set_operator_speed(rate, crate::wall_clock_ms()))
            }
            AdminCommand::BlacklistAdd { entry } => match entry.parse::<BlacklistEntry>() {
                Err(e) => failed(e.to_string()),
                Ok(e) => {
                    let added = self.frontier.blacklist_add(e)?;
                    let n = self.frontier.blacklist().len();
                    let what = if added { "added" } else { "already listed" };
                    done(format!("{entry} {what}; the blacklist has {n} entries"))
                }
            },
            AdminCommand::BlacklistRemove { entry } => match entry.parse::<BlacklistEntry>() {
                Err(e) => failed(e.to_string()),
                Ok(e) => {
                    let removed = self.frontier.blacklist_remove(&e)?;
                    let n = self.frontier.blacklist().len();
                    let what = if removed { "removed" } else { "was not listed" };
                    done(format!("{entry} {what}; the blacklist has {n} entries"))
                }
            },
            AdminCommand::Checkpoint => match self.checkpoints.take(&self.frontier) {
                Ok(dir) => done(format!("checkpoint written to {}", dir.display())),
                Err(e) => failed(e.to_string()),
            },
            AdminCommand::Shutdown { grace_ms } => done(format!(
                "draining every component within {grace_ms} ms, then shutting down"
            )),
        }
    }

    /// The crawl's figures for `AdminReply::Status`.
    pub(crate) fn snapshot(&self, now: Instant) -> StatusSnapshot {
        let stats = self.frontier.stats();
        let in_flight_hosts = stats
            .hosts_by_state
            .iter()
            .find(|(s, _)| *s == HostState::InFlight)
            .map_or(0, |(_, n)| *n);
        let waiting = stats.hosts.saturating_sub(stats.ready + in_flight_hosts);
        StatusSnapshot {
            pages_per_sec: self.rate.per_sec(now) as f32,
            target_pages_per_sec: self.frontier.target_rate() as f32,
            pages_total: stats.apps.iter().map(|a| a.pages_total).sum(),
            bytes_total: self.metrics.wire_bytes,
            queued_urls: stats.urls_queued,
            hosts_ready: stats.ready as u64,
            hosts_waiting: waiting as u64,
            request_files_pending: stats.request_files_pending,
            components: self.registry.statuses(now),
            speed: self.speed.status(),
        }
    }
}
