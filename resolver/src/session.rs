//! One registered connection to the manager, from `Welcome` to its end: take
//! `ResolveBatch`es, answer each with `ResolveAnswers`, send heartbeats, obey
//! `SetConcurrency` and `Drain`.
//!
//! One task reads and writes the connection (a `select!` loop); each batch
//! resolves in a task of its own in a [`JoinSet`] and hands its answers back to
//! the loop, which sends them. Dropping the session aborts every batch task.
//!
//! Contract with the manager (also in the crate docs):
//! - every host of a batch is answered, all in one `ResolveAnswers` carrying the
//!   batch's request id, in any order, sent when the last host of the batch is
//!   done; only if that message would exceed the frame limit is it split into
//!   several `ResolveAnswers` with the same request id;
//! - a batch is answered on the connection it came on, or not at all: when the
//!   connection ends, its unanswered batches are dropped, and the manager must send
//!   them again (to this resolver after it reconnects, or to another). Answers never
//!   cross connections, so a restarted manager can never get an answer to a
//!   request id it did not send;
//! - past `max_pending_names` names accepted and unanswered, the loop stops reading
//!   (TCP back-pressure) until answers go out;
//! - `Drain { grace_ms }`: no new batch is taken (one that still arrives is dropped
//!   with a warning), the running ones get `grace_ms` to finish, the rest are
//!   dropped unanswered, then `Bye { Drained }`;
//! - shutdown (the cancellation token): the same with [`SHUTDOWN_GRACE`] and
//!   `Bye { ShuttingDown }`;
//! - nothing heard from the manager for its heartbeat timeout: `Bye { TimedOut }`
//!   and the connection is treated as lost.
//!
//! This module must never block the loop on anything but a bounded send (every send
//! has the heartbeat timeout), nor answer a batch twice. Cost per message: O(1)
//! plus the size of the batch.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use spool::protocol::{
    ByeReason, ConnReader, ConnWriter, Connection, HostAnswer, Load, Message, NegativeKind,
    ProtocolError, RequestId, Resolution, Welcome,
};
use tokio::task::{Id, JoinSet};
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until, timeout};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::lookup::Resolver;

/// How long in-flight batches get to finish when the process is asked to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Shortest heartbeat period used, whatever the `Welcome` says.
const MIN_HEARTBEAT: Duration = Duration::from_millis(10);
/// Longest period or grace time taken from the manager (a day): larger values are
/// cut so that no deadline arithmetic can overflow.
const MAX_PERIOD: Duration = Duration::from_secs(86_400);

/// How a session ended without an error.
#[derive(Debug)]
pub(crate) enum End {
    /// Drained on the manager's request: the process should exit.
    Drained,
    /// Stopped by the cancellation token: the process should exit.
    ShutDown,
    /// The connection is gone (closed, broken, timed out): reconnect.
    Lost(String),
    /// The manager registered another resolver with our id: stop, do not reconnect.
    Replaced,
}

/// Why the session is winding down, and until when batches may still finish.
struct Ending {
    deadline: Instant,
    reason: ByeReason,
}

pub(crate) struct Session<'a> {
    reader: ConnReader,
    writer: ConnWriter,
    resolver: &'a Arc<Resolver>,
    shutdown: &'a CancellationToken,
    batches: JoinSet<Vec<HostAnswer>>,
    /// Request id and size of each running batch task.
    running: HashMap<Id, (RequestId, usize)>,
    pending_names: usize,
    max_pending_names: usize,
    heartbeat: Duration,
    silence_limit: Duration,
    last_resolved: (Instant, u64),
}

impl<'a> Session<'a> {
    pub(crate) fn new(
        conn: Connection,
        welcome: &Welcome,
        resolver: &'a Arc<Resolver>,
        max_pending_names: u32,
        shutdown: &'a CancellationToken,
    ) -> Self {
        let (reader, writer) = conn.into_split();
        let heartbeat = millis(welcome.heartbeat_interval_ms).max(MIN_HEARTBEAT);
        let silence_limit = millis(welcome.heartbeat_timeout_ms).max(heartbeat * 2);
        Self {
            reader,
            writer,
            resolver,
            shutdown,
            batches: JoinSet::new(),
            running: HashMap::new(),
            pending_names: 0,
            max_pending_names: max_pending_names as usize,
            heartbeat,
            silence_limit,
            last_resolved: (Instant::now(), resolver.stats().resolved),
        }
    }

    /// Serves the connection until it ends, and says how it ended.
    pub(crate) async fn run(mut self) -> End {
        let mut ticker = interval(self.heartbeat);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut last_heard = Instant::now();
        let mut ending: Option<Ending> = None;
        loop {
            if let Some(e) = &ending {
                if self.batches.is_empty() {
                    return self.finish(e.reason, "every batch answered").await;
                }
            }
            let reading = self.pending_names < self.max_pending_names;
            if !reading {
                // Not reading is our choice, not the manager's silence.
                last_heard = Instant::now();
            }
            let far = Instant::now() + MAX_PERIOD;
            let end_by = ending.as_ref().map_or(far, |e| e.deadline);
            tokio::select! {
                () = self.shutdown.cancelled(), if ending.is_none() => {
                    info!(batches = self.batches.len(), "resolver: stopping, finishing in-flight batches");
                    ending = Some(Ending { deadline: Instant::now() + SHUTDOWN_GRACE, reason: ByeReason::ShuttingDown });
                }
                () = sleep_until(end_by), if ending.is_some() => {
                    let names = self.pending_names;
                    let detail = format!("handed back {} unanswered batches ({names} names)", self.batches.len());
                    let reason = ending.as_ref().map_or(ByeReason::ShuttingDown, |e| e.reason);
                    warn!(batches = self.batches.len(), names, "resolver: grace period over, handing batches back");
                    return self.finish(reason, &detail).await;
                }
                Some(joined) = self.batches.join_next_with_id(), if !self.batches.is_empty() => {
                    if let Err(lost) = self.batch_done(joined).await {
                        return End::Lost(lost);
                    }
                }
                _ = ticker.tick() => {
                    let load = self.load();
                    if let Err(e) = send(&self.writer, self.silence_limit, &Message::Heartbeat { load }).await {
                        return End::Lost(format!("cannot send a heartbeat: {e}"));
                    }
                }
                () = sleep_until(last_heard + self.silence_limit), if reading => {
                    let detail = format!("nothing from the manager for {} ms", self.silence_limit.as_millis());
                    let _ = self.writer.close(ByeReason::TimedOut, &detail).await;
                    return End::Lost(detail);
                }
                received = self.reader.recv(), if reading => {
                    last_heard = Instant::now();
                    let msg = match received {
                        Ok(Some(msg)) => msg,
                        Ok(None) => return self.lost(&ending, "the manager closed the connection".into()),
                        Err(e) => return self.lost(&ending, e.to_string()),
                    };
                    if let Some(end) = self.handle(msg, &mut ending).await {
                        return end;
                    }
                }
            }
        }
    }

    /// Acts on one message from the manager; `Some` ends the session.
    async fn handle(&mut self, msg: Message, ending: &mut Option<Ending>) -> Option<End> {
        match msg {
            Message::ResolveBatch { request, hosts } => {
                if ending.is_some() {
                    warn!(%request, names = hosts.len(), "resolver: batch received while draining, not taken");
                    return None;
                }
                let resolver = Arc::clone(self.resolver);
                let size = hosts.len();
                let task = self
                    .batches
                    .spawn(async move { resolver.resolve_batch(hosts).await });
                self.running.insert(task.id(), (request, size));
                self.pending_names += size;
            }
            Message::SetConcurrency { limit } => {
                let now = self.resolver.set_concurrency(limit);
                info!(
                    asked = limit,
                    limit = now,
                    "resolver: concurrency changed by the manager"
                );
            }
            Message::Heartbeat { .. } => {}
            Message::Drain { grace_ms } => {
                info!(grace_ms, batches = self.batches.len(), "resolver: draining");
                let deadline = Instant::now() + millis(grace_ms);
                let deadline = ending
                    .as_ref()
                    .map_or(deadline, |e| e.deadline.min(deadline));
                *ending = Some(Ending {
                    deadline,
                    reason: ByeReason::Drained,
                });
            }
            Message::Bye { reason, detail } => {
                if reason == ByeReason::Replaced {
                    return Some(End::Replaced);
                }
                let why = format!("the manager said goodbye: {reason} ({detail})");
                return Some(self.lost(ending, why));
            }
            other => {
                let detail = format!("a resolver does not take {} messages", other.kind());
                let _ = self
                    .writer
                    .close(ByeReason::ProtocolViolation, &detail)
                    .await;
                return Some(End::Lost(format!(
                    "the manager sent {}; closed the connection",
                    other.kind()
                )));
            }
        }
        None
    }

    /// A batch task ended: send its answers. `Err` means the connection is lost.
    async fn batch_done(
        &mut self,
        joined: Result<(Id, Vec<HostAnswer>), tokio::task::JoinError>,
    ) -> Result<(), String> {
        let (id, answers) = match joined {
            Ok(done) => done,
            Err(e) => {
                let (request, size) = self.running.remove(&e.id()).unwrap_or((RequestId(0), 0));
                self.pending_names -= size;
                // A bug, not an input problem: leave the batch unanswered (the manager
                // re-sends it) and keep serving the others.
                error!(%request, error = %e, "resolver: batch task failed");
                return Ok(());
            }
        };
        let (request, size) = self.running.remove(&id).unwrap_or((RequestId(0), 0));
        self.pending_names -= size;
        send_answers(&self.writer, self.silence_limit, request, answers)
            .await
            .map_err(|e| format!("cannot send the answers to {request}: {e}"))
    }

    /// The connection broke or closed; while ending that just means "done".
    fn lost(&self, ending: &Option<Ending>, why: String) -> End {
        match ending {
            Some(e) if e.reason == ByeReason::Drained => End::Drained,
            Some(_) => End::ShutDown,
            None => End::Lost(why),
        }
    }

    /// Sends the last `Bye` (best effort: the peer may be gone) and ends.
    async fn finish(self, reason: ByeReason, detail: &str) -> End {
        if let Err(e) = self.writer.close(reason, detail).await {
            info!(error = %e, "resolver: could not send Bye to the manager");
        }
        info!(%reason, detail, "resolver: left the manager");
        if reason == ByeReason::Drained {
            End::Drained
        } else {
            End::ShutDown
        }
    }

    /// The load figures for a heartbeat; names/s over the time since the last one.
    fn load(&mut self) -> Load {
        let stats = self.resolver.stats();
        let now = Instant::now();
        let (then, before) = self.last_resolved;
        let secs = now.duration_since(then).as_secs_f32();
        let done_per_sec = if secs > 0.0 {
            (stats.resolved - before) as f32 / secs
        } else {
            0.0
        };
        self.last_resolved = (now, stats.resolved);
        Load {
            in_flight: stats.in_flight,
            concurrency: stats.concurrency,
            queued: stats.queued,
            done_per_sec,
            bytes_per_sec: 0,
        }
    }
}

/// Sends a batch's answers in one message, split in halves (recursively) only
/// if the message would exceed the frame limit.
async fn send_answers(
    writer: &ConnWriter,
    limit: Duration,
    request: RequestId,
    answers: Vec<HostAnswer>,
) -> Result<(), ProtocolError> {
    // (answers, already cut down to a failure because one answer was too large)
    let mut parts = vec![(answers, false)];
    while let Some((part, cut)) = parts.pop() {
        let msg = Message::ResolveAnswers {
            request,
            answers: part,
        };
        let size = match send(writer, limit, &msg).await {
            Err(ProtocolError::MessageTooLarge { size, .. }) => size,
            other => {
                other?;
                continue;
            }
        };
        let Message::ResolveAnswers {
            answers: mut part, ..
        } = msg
        else {
            continue; // built just above: always ResolveAnswers
        };
        if part.len() > 1 {
            let second = part.split_off(part.len() / 2);
            parts.push((second, cut));
            parts.push((part, cut));
        } else if !cut {
            parts.push((part.into_iter().map(|a| too_large(a, size)).collect(), true));
        } else {
            // Only a host name longer than the frame limit gets here; the manager
            // never sends one (its own frame limit would refuse the batch).
            error!(%request, size, "resolver: an answer exceeds the frame limit, not sent");
        }
    }
    Ok(())
}

/// Sends one message, giving up after the heartbeat timeout.
async fn send(writer: &ConnWriter, limit: Duration, msg: &Message) -> Result<(), ProtocolError> {
    match timeout(limit, writer.send(msg)).await {
        Ok(sent) => sent,
        Err(_) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into()),
    }
}

/// A duration in milliseconds from the manager, cut to [`MAX_PERIOD`].
fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms).min(MAX_PERIOD)
}

/// An answer too large for any frame (millions of addresses): reported as a failure.
fn too_large(answer: HostAnswer, size: usize) -> HostAnswer {
    HostAnswer {
        host: answer.host,
        result: Resolution::Negative {
            kind: NegativeKind::Failure,
            ttl_secs: 0,
            detail: format!("the answer ({size} bytes) exceeds the control frame limit"),
        },
    }
}
