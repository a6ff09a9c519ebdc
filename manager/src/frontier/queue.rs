//! Host queues in RocksDB, seen from the frontier: the read-ahead buffer of a host
//! (one seek exactly to its head, never walking the tombstones of popped URLs), popping
//! the head, saving the host record, and dropping a whole queue with outcomes.
//!
//! The read-ahead holds up to `pop_batch` URLs for hosts dispatched often (interval
//! at most [`READ_AHEAD_MAX_REST_MS`]), one URL for the others, nothing while they
//! rest. Dropping a queue of n URLs costs n reads and writes, in batches of
//! [`DROP_CHUNK`] so a huge queue never builds one huge batch. This module must never
//! change a host's state: it only moves its URLs.

use spool::OutcomeReason;

use super::hosts::HostId;
use super::records::{QueueEntry, queue_key};
use super::store::{Batch, Cf};
use super::{Frontier, FrontierError};

/// Outcomes written per batch when a host's whole queue is dropped.
const DROP_CHUNK: usize = 4_096;

/// Hosts that rest longer than this between requests read one URL at a time and keep
/// no read-ahead while resting: memory goes to the hosts that are dispatched often.
pub(crate) const READ_AHEAD_MAX_REST_MS: u64 = 5_000;

impl Frontier {
    /// Request number of host `id`'s head URL (reads the buffer if needed).
    pub(crate) fn head_reqno(&mut self, id: HostId) -> Result<Option<u64>, FrontierError> {
        if let Some(known) = self
            .hosts
            .get(id)
            .filter(|h| h.buffer.is_empty())
            .and_then(|h| h.head_reqno)
        {
            return Ok(Some(known));
        }
        self.fill_buffer(id)?;
        Ok(self
            .hosts
            .get(id)
            .and_then(|h| h.buffer.front().map(|(_, e)| e.reqno).or(h.head_reqno)))
    }

    /// Reads the next `pop_batch` URLs of host `id` if its buffer is empty: one seek
    /// exactly to the head, bounded by the next host's first key.
    pub(crate) fn fill_buffer(&mut self, id: HostId) -> Result<(), FrontierError> {
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        if !host.buffer.is_empty() || host.queued() == 0 {
            return Ok(());
        }
        let batch = if self.interval_of(host) <= READ_AHEAD_MAX_REST_MS {
            self.config.pop_batch
        } else {
            1
        };
        let (head, want) = (host.head, (host.queued() as usize).min(batch));
        let entries: Vec<(u64, QueueEntry)> = self.store.read_queue(id, head, want)?;
        if let Some(host) = self.hosts.get_mut(id) {
            // Only a contiguous run from the head is usable.
            for (expect, (seq, entry)) in (host.head..).zip(entries) {
                if seq != expect {
                    tracing::warn!(host = %host.origin, seq, expect, "gap in host queue");
                    break;
                }
                host.buffer.push_back((seq, entry));
            }
            if host.buffer.is_empty() {
                host.head_reqno = None;
            }
        }
        Ok(())
    }

    /// Removes host `id`'s head URL, which was never dispatched (it ended with an
    /// outcome).
    pub(crate) fn pop_head(
        &mut self,
        id: HostId,
        batch: &mut Batch,
    ) -> Result<Option<QueueEntry>, FrontierError> {
        self.fill_buffer(id)?;
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(None);
        };
        if host.queued() == 0 {
            return Ok(None);
        }
        let popped = host.buffer.pop_front();
        batch.delete(Cf::Queue, queue_key(id, host.head).to_vec());
        let seq = host.head;
        host.tries.retain(|(s, _)| *s != seq);
        host.head += 1;
        host.head_reqno = None;
        let Some((_, entry)) = popped else {
            return Ok(None);
        };
        self.counters.app(&entry.app).queued =
            self.counters.app(&entry.app).queued.saturating_sub(1);
        Ok(Some(entry))
    }

    /// Writes host `id`'s record (or deletes it when its queue is empty and nothing
    /// is in flight).
    pub(crate) fn save_host(&self, id: HostId, batch: &mut Batch) {
        match self.hosts.get(id) {
            Some(h) if h.has_urls() => batch.put(Cf::Host, id.to_be_bytes().to_vec(), &h.record()),
            _ => batch.delete(Cf::Host, id.to_be_bytes().to_vec()),
        }
    }

    /// Ends every queued URL of host `id` with `reason` and forgets the host; with
    /// `mark_ms`, the origin stays dropped (new URLs end the same way) until then.
    /// Its URLs in flight are left to their reports: a host with requests in
    /// flight stays (`InFlight`, its queue empty) until they end. Callers wait for
    /// them where they can (`dispatch`, `host_failed`).
    pub(crate) fn drop_host(
        &mut self,
        id: HostId,
        reason: OutcomeReason,
        detail: &str,
        mark_until_ms: Option<u64>,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        loop {
            let Some(host) = self.hosts.get_mut(id) else {
                return Ok(());
            };
            if host.queued() == 0 {
                break;
            }
            host.buffer.clear();
            let (head, n) = (host.head, (host.queued() as usize).min(DROP_CHUNK));
            let entries: Vec<(u64, QueueEntry)> = self.store.read_queue(id, head, n)?;
            let last = entries.last().map(|(seq, _)| *seq + 1).unwrap_or(u64::MAX);
            for (_, entry) in entries {
                let app = &entry.app;
                self.counters.app(app).queued = self.counters.app(app).queued.saturating_sub(1);
                self.entry_ended(entry, reason, detail, now_ms, batch);
            }
            let Some(host) = self.hosts.get_mut(id) else {
                return Ok(());
            };
            let end = last.min(host.tail);
            batch.delete_range(
                Cf::Queue,
                queue_key(id, head).to_vec(),
                queue_key(id, end).to_vec(),
            );
            host.head = end;
            self.save_host(id, batch);
            if batch.len() >= DROP_CHUNK {
                let full = std::mem::take(batch);
                self.commit(full)?;
            }
        }
        let Some(origin) = self.hosts.get(id).map(|h| h.origin.clone()) else {
            return Ok(());
        };
        if let Some(until) = mark_until_ms {
            let mut record = self.origin_record(&origin)?;
            record.dropped_until_ms = until;
            record.dropped_reason = Some(reason);
            batch.put(Cf::Origin, origin.as_bytes().to_vec(), &record);
        }
        if self.hosts.get(id).is_some_and(|h| !h.out.is_empty()) {
            self.hosts.set_state(id, super::hosts::HostState::InFlight);
            self.save_host(id, batch);
            tracing::info!(host = %origin, %reason, detail, "host dropped; its requests in flight end first");
            return Ok(());
        }
        self.hosts.remove(id);
        batch.delete(Cf::Host, id.to_be_bytes().to_vec());
        tracing::info!(host = %origin, %reason, detail, "host dropped");
        Ok(())
    }
}
