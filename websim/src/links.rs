//! The link graph: what page (h, i) links to, and where redirect chains go.
//!
//! Decided here, from (seed, host, page) alone; [`super::html`] only chooses how
//! each link is *written*. Followable links of page i of host h, in order:
//! 1. its tree parent `(i-1)/4` (if `i > 0`) and tree children `4i+1 ..= 4i+4`, so
//!    every page of a host is reachable from `/` (robots and nofollow permitting);
//! 2. on home pages, the home pages of the next two hosts of a seeded ring of all
//!    hosts, so almost every host is reachable from any seed; with `--traps`, the
//!    most popular host's home page also links the six trap hosts' home pages;
//! 3. fillers up to a total of 8-13: 20 % another host by popularity (Zipf; its home
//!    page 60 %, else a random page), 2.5 % a missing page (404), 1.5 % a redirect
//!    chain, 1 % the redirect loop (loop hosts only), 0.8 % the `http://` URL of an
//!    https host's page (301 upgrade), 0.4 % an NXDOMAIN name, the rest another page
//!    of the same host (biased to low page numbers).
//!
//! With `--communities C` ([`Params::communities`](super::model::Params::communities))
//! the popular picks of rule 3, its upgrade links and the redirect chains' hops and
//! ends stay in the linking (origin) host's community 90 % of the time (Zipf over the
//! community's hosts), and the ring of rule 2 visits each community's hosts in a row;
//! without it the draws are exactly those above.
//!
//! With `--components K` ([`Params::components`](super::model::Params::components))
//! page i of a host is in component `c = i mod K`, and rules 1 and 3 work on the
//! component's pages `c, c + K, c + 2K, ...` as on a host of their own: tree parent
//! and children by local index, same-host fillers (and popular picks that land on
//! the host itself) inside the component, missing pages of the component's key
//! class (`key mod K = c`), and no same-host redirect chain or loop (a page of the
//! component instead). Only component 0's root (`/`) carries the
//! ring links. So no component reaches another inside the host; without the flag
//! (K = 1) every draw is exactly as before.
//!
//! With `--stuck-hosts` the most popular host's home page also links every page
//! of the five stuck hosts, after the links above (so no draw changes).
//!
//! With `--hubs` ([`Params::hubs`](super::model::Params::hubs)) half of the
//! same-host fillers of rule 3 go to one of [`HUBS`] hub pages of the component,
//! each at a fixed random place (so mostly deep in the tree), hub `j` drawn as the
//! lesser of two uniform draws (the first hubs are linked most); without the flag
//! every draw is exactly as before.
//!
//! Page flags: 1 % of non-home pages are `nofollow` (their links are not followed;
//! they also link a `/hidden/` page that nothing else links), 0.8 % are framesets
//! (every link is a `<frame>`); with `--robots-tags`, 6 % carry robots directives
//! ([`super::robots_tags`]; those that mean nofollow link a `/hidden/` page too).
//!
//! Unfollowable URLs ([`PageLinks::traps`]): a `/trap/` link inside a comment
//! (30 %), a script string (30 %), a style block (20 %) and a textarea (5 %), the
//! stylesheet `/static/site.css` (always) and 0-2 images `/static/img{k}.png`.
//!
//! Redirect chains ([`Web::chain`]): 1-3 hops of 301 or 302; each hop after the
//! first moves to another host by popularity with probability 40 % (hosts that
//! cannot be fetched are skipped); the end is a page of a fetchable host.
//!
//! Everything is O(links) per page; nothing is stored. This module must never look
//! at how links are written (that is rendering's business) nor link the misbehaving
//! host: it is reached only by tests that ask for it.

use super::model::{Target, Web};
use super::rng::{Rng, TAG_HUBS, TAG_LINKS, TAG_REDIRECT};
use super::robots_tags::RobotsTag;
use super::stuck::{STUCK_PAGES, Stuck};
use super::trap_sites::TrapSite;

/// Hub pages per host component with `--hubs`.
pub const HUBS: u64 = 8;

/// Where an unfollowable URL sits in the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrapKind {
    /// Inside `<!-- ... -->`.
    Comment,
    /// Inside a JavaScript string in `<script>`.
    Script,
    /// Inside a CSS comment in `<style>`.
    Style,
    /// Inside `<textarea>` (raw text).
    Textarea,
    /// `<link rel="stylesheet" href>`.
    Stylesheet,
    /// `<img src>`.
    Image,
}

/// The URLs on one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLinks {
    /// Links in followable positions (followed unless `nofollow`).
    pub follow: Vec<Target>,
    /// URLs in positions a crawler must not follow.
    pub traps: Vec<(TrapKind, Target)>,
    /// `<meta name="robots" content="nofollow">`.
    pub nofollow: bool,
    /// Robots directives of `--robots-tags` ([`super::robots_tags`]).
    pub robots: Option<&'static RobotsTag>,
    /// A `<frameset>` page: every followable link is a `<frame src>`.
    pub frameset: bool,
}

/// A redirect chain (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    /// Number of hops (1-3).
    pub len: u8,
    /// Host of each hop.
    pub hops: [u32; 3],
    /// Status of each hop (301 or 302).
    pub codes: [u16; 3],
    /// Where the last hop points.
    pub end: Target,
}

/// Redirect chain keys per origin host: `0..CHAIN_KEYS`.
pub const CHAIN_KEYS: u32 = 64;

/// The URLs of host `h`'s page in positions a crawler must not follow: traps in
/// a comment, a script, a style and a textarea (each on some pages), the
/// stylesheet, and up to two images.
fn unfollowable(h: u32, r: &mut Rng) -> Vec<(TrapKind, Target)> {
    let mut traps = Vec::with_capacity(6);
    let kinds = [
        (TrapKind::Comment, b'c', 300),
        (TrapKind::Script, b's', 300),
        (TrapKind::Style, b'y', 200),
        (TrapKind::Textarea, b't', 50),
    ];
    for (kind, letter, per_mille) in kinds {
        if r.chance(per_mille) {
            let key = r.below(64) as u32;
            traps.push((
                kind,
                Target::Trap {
                    host: h,
                    kind: letter,
                    key,
                },
            ));
        }
    }
    traps.push((TrapKind::Stylesheet, Target::Static { host: h, key: 0 }));
    for _ in 0..r.below(3) {
        let key = 1 + r.below(16) as u32;
        traps.push((TrapKind::Image, Target::Static { host: h, key }));
    }
    traps
}

/// A page's component of its host and its place in the component's tree
/// (without components: component 0, local index = page, the host's one tree).
#[derive(Debug, Clone, Copy)]
struct Component {
    host: u32,
    /// The host's pages.
    pages: u32,
    /// Components on the host (at least 1).
    count: u32,
    /// This page's component.
    index: u32,
    /// This page's index in its component.
    local: u32,
}

impl Component {
    /// Page `page` of host `host` (`pages` pages, `count` components).
    fn of(host: u32, pages: u32, count: u32, page: u32) -> Component {
        Component {
            host,
            pages,
            count,
            index: page % count,
            local: page / count,
        }
    }

    /// The page at index `local` of this component, if the host has it.
    fn page(&self, local: u64) -> Option<Target> {
        let p = local * u64::from(self.count) + u64::from(self.index);
        (p < u64::from(self.pages)).then_some(Target::Page {
            host: self.host,
            page: p as u32,
        })
    }

    /// Pages of this component (at least 1: this one).
    fn size(&self) -> u64 {
        (u64::from(self.pages) - u64::from(self.index)).div_ceil(u64::from(self.count))
    }
}

impl Web {
    /// The links of page `page` of generated host `h`.
    pub fn page_links(&self, h: u32, page: u32) -> PageLinks {
        let seed = self.params.seed;
        let mut r = Rng::for_parts(&[seed, TAG_LINKS, u64::from(h), u64::from(page)]);
        let nofollow = page != 0 && r.chance(10);
        let frameset = page != 0 && r.chance(8);
        let comp = Component::of(h, self.hosts[h as usize].pages, self.components_of(h), page);
        let mut follow = self.tree_links(comp, page);
        let total = r.range(8, 13) as usize;
        while follow.len() < total {
            let t = self.drawn_link(comp, page, &mut r);
            follow.push(t);
        }
        let robots = self.robots_tag(h, page);
        if nofollow || robots.is_some_and(|t| t.nofollow) {
            follow.push(Target::Hidden { host: h, key: page });
        }
        follow.extend(self.stuck_links(h, page));
        if self.orphans() > 0 {
            // `--orphans`: nothing of the host links its own orphans; the home
            // page links the next host's (see `orphans.rs`).
            for t in &mut follow {
                *t = self.unorphan(h, *t);
            }
            if page == 0 {
                follow.extend(self.orphan_links(h));
            }
        }
        PageLinks {
            follow,
            traps: unfollowable(h, &mut r),
            nofollow,
            robots,
            frameset,
        }
    }

    /// The robots directives page `page` of host `h` carries (`--robots-tags`).
    pub fn robots_tag(&self, h: u32, page: u32) -> Option<&'static RobotsTag> {
        let on = self.params.robots_tags && !self.params.plain;
        super::robots_tags::of(on, self.params.seed, h, page)
    }

    /// The links every page of its kind has: its parent and children in its
    /// component's tree; on a home page the next two hosts' home pages, and on the
    /// most popular host's the sitemaps and trap hosts when they are on.
    fn tree_links(&self, comp: Component, page: u32) -> Vec<Target> {
        let h = comp.host;
        let host = &self.hosts[h as usize];
        let mut follow = Vec::with_capacity(16);
        if comp.local > 0 {
            follow.extend(comp.page(u64::from((comp.local - 1) / 4)));
        }
        let first_child = u64::from(comp.local) * 4 + 1;
        for c in first_child..first_child + 4 {
            follow.extend(comp.page(c));
        }
        if page == 0 {
            let next = self.ring_next(h);
            follow.push(Target::Page {
                host: next,
                page: 0,
            });
            follow.push(Target::Page {
                host: self.ring_next(next),
                page: 0,
            });
        }
        if page == 0 && host.rank == 0 && self.params.sitemaps && !self.params.plain {
            if let Some(s) = self.host_by_name(super::sitemaps::SITEMAPS_HOST) {
                follow.push(super::sitemaps::target(s, super::sitemaps::HOME));
            }
        }
        if page == 0 && host.rank == 0 && self.params.traps && !self.params.plain {
            for kind in TrapSite::ALL {
                if let Some(t) = self.host_by_name(kind.host_name()) {
                    follow.push(Target::TrapSite { host: t, page: 0 });
                }
            }
        }
        follow
    }

    /// With `--stuck-hosts`, on the most popular host's home page: every page of
    /// every stuck host, after the drawn links (so the flag changes no draw).
    fn stuck_links(&self, h: u32, page: u32) -> Vec<Target> {
        let on = self.params.stuck_hosts && !self.params.plain;
        if !on || page != 0 || self.hosts[h as usize].rank != 0 {
            return Vec::new();
        }
        Stuck::ALL
            .iter()
            .filter_map(|kind| self.host_by_name(kind.host_name()))
            .flat_map(|s| (0..STUCK_PAGES).map(move |page| Target::Page { host: s, page }))
            .collect()
    }

    /// One drawn link of page `page` (see the module docs for the shares).
    fn drawn_link(&self, comp: Component, page: u32, r: &mut Rng) -> Target {
        let h = comp.host;
        let k = comp.count;
        let own = Target::Page { host: h, page };
        match r.below(1000) {
            0..200 => {
                let other = self.pick_linked(h, r);
                let pages = self.hosts[other as usize].pages;
                let p = if r.chance(600) {
                    0
                } else {
                    r.below(u64::from(pages)) as u32
                };
                if other == h && k > 1 {
                    // Its own host: a page of its own component.
                    comp.page(u64::from(p) % comp.size()).unwrap_or(own)
                } else {
                    Target::Page {
                        host: other,
                        page: p,
                    }
                }
            }
            200..225 => {
                let key = r.below(500) as u32;
                // Missing pages of one key class per component, so that two
                // components never link one URL.
                let key = if k > 1 {
                    let key = key / k * k + comp.index;
                    if key >= 500 { key - k } else { key }
                } else {
                    key
                };
                Target::Missing { host: h, key }
            }
            // Redirect chains and the loop join components (their hops
            // are shared by the host): with components, a page of its own.
            225..250 if k > 1 => comp.page(r.below(comp.size())).unwrap_or(own),
            225..240 => Target::Redirect {
                origin: h,
                key: r.below(u64::from(CHAIN_KEYS)) as u32,
                step: 0,
            },
            240..250 if self.hosts[h as usize].loops => Target::Loop { host: h, b: false },
            250..258 => {
                let s = self.pick_https_linked(h, r);
                let pages = self.hosts[s as usize].pages;
                let p = if r.chance(500) {
                    0
                } else {
                    r.below(u64::from(pages)) as u32
                };
                if self.params.simple {
                    // A simple web links https pages by their https URL: a crawler
                    // that reads http's robots.txt redirect to https (RFC 9309) and
                    // one that does not then agree on what the link may fetch.
                    Target::Page { host: s, page: p }
                } else {
                    Target::Upgrade { host: s, page: p }
                }
            }
            258..262 => Target::Nx {
                key: r.below(8) as u32,
            },
            _ if self.params.hubs && r.chance(500) => {
                let j = r.below(HUBS).min(r.below(HUBS));
                let mut place = Rng::for_parts(&[
                    self.params.seed,
                    TAG_HUBS,
                    u64::from(h),
                    u64::from(comp.index),
                    j,
                ]);
                comp.page(place.below(comp.size())).unwrap_or(own)
            }
            _ => {
                // min of two draws: low page numbers are linked more often.
                let a = r.below(comp.size());
                let b = r.below(comp.size());
                comp.page(a.min(b)).unwrap_or(own)
            }
        }
    }

    /// Redirect chain `key` starting at host `origin` (see the module docs).
    pub fn chain(&self, origin: u32, key: u32) -> Chain {
        let seed = self.params.seed;
        let mut r = Rng::for_parts(&[seed, TAG_REDIRECT, u64::from(origin), u64::from(key)]);
        let len = r.range(1, 3) as u8;
        let mut hops = [origin; 3];
        let mut codes = [301u16; 3];
        for s in 0..len as usize {
            if s > 0 {
                hops[s] = hops[s - 1];
                if r.chance(400) {
                    let other = self.pick_linked(origin, &mut r);
                    if self.reachable(other) {
                        hops[s] = other;
                    }
                }
            }
            codes[s] = if r.chance(500) { 301 } else { 302 };
        }
        let mut end_host = self.pick_linked(origin, &mut r);
        if !self.reachable(end_host) {
            end_host = origin;
        }
        let pages = self.hosts[end_host as usize].pages;
        let mut end = Target::Page {
            host: end_host,
            page: r.below(u64::from(pages)) as u32,
        };
        if self.is_orphan(end_host, pages.saturating_sub(1)) {
            // `--orphans`: a chain never ends on an orphan (see `orphans.rs`).
            end = self.unorphan(end_host, end);
        }
        Chain {
            len,
            hops,
            codes,
            end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Params;

    fn web(seed: u64) -> Web {
        Web::new(Params {
            http_port: 80,
            https_port: 443,
            ..Params::new(seed, 60, 3000)
        })
    }

    #[test]
    fn links_are_deterministic_and_mostly_local() {
        let (a, b, c) = (web(1), web(1), web(2));
        let mut same_host = 0;
        let mut total = 0;
        let mut differs = false;
        for h in 0..60 {
            for p in 0..a.hosts[h as usize].pages.min(50) {
                let la = a.page_links(h, p);
                assert_eq!(la, b.page_links(h, p));
                differs |= c.hosts[h as usize].pages > p && la != c.page_links(h, p);
                for t in &la.follow {
                    total += 1;
                    same_host += usize::from(a.target_host(t) == Some(h));
                }
            }
        }
        assert!(differs);
        let share = same_host as f64 / total as f64;
        assert!((0.8..0.95).contains(&share), "same-host share {share}");
    }

    /// Share of cross-host followable links (pages of generated hosts) that stay
    /// in the linking host's community `of`.
    fn community_share(w: &Web, of: &dyn Fn(u32) -> u32) -> f64 {
        let (mut local, mut cross) = (0u32, 0u32);
        for h in 0..w.generated() {
            for p in 0..w.hosts[h as usize].pages.min(40) {
                for t in w.page_links(h, p).follow {
                    if let Target::Page { host, .. } = t {
                        if host != h {
                            cross += 1;
                            local += u32::from(of(host) == of(h));
                        }
                    }
                }
            }
        }
        f64::from(local) / f64::from(cross)
    }

    #[test]
    fn communities_keep_most_cross_host_links_inside() {
        let mut params = web(5).params;
        params.communities = 6;
        let w = Web::new(params);
        let of = |h: u32| w.community_of(h).unwrap();
        let mut sizes = [0u32; 6];
        for h in 0..60 {
            sizes[of(h) as usize] += 1;
        }
        assert_eq!(sizes, [10; 6]);
        let share = community_share(&w, &of);
        assert!(share > 0.85, "local share {share}");
        // The same grouping on the web without communities: about 1/6 local.
        let plain = web(5);
        assert_eq!(plain.community_of(0), None);
        let share = community_share(&plain, &of);
        assert!(share < 0.35, "local share without communities {share}");
        // The ring still visits every host once.
        let mut h = 0;
        for _ in 0..59 {
            h = w.ring_next(h);
            assert_ne!(h, 0);
        }
        assert_eq!(w.ring_next(h), 0);
    }

    #[test]
    fn tree_reaches_every_page() {
        let w = web(3);
        for h in 0..60u32 {
            let n = w.hosts[h as usize].pages;
            let mut seen = vec![false; n as usize];
            let mut stack = vec![0u32];
            while let Some(p) = stack.pop() {
                if std::mem::replace(&mut seen[p as usize], true) {
                    continue;
                }
                for t in w.page_links(h, p).follow {
                    if let Target::Page { host, page } = t {
                        if host == h {
                            stack.push(page);
                        }
                    }
                }
            }
            assert!(seen.iter().all(|&s| s), "host {h}");
        }
    }

    #[test]
    fn chains_end_on_fetchable_pages() {
        let w = web(4);
        for o in 0..60 {
            if !w.reachable(o) {
                continue;
            }
            for k in 0..CHAIN_KEYS {
                let c = w.chain(o, k);
                assert!((1..=3).contains(&c.len));
                assert_eq!(c.hops[0], o);
                for s in 0..c.len as usize {
                    assert!(w.reachable(c.hops[s]));
                    assert!(matches!(c.codes[s], 301 | 302));
                }
                assert!(matches!(c.end, Target::Page { host, .. } if w.reachable(host)));
            }
        }
    }

    #[test]
    fn components_are_separate_trees_that_cover_the_host() {
        let mut w = web(5);
        w.params.components = 3;
        for h in 0..60 {
            let n = w.hosts[h as usize].pages;
            let k = w.components_of(h);
            assert_eq!(k, 3.min(n));
            let mut seen = vec![false; n as usize];
            for root in 0..k {
                let mut stack = vec![root];
                while let Some(p) = stack.pop() {
                    if std::mem::replace(&mut seen[p as usize], true) {
                        continue;
                    }
                    assert_eq!(p % k, root, "host {h}: page {p} reached from root {root}");
                    for t in w.page_links(h, p).follow {
                        // Nothing of the host outside the component is linked.
                        match t {
                            Target::Page { host, page } if host == h => {
                                assert_eq!(page % k, root, "host {h} page {p} -> {page}");
                                stack.push(page);
                            }
                            Target::Missing { host, key } if host == h => {
                                assert_eq!(key % k, root);
                                assert!(key < 500);
                            }
                            Target::Redirect { origin, .. } => assert_ne!(origin, h),
                            Target::Loop { host, .. } => assert_ne!(host, h),
                            _ => {}
                        }
                    }
                }
            }
            assert!(
                seen.iter().all(|&s| s),
                "host {h}: every page in some component"
            );
        }
        // Without the flag the web is the one it always was.
        let (a, mut b) = (web(5), web(5));
        b.params.components = 1;
        for h in 0..30 {
            for p in 0..a.hosts[h as usize].pages.min(20) {
                assert_eq!(a.page_links(h, p), b.page_links(h, p));
            }
        }
    }
}
