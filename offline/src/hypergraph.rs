//! The paper's own model of site assignment (Turk, Cambazoglu and Aykanat,
//! hypergraph-site-assignment, section 3): the **site hypergraph** of a crawl
//! ([`SiteHypergraph::from_graph`]), its **message count** (the connectivity − 1
//! metric, equation 2) and **both load imbalances** (bytes and pages, equation 1)
//! for any assignment of sites to parts ([`SiteHypergraph::figures`]), and a
//! refinement that lowers the message count of an assignment under both balance
//! constraints ([`SiteHypergraph::refine`]).
//!
//! Vertices are sites (the host graph's hosts), weighed twice: stored bytes (w1)
//! and stored pages (w2). Nets are pages: every stored page with at least one link
//! to another site is a net of cost 1 whose pins are its own site and every site it
//! links to. A net connecting λ parts costs λ − 1 messages: the page's part sends
//! its links to each of the λ − 1 other parts once (in exchange mode, one message
//! per page and destination part). A site's page without links to other sites is
//! no net. Imbalance of weight r: the largest part's W_r over the mean, minus 1
//! (the paper's tables give it in percent).
//!
//! When no page carries a size (a graph built without them), the byte weight is
//! the page count, as the paper does for its collections without page sizes.
//!
//! The refinement is a greedy form of Fiduccia–Mattheyses on the hypergraph: sites
//! in index order, each moved to the connected part that lowers the messages most
//! (gain = nets where it is its part's only pin − nets with no pin in the target),
//! if the move keeps both weights of the target within `(1 + ε)` of the mean;
//! passes until one moves nothing (at most [`MAX_PASSES`]). Deterministic. It never
//! raises the message count, and never makes a part heavier than the bound (a part
//! already over it, e.g. one holding a site bigger than the bound, only loses
//! weight by the moves).
//!
//! Cost: building O(page links); memory 4 bytes per pin and per (site, net)
//! incidence, 8 bytes per net and per site. [`SiteHypergraph::figures`] O(pins);
//! a refinement pass O(Σ over nets of pins²) time, with O(K) scratch. This
//! module must never read the repository or decide an assignment on its own: it
//! measures and improves the one it is given.

use super::graph::HostGraph;

/// Refinement passes at most ([`SiteHypergraph::refine`]).
pub const MAX_PASSES: usize = 16;

/// A crawl's sites as the paper's hypergraph (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteHypergraph {
    /// Per site: (bytes, pages).
    weights: Vec<[u64; 2]>,
    /// `pins[net_start[n]..net_start[n + 1]]`: net `n`'s sites, sorted, each once.
    net_start: Vec<usize>,
    pins: Vec<u32>,
    /// `site_nets[site_start[s]..site_start[s + 1]]`: the nets site `s` is a pin of.
    site_start: Vec<usize>,
    site_nets: Vec<u32>,
}

/// An assignment's figures on the hypergraph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MessageFigures {
    /// Parts (K).
    pub parts: u32,
    /// Σ over nets of (parts connected − 1): the messages of one exchange round.
    pub messages: u64,
    /// Nets connecting more than one part.
    pub cut_nets: u64,
    /// Largest part's bytes over the mean, minus 1.
    pub byte_imbalance: f64,
    /// Largest part's pages over the mean, minus 1.
    pub page_imbalance: f64,
}

impl SiteHypergraph {
    /// The hypergraph of `graph`: its hosts as sites, its stored pages with links
    /// to other hosts as nets.
    pub fn from_graph(graph: &HostGraph) -> Self {
        let sized = graph.bytes().iter().any(|b| *b > 0);
        let weights = graph
            .pages()
            .iter()
            .zip(graph.bytes())
            .map(|(p, b)| [if sized { *b } else { *p }, *p])
            .collect();
        let mut net_start = vec![0];
        let mut pins = Vec::new();
        let mut net: Vec<u32> = Vec::new();
        for p in 0..graph.page_count() {
            let own = graph.url_host(graph.page_url(p));
            net.clear();
            net.push(own);
            net.extend(graph.page_links(p).iter().map(|u| graph.url_host(*u)));
            net.sort_unstable();
            net.dedup();
            if net.len() > 1 {
                pins.extend_from_slice(&net);
                net_start.push(pins.len());
            }
        }
        let sites = graph.host_count();
        let mut degree = vec![0usize; sites];
        for s in &pins {
            degree[*s as usize] += 1;
        }
        let mut site_start = Vec::with_capacity(sites + 1);
        site_start.push(0);
        for d in &degree {
            site_start.push(site_start.last().copied().unwrap_or(0) + d);
        }
        let mut fill = site_start[..sites].to_vec();
        let mut site_nets = vec![0u32; pins.len()];
        for n in 0..net_start.len() - 1 {
            for s in &pins[net_start[n]..net_start[n + 1]] {
                site_nets[fill[*s as usize]] = n as u32;
                fill[*s as usize] += 1;
            }
        }
        Self {
            weights,
            net_start,
            pins,
            site_start,
            site_nets,
        }
    }

    /// Sites (vertices).
    pub fn sites(&self) -> usize {
        self.weights.len()
    }

    /// Nets (pages with links to other sites).
    pub fn nets(&self) -> usize {
        self.net_start.len() - 1
    }

    /// Pins over all nets.
    pub fn pin_count(&self) -> usize {
        self.pins.len()
    }

    fn net(&self, n: usize) -> &[u32] {
        &self.pins[self.net_start[n]..self.net_start[n + 1]]
    }

    fn nets_of(&self, s: usize) -> &[u32] {
        &self.site_nets[self.site_start[s]..self.site_start[s + 1]]
    }

    /// Per part: (bytes, pages) under `part` (a part per site, each below `k`).
    fn part_weights(&self, part: &[u32], k: u32) -> Vec<[u64; 2]> {
        let mut w = vec![[0u64; 2]; k as usize];
        for (p, weight) in part.iter().zip(&self.weights) {
            let load = &mut w[*p as usize];
            load[0] += weight[0];
            load[1] += weight[1];
        }
        w
    }

    /// Both constraints' bounds: `(1 + ε)` times the mean weight per part.
    fn bounds(&self, k: u32, epsilon: f64) -> [f64; 2] {
        let mut total = [0u64; 2];
        for w in &self.weights {
            total[0] += w[0];
            total[1] += w[1];
        }
        total.map(|t| t as f64 / f64::from(k) * (1.0 + epsilon))
    }

    /// The figures of `part` (one part below `k` per site; see the module docs).
    ///
    /// # Panics
    ///
    /// If `part` does not give one part per site, or names a part `>= k`.
    pub fn figures(&self, part: &[u32], k: u32) -> MessageFigures {
        assert_eq!(part.len(), self.sites(), "one part per site");
        let mut seen = vec![u32::MAX; k as usize];
        let (mut messages, mut cut_nets) = (0u64, 0u64);
        for n in 0..self.nets() {
            let mut lambda = 0u64;
            for s in self.net(n) {
                let p = part[*s as usize] as usize;
                if seen[p] != n as u32 {
                    seen[p] = n as u32;
                    lambda += 1;
                }
            }
            messages += lambda - 1;
            cut_nets += u64::from(lambda > 1);
        }
        let w = self.part_weights(part, k);
        let imbalance = |r: usize| {
            let total: u64 = w.iter().map(|x| x[r]).sum();
            let max = w.iter().map(|x| x[r]).max().unwrap_or(0);
            if total == 0 {
                0.0
            } else {
                max as f64 * f64::from(k) / total as f64 - 1.0
            }
        };
        MessageFigures {
            parts: k,
            messages,
            cut_nets,
            byte_imbalance: imbalance(0),
            page_imbalance: imbalance(1),
        }
    }

    /// Lowers the message count of `part` by moving sites between parts, both
    /// weights of a receiving part staying within `(1 + epsilon)` of the mean (see
    /// the module docs). Returns the sites moved.
    ///
    /// # Panics
    ///
    /// If `part` does not give one part per site, or names a part `>= k`.
    pub fn refine(&self, part: &mut [u32], k: u32, epsilon: f64) -> usize {
        assert_eq!(part.len(), self.sites(), "one part per site");
        let bound = self.bounds(k, epsilon);
        let mut load = self.part_weights(part, k);
        // Per net and part: the net's pins in that part. Kept as a flat count per
        // (net, part) only for the nets' distinct parts: a sorted small list.
        let mut counts: Vec<Vec<(u32, u32)>> = (0..self.nets())
            .map(|n| {
                let mut c: Vec<(u32, u32)> = Vec::new();
                for s in self.net(n) {
                    let p = part[*s as usize];
                    match c.iter_mut().find(|(q, _)| *q == p) {
                        Some(e) => e.1 += 1,
                        None => c.push((p, 1)),
                    }
                }
                c
            })
            .collect();
        // Scratch: per part, the nets of the site being moved that reach it.
        let mut reach = vec![0u32; k as usize];
        let mut touched: Vec<u32> = Vec::new();
        let mut moved = 0;
        for _ in 0..MAX_PASSES {
            let mut moved_now = 0;
            #[allow(clippy::needless_range_loop)] // `part[s]` changes inside the loop
            for s in 0..self.sites() {
                let from = part[s];
                let nets = self.nets_of(s);
                let mut alone = 0u32;
                for n in nets {
                    for (p, c) in &counts[*n as usize] {
                        if *p == from {
                            alone += u32::from(*c == 1);
                        } else {
                            if reach[*p as usize] == 0 {
                                touched.push(*p);
                            }
                            reach[*p as usize] += 1;
                        }
                    }
                }
                // gain(to) = alone − (nets − reach[to]): best first, ties to the
                // lowest part number (deterministic).
                touched.sort_unstable();
                let w = self.weights[s];
                let best = touched
                    .iter()
                    .copied()
                    .filter(|to| {
                        let l = load[*to as usize];
                        (0..2).all(|r| (l[r] + w[r]) as f64 <= bound[r])
                    })
                    .map(|to| {
                        let gain =
                            i64::from(alone) - (nets.len() as i64 - i64::from(reach[to as usize]));
                        (gain, to)
                    })
                    .filter(|(gain, _)| *gain > 0)
                    .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
                for p in touched.drain(..) {
                    reach[p as usize] = 0;
                }
                let Some((_, to)) = best else {
                    continue;
                };
                for n in nets {
                    let c = &mut counts[*n as usize];
                    if let Some(i) = c.iter().position(|(p, _)| *p == from) {
                        c[i].1 -= 1;
                        if c[i].1 == 0 {
                            c.swap_remove(i);
                        }
                    }
                    match c.iter_mut().find(|(p, _)| *p == to) {
                        Some(e) => e.1 += 1,
                        None => c.push((to, 1)),
                    }
                }
                for r in 0..2 {
                    load[from as usize][r] -= w[r];
                    load[to as usize][r] += w[r];
                }
                part[s] = to;
                moved_now += 1;
            }
            moved += moved_now;
            if moved_now == 0 {
                break;
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use url::Url;

    use super::*;
    use crate::graph::Builder;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    /// Sites a, b, c, d: a's page links b and c (one net, 3 pins), b's page links a
    /// (net of 2), c's page links nothing outside (no net), d is only linked.
    fn small() -> (HostGraph, SiteHypergraph) {
        let mut b = Builder::new();
        b.add_sized_page(
            &url("http://a.test/"),
            100,
            &[
                url("http://b.test/"),
                url("http://c.test/x"),
                url("http://a.test/y"),
            ],
        );
        b.add_sized_page(&url("http://b.test/"), 300, &[url("http://a.test/")]);
        b.add_sized_page(&url("http://c.test/x"), 50, &[url("http://c.test/z")]);
        b.add_sized_page(&url("http://c.test/z"), 50, &[url("http://d.test/")]);
        let g = b.finish();
        let h = SiteHypergraph::from_graph(&g);
        (g, h)
    }

    #[test]
    fn nets_are_pages_with_outside_links() {
        let (g, h) = small();
        assert_eq!(g.hosts(), ["a.test", "b.test", "c.test", "d.test"]);
        assert_eq!(h.sites(), 4);
        // a's page {a,b,c}, b's page {a,b}, c/z {c,d}; c/x has no outside link.
        assert_eq!(h.nets(), 3);
        assert_eq!(h.pin_count(), 7);
        assert_eq!(h.weights, vec![[100, 1], [300, 1], [100, 2], [0, 0]]);
    }

    #[test]
    fn messages_are_connectivity_minus_one() {
        let (_, h) = small();
        // All in one part: no message.
        let one = h.figures(&[0, 0, 0, 0], 2);
        assert_eq!((one.messages, one.cut_nets), (0, 0));
        assert!((one.page_imbalance - 1.0).abs() < 1e-9, "{one:?}");
        // a, b | c, d: net {a,b,c} connects 2 parts (1 message), {a,b} 1, {c,d} 1.
        let split = h.figures(&[0, 0, 1, 1], 2);
        assert_eq!((split.messages, split.cut_nets), (1, 1));
        // Four parts: {a,b,c} costs 2, {a,b} 1, {c,d} 1.
        let four = h.figures(&[0, 1, 2, 3], 4);
        assert_eq!((four.messages, four.cut_nets), (4, 3));
        // Bytes 400 | 100 of 500: imbalance 400/250 − 1 = 0.6; pages 2 | 2: 0.
        assert!((split.byte_imbalance - 0.6).abs() < 1e-9, "{split:?}");
        assert!(split.page_imbalance.abs() < 1e-9, "{split:?}");
    }

    #[test]
    fn unsized_pages_weigh_their_count() {
        let mut b = Builder::new();
        b.add_page(&url("http://a.test/"), &[url("http://b.test/")]);
        b.add_page(&url("http://b.test/"), &[]);
        let h = SiteHypergraph::from_graph(&b.finish());
        assert_eq!(h.weights, vec![[1, 1], [1, 1]]);
    }

    /// Two groups of sites that only link inside the group, dealt alternately to
    /// two parts: refinement lowers the messages, never over the bound (ε = 0.2:
    /// room for one site more in a part), and is deterministic.
    #[test]
    fn refine_lowers_messages_within_both_bounds() {
        let mut b = Builder::new();
        for g in 0..2 {
            for s in 0..6 {
                let links: Vec<Url> = (1..=2)
                    .map(|k| url(&format!("http://g{g}s{}.test/", (s + k) % 6)))
                    .collect();
                b.add_sized_page(&url(&format!("http://g{g}s{s}.test/")), 10, &links);
            }
        }
        let g = b.finish();
        let h = SiteHypergraph::from_graph(&g);
        let dealt: Vec<u32> = (0..h.sites() as u32).map(|s| s % 2).collect();
        let before = h.figures(&dealt, 2);
        // Balanced to the site, the tight bound allows no single move.
        let mut tight = dealt.clone();
        assert_eq!(h.refine(&mut tight, 2, 0.05), 0);
        let mut part = dealt.clone();
        let moved = h.refine(&mut part, 2, 0.2);
        let after = h.figures(&part, 2);
        assert!(moved > 0);
        assert!(after.messages < before.messages, "{before:?} → {after:?}");
        assert!(after.page_imbalance <= 0.2 + 1e-9 && after.byte_imbalance <= 0.2 + 1e-9);
        let mut again = dealt;
        h.refine(&mut again, 2, 0.2);
        assert_eq!(again, part);
    }

    /// A move that would lower the messages but break a bound is not made.
    #[test]
    fn refine_keeps_the_bound() {
        let (_, h) = small();
        // a | b, c, d: part 1 (400 bytes, 3 pages) is already over both bounds
        // (262.5 bytes, 2.1 pages), so nothing may join it; b or c joining a would
        // put part 0 over a bound; d gains nothing. Nothing moves.
        let mut part = vec![0, 1, 1, 1];
        assert_eq!(h.refine(&mut part, 2, 0.05), 0);
        assert_eq!(part, [0, 1, 1, 1]);
        // With room (ε = 1: 500 bytes, 4 pages a part), a joins the others: every
        // net in one part, no message left.
        let moved = h.refine(&mut part, 2, 1.0);
        assert_eq!(moved, 1);
        assert_eq!(part, [1, 1, 1, 1]);
        assert_eq!(h.figures(&part, 2).messages, 0);
    }
}
