//! The DNS resolver service (DESIGN.md section 6) around hickory-resolver.
//!
//! Not built yet: `polycrawl resolver` says so and exits non-zero. Depends only on
//! `spool`, never on another service crate.
