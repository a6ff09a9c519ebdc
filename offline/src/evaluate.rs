//! How good an ownership rule is on a crawl's host graph ([`evaluate`]): the URLs
//! the parts would exchange and how evenly the pages spread.
//!
//! **Cut URLs**: for every part, the distinct URLs linked from pages of its hosts
//! whose host another part owns, added over the parts. That is what a part in
//! exchange mode sends if it remembers what it sent (a URL found by two of its hosts
//! goes once). **Per page**: cut URLs over stored pages. **Balance**: the largest
//! part's stored pages over the mean (`total / K`); 1.0 is perfect.
//!
//! Works for any [`Ownership`] (hash, or a table with the hash for other hosts), so
//! the hash baseline and a partition are measured by the same code.
//!
//! [`evaluate_pages`] measures the same at page level, for any [`Scheme`] (a host
//! rule, or the URL hash that splits hosts) and with a set of replicated URLs that
//! no part sends (Cho and Garcia-Molina's replication): a page's part sends the
//! distinct URLs its pages link to that another part owns and that are not
//! replicated. For a host rule without replication it gives exactly
//! [`evaluate`]'s figures (a host's pages are all in its part).
//!
//! Cost: [`evaluate`] O(hosts + linked (host, URL) pairs) time, 4 bytes per
//! distinct URL and 4 bytes per host of memory; [`evaluate_pages`] O(URLs + pages
//! log pages + linked (page, URL) pairs) time, 8 bytes per URL and 8 per page.
//! This module must never change an ownership.

use std::fmt;

use super::graph::HostGraph;
use app_core::parts::Ownership;

/// An ownership rule's figures on one host graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figures {
    /// Parts (K).
    pub parts: u32,
    /// Hosts in the graph.
    pub hosts: usize,
    /// Stored pages.
    pub pages: u64,
    /// Distinct URLs each part would send to others, added over the parts.
    pub cut_urls: u64,
    /// Stored pages of each part.
    pub part_pages: Vec<u64>,
}

impl Figures {
    /// Cut URLs per stored page (0 without pages).
    pub fn cut_per_page(&self) -> f64 {
        if self.pages == 0 {
            0.0
        } else {
            self.cut_urls as f64 / self.pages as f64
        }
    }

    /// Largest part's pages over the mean (1.0 without pages).
    pub fn balance(&self) -> f64 {
        let max = self.part_pages.iter().copied().max().unwrap_or(0);
        if self.pages == 0 {
            1.0
        } else {
            max as f64 * f64::from(self.parts) / self.pages as f64
        }
    }
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cut_urls={} per_page={:.3} balance={:.3}",
            self.cut_urls,
            self.cut_per_page(),
            self.balance()
        )
    }
}

/// A partitioning scheme for the page-level evaluation.
#[derive(Debug, Clone, Copy)]
pub enum Scheme<'a> {
    /// A host rule: site-hash, hierarchical or an assignment table.
    Hosts(&'a Ownership),
    /// The URL hash over this many parts ([`app_core::parts::url_part`]).
    Urls(u32),
}

impl Scheme<'_> {
    fn parts(&self) -> u32 {
        match self {
            Scheme::Hosts(o) => o.count(),
            Scheme::Urls(k) => (*k).max(1),
        }
    }
}

/// The page-level figures of `scheme` on `graph`, no part sending a URL whose
/// `replicated[u]` is true (an empty slice: none is). See the module docs.
pub fn evaluate_pages(graph: &HostGraph, scheme: Scheme<'_>, replicated: &[bool]) -> Figures {
    let k = scheme.parts();
    let url_part: Vec<u32> = match scheme {
        Scheme::Hosts(ownership) => {
            let host_part: Vec<u32> = graph.hosts().iter().map(|h| ownership.owner(h)).collect();
            (0..graph.url_count() as u32)
                .map(|u| host_part[graph.url_host(u) as usize])
                .collect()
        }
        Scheme::Urls(_) => (0..graph.url_count() as u32)
            .map(|u| app_core::parts::url_part(graph.url(u), k))
            .collect(),
    };
    let mut part_pages = vec![0u64; k as usize];
    // Pages grouped by part, so a URL's mark says whether this part counted it.
    let mut order: Vec<u32> = (0..graph.page_count() as u32).collect();
    order.sort_by_key(|p| url_part[graph.page_url(*p as usize) as usize]);
    let mut mark = vec![u32::MAX; graph.url_count()];
    let mut cut_urls = 0u64;
    for p in order {
        let part = url_part[graph.page_url(p as usize) as usize];
        part_pages[part as usize] += 1;
        for &u in graph.page_links(p as usize) {
            let ui = u as usize;
            if url_part[ui] != part
                && mark[ui] != part
                && !replicated.get(ui).copied().unwrap_or(false)
            {
                mark[ui] = part;
                cut_urls += 1;
            }
        }
    }
    Figures {
        parts: k,
        hosts: graph.host_count(),
        pages: graph.page_count() as u64,
        cut_urls,
        part_pages,
    }
}

/// The figures of `ownership` on `graph` (see the module docs).
pub fn evaluate(graph: &HostGraph, ownership: &Ownership) -> Figures {
    let k = ownership.count();
    let part: Vec<u32> = graph.hosts().iter().map(|h| ownership.owner(h)).collect();
    let mut part_pages = vec![0u64; k as usize];
    for (h, p) in part.iter().enumerate() {
        part_pages[*p as usize] += graph.pages()[h];
    }
    // Hosts grouped by part, so a URL's mark says whether this part counted it.
    let mut order: Vec<u32> = (0..graph.host_count() as u32).collect();
    order.sort_by_key(|h| part[*h as usize]);
    let mut mark = vec![u32::MAX; graph.url_count()];
    let mut cut_urls = 0u64;
    for h in order {
        let p = part[h as usize];
        for &u in graph.links_of(h as usize) {
            if part[graph.url_host(u) as usize] != p && mark[u as usize] != p {
                mark[u as usize] = p;
                cut_urls += 1;
            }
        }
    }
    Figures {
        parts: k,
        hosts: graph.host_count(),
        pages: graph.total_pages(),
        cut_urls,
        part_pages,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use spool::formats::AssignmentTable;
    use url::Url;

    use super::*;
    use crate::graph::Builder;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn graph() -> HostGraph {
        let mut b = Builder::new();
        b.add_page(
            &u("http://a.test/"),
            &[u("http://b.test/1"), u("http://b.test/2")],
        );
        b.add_page(
            &u("http://a.test/x"),
            &[u("http://b.test/1"), u("http://a.test/")],
        );
        b.add_page(&u("http://c.test/"), &[u("http://b.test/1")]);
        b.add_page(&u("http://b.test/1"), &[u("http://a.test/")]);
        b.finish()
    }

    fn table(parts: u32, hosts: &[(&str, u32)]) -> Ownership {
        let t = AssignmentTable {
            parts,
            hosts: hosts.iter().map(|(h, p)| ((*h).to_owned(), *p)).collect(),
        };
        Ownership::assigned(t, parts, Path::new("t")).unwrap()
    }

    #[test]
    fn counts_distinct_urls_per_sending_part() {
        let g = graph();
        // Part 0 = {a, c} sends b/1 and b/2 once each; part 1 = {b} sends a/.
        let f = evaluate(
            &g,
            &table(2, &[("a.test", 0), ("b.test", 1), ("c.test", 0)]),
        );
        assert_eq!(f.cut_urls, 3);
        assert_eq!(f.part_pages, vec![3, 1]);
        assert_eq!(f.pages, 4);
        assert!((f.cut_per_page() - 0.75).abs() < 1e-9);
        assert!((f.balance() - 1.5).abs() < 1e-9);
        // a and c apart: both send b/1.
        let f = evaluate(
            &g,
            &table(3, &[("a.test", 0), ("b.test", 1), ("c.test", 2)]),
        );
        assert_eq!(f.cut_urls, 4);
        // Everything together: nothing crosses, perfect balance for K = 1.
        let f = evaluate(&g, &Ownership::hashed(1).unwrap());
        assert_eq!((f.cut_urls, f.balance()), (0, 1.0));
    }

    #[test]
    fn page_level_matches_host_level_and_replication_only_removes() {
        let g = graph();
        for k in 1..=3 {
            let own = Ownership::hashed(k).unwrap();
            assert_eq!(
                evaluate_pages(&g, Scheme::Hosts(&own), &[]),
                evaluate(&g, &own)
            );
        }
        let own = table(2, &[("a.test", 0), ("b.test", 1), ("c.test", 0)]);
        let plain = evaluate_pages(&g, Scheme::Hosts(&own), &[]);
        assert_eq!(plain.cut_urls, 3);
        // b/1 replicated: part 0 no longer sends it.
        let b1 = (0..g.url_count() as u32)
            .find(|u| g.url(*u) == "http://b.test/1")
            .unwrap();
        let mut rep = vec![false; g.url_count()];
        rep[b1 as usize] = true;
        let with = evaluate_pages(&g, Scheme::Hosts(&own), &rep);
        assert_eq!(with.cut_urls, 2);
        assert_eq!(with.part_pages, plain.part_pages);
        // URL hash: pages of one host land in different parts, by the URL's hash.
        let f = evaluate_pages(&g, Scheme::Urls(4), &[]);
        assert_eq!(f.pages, 4);
        let expect: Vec<u64> = (0..4)
            .map(|part| {
                [
                    "http://a.test/",
                    "http://a.test/x",
                    "http://c.test/",
                    "http://b.test/1",
                ]
                .iter()
                .filter(|u| app_core::parts::url_part(u, 4) == part)
                .count() as u64
            })
            .collect();
        assert_eq!(f.part_pages, expect);
        // With one part nothing is sent, whatever the scheme.
        assert_eq!(evaluate_pages(&g, Scheme::Urls(1), &[]).cut_urls, 0);
    }

    #[test]
    fn hosts_missing_from_the_table_use_the_hash() {
        let g = graph();
        let hashed = evaluate(&g, &Ownership::hashed(4).unwrap());
        let empty = evaluate(&g, &table(4, &[]));
        assert_eq!(hashed, empty);
        assert_eq!(hashed.part_pages.iter().sum::<u64>(), 4);
    }
}
