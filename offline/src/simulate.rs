//! Cho and Garcia-Molina's parallel-crawler experiments by simulation
//! (`polycrawl simulate`; issue 42 Done-when 2): n crawling processes (C-procs)
//! over a finished crawl's web, at process counts this machine cannot run live.
//!
//! The web is the crawl's stored pages and the links between them ([`Web`]): a
//! link to a URL that was never stored (dead, refused, off the crawl) leads
//! nowhere. Pages are split by site-hash ([`Ownership::hashed`] of the page's
//! host, the paper's partitioning for these figures). Seeds are random pages of
//! each C-proc's partition, drawn by a fixed-seed generator, so a run is
//! repeatable.
//!
//! - **Firewall coverage** ([`firewall_coverage`], figures 4 and 5): each C-proc
//!   follows only links inside its partition from its seeds until it runs out;
//!   coverage = pages downloaded over all pages.
//! - **Quality with back-link exchange** ([`quality`], figures 9-11): each C-proc
//!   downloads, one page a tick in turn, the page of its partition with the most
//!   back-links it knows of (links from pages downloaded by itself, plus those
//!   other C-procs told it about); links to other partitions are buffered as
//!   [URL, count] pairs and delivered `x` times during the crawl, at evenly spaced
//!   points of the download budget. `x = 0` is the firewall mode (nothing is
//!   delivered); [`Exchanges::EveryPage`] delivers at once, which is what one
//!   process knows. Quality = |A_N ∩ P_N| / N for a budget of N downloads, P_N the
//!   N pages with the most back-links over the whole web; pages tied at the N-th
//!   page's count fill the remaining places of P_N in whatever order (the metric
//!   counts as many of A_N's tied pages as there are tied places). Communication =
//!   [URL, count] pairs delivered per page downloaded.
//!
//! Cost: building O(page links); a coverage run O(pages + links); a quality run
//! O(links · log links) time, with one heap entry per back-link learnt and per
//! C-proc a map of buffered pairs. Memory: 4 bytes per link and about 16 per page.
//! This module must never read the repository or write files: it simulates on
//! the graph it is given.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::graph::HostGraph;
use app_core::parts::Ownership;

/// A crawl's stored pages and the links between them (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Web {
    /// Per page: its host's index in the graph.
    host: Vec<u32>,
    /// `links[start[p]..start[p + 1]]`: the stored pages page `p` links to, each
    /// once, itself left out.
    start: Vec<usize>,
    links: Vec<u32>,
    /// Per page: the distinct pages linking to it (its importance).
    backlinks: Vec<u32>,
    hosts: Vec<String>,
}

/// When C-procs deliver their buffered [URL, back-link count] pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exchanges {
    /// `x` times, evenly spaced over the download budget (0: never, the firewall
    /// mode).
    Times(u32),
    /// After every page: every C-proc knows every back-link found so far.
    EveryPage,
}

/// One quality run's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualityRun {
    /// Pages downloaded (the budget, or fewer if every C-proc ran out).
    pub downloaded: u64,
    /// |A_N ∩ P_N| / N.
    pub quality: f64,
    /// [URL, count] pairs delivered per page downloaded.
    pub pairs_per_page: f64,
}

/// A small fixed-seed generator (SplitMix64): repeatable seeds, no dependency.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

impl Web {
    /// The stored pages of `graph` and their links to stored pages.
    pub fn from_graph(graph: &HostGraph) -> Self {
        let mut page_of = vec![u32::MAX; graph.url_count()];
        for p in 0..graph.page_count() {
            page_of[graph.page_url(p) as usize] = p as u32;
        }
        let mut start = vec![0];
        let mut links = Vec::new();
        let mut backlinks = vec![0u32; graph.page_count()];
        let mut host = Vec::with_capacity(graph.page_count());
        for p in 0..graph.page_count() {
            host.push(graph.url_host(graph.page_url(p)));
            // Page links are distinct URLs, so distinct pages.
            for u in graph.page_links(p) {
                let q = page_of[*u as usize];
                if q != u32::MAX && q as usize != p {
                    links.push(q);
                    backlinks[q as usize] += 1;
                }
            }
            start.push(links.len());
        }
        Self {
            host,
            start,
            links,
            backlinks,
            hosts: graph.hosts().to_vec(),
        }
    }

    /// Stored pages.
    pub fn pages(&self) -> usize {
        self.host.len()
    }

    /// Links between stored pages.
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    fn out(&self, p: usize) -> &[u32] {
        &self.links[self.start[p]..self.start[p + 1]]
    }

    /// Per page: its C-proc under site-hash over `n` processes.
    fn parts(&self, n: u32) -> Vec<u32> {
        let own = Ownership::hashed(n.max(1)).expect("n >= 1");
        let host_part: Vec<u32> = self.hosts.iter().map(|h| own.owner(h)).collect();
        self.host.iter().map(|h| host_part[*h as usize]).collect()
    }

    /// `per_proc` random pages of each partition (all of a smaller one).
    fn seeds(&self, part: &[u32], n: u32, per_proc: usize, seed: u64) -> Vec<u32> {
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); n as usize];
        for (p, c) in part.iter().enumerate() {
            members[*c as usize].push(p as u32);
        }
        let mut rng = SplitMix(seed);
        let mut seeds = Vec::new();
        for m in &mut members {
            let take = per_proc.min(m.len());
            // A partial Fisher-Yates shuffle: `take` distinct pages.
            for i in 0..take {
                let j = i + rng.below(m.len() - i);
                m.swap(i, j);
            }
            seeds.extend_from_slice(&m[..take]);
        }
        seeds
    }
}

/// Coverage of `n` C-procs in firewall mode, each from `per_proc` random seeds of
/// its partition (see the module docs). 0 for an empty web.
pub fn firewall_coverage(web: &Web, n: u32, per_proc: usize, seed: u64) -> f64 {
    if web.pages() == 0 {
        return 0.0;
    }
    let part = web.parts(n);
    let mut seen = vec![false; web.pages()];
    let mut queue: Vec<u32> = web.seeds(&part, n, per_proc, seed);
    for s in &queue {
        seen[*s as usize] = true;
    }
    let mut covered = queue.len();
    while let Some(p) = queue.pop() {
        for q in web.out(p as usize) {
            let q = *q as usize;
            if !seen[q] && part[q] == part[p as usize] {
                seen[q] = true;
                covered += 1;
                queue.push(q as u32);
            }
        }
    }
    covered as f64 / web.pages() as f64
}

/// Quality of `n` C-procs ordering by back-links, with `exchanges`, after
/// `budget` downloads, each C-proc from `per_proc` random seeds of its partition
/// (see the module docs).
pub fn quality(
    web: &Web,
    n: u32,
    exchanges: Exchanges,
    budget: u64,
    per_proc: usize,
    seed: u64,
) -> QualityRun {
    let part = web.parts(n);
    let mut sim = Sim::new(web, &part, n);
    for s in web.seeds(&part, n, per_proc, seed) {
        sim.learn(s, 0);
    }
    let at = |i: u32, x: u32| budget * u64::from(i) / (u64::from(x) + 1);
    let mut next_exchange = 1;
    let mut downloaded = 0u64;
    'crawl: while downloaded < budget {
        let mut any = false;
        for c in 0..n as usize {
            let Some(p) = sim.take(c) else {
                continue;
            };
            any = true;
            sim.download(p, exchanges == Exchanges::EveryPage);
            downloaded += 1;
            if let Exchanges::Times(x) = exchanges {
                while next_exchange <= x && downloaded >= at(next_exchange, x) {
                    sim.deliver();
                    next_exchange += 1;
                }
            }
            if downloaded == budget {
                break 'crawl;
            }
        }
        if !any {
            break;
        }
    }
    QualityRun {
        downloaded,
        quality: top_share(web, &sim.downloaded, downloaded),
        pairs_per_page: if downloaded == 0 {
            0.0
        } else {
            sim.pairs as f64 / downloaded as f64
        },
    }
}

/// |A ∩ P_N| / N with ties at the N-th count shared out (module docs).
fn top_share(web: &Web, downloaded: &[bool], n: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let mut counts: Vec<u32> = web.backlinks.clone();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let n_usize = (n as usize).min(counts.len());
    let threshold = counts[n_usize - 1];
    let above = counts.iter().take_while(|c| **c > threshold).count();
    let tie_places = n_usize - above;
    let (mut hit_above, mut hit_tied) = (0usize, 0usize);
    for (p, d) in downloaded.iter().enumerate() {
        if *d {
            match web.backlinks[p].cmp(&threshold) {
                std::cmp::Ordering::Greater => hit_above += 1,
                std::cmp::Ordering::Equal => hit_tied += 1,
                std::cmp::Ordering::Less => {}
            }
        }
    }
    (hit_above + hit_tied.min(tie_places)) as f64 / n as f64
}

/// The state of one quality run.
struct Sim<'a> {
    web: &'a Web,
    part: &'a [u32],
    /// Per page: the back-links its C-proc knows of.
    known: Vec<u32>,
    /// Per page: known to its C-proc (a seed, or linked).
    listed: Vec<bool>,
    downloaded: Vec<bool>,
    /// Per C-proc: (count, earliest page first) of pages to download; stale
    /// entries (count no longer current, or downloaded) are skipped.
    heaps: Vec<BinaryHeap<(u32, Reverse<u32>)>>,
    /// Per C-proc: the [URL, count] pairs it has not delivered yet.
    buffered: Vec<HashMap<u32, u32>>,
    pairs: u64,
}

impl<'a> Sim<'a> {
    fn new(web: &'a Web, part: &'a [u32], n: u32) -> Self {
        Self {
            web,
            part,
            known: vec![0; web.pages()],
            listed: vec![false; web.pages()],
            downloaded: vec![false; web.pages()],
            heaps: vec![BinaryHeap::new(); n as usize],
            buffered: vec![HashMap::new(); n as usize],
            pairs: 0,
        }
    }

    /// Page `q`'s C-proc learns `count` more back-links to it.
    fn learn(&mut self, q: u32, count: u32) {
        let qi = q as usize;
        if self.downloaded[qi] {
            return;
        }
        self.listed[qi] = true;
        self.known[qi] += count;
        self.heaps[self.part[qi] as usize].push((self.known[qi], Reverse(q)));
    }

    fn take(&mut self, c: usize) -> Option<usize> {
        while let Some((count, Reverse(p))) = self.heaps[c].pop() {
            let p = p as usize;
            if !self.downloaded[p] && self.known[p] == count {
                return Some(p);
            }
        }
        None
    }

    fn download(&mut self, p: usize, deliver_now: bool) {
        self.downloaded[p] = true;
        let from = self.part[p];
        for q in self.web.out(p) {
            if self.part[*q as usize] == from || deliver_now {
                self.learn(*q, 1);
            } else {
                *self.buffered[from as usize].entry(*q).or_default() += 1;
            }
        }
    }

    fn deliver(&mut self) {
        let buffered = std::mem::take(&mut self.buffered);
        for mut pairs in buffered.into_iter() {
            self.pairs += pairs.len() as u64;
            let mut list: Vec<(u32, u32)> = pairs.drain().collect();
            list.sort_unstable();
            for (q, c) in list {
                self.learn(q, c);
            }
            self.buffered.push(pairs);
        }
    }
}

#[cfg(test)]
mod tests {
    use url::Url;

    use super::*;
    use crate::graph::Builder;

    /// `sites` sites of `pages` pages in a ring inside each site; page 0 of each
    /// site links page 0 of the next site; every page links the hub (site 0, page
    /// 1), so the hub is the most important page.
    fn ring(sites: u32, pages: u32) -> Web {
        let url = |s: u32, p: u32| Url::parse(&format!("http://s{s}.test/p{p}")).unwrap();
        let mut b = Builder::new();
        for s in 0..sites {
            for p in 0..pages {
                let mut links = vec![url(s, (p + 1) % pages), url(0, 1)];
                if p == 0 {
                    links.push(url((s + 1) % sites, 0));
                }
                b.add_page(&url(s, p), &links);
            }
        }
        Web::from_graph(&b.finish())
    }

    #[test]
    fn the_web_keeps_stored_pages_only() {
        let mut b = Builder::new();
        let u = |s: &str| Url::parse(s).unwrap();
        b.add_page(
            &u("http://a.test/"),
            &[u("http://a.test/x"), u("http://dead.test/")],
        );
        b.add_page(
            &u("http://a.test/x"),
            &[u("http://a.test/"), u("http://a.test/x")],
        );
        let web = Web::from_graph(&b.finish());
        assert_eq!(web.pages(), 2);
        // The dead link and the self-link are gone.
        assert_eq!(web.link_count(), 2);
        assert_eq!(web.backlinks, [1, 1]);
    }

    #[test]
    fn one_process_covers_what_its_seeds_reach_and_firewalls_cover_less() {
        let web = ring(40, 10);
        // One process: every page is reachable from any page through the site ring.
        assert_eq!(firewall_coverage(&web, 1, 1, 7), 1.0);
        // 8 processes with one seed each: a seed's site only, and the sites the
        // next-site links reach inside the partition.
        let eight = firewall_coverage(&web, 8, 1, 7);
        assert!(eight < 0.5, "{eight}");
        // More seeds per process cover more.
        assert!(firewall_coverage(&web, 8, 5, 7) > eight);
        // Repeatable.
        assert_eq!(firewall_coverage(&web, 8, 1, 7), eight);
    }

    #[test]
    fn exchanges_raise_quality_to_the_single_process() {
        let web = ring(64, 20);
        let budget = (web.pages() / 10) as u64;
        let single = quality(&web, 1, Exchanges::EveryPage, budget, 5, 3);
        assert_eq!(single.downloaded, budget);
        assert_eq!(single.pairs_per_page, 0.0);
        let firewall = quality(&web, 16, Exchanges::Times(0), budget, 5, 3);
        assert_eq!(firewall.pairs_per_page, 0.0);
        let often = quality(&web, 16, Exchanges::Times(20), budget, 5, 3);
        let every = quality(&web, 16, Exchanges::EveryPage, budget, 5, 3);
        assert!(often.pairs_per_page > 0.0);
        // The hub (every page links it) is found by everyone who exchanges.
        assert!(
            firewall.quality <= often.quality && often.quality <= every.quality + 1e-9,
            "{firewall:?} {often:?} {every:?}"
        );
    }

    #[test]
    fn quality_shares_ties_and_counts_the_top() {
        let web = ring(4, 5);
        // The hub has 20 back-links (19 + the ring's own), every other page 1 or 2.
        let mut downloaded = vec![false; web.pages()];
        let hub = web
            .backlinks
            .iter()
            .enumerate()
            .max_by_key(|(_, c)| **c)
            .unwrap()
            .0;
        downloaded[hub] = true;
        assert_eq!(top_share(&web, &downloaded, 1), 1.0);
        downloaded[hub] = false;
        assert_eq!(top_share(&web, &downloaded, 1), 0.0);
        // Every page downloaded: quality 1 at any N.
        let all = vec![true; web.pages()];
        assert_eq!(top_share(&web, &all, 7), 7.0 / 7.0);
    }
}
