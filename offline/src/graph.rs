//! The host graph of a finished crawl ([`HostGraph::from_repository`]): one vertex a
//! host, weighted by the pages stored for it (and their bytes), and for every host
//! the distinct URLs its stored pages link to (HTML links and 3xx `Location`s,
//! found exactly as the application finds them: [`BatchReader`], so
//! canonicalization and the body cap are the app's). Two hosts are joined by an edge whose weight is the number of distinct
//! URLs of one linked from pages of the other, both ways added
//! ([`HostGraph::edges`]): the URLs a part would have to send to another if the two
//! hosts were owned by different parts.
//!
//! Every host that is stored *or* linked is a vertex: a linked host with no stored
//! page (dead, refused by robots, never reached) weighs 0 pages, but its URLs are
//! still exchanged, so it is still worth placing. Scope rules are not applied: the
//! graph is what the pages say, the next crawl's scope decides what it follows.
//!
//! Pages are read from the repository's WARC files (`warc/**/*.warc.gz`: shared files
//! of many batches, or, in repositories written before them, one file per batch; not
//! the old `.revisits.warc.gz` companions, whose duplicates are also in a batch), in
//! name order, each once through storage's checks (revisit records are skipped: their
//! pages are stored as responses too); a response URL seen twice counts as one page.
//! Read it after the crawl, when no ingest runs. Storage's check holds per record
//! what an index line needs (URL, HTTP head), so memory peaks at one file's records:
//! about 0.5 KB a record, some 40 MB for a 1 GB file.
//!
//! The graph also keeps the page level, for the page-level evaluation
//! ([`super::evaluate::evaluate_pages`]) and replication: every stored page with
//! the distinct URLs it links to ([`HostGraph::page_links`]), every URL's text
//! ([`HostGraph::url`]), and from them each URL's back-links
//! ([`HostGraph::backlinks`]: the distinct stored pages linking to it).
//!
//! # Cost
//!
//! One pass over the repository's bytes plus link extraction. Memory: URLs are
//! identified by 64-bit FNV-1a hashes (a collision, about 2^-64 per pair, merges two
//! URLs), about 30 bytes per distinct URL (hash-map entry, target host, page
//! number) plus its text and 8 bytes, 4 bytes per distinct (host, linked URL) pair
//! and per distinct (page, linked URL) pair, 12 bytes per stored page, and per host
//! its name plus about 48 bytes. [`HostGraph::edges`] adds about 40 bytes per pair
//! of linked hosts while it runs. Never the pages' bodies: one record at a time.
//!
//! This module must never decide ownership: it only describes the crawl.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use url::Url;

use crate::error::AssignError;
use pages::links::{BatchReader, LinkRules, PageLinksOf};

/// FNV-1a 64 of a URL's bytes: the URL's identity in the graph.
pub(crate) fn url_hash(url: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in url.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A crawl's hosts, their stored pages and the distinct URLs each links to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostGraph {
    /// Host keys ([`app_core::parts::host_of`]), sorted; a host's index is its vertex number.
    hosts: Vec<String>,
    /// Stored pages per host.
    pages: Vec<u64>,
    /// Stored bytes per host: the response blocks (HTTP head and body) of its pages.
    bytes: Vec<u64>,
    /// `links[links_start[h]..links_start[h + 1]]`: the URLs host `h` links to,
    /// as indices into `url_host`, sorted, each once.
    links_start: Vec<usize>,
    links: Vec<u32>,
    /// The host of each distinct linked URL.
    url_host: Vec<u32>,
    /// Every URL's text: `url_text[url_end[u - 1]..url_end[u]]`.
    url_text: String,
    url_end: Vec<usize>,
    /// The URL of each stored page, in the order first read.
    page_urls: Vec<u32>,
    /// `page_links[page_links_start[p]..page_links_start[p + 1]]`: the URLs stored
    /// page `p` links to, sorted, each once.
    page_links_start: Vec<usize>,
    page_links: Vec<u32>,
}

/// No stored page (in [`Builder`]'s URL-to-page table).
const NO_PAGE: u32 = u32::MAX;

/// What is collected while reading, before hosts are renumbered in name order.
#[derive(Debug, Default)]
pub struct Builder {
    host_ids: HashMap<String, u32>,
    hosts: Vec<String>,
    pages: Vec<u64>,
    bytes: Vec<u64>,
    out: Vec<Vec<u32>>,
    url_ids: HashMap<u64, u32>,
    url_host: Vec<u32>,
    url_text: String,
    url_end: Vec<usize>,
    /// Per URL: its stored page number, or [`NO_PAGE`].
    page_of: Vec<u32>,
    page_urls: Vec<u32>,
    page_out: Vec<Vec<u32>>,
}

impl Builder {
    /// An empty graph under construction.
    pub fn new() -> Self {
        Self::default()
    }

    fn host(&mut self, key: String) -> u32 {
        if let Some(id) = self.host_ids.get(&key) {
            return *id;
        }
        let id = self.hosts.len() as u32;
        self.host_ids.insert(key.clone(), id);
        self.hosts.push(key);
        self.pages.push(0);
        self.bytes.push(0);
        self.out.push(Vec::new());
        id
    }

    /// The URL's id and host, interning both; `None` for a URL without a host.
    fn url(&mut self, url: &Url) -> Option<(u32, u32)> {
        let hash = url_hash(url.as_str());
        if let Some(id) = self.url_ids.get(&hash) {
            return Some((*id, self.url_host[*id as usize]));
        }
        let host = self.host(app_core::parts::host_of(url)?);
        let id = self.url_host.len() as u32;
        self.url_ids.insert(hash, id);
        self.url_host.push(host);
        self.url_text.push_str(url.as_str());
        self.url_end.push(self.url_text.len());
        self.page_of.push(NO_PAGE);
        Some((id, host))
    }

    /// Adds one stored page at `page` and the URLs it links to (repeats allowed).
    /// A page URL added again adds its links but no second page. Its size is 0
    /// bytes (see [`Self::add_sized_page`]).
    pub fn add_page<'a>(&mut self, page: &Url, links: impl IntoIterator<Item = &'a Url>) {
        self.add_sized_page(page, 0, links);
    }

    /// As [`Self::add_page`], the page weighing `bytes` in its host's stored bytes
    /// (counted once, when the page is first added).
    pub fn add_sized_page<'a>(
        &mut self,
        page: &Url,
        bytes: u64,
        links: impl IntoIterator<Item = &'a Url>,
    ) {
        let Some((id, host)) = self.url(page) else {
            return;
        };
        let mut page_no = self.page_of[id as usize];
        if page_no == NO_PAGE {
            page_no = self.page_urls.len() as u32;
            self.page_of[id as usize] = page_no;
            self.page_urls.push(id);
            self.page_out.push(Vec::new());
            self.pages[host as usize] += 1;
            self.bytes[host as usize] += bytes;
        }
        for link in links {
            if let Some((target, _)) = self.url(link) {
                self.out[host as usize].push(target);
                self.page_out[page_no as usize].push(target);
            }
        }
    }

    fn add_record(&mut self, record: PageLinksOf) {
        let Ok(page) = Url::parse(&record.url) else {
            return;
        };
        self.add_sized_page(
            &page,
            record.bytes,
            record.links.iter().chain(record.redirect.as_ref()),
        );
    }

    /// The graph: hosts renumbered in name order, link lists sorted and deduplicated.
    pub fn finish(self) -> HostGraph {
        let mut order: Vec<u32> = (0..self.hosts.len() as u32).collect();
        order.sort_unstable_by(|a, b| self.hosts[*a as usize].cmp(&self.hosts[*b as usize]));
        let mut new_id = vec![0u32; order.len()];
        for (new, old) in order.iter().enumerate() {
            new_id[*old as usize] = new as u32;
        }
        let url_host: Vec<u32> = self.url_host.iter().map(|h| new_id[*h as usize]).collect();
        let mut out = self.out;
        let mut links_start = Vec::with_capacity(order.len() + 1);
        let mut links = Vec::new();
        links_start.push(0);
        for old in &order {
            let list = &mut out[*old as usize];
            list.sort_unstable();
            list.dedup();
            links.extend_from_slice(list);
            *list = Vec::new();
            links_start.push(links.len());
        }
        let mut hosts = self.hosts;
        let mut pages = Vec::with_capacity(order.len());
        let mut bytes = Vec::with_capacity(order.len());
        let mut names = Vec::with_capacity(order.len());
        for old in &order {
            names.push(std::mem::take(&mut hosts[*old as usize]));
            pages.push(self.pages[*old as usize]);
            bytes.push(self.bytes[*old as usize]);
        }
        let mut page_links_start = Vec::with_capacity(self.page_out.len() + 1);
        let mut page_links = Vec::new();
        page_links_start.push(0);
        for mut list in self.page_out {
            list.sort_unstable();
            list.dedup();
            page_links.extend_from_slice(&list);
            page_links_start.push(page_links.len());
        }
        HostGraph {
            hosts: names,
            pages,
            bytes,
            links_start,
            links,
            url_host,
            url_text: self.url_text,
            url_end: self.url_end,
            page_urls: self.page_urls,
            page_links_start,
            page_links,
        }
    }
}

impl HostGraph {
    /// Reads every stored page of the repository at `repo` (see the module docs),
    /// extracting links under `rules` (an `&AppConfig` gives its canonicalization and body cap).
    pub fn from_repository(repo: &Path, rules: impl Into<LinkRules>) -> Result<Self, AssignError> {
        let rules = rules.into();
        let warc = repo.join(storage::repository::WARC_DIR);
        if !warc.is_dir() {
            return Err(AssignError::NotARepository {
                path: repo.to_owned(),
            });
        }
        let mut files = Vec::new();
        collect_batches(&warc, &mut files)?;
        files.sort();
        let mut reader = BatchReader::new(rules.canon, rules.max_body_bytes);
        let mut builder = Builder::new();
        for file in &files {
            reader
                .read_checked(file, |record| builder.add_record(record))
                .map_err(|source| AssignError::Batch {
                    path: file.clone(),
                    source,
                })?;
        }
        Ok(builder.finish())
    }

    /// Number of hosts (vertices).
    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// The host keys, sorted; index = vertex.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Stored pages per host.
    pub fn pages(&self) -> &[u64] {
        &self.pages
    }

    /// Stored bytes per host (0 for pages added without a size).
    pub fn bytes(&self) -> &[u64] {
        &self.bytes
    }

    /// Stored pages over all hosts.
    pub fn total_pages(&self) -> u64 {
        self.pages.iter().sum()
    }

    /// Distinct URLs host `h` links to, as URL indices (see [`Self::url_host`]).
    pub fn links_of(&self, h: usize) -> &[u32] {
        &self.links[self.links_start[h]..self.links_start[h + 1]]
    }

    /// The host of URL index `u`.
    pub fn url_host(&self, u: u32) -> u32 {
        self.url_host[u as usize]
    }

    /// Distinct URLs linked from any page.
    pub fn url_count(&self) -> usize {
        self.url_host.len()
    }

    /// The text of URL index `u` (as the application canonicalizes it).
    pub fn url(&self, u: u32) -> &str {
        let u = u as usize;
        let start = if u == 0 { 0 } else { self.url_end[u - 1] };
        &self.url_text[start..self.url_end[u]]
    }

    /// Stored pages (each URL once).
    pub fn page_count(&self) -> usize {
        self.page_urls.len()
    }

    /// The URL index of stored page `p` (pages numbered in the order first read).
    pub fn page_url(&self, p: usize) -> u32 {
        self.page_urls[p]
    }

    /// The distinct URLs stored page `p` links to, as URL indices.
    pub fn page_links(&self, p: usize) -> &[u32] {
        &self.page_links[self.page_links_start[p]..self.page_links_start[p + 1]]
    }

    /// Per URL index: its back-links, the distinct stored pages linking to it (a
    /// page's link to itself not counted). O(URLs + page links).
    pub fn backlinks(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.url_count()];
        for p in 0..self.page_count() {
            let own = self.page_url(p);
            for &u in self.page_links(p) {
                if u != own {
                    counts[u as usize] += 1;
                }
            }
        }
        counts
    }

    /// The `n` URLs with the most back-links, most first, ties in URL order
    /// (deterministic); URLs without back-links are never listed. Returns
    /// `(URL index, back-links)`. O(URLs log URLs). Linked URLs that were never
    /// stored (dead, refused by robots.txt) count: parts exchange them too.
    pub fn most_linked(&self, n: usize) -> Vec<(u32, u32)> {
        self.ranked(n, |_| true)
    }

    /// As [`Self::most_linked`], among the stored pages only (the quality
    /// metric's important pages: a crawl can hold nothing else).
    pub fn most_linked_pages(&self, n: usize) -> Vec<(u32, u32)> {
        let mut stored = vec![false; self.url_count()];
        for &u in &self.page_urls {
            stored[u as usize] = true;
        }
        self.ranked(n, |u| stored[u])
    }

    fn ranked(&self, n: usize, keep: impl Fn(usize) -> bool) -> Vec<(u32, u32)> {
        let counts = self.backlinks();
        let mut order: Vec<(u32, u32)> = counts
            .iter()
            .enumerate()
            .filter(|(u, c)| **c > 0 && keep(*u))
            .map(|(u, c)| (u as u32, *c))
            .collect();
        order.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| self.url(a.0).cmp(self.url(b.0))));
        order.truncate(n);
        order
    }

    /// The weighted edges `(a, b, weight)` with `a < b`, sorted: weight is the
    /// distinct URLs of `b` linked from `a`'s pages plus those of `a` linked from
    /// `b`'s. Links within a host (self-loops) are not edges.
    pub fn edges(&self) -> Vec<(u32, u32, u64)> {
        let mut weights: HashMap<(u32, u32), u64> = HashMap::new();
        for a in 0..self.hosts.len() {
            for &u in self.links_of(a) {
                let b = self.url_host(u);
                let a = a as u32;
                if a != b {
                    *weights.entry((a.min(b), a.max(b))).or_default() += 1;
                }
            }
        }
        let mut edges: Vec<(u32, u32, u64)> =
            weights.into_iter().map(|((a, b), w)| (a, b, w)).collect();
        edges.sort_unstable();
        edges
    }
}

/// Every batch file under `dir`, recursively (not the revisit companions).
pub(crate) fn collect_batches(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), AssignError> {
    let io = |source| AssignError::Read {
        path: dir.to_owned(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        let kind = entry.file_type().map_err(io)?;
        if kind.is_dir() {
            collect_batches(&path, out)?;
        } else if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            if name.ends_with(".warc.gz") && !name.ends_with(".revisits.warc.gz") {
                out.push(path);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use spool::name::FileKind;
    use spool::name::Priority;
    use spool::publish::Publisher;
    use spool::warc::{Capture, RecordId, WarcDate, WarcHeaders, WarcWriter, payload_digest};
    use spool::{AppId, ComponentId, Spool};

    use super::*;
    use app_core::AppConfig;

    /// A 200 HTML response linking `links`, or a 301 to `location`.
    fn raw(links: &[&str], location: Option<&str>) -> Vec<u8> {
        if let Some(loc) = location {
            return format!("HTTP/1.1 301 Moved\r\nLocation: {loc}\r\nContent-Length: 0\r\n\r\n")
                .into_bytes();
        }
        let body: String = links
            .iter()
            .map(|l| format!("<a href=\"{l}\">x</a>"))
            .collect();
        let body = format!("<html><body>{body}</body></html>");
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    /// One stored page: its URL, the links in its HTML, or a redirect's target.
    pub(crate) type Page<'a> = (&'a str, Vec<&'a str>, Option<&'a str>);

    /// A repository at `dir/repo` holding one batch per element of `batches`.
    pub(crate) fn repository(dir: &Path, batches: &[Vec<Page<'_>>]) -> PathBuf {
        let repo_dir = dir.join("repo");
        let mut repo = storage::Repository::open(&repo_dir).unwrap();
        let pages = Spool::new(dir.join("spool"))
            .pages(&AppId::new("bfs").unwrap())
            .unwrap();
        let publisher = Publisher::new(pages, ComponentId::new("dl-1").unwrap()).unwrap();
        for batch in batches {
            let mut w = WarcWriter::new(Vec::new());
            for (url, links, location) in batch {
                let raw = raw(links, *location);
                let head = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                let capture = Capture {
                    target_uri: url,
                    date: WarcDate::now(),
                    ip: None,
                    warcinfo_id: None,
                };
                let h = WarcHeaders::response(
                    RecordId::random(),
                    &capture,
                    payload_digest(&raw[head..]),
                )
                .unwrap();
                w.write_record(&h, &raw).unwrap();
            }
            let path = publisher
                .publish(Priority::NORMAL, FileKind::PageBatch, &w.finish().unwrap())
                .unwrap();
            repo.ingest(&path).unwrap();
        }
        repo_dir
    }

    fn host(g: &HostGraph, name: &str) -> usize {
        g.hosts().iter().position(|h| h == name).unwrap()
    }

    #[test]
    fn graph_counts_pages_and_distinct_cross_host_urls() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repository(
            dir.path(),
            &[
                vec![
                    // a.test links b.test/1 twice, b.test/2, itself and c.test:8080/.
                    (
                        "http://a.test/",
                        vec![
                            "http://b.test/1",
                            "http://B.test/1#x",
                            "/self",
                            "http://c.test:8080/",
                        ],
                        None,
                    ),
                    (
                        "http://a.test/self",
                        vec!["http://b.test/2", "http://b.test/1"],
                        None,
                    ),
                    // A redirect is a link too.
                    ("http://b.test/1", vec![], Some("http://a.test/")),
                ],
                vec![
                    ("http://b.test/2", vec!["http://a.test/self"], None),
                    // The same page stored again: one page.
                    ("http://a.test/", vec!["http://d.test/"], None),
                ],
            ],
        );
        let g = HostGraph::from_repository(&repo, &AppConfig::default()).unwrap();
        // The port is not part of a host: c.test:8080 is c.test.
        assert_eq!(g.hosts(), ["a.test", "b.test", "c.test", "d.test"]);
        assert_eq!(g.pages(), [2, 2, 0, 0]);
        assert_eq!(g.total_pages(), 4);
        let (a, b, c, d) = (
            host(&g, "a.test") as u32,
            host(&g, "b.test") as u32,
            host(&g, "c.test") as u32,
            host(&g, "d.test") as u32,
        );
        // a→b: b/1, b/2; b→a: a/ (redirect), a/self: weight 4. a→c, a→d: 1 each.
        assert_eq!(g.edges(), vec![(a, b, 4), (a, c, 1), (a, d, 1)]);
        // a's links: a/self, b/1, b/2, c/, d/ (self-loops stay in the lists).
        assert_eq!(g.links_of(a as usize).len(), 5);
        let again = HostGraph::from_repository(&repo, &AppConfig::default()).unwrap();
        assert_eq!(g, again);
    }

    #[test]
    fn empty_and_missing_repositories() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repository(dir.path(), &[]);
        let g = HostGraph::from_repository(&repo, &AppConfig::default()).unwrap();
        assert_eq!((g.host_count(), g.total_pages()), (0, 0));
        assert!(g.edges().is_empty());
        let err = HostGraph::from_repository(&dir.path().join("nope"), &AppConfig::default());
        assert!(matches!(err, Err(AssignError::NotARepository { .. })));
    }
}
