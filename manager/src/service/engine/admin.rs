//! Operator commands, from the control port (`polycrawl status`, scripts: each
//! `Admin` message gets one `AdminReply`) and from the admin web server (each API
//! request is one command, handed over as a [`WebAsk`] and answered through it). Both
//! go through [`Engine::execute_admin`], so they can never disagree. [`WebAsk`]
//! (`service/ask.rs`) is how the web server reaches it: the web server never
//! depends on the engine, nor the engine on the web server.
//!
//! `Status` and `Blacklist` are always allowed. Everything that changes the crawl
//! (speed, blacklist, checkpoint, shutdown) needs the admin token: when
//! `manager.admin_token` is set, the handshake already checked it for every admin
//! connection and the web server checks it for every mutation; when it is not set,
//! admin connections come in with the control token and are refused every
//! mutation, with a reply that says why (the web server refuses them itself).
//!
//! This module must never take a command from a component that is not an admin
//! connection. Cost: `Status` is one frontier stats snapshot; `Blacklist` copies the
//! entries.

use std::time::Duration;

use spool::protocol::{AdminCommand, AdminReply, Message, Role};
use tokio::time::Instant;

use super::super::ask::WebAsk;
use super::super::conn::ConnId;
use super::super::error::ManagerError;
use super::Engine;
use crate::BlacklistEntry;

impl Engine {
    /// An admin command from `conn`.
    pub(super) fn on_admin(
        &mut self,
        conn: ConnId,
        command: AdminCommand,
    ) -> Result<(), ManagerError> {
        if self.registry.role_of(conn) != Some(Role::Admin) {
            tracing::warn!(
                ?command,
                "admin command from a component that is not an admin connection ignored"
            );
            return Ok(());
        }
        let reply = self.execute_admin(command)?;
        self.send(conn, Message::AdminReply(reply));
        Ok(())
    }

    /// An admin command from the web server (which checked the token).
    pub(super) fn on_web(&mut self, ask: WebAsk) -> Result<(), ManagerError> {
        let reply = self.execute_admin(ask.command)?;
        // The browser may have given up meanwhile: nothing to do then.
        let _ = ask.reply.send(reply);
        Ok(())
    }

    /// Carries out `command` (a shutdown begins here) and returns the answer.
    pub(super) fn execute_admin(
        &mut self,
        command: AdminCommand,
    ) -> Result<AdminReply, ManagerError> {
        let reply = self.admin_reply(&command)?;
        match &reply {
            AdminReply::Failed { detail } => {
                tracing::warn!(?command, detail, "admin command refused");
            }
            AdminReply::Done { detail } => tracing::info!(?command, detail, "admin command done"),
            AdminReply::Checkpointed { path } => {
                tracing::info!(path, "checkpoint written on an admin's request");
            }
            AdminReply::Status(_) | AdminReply::Blacklist { .. } => {}
        }
        if let (AdminCommand::Shutdown { grace_ms }, AdminReply::Done { .. }) = (&command, &reply) {
            self.begin_shutdown(Duration::from_millis(*grace_ms), true);
        }
        Ok(reply)
    }

    fn admin_reply(&mut self, command: &AdminCommand) -> Result<AdminReply, ManagerError> {
        let done = |detail: String| Ok(AdminReply::Done { detail });
        let failed = |detail: String| Ok(AdminReply::Failed { detail });
        let mutation = !matches!(command, AdminCommand::Status | AdminCommand::Blacklist);
        if mutation && !self.admin_writes {
            return failed(
                "no admin token is configured (manager.admin_token): \
                 admin connections may only read the status"
                    .to_owned(),
            );
        }
        match command {
            AdminCommand::Status => Ok(AdminReply::Status(Box::new(self.snapshot(Instant::now())))),
            AdminCommand::Blacklist => {
                let entries = self.frontier.blacklist().entries();
                let entries = entries.iter().map(ToString::to_string).collect();
                Ok(AdminReply::Blacklist { entries })
            }
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
            AdminCommand::Checkpoint => match self.checkpoints.take(&mut self.frontier) {
                Ok(dir) => Ok(AdminReply::Checkpointed {
                    // Absolute, so the answer means the same wherever it is read.
                    path: std::path::absolute(&dir)
                        .unwrap_or(dir)
                        .display()
                        .to_string(),
                }),
                Err(e) => failed(e.to_string()),
            },
            AdminCommand::Shutdown { grace_ms } => done(format!(
                "draining every component within {grace_ms} ms, then shutting down"
            )),
        }
    }
}
