//! The asynchronous downloader (DESIGN.md section 5): an HTTP/1.1 client holding
//! thousands of connections that writes pages as WARC batches into the spool.
//!
//! Not built yet: `polycrawl downloader` says so and exits non-zero. Depends only on
//! `spool`, never on another service crate.
