//! [`Ledger`]: the frontier's database with the figures every batch carries. Each
//! change is one RocksDB batch (WAL on), and [`Ledger::commit`] writes the counters
//! (`records::Counters`) and the fetch totals (`totals`) into that same batch, so
//! after a kill -9 they count exactly the changes that are durable.
//!
//! This module must never decide what a change is: callers build the batch, the
//! ledger applies it. Memory: the counters (per application and per reason) and the
//! totals (per status code and reason), bounded whatever the crawl's size.

use spool::protocol::{FetchPurpose, FetchResult};

use super::FrontierError;
use super::records::{Counters, META_COUNTERS};
use super::store::{Batch, Cf, Store};
use super::totals::{FetchTotals, META_TOTALS};

/// The store and the figures written with each of its batches. See the
/// [module docs](self).
#[derive(Debug)]
pub(crate) struct Ledger {
    store: Store,
    counters: Counters,
    totals: FetchTotals,
}

impl Ledger {
    /// The ledger of `store`, with the figures its last batch wrote.
    pub fn open(store: Store) -> Result<Ledger, FrontierError> {
        let counters: Counters = store.get(Cf::Meta, META_COUNTERS)?.unwrap_or_default();
        let totals: FetchTotals = store.get(Cf::Meta, META_TOTALS)?.unwrap_or_default();
        Ok(Ledger {
            store,
            counters,
            totals,
        })
    }

    /// The database, to read (and to write what carries no figure).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The counters as of the changes applied so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The counters, to count a change the caller is about to commit.
    pub fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }

    /// The fetch figures over the crawl's life.
    pub fn totals(&self) -> &FetchTotals {
        &self.totals
    }

    /// Counts one fetch report in the totals (stored with the next batch).
    pub fn count_report(&mut self, result: &FetchResult, purpose: FetchPurpose) {
        self.totals.count(result, purpose);
    }

    /// Applies `batch` with the counters and totals (synced when `sync`); an empty
    /// batch writes nothing.
    pub fn commit(&mut self, mut batch: Batch, sync: bool) -> Result<(), FrontierError> {
        if batch.is_empty() {
            return Ok(());
        }
        batch.put(Cf::Meta, META_COUNTERS.to_vec(), &self.counters);
        batch.put(Cf::Meta, META_TOTALS.to_vec(), &self.totals);
        if sync {
            self.store.write_synced(batch)
        } else {
            self.store.write(batch)
        }
    }
}
