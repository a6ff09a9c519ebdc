//! The web itself: hosts, addresses, and every URL websim can name ([`Target`]).
//!
//! A [`Web`] is built from [`Params`] and holds only per-host data: the hosts, the
//! distinct addresses, a name index, the popularity table used to pick link
//! targets and the ring that links every home page to the next two. That is O(H)
//! memory; pages and links are computed on demand from (seed, host, page) in
//! [`super::links`] and rendered in [`super::html`], so the web is never stored.
//!
//! [`Target`] is the one name for everything a URL can point at. The map from a
//! target to its canonical URL ([`Web::url`]) is injective: different targets have
//! different URLs, which the manifest relies on. URLs carry the port unless it is
//! the scheme's default (80/443); host names are lower-case; non-ASCII path bytes
//! are percent-encoded with upper-case hex; no fragment, as the `url` crate prints
//! them.
//!
//! This module never resolves, binds or connects; it is pure computation.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;

use super::hosts::{self, Host};
use super::paths::{self, Shape};
use super::rng::Rng;

/// What a web is generated from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// The seed: same seed and params, same web.
    pub seed: u64,
    /// Generated hosts (the misbehaving host comes on top).
    pub hosts: u32,
    /// Pages over all generated hosts.
    pub pages: u32,
    /// Zipf exponent of host sizes (1: the web's usual skew; 0: equal sizes).
    pub size_skew: f64,
    /// Only well-behaved hosts, as a static web server serves them: no dead or
    /// slow host, no robots.txt that answers 5xx or asks for a crawl delay (see
    /// `hosts`). For throughput benchmarks against other crawlers.
    pub plain: bool,
    /// A plain web that every mainstream crawler reads alike (`--simple`): plain
    /// link spellings and elements ([`super::html`], [`super::linkform`]), robots.txt
    /// of `Disallow` prefixes only, no redirect loops. Requires `plain`.
    pub simple: bool,
    /// Add the trap hosts of [`super::traps`] (never in a plain web).
    pub traps: bool,
    /// Port of every http listener (URLs omit it when it is 80).
    pub http_port: u16,
    /// Port of every https listener (URLs omit it when it is 443).
    pub https_port: u16,
    /// Host communities (`--communities`; 0, the default, for none): with `C > 0`
    /// the generated hosts are dealt into C communities of equal size, and
    /// [`COMMUNITY_LOCAL_PER_MILLE`] of the cross-host links a page draws (popular
    /// picks, http-to-https upgrades, redirect hops and ends) stay in the linking
    /// host's community; the home-page ring visits each community's hosts in a row.
    /// With 0 every draw is exactly as before the option existed.
    pub communities: u32,
    /// Every host on an address of its own (`--own-addresses`): no
    /// virtual-hosting groups, so per-IP politeness binds no tighter than
    /// per-host politeness and the politeness bound is hosts / interval. Only
    /// the addresses change: pages, links and robots.txt are the same web.
    pub own_addresses: bool,
    /// Every host's home page is a seed (`--all-seeds`), the trap hosts' too (not
    /// the misbehaving host's), as an open-web crawl is seeded from a list of
    /// sites nobody vetted. Without it the seeds are the most popular hosts.
    pub all_seeds: bool,
    /// Only the `N` most popular generated hosts' home pages are seeds
    /// (`--seed-hosts N`; 0, the default: max(3, hosts/20)): a web whose other
    /// sites a crawl finds only through links from pages (every host is on the
    /// home-page ring, so every one is reachable from any seed). Ignored with
    /// `all_seeds`.
    pub seed_hosts: u32,
    /// Add the sitemap host of [`super::sitemaps`] (`--sitemaps`; never in a plain
    /// web).
    pub sitemaps: bool,
    /// Locally disconnected components per generated host (`--components K`; 0,
    /// the default, and 1 for none). With `K > 1` page `i` of a host belongs to
    /// component `i mod K` (a host with fewer pages has fewer), each component is
    /// its own tree, the same-host links a page draws stay in its component (other
    /// hosts' pages and off-origin URLs are still linked), and every component's
    /// root (page `c < K`) is a seed of each seed host. See [`super::links`].
    pub components: u32,
    /// Seeds per component (`--component-seeds N`, with `--components`): its
    /// pages at local index `0..N` (root first); 1, the default: the root only.
    pub component_seeds: u32,
    /// Add the five stuck hosts of [`super::stuck`] (`--stuck-hosts`; never in a
    /// plain web), linked from the most popular host's home page.
    pub stuck_hosts: bool,
    /// Pages with robots directives of their own (`--robots-tags`, see
    /// [`super::robots_tags`]; never in a plain web).
    pub robots_tags: bool,
    /// Hub pages (`--hubs`): half of a page's same-host filler links go to one
    /// of [`super::links::HUBS`] pages of its host (or component) at fixed random
    /// places, mostly deep in its tree, the first hubs linked most: in-links
    /// skewed to pages a breadth-first crawl reaches late (see [`super::links`]).
    pub hubs: bool,
}

impl Params {
    /// A web of `hosts` hosts and `pages` pages from `seed`, with the usual skew
    /// (1.0), listeners on 8080 and 8443, and none of the optional hosts or
    /// shapes: what a test or a bench starts from and changes a field or two of.
    pub fn new(seed: u64, hosts: u32, pages: u32) -> Params {
        Params {
            seed,
            hosts,
            pages,
            size_skew: 1.0,
            plain: false,
            simple: false,
            traps: false,
            http_port: 8080,
            https_port: 8443,
            communities: 0,
            own_addresses: false,
            all_seeds: false,
            seed_hosts: 0,
            sitemaps: false,
            components: 0,
            component_seeds: 1,
            stuck_hosts: false,
            robots_tags: false,
            hubs: false,
        }
    }
}

/// With communities, the share (per mille) of cross-host link draws that pick a
/// host of the linking host's own community; the rest pick among all hosts.
pub const COMMUNITY_LOCAL_PER_MILLE: u64 = 900;

/// One community's hosts and their popularity table (see [`Params::communities`]).
#[derive(Debug, Clone, Default)]
struct Community {
    /// Its hosts by global popularity rank.
    by_rank: Vec<u32>,
    /// Cumulative Zipf weights over `by_rank`.
    cdf: Vec<f64>,
    /// Its https hosts.
    https: Vec<u32>,
}

/// Everything a URL on the simulated web can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// Page `page` of host `host`: 200.
    Page {
        /// Host index.
        host: u32,
        /// Page number (0 = `/`).
        page: u32,
    },
    /// `/missing/p{key}.html`: 404.
    Missing {
        /// Host index.
        host: u32,
        /// Which missing page.
        key: u32,
    },
    /// Hop `step` of redirect chain `key` starting at host `origin`:
    /// `/r/{origin}/{key}/{step}` on the hop's host (see [`Web::chain`]).
    Redirect {
        /// Host where the chain starts.
        origin: u32,
        /// Which chain.
        key: u32,
        /// Hop number, 0-based.
        step: u8,
    },
    /// `/loop/a` (`b == false`) or `/loop/b` on a loop host: 302 to the other.
    Loop {
        /// Host index.
        host: u32,
        /// Which end.
        b: bool,
    },
    /// The `http://` URL of a page of an https host: 301 to the https URL.
    Upgrade {
        /// Host index (an https host).
        host: u32,
        /// Page number.
        page: u32,
    },
    /// `http://gone{key}.invalid/` or `http://www.nowhere{key}.test/`: NXDOMAIN.
    Nx {
        /// Which name.
        key: u32,
    },
    /// `/trap/{kind}{key}.html`: only ever linked where a link must not be
    /// followed (comments, scripts, styles, textareas).
    Trap {
        /// Host index.
        host: u32,
        /// `c` comment, `s` script, `y` style, `t` textarea.
        kind: u8,
        /// Which trap.
        key: u32,
    },
    /// `/hidden/h{key}.html`: only linked from nofollow page `key`.
    Hidden {
        /// Host index.
        host: u32,
        /// The nofollow page linking it.
        key: u32,
    },
    /// Real page `page` of trap host `host` (see [`super::traps`]).
    TrapSite {
        /// Host index (a trap host).
        host: u32,
        /// Real page number (0 = `/`).
        page: u32,
    },
    /// `/static/site.css` (key 0) or `/static/img{key}.png`: not links.
    Static {
        /// Host index.
        host: u32,
        /// Which file.
        key: u32,
    },
    /// A URL of the sitemap host (see [`super::sitemaps`]: home page, sitemaps,
    /// pages only sitemaps list).
    Sitemaps {
        /// Host index (the sitemap host).
        host: u32,
        /// Which URL ([`super::sitemaps::HOME`] ...).
        key: u32,
    },
}

/// A generated web (see the module docs).
#[derive(Debug, Clone)]
pub struct Web {
    /// What it was generated from.
    pub params: Params,
    /// Generated hosts, then the misbehaving host (last).
    pub hosts: Vec<Host>,
    /// Every distinct address, by `Host::addr_index`.
    pub addrs: Vec<Ipv4Addr>,
    by_name: HashMap<String, u32>,
    /// Host indices by popularity rank.
    by_rank: Vec<u32>,
    /// Cumulative Zipf weights over ranks (for picking link targets).
    cdf: Vec<f64>,
    /// Indices of the https hosts.
    https_hosts: Vec<u32>,
    /// `ring[h]`: the host whose home page follows h's in the ring.
    ring: Vec<u32>,
    /// `community[h]` of each generated host (empty without communities).
    community: Vec<u32>,
    /// The communities (empty without).
    communities: Vec<Community>,
    /// Orphan pages per site (`--orphans N`; 0 for none): see [`super::orphans`].
    orphans: u32,
}

impl Web {
    /// Generates the web for `params` (O(H)); panics if `params` is invalid, which
    /// the CLI checks first (`hosts >= MIN_HOSTS`, `pages >= hosts`).
    pub fn new(params: Params) -> Web {
        assert!(params.hosts >= hosts::MIN_HOSTS && params.pages >= params.hosts);
        let mut hosts = hosts::generate(
            params.seed,
            params.hosts,
            params.pages,
            params.size_skew,
            params.plain,
            params.traps && !params.plain,
            params.sitemaps && !params.plain,
        );
        if params.stuck_hosts && !params.plain {
            hosts::add_stuck(&mut hosts);
        }
        if params.simple {
            hosts::simplify(&mut hosts);
        }
        if params.seed_hosts > 0 && !params.all_seeds {
            let generated = params.hosts as usize;
            for h in &mut hosts[..generated] {
                h.seed = h.rank < params.seed_hosts;
            }
        }
        if params.all_seeds {
            for h in hosts
                .iter_mut()
                .filter(|h| !h.misbehave && h.stuck.is_none())
            {
                h.seed = true;
            }
        }
        if params.own_addresses {
            hosts::one_address_each(&mut hosts);
        }
        let n_addrs = hosts.iter().map(|h| h.addr_index + 1).max().unwrap_or(0);
        let mut addrs = vec![Ipv4Addr::UNSPECIFIED; n_addrs as usize];
        for h in &hosts {
            addrs[h.addr_index as usize] = h.addr;
        }
        let by_name = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| (h.name.clone(), i as u32))
            .collect();
        let generated = params.hosts as usize;
        let mut by_rank = vec![0u32; generated];
        for (i, h) in hosts[..generated].iter().enumerate() {
            by_rank[h.rank as usize] = i as u32;
        }
        let mut acc = 0.0;
        let cdf = (0..generated)
            .map(|r| {
                acc += 1.0 / (r as f64 + 1.0);
                acc
            })
            .collect();
        let https_hosts = (0..generated as u32)
            .filter(|&i| hosts[i as usize].https)
            .collect();
        let mut cycle: Vec<u32> = (0..generated as u32).collect();
        Rng::for_parts(&[params.seed, 0x7269_6e67]).shuffle(&mut cycle);
        let (community, communities) = make_communities(&params, &hosts[..generated]);
        if !community.is_empty() {
            // Each community's hosts in a row: the ring crosses communities C times.
            cycle.sort_by_key(|h| community[*h as usize]);
        }
        let mut ring = vec![0u32; generated];
        for k in 0..generated {
            ring[cycle[k] as usize] = cycle[(k + 1) % generated];
        }
        Web {
            params,
            hosts,
            addrs,
            by_name,
            by_rank,
            cdf,
            https_hosts,
            ring,
            community,
            communities,
            orphans: 0,
        }
    }

    /// The same web with `n` orphan pages on every site big enough (`--orphans`,
    /// see [`super::orphans`]); 0 leaves it unchanged.
    pub fn with_orphans(mut self, n: u32) -> Web {
        self.orphans = n;
        self
    }

    /// Orphan pages per site (`--orphans`; 0 for none).
    pub fn orphans(&self) -> u32 {
        self.orphans
    }

    /// The community of generated host `h` (`None` without communities).
    pub fn community_of(&self, h: u32) -> Option<u32> {
        self.community.get(h as usize).copied()
    }

    /// A generated host for a cross-host link from `from`: [`Self::pick_popular`]
    /// without communities (the same draws); with them, by popularity within
    /// `from`'s community [`COMMUNITY_LOCAL_PER_MILLE`] of the time.
    pub fn pick_linked(&self, from: u32, r: &mut Rng) -> u32 {
        match self.local_community(from, r) {
            Some(c) => pick_zipf(&c.by_rank, &c.cdf, r),
            None => self.pick_popular(r),
        }
    }

    /// An https host for an upgrade link from `from`: [`Self::pick_https`] without
    /// communities; with them, one of `from`'s community most of the time.
    pub fn pick_https_linked(&self, from: u32, r: &mut Rng) -> u32 {
        match self.local_community(from, r) {
            Some(c) if !c.https.is_empty() => c.https[r.below(c.https.len() as u64) as usize],
            _ => self.pick_https(r),
        }
    }

    /// `from`'s community when this draw stays local (no draw without communities).
    fn local_community(&self, from: u32, r: &mut Rng) -> Option<&Community> {
        let c = *self.community.get(from as usize)?;
        if r.chance(COMMUNITY_LOCAL_PER_MILLE) {
            self.communities.get(c as usize)
        } else {
            None
        }
    }

    /// Number of generated hosts (the misbehaving host has index `generated()`).
    pub fn generated(&self) -> u32 {
        self.params.hosts
    }

    /// The host called `name` (lower-case, no port), if websim serves it.
    pub fn host_by_name(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The host whose home page h's home page links to (and the one after).
    pub fn ring_next(&self, h: u32) -> u32 {
        self.ring[h as usize]
    }

    /// A generated host drawn by popularity (Zipf over ranks).
    pub fn pick_popular(&self, r: &mut Rng) -> u32 {
        pick_zipf(&self.by_rank, &self.cdf, r)
    }

    /// A random https host.
    pub fn pick_https(&self, r: &mut Rng) -> u32 {
        self.https_hosts[r.below(self.https_hosts.len() as u64) as usize]
    }

    /// True if a correct crawl can fetch pages from `h` at all (it resolves,
    /// connects, answers, and robots.txt is not 5xx).
    pub fn reachable(&self, h: u32) -> bool {
        let host = &self.hosts[h as usize];
        !host.dead && !host.misbehave && !host.robots.is_server_error() && host.stuck.is_none()
    }

    /// The locally disconnected components of generated host `h`: 1 without
    /// `--components`, else K or its page count if smaller.
    pub fn components_of(&self, h: u32) -> u32 {
        let pages = self.hosts.get(h as usize).map_or(1, |x| x.pages);
        self.params.components.clamp(1, pages.max(1))
    }

    /// The path shape of page `page` of host `h`.
    pub fn shape(&self, h: u32, page: u32) -> Shape {
        paths::shape(self.params.seed, h, page, self.hosts[h as usize].pages)
    }

    /// Scheme and port of host `h`'s canonical URLs.
    pub fn scheme_port(&self, h: u32) -> (&'static str, u16) {
        if self.hosts[h as usize].https {
            ("https", self.params.https_port)
        } else {
            ("http", self.params.http_port)
        }
    }

    /// The host a target lives on (`None` for NXDOMAIN names).
    pub fn target_host(&self, t: &Target) -> Option<u32> {
        match *t {
            Target::Page { host, .. }
            | Target::Missing { host, .. }
            | Target::Loop { host, .. }
            | Target::Upgrade { host, .. }
            | Target::Trap { host, .. }
            | Target::Hidden { host, .. }
            | Target::Static { host, .. }
            | Target::Sitemaps { host, .. }
            | Target::TrapSite { host, .. } => Some(host),
            Target::Redirect { origin, key, step } => {
                Some(self.chain(origin, key).hops[step as usize])
            }
            Target::Nx { .. } => None,
        }
    }

    /// Appends `scheme://host[:port]` of a target (host lower-case).
    pub fn write_origin(&self, out: &mut String, t: &Target) {
        let (scheme, port, name): (&str, u16, &str) = match (*t, self.target_host(t)) {
            (Target::Nx { key }, _) => {
                let _ = if key % 2 == 0 {
                    write!(out, "http://gone{key}.invalid")
                } else {
                    write!(out, "http://www.nowhere{key}.test")
                };
                write_port(out, "http", self.params.http_port);
                return;
            }
            (Target::Upgrade { host, .. }, _) => (
                "http",
                self.params.http_port,
                &self.hosts[host as usize].name,
            ),
            (_, Some(h)) => {
                let (s, p) = self.scheme_port(h);
                (s, p, &self.hosts[h as usize].name)
            }
            (_, None) => unreachable!("only Nx has no host"),
        };
        out.push_str(scheme);
        out.push_str("://");
        out.push_str(name);
        write_port(out, scheme, port);
    }

    /// Appends a target's path and query: `canonical` percent-encodes non-ASCII,
    /// otherwise it is written raw (UTF-8) as in hrefs.
    pub fn write_path(&self, out: &mut String, t: &Target, canonical: bool) {
        let _ = match *t {
            Target::Page { host, page } | Target::Upgrade { host, page } => {
                paths::write_path(out, self.shape(host, page), page, canonical);
                Ok(())
            }
            Target::Missing { key, .. } => write!(out, "/missing/p{key}.html"),
            Target::Redirect { origin, key, step } => write!(out, "/r/{origin}/{key}/{step}"),
            Target::Loop { b, .. } => write!(out, "/loop/{}", if b { "b" } else { "a" }),
            Target::Nx { .. } => write!(out, "/"),
            Target::Trap { kind, key, .. } => write!(out, "/trap/{}{key}.html", kind as char),
            Target::Hidden { key, .. } => write!(out, "/hidden/h{key}.html"),
            Target::TrapSite { page, .. } => {
                super::trap_sites::write_real_path(out, page);
                Ok(())
            }
            Target::Static { key: 0, .. } => write!(out, "/static/site.css"),
            Target::Static { key, .. } => write!(out, "/static/img{key}.png"),
            Target::Sitemaps { key, .. } => {
                super::sitemaps::write_path(out, key);
                Ok(())
            }
        };
    }

    /// The canonical URL of a target.
    pub fn url(&self, t: &Target) -> String {
        let mut s = String::with_capacity(64);
        self.write_origin(&mut s, t);
        self.write_path(&mut s, t, true);
        s
    }

    /// The canonical `https://` or `http://` URL of `path` (canonical) on host `h`.
    pub fn host_url(&self, h: u32, path: &str) -> String {
        let (scheme, port) = self.scheme_port(h);
        let mut s = format!("{scheme}://{}", self.hosts[h as usize].name);
        write_port(&mut s, scheme, port);
        s.push_str(path);
        s
    }
}

/// A host of `by_rank` drawn by the cumulative weights `cdf` (one draw).
fn pick_zipf(by_rank: &[u32], cdf: &[f64], r: &mut Rng) -> u32 {
    let total = *cdf.last().unwrap_or(&1.0);
    let x = r.unit() * total;
    let rank = cdf
        .partition_point(|&c| c <= x)
        .min(by_rank.len().saturating_sub(1));
    by_rank[rank]
}

/// The community of each generated host and the communities (both empty with
/// `params.communities == 0`): hosts dealt round-robin in a seeded order, so every
/// community gets `H / C` hosts (±1) of mixed popularity.
fn make_communities(params: &Params, hosts: &[Host]) -> (Vec<u32>, Vec<Community>) {
    let c = params.communities.min(hosts.len() as u32);
    if c == 0 {
        return (Vec::new(), Vec::new());
    }
    let mut order: Vec<u32> = (0..hosts.len() as u32).collect();
    Rng::for_parts(&[params.seed, 0x636f_6d6d]).shuffle(&mut order);
    let mut community = vec![0u32; hosts.len()];
    for (i, h) in order.iter().enumerate() {
        community[*h as usize] = i as u32 % c;
    }
    let mut communities = vec![Community::default(); c as usize];
    let mut by_rank: Vec<u32> = (0..hosts.len() as u32).collect();
    by_rank.sort_by_key(|h| hosts[*h as usize].rank);
    for h in by_rank {
        let com = &mut communities[community[h as usize] as usize];
        let acc = com.cdf.last().copied().unwrap_or(0.0);
        com.cdf.push(acc + 1.0 / (com.by_rank.len() as f64 + 1.0));
        com.by_rank.push(h);
        if hosts[h as usize].https {
            com.https.push(h);
        }
    }
    (community, communities)
}

/// Appends `:port` unless it is the scheme's default.
pub fn write_port(out: &mut String, scheme: &str, port: u16) {
    let default = if scheme == "https" { 443 } else { 80 };
    if port != default {
        let _ = write!(out, ":{port}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn small() -> Web {
        Web::new(Params {
            https_port: 443,
            ..Params::new(11, 40, 800)
        })
    }

    #[test]
    fn urls_are_canonical_and_named() {
        let web = small();
        for h in 0..web.generated() {
            let host = &web.hosts[h as usize];
            assert_eq!(web.host_by_name(&host.name), Some(h));
            let home = web.url(&Target::Page { host: h, page: 0 });
            if host.https {
                assert_eq!(home, format!("https://{}/", host.name));
            } else {
                assert_eq!(home, format!("http://{}:8080/", host.name));
            }
        }
        assert_eq!(
            web.url(&Target::Nx { key: 2 }),
            "http://gone2.invalid:8080/"
        );
    }

    #[test]
    fn popular_picks_favour_low_ranks() {
        let web = small();
        let mut r = Rng::new(1);
        let mut counts = [0u32; 40];
        for _ in 0..20_000 {
            counts[web.hosts[web.pick_popular(&mut r) as usize].rank as usize] += 1;
        }
        assert!(counts[0] > counts[10] && counts[10] > 0 && counts[39] > 0);
    }

    #[test]
    fn ring_is_one_cycle() {
        let web = small();
        let mut h = 0;
        for _ in 0..web.generated() - 1 {
            h = web.ring_next(h);
            assert_ne!(h, 0);
        }
        assert_eq!(web.ring_next(h), 0);
    }
}
