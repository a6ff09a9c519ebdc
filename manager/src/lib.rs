//! The crawl manager (DESIGN.md section 4): per-host FIFO queues, ready and waiting
//! queues of hosts, lazily loaded request files, robots.txt, DNS cache, politeness,
//! blacklist, speed control, checkpoints and the admin page.
//!
//! Not built yet: `polycrawl manager` says so and exits non-zero. Depends only on
//! `spool`, never on another service crate.

pub mod robots;
