//! Cho and Garcia-Molina's quality metric (section 8, Figures 10-11;
//! `polycrawl quality`): how many of the most important pages a crawl holds, and
//! how early. Importance is the back-link count in a *reference* crawl, a complete
//! crawl of the same web ([`HostGraph::backlinks`]); its `N` most-linked stored
//! pages are the top-N ([`HostGraph::most_linked_pages`]: a URL the reference
//! could not store, dead or refused by robots.txt, is no page any crawl holds). For a crawl (one repository, or the
//! repositories of a split crawl's parts) the curve gives, after each tenth of its
//! downloads, the share of the top-N it holds.
//!
//! **Download order** is read from the repositories: one repository's pages in
//! storage order (its WARC files in name order, which is batch order, and records
//! in file order); several repositories' pages merged by their records'
//! `WARC-Date` (when the fetch started; whole seconds as polycrawl writes it).
//! Pages of one second are interleaved: each repository's first page of that
//! second, then each one's second, and so on, so no part goes first within a
//! second. A URL stored twice counts once, at its first download; only response
//! records count (a revisit's page is stored as a response too).
//!
//! A crawl that never stores some top-N page (a firewall-mode split crawl that
//! loses pages) ends below 1.0; a complete crawl ends at 1.0 when its web is the
//! reference's.
//!
//! Cost: one pass over each crawl repository reading WARC headers only (no link
//! extraction), 24 bytes per stored page; the top-N set is N hashes. The
//! reference's graph is [`HostGraph::from_repository`]'s. This module must never
//! write anything.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use spool::warc::{RecordType, WarcDate};
use url::Url;

use super::AssignError;
use super::graph::{HostGraph, collect_batches, url_hash};

/// The points of one quality curve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Curve {
    /// Top-N URLs of the reference (N, or fewer when fewer URLs are linked).
    pub top: usize,
    /// Distinct pages the crawl downloaded.
    pub downloads: u64,
    /// After each tenth of the downloads (10 %, 20 %, …, 100 %): downloads so far
    /// and top-N pages held.
    pub points: Vec<(u64, u64)>,
}

impl Curve {
    /// The share of the top-N held at each point (0 when the top-N is empty).
    pub fn shares(&self) -> Vec<f64> {
        self.points
            .iter()
            .map(|(_, held)| {
                if self.top == 0 {
                    0.0
                } else {
                    *held as f64 / self.top as f64
                }
            })
            .collect()
    }
}

impl fmt::Display for Curve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "quality top={} downloads={}", self.top, self.downloads)?;
        writeln!(
            f,
            "{:>6} {:>10} {:>8} {:>7}",
            "crawl", "downloads", "held", "share"
        )?;
        for (i, ((done, held), share)) in self.points.iter().zip(self.shares()).enumerate() {
            writeln!(
                f,
                "{:>5}% {:>10} {:>8} {:>7.3}",
                (i + 1) * 10,
                done,
                held,
                share
            )?;
        }
        Ok(())
    }
}

/// The hashes of the reference's `n` most-linked stored pages.
pub fn top_set(reference: &HostGraph, n: usize) -> HashSet<u64> {
    reference
        .most_linked_pages(n)
        .into_iter()
        .map(|(u, _)| url_hash(reference.url(u)))
        .collect()
}

/// The curve of a crawl whose distinct downloads, in order, are `order` (URL
/// hashes), against the top-N set `top`.
pub fn curve(order: &[u64], top: &HashSet<u64>) -> Curve {
    let total = order.len() as u64;
    let mut points = Vec::with_capacity(10);
    let mut held = 0u64;
    let mut done = 0u64;
    for tenth in 1..=10u64 {
        let until = (total * tenth).div_ceil(10);
        while done < until {
            if top.contains(&order[done as usize]) {
                held += 1;
            }
            done += 1;
        }
        points.push((done, held));
    }
    Curve {
        top: top.len(),
        downloads: total,
        points,
    }
}

/// The distinct pages of `repos` in download order (see the module docs), as URL
/// hashes.
pub fn download_order(repos: &[PathBuf]) -> Result<Vec<u64>, AssignError> {
    // (date, rank among the repository's pages of that date, repository, hash).
    let mut pages: Vec<(Option<WarcDate>, usize, usize, u64)> = Vec::new();
    for (r, repo) in repos.iter().enumerate() {
        let mut last: Option<(Option<WarcDate>, usize)> = None;
        let warc = repo.join(storage::repository::WARC_DIR);
        if !warc.is_dir() {
            return Err(AssignError::NotARepository { path: repo.clone() });
        }
        let mut files = Vec::new();
        collect_batches(&warc, &mut files)?;
        files.sort();
        for file in &files {
            read_pages(file, |date, hash| {
                let rank = match last {
                    Some((d, n)) if d == date => n + 1,
                    _ => 0,
                };
                last = Some((date, rank));
                pages.push((date, rank, r, hash));
            })?;
        }
    }
    if repos.len() > 1 {
        // Stable: a repository's pages of one date and rank (dates going back
        // and forth) keep their storage order.
        pages.sort_by_key(|(date, rank, r, _)| (*date, *rank, *r));
    }
    let mut seen = HashSet::with_capacity(pages.len());
    Ok(pages
        .into_iter()
        .filter_map(|(_, _, _, hash)| seen.insert(hash).then_some(hash))
        .collect())
}

/// Every response record of one WARC file: its date and URL hash (the URL as
/// the `url` crate writes it, as [`HostGraph`] keeps it).
fn read_pages(file: &Path, mut page: impl FnMut(Option<WarcDate>, u64)) -> Result<(), AssignError> {
    storage::check_batch(file, storage::Digests::Trust, |rec| {
        if rec.headers.record_type() != Some(RecordType::Response) {
            return;
        }
        let Some(url) = rec.headers.target_uri().and_then(|t| Url::parse(t).ok()) else {
            return;
        };
        page(rec.headers.date(), url_hash(url.as_str()));
    })
    .map(|_| ())
    .map_err(|source| AssignError::Batch {
        path: file.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Builder;
    use crate::graph::tests::repository;
    use app_core::AppConfig;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    /// The hand-built reference: `hub` linked by 4 pages, `b` by 3, `c` by 2, `d`
    /// by 1 (and itself, not counted).
    fn reference() -> HostGraph {
        let mut b = Builder::new();
        let hub = u("http://h.test/");
        let (pb, pc, pd) = (
            u("http://b.test/"),
            u("http://c.test/"),
            u("http://d.test/"),
        );
        b.add_page(&hub, &[pb.clone(), pc.clone(), pd.clone()]);
        b.add_page(&pb, &[hub.clone(), pc.clone()]);
        b.add_page(&pc, &[hub.clone(), pb.clone()]);
        b.add_page(&pd, &[hub.clone(), pb.clone(), pd.clone()]);
        b.add_page(&u("http://e.test/"), std::slice::from_ref(&hub));
        // Linked by three pages, never stored: no page of the top-N.
        let dead = u("http://dead.test/");
        for page in ["http://e.test/1", "http://e.test/2", "http://e.test/3"] {
            b.add_page(&u(page), std::slice::from_ref(&dead));
        }
        b.finish()
    }

    #[test]
    fn top_n_by_backlinks() {
        let g = reference();
        assert_eq!(g.url(g.most_linked(3)[2].0), "http://dead.test/");
        let most: Vec<(&str, u32)> = g
            .most_linked_pages(10)
            .iter()
            .map(|(u, c)| (g.url(*u), *c))
            .collect();
        assert_eq!(
            most,
            [
                ("http://h.test/", 4),
                ("http://b.test/", 3),
                ("http://c.test/", 2),
                ("http://d.test/", 1)
            ]
        );
        assert_eq!(top_set(&g, 2).len(), 2);
    }

    #[test]
    fn curve_counts_top_pages_held_after_each_tenth() {
        let top = top_set(&reference(), 2);
        let h = |s: &str| url_hash(u(s).as_str());
        // 20 downloads: the hub 5th, b 20th.
        let mut order: Vec<u64> = (0..18).map(|i| h(&format!("http://x.test/{i}"))).collect();
        order.insert(4, h("http://h.test/"));
        order.push(h("http://b.test/"));
        let c = curve(&order, &top);
        assert_eq!(c.downloads, 20);
        assert_eq!(c.points[0], (2, 0));
        assert_eq!(c.points[2], (6, 1));
        assert_eq!(c.points[8], (18, 1));
        assert_eq!(c.points[9], (20, 2));
        assert_eq!(c.shares()[9], 1.0);
        assert_eq!(c.shares()[2], 0.5);
        assert!(c.to_string().contains("100%"));
        // An empty crawl: ten points of nothing.
        let c = curve(&[], &top);
        assert!(c.points.iter().all(|p| *p == (0, 0)));
    }

    #[test]
    fn order_from_repositories_merges_by_date_and_counts_a_url_once() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one");
        let two = dir.path().join("two");
        std::fs::create_dir_all(&one).unwrap();
        std::fs::create_dir_all(&two).unwrap();
        let a = repository(
            &one,
            &[
                vec![("http://h.test/", vec!["http://b.test/"], None)],
                vec![("http://h.test/", vec![], None)],
            ],
        );
        // b's records must carry a later WARC-Date (whole seconds): wait for the
        // wall clock's next second.
        let second = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
        };
        let written = second();
        while second() <= written {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let b = repository(&two, &[vec![("http://b.test/", vec![], None)]]);
        let order = download_order(&[b, a.clone()]).unwrap();
        let h = |s: &str| url_hash(s);
        assert_eq!(order, [h("http://h.test/"), h("http://b.test/")]);
        // Within one second, the repositories take turns.
        let (three, four) = (dir.path().join("three"), dir.path().join("four"));
        std::fs::create_dir_all(&three).unwrap();
        std::fs::create_dir_all(&four).unwrap();
        let page = |u: &'static str| (u, vec![], None);
        let c = repository(
            &three,
            &[vec![page("http://c.test/1"), page("http://c.test/2")]],
        );
        let d = repository(
            &four,
            &[vec![page("http://d.test/1"), page("http://d.test/2")]],
        );
        let order = download_order(&[c, d]).unwrap();
        let names: Vec<u64> = [
            "http://c.test/1",
            "http://d.test/1",
            "http://c.test/2",
            "http://d.test/2",
        ]
        .iter()
        .map(|u| h(u))
        .collect();
        // Unless the clock turned a second between the two repositories.
        if order != names {
            assert_eq!(order[..2], [names[0], names[2]]);
        }
        let g = HostGraph::from_repository(&a, &AppConfig::default()).unwrap();
        assert_eq!(g.page_count(), 1);
        assert!(matches!(
            download_order(&[dir.path().join("none")]),
            Err(AssignError::NotARepository { .. })
        ));
    }
}
