//! websim, the simulated web (DESIGN.md section 9): many virtual hosts on loopback
//! addresses with their own authoritative DNS, deterministic generated pages with a
//! power-law link structure, robots.txt variants, redirects, 404s, slow, dead and
//! misbehaving hosts, https with a generated CA, a request log, and a manifest of
//! exactly what a correct crawl fetches. The crawler's tests, demos and benchmarks
//! run against it.
//!
//! Start it with `polycrawl websim --hosts 2000 --pages 100000 --seed 7` (see
//! [`cli`] for the flags and the ready line).
//!
//! # Determinism
//! Everything is a pure function of the seed, `--hosts`, `--pages` and the two ports
//! (URLs carry the port): the same flags give byte-identical pages and output files.
//! Page content is a function of (seed, host, page), computed on demand, so the web
//! is never stored: the model holds O(hosts) data only. The one generator is
//! splitmix64, written out in [`rng`], so no crate upgrade can change the output.
//!
//! # Modules
//! - [`rng`]: the generator. [`hosts`]: names, sizes, roles, addresses.
//!   [`model`]: the [`model::Web`] and every nameable URL ([`model::Target`]).
//!   [`paths`]: page paths. [`links`]: the link graph and redirect chains.
//! - [`text`], [`linkform`], [`html`]: page rendering.
//! - [`robots`]: robots.txt variants and websim's own RFC 9309 matcher.
//! - [`manifest`]: the breadth-first oracle; [`outfiles`]: the files it writes.
//! - [`reply`]: what a request is answered, before it is written; [`respond`]:
//!   routing rules; [`http`]: the server; [`misbehave`]: the
//!   misbehaving host; [`traps`]: the trap hosts (their kinds and names: [`trap_sites`]); [`log`]: the request log; [`listen`]: binding;
//!   [`pace`]: per-client pacing.
//! - [`dns`]: the authoritative DNS server; [`tls`]: the CA and rustls configs.
//! - [`diskweb`]: the disk web (`--from-repository REPO`): a stored crawl from a
//!   WARC repository served as the web, host by host.
//! - [`cli`]: flags, start-up, shutdown. [`export`]: the same web as static files
//!   and an nginx configuration (`--export-static`), for benchmarks on a server
//!   nobody here wrote.
//!
//! # Behaviours (each documented with its exact rule in its module)
//! - Hosts under `.test`/`.example` only, in registered-domain groups, Zipf sizes,
//!   some sharing an address (virtual hosting), 127.1.0.1 upwards ([`hosts`]).
//! - Per host: https (http gets a 301 to https), gzip, chunked, slow, dead (name
//!   resolves, nothing listens), loop ([`hosts`], [`http`], [`respond`]).
//! - robots.txt: none (404), 403, empty, disallow, allow-override, wildcards, agent
//!   group, crawl-delay, 503 every time, 301 to another path, disallow-all
//!   ([`robots`]).
//! - Links: 404 pages, 301/302 chains of 1-3 hops (some across hosts), the loop
//!   `/loop/a` <-> `/loop/b`, names that do not resolve (`gone{k}.invalid`,
//!   `www.nowhere{k}.test`), traps in comments, scripts, styles and textareas,
//!   nofollow pages ([`links`], [`html`]).
//! - The misbehaving host `misbehave.websim.test` for downloader tests
//!   ([`misbehave`]).
//! - With `--throttle`, the three most popular hosts answer some page requests
//!   with 429 (with and without `Retry-After`) or a burst of 503s ([`throttle`]).
//! - With `--communities N`, locality: the hosts fall into N communities of equal
//!   size and 90 % of the cross-host links a page draws stay in its host's
//!   community ([`model::Params::communities`], [`links`]). Off by default, and
//!   then every draw is what it was before the flag existed (same web, same
//!   manifest). Without it cross-host links go by global popularity, so no site
//!   assignment can cut much: on a 300-host, 6,000-page web METIS's partition
//!   sends only 1.1 times fewer URLs across 4-16 parts than the hash; with
//!   `--communities 16`, 4.8 to 6.2 times fewer (BENCHMARKS.md, "Site
//!   assignment"), the range the paper reports for real webs.
//! - With `--pace-per-client BYTES_PER_SEC`, every client address gets that share
//!   of bandwidth over all its connections (a token bucket per peer IP, [`pace`]),
//!   so that a crawl with several agents (one address each) is bound by the
//!   network, not by the cores. Off by default.
//! - With `--from-repository REPO`, no generated web at all: the stored crawl in a
//!   WARC repository is the web ([`diskweb`]), every stored response served at
//!   its URL as stored, for crawls of a web of real-crawl size that costs no CPU
//!   to generate.
//! - Revisions for recrawls: generated pages carry `ETag` and `Last-Modified` on
//!   three hosts in four, which answer conditional requests with 304; with
//!   `--revision N` a share (`--change-share`, default 0.2) of the pages differ
//!   from revision 0, and `changes.tsv` says what a recrawl gets for every
//!   manifest URL ([`revision`]).
//! - With `--traps`, six crawler traps: fresh session ids on every link, an
//!   endless year/month calendar, a 50-hop redirect chain, endless page-number
//!   sequences, endless counters and a maze of words ([`traps`]); with `--all-seeds` every host,
//!   trap or not, is a seed.
//! - With `--orphans N`, the coverage problem of a two-level crawl: sites with N
//!   pages their own root does not reach but another site's home page links, and
//!   `orphans.tsv` listing the manifest's pages only other sites reach
//!   ([`orphans`]).
//! - With `--sitemaps`, a host whose robots.txt names a sitemap index of a plain
//!   and a gzip sitemap listing pages no link reaches, a robots-excluded page and
//!   out-of-scope URLs ([`sitemaps`]).
//!
//! - With `--stuck-hosts`, five hosts no page can be fetched from, linked from
//!   the most popular host's home page: connection refused, accept and never
//!   answer, robots.txt never answered, robots.txt 500, robots.txt 503
//!   ([`stuck`]).
//!
//! - With `--robots-tags`, 6 % of the non-home pages carry robots directives of
//!   their own (`X-Robots-Tag`, meta robots), listed in `robots-tags.tsv`
//!   ([`robots_tags`]).
//!
//! # What websim must never do
//! Bind, answer or connect outside 127.0.0.0/8; name or resolve a real host (all
//! generated names are under reserved TLDs, and its DNS answers only its own
//! zone: the disk web's zone is the stored crawl's hosts, answered with loopback
//! addresses); store per-page data for the whole generated web (the disk web
//! keeps one index entry per stored URL, bodies on disk); share code with the
//! crawler's robots parser or link extractor (the manifest is an independent
//! oracle); depend on `polycrawl` or on a service crate (it sits below them: of
//! polycrawl's crates it uses `spool` only, for the outcome reasons and the WARC
//! reader).

pub mod cli;
pub mod diskweb;
pub mod dns;
pub mod export;
pub mod hosts;
pub mod html;
pub mod http;
pub mod linkform;
pub mod links;
pub mod listen;
pub mod log;
pub mod manifest;
pub mod misbehave;
pub mod model;
pub mod orphans;
pub mod outfiles;
pub mod pace;
pub mod paths;
pub mod reply;
pub mod respond;
pub mod revision;
pub mod rng;
pub mod robots;
pub mod robots_tags;
pub mod sitemaps;
pub mod stuck;
pub mod text;
pub mod throttle;
pub mod tls;
pub mod trap_sites;
pub mod traps;

pub use cli::{Args, CliError, run};
