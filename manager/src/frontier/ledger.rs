//! [`Ledger`]: the frontier's database with the figures every batch carries. Each
//! change is one RocksDB batch (WAL on), and [`Ledger::commit`] writes the counters
//! (`records::Counters`) and the fetch totals (`totals`) into that same batch, so
//! after a kill -9 they count exactly the changes that are durable.
//!
//! # Held changes
//!
//! Between [`Ledger::hold`] and [`Ledger::release`] (the service holds the changes of
//! one `FetchReports` message, about five reports on the nginx benchmark), unsynced
//! commits are gathered into one batch instead of being written one by one: one WAL
//! write and one copy of the figures for the message instead of one per report
//! (BENCHMARKS.md, issue 39). Nothing changes in what a crash can leave: a kill -9
//! in the middle of a message already left any prefix of its reports applied, and
//! now leaves none or all of them, one of those prefixes. The held batch is written
//! before anything can observe the database: every read goes through
//! [`Ledger::store`], which writes it first (so the frontier always reads its own
//! changes), as does a synced commit (which then covers it too). The caller must
//! release before it sends anything that depends on the changes (the service
//! releases at the end of the message, before any job goes out).
//!
//! This module must never decide what a change is: callers build the batch, the
//! ledger applies it. Memory: the counters (per application and per reason), the
//! totals (per status code and reason), bounded whatever the crawl's size, and the
//! held batch (the changes of one message).

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
    /// The changes held since [`Self::hold`], not written yet (`None`: not holding).
    held: Option<Held>,
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
            held: None,
        })
    }

    /// The database, to read (and to write what carries no figure), with the held
    /// changes written first, so that a read sees every change committed so far.
    pub fn store(&mut self) -> Result<&Store, FrontierError> {
        self.write_held()?;
        Ok(&self.store)
    }

    /// Holds the unsynced commits from now on until [`Self::release`] (see the
    /// module docs).
    pub fn hold(&mut self) {
        if self.held.is_none() {
            self.held = Some(Held::default());
        }
    }

    /// Writes the held changes as one batch and stops holding.
    pub fn release(&mut self) -> Result<(), FrontierError> {
        let written = self.write_held();
        self.held = None;
        written
    }

    /// Writes the held changes, if any, with the figures of the last of them; goes
    /// on holding.
    fn write_held(&mut self) -> Result<(), FrontierError> {
        let Some(held) = self.held.as_mut() else {
            return Ok(());
        };
        let mut batch = std::mem::take(&mut held.changes);
        batch.append(std::mem::take(&mut held.figures));
        self.store.write(batch)
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
    /// batch writes nothing. While holding, an unsynced batch joins the held ones,
    /// and a synced one is written after them, in the same RocksDB batch.
    pub fn commit(&mut self, batch: Batch, sync: bool) -> Result<(), FrontierError> {
        if batch.is_empty() {
            return Ok(());
        }
        let figures = self.figures();
        match self.held.as_mut() {
            Some(held) if !sync => {
                // The figures as they are now count this change and the held ones
                // (the caller counts a change before committing it), and only those:
                // a read before the next commit writes the held changes with them.
                held.changes.append(batch);
                held.figures = figures;
                Ok(())
            }
            Some(held) => {
                let mut all = std::mem::take(&mut held.changes);
                held.figures = Batch::default();
                all.append(batch);
                all.append(figures);
                self.store.write_synced(all)
            }
            None => {
                let mut batch = batch;
                batch.append(figures);
                if sync {
                    self.store.write_synced(batch)
                } else {
                    self.store.write(batch)
                }
            }
        }
    }

    /// The counters and totals as they are now, as the puts that store them.
    fn figures(&self) -> Batch {
        let mut batch = Batch::default();
        batch.put(Cf::Meta, META_COUNTERS.to_vec(), &self.counters);
        batch.put(Cf::Meta, META_TOTALS.to_vec(), &self.totals);
        batch
    }
}

/// Changes held between [`Ledger::hold`] and [`Ledger::release`].
#[derive(Debug, Default)]
struct Held {
    changes: Batch,
    /// The figures as of the last held commit (empty when nothing is held).
    figures: Batch,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(dir: &tempfile::TempDir) -> Ledger {
        Ledger::open(Store::open(&dir.path().join("db")).unwrap()).unwrap()
    }

    fn change(key: &[u8]) -> Batch {
        let mut batch = Batch::default();
        batch.put(Cf::Host, key.to_vec(), &1u64);
        batch
    }

    fn stored(ledger: &Ledger, key: &[u8]) -> Option<u64> {
        ledger.store.get(Cf::Host, key).unwrap()
    }

    fn stored_fetched(ledger: &Ledger) -> u64 {
        let counters: Counters = ledger.store.get(Cf::Meta, META_COUNTERS).unwrap().unwrap();
        counters.robots_fetched
    }

    #[test]
    fn held_commits_are_written_together_at_release() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = ledger(&dir);
        ledger.hold();
        ledger.counters_mut().robots_fetched += 1;
        ledger.commit(change(b"a"), false).unwrap();
        ledger.counters_mut().robots_fetched += 1;
        ledger.commit(change(b"b"), false).unwrap();
        assert_eq!(stored(&ledger, b"a"), None, "held, not written yet");
        ledger.release().unwrap();
        assert_eq!(stored(&ledger, b"a"), Some(1));
        assert_eq!(stored(&ledger, b"b"), Some(1));
        assert_eq!(stored_fetched(&ledger), 2);
        // Not holding any more: a commit is written at once.
        ledger.commit(change(b"c"), false).unwrap();
        assert_eq!(stored(&ledger, b"c"), Some(1));
    }

    #[test]
    fn a_read_sees_the_held_changes_with_the_figures_of_the_last_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = ledger(&dir);
        ledger.hold();
        ledger.counters_mut().robots_fetched += 1;
        ledger.commit(change(b"a"), false).unwrap();
        // A change being built counts itself before its commit; a read meanwhile
        // must not store that count with the changes held so far.
        ledger.counters_mut().robots_fetched += 1;
        let seen: Option<u64> = ledger.store().unwrap().get(Cf::Host, b"a").unwrap();
        assert_eq!(seen, Some(1), "the read sees the held change");
        assert_eq!(stored_fetched(&ledger), 1, "figures of the last commit");
        ledger.commit(change(b"b"), false).unwrap();
        assert_eq!(stored(&ledger, b"b"), None, "still holding after the read");
        ledger.release().unwrap();
        assert_eq!(stored_fetched(&ledger), 2);
    }

    #[test]
    fn a_synced_commit_while_holding_writes_the_held_changes_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = ledger(&dir);
        ledger.hold();
        ledger.commit(change(b"a"), false).unwrap();
        ledger.counters_mut().robots_fetched += 1;
        ledger.commit(change(b"b"), true).unwrap();
        assert_eq!(stored(&ledger, b"a"), Some(1));
        assert_eq!(stored(&ledger, b"b"), Some(1));
        assert_eq!(stored_fetched(&ledger), 1);
        ledger.commit(change(b"c"), false).unwrap();
        assert_eq!(stored(&ledger, b"c"), None, "still holding");
        ledger.release().unwrap();
        assert_eq!(stored(&ledger, b"c"), Some(1));
    }
}
