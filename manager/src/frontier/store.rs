//! The frontier's durable state: one RocksDB database with the column families of
//! [`records`](super::records), and [`Batch`], the unit of every change.
//!
//! Every state change of the frontier is one [`Batch`] applied atomically with the WAL
//! on (not fsynced per write: a process crash loses nothing, a machine crash at most
//! the last few milliseconds, which the checkpoint/restart rules tolerate). Queues are
//! read only by seeking *exactly* to a head kept in memory, with an upper bound at the
//! next host, so the tombstones left by popped URLs are never walked.
//!
//! This module must never decide anything: it stores, reads and encodes. It holds no
//! URLs in memory beyond the one read it returns.

use std::path::Path;

use rocksdb::checkpoint::Checkpoint;
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DB, DBCompressionType, Direction,
    IteratorMode, MemtableFactory, Options, ReadOptions, WriteBatch, WriteOptions,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::FrontierError;
use super::records::{queue_key, split_queue_key};

/// A column family of the frontier's database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cf {
    /// Host queues.
    Queue,
    /// Host records.
    Host,
    /// Origin records (robots cache, dead marks).
    Origin,
    /// Outcomes not yet published.
    Outcome,
    /// Pages reported `Stored` whose batch is not committed yet.
    Awaiting,
    /// Everything else.
    Meta,
}

impl Cf {
    const ALL: [Cf; 6] = [
        Cf::Queue,
        Cf::Host,
        Cf::Origin,
        Cf::Outcome,
        Cf::Awaiting,
        Cf::Meta,
    ];

    /// Memtable size: the queues take the bulk of the writes; the small families are
    /// rewritten often (host records, counters) and need little.
    fn write_buffer_bytes(self) -> usize {
        match self {
            Cf::Queue => 64 << 20,
            Cf::Host | Cf::Origin | Cf::Outcome => 16 << 20,
            Cf::Awaiting | Cf::Meta => 4 << 20,
        }
    }

    /// Families only written while the crawl runs (read back at open, by a scan):
    /// their memtable is a vector, an append per write, sorted once when flushed,
    /// where a skip list pays a search of cache misses per write (BENCHMARKS.md,
    /// issue 39). A read of one of them sorts the memtable, so no read may be added
    /// to a running crawl's path without moving it back to a skip list.
    fn write_only(self) -> bool {
        matches!(self, Cf::Host | Cf::Awaiting)
    }

    fn name(self) -> &'static str {
        match self {
            Cf::Queue => "queue",
            Cf::Host => "host",
            Cf::Origin => "origin",
            Cf::Outcome => "outcome",
            Cf::Awaiting => "awaiting",
            Cf::Meta => "meta",
        }
    }
}

/// One operation of a [`Batch`].
#[derive(Debug)]
enum Op {
    Put(Cf, Vec<u8>, Vec<u8>),
    Delete(Cf, Vec<u8>),
    DeleteRange(Cf, Vec<u8>, Vec<u8>),
}

/// Changes applied together by [`Store::write`]. Built without borrowing the store, so
/// the frontier can fill it while it mutates its in-memory structures.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    ops: Vec<Op>,
}

impl Batch {
    /// Puts `value` (postcard) under `key`.
    pub fn put<V: Serialize>(&mut self, cf: Cf, key: impl Into<Vec<u8>>, value: &V) {
        // Encoding our own records into a Vec cannot fail: postcard only fails on
        // sequences of unknown length and full buffers, neither of which occurs here.
        let bytes = postcard::to_stdvec(value).expect("postcard encodes frontier records");
        self.ops.push(Op::Put(cf, key.into(), bytes));
    }

    /// Deletes `key`.
    pub fn delete(&mut self, cf: Cf, key: impl Into<Vec<u8>>) {
        self.ops.push(Op::Delete(cf, key.into()));
    }

    /// Deletes the keys `from..to` of `cf`.
    pub fn delete_range(&mut self, cf: Cf, from: Vec<u8>, to: Vec<u8>) {
        self.ops.push(Op::DeleteRange(cf, from, to));
    }

    /// Adds the operations of `other` after this batch's.
    pub fn append(&mut self, mut other: Batch) {
        self.ops.append(&mut other.ops);
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Operations added so far.
    pub fn len(&self) -> usize {
        self.ops.len()
    }
}

/// The frontier's RocksDB database.
pub(crate) struct Store {
    db: DB,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.db.path())
            .finish()
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store, FrontierError> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_compression_type(DBCompressionType::Lz4);
        // The vector memtables of the write-only families take one writer at a time
        // (the frontier is the only writer anyway).
        opts.set_allow_concurrent_memtable_write(false);
        // Block cache shared by all families: the "active pages" of Polybot section
        // 3.5 (each queue's head and tail block) must fit.
        let cache = Cache::new_lru_cache(64 * 1024 * 1024);
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        opts.set_block_based_table_factory(&table);
        let cfs = Cf::ALL.map(|cf| {
            let mut cf_opts = Options::default();
            cf_opts.set_compression_type(DBCompressionType::Lz4);
            cf_opts.set_block_based_table_factory(&table);
            cf_opts.set_write_buffer_size(cf.write_buffer_bytes());
            if cf.write_only() {
                cf_opts.set_memtable_factory(MemtableFactory::Vector);
            }
            ColumnFamilyDescriptor::new(cf.name(), cf_opts)
        });
        let db = DB::open_cf_descriptors(&opts, path, cfs)
            .map_err(|e| FrontierError::db(format!("open {}", path.display()), e))?;
        Ok(Store { db })
    }

    fn cf(&self, cf: Cf) -> &rocksdb::ColumnFamily {
        // Every family is created at open, so the handle always exists.
        self.db
            .cf_handle(cf.name())
            .expect("column family created at open")
    }

    /// Applies `batch` atomically (WAL on, not synced: a process crash loses nothing).
    pub fn write(&self, batch: Batch) -> Result<(), FrontierError> {
        self.write_opt(batch, false)
    }

    /// Applies `batch` and syncs the WAL first: survives a machine crash too. For the
    /// batch after which a request file is deleted from the spool.
    pub fn write_synced(&self, batch: Batch) -> Result<(), FrontierError> {
        self.write_opt(batch, true)
    }

    fn write_opt(&self, batch: Batch, sync: bool) -> Result<(), FrontierError> {
        if batch.ops.is_empty() {
            return Ok(());
        }
        let mut wb = WriteBatch::default();
        for op in batch.ops {
            match op {
                Op::Put(cf, k, v) => wb.put_cf(self.cf(cf), k, v),
                Op::Delete(cf, k) => wb.delete_cf(self.cf(cf), k),
                Op::DeleteRange(cf, from, to) => wb.delete_range_cf(self.cf(cf), from, to),
            }
        }
        let mut opts = WriteOptions::default();
        opts.set_sync(sync);
        self.db
            .write_opt(wb, &opts)
            .map_err(|e| FrontierError::db("write batch", e))
    }

    /// Reads and decodes the value of `key`.
    pub fn get<V: DeserializeOwned>(&self, cf: Cf, key: &[u8]) -> Result<Option<V>, FrontierError> {
        let what = || format!("{} key {}", cf.name(), String::from_utf8_lossy(key));
        let Some(bytes) = self
            .db
            .get_pinned_cf(self.cf(cf), key)
            .map_err(|e| FrontierError::db(format!("get {}", what()), e))?
        else {
            return Ok(None);
        };
        postcard::from_bytes(&bytes)
            .map(Some)
            .map_err(|source| FrontierError::Decode {
                what: what(),
                source,
            })
    }

    /// Up to `max` queue entries of `host` from seq `from` on, in order, decoded.
    pub fn read_queue<V: DeserializeOwned>(
        &self,
        host: u64,
        from: u64,
        max: usize,
    ) -> Result<Vec<(u64, V)>, FrontierError> {
        let mut ro = ReadOptions::default();
        ro.set_iterate_upper_bound(queue_key(host.saturating_add(1), 0).to_vec());
        let start = queue_key(host, from);
        let iter = self.db.iterator_cf_opt(
            self.cf(Cf::Queue),
            ro,
            IteratorMode::From(&start, Direction::Forward),
        );
        let mut out = Vec::with_capacity(max.min(64));
        for item in iter.take(max) {
            let (key, value) =
                item.map_err(|e| FrontierError::db(format!("read queue of host {host}"), e))?;
            let Some((_, seq)) = split_queue_key(&key) else {
                continue;
            };
            let entry = postcard::from_bytes(&value).map_err(|source| FrontierError::Decode {
                what: format!("queue entry ({host}, {seq})"),
                source,
            })?;
            out.push((seq, entry));
        }
        Ok(out)
    }

    /// Every record of `cf` in key order, decoded; `f` returns false to stop.
    pub fn scan<V: DeserializeOwned>(
        &self,
        cf: Cf,
        prefix: &[u8],
        mut f: impl FnMut(&[u8], V) -> Result<bool, FrontierError>,
    ) -> Result<(), FrontierError> {
        let iter = self
            .db
            .iterator_cf(self.cf(cf), IteratorMode::From(prefix, Direction::Forward));
        for item in iter {
            let (key, value) =
                item.map_err(|e| FrontierError::db(format!("scan {}", cf.name()), e))?;
            if !key.starts_with(prefix) {
                break;
            }
            let record = postcard::from_bytes(&value).map_err(|source| FrontierError::Decode {
                what: format!("{} key {}", cf.name(), String::from_utf8_lossy(&key)),
                source,
            })?;
            if !f(&key, record)? {
                break;
            }
        }
        Ok(())
    }

    /// The last key of `cf`, if any.
    pub fn last_key(&self, cf: Cf) -> Result<Option<Vec<u8>>, FrontierError> {
        let mut iter = self.db.iterator_cf(self.cf(cf), IteratorMode::End);
        match iter.next() {
            None => Ok(None),
            Some(Ok((key, _))) => Ok(Some(key.to_vec())),
            Some(Err(e)) => Err(FrontierError::db(format!("last key of {}", cf.name()), e)),
        }
    }

    /// A hard-linked snapshot of the database in `dir` (which must not exist), that
    /// [`Store::open`] can open.
    pub fn checkpoint(&self, dir: &Path) -> Result<(), FrontierError> {
        let err = |source| FrontierError::Checkpoint {
            dir: dir.to_owned(),
            source,
        };
        Checkpoint::new(&self.db)
            .map_err(err)?
            .create_checkpoint(dir)
            .map_err(err)
    }
}
