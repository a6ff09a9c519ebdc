//! The WARC repository (DESIGN.md section 8): page batches are appended, unchanged,
//! to WARC files of archive size (rotated by size and age) after the application has
//! parsed them, indexed in CDXJ, and exact duplicate payloads are recorded as
//! `revisit` records. Everything it writes is WARC
//! 1.1 through `spool::warc` and passes `warcio check`.
//!
//! # Use
//!
//! ```no_run
//! # fn main() -> Result<(), storage::StorageError> {
//! use storage::{Repository, RepositoryReader, print_page};
//!
//! let mut repo = Repository::open("/data/repo")?;          // the single writer
//! # let batch = std::path::Path::new("x.warc.gz");
//! match repo.ingest(batch) {                                // appends the batch
//!     Ok(summary) => println!("{} pages, {} revisits", summary.responses, summary.revisits),
//!     Err(e) if e.is_batch_fault() => { /* quarantine the batch */ }
//!     Err(e) => return Err(e),                              // retry later
//! }
//! let reader = RepositoryReader::open("/data/repo")?;       // any process, no lock
//! print_page(&reader, "http://example.com/", &mut std::io::stdout())?;
//! # Ok(()) }
//! ```
//!
//! # Main types and modules
//!
//! - [`Repository`] (ingest, index merging) and [`RepositoryReader`] (lookups):
//!   [`repository`] has the folder layout.
//! - [`Repository::ingest`] → [`IngestSummary`]: [`ingest`] has the steps, what a
//!   crash at each leaves, and why duplicates get revisit records beside their batch
//!   rather than a rewritten batch.
//! - [`write_wacz`] → [`WaczSummary`]: the repository as one WACZ file ([`wacz`]).
//! - [`warcfile`]: the open WARC file, its rotation ([`Rotation`]) and how a torn
//!   append is cut at the durable length.
//! - [`RepositoryReader::get`] → [`StoredPage`], and [`print_page`] for
//!   `polycrawl get URL`.
//! - [`cdxj`]: the index line format; [`index`]: sorted per-batch index files,
//!   binary-search lookup, size-tiered merging, and their costs; [`surt`](mod@surt): the keys.
//! - [`catalog`]: the digest index (payload digest → first capture) and ingest
//!   journal in RocksDB, with its memory and disk per page.
//! - [`StorageError`]: one typed error; [`StorageError::is_batch_fault`] tells a
//!   batch to quarantine from a failure to retry.
//!
//! # Compression
//!
//! **Decision: compression runs once, in the downloader, as it writes each batch
//! (`spool::warc::WarcWriter`, gzip level 1, one member per record); storage only
//! renames.** Since issue 39 the response blocks are deflated by ISA-L's igzip
//! (`spool::warc`'s block deflater: gzip level 1 is igzip level 0) and whole
//! members are inflated by libdeflate; the workspace's `flate2` (back end
//! `zlib-rs`) deflates the small records and streams. BENCHMARKS.md, "An archive at
//! the peer's speed", has the figures that chose them; the table below is the
//! earlier choice between flate2's back ends, kept for its measurements.
//!
//! Why there: a batch must be `.warc.gz` in the spool anyway (DESIGN.md section 3),
//! and its gzip members can be appended to a WARC file as they are, so compressing
//! again in storage would only cost. Storage's own cost is reading the batch once to check
//! it (inflate, parse, SHA-1 per payload: ≈ 0.03 ms per 13 KB page; no SHA-1 when the
//! caller trusts the stated digests, [`Digests::Trust`], as the application does for
//! its own downloaders' batches), a kernel copy of its bytes into the open WARC file,
//! and a few fsyncs per batch; `benches/ingest.rs` measured 0.04 to 0.08 ms per page end to end
//! (12,000 to 25,000 pages/s on one core, fsyncs included, on a shared machine).
//!
//! Why zlib-rs at level 1: measured by `benches/compress.rs` on this machine (AMD
//! EPYC, 2 cores, shared with other builds; best of 5 runs, one core; 64 generated
//! 13.1 KB HTML pages, one gzip member each; figures vary ±20 % from run to run):
//!
//! | back end, level | MB/s | ms/page | ratio |
//! |---|---:|---:|---:|
//! | miniz_oxide (flate2's default) 1 | 210 | 0.064 | 2.72 |
//! | **zlib-rs 1** | **380** | **0.035** | 2.38 |
//! | miniz_oxide 2 | 144 | 0.093 | 3.07 |
//! | zlib-rs 2 | 185 | 0.073 | 3.08 |
//! | miniz_oxide 6 | 66 | 0.20 | 3.34 |
//! | zlib-rs 6 | 105 | 0.13 | 3.32 |
//! | whole WarcWriter record, workspace flate2 before (miniz_oxide) L1 | 153 | 0.087 | 2.54 |
//! | whole WarcWriter record, workspace flate2 after (zlib-rs) L1 | 274 | 0.049 | 2.24 |
//! | inflate, miniz_oxide / zlib-rs | 460 / 820 | 0.029 / 0.016 | |
//! | SHA-1 of the page | 1,900 | 0.007 | |
//!
//! (A WarcWriter record adds the WARC header and SHA-1 block digest to the deflate;
//! its ratio counts the header. zlib-ng was not measured: it needs cmake, which this
//! machine does not have. The 79 MB/s figure given for miniz_oxide level 1 was not
//! reproduced here: we measured 140 to 220 MB/s for it, with a reused compressor and
//! with a fresh `GzEncoder` per page alike.)
//!
//! zlib-rs level 1 costs ≈ 0.035 ms per page, half of miniz_oxide's level 1 and a
//! fifth of a 0.17 ms whole-page budget; its files are 14 % larger than miniz_oxide
//! level 1's (zlib-rs level 1 is the "quick" deflate strategy). Level 2 would give
//! 23 % smaller files than zlib-rs level 1 for twice the CPU (0.073 ms, still about
//! what miniz level 1 cost): the knob is `WriterOptions::gzip_level` in spool,
//! whose default (1) we keep, because compression must not dominate the per-page
//! cost while crawling. Denser archives are a job for an offline repack pass
//! (which would also drop unindexed duplicate responses), not for the crawl.
//!
//! # Dependencies
//!
//! `spool` (WARC codec, crash-safe rename), `rocksdb` (catalog), `url` (SURT),
//! `uuid` (name-based record ids), `zip` (the WACZ container: entries stored, ZIP64
//! when needed; a well-kept crate rather than our own ZIP writer) and `sha2` (its
//! SHA-256 digests), `thiserror`, `tracing`. Storage must never depend
//! on a service crate (manager, downloader, resolver, application) or on `polycrawl`.

mod batch;
pub mod catalog;
pub mod cdxj;
mod dedup;
mod error;
mod fsutil;
mod http;
pub mod index;
pub mod ingest;
mod read;
pub mod repository;
mod revisits;
pub mod surt;
pub mod wacz;
pub mod warcfile;
mod withhold;

pub use batch::Digests;
pub use batch::FetchFields;
pub use catalog::CatalogOptions;
pub use cdxj::CdxjLine;
pub use error::{RecordProblem, Result, StorageError};
pub use ingest::{CaptureFate, CaptureNote, CheckedBatch, IngestSummary, check_batch};
pub use read::{StoredPage, print_page};
pub use repository::{CrashPoint, Repository, RepositoryOptions, RepositoryReader};
pub use surt::surt;
pub use wacz::{WaczSummary, write_wacz};
pub use warcfile::Rotation;
pub use withhold::withhold;
