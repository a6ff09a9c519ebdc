//! Shared support for the integration tests in `tests/tests/`: finding the
//! `polycrawl` binary, starting processes that are killed when the test ends (even
//! on failure), a websim handle, and a small HTTP/1.1 client.
//!
//! - [`bin`]: the `polycrawl` binary ([`bin::polycrawl`]), built or rebuilt by
//!   `cargo build -p polycrawl` on first use so tests never run a stale one.
//! - [`process`]: test-support's [`process::ProcessGuard`], a child process with
//!   its stdout read line by line and its stderr kept in a file; killed (SIGKILL)
//!   and reaped on drop (re-exported: the one copy lives in `tests/support`,
//!   shared with the other crates' tests and with `polycrawl`); [`proc`], what
//!   `/proc` says of a process (its CPU time, state and start time).
//! - [`websim`]: [`websim::Websim`], a running `polycrawl websim` in a temporary
//!   directory, with its ready line parsed and readers for its output files and
//!   request log.
//! - [`http`]: [`http::Client`], one request per connection, plain or TLS (trusting
//!   only a given CA), decoding chunked and gzip bodies, with timing;
//!   [`http::pipelined_bytes`], what a paced server gives one client address.
//! - [`system`]: [`system::System`], the crawling system as separate processes
//!   (manager, resolvers, downloaders) wired to a websim, with kill -9 and restart,
//!   request-file publishing and the manager's admin port.
//! - [`requestlog`]: checks over websim's request log (URL counts, robots.txt
//!   fetches, per-origin and per-IP overlap, gaps and start spacing).
//! - [`wirelog`]: the downloaders' wire log (each request's own send and receive
//!   stamps); [`politeness`]: politeness judged on those stamps, cross-checked
//!   with websim's log, each violation named with the side that saw it.
//! - [`netns`]: [`netns::Net`], network namespaces on a bridge (one per "machine"),
//!   reaching the root namespace's 127.x (websim) and each other; removed on drop.
//!   Re-exported from the binary package (`polycrawl::orchestrate::netns`), whose
//!   `polycrawl demo --machines` makes its machines with the same harness (the
//!   tests' names start `pct`, the demo's `pcd`).
//! - [`nfsim`]: [`nfsim::Mount`], one machine's NFS-like view of a shared
//!   directory (`polycrawl nfsim`), unmounted on drop; the mount helpers it shares
//!   with the demo are `nfsim::mount`.
//! - [`spoolout`]: [`spoolout::Returned`], the pages and outcomes the system handed
//!   back in the spool.
//! - [`repository`]: [`repository::RepoScan`], the responses an application stored
//!   in its WARC repository; [`crawllog`]: an application's `crawl.log` and the
//!   repository's response records, in the same terms.
//! - [`archive`]: the outside archive readers on a crawl's WARC files (`warcio
//!   check`, `wacz validate`, pywb's replay server, [`archive::Pywb`]).
//! - [`grade`]: [`grade::Grade`], a finished demo judged on its WARC files and
//!   websim's manifest and request logs, independently of the demo's own verdict;
//!   [`applog`]: an application log's publications, for the window in which a
//!   kill of it can make it refetch a URL.
//! - [`verdict`]: what an application's summary line says of how its crawl ended
//!   (`Complete`, or `Incomplete` with cuts by rule).
//! - [`browser`]: [`browser::Browser`], a headless Chromium driven over the Chrome
//!   DevTools Protocol (load, evaluate, type, click, screenshot), for the admin page.
//!
//! Rules every test here keeps: bind and connect only on 127.0.0.0/8, bind port 0,
//! never a fixed port; every started process is owned by a guard; a started websim
//! also exits by itself when the test process dies (`--exit-with-parent`).
//!
//! This crate must never depend on the crawler's libraries for what it checks:
//! tests use it as an independent client (the binary package is a dependency for
//! the namespace harness and the mount helpers only, never for a check).

pub mod applog;
pub mod archive;
pub mod bin;
pub mod browser;
pub mod crawllog;
pub mod grade;
pub mod http;
pub use polycrawl::orchestrate::netns;
pub mod nfsim;
pub mod politeness;
pub use test_support::proc;
pub use test_support::process;
pub mod repository;
pub mod requestlog;
pub mod spoolout;
pub mod system;
pub mod verdict;
pub mod websim;
pub mod wirelog;
