//! The page libraries every application uses (DESIGN.md section 7):
//!
//! - [`extract`]: the followable links of an HTML page ([`extract::Extractor`], a
//!   `memchr` scanner that follows the HTML Standard's tokenizer; its module docs
//!   give the measurements that chose it over regex and `lol_html`);
//! - [`canon`]: URL canonicalization with the `url` crate ([`canon::canonicalize`])
//!   and the host-reversed sort keys ([`canon::key`]);
//! - [`links`]: the two together, as the applications and `polycrawl links` run
//!   them, and (feature `batches`) the reader of stored page batches;
//! - [`directives`]: the robots directives a page carries itself (`X-Robots-Tag`,
//!   `<meta name=robots>`), per user agent;
//! - [`sitemap`]: the URLs of a sitemap or sitemap index (sitemaps.org, plain or
//!   gzip), within the protocol's bounds; the crawl follows them like links.
//!
//! Libraries: each takes what it needs as arguments and never holds an
//! application's config or state. Depends only on `spool` and, for the batch
//! reader, `storage`.

pub mod canon;
pub mod directives;
pub mod extract;
pub mod links;
pub mod sitemap;

pub use links::links_for_file;
