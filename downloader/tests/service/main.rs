//! The downloader service end to end: `downloader::run` (and, for the crash test,
//! the real `polycrawl downloader` binary) against a test-side manager speaking the
//! real control protocol and a small web site, both on 127.0.0.1 port 0.
//!
//! - `pages`: reports, `Committed`, the WARC files (`warcio check`), robots files,
//!   failures, the address policy;
//! - `batches`: rotation by age and by size; SIGKILL mid-batch;
//! - `control`: `SetConcurrency`, `Drain`, shutdown, reconnects, refusal;
//! - `chain`: chained jobs (`After`): started one gap after the job they follow,
//!   or handed back unsent.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod batches;
mod chain;
mod control;
mod manager;
mod pages;
mod site;
