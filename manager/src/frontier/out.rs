//! URLs in flight: up to `connections_per_host` page jobs of one host out at once,
//! each tracked until its report, and put back when it did not end.
//!
//! The scheme: a dispatch takes the host's head URL *out of the queue* (`head` moves
//! past it) but leaves it in RocksDB under its seq, now below `head`; the host's
//! [`Out`](super::hosts::Out) entries and its record (`out`, written in the dispatch's batch, as the
//! record is anyway) name those seqs. Every key of a host below its `head` is
//! therefore either a URL in flight or deleted. Then:
//!
//! - a report that ends the URL (page stored, or an outcome) deletes its key;
//! - a job that did not end (returned unstarted, lost with its downloader, or to be
//!   tried again after a connect failure) is *put back* at seq `head - 1`, which
//!   becomes the head: that key is free, or holds another URL in flight, which then
//!   swaps keys with it (its `Out` follows). Dispatched again first, as with one
//!   connection per host, where the put-back URL is always the one at `head - 1`;
//! - after a crash, [`Frontier::open`](super::Frontier::open) puts every URL a host
//!   record names as out back at the head of its queue, in seq order
//!   ([`Frontier::repack_out`]): exactly the URLs in flight are dispatched again,
//!   none is lost and none is queued twice. A record written before `out` existed
//!   had its URL in flight at `head`, so it is simply queued.
//!
//! Cost: a dispatch writes nothing beyond the host record; a report deletes one key;
//! finding a job among its host's is O(`connections_per_host`). A put-back reads one
//! or two keys and writes two or three, in a batch of its own (rare: returns,
//! losses, retries); the restart reads one key per URL in flight. This module must
//! never decide when a host may be contacted: `dispatch`, `report` and `schedule` do.

use spool::{AppId, OutcomeReason};

use super::hosts::HostId;
use super::records::{PendingOutcome, QueueEntry, queue_key};
use super::store::{Batch, Cf};
use super::{Frontier, FrontierError};

impl Frontier {
    /// `connections_per_host`, as a count.
    pub(crate) fn connection_limit(&self) -> usize {
        self.config.connections_per_host as usize
    }

    /// Takes host `id`'s head URL out of its queue for a dispatch: `(seq, entry,
    /// failed tries so far)`. Its key stays in RocksDB until its report.
    pub(crate) fn take_head(
        &mut self,
        id: HostId,
    ) -> Result<Option<(u64, QueueEntry, u32)>, FrontierError> {
        self.fill_buffer(id)?;
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(None);
        };
        let Some((seq, entry)) = host.buffer.pop_front() else {
            return Ok(None);
        };
        host.head = seq + 1;
        host.head_reqno = None;
        let tries = match host.tries.iter().position(|(s, _)| *s == seq) {
            Some(i) => host.tries.swap_remove(i).1,
            None => 0,
        };
        Ok(Some((seq, entry, tries)))
    }

    /// The URL at `seq` (in flight) of host `id`, of `app`, stored a page: it leaves
    /// RocksDB and is counted as a page.
    pub(crate) fn url_fetched(&mut self, id: HostId, seq: u64, app: &AppId, batch: &mut Batch) {
        batch.delete(Cf::Queue, queue_key(id, seq).to_vec());
        let counters = self.counters.app(app);
        counters.queued = counters.queued.saturating_sub(1);
        counters.pages += 1;
    }

    /// The URL at `seq` (in flight) of host `id` ends with `reason`.
    pub(crate) fn end_url(
        &mut self,
        id: HostId,
        seq: u64,
        reason: OutcomeReason,
        detail: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let entry: Option<QueueEntry> = self.store.get(Cf::Queue, &queue_key(id, seq))?;
        let Some(entry) = entry else {
            tracing::warn!(host = id, seq, "URL in flight missing from its queue");
            return Ok(());
        };
        batch.delete(Cf::Queue, queue_key(id, seq).to_vec());
        let app = &entry.app;
        self.counters.app(app).queued = self.counters.app(app).queued.saturating_sub(1);
        self.entry_ended(entry, reason, detail, now_ms, batch);
        Ok(())
    }

    /// Counts the outcome of `entry`, a URL of a queue that ends with `reason`, and
    /// queues it for its application's outcome file.
    pub(crate) fn entry_ended(
        &mut self,
        entry: QueueEntry,
        reason: OutcomeReason,
        detail: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) {
        self.counters.outcome(&entry.app, reason);
        let outcome = PendingOutcome {
            app: entry.app,
            url: entry.url,
            reason,
            detail: detail.to_owned(),
        };
        self.outcomes.add(batch, outcome, now_ms);
    }

    /// Puts the URL at `seq` of host `id`, whose job did not end, back at the head of
    /// the queue (seq `head - 1`) with `tries` failed tries, and commits that at
    /// once (later reads of the queue in the same call must see it). The job must
    /// already be gone from the host's `out`.
    pub(crate) fn put_back(
        &mut self,
        id: HostId,
        seq: u64,
        tries: u32,
    ) -> Result<(), FrontierError> {
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        let Some(to) = host.head.checked_sub(1).filter(|to| *to >= seq) else {
            tracing::warn!(host = %host.origin, seq, head = host.head, "put-back below its head");
            return Ok(());
        };
        let entry: Option<QueueEntry> = self.store.get(Cf::Queue, &queue_key(id, seq))?;
        let Some(entry) = entry else {
            tracing::warn!(host = %host.origin, seq, "URL in flight missing from its queue");
            return Ok(());
        };
        let mut batch = Batch::default();
        if to != seq {
            // `to` holds another URL in flight (it swaps keys with this one), or
            // nothing (its job ended).
            match host.out.iter().position(|o| o.seq == Some(to)) {
                Some(i) => {
                    let other: Option<QueueEntry> =
                        self.store.get(Cf::Queue, &queue_key(id, to))?;
                    let Some(other) = other else {
                        tracing::warn!(host = %host.origin, seq = to, "URL in flight missing from its queue");
                        return Ok(());
                    };
                    batch.put(Cf::Queue, queue_key(id, seq).to_vec(), &other);
                    if let Some(host) = self.hosts.get_mut(id) {
                        host.out[i].seq = Some(seq);
                    }
                }
                None => batch.delete(Cf::Queue, queue_key(id, seq).to_vec()),
            }
            batch.put(Cf::Queue, queue_key(id, to).to_vec(), &entry);
        }
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(());
        };
        host.head = to;
        host.head_reqno = None;
        // The buffer stays contiguous from the head.
        host.buffer.push_front((to, entry));
        if tries > 0 {
            host.tries.push((to, tries));
        }
        self.save_host(id, &mut batch);
        self.commit(batch)
    }

    /// At open, host `id` (from its record) had the URLs at `out` in flight: they go
    /// back to the head of its queue in seq order (to `head - k .. head`). Keys
    /// below `head` hold only URLs in flight or nothing, so those slots are free or
    /// hold one of these URLs. Returns the new head.
    pub(crate) fn repack_out(
        &mut self,
        id: HostId,
        head: u64,
        mut out: Vec<u64>,
        batch: &mut Batch,
    ) -> Result<u64, FrontierError> {
        out.sort_unstable();
        out.dedup();
        let mut entries = Vec::with_capacity(out.len());
        for seq in out.into_iter().filter(|s| *s < head) {
            let entry: Option<QueueEntry> = self.store.get(Cf::Queue, &queue_key(id, seq))?;
            match entry {
                Some(entry) => entries.push((seq, entry)),
                None => tracing::warn!(host = id, seq, "URL in flight missing from its queue"),
            }
        }
        let Some(first) = head.checked_sub(entries.len() as u64) else {
            return Ok(head);
        };
        // Deletes first: a target slot may be one of the old keys.
        for (seq, _) in &entries {
            batch.delete(Cf::Queue, queue_key(id, *seq).to_vec());
        }
        for (to, (_, entry)) in (first..).zip(&entries) {
            batch.put(Cf::Queue, queue_key(id, to).to_vec(), entry);
        }
        Ok(first)
    }
}
