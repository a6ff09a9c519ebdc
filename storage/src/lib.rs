//! The WARC repository (DESIGN.md section 8): page batches moved in, CDXJ index,
//! revisit records for exact duplicates.
//!
//! Not built yet. Depends only on `spool`.
