//! The coverage problem of a two-level crawl (FC2L-UDC, Figure 2): with
//! `--orphans N`, sites with pages their own root does not reach but a page of
//! another site links to.
//!
//! **The rule.** A generated host `h` with at least `4N` pages (not a trap, sitemap
//! or misbehaving host) has `N` orphans: its last `N` pages `n-N .. n`, which are
//! leaves of its link tree (page `i` is a leaf when `4i + 1 >= n`, true for
//! `i >= n - N` since `n >= 4N`). Every link a page of `h` has to an orphan of `h`
//! (tree child, same-host filler, a popular pick or upgrade link landing on `h`
//! itself) points at `h`'s home page instead, and a redirect chain that would end on
//! an orphan ends on its host's home page; so nothing inside `h` links an orphan.
//! The home page of the host *before* `h` in the ring (the one whose home page
//! already links `h`'s) links each of `h`'s orphans: that is the link from page b of
//! site S1 to page i of site S2 in the paper's figure. Pages of other hosts may link
//! orphans too (random cross-host fillers); those links are never same-site.
//!
//! **The oracle.** `manifest.tsv` stays what a correct crawl from the seeds
//! fetches (orphans included: they are reachable). [`no_fix_walk`] is the crawl a
//! two-level crawler *without* the fix makes: the same walk with every link to
//! another site (another host name; the port aside, so an upgrade link of the
//! same host is the same site) reduced to that site's root. The pages of the
//! manifest that it does not fetch are those reachable only through another
//! site: the orphans, and the few pages whose own site links them only from
//! nofollow or robots-excluded pages (there are some without the flag too).
//! `orphans.tsv` lists them all ([`super::outfiles`]). A full-coverage
//! two-level crawl fetches all of the manifest; one without the fix falls short by
//! exactly `orphans.tsv`.
//!
//! The flag rejects `--traps`, `--sitemaps` and `--components` (their hosts and
//! seeds are not sites with one root), so the oracle stays exact. Without the flag
//! (N = 0) nothing here changes a link: the web is the one it always was.
//!
//! Cost: [`Web::orphans_of`] and [`Web::unorphan`] are O(1); the walk is one more
//! breadth-first walk, O(URLs discovered), at start-up only. This module never
//! stores per-page data of the web.

use super::manifest::{Crawl, Graph, Visit, WebGraph, bfs};
use super::model::{Target, Web};

impl Web {
    /// The orphans of host `h`: `Some(first)` when pages `first..pages` are orphans
    /// (see the module docs), `None` when `h` has none.
    pub fn orphans_of(&self, h: u32) -> Option<u32> {
        let n = self.orphans();
        if n == 0 || h >= self.generated() {
            return None;
        }
        let host = &self.hosts[h as usize];
        let plain_site = host.trap.is_none() && !host.sitemaps && !host.misbehave;
        (plain_site && host.pages >= n.saturating_mul(4)).then(|| host.pages - n)
    }

    /// Whether page `page` of host `h` is an orphan.
    pub fn is_orphan(&self, h: u32, page: u32) -> bool {
        self.orphans_of(h).is_some_and(|first| page >= first)
    }

    /// A link of a page of host `from` to `t`, with a same-host orphan replaced by
    /// the host's home page (nothing inside a host links its orphans).
    pub fn unorphan(&self, from: u32, t: Target) -> Target {
        match t {
            Target::Page { host, page } | Target::Upgrade { host, page }
                if host == from && self.is_orphan(host, page) =>
            {
                Target::Page { host, page: 0 }
            }
            other => other,
        }
    }

    /// The orphans the home page of `h` links: those of the next host in the ring.
    pub fn orphan_links(&self, h: u32) -> impl Iterator<Item = Target> + '_ {
        let next = if h < self.generated() {
            Some(self.ring_next(h))
        } else {
            None
        };
        let range = next.and_then(|g| {
            let first = self.orphans_of(g)?;
            Some((g, first..self.hosts[g as usize].pages))
        });
        range
            .into_iter()
            .flat_map(|(g, pages)| pages.map(move |page| Target::Page { host: g, page }))
    }
}

/// The web as a two-level crawl without the fix sees it: a link to another site
/// is a link to that site's root.
struct NoFix<'g, 'a> {
    graph: &'g WebGraph<'a>,
}

impl NoFix<'_, '_> {
    /// The root of `t`'s site, as seen from a page of host `from`: `t` itself
    /// when it is on `from` (or names no host), else the home page of its host
    /// (over http for an upgrade link: the reduced URL keeps the link's scheme).
    fn reduce(&self, from: Option<u32>, t: Target) -> Target {
        let web = self.graph.web();
        match web.target_host(&t) {
            Some(h) if Some(h) != from => match t {
                Target::Upgrade { host, .. } => Target::Upgrade { host, page: 0 },
                _ => Target::Page { host: h, page: 0 },
            },
            _ => t,
        }
    }
}

impl Graph for NoFix<'_, '_> {
    type Node = Target;

    fn visit(&self, t: &Target) -> Visit<Target> {
        let from = self.graph.web().target_host(t);
        match self.graph.visit(t) {
            Visit::Fetch {
                status,
                follow,
                seen,
            } => Visit::Fetch {
                status,
                follow: follow.into_iter().map(|f| self.reduce(from, f)).collect(),
                seen,
            },
            other => other,
        }
    }
}

/// The walk of a two-level crawl without the fix, from the same seeds as the
/// manifest (see the module docs).
pub fn no_fix_walk(graph: &WebGraph<'_>, seeds: &[Target]) -> Crawl<Target> {
    bfs(&NoFix { graph }, seeds)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::model::Params;

    fn web(orphans: u32) -> Web {
        Web::new(Params::new(9, 40, 2000)).with_orphans(orphans)
    }

    #[test]
    fn without_the_flag_nothing_changes() {
        let (a, b) = (web(0), web(0));
        for h in 0..40 {
            assert_eq!(a.orphans_of(h), None);
            assert_eq!(a.orphan_links(h).count(), 0);
            for p in 0..a.hosts[h as usize].pages.min(30) {
                assert_eq!(a.page_links(h, p), b.page_links(h, p));
            }
        }
    }

    #[test]
    fn orphans_are_reached_only_through_another_site() {
        let w = web(3);
        let with: Vec<u32> = (0..40).filter(|&h| w.orphans_of(h).is_some()).collect();
        assert!(with.len() > 10, "{with:?}");
        // No page of a host links one of its own orphans, and no chain ends on one.
        for &h in &with {
            for p in 0..w.hosts[h as usize].pages {
                for t in w.page_links(h, p).follow {
                    if let Target::Page { host, page } | Target::Upgrade { host, page } = t {
                        assert!(!(host == h && w.is_orphan(h, page)), "{h}/{p} -> {page}");
                    }
                }
            }
            for k in 0..crate::links::CHAIN_KEYS {
                let c = w.chain(h, k);
                if let Target::Page { host, page } = c.end {
                    assert!(!w.is_orphan(host, page));
                }
            }
        }
        // The ring predecessor's home page links them.
        for h in 0..40 {
            let g = w.ring_next(h);
            let linked: HashSet<Target> = w.page_links(h, 0).follow.into_iter().collect();
            for t in w.orphan_links(h) {
                assert!(linked.contains(&t));
                assert!(
                    matches!(t, Target::Page { host, page } if host == g && w.is_orphan(g, page))
                );
            }
        }
        // The oracle: the manifest holds orphans; the walk without the fix misses
        // them and nothing else of the manifest's pages.
        let g = WebGraph::new(&w);
        let seeds = g.seeds();
        let full = bfs(&g, &seeds);
        let no_fix = no_fix_walk(&g, &seeds);
        let pages = |c: &Crawl<Target>| -> HashSet<Target> {
            c.fetched
                .iter()
                .filter(|f| f.status == 200 && matches!(f.node, Target::Page { .. }))
                .map(|f| f.node)
                .collect()
        };
        let (full, no_fix) = (pages(&full), pages(&no_fix));
        let missed: HashSet<&Target> = full.difference(&no_fix).collect();
        let orphans: HashSet<&Target> = full
            .iter()
            .filter(|t| matches!(t, Target::Page { host, page } if w.is_orphan(*host, *page)))
            .collect();
        assert!(orphans.len() > 30, "{}", orphans.len());
        assert!(orphans.is_subset(&missed));
        // The rest: pages whose own site reaches them only through a nofollow or
        // robots-excluded page, a few (without the flag there are some too).
        let others = missed.len() - orphans.len();
        assert!(
            others * 10 < orphans.len(),
            "{others} others, {} orphans",
            orphans.len()
        );
    }
}
