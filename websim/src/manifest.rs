//! The manifest: websim's exact expectation of a correct crawl, computed by a
//! breadth-first walk over websim's own link graph (a test oracle, independent of
//! the crawler's link extractor and robots parser).
//!
//! The walk ([`bfs`]) starts from the seeds (depth 0, in order) and, for each URL
//! taken from the queue:
//! - name does not resolve -> outcome `dns_failure`; host refuses connections ->
//!   `connect_failure`; host's robots.txt is 5xx, or a stuck host that never
//!   answers (`--stuck-hosts`, [`super::stuck`]) -> `too_many_failures`;
//! - robots.txt (websim's own matcher, [`super::robots`], agent `polycrawl`)
//!   disallows it -> outcome `robots_excluded`, and it goes to `never.txt`;
//! - otherwise it is fetched: a row with the status websim gives. A 200 page's
//!   followable links are queued at depth + 1 (none if the page is nofollow); a 3xx's
//!   `Location` is queued at depth + 1 as a link; each URL is queued once. Robots
//!   directives of `--robots-tags` that mean nofollow count as nofollow.
//!
//! URLs seen only in unfollowable places (traps, stylesheets, images, links of
//! nofollow pages) and the robots-excluded ones form `never.txt`, minus anything
//! fetched. Depth is the shortest link distance from a seed, so it does not depend
//! on the order in which a crawler works through a level.
//!
//! Complexity: O(URLs discovered) time and memory, once at start-up (for
//! 100,000 pages, about a second and some tens of MB, freed after writing).
//!
//! This module must never parse the HTML websim serves nor use the crawler's crates
//! (robots parser, link extractor, canonicalizer): it walks websim's model directly
//! and applies websim's own robots matcher to the rules each host serves, so that it
//! is an oracle independent of any extractor.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;

use spool::OutcomeReason;

use super::model::{Target, Web};
use super::robots::{AGENT, Rules};

/// What a correct crawl gets for one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visit<N> {
    /// Fetched with `status`; `follow` are queued, `seen` are noted for `never.txt`.
    Fetch {
        /// HTTP status websim answers.
        status: u16,
        /// Links (or the redirect target) a crawler follows.
        follow: Vec<N>,
        /// URLs on the page a crawler must not follow.
        seen: Vec<N>,
    },
    /// Disallowed by robots.txt.
    Excluded,
    /// Never fetched for this reason.
    Unreachable(OutcomeReason),
}

/// A link graph the walk can run on.
pub trait Graph {
    /// A URL.
    type Node: Copy + Eq + Hash + Ord;
    /// What fetching `n` gives.
    fn visit(&self, n: &Self::Node) -> Visit<Self::Node>;
}

/// One fetched URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetched<N> {
    /// The URL.
    pub node: N,
    /// Status websim answers.
    pub status: u16,
    /// Link distance from the nearest seed.
    pub depth: u32,
    /// The URL it was first found on (`None` for seeds).
    pub parent: Option<N>,
}

/// One URL that is discovered but ends without a fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome<N> {
    /// The URL.
    pub node: N,
    /// Why.
    pub reason: OutcomeReason,
    /// Link distance from the nearest seed.
    pub depth: u32,
    /// The URL it was first found on.
    pub parent: Option<N>,
}

/// The result of the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crawl<N> {
    /// Fetched URLs in breadth-first order.
    pub fetched: Vec<Fetched<N>>,
    /// Discovered, not fetched, in breadth-first order.
    pub outcomes: Vec<Outcome<N>>,
    /// URLs a correct crawl must never fetch (sorted by node).
    pub never: Vec<N>,
}

/// Breadth-first walk from `seeds` (see the module docs).
pub fn bfs<G: Graph>(g: &G, seeds: &[G::Node]) -> Crawl<G::Node> {
    let mut queued: HashSet<G::Node> = HashSet::new();
    let mut queue = VecDeque::new();
    for s in seeds {
        if queued.insert(*s) {
            queue.push_back((*s, 0u32, None));
        }
    }
    let mut crawl = Crawl {
        fetched: Vec::new(),
        outcomes: Vec::new(),
        never: Vec::new(),
    };
    let mut never: HashSet<G::Node> = HashSet::new();
    while let Some((node, depth, parent)) = queue.pop_front() {
        match g.visit(&node) {
            Visit::Fetch {
                status,
                follow,
                seen,
            } => {
                crawl.fetched.push(Fetched {
                    node,
                    status,
                    depth,
                    parent,
                });
                for f in follow {
                    if queued.insert(f) {
                        queue.push_back((f, depth + 1, Some(node)));
                    }
                }
                never.extend(seen);
            }
            Visit::Excluded => {
                never.insert(node);
                let reason = OutcomeReason::RobotsExcluded;
                crawl.outcomes.push(Outcome {
                    node,
                    reason,
                    depth,
                    parent,
                });
            }
            Visit::Unreachable(reason) => {
                crawl.outcomes.push(Outcome {
                    node,
                    reason,
                    depth,
                    parent,
                });
            }
        }
    }
    for f in &crawl.fetched {
        never.remove(&f.node);
    }
    crawl.never = never.into_iter().collect();
    crawl.never.sort();
    crawl
}

/// websim's web as a [`Graph`], with each host's robots rules parsed once (O(H)).
#[derive(Debug)]
pub struct WebGraph<'a> {
    web: &'a Web,
    rules: HashMap<u32, Rules>,
}

impl<'a> WebGraph<'a> {
    /// Wraps `web`.
    pub fn new(web: &'a Web) -> Self {
        let rules = (0..web.hosts.len() as u32)
            .map(|h| {
                let host = &web.hosts[h as usize];
                let text = if host.sitemaps {
                    super::sitemaps::RULES
                } else {
                    host.robots.rules_text()
                };
                (h, Rules::parse(text, AGENT))
            })
            .collect();
        WebGraph { web, rules }
    }

    /// The web it walks.
    pub fn web(&self) -> &'a Web {
        self.web
    }

    /// The seeds: home pages of the seed hosts, by popularity (trap hosts, seeds
    /// only with `--all-seeds`, last).
    pub fn seeds(&self) -> Vec<Target> {
        let mut hosts: Vec<u32> = (0..self.web.hosts.len() as u32)
            .filter(|&h| self.web.hosts[h as usize].seed)
            .collect();
        hosts.sort_by_key(|&h| self.web.hosts[h as usize].rank);
        let mut seeds = Vec::with_capacity(hosts.len());
        for host in hosts {
            match self.web.hosts[host as usize].trap {
                Some(_) => seeds.push(Target::TrapSite { host, page: 0 }),
                None if self.web.hosts[host as usize].sitemaps => {
                    seeds.push(super::sitemaps::target(host, super::sitemaps::HOME));
                }
                // With `--components`, every component's root (page c < K), and
                // with `--component-seeds N` its pages of local index below N
                // (page c + jK), roots first.
                None => {
                    let k = self.web.components_of(host);
                    let pages = self.web.hosts[host as usize].pages;
                    let per = self.web.params.component_seeds.max(1);
                    seeds.extend(
                        (0..per)
                            .flat_map(|j| (0..k).map(move |c| c + j * k))
                            .filter(|&page| page < pages)
                            .map(|page| Target::Page { host, page }),
                    );
                }
            }
        }
        seeds
    }

    /// The party of `seed` (SCrawler): the walk from it over links to its own
    /// origin only (same host, scheme and port), as a seed-by-seed crawl makes it.
    /// Also returns the party's external links: the followable links of its pages
    /// to other origins (a seed-by-seed crawl's candidate seeds), sorted, once each.
    pub fn party(&self, seed: Target) -> (Crawl<Target>, Vec<Target>) {
        let Some(host) = self.web.target_host(&seed) else {
            return (bfs(self, &[seed]), Vec::new());
        };
        let local = Local {
            graph: self,
            host,
            external: RefCell::new(Vec::new()),
        };
        let crawl = bfs(&local, &[seed]);
        let mut external = local.external.into_inner();
        external.sort();
        external.dedup();
        (crawl, external)
    }
}

/// [`WebGraph`] inside one site: a link is followed only to the site's origin
/// (an `http://` upgrade link of an https host is another origin).
struct Local<'g, 'a> {
    graph: &'g WebGraph<'a>,
    host: u32,
    /// Links to other origins met so far (repeats possible).
    external: RefCell<Vec<Target>>,
}

impl Graph for Local<'_, '_> {
    type Node = Target;

    fn visit(&self, t: &Target) -> Visit<Target> {
        match self.graph.visit(t) {
            Visit::Fetch {
                status,
                follow,
                seen,
            } => Visit::Fetch {
                status,
                follow: follow
                    .into_iter()
                    .filter(|f| {
                        let local = !matches!(f, Target::Upgrade { .. })
                            && self.graph.web.target_host(f) == Some(self.host);
                        if !local {
                            self.external.borrow_mut().push(*f);
                        }
                        local
                    })
                    .collect(),
                seen,
            },
            other => other,
        }
    }
}

impl Graph for WebGraph<'_> {
    type Node = Target;

    fn visit(&self, t: &Target) -> Visit<Target> {
        let web = self.web;
        let Some(h) = web.target_host(t) else {
            return Visit::Unreachable(OutcomeReason::DnsFailure);
        };
        let host = &web.hosts[h as usize];
        if host.dead {
            return Visit::Unreachable(OutcomeReason::ConnectFailure);
        }
        if host.robots.is_server_error() {
            return Visit::Unreachable(OutcomeReason::TooManyFailures);
        }
        if let Some(kind) = host.stuck {
            return Visit::Unreachable(kind.outcome());
        }
        let mut path = String::with_capacity(48);
        web.write_path(&mut path, t, true);
        if !self.rules[&h].allowed(&path) {
            return Visit::Excluded;
        }
        let redirect = |status, to| Visit::Fetch {
            status,
            follow: vec![to],
            seen: vec![],
        };
        match *t {
            Target::Page { host, page } => {
                let links = web.page_links(host, page);
                let mut seen: Vec<Target> = links.traps.iter().map(|(_, t)| *t).collect();
                let follow = if links.nofollow || links.robots.is_some_and(|t| t.nofollow) {
                    seen.extend(links.follow);
                    Vec::new()
                } else {
                    links.follow
                };
                Visit::Fetch {
                    status: 200,
                    follow,
                    seen,
                }
            }
            Target::Upgrade { host, page } => redirect(301, Target::Page { host, page }),
            Target::TrapSite { host, page } => Visit::Fetch {
                status: 200,
                follow: web.hosts[host as usize]
                    .trap
                    .map(|kind| super::traps::real_links(kind, host, page))
                    .unwrap_or_default(),
                seen: vec![],
            },
            Target::Redirect { origin, key, step } => {
                let c = web.chain(origin, key);
                let next = if step + 1 < c.len {
                    Target::Redirect {
                        origin,
                        key,
                        step: step + 1,
                    }
                } else {
                    c.end
                };
                redirect(c.codes[step as usize], next)
            }
            Target::Loop { host, b } => redirect(302, Target::Loop { host, b: !b }),
            Target::Missing { .. } => Visit::Fetch {
                status: 404,
                follow: vec![],
                seen: vec![],
            },
            Target::Trap { .. } | Target::Hidden { .. } | Target::Static { .. } => Visit::Fetch {
                status: 200,
                follow: vec![],
                seen: vec![],
            },
            Target::Sitemaps { host, key } => {
                let (follow, seen) = super::sitemaps::links(host, key);
                Visit::Fetch {
                    status: 200,
                    follow,
                    seen,
                }
            }
            Target::Nx { .. } => Visit::Unreachable(OutcomeReason::DnsFailure),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Params;

    /// A tiny web, checked by hand:
    /// 0 -> 1, 2, 3, 5, 6;  1 -> 2, 7;  2 is nofollow (links 8, 1);  3 = 301 -> 4;
    /// 4 -> 0, 9;  5 robots-excluded;  6 NXDOMAIN;  7 = 404;  9 -> (nothing).
    struct Tiny;
    impl Graph for Tiny {
        type Node = u8;
        fn visit(&self, n: &u8) -> Visit<u8> {
            let page = |follow: &[u8], seen: &[u8]| Visit::Fetch {
                status: 200,
                follow: follow.to_vec(),
                seen: seen.to_vec(),
            };
            match n {
                0 => page(&[1, 2, 3, 5, 6], &[]),
                1 => page(&[2, 7], &[]),
                2 => page(&[], &[8, 1]),
                3 => Visit::Fetch {
                    status: 301,
                    follow: vec![4],
                    seen: vec![],
                },
                4 => page(&[0, 9], &[]),
                5 => Visit::Excluded,
                6 => Visit::Unreachable(OutcomeReason::DnsFailure),
                7 => Visit::Fetch {
                    status: 404,
                    follow: vec![],
                    seen: vec![],
                },
                _ => page(&[], &[]),
            }
        }
    }

    #[test]
    fn tiny_web_by_hand() {
        let c = bfs(&Tiny, &[0]);
        let rows: Vec<(u8, u16, u32, Option<u8>)> = c
            .fetched
            .iter()
            .map(|f| (f.node, f.status, f.depth, f.parent))
            .collect();
        assert_eq!(
            rows,
            vec![
                (0, 200, 0, None),
                (1, 200, 1, Some(0)),
                (2, 200, 1, Some(0)),
                (3, 301, 1, Some(0)),
                (7, 404, 2, Some(1)),
                (4, 200, 2, Some(3)),
                (9, 200, 3, Some(4)),
            ]
        );
        let outcomes: Vec<(u8, OutcomeReason, u32)> = c
            .outcomes
            .iter()
            .map(|o| (o.node, o.reason, o.depth))
            .collect();
        assert_eq!(
            outcomes,
            vec![
                (5, OutcomeReason::RobotsExcluded, 1),
                (6, OutcomeReason::DnsFailure, 1)
            ]
        );
        assert_eq!(c.never, vec![5, 8]);
    }

    fn web(seed: u64) -> Web {
        Web::new(Params::new(seed, 40, 800))
    }

    /// `--seed-hosts 2` on a plain web: two seeds, and the walk from them still
    /// fetches from every generated host that answers (the ring reaches all),
    /// the same pages as from all seeds.
    #[test]
    fn few_seed_hosts_still_reach_every_host() {
        let base = Params {
            plain: true,
            ..Params::new(5, 60, 900)
        };
        let few = Web::new(Params {
            seed_hosts: 2,
            ..base
        });
        let all = Web::new(Params {
            all_seeds: true,
            ..base
        });
        let (gf, ga) = (WebGraph::new(&few), WebGraph::new(&all));
        assert_eq!(gf.seeds().len(), 2);
        let (wf, wa) = (bfs(&gf, &gf.seeds()), bfs(&ga, &ga.seeds()));
        let hosts = |w: &Web, c: &Crawl<Target>| -> HashSet<u32> {
            c.fetched
                .iter()
                .filter_map(|f| w.target_host(&f.node))
                .collect()
        };
        let (hf, ha) = (hosts(&few, &wf), hosts(&all, &wa));
        assert!(hf.len() >= 55, "{} hosts", hf.len());
        assert_eq!(hf, ha, "the hosts the seeds reach are the same");
        assert_eq!(wf.fetched.len(), wa.fetched.len());
    }

    #[test]
    fn generated_web_has_every_behaviour() {
        let w = web(3);
        let g = WebGraph::new(&w);
        let c = bfs(&g, &g.seeds());
        let urls: HashSet<String> = c.fetched.iter().map(|f| w.url(&f.node)).collect();
        assert_eq!(
            urls.len(),
            c.fetched.len(),
            "target -> URL must be injective"
        );
        for status in [200, 301, 302, 404] {
            assert!(c.fetched.iter().any(|f| f.status == status), "no {status}");
        }
        for reason in [
            OutcomeReason::RobotsExcluded,
            OutcomeReason::DnsFailure,
            OutcomeReason::ConnectFailure,
            OutcomeReason::TooManyFailures,
        ] {
            assert!(c.outcomes.iter().any(|o| o.reason == reason), "no {reason}");
        }
        assert!(c.never.iter().any(|t| matches!(t, Target::Trap { .. })));
        let pages = c
            .fetched
            .iter()
            .filter(|f| matches!(f.node, Target::Page { .. }))
            .count();
        assert!(pages > 500, "only {pages} of 800 pages reachable");
        // Same seed, same crawl; another seed, another.
        let w2 = web(3);
        assert_eq!(bfs(&WebGraph::new(&w2), &g.seeds()), c);
        let w3 = web(4);
        let g3 = WebGraph::new(&w3);
        assert_ne!(bfs(&g3, &g3.seeds()).fetched.len(), 0);
    }

    /// `--stuck-hosts` adds the stuck hosts' pages as outcomes at depth 1 (the
    /// refused host's `connect_failure`, the others' `too_many_failures`) and
    /// changes nothing else of the walk; without it there is none.
    #[test]
    fn stuck_hosts_are_outcomes_and_change_nothing_else() {
        use crate::stuck::{STUCK_PAGES, Stuck};
        let plain = web(3);
        assert!(plain.hosts.iter().all(|h| h.stuck.is_none()));
        let stuck = Web::new(Params {
            stuck_hosts: true,
            all_seeds: true,
            ..plain.params
        });
        let walk = |w: &Web| {
            let g = WebGraph::new(w);
            bfs(&g, &g.seeds())
        };
        let (before, after) = (walk(&plain), walk(&stuck));
        let with_all_seeds = Web::new(Params {
            all_seeds: true,
            ..plain.params
        });
        let reference = walk(&with_all_seeds);
        assert!(
            after.fetched == reference.fetched,
            "the fetched rows changed"
        );
        assert!(!before.fetched.is_empty());
        let added: Vec<_> = after
            .outcomes
            .iter()
            .filter(|o| !reference.outcomes.contains(o))
            .map(|o| {
                let host = &stuck.hosts[stuck.target_host(&o.node).unwrap() as usize];
                (host.stuck.unwrap(), o.reason, o.depth)
            })
            .collect();
        assert_eq!(added.len(), Stuck::ALL.len() * STUCK_PAGES as usize);
        for kind in Stuck::ALL {
            let n = added.iter().filter(|(k, ..)| *k == kind).count();
            assert_eq!(n, STUCK_PAGES as usize, "{kind:?}");
        }
        assert!(added.iter().all(|(k, r, d)| *r == k.outcome() && *d == 1));
        assert!(
            stuck
                .hosts
                .iter()
                .filter(|h| h.stuck.is_some())
                .all(|h| !h.seed)
        );
    }

    /// `--component-seeds 2`: each component's root and its first child are
    /// seeds, and their parties overlap (the child links its parent, so its
    /// party holds the root's pages too).
    #[test]
    fn component_seeds_make_overlapping_parties_of_one_site() {
        let base = Params {
            all_seeds: true,
            plain: true,
            components: 3,
            ..web(26).params
        };
        let one = Web::new(base);
        let two = Web::new(Params {
            component_seeds: 2,
            ..base
        });
        let (g1, g2) = (WebGraph::new(&one), WebGraph::new(&two));
        let (s1, s2) = (g1.seeds(), g2.seeds());
        assert!(s2.len() > s1.len(), "{} vs {}", s2.len(), s1.len());
        assert!(s1.iter().all(|s| s2.contains(s)));
        let mut overlapping = 0;
        for seed in &s2 {
            let Target::Page { host, page } = *seed else {
                continue;
            };
            let k = two.components_of(host);
            if page < k {
                continue;
            }
            let root = Target::Page {
                host,
                page: page % k,
            };
            let nodes = |t: Target| -> HashSet<Target> {
                g2.party(t).0.fetched.iter().map(|r| r.node).collect()
            };
            let (child, parent) = (nodes(*seed), nodes(root));
            if child.intersection(&parent).count() > 1 {
                overlapping += 1;
            }
        }
        assert!(overlapping > 10, "only {overlapping} overlapping parties");
    }
}
