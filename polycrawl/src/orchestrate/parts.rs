//! Split crawls (K application parts over S crawling systems): the flags of
//! `polycrawl demo` and `polycrawl crawl`, and the metrics of Cho and
//! Garcia-Molina's "Parallel Crawlers" (2002) computed at the end from the
//! parts' repositories and summary lines.
//!
//! - pages `N`: 200 responses stored, summed over the parts (a URL stored by two
//!   parts counts twice); unique pages `I`: distinct URLs over all repositories;
//! - overlap `(N - I) / I`;
//! - coverage `I / U` against websim's manifest (`U` pages to find);
//! - communication overhead: URLs exchanged per downloaded page (`sent / N`);
//! - balance: the largest part's pages over the mean (1.0 is perfect);
//! - two-level mode (FC2L-UDC): per part and in total, sites the coordinator
//!   assigned, sites reported (and per downloaded page) and URLs parked, from the
//!   parts' summary lines.
//!
//! websim's request log stays the ground truth for duplicate fetches (the demo's
//! check); these figures come from what the parts stored. This module never
//! decides ownership: the parts do, with `app_core::parts`.

use std::collections::HashSet;
use std::fmt::Write as _;

use app_core::PartMode;

use super::repo_scan::RepoScan;

/// The flags that split a crawl.
#[derive(Debug, Clone, clap::Args)]
pub struct SplitArgs {
    /// Application parts: each owns the hosts that hash (or the assignment file)
    /// maps to it, and is an ordinary application to its manager (default: one
    /// per 16 cores; see `sizing.rs`).
    #[arg(long, default_value_t = super::sizing::default_parts(),
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parts: u32,
    /// Crawling systems (manager, resolver, a share of the downloaders); part I
    /// is served by system I % SYSTEMS.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub systems: u32,
    /// What a part does with links to hosts it does not own: exchange (send them
    /// to their owner), firewall (drop them) or crossover (crawl them itself once
    /// its own frontier is dry).
    #[arg(long, default_value = "exchange")]
    pub mode: PartMode,
    /// An assignment file (`polycrawl assign`): host to part; other hosts go by the
    /// hash.
    #[arg(long, value_name = "FILE")]
    pub assignment: Option<std::path::PathBuf>,
    /// A replicated-URL file (`polycrawl assign --replicate`): the most-linked URLs
    /// of a previous crawl, crawled by their owner and never exchanged.
    #[arg(long, value_name = "FILE")]
    pub replicated: Option<std::path::PathBuf>,
    /// Hosts the assignment file does not name go by the hash of the host (site)
    /// or of its registered domain (hierarchical: a domain's hosts share a part),
    /// overriding app.partitioning [default: site].
    #[arg(long, value_name = "RULE")]
    pub partitioning: Option<app_core::Partitioning>,
    /// With `--mode two-level`: 2L without the coverage fix (every link to another
    /// site reduced to its site's root), for comparison.
    #[arg(long)]
    pub no_fix: bool,
    /// With `--mode two-level`: how the coordinator deals new sites to the parts,
    /// round-robin (the paper's) or balanced (fewest pages so far).
    #[arg(long, default_value_t = coordinator::Policy::RoundRobin)]
    pub site_policy: coordinator::Policy,
}

impl SplitArgs {
    /// Sets the app config's split: parts, mode and coverage fix, and the
    /// assignment file, partitioning rule and replicated-URL file where given
    /// (the config's own otherwise).
    pub fn apply(&self, app: &mut app_core::AppConfig) {
        app.parts = self.parts;
        app.part_mode = self.mode;
        app.coverage_fix = !self.no_fix;
        if let Some(file) = &self.assignment {
            app.assignment_file = Some(file.clone());
        }
        if let Some(rule) = self.partitioning {
            app.partitioning = rule;
        }
        if let Some(file) = &self.replicated {
            app.replicated_file = Some(file.clone());
        }
    }

    /// Whether the split must reach every page of the manifest with no overlap:
    /// exchange mode, and two-level mode with the coverage fix.
    pub fn full_coverage(&self) -> bool {
        match self.mode {
            PartMode::Exchange => true,
            PartMode::TwoLevel => !self.no_fix,
            PartMode::Firewall | PartMode::Crossover => false,
        }
    }
}

/// One part's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PartFigures {
    /// 200 pages stored.
    pub pages: u64,
    /// URLs it sent to other parts.
    pub sent: u64,
    /// Two-level mode: sites the coordinator assigned it, sites it reported,
    /// URLs it parked (0 in the other modes).
    pub sites: u64,
    /// See `sites`.
    pub reported: u64,
    /// See `sites`.
    pub parked: u64,
}

/// The figures of a split crawl.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// Per part.
    pub parts: Vec<PartFigures>,
    /// `N`: pages over all parts.
    pub pages: u64,
    /// `I`: distinct pages.
    pub unique: u64,
    /// Pages to find (websim's manifest), if known.
    pub expected: Option<u64>,
}

impl Metrics {
    /// From the parts' repository scans and summary lines (in part order).
    pub fn compute(
        scans: &[RepoScan],
        summaries: &[Option<String>],
        expected: Option<u64>,
    ) -> Self {
        let mut union: HashSet<&str> = HashSet::new();
        let mut parts = Vec::new();
        for (i, scan) in scans.iter().enumerate() {
            union.extend(scan.ok_urls.iter().map(String::as_str));
            let line = summaries.get(i).and_then(|s| s.as_deref());
            let count = |key: &str| line.and_then(|l| count_after(l, key)).unwrap_or(0);
            parts.push(PartFigures {
                pages: scan.ok_urls.len() as u64,
                sent: line.and_then(sent_of).unwrap_or(0),
                sites: count("sites assigned "),
                reported: count("sites reported "),
                parked: count("parked "),
            });
        }
        Metrics {
            pages: parts.iter().map(|p| p.pages).sum(),
            unique: union.len() as u64,
            parts,
            expected,
        }
    }

    /// `(N - I) / I`.
    pub fn overlap(&self) -> f64 {
        if self.unique == 0 {
            return 0.0;
        }
        (self.pages - self.unique) as f64 / self.unique as f64
    }

    /// `I / U`, if `U` is known.
    pub fn coverage(&self) -> Option<f64> {
        self.expected
            .filter(|u| *u > 0)
            .map(|u| self.unique as f64 / u as f64)
    }

    /// URLs exchanged per downloaded page.
    pub fn overhead(&self) -> f64 {
        let sent: u64 = self.parts.iter().map(|p| p.sent).sum();
        if self.pages == 0 {
            return 0.0;
        }
        sent as f64 / self.pages as f64
    }

    /// Sites reported to the coordinator per downloaded page (two-level mode).
    pub fn reports_per_page(&self) -> f64 {
        let reported: u64 = self.parts.iter().map(|p| p.reported).sum();
        if self.pages == 0 {
            return 0.0;
        }
        reported as f64 / self.pages as f64
    }

    /// The largest part's pages over the mean.
    pub fn balance(&self) -> f64 {
        let max = self.parts.iter().map(|p| p.pages).max().unwrap_or(0);
        if self.pages == 0 || self.parts.is_empty() {
            return 0.0;
        }
        max as f64 / (self.pages as f64 / self.parts.len() as f64)
    }

    /// The summary block: one line per part, then the totals.
    pub fn render(&self, mode: PartMode, systems: u32) -> String {
        let mut o = String::new();
        let k = self.parts.len() as u32;
        let _ = writeln!(
            o,
            "parts:      {k} parts ({mode:?} mode) over {systems} crawling system(s)"
        );
        let two_level = mode == PartMode::TwoLevel;
        for (i, p) in self.parts.iter().enumerate() {
            let _ = write!(
                o,
                "  part {i} (system {}): {} pages, {} URLs sent",
                i as u32 % systems.max(1),
                p.pages,
                p.sent
            );
            if two_level {
                let _ = write!(
                    o,
                    ", {} sites assigned, {} sites reported, {} URLs parked",
                    p.sites, p.reported, p.parked
                );
            }
            o.push('\n');
        }
        let coverage = self
            .coverage()
            .map_or("unknown".to_owned(), |c| format!("{:.2} %", c * 100.0));
        let _ = writeln!(
            o,
            "metrics:    pages {} unique {} overlap {:.4} coverage {coverage} \
             communication overhead {:.3} URLs/page balance {:.3}",
            self.pages,
            self.unique,
            self.overlap(),
            self.overhead(),
            self.balance()
        );
        if two_level {
            let total = |f: fn(&PartFigures) -> u64| self.parts.iter().map(f).sum::<u64>();
            let _ = writeln!(
                o,
                "two-level:  sites assigned {} sites reported {} ({:.4} per page) URLs parked {}",
                total(|p| p.sites),
                total(|p| p.reported),
                self.reports_per_page(),
                total(|p| p.parked)
            );
        }
        o
    }
}

/// The number after `key` in a part's summary line (`sites assigned 15`).
fn count_after(line: &str, key: &str) -> Option<u64> {
    let after = &line[line.find(key)? + key.len()..];
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The `sent N URLs` of a part's summary line.
pub fn sent_of(line: &str) -> Option<u64> {
    let after = &line[line.find(": sent ")? + ": sent ".len()..];
    after.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(urls: &[&str]) -> RepoScan {
        RepoScan {
            ok_urls: urls.iter().map(|u| (*u).to_owned()).collect(),
            responses: urls.len() as u64,
            ..RepoScan::default()
        }
    }

    #[test]
    fn figures_of_two_parts() {
        let scans = [scan(&["a", "b", "c"]), scan(&["c", "d"])];
        let lines = [
            Some("app bfs-p0: Complete: 3 URLs requested, part 0 of 2 (Exchange): sent 4 URLs in 1 files, applied 0 URLs".to_owned()),
            None,
        ];
        let m = Metrics::compute(&scans, &lines, Some(8));
        assert_eq!((m.pages, m.unique), (5, 4));
        assert!((m.overlap() - 0.25).abs() < 1e-9);
        assert_eq!(m.coverage(), Some(0.5));
        assert!((m.overhead() - 0.8).abs() < 1e-9);
        assert!((m.balance() - 1.2).abs() < 1e-9);
        assert!(m.render(PartMode::Exchange, 2).contains("overlap 0.2500"));
        assert_eq!(sent_of("x: sent 12 URLs"), Some(12));
        assert_eq!(sent_of("nothing"), None);
        let two = "app bfs-p1: Complete: ... part 1 of 2 (TwoLevel): sent 4 URLs in 1 files, \
                   applied 0 URLs in 0 files, dropped 0, kept 0, crossed 0, sites assigned 7, \
                   sites reported 3, parked 12 URLs, released 12";
        let m = Metrics::compute(&scans, &[None, Some(two.to_owned())], Some(8));
        assert_eq!(
            (m.parts[1].sites, m.parts[1].reported, m.parts[1].parked),
            (7, 3, 12)
        );
        assert!((m.reports_per_page() - 0.6).abs() < 1e-9);
        let text = m.render(PartMode::TwoLevel, 1);
        assert!(
            text.contains("7 sites assigned, 3 sites reported, 12 URLs parked"),
            "{text}"
        );
        assert!(
            text.contains("sites reported 3 (0.6000 per page)"),
            "{text}"
        );
    }
}
