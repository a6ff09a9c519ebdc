//! `Cuts`: every in-scope URL the crawl did not request, with the rule that cut
//! it, so that a cut is never silent. The summary's verdict is `Complete` only
//! when nothing is cut; the crawl leaves `cut.tsv` in its state folder (one
//! `URL<TAB>rule` a line), which `requeue_file` takes back as input: a later run
//! of the same crawl requests exactly those URLs (`polycrawl crawl --requeue`).
//!
//! Rules: the trap detectors' names (`traps::Detector`), `depth` (deeper than
//! `max_depth`), `host_ceiling` (a scoped crawl's host reached `host_budget_max`)
//! and `host_budget` (an open crawl's host budget).
//!
//! Two kinds of rule: those that cut a link *before* the seen set (the detectors,
//! the depth), which may cut a URL the crawl requested long ago (found again
//! deeper), and those that cut a new URL *after* the seen set took it (the
//! budgets). A URL counts once, under the first rule that cut it (an after-seen
//! rule replaces a before-seen one: the URL is in the seen set now), and stops
//! counting when it is requested after all (found again by a way no rule cuts, or
//! released when its host's budget grew). At the end (`Cuts::finish`) the
//! before-seen cuts of URLs the seen set holds are dropped, so `cut.tsv` holds
//! exactly the URLs cut and never requested.
//!
//! Durability: events go to the append-only log `cuts.log` (`cut<TAB>rule<TAB>URL`
//! or `clear<TAB>URL`); `Cuts::sync` makes them durable, and the crawl loop calls
//! it before it records a generation, so no event of a recorded generation is lost.
//! A replayed generation may log an event twice: the log is read as a set. At open
//! the log is replayed; `cut.tsv` is written from it at the end (`Cuts::finish`).
//!
//! Memory: a 64-bit hash per URL cut or cleared, and a host name per host with
//! cuts: O(URLs cut). This module never decides a cut: admission does.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};

use url::Url;

use crate::error::AppError;

/// The event log's file name in the state folder.
pub const LOG_FILE: &str = "cuts.log";
/// The list of cut URLs written at the end, in the state folder.
pub const CUT_FILE: &str = "cut.tsv";

/// The URLs and hosts one rule cut.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleCuts {
    /// Distinct URLs cut and never requested.
    pub urls: u64,
    /// Distinct hosts among them.
    pub hosts: u64,
}

/// The cut URLs of a crawl (see the module docs).
#[derive(Debug)]
pub struct Cuts {
    path: PathBuf,
    /// The rules that cut before the seen set, then those that cut after it.
    before_seen: Vec<&'static str>,
    after_seen: Vec<&'static str>,
    log: BufWriter<File>,
    /// Hash of each URL cut and not cleared, with its rule.
    cut: HashMap<u64, &'static str>,
    /// Hashes of URLs cleared: requested after a cut; never counted again.
    cleared: HashSet<u64>,
    /// Per rule: hosts with cuts, and URLs per host.
    hosts: BTreeMap<&'static str, HashMap<Box<str>, u64>>,
    dirty: bool,
}

fn hash(url: &str) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(url)
}

fn file_error(path: &Path) -> impl FnOnce(std::io::Error) -> AppError + '_ {
    move |source| AppError::File {
        path: path.to_owned(),
        source,
    }
}

/// The host of `url` text (`""` when it has none).
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    authority.rsplit_once(':').map_or(authority, |(h, p)| {
        if p.bytes().all(|b| b.is_ascii_digit()) {
            h
        } else {
            authority
        }
    })
}

impl Cuts {
    /// The cuts logged in `state_dir` so far (none on a first start), with the
    /// rules that cut before the seen set and after it (see the module docs; an
    /// unknown rule in the log is an error).
    pub fn open(
        state_dir: &Path,
        before_seen: &[&'static str],
        after_seen: &[&'static str],
    ) -> Result<Self, AppError> {
        let path = state_dir.join(LOG_FILE);
        let mut text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(file_error(&path)(e)),
        };
        if !text.is_empty() && !text.ends_with('\n') {
            // A line cut short by a crash: its event is logged again when its
            // generation is read again. Cut it off before appending.
            text.truncate(text.rfind('\n').map_or(0, |i| i + 1));
            let file = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(file_error(&path))?;
            file.set_len(text.len() as u64).map_err(file_error(&path))?;
            file.sync_data().map_err(file_error(&path))?;
        }
        let mut cuts = Self {
            log: BufWriter::new(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(file_error(&path))?,
            ),
            path,
            before_seen: before_seen.to_vec(),
            after_seen: after_seen.to_vec(),
            cut: HashMap::new(),
            cleared: HashSet::new(),
            hosts: BTreeMap::new(),
            dirty: false,
        };
        for line in text.lines() {
            let bad = || AppError::BadState {
                path: cuts.path.clone(),
                line: line.chars().take(100).collect(),
            };
            match line.split('\t').collect::<Vec<_>>()[..] {
                ["cut", rule, url] => {
                    let rule = cuts.rule(rule).ok_or_else(bad)?;
                    cuts.note_cut(rule, url);
                }
                ["clear", url] => {
                    cuts.note_clear(url);
                }
                _ => return Err(bad()),
            }
        }
        Ok(cuts)
    }

    /// The rule named `name`, as the static name this crawl knows.
    fn rule(&self, name: &str) -> Option<&'static str> {
        self.before_seen
            .iter()
            .chain(&self.after_seen)
            .find(|r| **r == name)
            .copied()
    }

    fn after_seen(&self, rule: &str) -> bool {
        self.after_seen.contains(&rule)
    }

    fn note_cut(&mut self, rule: &'static str, url: &str) -> bool {
        let h = hash(url);
        if self.cleared.contains(&h) {
            return false;
        }
        match self.cut.get(&h) {
            None => {}
            Some(old) if self.after_seen(rule) && !self.after_seen(old) => {
                // Now in the seen set, and cut by a budget: that rule counts.
                self.uncount(h, url);
            }
            Some(_) => return false,
        }
        self.cut.insert(h, rule);
        *self
            .hosts
            .entry(rule)
            .or_default()
            .entry(host_of(url).into())
            .or_default() += 1;
        true
    }

    fn note_clear(&mut self, url: &str) -> bool {
        let h = hash(url);
        if !self.cleared.insert(h) {
            return false;
        }
        self.uncount(h, url);
        true
    }

    /// Takes `url` (hash `h`) out of the cuts.
    fn uncount(&mut self, h: u64, url: &str) {
        if let Some(rule) = self.cut.remove(&h)
            && let Some(hosts) = self.hosts.get_mut(rule)
        {
            let host = host_of(url);
            if let Some(n) = hosts.get_mut(host) {
                *n -= 1;
                if *n == 0 {
                    hosts.remove(host);
                }
            }
            if hosts.is_empty() {
                self.hosts.remove(rule);
            }
        }
    }

    /// `url` was cut by `rule` (counted if it is new and was never requested).
    pub fn cut(&mut self, rule: &'static str, url: &str) -> Result<(), AppError> {
        if self.note_cut(rule, url) {
            writeln!(self.log, "cut\t{rule}\t{url}").map_err(file_error(&self.path))?;
            self.dirty = true;
        }
        Ok(())
    }

    /// `url` is requested after all: if it was cut, it no longer counts. O(1).
    pub fn requested(&mut self, url: &Url) -> Result<(), AppError> {
        if self.cut.is_empty() || !self.cut.contains_key(&hash(url.as_str())) {
            return Ok(());
        }
        if self.note_clear(url.as_str()) {
            writeln!(self.log, "clear\t{url}").map_err(file_error(&self.path))?;
            self.dirty = true;
        }
        Ok(())
    }

    /// Makes every event so far durable (before a generation is recorded).
    pub fn sync(&mut self) -> Result<(), AppError> {
        if !self.dirty {
            return Ok(());
        }
        self.log.flush().map_err(file_error(&self.path))?;
        self.log
            .get_ref()
            .sync_data()
            .map_err(file_error(&self.path))?;
        self.dirty = false;
        Ok(())
    }

    /// The rule that cut `url`, if it still counts.
    pub fn rule_of(&self, url: &str) -> Option<&'static str> {
        self.cut.get(&hash(url)).copied()
    }

    /// URLs and hosts cut, by rule.
    pub fn totals(&self) -> BTreeMap<String, RuleCuts> {
        self.hosts
            .iter()
            .map(|(rule, hosts)| {
                let cuts = RuleCuts {
                    urls: hosts.values().sum(),
                    hosts: hosts.len() as u64,
                };
                ((*rule).to_owned(), cuts)
            })
            .collect()
    }

    /// Writes `cut.tsv` beside the log (one `URL<TAB>rule` a line, in the order
    /// they were cut; replaced whole, durably) and returns its path. `requested`
    /// answers, for sorted seen-set keys, which ones the seen set holds: the
    /// before-seen cuts of those are dropped (the crawl requested them). Reads the
    /// log once: O(log) time and memory, plus the seen set's one read.
    pub fn finish(
        &mut self,
        key_of: impl Fn(&str) -> Option<String>,
        requested: impl FnOnce(&[&[u8]]) -> Result<Vec<bool>, AppError>,
    ) -> Result<PathBuf, AppError> {
        self.sync()?;
        let text = fs::read_to_string(&self.path).map_err(file_error(&self.path))?;
        let mut listed: Vec<(&str, &str)> = Vec::new();
        let mut written = HashSet::new();
        for line in text.lines() {
            if let ["cut", _, url] = line.split('\t').collect::<Vec<_>>()[..] {
                let h = hash(url);
                if let Some(rule) = self.cut.get(&h)
                    && written.insert(h)
                {
                    listed.push((url, rule));
                }
            }
        }
        // Before-seen cuts of URLs in the seen set: requested, not cut.
        let mut keyed: Vec<(String, usize)> = listed
            .iter()
            .enumerate()
            .filter(|(_, (_, rule))| !self.after_seen(rule))
            .filter_map(|(i, (url, _))| Some((key_of(url)?, i)))
            .collect();
        keyed.sort_unstable();
        let keys: Vec<&[u8]> = keyed.iter().map(|(k, _)| k.as_bytes()).collect();
        let found = requested(&keys)?;
        let mut drop = vec![false; listed.len()];
        for ((_, i), found) in keyed.iter().zip(found) {
            drop[*i] = found;
        }
        let mut out = String::new();
        for (i, (url, rule)) in listed.iter().enumerate() {
            if drop[i] {
                self.note_clear(url);
            } else {
                out.push_str(url);
                out.push('\t');
                out.push_str(rule);
                out.push('\n');
            }
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let target = dir.join(CUT_FILE);
        let temp = dir.join(format!("{CUT_FILE}.tmp"));
        let mut file = File::create(&temp).map_err(file_error(&temp))?;
        file.write_all(out.as_bytes()).map_err(file_error(&temp))?;
        spool::publish::durable_rename(file, &temp, &target)?;
        Ok(target)
    }
}

/// The URLs of a cut file (or any list of URLs, one a line, with anything after
/// a tab ignored, `#` comments and blank lines skipped).
pub fn read_requeue(path: &Path) -> Result<Vec<String>, AppError> {
    let text = fs::read_to_string(path).map_err(file_error(path))?;
    Ok(text
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: [&str; 2] = ["depth", "sequence"];
    const AFTER: [&str; 1] = ["host_ceiling"];

    fn open(dir: &Path) -> Result<Cuts, AppError> {
        Cuts::open(dir, &BEFORE, &AFTER)
    }

    /// Every URL's key is the URL; `held` are in the seen set.
    fn finish(c: &mut Cuts, held: &[&str]) -> PathBuf {
        let held: Vec<Vec<u8>> = held.iter().map(|h| h.as_bytes().to_vec()).collect();
        c.finish(
            |url| Some(url.to_owned()),
            |keys| Ok(keys.iter().map(|k| held.iter().any(|h| h == k)).collect()),
        )
        .unwrap()
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn a_url_counts_once_until_requested_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = open(dir.path()).unwrap();
        assert!(c.totals().is_empty());
        c.cut("sequence", "http://a.test/c/9").unwrap();
        c.cut("depth", "http://a.test/c/9").unwrap();
        c.cut("depth", "http://b.test:8080/deep").unwrap();
        c.cut("host_ceiling", "http://b.test/x").unwrap();
        c.cut("host_ceiling", "http://c.test/y").unwrap();
        c.requested(&url("http://c.test/y")).unwrap();
        c.cut("host_ceiling", "http://c.test/y").unwrap();
        c.requested(&url("http://a.test/other")).unwrap();
        let totals = c.totals();
        assert_eq!(totals["sequence"], RuleCuts { urls: 1, hosts: 1 });
        assert_eq!(totals["depth"], RuleCuts { urls: 1, hosts: 1 });
        assert_eq!(totals["host_ceiling"], RuleCuts { urls: 1, hosts: 1 });
        c.sync().unwrap();
        drop(c);
        let mut again = open(dir.path()).unwrap();
        assert_eq!(again.totals(), totals, "replayed from the log");
        let file = finish(&mut again, &[]);
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "http://a.test/c/9\tsequence\nhttp://b.test:8080/deep\tdepth\nhttp://b.test/x\thost_ceiling\n"
        );
        assert_eq!(
            read_requeue(&file).unwrap(),
            [
                "http://a.test/c/9",
                "http://b.test:8080/deep",
                "http://b.test/x"
            ]
        );
    }

    #[test]
    fn requested_urls_are_not_cut_and_a_budget_replaces_a_detector() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = open(dir.path()).unwrap();
        // Requested at depth 1, cut when found again at depth 9: not a cut.
        c.cut("depth", "http://a.test/old").unwrap();
        // Cut by a detector, then taken by the seen set and cut by the ceiling.
        c.cut("sequence", "http://a.test/c/9").unwrap();
        c.cut("host_ceiling", "http://a.test/c/9").unwrap();
        c.cut("sequence", "http://a.test/c/9").unwrap();
        assert_eq!(c.totals().len(), 2);
        assert_eq!(c.totals()["host_ceiling"].urls, 1);
        let file = finish(&mut c, &["http://a.test/old", "http://a.test/c/9"]);
        assert_eq!(
            fs::read_to_string(file).unwrap(),
            "http://a.test/c/9\thost_ceiling\n",
            "a budget's cut is in the seen set and still cut"
        );
        assert_eq!(c.totals().len(), 1, "{:?}", c.totals());
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_a_bad_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(LOG_FILE),
            "cut\tdepth\thttp://a.test/1\ncut\tdepth\thttp://a.te",
        )
        .unwrap();
        let mut c = open(dir.path()).unwrap();
        assert_eq!(c.totals()["depth"].urls, 1);
        c.cut("depth", "http://a.test/2").unwrap();
        c.sync().unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join(LOG_FILE)).unwrap(),
            "cut\tdepth\thttp://a.test/1\ncut\tdepth\thttp://a.test/2\n",
            "the torn line is gone"
        );
        drop(c);
        fs::write(dir.path().join(LOG_FILE), "cut\tnope\thttp://a.test/1\n").unwrap();
        assert!(matches!(open(dir.path()), Err(AppError::BadState { .. })));
    }

    #[test]
    fn hosts_of_urls() {
        assert_eq!(host_of("http://a.test:8080/x"), "a.test");
        assert_eq!(host_of("https://b.test?q"), "b.test");
        assert_eq!(host_of("http://[::1]:80/"), "[::1]");
    }
}
