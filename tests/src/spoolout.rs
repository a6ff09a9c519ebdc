//! What the crawling system hands back to an application through the spool: page
//! batches (`pages/<app>/*.warc.gz`, WARC `response` records) and outcome files
//! (`outcomes/<app>/*.outcomes`), read with `spool`'s own readers (the contract).
//!
//! [`Returned`] reads each published file once (published files are immutable)
//! and keeps, per URL, how many pages and which outcomes came back, so a test can
//! poll it until every requested URL has ended. Files in `.tmp/` are not yet
//! published and are never read; nothing here claims or moves a file.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use spool::formats::OutcomeReader;
use spool::warc::{Record, RecordType, WarcReader};

/// Pages and outcomes read so far for one application.
#[derive(Debug, Default)]
pub struct Returned {
    pages_dir: PathBuf,
    outcomes_dir: PathBuf,
    seen_files: HashSet<PathBuf>,
    /// `response` records per target URI.
    pub pages: HashMap<String, usize>,
    /// Outcome reasons (stable names) per URL, in the order read.
    pub outcomes: HashMap<String, Vec<String>>,
}

impl Returned {
    /// A reader of `<spool>/pages/<app>/` and `<spool>/outcomes/<app>/`.
    pub fn new(spool: &Path, app: &str) -> Returned {
        Returned {
            pages_dir: spool.join("pages").join(app),
            outcomes_dir: spool.join("outcomes").join(app),
            ..Returned::default()
        }
    }

    /// Reads the files published since the last call.
    ///
    /// # Panics
    /// If a published file does not parse (the system wrote a broken file).
    pub fn refresh(&mut self) {
        for path in new_files(&self.pages_dir, ".warc.gz", &mut self.seen_files) {
            let file = File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut reader = WarcReader::new(BufReader::new(file));
            let mut rec = Record::default();
            loop {
                match reader.read_into(&mut rec) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => panic!("{}: {e}", path.display()),
                }
                if rec.headers.record_type() == Some(RecordType::Response) {
                    let uri = rec.headers.target_uri().unwrap_or_default().to_owned();
                    *self.pages.entry(uri).or_insert(0) += 1;
                }
            }
        }
        for path in new_files(&self.outcomes_dir, ".outcomes", &mut self.seen_files) {
            let file = File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let reader = OutcomeReader::new(BufReader::new(file))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for o in reader {
                let o = o.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                self.outcomes
                    .entry(o.url)
                    .or_default()
                    .push(o.reason.as_str().to_owned());
            }
        }
    }

    /// Whether `url` has ended (a page or an outcome came back).
    pub fn ended(&self, url: &str) -> bool {
        self.pages.contains_key(url) || self.outcomes.contains_key(url)
    }

    /// How many of `urls` have not ended yet.
    pub fn open<'a>(&self, urls: impl IntoIterator<Item = &'a String>) -> usize {
        urls.into_iter().filter(|u| !self.ended(u)).count()
    }

    /// Page records over all URLs.
    pub fn page_records(&self) -> usize {
        self.pages.values().sum()
    }
}

/// Published files of `dir` ending in `suffix` not in `seen` (added to it), sorted.
fn new_files(dir: &Path, suffix: &str, seen: &mut HashSet<PathBuf>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(suffix) && !n.starts_with('.'))
        })
        .filter(|p| !seen.contains(p))
        .collect();
    out.sort();
    seen.extend(out.iter().cloned());
    out
}
