//! Deciding, for every response of a batch, whether its payload is new (a first
//! capture, entered into the digest index) or an exact duplicate of an earlier
//! stored response (same `WARC-Payload-Digest`), which gets a `revisit` record.
//!
//! Earlier means: in an earlier batch (the catalog's digest index, one batched
//! RocksDB `multi_get` per batch) or earlier in the same batch. Payloads shorter than
//! [`RepositoryOptions::min_dedup_payload`](crate::RepositoryOptions) (default 1
//! byte: empty bodies of redirects, 204s and 304s) are never deduplicated: a revisit
//! record would cost more than it saves and would link unrelated pages.

use std::collections::HashMap;

use spool::warc::{RecordType, Sha1Digest};

use crate::batch::ScannedBatch;
use crate::catalog::{Catalog, FirstCapture};
use crate::error::Result;

/// What happens to one record of the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Stored, not indexed (warcinfo, request, metadata, ...).
    NotIndexed,
    /// A response indexed where it is.
    Original,
    /// A response whose payload was stored before: indexed through a new revisit
    /// record referring to this first capture.
    Duplicate(FirstCapture),
    /// A revisit record already in the batch: indexed where it is.
    Revisit,
}

/// The fate of every record, and the digest entries to add.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub(crate) fates: Vec<Fate>,
    pub(crate) new_captures: Vec<(Sha1Digest, FirstCapture)>,
}

impl Plan {
    pub(crate) fn duplicates(&self) -> usize {
        self.fates
            .iter()
            .filter(|f| matches!(f, Fate::Duplicate(_)))
            .count()
    }
}

/// Plans the batch against the digest index.
pub(crate) fn plan(catalog: &Catalog, batch: &ScannedBatch, min_payload: u64) -> Result<Plan> {
    let candidate = |i: usize| -> Option<Sha1Digest> {
        let r = &batch.records[i];
        let c = r.capture.as_ref()?;
        (r.kind == Some(RecordType::Response) && c.payload_len >= min_payload.max(1))
            .then_some(c.digest?)
    };
    let mut wanted: Vec<Sha1Digest> = (0..batch.records.len()).filter_map(candidate).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let stored: HashMap<Sha1Digest, FirstCapture> = wanted
        .iter()
        .copied()
        .zip(catalog.first_captures(&wanted)?)
        .filter_map(|(d, c)| Some((d, c?)))
        .collect();

    let mut plan = Plan::default();
    let mut in_batch: HashMap<Sha1Digest, FirstCapture> = HashMap::new();
    for (i, r) in batch.records.iter().enumerate() {
        let fate = match (r.kind, &r.capture) {
            (Some(RecordType::Revisit), Some(_)) => Fate::Revisit,
            (Some(RecordType::Response), Some(c)) => match candidate(i) {
                None => Fate::Original,
                Some(d) => {
                    if let Some(first) = in_batch.get(&d) {
                        Fate::Duplicate(first.clone())
                    } else if let Some(first) = stored.get(&d) {
                        if first.record_id == r.record_id {
                            // This very record (a retry that already committed it).
                            Fate::Original
                        } else {
                            Fate::Duplicate(first.clone())
                        }
                    } else {
                        let first = FirstCapture {
                            date: r.date,
                            record_id: r.record_id.clone(),
                            uri: c.uri.clone(),
                        };
                        in_batch.insert(d, first.clone());
                        plan.new_captures.push((d, first));
                        Fate::Original
                    }
                }
            },
            _ => Fate::NotIndexed,
        };
        plan.fates.push(fate);
    }
    Ok(plan)
}
