//! The breadth-first crawling application (DESIGN.md section 7).
//!
//! Built so far, the per-page part:
//!
//! - [`extract`]: the followable links of an HTML page ([`extract::Extractor`], a
//!   `memchr` scanner that follows the HTML Standard's tokenizer; its module docs
//!   give the measurements that chose it over regex and `lol_html`);
//! - [`canon`]: URL canonicalization with the `url` crate ([`canon::canonicalize`])
//!   and the host-reversed sort keys ([`canon::key`]);
//! - [`links`]: the two together, as the application and `polycrawl links` run them.
//! - [`seen`]: the exact URL-seen set ([`seen::SeenSet`]), a sorted buffer merged
//!   into a prefix-compressed file by a background thread (Polybot section 3.2).
//!
//! - [`sitemap`]: the URLs of a sitemap or sitemap index (sitemaps.org, plain or
//!   gzip), within the protocol's bounds; the crawl follows them like links.
//!
//! - [`service`]: the app service, `polycrawl app` ([`service::run`],
//!   [`AppConfig`]): claims page batches, scope and trap rules, the k-way unshuffle
//!   and request files, storage hand-off, completion tracking; its module docs give
//!   the crash-safety argument.
//!
//! - [`seeds`]: the second application on this library, `polycrawl app --strategy
//!   seed-by-seed` ([`seeds::run`]): SCrawler's parties, workers with m seed
//!   contexts, the URL distributor or free competition, the candidate-seed file.
//!
//! - [`parts`]: which of K application parts owns a host ([`parts::Ownership`]):
//!   an assignment file's table, else a stable hash of the host.
//!
//! - [`assign`]: `polycrawl assign`: the host graph of a finished crawl, partitioned
//!   with METIS into an assignment file, and the evaluator of any ownership rule
//!   (cut URLs per page, balance) against it.
//!
//! - [`coordinator`]: the coordinator of a two-level crawl (FC2L-UDC),
//!   `polycrawl coordinator`: the site-level seen set, the run-time assignment of
//!   new sites to agents, published through the spool.
//!
//! Depends only on `spool` and `storage`, never on the crawling system's
//! crates (manager, downloader, resolver).

#[cfg(feature = "service")]
pub mod assign;
pub mod canon;
pub mod coordinator;
pub mod extract;
#[cfg(feature = "service")]
pub mod links;
pub mod parts;
#[cfg(feature = "service")]
pub mod seeds;
pub mod seen;
#[cfg(feature = "service")]
pub mod service;
pub mod sitemap;

#[cfg(feature = "service")]
pub use links::links_for_file;
#[cfg(feature = "service")]
pub use service::AppConfig;
