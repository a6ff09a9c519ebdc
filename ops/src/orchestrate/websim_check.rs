//! [`WebsimCheck`]: a demo run measured against websim's oracle files: coverage of
//! the manifest's status-200 URLs, URLs fetched more than once and URLs fetched
//! that a correct crawl never requests (`never.txt`: robots-excluded URLs, traps),
//! both from websim's request log.
//!
//! A URL in the request log is `<scheme>://<Host header><target>`, which is how
//! websim's canonical manifest URLs are written (they carry the port; a Host
//! header without one gets the listener's, see `log_origin`).
//! robots.txt fetches (paths starting `/robots`, which covers websim's robots.txt
//! redirect target `/robots-real.txt`) are counted apart: the manager fetches a
//! robots.txt again by design when it answered 5xx (retry with back-off), and the
//! http and https origins of one host each fetch theirs (RFC 9309), so such
//! repeats are not duplicate page fetches.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Context;

/// The oracle comparison of one run.
#[derive(Debug, Clone, Default)]
pub struct WebsimCheck {
    /// Status-200 URLs in the manifest.
    pub expected: u64,
    /// Of those, the ones stored in the repository with status 200.
    pub fetched: u64,
    /// A few expected URLs that were not stored.
    pub missing_sample: Vec<String>,
    /// Requests in websim's log.
    pub requests: u64,
    /// URLs (robots.txt aside) requested more than once.
    pub duplicates: Vec<String>,
    /// robots.txt URLs requested more than once.
    pub robots_repeats: u64,
    /// Requested URLs that are in `never.txt`.
    pub never_fetched: Vec<String>,
}

impl WebsimCheck {
    /// Compares `stored` (URLs stored with status 200) with websim's `manifest`,
    /// `never` and request `log` files.
    pub fn run(
        stored: &HashSet<String>,
        manifest: &Path,
        never: &Path,
        log: &Path,
    ) -> anyhow::Result<WebsimCheck> {
        WebsimCheck::run_logs(stored, manifest, never, &[log])
    }

    /// [`WebsimCheck::run`] over the request logs of several websim runs serving
    /// the same web (a resumed demo): a URL requested in two runs is a duplicate.
    pub fn run_logs(
        stored: &HashSet<String>,
        manifest: &Path,
        never: &Path,
        logs: &[&Path],
    ) -> anyhow::Result<WebsimCheck> {
        let expected = tsv(manifest)?
            .into_iter()
            .filter(|f| f.get(1).map(String::as_str) == Some("200"))
            .filter_map(|mut f| f.drain(..).next());
        Self::run_expected(stored, expected, never, logs)
    }

    /// [`WebsimCheck::run_logs`] against the status-200 URLs of websim's
    /// `parties.tsv` (`--components`) instead of its manifest: what a seed-by-seed
    /// crawl must store, the union of its seeds' parties.
    pub fn run_parties(
        stored: &HashSet<String>,
        parties: &Path,
        never: &Path,
        logs: &[&Path],
    ) -> anyhow::Result<WebsimCheck> {
        let expected: HashSet<String> = tsv(parties)?
            .into_iter()
            .filter(|f| f.get(2).map(String::as_str) == Some("200"))
            .filter_map(|mut f| f.drain(..).nth(1))
            .collect();
        Self::run_expected(stored, expected, never, logs)
    }

    /// The comparison with the distinct `expected` URLs given.
    fn run_expected(
        stored: &HashSet<String>,
        expected: impl IntoIterator<Item = String>,
        never: &Path,
        logs: &[&Path],
    ) -> anyhow::Result<WebsimCheck> {
        let mut check = WebsimCheck::default();
        for url in expected {
            check.expected += 1;
            if stored.contains(&url) {
                check.fetched += 1;
            } else if check.missing_sample.len() < 5 {
                check.missing_sample.push(url);
            }
        }
        let never: HashSet<String> = read(never)?.lines().map(str::to_owned).collect();
        let mut counts: HashMap<(String, bool), u32> = HashMap::new();
        let mut lines = Vec::new();
        for log in logs {
            lines.extend(tsv(log)?);
        }
        for f in lines {
            if f.len() < 8 {
                continue;
            }
            check.requests += 1;
            let url = format!("{}{}", log_origin(&f[2], &f[3], &f[4]), f[7]);
            let robots = f[7].starts_with("/robots");
            *counts.entry((url, robots)).or_default() += 1;
        }
        for ((url, robots), n) in counts {
            if never.contains(&url) {
                check.never_fetched.push(url.clone());
            }
            if n > 1 {
                if robots {
                    check.robots_repeats += u64::from(n - 1);
                } else {
                    check.duplicates.push(url);
                }
            }
        }
        check.duplicates.sort();
        check.never_fetched.sort();
        Ok(check)
    }

    /// Coverage in percent.
    pub fn percent(&self) -> f64 {
        if self.expected == 0 {
            100.0
        } else {
            100.0 * self.fetched as f64 / self.expected as f64
        }
    }

    /// True if the crawl was exactly right.
    pub fn perfect(&self) -> bool {
        self.fetched == self.expected && self.duplicates.is_empty() && self.never_fetched.is_empty()
    }
}

/// `scheme://host:port` of a request-log line, as websim's files write URLs: the
/// Host header lower-cased, with the listener's port (from the server address
/// `server`) added when the header has none (some clients, wget2 among them, leave
/// it out).
pub(crate) fn log_origin(scheme: &str, host: &str, server: &str) -> String {
    let host = host.to_ascii_lowercase();
    let has_port = host
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    match server.rsplit_once(':') {
        Some((_, port)) if !has_port => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    }
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// The tab-separated fields of each line of a file, `#` comment lines skipped.
pub(crate) fn tsv(path: &Path) -> anyhow::Result<Vec<Vec<String>>> {
    Ok(read(path)?
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_with_the_oracle() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(
            p("manifest.tsv"),
            "#url\tstatus\tdepth\tparent\nhttp://a.test:80/\t200\t0\t-\nhttp://a.test:80/x\t404\t1\thttp://a.test:80/\nhttp://a.test:80/y\t200\t1\thttp://a.test:80/\n",
        )
        .unwrap();
        std::fs::write(p("never.txt"), "http://a.test:80/secret\n").unwrap();
        let line = |target: &str| {
            format!(
                "1\t2\thttp\tA.test:80\t127.1.0.1:80\t127.0.0.1:5\tGET\t{target}\t200\t10\tpolycrawl\n"
            )
        };
        let log: String = [
            "/robots.txt",
            "/robots.txt",
            "/robots-real.txt",
            "/robots-real.txt",
            "/",
            "/",
            "/secret",
        ]
        .iter()
        .map(|t| line(t))
        .collect();
        std::fs::write(p("requests.tsv"), log).unwrap();
        let stored: HashSet<String> = ["http://a.test:80/".to_owned()].into();
        let c = WebsimCheck::run(
            &stored,
            &p("manifest.tsv"),
            &p("never.txt"),
            &p("requests.tsv"),
        )
        .unwrap();
        assert_eq!((c.expected, c.fetched, c.requests), (2, 1, 7));
        assert_eq!(c.missing_sample, ["http://a.test:80/y"]);
        assert_eq!(c.duplicates, ["http://a.test:80/"]);
        assert_eq!(c.robots_repeats, 2);
        assert_eq!(c.never_fetched, ["http://a.test:80/secret"]);
        assert!((c.percent() - 50.0).abs() < 1e-9);
        assert!(!c.perfect());
    }

    #[test]
    fn origins_get_the_listener_port_when_the_host_header_has_none() {
        assert_eq!(
            log_origin("http", "A.test:8080", "127.1.0.1:8080"),
            "http://a.test:8080"
        );
        assert_eq!(
            log_origin("https", "a.test", "127.1.0.1:4443"),
            "https://a.test:4443"
        );
    }
}
