//! The client session driver every component of the control protocol runs
//! (downloader, resolver, application): [`run`] owns the connection's life cycle
//! and calls into the component's role through [`ClientRole`].
//!
//! What the driver does, the same for every role:
//! - **connect**: TCP connect plus handshake, each bounded by
//!   `control.handshake_timeout`; a refusal (wrong token, other version) ends
//!   [`run`] with [`Stop::Refused`], anything else is retried;
//! - **reconnect**: after a failed attempt or a lost connection, pause
//!   [`Backoff::next_delay`] (200 ms doubling to 10 s, with jitter, by default) and
//!   try again; a session that lasted `reconnect_max` resets the back-off. One WARN
//!   per failed attempt or lost connection;
//! - **heartbeat**: a `Heartbeat` with the role's [`Load`] at once and then every
//!   `heartbeat_interval_ms` of the `Welcome` (at least [`MIN_HEARTBEAT`]);
//! - **silence**: nothing heard from the manager for its `heartbeat_timeout_ms`
//!   (at least two heartbeats) while reading: `Bye { TimedOut }`, connection lost.
//!   While the role does not want input ([`ClientRole::reading`], back-pressure)
//!   the connection is not read and silence does not count;
//! - **messages**: `Heartbeat` is taken as a sign of life, `Drain { grace_ms }`
//!   starts the drain, `Bye { Replaced }` ends [`run`] with [`Stop::Replaced`], any
//!   other `Bye` or a closed or broken connection means lost; everything else goes
//!   to [`ClientRole::on_message`];
//! - **drain**: `Drain { grace_ms }` or the shutdown token (with
//!   `control.shutdown_grace`) calls [`ClientRole::begin_drain`]; from then on
//!   [`ClientRole::wind_down`] is asked each turn whether the role is done, and
//!   once, at the end of the grace, [`ClientRole::grace_over`]. When the role says
//!   [`Step::Leave`], the driver sends `Bye { Drained }` (or `ShuttingDown`) and
//!   [`run`] returns. A connection lost while draining also ends [`run`];
//! - **end of a connection** other than a clean leave: [`ClientRole::on_disconnected`]
//!   lets the role drop whatever belonged to it.
//!
//! Every send is bounded by the heartbeat timeout ([`Link::send`]). This module
//! must never block, print the token, or retry without a pause. O(1) per message
//! plus what the role does.

use std::future::Future;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior, interval, sleep, sleep_until, timeout};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::client::{Backoff, ControlSettings, connect, is_final};
use super::{ByeReason, ConnWriter, Load, Message, ProtocolError, Role, Welcome};

/// Shortest heartbeat period used, whatever the `Welcome` says.
pub const MIN_HEARTBEAT: Duration = Duration::from_millis(10);
/// Longest period or grace taken from the manager (a day): larger values are cut
/// so that no deadline arithmetic can overflow.
pub const MAX_PERIOD: Duration = Duration::from_secs(86_400);

/// What a role callback asks the driver to do next.
#[derive(Debug)]
pub enum Step<E> {
    /// Keep serving the connection.
    Continue,
    /// The connection is unusable (a send failed): reconnect, or end if draining.
    Lost(String),
    /// The role has nothing more to do on this connection (drained, or its work
    /// source is gone): say `Bye` with this detail and end [`run`].
    Leave(String),
    /// The manager sent a message this role does not take: `Bye
    /// { ProtocolViolation }`, and the connection counts as lost. Carries the
    /// message's kind ([`Message::kind`]).
    Unexpected(&'static str),
    /// The role cannot go on (a local failure): end [`run`] with [`Stop::Role`].
    Fail(E),
}

/// How [`run`] ended cleanly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Drained on the manager's request.
    Drained,
    /// Stopped by the shutdown token (or the role left on its own).
    ShutDown,
}

/// Why [`run`] stopped without being asked to: reconnecting cannot help.
#[derive(Debug)]
pub enum Stop<E> {
    /// The manager refused the handshake (token, version).
    Refused(ProtocolError),
    /// Another component registered with our id.
    Replaced,
    /// The role failed ([`Step::Fail`]).
    Role(E),
}

/// The sending side of the current connection, for the role: every send is bounded
/// by the manager's heartbeat timeout.
#[derive(Debug, Clone)]
pub struct Link {
    writer: ConnWriter,
    limit: Duration,
}

impl Link {
    /// Sends one message, giving up after the heartbeat timeout. Borrows nothing
    /// of the link, so the future is `Send` whatever holds the link.
    pub fn send<'m>(
        &self,
        msg: &'m Message,
    ) -> impl Future<Output = Result<(), ProtocolError>> + Send + 'm {
        let (writer, limit) = (self.writer.clone(), self.limit);
        async move {
            match timeout(limit, writer.send(msg)).await {
                Ok(sent) => sent,
                Err(_) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into()),
            }
        }
    }

    /// Sends a final `Bye` and closes the sending direction (see [`ConnWriter::close`]).
    pub async fn close(&self, reason: ByeReason, detail: &str) -> Result<(), ProtocolError> {
        self.writer.close(reason, detail).await
    }
}

/// One role of the control protocol, as the driver sees it. Every future must be
/// cancel-safe where the docs say so, and none may block.
pub trait ClientRole: Send {
    /// What the role's own work source ([`ClientRole::next_work`]) yields.
    type Work: Send;
    /// A failure that stops the role ([`Step::Fail`]).
    type Error: Send;
    /// The role registered in the `Hello`.
    const ROLE: Role;
    /// The name that starts the log lines ("downloader").
    const NAME: &'static str;

    /// A connection is registered (`session` counts them from 1): reset the
    /// per-connection state and send what opens the session. `Err` counts as a
    /// lost connection.
    fn on_connected(
        &mut self,
        link: &Link,
        welcome: &Welcome,
        session: u64,
    ) -> impl Future<Output = Result<(), ProtocolError>> + Send;

    /// Whether the connection may be read now (`false`: back-pressure).
    fn reading(&self) -> bool {
        true
    }

    /// How much work is in flight, for the log lines (none by default).
    fn in_flight(&self) -> usize {
        0
    }

    /// The load figures for the next heartbeat (zeros by default).
    fn load(&mut self) -> Load {
        Load::default()
    }

    /// The next piece of the role's own work (a finished task, an event, an
    /// outbound message); pending while there is none. Must be cancel-safe.
    fn next_work(&mut self) -> impl Future<Output = Self::Work> + Send;

    /// Handles what [`ClientRole::next_work`] yielded.
    fn on_work(
        &mut self,
        link: &Link,
        work: Self::Work,
    ) -> impl Future<Output = Step<Self::Error>> + Send;

    /// Handles a message from the manager other than `Heartbeat`, `Drain` and `Bye`.
    fn on_message(
        &mut self,
        link: &Link,
        msg: Message,
    ) -> impl Future<Output = Step<Self::Error>> + Send;

    /// A drain starts (or is asked again): take no new work (nothing to do by
    /// default).
    fn begin_drain(&mut self, link: &Link) -> impl Future<Output = Step<Self::Error>> + Send {
        let _ = link;
        async { Step::Continue }
    }

    /// Called each turn while draining: [`Step::Leave`] once everything is done.
    fn wind_down(&mut self, link: &Link) -> impl Future<Output = Step<Self::Error>> + Send;

    /// The grace is over: stop what still runs (once per drain).
    fn grace_over(&mut self, link: &Link) -> impl Future<Output = Step<Self::Error>> + Send;

    /// The connection ended other than by [`Step::Leave`]: drop what belonged to it
    /// (nothing by default).
    fn on_disconnected(&mut self) {}
}

/// Registers and serves connections as `role`, reconnecting with back-off, until
/// the shutdown token fires, the manager drains us, the role leaves, or retrying
/// cannot help.
pub async fn run<R: ClientRole>(
    control: &ControlSettings,
    role: &mut R,
    shutdown: &CancellationToken,
) -> Result<Outcome, Stop<R::Error>> {
    let mut backoff = Backoff::new(control.reconnect_min, control.reconnect_max);
    let mut session = 0;
    loop {
        let attempt = tokio::select! {
            () = shutdown.cancelled() => return Ok(Outcome::ShutDown),
            attempt = connect(control, R::ROLE) => attempt,
        };
        match attempt {
            Ok((conn, welcome)) => {
                session += 1;
                info!(manager = %control.manager_addr, id = %control.id, session, "{}: registered with the manager", R::NAME);
                let started = Instant::now();
                let served = Served {
                    control,
                    role: &mut *role,
                    shutdown,
                };
                match served.serve(conn, &welcome, session).await {
                    Ended::Done(outcome) => return Ok(outcome),
                    Ended::Stopped(stop) => return Err(stop),
                    Ended::Lost(why) => {
                        warn!(manager = %control.manager_addr, reason = %why, "{}: lost the manager connection, reconnecting", R::NAME);
                    }
                }
                if started.elapsed() >= control.reconnect_max {
                    backoff.reset();
                }
            }
            Err(e) if is_final(&e) => return Err(Stop::Refused(e)),
            Err(e) => {
                warn!(manager = %control.manager_addr, error = %e, "{}: cannot register with the manager, retrying", R::NAME);
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return Ok(Outcome::ShutDown),
            () = sleep(backoff.next_delay()) => {}
        }
    }
}

/// How one connection ended.
enum Ended<E> {
    Done(Outcome),
    Stopped(Stop<E>),
    Lost(String),
}

/// Why the session is winding down, and until when work may still run.
struct Ending {
    deadline: Instant,
    reason: ByeReason,
    /// `grace_over` was called.
    spent: bool,
}

/// One connection being served.
struct Served<'a, R> {
    control: &'a ControlSettings,
    role: &'a mut R,
    shutdown: &'a CancellationToken,
}

impl<R: ClientRole> Served<'_, R> {
    async fn serve(
        self,
        conn: super::Connection,
        welcome: &Welcome,
        session: u64,
    ) -> Ended<R::Error> {
        let (mut reader, writer) = conn.into_split();
        let heartbeat = millis(welcome.heartbeat_interval_ms).max(MIN_HEARTBEAT);
        let silence = millis(welcome.heartbeat_timeout_ms).max(heartbeat * 2);
        let link = Link {
            writer,
            limit: silence,
        };
        let role = self.role;
        if let Err(e) = role.on_connected(&link, welcome, session).await {
            role.on_disconnected();
            return Ended::Lost(format!("cannot open the session: {e}"));
        }
        let mut ticker = interval(heartbeat);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut last_heard = Instant::now();
        let mut ending: Option<Ending> = None;
        loop {
            let step = if ending.is_some() {
                role.wind_down(&link).await
            } else {
                Step::Continue
            };
            if let Some(end) = settle(role, &link, &ending, step).await {
                return end;
            }
            let reading = role.reading();
            if !reading {
                // Not reading is our choice, not the manager's silence.
                last_heard = Instant::now();
            }
            let grace_end = ending.as_ref().filter(|e| !e.spent).map(|e| e.deadline);
            let step = tokio::select! {
                () = self.shutdown.cancelled(), if ending.is_none() => {
                    info!(work = role.in_flight(), "{}: stopping, finishing in-flight work", R::NAME);
                    let grace = self.control.shutdown_grace.min(MAX_PERIOD);
                    ending = Some(Ending { deadline: Instant::now() + grace, reason: ByeReason::ShuttingDown, spent: false });
                    role.begin_drain(&link).await
                }
                () = sleep_until(grace_end.unwrap_or_else(far)), if grace_end.is_some() => {
                    warn!(work = role.in_flight(), "{}: grace period over, stopping in-flight work", R::NAME);
                    if let Some(e) = ending.as_mut() {
                        e.spent = true;
                    }
                    role.grace_over(&link).await
                }
                work = role.next_work() => role.on_work(&link, work).await,
                _ = ticker.tick() => {
                    let msg = Message::Heartbeat { load: role.load() };
                    match link.send(&msg).await {
                        Ok(()) => Step::Continue,
                        Err(e) => Step::Lost(format!("cannot send a heartbeat: {e}")),
                    }
                }
                () = sleep_until(last_heard + silence), if reading => {
                    let detail = format!("nothing from the manager for {} ms", silence.as_millis());
                    let _ = link.close(ByeReason::TimedOut, &detail).await;
                    Step::Lost(detail)
                }
                received = reader.recv(), if reading => {
                    last_heard = Instant::now();
                    match received {
                        Ok(Some(Message::Heartbeat { .. })) => Step::Continue,
                        Ok(Some(Message::Drain { grace_ms })) => {
                            info!(grace_ms, work = role.in_flight(), "{}: draining", R::NAME);
                            let deadline = Instant::now() + millis(grace_ms);
                            match ending.as_mut() {
                                Some(e) => {
                                    e.deadline = e.deadline.min(deadline);
                                    e.reason = ByeReason::Drained;
                                }
                                None => ending = Some(Ending { deadline, reason: ByeReason::Drained, spent: false }),
                            }
                            role.begin_drain(&link).await
                        }
                        Ok(Some(Message::Bye { reason: ByeReason::Replaced, .. })) => {
                            role.on_disconnected();
                            return Ended::Stopped(Stop::Replaced);
                        }
                        Ok(Some(Message::Bye { reason, detail })) => {
                            Step::Lost(format!("the manager said goodbye: {reason} ({detail})"))
                        }
                        Ok(Some(msg)) => role.on_message(&link, msg).await,
                        Ok(None) => Step::Lost("the manager closed the connection".into()),
                        Err(e) => Step::Lost(e.to_string()),
                    }
                }
            };
            if let Some(end) = settle(role, &link, &ending, step).await {
                return end;
            }
        }
    }
}

/// Carries out a role's step; `Some` ends the connection.
async fn settle<R: ClientRole>(
    role: &mut R,
    link: &Link,
    ending: &Option<Ending>,
    step: Step<R::Error>,
) -> Option<Ended<R::Error>> {
    let lost = |why: String| match ending {
        Some(e) if e.reason == ByeReason::Drained => Ended::Done(Outcome::Drained),
        Some(_) => Ended::Done(Outcome::ShutDown),
        None => Ended::Lost(why),
    };
    match step {
        Step::Continue => None,
        Step::Lost(why) => {
            role.on_disconnected();
            Some(lost(why))
        }
        Step::Unexpected(kind) => {
            let detail = format!("a {} does not take {kind} messages", R::NAME);
            let _ = link.close(ByeReason::ProtocolViolation, &detail).await;
            role.on_disconnected();
            Some(lost(format!(
                "the manager sent {kind}; closed the connection"
            )))
        }
        Step::Fail(e) => {
            role.on_disconnected();
            Some(Ended::Stopped(Stop::Role(e)))
        }
        Step::Leave(detail) => {
            let reason = ending
                .as_ref()
                .map_or(ByeReason::ShuttingDown, |e| e.reason);
            if let Err(e) = link.close(reason, &detail).await {
                info!(error = %e, "{}: could not send Bye to the manager", R::NAME);
            }
            info!(%reason, detail, "{}: left the manager", R::NAME);
            Some(Ended::Done(if reason == ByeReason::Drained {
                Outcome::Drained
            } else {
                Outcome::ShutDown
            }))
        }
    }
}

/// A duration in milliseconds from the manager, cut to [`MAX_PERIOD`].
fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms).min(MAX_PERIOD)
}

/// A deadline that never comes in practice (a day from now).
fn far() -> Instant {
    Instant::now() + MAX_PERIOD
}
