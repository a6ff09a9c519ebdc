//! Host generation: names, sizes, popularity, special roles and addresses.
//!
//! Rules (all drawn from the seed, so the same seed gives the same hosts):
//! - **Names** only under reserved TLDs (`.test`, `.example`; RFC 2606/6761), so no
//!   real name is ever produced. Hosts come in registered-domain groups of 1-4
//!   (`www.acme17.test`, `shop.acme17.test`, `acme17.test`), so domain-suffix
//!   blacklists have something to bite. The misbehaving host is
//!   [`MISBEHAVE_HOST`], added after the `--hosts` generated ones.
//! - **Sizes** follow Zipf (exponent `--size-skew`, default 1) over a seeded
//!   popularity rank; every host has at least one page and the sizes add up to
//!   `--pages` exactly.
//! - **Roles**: the `max(3, H/10)` most popular hosts are never dead, slow or
//!   robots-5xx. The 16 next most popular get one required role each (dead,
//!   robots 5xx, disallow-all, agent group, crawl-delay, robots redirect,
//!   allow-override, wildcards, disallow, empty, 403, slow, https, loops, gzip,
//!   chunked) so every behaviour exists in every web; then every host draws extra
//!   flags: https 15 %, gzip 30 %, chunked 20 %, loops 5 %, and a robots variant
//!   (none 55 %, disallow 15 %, allow-override 10 %, wildcards 10 %, agent group
//!   4 %, empty 3 %, redirect 2 %, 403 1 %) unless it already has one.
//! - **Plain** webs (`--plain`, for throughput benchmarks) are drawn the same way,
//!   then the roles a static web server never plays are taken back: no host is
//!   dead or slow, and a robots.txt that would answer 5xx or ask for a crawl delay
//!   has no rules instead (the variant `none`).
//! - **Simple** webs (`--simple`, a plain web every crawler reads alike) also take
//!   back the robots.txt variants beyond plain `Disallow` prefixes (agent group,
//!   wildcards, allow-override, redirect: none instead; disallow, which has a
//!   percent-encoded rule, and disallow-all become disallow_prefix) and the
//!   redirect loops.
//! - **Seeds**: the `max(3, H/20)` most popular hosts (with `--all-seeds`, every
//!   host but the misbehaving one: see `model.rs`).
//! - **Addresses**: 127.x.y.z from 127.1.0.1 upwards (never in 127.0.0.0/16). Most
//!   hosts get their own; with probability 6 % a host starts a virtual-hosting
//!   group that takes the next 2-8 hosts onto one address. Dead hosts and the
//!   misbehaving host always have an address of their own.
//! - **Trap hosts** (`--traps`, see [`super::traps`]) come after the misbehaving
//!   host, each on an address of its own; then the **sitemap host** (`--sitemaps`,
//!   see [`super::sitemaps`]), on an address of its own; then the five **stuck
//!   hosts** (`--stuck-hosts`, see [`super::stuck`]), each on an address of its own.
//!
//! Complexity: O(H) time and memory; nothing here grows with pages.

use std::net::Ipv4Addr;

use super::rng::{Rng, TAG_HOSTS};
use super::robots::RobotsVariant;
use super::stuck::{STUCK_PAGES, Stuck};
use super::trap_sites::TrapSite;

/// The misbehaving host for downloader tests (never linked from pages).
pub const MISBEHAVE_HOST: &str = "misbehave.websim.test";

/// The fewest hosts a web can have (every required role needs its own host).
pub const MIN_HOSTS: u32 = 20;

/// One virtual host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// Lower-case host name.
    pub name: String,
    /// Registered domain (`acme17.test`), for suffix blacklists.
    pub domain: String,
    /// The address its name resolves to.
    pub addr: Ipv4Addr,
    /// Index of `addr` in [`super::model::Web::addrs`].
    pub addr_index: u32,
    /// Number of pages (page 0 is the home page `/`).
    pub pages: u32,
    /// Popularity rank, 0 = most linked.
    pub rank: u32,
    /// Served over https only (plain http gets a 301 to https).
    pub https: bool,
    /// Every response's first byte comes after `--slow-ms`.
    pub slow: bool,
    /// Bodies are gzip-encoded when the client accepts gzip.
    pub gzip: bool,
    /// Bodies are always sent chunked.
    pub chunked: bool,
    /// Name resolves, but nothing listens on its address.
    pub dead: bool,
    /// Some pages link to the redirect loop `/loop/a`.
    pub loops: bool,
    /// Its home page is in `seeds.txt`.
    pub seed: bool,
    /// The misbehaving host ([`MISBEHAVE_HOST`]).
    pub misbehave: bool,
    /// What `/robots.txt` does.
    pub robots: RobotsVariant,
    /// A trap host ([`super::traps`]), and which.
    pub trap: Option<TrapSite>,
    /// The sitemap host ([`super::sitemaps`]).
    pub sitemaps: bool,
    /// A stuck host of `--stuck-hosts` ([`super::stuck`]), and how it fails.
    pub stuck: Option<Stuck>,
}

const WORDS: [&str; 24] = [
    "acme",
    "globex",
    "initech",
    "umbrella",
    "hooli",
    "stark",
    "wayne",
    "wonka",
    "tyrell",
    "cyberdyne",
    "soylent",
    "vandelay",
    "gringotts",
    "monarch",
    "nakatomi",
    "oceanic",
    "prestige",
    "virtucon",
    "wernham",
    "dunder",
    "krusty",
    "bluth",
    "gekko",
    "aperture",
];
const LABELS: [&str; 8] = [
    "www", "shop", "blog", "docs", "news", "forum", "wiki", "mail",
];

/// The address of address index `k`: 127.1.0.1, 127.1.0.2, ... (last octet 1-254).
pub fn address(k: u32) -> Ipv4Addr {
    let b = 1 + k / (254 * 256);
    let c = (k / 254) % 256;
    let d = 1 + k % 254;
    Ipv4Addr::new(127, b as u8, c as u8, d as u8)
}

/// Generates the `n_hosts` hosts of a web of `n_pages` pages, then the misbehaving
/// host, then (with `traps`) the trap hosts of [`super::traps`]. Requires
/// `n_hosts >= MIN_HOSTS` and `n_pages >= n_hosts`.
pub fn generate(
    seed: u64,
    n_hosts: u32,
    n_pages: u32,
    skew: f64,
    plain: bool,
    traps: bool,
    sitemaps: bool,
) -> Vec<Host> {
    let h = n_hosts as usize;
    let mut rng = Rng::for_parts(&[seed, TAG_HOSTS]);
    let mut hosts = names(&mut rng, h);

    // Popularity ranks and Zipf sizes.
    let mut order: Vec<usize> = (0..h).collect();
    rng.shuffle(&mut order);
    let sizes = zipf_sizes(n_hosts, n_pages, skew);
    for (rank, &i) in order.iter().enumerate() {
        hosts[i].rank = rank as u32;
        hosts[i].pages = sizes[rank];
    }

    assign_roles(&mut rng, &mut hosts, &order);
    if plain {
        for host in &mut hosts {
            host.dead = false;
            host.slow = false;
            if host.robots.is_server_error() || host.robots == RobotsVariant::CrawlDelay {
                host.robots = RobotsVariant::None;
            }
        }
    }
    assign_addresses(&mut rng, &mut hosts);
    if traps {
        for kind in TrapSite::ALL {
            let name = kind.host_name();
            let domain = name.trim_start_matches("www.").to_owned();
            let mut t = blank(name.to_owned(), domain);
            t.trap = Some(kind);
            t.pages = kind.pages();
            t.rank = hosts.len() as u32;
            t.addr_index = hosts.last().map_or(0, |h| h.addr_index + 1);
            t.addr = address(t.addr_index);
            hosts.push(t);
        }
    }
    if sitemaps {
        let name = super::sitemaps::SITEMAPS_HOST;
        let mut s = blank(name.to_owned(), name.trim_start_matches("www.").to_owned());
        s.sitemaps = true;
        s.pages = 1;
        s.rank = hosts.len() as u32;
        s.addr_index = hosts.last().map_or(0, |h| h.addr_index + 1);
        s.addr = address(s.addr_index);
        hosts.push(s);
    }
    hosts
}

/// What `--simple` takes back from a plain web: robots.txt files beyond plain
/// `Disallow` prefixes (agent groups, wildcards, `Allow` overrides, redirects)
/// become none, `disallow` (which has a percent-encoded rule) and `disallow_all`
/// (whose seed some crawlers fetch anyway) `disallow_prefix`, and no host links to
/// a redirect loop.
pub fn simplify(hosts: &mut [Host]) {
    for host in hosts {
        host.loops = false;
        // `Disallow: /` too: seeds are fetched whatever robots.txt says by some
        // crawlers (wget2 applies robots.txt to the links it follows only).
        if matches!(
            host.robots,
            RobotsVariant::Disallow | RobotsVariant::DisallowAll
        ) {
            host.robots = RobotsVariant::DisallowPrefix;
        }
        if matches!(
            host.robots,
            RobotsVariant::AllowOverride
                | RobotsVariant::Wildcards
                | RobotsVariant::AgentGroup
                | RobotsVariant::Redirect
        ) {
            host.robots = RobotsVariant::None;
        }
    }
}

fn blank(name: String, domain: String) -> Host {
    Host {
        name,
        domain,
        addr: Ipv4Addr::LOCALHOST,
        addr_index: 0,
        pages: 0,
        rank: 0,
        https: false,
        slow: false,
        gzip: false,
        chunked: false,
        dead: false,
        loops: false,
        seed: false,
        misbehave: false,
        robots: RobotsVariant::None,
        trap: None,
        sitemaps: false,
        stuck: None,
    }
}

/// Appends the stuck hosts of `--stuck-hosts` ([`super::stuck`]) to `hosts`,
/// after every other host, each on the next address of its own. O(1).
pub fn add_stuck(hosts: &mut Vec<Host>) {
    for kind in Stuck::ALL {
        let name = kind.host_name();
        let mut h = blank(name.to_owned(), "stuck-hosts.test".to_owned());
        h.stuck = Some(kind);
        h.dead = kind == Stuck::Refused;
        h.pages = STUCK_PAGES;
        h.rank = hosts.len() as u32;
        h.addr_index = hosts.last().map_or(0, |last| last.addr_index + 1);
        h.addr = address(h.addr_index);
        hosts.push(h);
    }
}

fn names(rng: &mut Rng, h: usize) -> Vec<Host> {
    let mut hosts = Vec::with_capacity(h + 1);
    let mut group = 0usize;
    while hosts.len() < h {
        let size = match rng.below(100) {
            0..60 => 1,
            60..85 => 2,
            85..95 => 3,
            _ => 4,
        }
        .min(h - hosts.len());
        let tld = if rng.chance(750) { "test" } else { "example" };
        let domain = format!("{}{group}.{tld}", WORDS[group % WORDS.len()]);
        let mut labels = LABELS;
        rng.shuffle(&mut labels);
        if size == 1 {
            let name = match rng.below(10) {
                0..5 => format!("www.{domain}"),
                5..8 => domain.clone(),
                _ => format!("{}.{domain}", labels[0]),
            };
            hosts.push(blank(name, domain));
        } else {
            // One member may be the bare domain.
            let bare = rng.chance(300);
            for (k, label) in labels.iter().take(size).enumerate() {
                let name = if bare && k == 0 {
                    domain.clone()
                } else {
                    format!("{label}.{domain}")
                };
                hosts.push(blank(name, domain.clone()));
            }
        }
        group += 1;
    }
    hosts
}

/// Sizes by rank: 1 each, plus `pages - hosts` shared by Zipf weights 1/(r+1)^skew
/// with largest remainders, so the total is exact.
fn zipf_sizes(n_hosts: u32, n_pages: u32, skew: f64) -> Vec<u32> {
    let h = n_hosts as usize;
    let extra = u64::from(n_pages - n_hosts);
    let weights: Vec<f64> = (0..h).map(|r| (r as f64 + 1.0).powf(-skew)).collect();
    let total: f64 = weights.iter().sum();
    let mut sizes = Vec::with_capacity(h);
    let mut rema = Vec::with_capacity(h);
    let mut given = 0u64;
    for (r, w) in weights.iter().enumerate() {
        let exact = extra as f64 * w / total;
        let floor = exact.floor() as u64;
        given += floor;
        sizes.push(1 + floor as u32);
        rema.push((exact - floor as f64, r));
    }
    rema.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, r) in rema.iter().take((extra - given) as usize) {
        sizes[r] += 1;
    }
    sizes
}

fn assign_roles(rng: &mut Rng, hosts: &mut [Host], order: &[usize]) {
    let h = hosts.len();
    let cutoff = (h / 10).max(3);
    let seeds = (h / 20).max(3);
    // Required roles go to the 16 hosts just below the popular ones, shuffled.
    let mut required: Vec<usize> = order[cutoff..cutoff + 16].to_vec();
    rng.shuffle(&mut required);
    use RobotsVariant as R;
    let robots_roles = [
        R::ServerError,
        R::DisallowAll,
        R::AgentGroup,
        R::CrawlDelay,
        R::Redirect,
        R::AllowOverride,
        R::Wildcards,
        R::Disallow,
        R::Empty,
        R::Forbidden,
    ];
    hosts[required[0]].dead = true;
    for (k, v) in robots_roles.iter().enumerate() {
        hosts[required[1 + k]].robots = *v;
    }
    let robots_fixed: Vec<bool> = {
        let mut fixed = vec![false; h];
        for &i in &required[..11] {
            fixed[i] = true;
        }
        fixed
    };
    hosts[required[11]].slow = true;
    hosts[required[12]].https = true;
    hosts[required[13]].loops = true;
    hosts[required[14]].gzip = true;
    hosts[required[15]].chunked = true;

    for (i, host) in hosts.iter_mut().enumerate() {
        host.seed = (host.rank as usize) < seeds;
        if host.dead {
            continue;
        }
        host.https |= rng.chance(150);
        host.gzip |= rng.chance(300);
        host.chunked |= rng.chance(200);
        host.loops |= rng.chance(50);
        if !robots_fixed[i] {
            host.robots = match rng.below(100) {
                0..55 => R::None,
                55..70 => R::Disallow,
                70..80 => R::AllowOverride,
                80..90 => R::Wildcards,
                90..94 => R::AgentGroup,
                94..97 => R::Empty,
                97..99 => R::Redirect,
                _ => R::Forbidden,
            };
        }
    }
}

/// Gives every host an address of its own, in the order of the addresses drawn
/// (`--own-addresses`): the virtual-hosting groups are split, nothing else of
/// the web changes. O(H).
pub fn one_address_each(hosts: &mut [Host]) {
    let mut order: Vec<usize> = (0..hosts.len()).collect();
    order.sort_by_key(|&i| (hosts[i].addr_index, i));
    for (k, &i) in order.iter().enumerate() {
        hosts[i].addr_index = k as u32;
        hosts[i].addr = address(k as u32);
    }
}

fn assign_addresses(rng: &mut Rng, hosts: &mut Vec<Host>) {
    let mut order: Vec<usize> = (0..hosts.len()).collect();
    rng.shuffle(&mut order);
    let mut next_addr = 0u32;
    let mut k = 0;
    while k < order.len() {
        let first = order[k];
        let mut group = vec![first];
        k += 1;
        if !hosts[first].dead && rng.chance(60) {
            let want = rng.range(2, 8) as usize;
            while group.len() < want && k < order.len() && !hosts[order[k]].dead {
                group.push(order[k]);
                k += 1;
            }
        }
        for &i in &group {
            hosts[i].addr_index = next_addr;
            hosts[i].addr = address(next_addr);
        }
        next_addr += 1;
    }
    let mut bad = blank(MISBEHAVE_HOST.to_owned(), "websim.test".to_owned());
    bad.misbehave = true;
    bad.rank = hosts.len() as u32;
    bad.addr_index = next_addr;
    bad.addr = address(next_addr);
    hosts.push(bad);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn sizes_add_up_and_follow_rank() {
        let s = zipf_sizes(200, 20_000, 1.0);
        assert_eq!(s.iter().map(|&x| u64::from(x)).sum::<u64>(), 20_000);
        assert!(s.iter().all(|&x| x >= 1));
        assert!(s[0] > s[10] && s[10] > s[199]);
    }

    #[test]
    fn skew_zero_gives_equal_sizes_and_skew_flattens() {
        let flat = zipf_sizes(500, 20_000, 0.0);
        assert!(flat.iter().all(|&x| x == 40), "{flat:?}");
        let mild = zipf_sizes(500, 20_000, 0.5);
        let usual = zipf_sizes(500, 20_000, 1.0);
        assert_eq!(mild.iter().map(|&x| u64::from(x)).sum::<u64>(), 20_000);
        assert!(mild[0] < usual[0] && mild[0] > flat[0]);
    }

    #[test]
    fn hosts_are_deterministic_unique_and_reserved() {
        let a = generate(7, 200, 20_000, 1.0, false, false, false);
        assert_eq!(a, generate(7, 200, 20_000, 1.0, false, false, false));
        assert_ne!(a, generate(8, 200, 20_000, 1.0, false, false, false));
        assert_eq!(a.len(), 201);
        let names: HashSet<&str> = a.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names.len(), a.len());
        for h in &a {
            assert!(h.name.ends_with(".test") || h.name.ends_with(".example"));
            assert_eq!(h.addr.octets()[0], 127);
            assert_ne!(h.addr.octets()[1], 0);
        }
        // Every role exists; dead and misbehaving hosts are alone on their address.
        assert_eq!(a.iter().filter(|h| h.dead).count(), 1);
        for h in a.iter().filter(|h| h.dead || h.misbehave) {
            assert_eq!(a.iter().filter(|o| o.addr == h.addr).count(), 1);
        }
        assert!(a.iter().any(|h| h.slow) && a.iter().any(|h| h.https));
        assert!(a.iter().any(|h| h.gzip) && a.iter().any(|h| h.chunked));
        // Some addresses are shared by 2-8 hosts.
        let shared = a
            .iter()
            .filter(|h| a.iter().filter(|o| o.addr == h.addr).count() > 1)
            .count();
        assert!(shared > 0);
    }

    #[test]
    fn plain_webs_keep_only_what_a_static_server_does() {
        let usual = generate(7, 200, 20_000, 1.0, false, false, false);
        let plain = generate(7, 200, 20_000, 1.0, true, false, false);
        assert_eq!(usual.len(), plain.len());
        assert!(plain.iter().all(|h| !h.dead && !h.slow));
        assert!(plain.iter().all(|h| !h.robots.is_server_error()));
        assert!(plain.iter().all(|h| h.robots != RobotsVariant::CrawlDelay));
        // Everything else is the same web: names, sizes, https, other robots rules.
        for (u, p) in usual.iter().zip(&plain) {
            assert_eq!(
                (&u.name, u.pages, u.https, u.gzip),
                (&p.name, p.pages, p.https, p.gzip)
            );
        }
        assert!(plain.iter().any(|h| h.robots == RobotsVariant::Disallow));
        assert!(plain.iter().any(|h| h.https) && plain.iter().any(|h| h.gzip));
    }

    #[test]
    fn simple_webs_keep_only_disallow_prefixes_and_no_loops() {
        let plain = generate(7, 200, 20_000, 1.0, true, false, false);
        let mut simple = plain.clone();
        simplify(&mut simple);
        let kept = [
            RobotsVariant::None,
            RobotsVariant::Empty,
            RobotsVariant::Forbidden,
            RobotsVariant::DisallowPrefix,
        ];
        assert!(simple.iter().all(|h| kept.contains(&h.robots) && !h.loops));
        assert!(plain.iter().any(|h| h.loops));
        assert!(
            simple
                .iter()
                .any(|h| h.robots == RobotsVariant::DisallowPrefix)
        );
        for (p, s) in plain.iter().zip(&simple) {
            assert_eq!((&p.name, p.pages, p.https), (&s.name, s.pages, s.https));
        }
    }

    #[test]
    fn own_addresses_split_the_groups_and_change_nothing_else() {
        let grouped = generate(7, 500, 10_000, 1.0, false, false, false);
        let mut own = grouped.clone();
        one_address_each(&mut own);
        let mut addrs: Vec<_> = own.iter().map(|h| h.addr).collect();
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), own.len(), "one address per host");
        let shared = grouped.len()
            - grouped
                .iter()
                .map(|h| h.addr)
                .collect::<std::collections::BTreeSet<_>>()
                .len();
        assert!(shared > 0, "the usual web has virtual-hosting groups");
        for (g, o) in grouped.iter().zip(&own) {
            let mut o = o.clone();
            o.addr = g.addr;
            o.addr_index = g.addr_index;
            assert_eq!(&o, g);
        }
    }

    #[test]
    fn addresses_skip_127_0() {
        assert_eq!(address(0), Ipv4Addr::new(127, 1, 0, 1));
        assert_eq!(address(253), Ipv4Addr::new(127, 1, 0, 254));
        assert_eq!(address(254), Ipv4Addr::new(127, 1, 1, 1));
    }

    #[test]
    fn added_after_the_others_on_addresses_of_their_own() {
        let mut hosts = generate(7, 20, 200, 1.0, false, false, false);
        let before = hosts.len();
        let last_addr = hosts.iter().map(|h| h.addr_index).max().unwrap();
        add_stuck(&mut hosts);
        let stuck = &hosts[before..];
        assert_eq!(stuck.len(), Stuck::ALL.len());
        for (k, h) in stuck.iter().enumerate() {
            assert_eq!(h.addr_index, last_addr + 1 + k as u32);
            assert!(!h.seed && !h.https && h.pages == STUCK_PAGES);
            assert_eq!(h.dead, h.stuck == Some(Stuck::Refused));
        }
    }
}
