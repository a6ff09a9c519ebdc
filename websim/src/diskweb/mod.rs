//! The disk web (`polycrawl websim --from-repository REPO`): a stored crawl served
//! as the web, host by host, as the full-coverage paper's DiskWWW replays a crawl
//! so that crawlers can be measured where the network, not the machine, is the
//! bound (with `--pace-per-client`, every client address gets a fixed rate).
//!
//! - [`index`]: [`DiskWeb::load`] reads the repository's WARC files once and
//!   keeps, per stored URL, where its response record is (memory O(stored URLs),
//!   bodies stay on disk); which record serves a URL.
//! - [`serve`]: the HTTP rules: every stored response at its URL as stored
//!   (status, headers, body; redirects and 404s too), robots.txt as stored (404
//!   where none was), websim's own 400/404/405/421 otherwise.
//! - [`outfiles`]: seeds (the stored crawl's), manifest (the stored URLs), hosts,
//!   in the generated web's formats.
//! - [`start`]: start-up: DNS for every stored host (websim's addresses, one host
//!   per address), http and https listeners on every (scheme, port) the stored
//!   URLs name (URLs carry ports: a port in use is an error naming it), a fresh
//!   CA for the https hosts, the request log, the ready line.
//!
//! What it must never do: write to the repository, serve outside 127.0.0.0/8, or
//! answer a URL with anything but what was stored for it (or a 404).

pub mod index;
pub mod outfiles;
pub mod serve;
pub mod start;

pub use index::{DiskHost, DiskWeb, LoadError, Stored};
pub use start::serve_repository;
