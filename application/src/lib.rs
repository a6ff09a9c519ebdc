//! The breadth-first crawling application (DESIGN.md section 7): link extraction,
//! canonicalization, the on-disk URL-seen set, the k-way unshuffle and request files.
//!
//! Not built yet: `polycrawl app` says so and exits non-zero. Depends only on `spool`
//! (and `storage`), never on the crawling system's crates.
