//! Deciding, for every response of a batch, whether its payload is new (a first
//! capture, entered into the digest index) or an exact duplicate of an earlier
//! stored response (same `WARC-Payload-Digest`), which gets a `revisit` record.
//!
//! Earlier means: in an earlier batch (the catalog's digest index, one batched
//! RocksDB `multi_get` per batch) or earlier in the same batch. Payloads shorter than
//! [`RepositoryOptions::min_dedup_payload`](crate::RepositoryOptions) (default 1
//! byte: empty bodies of redirects, 204s and 304s) are never deduplicated: a revisit
//! record would cost more than it saves and would link unrelated pages.
//!
//! A `304 Not Modified` response (a recrawl's conditional request answered) is
//! *not modified*: when the URL's newest earlier capture in the repository (an exact
//! URL match in the index) has a payload the digest index knows, the 304 gets a
//! revisit record of profile server-not-modified referring to that payload's first
//! capture. A 304 for a URL without such a capture is indexed as it is. Cost: one
//! index lookup per 304 (a binary search in each index file) and one batched
//! `multi_get` for their digests.

use std::collections::HashMap;

use spool::warc::{RecordType, Sha1Digest};

use crate::batch::ScannedBatch;
use crate::catalog::{Catalog, FirstCapture};
use crate::error::Result;
use crate::repository::RepositoryReader;

/// For each 304 response of the batch (by record index), the first capture and
/// digest of its URL's newest earlier capture with a known payload.
fn not_modified(
    catalog: &Catalog,
    reader: &RepositoryReader,
    batch: &ScannedBatch,
) -> Result<HashMap<usize, (FirstCapture, Sha1Digest)>> {
    let mut newest: Vec<(usize, Sha1Digest)> = Vec::new();
    for (i, r) in batch.records.iter().enumerate() {
        let Some(c) = &r.capture else { continue };
        if r.kind != Some(RecordType::Response) || c.status != "304" {
            continue;
        }
        let digest = reader
            .captures(&c.uri)?
            .into_iter()
            .rev()
            .filter(|l| l.url == c.uri && (l.is_revisit() || l.status != "304"))
            .find_map(|l| l.digest.parse::<Sha1Digest>().ok());
        if let Some(d) = digest {
            newest.push((i, d));
        }
    }
    if newest.is_empty() {
        return Ok(HashMap::new());
    }
    let digests: Vec<Sha1Digest> = newest.iter().map(|&(_, d)| d).collect();
    Ok(newest
        .into_iter()
        .zip(catalog.first_captures(&digests)?)
        .filter_map(|((i, d), first)| Some((i, (first?, d))))
        .collect())
}

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
    /// A 304 answer to a conditional request: indexed through a new revisit record
    /// (server-not-modified) referring to the first capture of the content of the
    /// URL's newest earlier capture, whose payload digest is `digest`.
    NotModified {
        /// What the revisit refers to.
        first: FirstCapture,
        /// Its payload digest.
        digest: Sha1Digest,
    },
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

    pub(crate) fn not_modified(&self) -> usize {
        self.fates
            .iter()
            .filter(|f| matches!(f, Fate::NotModified { .. }))
            .count()
    }
}

/// Plans the batch against the digest index (and, for 304s, the URL index of
/// `reader`).
pub(crate) fn plan(
    catalog: &Catalog,
    reader: &RepositoryReader,
    batch: &ScannedBatch,
    min_payload: u64,
) -> Result<Plan> {
    let not_modified = not_modified(catalog, reader, batch)?;
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
            (Some(RecordType::Response), Some(_)) if not_modified.contains_key(&i) => {
                let (first, digest) = not_modified[&i].clone();
                Fate::NotModified { first, digest }
            }
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
