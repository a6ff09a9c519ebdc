//! How the admin web server asks the core: one [`WebAsk`] a command, put into the
//! core's event queue (the same queue as the control connections') by an
//! [`AdminAsker`], and answered through the ask's own channel.
//!
//! This module sits below both the engine (which answers asks) and the web server
//! (which makes them), so neither depends on the other. It must never look into a
//! command: it only carries it. O(1) per ask.

use std::time::Duration;

use spool::protocol::{AdminCommand, AdminReply};
use tokio::sync::{mpsc, oneshot};

use super::conn::Event;

/// A command from the admin web server for the core, and where its answer goes.
#[derive(Debug)]
pub(crate) struct WebAsk {
    /// The command (a mutation's token is already checked).
    pub command: AdminCommand,
    /// The core's answer.
    pub reply: oneshot::Sender<AdminReply>,
}

/// The core did not take or answer a command in time (busy or stopping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the manager did not answer in time (busy or stopping)")]
pub(crate) struct Busy;

/// How the admin web server asks the core: each command goes into the core's event
/// queue as one [`WebAsk`] (the same queue as the control connections'), and its
/// answer comes back through the ask's own channel.
#[derive(Debug, Clone)]
pub(crate) struct AdminAsker {
    events: mpsc::Sender<Event>,
}

impl AdminAsker {
    /// Asks through the core's event queue `events`.
    pub(crate) fn new(events: mpsc::Sender<Event>) -> AdminAsker {
        AdminAsker { events }
    }

    /// Hands `command` to the core and returns its answer; [`Busy`] when the queue
    /// does not take it, or the core does not answer, within `patience` each.
    pub(crate) async fn ask(
        &self,
        command: AdminCommand,
        patience: Duration,
    ) -> Result<AdminReply, Busy> {
        let (reply, answer) = oneshot::channel();
        let ask = WebAsk { command, reply };
        match tokio::time::timeout(patience, self.events.send(Event::Web(ask))).await {
            Ok(Ok(())) => {}
            _ => return Err(Busy),
        }
        match tokio::time::timeout(patience, answer).await {
            Ok(Ok(reply)) => Ok(reply),
            _ => Err(Busy),
        }
    }
}
