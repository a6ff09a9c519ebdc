//! [`Grade`]: a finished `polycrawl demo` judged on its files alone, independently
//! of the demo's own verdict. The demo's `coverage:`, `duplicate fetches:` and
//! `metrics:` lines are the orchestrator's judge (`polycrawl::orchestrate::websim_check`,
//! which reads the repositories' CDXJ index); a test that claims coverage or
//! duplicates checks them here too:
//!
//! - what was stored: the WARC records of every repository of the run
//!   (`<out>/repository`, or every `<out>/repository-p<I>` of a split crawl), read
//!   by [`RepoScan`];
//! - what had to be: websim's `manifest.tsv` (status 200), or `parties.tsv` for a
//!   seed-by-seed crawl, and `never.txt`;
//! - what was fetched: every request log websim wrote in `<out>/websim`
//!   (`requests.tsv`, and `requests-<N>.tsv` of a resumed demo), robots.txt
//!   fetches aside for duplicates (the manager refetches a robots.txt by design).
//!
//! A URL in the log is `scheme://Host header/target`, with the listener's port
//! added when the Host header has none (how websim's files write URLs).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::repository::RepoScan;
use crate::websim::LogLine;

/// One request of a URL: websim's start and end stamps (unix µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fetch {
    /// When websim had read the request.
    pub start_us: u64,
    /// When websim had handed over the response's last byte.
    pub end_us: u64,
}

/// A finished run measured on its repositories and websim's files.
#[derive(Debug, Clone, Default)]
pub struct Grade {
    /// The URLs the crawl had to store with status 200.
    pub expected: BTreeSet<String>,
    /// Each repository's scan, in part order.
    pub scans: Vec<RepoScan>,
    /// Every URL some repository holds with status 200.
    pub stored: HashSet<String>,
    /// Expected URLs no repository holds, sorted.
    pub missing: Vec<String>,
    /// Requests in websim's logs.
    pub requests: usize,
    /// Every page URL requested (robots.txt aside) with its requests, by start.
    pub fetches: BTreeMap<String, Vec<Fetch>>,
    /// Requested URLs that are in `never.txt`, sorted.
    pub never_fetched: Vec<String>,
}

impl Grade {
    /// The demo whose `--out` is `out`, against websim's manifest.
    ///
    /// # Panics
    /// If a file cannot be read.
    pub fn demo(out: &Path) -> Grade {
        let manifest = tsv(&out.join("websim").join("manifest.tsv"));
        let expected = manifest
            .into_iter()
            .filter(|f| f.get(1).map(String::as_str) == Some("200"))
            .map(|f| f[0].clone())
            .collect();
        Grade::with_expected(out, expected)
    }

    /// The seed-by-seed demo whose `--out` is `out`, against the status-200 URLs
    /// of websim's `parties.tsv` (the union of its seeds' parties).
    ///
    /// # Panics
    /// If a file cannot be read.
    pub fn demo_parties(out: &Path) -> Grade {
        let parties = tsv(&out.join("websim").join("parties.tsv"));
        let expected = parties
            .into_iter()
            .filter(|f| f.get(2).map(String::as_str) == Some("200"))
            .map(|f| f[1].clone())
            .collect();
        Grade::with_expected(out, expected)
    }

    fn with_expected(out: &Path, expected: BTreeSet<String>) -> Grade {
        let scans: Vec<RepoScan> = repositories(out)
            .iter()
            .map(|r| RepoScan::read(r).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let stored: HashSet<String> = scans.iter().flat_map(|s| s.ok_urls.clone()).collect();
        let missing = expected
            .iter()
            .filter(|u| !stored.contains(*u))
            .cloned()
            .collect();
        let never: HashSet<String> = read(&out.join("websim").join("never.txt"))
            .lines()
            .map(str::to_owned)
            .collect();
        let log = logs(&out.join("websim"));
        let mut fetches: BTreeMap<String, Vec<Fetch>> = BTreeMap::new();
        let mut never_fetched = BTreeSet::new();
        for l in &log {
            let url = log_url(l);
            if never.contains(&url) {
                never_fetched.insert(url.clone());
            }
            if !l.is_robots() {
                fetches.entry(url).or_default().push(Fetch {
                    start_us: l.start_us,
                    end_us: l.end_us,
                });
            }
        }
        for f in fetches.values_mut() {
            f.sort_unstable();
        }
        Grade {
            expected,
            scans,
            stored,
            missing,
            requests: log.len(),
            fetches,
            never_fetched: never_fetched.into_iter().collect(),
        }
    }

    /// Expected URLs stored.
    pub fn covered(&self) -> usize {
        self.expected.len() - self.missing.len()
    }

    /// Page URLs requested more than once, with their requests.
    pub fn fetched_twice(&self) -> BTreeMap<&str, &[Fetch]> {
        self.fetches
            .iter()
            .filter(|(_, f)| f.len() > 1)
            .map(|(u, f)| (u.as_str(), f.as_slice()))
            .collect()
    }

    /// Status-200 URLs stored, summed over the repositories (a URL two parts
    /// stored counts twice).
    pub fn pages(&self) -> usize {
        self.scans.iter().map(|s| s.ok_urls.len()).sum()
    }

    /// URLs more than one repository stored with status 200.
    pub fn stored_by_several(&self) -> Vec<&str> {
        let mut by: HashMap<&str, usize> = HashMap::new();
        for s in &self.scans {
            for u in &s.ok_urls {
                *by.entry(u.as_str()).or_default() += 1;
            }
        }
        let mut several: Vec<&str> = by
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(u, _)| u)
            .collect();
        several.sort_unstable();
        several
    }

    /// Overlap `(N - I) / I` (Cho and Garcia-Molina): `N` pages stored over the
    /// repositories, `I` distinct ones.
    pub fn overlap(&self) -> f64 {
        let unique = self.stored.len();
        if unique == 0 {
            return 0.0;
        }
        (self.pages() - unique) as f64 / unique as f64
    }

    /// The figures, one line, for a test's output.
    pub fn figures(&self) -> String {
        format!(
            "graded on the WARC files and websim's log: coverage {}/{}, {} pages stored in {} \
             repositories ({} distinct, overlap {:.4}), {} requests, {} page URLs fetched more \
             than once, {} never.txt URLs fetched",
            self.covered(),
            self.expected.len(),
            self.pages(),
            self.scans.len(),
            self.stored.len(),
            self.overlap(),
            self.requests,
            self.fetched_twice().len(),
            self.never_fetched.len()
        )
    }

    /// Panics unless every expected URL is stored.
    pub fn assert_covered(&self) {
        assert!(
            self.missing.is_empty(),
            "{} of {} status-200 URLs not in the repositories, e.g. {:?}",
            self.missing.len(),
            self.expected.len(),
            &self.missing[..self.missing.len().min(10)]
        );
        assert!(
            !self.expected.is_empty(),
            "nothing expected: a wrong --out?"
        );
    }

    /// Panics unless nothing in `never.txt` was requested.
    pub fn assert_nothing_forbidden(&self) {
        assert!(
            self.never_fetched.is_empty(),
            "never.txt URLs fetched: {:?}",
            &self.never_fetched[..self.never_fetched.len().min(10)]
        );
    }

    /// Panics unless no page URL was requested twice.
    pub fn assert_no_duplicate(&self) {
        let twice = self.fetched_twice();
        assert!(
            twice.is_empty(),
            "{} URLs fetched more than once: {:?}",
            twice.len(),
            twice.iter().take(10).collect::<Vec<_>>()
        );
    }

    /// The crawl was exact: every expected URL stored, none fetched twice, nothing
    /// forbidden fetched.
    pub fn assert_exact(&self) {
        self.assert_covered();
        self.assert_no_duplicate();
        self.assert_nothing_forbidden();
    }

    /// The URLs fetched more than once for which no moment of `kills` (unix µs)
    /// lies between their first request and their last one, give or take
    /// `slack_us`: refetches no kill explains.
    pub fn refetched_without_a_kill(&self, kills: &[u64], slack_us: u64) -> Vec<&str> {
        self.fetched_twice()
            .into_iter()
            .filter(|(_, f)| {
                let (first, last) = (f[0].start_us, f[f.len() - 1].start_us);
                !kills
                    .iter()
                    .any(|k| first <= k + slack_us && last + slack_us >= *k)
            })
            .map(|(u, _)| u)
            .collect()
    }
}

/// The repositories of the run in `out`: every `repository-p<I>` in part order
/// (a split crawl; its `repository` folder is made but stays empty), else
/// `repository`.
fn repositories(out: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<(u32, PathBuf)> = std::fs::read_dir(out)
        .unwrap_or_else(|e| panic!("{}: {e}", out.display()))
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let i = name.strip_prefix("repository-p")?.parse().ok()?;
            Some((i, e.path()))
        })
        .collect();
    if parts.is_empty() {
        return vec![out.join("repository")];
    }
    parts.sort();
    parts.into_iter().map(|(_, p)| p).collect()
}

/// Every request of every websim log in `dir` (`requests*.tsv`).
fn logs(dir: &Path) -> Vec<LogLine> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("requests") && name.ends_with(".tsv")
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no request log in {}", dir.display());
    let mut lines = Vec::new();
    for f in files {
        let text = read(&f);
        lines.extend(LogLine::parse_all(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
    }
    lines
}

/// `scheme://host:port/target` of a log line: the Host header lower-cased, the
/// listener's port added when it has none.
pub fn log_url(l: &LogLine) -> String {
    let host = l.host.to_ascii_lowercase();
    let has_port = host
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if has_port {
        format!("{}://{host}{}", l.scheme, l.target)
    } else {
        format!("{}://{host}:{}{}", l.scheme, l.server.port(), l.target)
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn tsv(path: &Path) -> Vec<Vec<String>> {
    read(path)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grade_of(fetches: &[(&str, &[u64])]) -> Grade {
        Grade {
            fetches: fetches
                .iter()
                .map(|(u, starts)| {
                    let f = starts
                        .iter()
                        .map(|s| Fetch {
                            start_us: *s,
                            end_us: s + 10,
                        })
                        .collect();
                    ((*u).to_owned(), f)
                })
                .collect(),
            ..Grade::default()
        }
    }

    #[test]
    fn a_refetch_is_explained_by_a_kill_between_its_requests() {
        let g = grade_of(&[
            ("http://a.test:80/once", &[100]),
            ("http://a.test:80/across", &[100, 2_000]),
            ("http://a.test:80/before", &[100, 200]),
            ("http://a.test:80/after", &[1_500, 1_600]),
        ]);
        assert_eq!(g.fetched_twice().len(), 3);
        assert_eq!(
            g.refetched_without_a_kill(&[1_000], 0),
            ["http://a.test:80/after", "http://a.test:80/before"]
        );
        // The slack reaches the refetch 500 µs after the kill.
        assert_eq!(
            g.refetched_without_a_kill(&[1_000], 500),
            ["http://a.test:80/before"]
        );
        assert_eq!(g.refetched_without_a_kill(&[], 0).len(), 3);
    }

    #[test]
    fn overlap_counts_urls_stored_by_several_repositories() {
        let scan = |urls: &[&str]| RepoScan {
            ok_urls: urls.iter().map(|u| (*u).to_owned()).collect(),
            ..RepoScan::default()
        };
        let scans = vec![scan(&["a", "b"]), scan(&["b", "c"]), scan(&["d"])];
        let g = Grade {
            stored: scans.iter().flat_map(|s| s.ok_urls.clone()).collect(),
            scans,
            ..Grade::default()
        };
        assert_eq!(g.pages(), 5);
        assert_eq!(g.stored_by_several(), ["b"]);
        assert!((g.overlap() - 0.25).abs() < 1e-12);
    }
}
