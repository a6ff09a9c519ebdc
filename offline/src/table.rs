//! The page-level comparison of partitioning schemes (Cho and Garcia-Molina,
//! sections 3 and 8; `polycrawl assign --table`): for each K, the URLs exchanged
//! per page and the balance of URL-hash, site-hash, site-hash with the top-N
//! most-linked URLs replicated (the paper's figure 8), hierarchical (by registered
//! domain), the METIS assignment, and the METIS assignment with the top-N
//! most-linked URLs replicated, all measured by
//! [`evaluate_pages`] on one crawl's graph.
//!
//! The figures are of the crawl the graph was read from: what each scheme would
//! have sent had that crawl been split, every part remembering what it sent. The
//! METIS rows are optimistic in the way an assignment from a previous crawl is for
//! the crawl it was computed from (the next crawl's web has changed a little).
//!
//! Cost: one METIS run per K ([`super::partition()`]) plus, per row, one
//! [`evaluate_pages`] pass: O(rows × (URLs + page
//! links)) time; the graph's memory plus 8 bytes per URL and page. Reading the
//! repository ([`super::HostGraph::from_repository`]) is most of the time on a real
//! crawl. This module must never write files.

use std::fmt;

use super::AssignError;
use super::evaluate::{Figures, Scheme, evaluate_pages};
use super::graph::HostGraph;
use super::hypergraph::{MessageFigures, SiteHypergraph};
use super::partition::{balanced_twice, partition, partition_messages};
use app_core::parts::Ownership;

/// One row: a scheme at one K.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// `url-hash`, `site-hash`, `site-hash+top<N>`, `hierarchical`, `metis` or
    /// `metis+top<N>`.
    pub scheme: String,
    /// Replicated URLs (0 but for the `+top<N>` rows; fewer than N when fewer URLs
    /// are linked at all).
    pub replicated: usize,
    /// Its figures.
    pub figures: Figures,
}

/// The rows for every K of `ks` and every N of `tops`, K by K in the order above.
pub fn table(
    graph: &HostGraph,
    ks: &[u32],
    tops: &[usize],
    imbalance: f64,
) -> Result<Vec<Row>, AssignError> {
    let most = graph.most_linked(tops.iter().copied().max().unwrap_or(0));
    // The N most-linked URLs as a per-URL flag.
    let replicated = |n: usize| {
        let mut flags = vec![false; graph.url_count()];
        for (u, _) in &most[..n.min(most.len())] {
            flags[*u as usize] = true;
        }
        flags
    };
    let mut rows = Vec::new();
    for &k in ks {
        let row = |scheme: &str, replicated: usize, figures: Figures| Row {
            scheme: scheme.to_owned(),
            replicated,
            figures,
        };
        rows.push(row(
            "url-hash",
            0,
            evaluate_pages(graph, Scheme::Urls(k), &[]),
        ));
        let site = Ownership::hashed(k).map_err(|_| AssignError::NoParts)?;
        rows.push(row(
            "site-hash",
            0,
            evaluate_pages(graph, Scheme::Hosts(&site), &[]),
        ));
        for &n in tops {
            rows.push(row(
                &format!("site-hash+top{n}"),
                n.min(most.len()),
                evaluate_pages(graph, Scheme::Hosts(&site), &replicated(n)),
            ));
        }
        let domain = site.clone().hierarchical();
        rows.push(row(
            "hierarchical",
            0,
            evaluate_pages(graph, Scheme::Hosts(&domain), &[]),
        ));
        let assigned = partition(graph, k, imbalance)?;
        let metis = Ownership::assigned(assigned, k, std::path::Path::new("(computed)"))
            .map_err(|_| AssignError::NoParts)?;
        rows.push(row(
            "metis",
            0,
            evaluate_pages(graph, Scheme::Hosts(&metis), &[]),
        ));
        for &n in tops {
            rows.push(row(
                &format!("metis+top{n}"),
                n.min(most.len()),
                evaluate_pages(graph, Scheme::Hosts(&metis), &replicated(n)),
            ));
        }
    }
    Ok(rows)
}

/// The rows as one aligned text table with a header line.
pub struct Table<'a>(pub &'a [Row]);

impl fmt::Display for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<16} {:>3} {:>10} {:>10} {:>9} {:>8}",
            "scheme", "K", "replicated", "cut_urls", "per_page", "balance"
        )?;
        for r in self.0 {
            writeln!(
                f,
                "{:<16} {:>3} {:>10} {:>10} {:>9.3} {:>8.3}",
                r.scheme,
                r.figures.parts,
                r.replicated,
                r.figures.cut_urls,
                r.figures.cut_per_page(),
                r.figures.balance()
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use url::Url;

    use super::*;
    use crate::graph::Builder;

    /// Eight domains of three hosts of 20 pages; every page links its host's next
    /// two pages, its domain's hosts' home pages and the popular `hub` page.
    fn graph() -> HostGraph {
        let mut b = Builder::new();
        let u = |s: String| Url::parse(&s).unwrap();
        for d in 0..8 {
            for h in ["www", "shop", "blog"] {
                for p in 0..20 {
                    let page = u(format!("http://{h}.d{d}.test/{p}"));
                    let mut links = vec![
                        u(format!("http://{h}.d{d}.test/{}", (p + 1) % 20)),
                        u(format!("http://{h}.d{d}.test/{}", (p + 2) % 20)),
                        u("http://www.d0.test/0".to_owned()),
                    ];
                    for other in ["www", "shop", "blog"] {
                        links.push(u(format!("http://{other}.d{d}.test/0")));
                    }
                    b.add_page(&page, &links);
                }
            }
        }
        b.finish()
    }

    #[test]
    fn rows_are_consistent() {
        let g = graph();
        let rows = table(&g, &[2, 4], &[1, 10], 1.1).unwrap();
        assert_eq!(rows.len(), 2 * 8);
        let at = |k: u32, s: &str| {
            rows.iter()
                .find(|r| r.figures.parts == k && r.scheme == s)
                .unwrap()
                .clone()
        };
        for k in [2, 4] {
            let url = at(k, "url-hash").figures;
            let site = at(k, "site-hash").figures;
            let domain = at(k, "hierarchical").figures;
            let metis = at(k, "metis").figures;
            assert!(url.cut_urls > site.cut_urls, "{url} {site}");
            // Each domain's hosts link each other: keeping them together helps.
            assert!(domain.cut_urls <= site.cut_urls, "{domain} {site}");
            let top1 = at(k, "metis+top1");
            let top10 = at(k, "metis+top10");
            assert_eq!((top1.replicated, top10.replicated), (1, 10));
            assert!(top1.figures.cut_urls <= metis.cut_urls);
            assert!(top10.figures.cut_urls <= top1.figures.cut_urls);
            assert_eq!(top10.figures.part_pages, metis.part_pages);
            // Replication under site-hash: fewer URLs sent, no page moved.
            let (site1, site10) = (at(k, "site-hash+top1"), at(k, "site-hash+top10"));
            assert_eq!((site1.replicated, site10.replicated), (1, 10));
            assert!(site10.figures.cut_urls <= site1.figures.cut_urls);
            assert!(site1.figures.cut_urls <= site.cut_urls);
            assert_eq!(site10.figures.part_pages, site.part_pages);
            for r in rows.iter().filter(|r| r.figures.parts == k) {
                assert_eq!(r.figures.pages, 480);
                assert_eq!(r.figures.part_pages.iter().sum::<u64>(), 480);
            }
        }
        // The hub is the most linked URL and top1 removes every link to it.
        assert_eq!(g.url(g.most_linked(1)[0].0), "http://www.d0.test/0");
        let text = Table(&rows).to_string();
        assert!(
            text.starts_with("scheme") && text.lines().count() == 17,
            "{text}"
        );
    }
}

/// One row of the message table (hypergraph-site-assignment, table 2): site-hash
/// and the paper's assignment ([`partition_messages`]) at one K, measured on the
/// site hypergraph ([`SiteHypergraph::figures`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRow {
    /// Site-hash ([`Ownership::hashed`]).
    pub hash: MessageFigures,
    /// METIS with both balance constraints alone ([`balanced_twice`]).
    pub metis: MessageFigures,
    /// The same refined on the hypergraph ([`partition_messages`]).
    pub assigned: MessageFigures,
}

/// The message-table rows for every K of `ks`, both constraints within `1 +
/// epsilon` of the mean for the assignment (the hash has no bound). Cost: one
/// METIS run and one refinement per K, plus O(pins) per row.
pub fn messages_table(
    graph: &HostGraph,
    ks: &[u32],
    epsilon: f64,
) -> Result<Vec<MessageRow>, AssignError> {
    let sites = SiteHypergraph::from_graph(graph);
    let mut rows = Vec::new();
    for &k in ks {
        let hash = Ownership::hashed(k).map_err(|_| AssignError::NoParts)?;
        let hash_part: Vec<u32> = graph.hosts().iter().map(|h| hash.owner(h)).collect();
        let metis = balanced_twice(graph, k, epsilon)?;
        let table = partition_messages(graph, &sites, k, epsilon)?;
        let assigned: Vec<u32> = graph.hosts().iter().map(|h| table.hosts[h]).collect();
        rows.push(MessageRow {
            hash: sites.figures(&hash_part, k),
            metis: sites.figures(&metis, k),
            assigned: sites.figures(&assigned, k),
        });
    }
    Ok(rows)
}

/// The message rows as one aligned text table: imbalances in percent (as the
/// paper's table 2), messages (METIS alone, then refined), and how many times
/// fewer the refined assignment sends than the hash.
pub struct MessageTable<'a>(pub &'a [MessageRow]);

impl fmt::Display for MessageTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>3} {:>9} {:>9} {:>10} {:>10} {:>9} {:>9} {:>10} {:>7}",
            "K",
            "hash_pg%",
            "hash_by%",
            "hash_msgs",
            "metis_msgs",
            "hp_pg%",
            "hp_by%",
            "hp_msgs",
            "fewer"
        )?;
        for r in self.0 {
            let fewer = if r.assigned.messages == 0 {
                f64::INFINITY
            } else {
                r.hash.messages as f64 / r.assigned.messages as f64
            };
            writeln!(
                f,
                "{:>3} {:>9.2} {:>9.2} {:>10} {:>10} {:>9.2} {:>9.2} {:>10} {:>7.2}",
                r.hash.parts,
                r.hash.page_imbalance * 100.0,
                r.hash.byte_imbalance * 100.0,
                r.hash.messages,
                r.metis.messages,
                r.assigned.page_imbalance * 100.0,
                r.assigned.byte_imbalance * 100.0,
                r.assigned.messages,
                fewer
            )?;
        }
        Ok(())
    }
}
