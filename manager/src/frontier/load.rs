//! Loading request files into host queues, lazily: only while fewer than `s = k r d`
//! hosts are ready or on their way to ready (Polybot section 3.5).
//!
//! Each URL gets the next request number (its place in the global request stream),
//! then: unparseable or not http(s) -> outcome `invalid_url`; blacklisted host ->
//! `blacklisted`; an origin marked dropped (dead host, name that does not exist,
//! forbidden address) -> that outcome; else it is appended to its host's queue,
//! creating the host if needed. One chunk (`load_chunk_urls` URLs) is one RocksDB
//! batch holding the queue entries, outcomes, host records, id allocators, counters
//! and the file's progress, so a crash never loads a URL twice nor loses one.
//!
//! Memory: one chunk, plus a map of the origins first seen in it. This module must
//! never load a chunk when the pipeline already holds `s` hosts.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use spool::OutcomeReason;

use super::hosts::{Host, HostId, HostState};
use super::origin::origin_of;
use super::records::{
    META_NEXT_HOST, META_NEXT_REQNO, OriginRecord, PendingOutcome, QueueEntry, file_key, queue_key,
};
use super::store::{Batch, Cf};
use super::{Frontier, FrontierError};
use crate::politeness;
use crate::requests::Chunk;

impl Frontier {
    /// Loads chunks while the pipeline is short of `s`, at most
    /// `max_load_chunks_per_call` of them. Returns the URLs read.
    pub(crate) fn load_if_needed(&mut self, now_ms: u64) -> Result<u64, FrontierError> {
        let mut loaded = 0;
        for _ in 0..self.config.max_load_chunks_per_call {
            if self.pipeline() >= self.ready_target() {
                break;
            }
            let max = self.config.load_chunk_urls;
            let Some(chunk) = self.requests.next_chunk(&self.store, max, now_ms)? else {
                break;
            };
            loaded += chunk.requests.len() as u64;
            self.load_chunk(chunk, now_ms)?;
        }
        Ok(loaded)
    }

    fn load_chunk(&mut self, chunk: Chunk, now_ms: u64) -> Result<(), FrontierError> {
        let mut batch = Batch::default();
        let mut touched: BTreeSet<HostId> = BTreeSet::new();
        let mut created: Vec<HostId> = Vec::new();
        // Origins not in memory, looked up once per chunk.
        let mut dropped: HashMap<String, (OutcomeReason, String)> = HashMap::new();
        let app = chunk.app.clone();
        for request in &chunk.requests {
            let reqno = self.next_reqno;
            self.next_reqno += 1;
            self.counters.app(&app).urls_loaded += 1;
            let origin = match origin_of(&request.url) {
                Ok(o) => o,
                Err(detail) => {
                    self.load_outcome(
                        &mut batch,
                        &request.url,
                        &app,
                        OutcomeReason::InvalidUrl,
                        &detail,
                        now_ms,
                    );
                    continue;
                }
            };
            if self.blacklist.matches(&origin.name) {
                let detail = format!("{} is blacklisted", origin.name);
                self.load_outcome(
                    &mut batch,
                    &request.url,
                    &app,
                    OutcomeReason::Blacklisted,
                    &detail,
                    now_ms,
                );
                continue;
            }
            if let Some((reason, detail)) = dropped.get(&origin.key) {
                let (reason, detail) = (*reason, detail.clone());
                self.load_outcome(&mut batch, &request.url, &app, reason, &detail, now_ms);
                continue;
            }
            let id = match self.hosts.id_of(&origin.key) {
                Some(id) => id,
                None => {
                    let record = self.origin_record(&origin.key)?;
                    if let Some(reason) = live_drop(&record, now_ms) {
                        let detail = format!("{} was dropped earlier: {reason}", origin.key);
                        dropped.insert(origin.key.clone(), (reason, detail.clone()));
                        self.load_outcome(&mut batch, &request.url, &app, reason, &detail, now_ms);
                        continue;
                    }
                    let id = self.next_host_id;
                    self.next_host_id += 1;
                    let mut host = Host::new(
                        id,
                        Arc::from(origin.key.as_str()),
                        Arc::from(origin.name.as_str()),
                        origin.port,
                        0,
                    );
                    host.robots = self.robots_from_cache(record.robots.as_ref());
                    self.hosts.insert(host);
                    created.push(id);
                    id
                }
            };
            let Some(host) = self.hosts.get_mut(id) else {
                continue;
            };
            let seq = host.tail;
            if host.queued() == 0 {
                host.head_reqno = Some(reqno);
            }
            host.tail += 1;
            if let Some(hint) = request.hints.interval_ms {
                host.interval_override_ms = Some(politeness::clamp_hint(&self.config, hint));
            }
            let entry = QueueEntry {
                reqno,
                app: app.clone(),
                url: request.url.clone(),
                depth: request.hints.depth,
                via: request.hints.via.clone(),
                hops: request.hints.hops,
                validators: request.hints.validators.clone(),
            };
            batch.put(Cf::Queue, queue_key(id, seq).to_vec(), &entry);
            self.counters.app(&app).queued += 1;
            touched.insert(id);
        }
        for id in &touched {
            self.save_host(*id, &mut batch);
        }
        if chunk.progress.complete && !chunk.was_complete {
            self.counters.app(&app).files_loaded += 1;
        }
        batch.put(Cf::Meta, META_NEXT_REQNO.to_vec(), &self.next_reqno);
        batch.put(Cf::Meta, META_NEXT_HOST.to_vec(), &self.next_host_id);
        batch.put(Cf::Meta, file_key(&app, &chunk.file_name), &chunk.progress);
        // The last chunk's batch is synced: the file is deleted right after it.
        self.commit_opt(batch, chunk.progress.complete)?;
        if let Some(key) = self.requests.committed(&chunk)? {
            let mut cleanup = Batch::default();
            cleanup.delete(Cf::Meta, key);
            self.store.write(cleanup)?;
        }
        // New hosts start their way to ready (DNS first) once their URLs are durable.
        let mut batch = Batch::default();
        for id in created {
            self.advance(id, now_ms, &mut batch)?;
        }
        // A host waiting for reports only because its queue was empty may start
        // one of its new URLs now (with `connections_per_host` above 1).
        if self.connection_limit() > 1 {
            for id in touched {
                let waits = self.hosts.get(id).is_some_and(|h| {
                    h.state() == HostState::InFlight && h.out.len() < self.connection_limit()
                });
                if waits {
                    self.hosts.set_state(id, HostState::Waiting);
                    self.advance(id, now_ms, &mut batch)?;
                }
            }
        }
        self.commit(batch)
    }

    pub(super) fn load_outcome(
        &mut self,
        batch: &mut Batch,
        url: &str,
        app: &spool::AppId,
        reason: OutcomeReason,
        detail: &str,
        now_ms: u64,
    ) {
        self.counters.outcome(app, reason);
        let outcome = PendingOutcome {
            app: app.clone(),
            url: url.to_owned(),
            reason,
            detail: detail.to_owned(),
        };
        self.outcomes.add(batch, outcome, now_ms);
    }
}

/// The outcome new URLs of an origin get, if it is marked dropped at `now_ms`.
pub(super) fn live_drop(record: &OriginRecord, now_ms: u64) -> Option<OutcomeReason> {
    record
        .dropped_reason
        .filter(|_| now_ms < record.dropped_until_ms)
}
