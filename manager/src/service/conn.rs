//! One control connection, from the handshake to its end: a task that reads
//! messages into the core's event queue and writes the core's messages and the
//! manager's heartbeats out.
//!
//! The reader and the writer are two futures of one task, polled together, so a
//! peer that is slow to read never stops us from reading it (and the other way
//! round). The core never waits for a connection: it puts messages into the
//! connection's bounded [`Outbox`] without waiting, and a peer that lets its outbox
//! fill up is dropped. Silence longer than the heartbeat timeout ends the connection
//! with `Bye { TimedOut }`; so does a send that cannot finish within it.
//!
//! Events of one connection reach the core in order: `Joined`, then its messages,
//! then `Left` (always sent, also when the core itself let go of the connection).
//! This module must never interpret a message: it only moves them. O(1) per message.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use spool::protocol::{
    ByeReason, ConnReader, ConnWriter, Hello, Load, Message, Role, ServerConfig, server_handshake,
};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::{MissedTickBehavior, interval, timeout};

use super::ask::WebAsk;

/// A connection's number, unique within one run of the manager.
pub(crate) type ConnId = u64;

/// Messages queued for one connection before it counts as too slow.
const OUTBOX: usize = 4096;

/// What connection tasks (and the admin web server) tell the core.
#[derive(Debug)]
pub(crate) enum Event {
    /// A peer completed the handshake.
    Joined {
        /// The connection.
        conn: ConnId,
        /// Who it is.
        hello: Hello,
        /// Where to put messages for it.
        outbox: Outbox,
    },
    /// A peer sent a message (heartbeats included).
    Received {
        /// The connection.
        conn: ConnId,
        /// The message.
        msg: Message,
    },
    /// The connection ended.
    Left {
        /// The connection.
        conn: ConnId,
        /// Why, for the log.
        why: String,
    },
    /// An admin command from the web server, to be answered through it.
    Web(WebAsk),
}

/// What the core asks a connection's writer to do.
#[derive(Debug)]
enum Out {
    /// Send a message.
    Send(Message),
    /// Send `Bye` and close.
    Close(ByeReason, String),
}

/// What became of a message put in an [`Outbox`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queued {
    /// It goes out after what is already queued.
    Yes,
    /// The peer is too slow: [`OUTBOX`] messages wait for it already.
    Full,
    /// The connection's task has ended (the peer left, or broke the connection):
    /// nothing more goes out, and its [`Event::Left`] follows the messages it
    /// read, which may still wait in the core's queue.
    Closed,
}

/// The core's handle on one connection's writer.
#[derive(Debug, Clone)]
pub(crate) struct Outbox(mpsc::Sender<Out>);

impl Outbox {
    /// Queues `msg`. A connection whose task has ended takes nothing more, but
    /// its `Left` is on its way, after every message it read.
    pub fn send(&self, msg: Message) -> Queued {
        match self.0.try_send(Out::Send(msg)) {
            Ok(()) => Queued::Yes,
            Err(mpsc::error::TrySendError::Full(_)) => Queued::Full,
            Err(mpsc::error::TrySendError::Closed(_)) => Queued::Closed,
        }
    }

    /// Queues a `Bye` after what is already queued; the connection then closes.
    pub fn close(&self, reason: ByeReason, detail: impl Into<String>) {
        // A full or closed outbox closes the connection anyway once dropped.
        let _ = self.0.try_send(Out::Close(reason, detail.into()));
    }
}

/// A test's end of an [`Outbox`]: reads what the engine queued for the connection,
/// as the connection's writer would send it.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct Sent(mpsc::Receiver<Out>);

#[cfg(test)]
impl Sent {
    /// An outbox of the usual size and the test's end of it.
    pub fn pair() -> (Outbox, Sent) {
        let (tx, rx) = mpsc::channel(OUTBOX);
        (Outbox(tx), Sent(rx))
    }

    /// The connection's task ends: nothing more can be queued.
    pub fn close(&mut self) {
        self.0.close();
    }

    /// The messages queued since the last call, in order (a close as its `Bye`).
    pub fn take(&mut self) -> Vec<Message> {
        let mut msgs = Vec::new();
        while let Ok(out) = self.0.try_recv() {
            msgs.push(match out {
                Out::Send(msg) => msg,
                Out::Close(reason, detail) => Message::Bye { reason, detail },
            });
        }
        msgs
    }
}

/// What every connection task needs.
#[derive(Debug)]
pub(crate) struct ConnSettings {
    /// The handshake's settings (tokens, limits, the heartbeat figures sent in
    /// `Welcome`).
    pub server: ServerConfig,
    /// How often the manager sends a heartbeat.
    pub heartbeat_interval: Duration,
    /// Silence after which a peer is dropped.
    pub heartbeat_timeout: Duration,
}

/// Why one half of a connection stopped.
enum End {
    /// Nothing heard within the heartbeat timeout.
    TimedOut,
    /// The core let go of the connection (closed or dropped its outbox).
    Released,
    /// The peer closed, said `Bye`, or the connection broke.
    Gone(String),
}

/// Serves one accepted TCP connection until it ends.
pub(crate) async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    conn: ConnId,
    settings: Arc<ConnSettings>,
    events: mpsc::Sender<Event>,
) {
    let (connection, hello) = match server_handshake(stream, &settings.server).await {
        Ok(accepted) => accepted,
        Err(e) => {
            tracing::warn!(%peer, error = %e, "control connection refused");
            return;
        }
    };
    let (mut reader, writer) = connection.into_split();
    if hello.role == Role::Manager {
        let detail = "a manager cannot register with a manager";
        tracing::warn!(%peer, id = %hello.id, "control connection refused: {detail}");
        let _ = writer.close(ByeReason::ProtocolViolation, detail).await;
        return;
    }
    tracing::debug!(%peer, role = %hello.role, id = %hello.id, "control connection accepted");
    let (tx, mut rx) = mpsc::channel(OUTBOX);
    let joined = Event::Joined {
        conn,
        hello,
        outbox: Outbox(tx),
    };
    if events.send(joined).await.is_err() {
        return;
    }
    let limit = settings.heartbeat_timeout;
    let end = tokio::select! {
        end = read_loop(&mut reader, conn, &events, limit) => end,
        end = write_loop(&writer, &mut rx, settings.heartbeat_interval, limit) => end,
    };
    let why = match end {
        End::TimedOut => {
            let detail = format!("nothing heard for {} ms", limit.as_millis());
            let _ = writer.close(ByeReason::TimedOut, &detail).await;
            detail
        }
        End::Released => "released by the manager".to_owned(),
        End::Gone(why) => why,
    };
    let _ = events.send(Event::Left { conn, why }).await;
}

/// Forwards every message to the core until the peer goes silent or away.
async fn read_loop(
    reader: &mut ConnReader,
    conn: ConnId,
    events: &mpsc::Sender<Event>,
    limit: Duration,
) -> End {
    loop {
        let msg = match timeout(limit, reader.recv()).await {
            Err(_) => return End::TimedOut,
            Ok(Ok(None)) => return End::Gone("connection closed by the peer".to_owned()),
            Ok(Err(e)) => return End::Gone(e.to_string()),
            Ok(Ok(Some(msg))) => msg,
        };
        let bye = match &msg {
            Message::Bye { reason, detail } => Some(format!("peer said bye: {reason}: {detail}")),
            _ => None,
        };
        if events.send(Event::Received { conn, msg }).await.is_err() {
            return End::Released;
        }
        if let Some(why) = bye {
            return End::Gone(why);
        }
    }
}

/// Sends what the core queues, and a heartbeat every `every`.
async fn write_loop(
    writer: &ConnWriter,
    outbox: &mut mpsc::Receiver<Out>,
    every: Duration,
    limit: Duration,
) -> End {
    let mut beat = interval(every);
    beat.set_missed_tick_behavior(MissedTickBehavior::Delay);
    beat.tick().await; // The first tick is immediate: the Welcome just went out.
    loop {
        let msg = tokio::select! {
            out = outbox.recv() => match out {
                None => return End::Released,
                Some(Out::Send(msg)) => msg,
                Some(Out::Close(reason, detail)) => {
                    let _ = writer.close(reason, &detail).await;
                    return End::Released;
                }
            },
            _ = beat.tick() => Message::Heartbeat { load: Load::default() },
        };
        match timeout(limit, writer.send(&msg)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return End::Gone(e.to_string()),
            Err(_) => return End::Gone(format!("a send took over {} ms", limit.as_millis())),
        }
    }
}
