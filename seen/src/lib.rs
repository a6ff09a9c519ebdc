//! The application's exact URL-seen set (Polybot section 3.2, DRUM-style batches).
//!
//! Keys are opaque byte strings, compared bytewise; the application inserts
//! host-reversed canonical URLs (the page libraries' `canon::key`) so a site's URLs sort, and
//! compress, together. The set is exact: no false positives, no false negatives.
//!
//! # How it works
//!
//! [`SeenSet::insert`] appends the key and a small opaque payload (depth, referring
//! page, ...) to an in-memory buffer: one byte arena plus an 8-byte entry per insert,
//! no per-key allocation. When the buffer reaches [`SeenConfig::buffer_bytes`] it is
//! handed to the merge thread and a fresh buffer takes the next inserts. The merge
//! thread sorts the buffer (`sort_unstable` on the entries; repeats dropped, the
//! first insertion's payload kept) and merges it into the newest set file with one
//! sequential scan-and-copy: it reads the old file, writes the next generation's
//! file, and every buffer key not found in the old file goes, with its payload, into
//! a [`NewBatch`]: *the URLs found new in a merge are the ones requested*. Batches
//! come back in generation order through [`SeenSet::try_recv_new`] /
//! [`SeenSet::recv_new`]; every key is reported new exactly once over the life of
//! the set. There is no single-key lookup: the crawl path is batched only.
//!
//! **Back-pressure.** Parsing never waits for a merge: while one runs, inserts fill
//! the second buffer. Only if that buffer is full too while the merge still runs
//! does `insert` block until the merge completes (the hand-off is a rendezvous
//! channel), so at most two buffers exist. Time spent blocked is in
//! [`SeenStats::blocked`].
//!
//! **Memory** is bounded by the buffer size, never by the crawl: the filling buffer
//! plus the one being merged (each at most `buffer_bytes` plus one insert), plus,
//! during a merge, its new keys (a fraction of one buffer: one copy of each new key
//! and payload plus 8 bytes), 2 MiB of file I/O buffers and a restart list of 8
//! bytes per 64 keys on disk; plus the batches the caller has not taken yet, which it
//! must drain. With 256 MiB buffers the benchmark peaks at 679 MiB.
//!
//! # Complexity
//!
//! A merge costs O(file + buffer) sequential I/O and CPU, and the sort
//! O(b log b) comparisons for a buffer of b inserts. No random disk access, ever; a
//! crawl that inserts N keys with buffers of b keys does N/b merges over files of at
//! most N keys, O(N²/b) in all (Polybot's trade: merges grow with the file, so a
//! bigger buffer means fewer of them).
//!
//! Measured by `benches/seen.rs` (2 shared cores, AMD EPYC, 256 MiB buffers):
//! 100 million inserts of synthetic host-reversed URL keys (mean 67 bytes, 1 million
//! power-law hosts, half of the inserts repeats) with a 12-byte payload take 132 s
//! (0.76 million inserts/s; the merge thread is the bottleneck: 33 merges, 128 s,
//! of which 51 s sorting), peak RSS 679 MiB, and leave 50 million keys in a
//! 1.4 GiB file: **29 bytes per URL** on disk after prefix compression (0.125 of
//! them for the restart index). A file reads and checks at about 1.9 GB/s.
//!
//! Sorting at hand-off was chosen by measurement on one 256 MiB buffer (3.1 million
//! inserts): arena + `sort_unstable` costs the inserting thread 0.09 s and the merge
//! thread about 1 s; a `BTreeMap` kept sorted on every insert costs the inserting
//! thread 3.5 s. Caching each key's first 8 bytes in the entry, or an MSD radix sort
//! on 8-byte digits, gained 0 to 25% in noisy runs (reversed hosts share their first
//! bytes; the cost is cache misses into the arena), not worth the bigger entries.
//!
//! # On disk
//!
//! The folder holds one file per generation (`seen-000000000042.pcs`; the format is
//! in [`format`](mod@format)): a 32-byte header (magic, version, restart interval, generation,
//! count), the keys in order with front coding (shared-prefix length varint, suffix
//! length varint, suffix bytes), a key stored whole every
//! [`SeenConfig::restart_interval`] keys (default 64) and listed in a restart index so
//! the file can be checked or searched, and a 32-byte footer (index offset, count,
//! generation, CRC-32 of everything before it, end marker). A merge writes
//! `seen-<g>.pcs.tmp`, fsyncs it, renames it to `seen-<g>.pcs` and fsyncs the
//! folder (`spool::publish::durable_rename`). Every read checks order and encoding,
//! and a merge checks the whole old file's CRC before publishing the new one: a
//! damaged file is a [`SeenError::Corrupt`] naming what is wrong ([`Corruption`]).
//! [`reader::verify`] checks a file on its own.
//!
//! # Crash safety: what the caller must persist
//!
//! After a crash the set is a completed generation: [`SeenSet::open`] deletes
//! leftover temp files and opens the newest file. A generation's file is written
//! before its batch is delivered, so keys of a batch that was delivered but not yet
//! published as request files would be "seen" and never requested. Hence:
//!
//! 1. the caller keeps its inputs (page batches) until their keys are published:
//!    after inserting all of an input's links it records
//!    [`SeenSet::pending_generation`] with it; the input is done once the batch of
//!    that generation has been published;
//! 2. after publishing batch `g` (request files fsynced and renamed), it durably
//!    records `g` as its last published generation and calls [`SeenSet::release`]
//!    `(g)`, which deletes the files of older generations (until then they are kept);
//! 3. on restart it calls [`SeenSet::open_at`]`(dir, g)` with that last published
//!    generation (newer files are deleted) and re-inserts the keys of every input not
//!    done. Keys merged after `g` are then found new again, and keys of `g` and
//!    before stay seen: nothing is lost, and nothing published is requested again,
//!    except what a batch after `g` had published in part before the crash (name
//!    request files by generation so that republishing replaces them).
//!
//! Dropping a `SeenSet` is like a crash (the merge in progress is abandoned, buffered
//! keys are dropped); [`SeenSet::close`] merges everything first. One `SeenSet` per
//! folder at a time (one per application part).
//!
//! # Layout
//!
//! `set.rs` the caller's side, `stats.rs` its counters; `buffer.rs` the arena; `merge.rs` the merge thread;
//! `handoff.rs` the caller's end of that thread;
//! `batch.rs` [`NewBatch`]; `format.rs`, `writer.rs`, `reader.rs` the file;
//! `files.rs` the folder; `config.rs`, `error.rs`.

mod batch;
mod buffer;
mod config;
mod error;
mod files;
pub mod format;
mod handoff;
mod merge;
pub mod reader;
mod set;
mod stats;
mod writer;

pub use batch::NewBatch;
pub use config::{DEFAULT_BUFFER_BYTES, DEFAULT_RESTART_INTERVAL, MAX_BUFFER_BYTES, SeenConfig};
pub use error::{Corruption, SeenError};
pub use format::MAX_KEY_LEN;
pub use set::{MAX_PAYLOAD_LEN, SeenSet};
pub use stats::SeenStats;
