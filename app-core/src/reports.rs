//! The end-of-crawl reports, Heritrix's in spirit: TSV files with a header line,
//! written in the crawl's state folder beside `crawl.log` when the crawl ends
//! (complete, at `max_pages`, or stopped), and written again, whole, when it ends
//! again after a restart. They are computed from `crawl.log` (and `cut.tsv`, and
//! the seeds), so they say what the log says and a report never needs the crawl's
//! memory:
//!
//! | file | a line per | columns |
//! |---|---|---|
//! | `hosts-report.tsv` | host (`host[:port]`) | pages, bytes, 1xx .. 5xx, other statuses, duplicates, outcomes, cut |
//! | `mimetype-report.tsv` | MIME type of the pages | pages, bytes |
//! | `responsecode-report.tsv` | status (HTTP, or an outcome's negative code) | lines |
//! | `seeds-report.tsv` | seed | status of its line, what became of it |
//!
//! "pages" are the log's lines with an HTTP status (every response or revisit
//! record stored), "bytes" their payload bytes as stored, "outcomes" the lines with
//! a negative code, "cut" the URLs `cut.tsv` lists (in scope, never requested).
//!
//! Cost: one pass over the log and over `cut.tsv`; memory O(hosts + MIME types +
//! statuses + seeds). This module only reads the log and writes the reports; it
//! never changes the log.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};

use spool::publish::durable_rename;
use tracing::warn;

use crate::crawllog::ParsedLine;
use crate::error::AppError;

/// The hosts report's file name.
pub const HOSTS_REPORT: &str = "hosts-report.tsv";
/// The MIME types report's file name.
pub const MIME_REPORT: &str = "mimetype-report.tsv";
/// The status codes report's file name.
pub const STATUS_REPORT: &str = "responsecode-report.tsv";
/// The seeds report's file name.
pub const SEEDS_REPORT: &str = "seeds-report.tsv";

/// The hosts report's header.
pub const HOSTS_HEADER: &str =
    "#host\tpages\tbytes\t1xx\t2xx\t3xx\t4xx\t5xx\tother\tduplicates\toutcomes\tcut";

/// One host's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFigures {
    /// Lines with an HTTP status.
    pub pages: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Pages by status class: 1xx, 2xx, 3xx, 4xx, 5xx, anything else.
    pub classes: [u64; 6],
    /// Pages stored as revisits of an earlier payload (`duplicate:*`).
    pub duplicates: u64,
    /// Lines with a negative code.
    pub outcomes: u64,
    /// URLs of `cut.tsv`.
    pub cut: u64,
}

/// What the reports hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reports {
    /// By host.
    pub hosts: BTreeMap<String, HostFigures>,
    /// By MIME type: pages and bytes.
    pub mimes: BTreeMap<String, (u64, u64)>,
    /// Lines by status.
    pub statuses: BTreeMap<i32, u64>,
    /// Each seed with the status of its first line, if any.
    pub seeds: Vec<(String, Option<i32>)>,
    /// Lines of the log that did not parse (skipped, logged).
    pub bad_lines: u64,
}

/// `host[:port]` of `url` (the port when it is not the scheme's default); the URL
/// itself when it does not parse.
pub fn host_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            _ => url.to_owned(),
        },
        Err(_) => url.to_owned(),
    }
}

/// [`host_of`] for many URLs of few origins: computed once per scheme and
/// authority (the URL up to its first `/`, `?` or `#` after `://`, which holds the
/// whole authority, so its host and port are the URL's). O(1) expected per URL
/// after its origin's first; O(origins) memory.
#[derive(Debug, Default)]
struct Origins {
    /// Origin text -> its `host[:port]`, `None` when it does not parse.
    hosts: HashMap<String, Option<String>>,
    /// The last answer for a URL that does not parse (the URL itself).
    unparsed: String,
}

impl Origins {
    fn host<'s>(&'s mut self, url: &str) -> &'s str {
        let origin = url.find("://").map(|i| {
            let rest = &url[i + 3..];
            &url[..i + 3 + rest.find(['/', '?', '#']).unwrap_or(rest.len())]
        });
        let Some(origin) = origin else {
            self.unparsed = host_of(url);
            return &self.unparsed;
        };
        if !self.hosts.contains_key(origin) {
            let host = host_of(origin);
            let parsed = (host != origin).then_some(host);
            self.hosts.insert(origin.to_owned(), parsed);
        }
        match self.hosts.get(origin) {
            Some(Some(host)) => host,
            _ => {
                self.unparsed = host_of(url);
                &self.unparsed
            }
        }
    }
}

/// The entry of `key` in `map`, a key copied only when it is new.
fn entry<'m, V: Default>(map: &'m mut BTreeMap<String, V>, key: &str) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key).expect("inserted above")
}

impl Reports {
    /// Reads `log` (a `crawl.log`), `cut` (a `cut.tsv`, if any) and the seeds
    /// (canonical URLs, as the log writes them).
    pub fn read(log: &Path, cut: Option<&Path>, seeds: &[String]) -> Result<Self, AppError> {
        let mut r = Reports::default();
        let mut first: HashMap<&str, Option<i32>> = seeds.iter().map(|s| (&**s, None)).collect();
        let mut origins = Origins::default();
        for_lines(log, |line| {
            let p = match ParsedLine::parse(line) {
                Ok(p) => p,
                Err(e) => {
                    if r.bad_lines == 0 {
                        warn!(error = %e, "app: reports: a crawl.log line skipped");
                    }
                    r.bad_lines += 1;
                    return;
                }
            };
            *r.statuses.entry(p.status).or_default() += 1;
            if let Some(s) = first.get_mut(p.url)
                && s.is_none()
            {
                *s = Some(p.status);
            }
            let host = entry(&mut r.hosts, origins.host(p.url));
            if p.status < 0 {
                host.outcomes += 1;
                return;
            }
            let bytes = p.size.unwrap_or(0);
            host.pages += 1;
            host.bytes += bytes;
            let class = match p.status {
                100..=599 => (p.status / 100 - 1) as usize,
                _ => 5,
            };
            host.classes[class] += 1;
            if p.annotations().any(|a| a.starts_with("duplicate:")) {
                host.duplicates += 1;
            }
            let mime = entry(&mut r.mimes, p.mime);
            mime.0 += 1;
            mime.1 += bytes;
        })?;
        if let Some(cut) = cut.filter(|c| c.exists()) {
            for_lines(cut, |line| {
                let url = line.split('\t').next().unwrap_or(line);
                if !url.is_empty() {
                    entry(&mut r.hosts, origins.host(url)).cut += 1;
                }
            })?;
        }
        r.seeds = seeds
            .iter()
            .map(|s| (s.clone(), first.get(s.as_str()).copied().flatten()))
            .collect();
        Ok(r)
    }

    /// Pages and bytes over all hosts.
    pub fn totals(&self) -> (u64, u64) {
        self.hosts
            .values()
            .fold((0, 0), |(p, b), h| (p + h.pages, b + h.bytes))
    }

    /// Writes the four reports into `dir`, each replaced whole (temp file, fsync,
    /// rename); returns their paths.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, AppError> {
        let mut hosts: Vec<_> = self.hosts.iter().collect();
        hosts.sort_by(|a, b| b.1.pages.cmp(&a.1.pages).then(a.0.cmp(b.0)));
        let mut text = format!("{HOSTS_HEADER}\n");
        for (host, h) in hosts {
            let c = &h.classes;
            let _ = writeln!(
                text,
                "{host}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                h.pages,
                h.bytes,
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                c[5],
                h.duplicates,
                h.outcomes,
                h.cut
            );
        }
        let mut paths = vec![replace(dir, HOSTS_REPORT, &text)?];

        let mut mimes: Vec<_> = self.mimes.iter().collect();
        mimes.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
        let mut text = "#mime\tpages\tbytes\n".to_owned();
        for (mime, (n, bytes)) in mimes {
            let _ = writeln!(text, "{mime}\t{n}\t{bytes}");
        }
        paths.push(replace(dir, MIME_REPORT, &text)?);

        let mut text = "#status\tlines\tmeaning\n".to_owned();
        for (status, n) in &self.statuses {
            let _ = writeln!(text, "{status}\t{n}\t{}", meaning(*status));
        }
        paths.push(replace(dir, STATUS_REPORT, &text)?);

        let mut text = "#seed\tstatus\tresult\n".to_owned();
        for (seed, status) in &self.seeds {
            let (code, result) = match status {
                Some(s) => (s.to_string(), meaning(*s)),
                None => ("-".to_owned(), "not-fetched"),
            };
            let _ = writeln!(text, "{seed}\t{code}\t{result}");
        }
        paths.push(replace(dir, SEEDS_REPORT, &text)?);
        Ok(paths)
    }
}

/// A status in a word: `success`, `redirect`, `client-error`, ... or the outcome's
/// reason for a negative code.
pub fn meaning(status: i32) -> &'static str {
    match status {
        100..=199 => "informational",
        200..=299 => "success",
        300..=399 => "redirect",
        400..=499 => "client-error",
        500..=599 => "server-error",
        _ => spool::OutcomeReason::ALL
            .into_iter()
            .find(|r| crate::crawllog::outcome_status(*r) == Some(status))
            .map_or("other", |r| r.as_str()),
    }
}

/// Calls `f` with each line of `path` (without its end).
fn for_lines(path: &Path, mut f: impl FnMut(&str)) -> Result<(), AppError> {
    let io = |source| AppError::File {
        path: path.to_owned(),
        source,
    };
    let mut reader = BufReader::new(File::open(path).map_err(io)?);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(io)? == 0 {
            return Ok(());
        }
        f(line.trim_end_matches(['\n', '\r']));
    }
}

/// Replaces `<dir>/<name>` with `text` durably.
fn replace(dir: &Path, name: &str, text: &str) -> Result<PathBuf, AppError> {
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let io = |source| AppError::File {
        path: tmp.clone(),
        source,
    };
    let mut file = File::create(&tmp).map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    durable_rename(file, &tmp, &path)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_by_origin_are_host_of_each_url() {
        let mut origins = Origins::default();
        for url in [
            "http://a.test/x",
            "http://a.test/y?q#f",
            "http://A.test:80/z",
            "http://a.test:8080/c",
            "https://a.test/",
            "https://a.test:443?q",
            "http://u:p@b.test/",
            "http://b.test\\x/y",
            "http://c.test#frag",
            "http://[::1]:9/p",
            "http://a.test:99999/x",
            "http://a.test:99999/y",
            "not a url",
            "mailto:x@y.test",
        ] {
            assert_eq!(origins.host(url), host_of(url), "{url}");
        }
    }

    #[test]
    fn reports_count_a_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("crawl.log");
        std::fs::write(
            &log,
            "2025-01-01T00:00:00.000Z   200        100 http://a.test/ - - text/html dl-1 - sha1:A - -\n\
             2025-01-01T00:00:00.000Z   200        100 http://a.test/b L - text/html dl-1 - sha1:A - duplicate:digest\n\
             2025-01-01T00:00:00.000Z   404         10 http://a.test:8080/c L - text/plain dl-1 - sha1:B - -\n\
             2025-01-01T00:00:00.000Z -9998          - http://b.test/x L - - - - - - reason:robots_excluded\n\
             garbage\n",
        )
        .unwrap();
        let cut = dir.path().join("cut.tsv");
        std::fs::write(&cut, "http://b.test/1\tdepth\nhttp://b.test/2\tdepth\n").unwrap();
        let seeds = vec!["http://a.test/".to_owned(), "http://c.test/".to_owned()];
        let r = Reports::read(&log, Some(&cut), &seeds).unwrap();
        assert_eq!(r.totals(), (3, 210));
        assert_eq!(r.bad_lines, 1);
        let a = &r.hosts["a.test"];
        assert_eq!(
            (a.pages, a.bytes, a.classes[1], a.duplicates),
            (2, 200, 2, 1)
        );
        assert_eq!(r.hosts["a.test:8080"].classes[3], 1);
        let b = &r.hosts["b.test"];
        assert_eq!((b.pages, b.outcomes, b.cut), (0, 1, 2));
        assert_eq!(r.mimes["text/html"], (2, 200));
        assert_eq!(r.statuses[&-9998], 1);
        assert_eq!(r.seeds[0], ("http://a.test/".to_owned(), Some(200)));
        assert_eq!(r.seeds[1].1, None);

        let paths = r.write(dir.path()).unwrap();
        assert_eq!(paths.len(), 4);
        let hosts = std::fs::read_to_string(dir.path().join(HOSTS_REPORT)).unwrap();
        let mut lines = hosts.lines();
        assert_eq!(lines.next(), Some(HOSTS_HEADER));
        assert_eq!(
            lines.next(),
            Some("a.test\t2\t200\t0\t2\t0\t0\t0\t0\t1\t0\t0")
        );
        let seeds = std::fs::read_to_string(dir.path().join(SEEDS_REPORT)).unwrap();
        assert!(
            seeds.contains("http://c.test/\t-\tnot-fetched\n"),
            "{seeds}"
        );
        let codes = std::fs::read_to_string(dir.path().join(STATUS_REPORT)).unwrap();
        assert!(codes.contains("-9998\t1\trobots_excluded\n"), "{codes}");
    }
}
