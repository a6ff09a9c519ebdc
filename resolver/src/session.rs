//! One registered connection to the manager, from `Welcome` to its end: take
//! `ResolveBatch`es, answer each with `ResolveAnswers`, send heartbeats, obey
//! `SetConcurrency` and `Drain`.
//!
//! The connection itself (connect, heartbeats, silence, drain and grace, reconnect)
//! is `spool::protocol::client::run`'s; this is the resolver's [`ClientRole`]. Each
//! batch resolves in a task of its own in a [`JoinSet`] and hands its answers back
//! to the driver's loop, which sends them. A lost connection aborts every batch task.
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
//! - shutdown (the cancellation token): the same with `control.shutdown_grace` (5 s) and
//!   `Bye { ShuttingDown }`;
//! - nothing heard from the manager for its heartbeat timeout: `Bye { TimedOut }`
//!   and the connection is treated as lost.
//!
//! This module must never block the loop on anything but a bounded send (every send
//! has the heartbeat timeout), nor answer a batch twice. Cost per message: O(1)
//! plus the size of the batch.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use spool::protocol::client::{ClientRole, Link, Step};
use spool::protocol::{
    HostAnswer, Load, Message, NegativeKind, ProtocolError, RequestId, Resolution, Role, Welcome,
};
use tokio::task::{Id, JoinError, JoinSet};
use tokio::time::Instant;
use tracing::{error, info, warn};

use crate::lookup::Resolver;

/// What a resolver does on a manager connection.
pub(crate) struct ResolverRole {
    resolver: Arc<Resolver>,
    batches: JoinSet<Vec<HostAnswer>>,
    /// Request id and size of each running batch task.
    running: HashMap<Id, (RequestId, usize)>,
    pending_names: usize,
    max_pending_names: usize,
    draining: bool,
    last_resolved: (Instant, u64),
}

impl ResolverRole {
    pub(crate) fn new(resolver: Arc<Resolver>, max_pending_names: u32) -> Self {
        let resolved = resolver.stats().resolved;
        Self {
            resolver,
            batches: JoinSet::new(),
            running: HashMap::new(),
            pending_names: 0,
            max_pending_names: max_pending_names as usize,
            draining: false,
            last_resolved: (Instant::now(), resolved),
        }
    }

    /// A batch task ended: send its answers.
    async fn batch_done(
        &mut self,
        link: &Link,
        joined: Result<(Id, Vec<HostAnswer>), JoinError>,
    ) -> Step<Infallible> {
        let (id, answers) = match joined {
            Ok(done) => done,
            Err(e) => {
                let (request, size) = self.running.remove(&e.id()).unwrap_or((RequestId(0), 0));
                self.pending_names -= size;
                // A bug, not an input problem: leave the batch unanswered (the manager
                // re-sends it) and keep serving the others.
                error!(%request, error = %e, "resolver: batch task failed");
                return Step::Continue;
            }
        };
        let (request, size) = self.running.remove(&id).unwrap_or((RequestId(0), 0));
        self.pending_names -= size;
        match send_answers(link, request, answers).await {
            Ok(()) => Step::Continue,
            Err(e) => Step::Lost(format!("cannot send the answers to {request}: {e}")),
        }
    }
}

impl ClientRole for ResolverRole {
    type Work = Result<(Id, Vec<HostAnswer>), JoinError>;
    /// A resolver has no local failure that stops it.
    type Error = Infallible;
    const ROLE: Role = Role::Resolver;
    const NAME: &'static str = "resolver";

    async fn on_connected(
        &mut self,
        _link: &Link,
        _welcome: &Welcome,
        _session: u64,
    ) -> Result<(), ProtocolError> {
        self.draining = false;
        self.last_resolved = (Instant::now(), self.resolver.stats().resolved);
        Ok(())
    }

    fn reading(&self) -> bool {
        self.pending_names < self.max_pending_names
    }

    fn in_flight(&self) -> usize {
        self.batches.len()
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

    async fn next_work(&mut self) -> Self::Work {
        match self.batches.join_next_with_id().await {
            Some(joined) => joined,
            None => std::future::pending().await,
        }
    }

    async fn on_work(&mut self, link: &Link, work: Self::Work) -> Step<Infallible> {
        self.batch_done(link, work).await
    }

    async fn on_message(&mut self, _link: &Link, msg: Message) -> Step<Infallible> {
        match msg {
            Message::ResolveBatch { request, hosts } => {
                if self.draining {
                    warn!(%request, names = hosts.len(), "resolver: batch received while draining, not taken");
                    return Step::Continue;
                }
                let resolver = Arc::clone(&self.resolver);
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
            other => return Step::Unexpected(other.kind()),
        }
        Step::Continue
    }

    async fn begin_drain(&mut self, _link: &Link) -> Step<Infallible> {
        self.draining = true;
        Step::Continue
    }

    async fn wind_down(&mut self, _link: &Link) -> Step<Infallible> {
        if self.batches.is_empty() {
            Step::Leave("every batch answered".into())
        } else {
            Step::Continue
        }
    }

    async fn grace_over(&mut self, _link: &Link) -> Step<Infallible> {
        let names = self.pending_names;
        let batches = self.batches.len();
        self.on_disconnected();
        Step::Leave(format!(
            "handed back {batches} unanswered batches ({names} names)"
        ))
    }

    /// Unanswered batches are dropped: the manager sends them again.
    fn on_disconnected(&mut self) {
        self.batches = JoinSet::new(); // dropping a JoinSet aborts its tasks
        self.running.clear();
        self.pending_names = 0;
    }
}

/// Sends a batch's answers in one message, split in halves (recursively) only
/// if the message would exceed the frame limit.
async fn send_answers(
    link: &Link,
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
        let size = match link.send(&msg).await {
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
