//! Reading one page batch: every `response` record's links, with the record's
//! `Polycrawl-Depth` and `Polycrawl-Hops` (the request's hints, written by the
//! downloader), so the crawl loop needs no memory of what it requested. HTML responses
//! (`text/html`, `application/xhtml+xml`, or no type and a body that sniffs as HTML)
//! go through [`canonical_links`] (base, nofollow, meta refresh...); a 3xx response's
//! `Location`, resolved against the record's URL, is its `redirect`. With
//! [`BatchReader::with_sitemaps`], any other 2xx body that is a sitemap or sitemap
//! index ([`crate::sitemap`], plain or gzip) gives its `<loc>` URLs as the page's
//! links, resolved against the record's URL (a sitemap that does not parse gives
//! none, with a warning). Bodies are decoded
//! with [`spool::http`] under `max_body_bytes`; a record whose HTTP is broken counts
//! as a page without links. The batch is read through storage's check
//! ([`storage::check_batch`]), so it is inflated once for both its links and its
//! ingest; a batch storage refuses (broken WARC framing, a gzip CRC error) is an
//! error (the caller quarantines it). Stated payload digests are trusted
//! ([`storage::Digests::Trust`]): the crawl's downloaders compute them from the bytes
//! they write. O(batch bytes) plus extraction.

use std::path::Path;

use spool::http::StoredResponse;
use spool::warc::{DEPTH_FIELD, HOPS_FIELD, Record, RecordType};
use url::Url;

use super::canonical_links;
use super::template::TemplateReader;
use crate::canon::{self, CanonConfig};
use crate::extract::{Extractor, PageLinks};
use crate::sitemap;

/// What one response record gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLinksOf {
    /// The record's `WARC-Target-URI`.
    pub url: String,
    /// That URL parsed (`None` if it does not parse: then the page has no links),
    /// so that no reader of the links parses it again.
    pub page: Option<Url>,
    /// Its link depth (`Polycrawl-Depth`; `None` for records written without it).
    pub depth: Option<u32>,
    /// Redirects followed to reach it (`Polycrawl-Hops`; absent is 0).
    pub hops: u32,
    /// A 3xx response's canonical `Location`.
    pub redirect: Option<Url>,
    /// Canonical links found in the page (repeats possible).
    pub links: Vec<Url>,
    /// An HTML page's template ([`super::template`]), for the maze and
    /// session-id trap detectors, when the reader was asked for it
    /// ([`BatchReader::with_templates`]); `None` for anything else.
    pub template: Option<u64>,
}

/// Reusable page-batch reader.
#[derive(Debug)]
pub struct BatchReader {
    extractor: Extractor,
    out: PageLinks,
    /// Reads each HTML page's template too (`None`: not asked for).
    templates: Option<TemplateReader>,
    canon: CanonConfig,
    body_cap: usize,
    sitemaps: bool,
}

impl BatchReader {
    /// A reader canonicalizing with `canon`, decoding at most `body_cap` bytes a page.
    pub fn new(canon: CanonConfig, body_cap: usize) -> Self {
        Self {
            extractor: Extractor::new(),
            out: PageLinks::new(),
            templates: None,
            canon,
            body_cap,
            sitemaps: false,
        }
    }

    /// Also reads sitemaps (see the module docs); off by default.
    pub fn with_sitemaps(mut self, on: bool) -> Self {
        self.sitemaps = on;
        self
    }

    /// Also computes each HTML page's template ([`super::template`]: one more
    /// pass over its bytes); off by default.
    pub fn with_templates(mut self, on: bool) -> Self {
        self.templates = on.then(TemplateReader::new);
        self
    }

    /// Reads the batch at `path` once for both its links and storage: storage's checks
    /// ([`storage::check_batch`]) and, for every response record that passes them,
    /// `page` with its URL, hints, redirect and links. The result is handed to
    /// [`storage::Repository::ingest_checked`] later, which then does not read the
    /// batch again. On an error, drop the pages given so far (a batch storage refuses
    /// is quarantined whole).
    pub fn read_checked(
        &mut self,
        path: &Path,
        mut page: impl FnMut(PageLinksOf),
    ) -> Result<storage::CheckedBatch, storage::StorageError> {
        // The crawl's downloaders digest the payload bytes they write, and the gzip
        // CRC (always checked) guards those bytes since: a second SHA-1 per page here
        // was 8 % of the application's CPU (BENCHMARKS.md, issue 9).
        storage::check_batch(path, storage::Digests::Trust, |rec| {
            self.record(rec, &mut page);
        })
    }

    fn record(&mut self, rec: &Record, page: &mut impl FnMut(PageLinksOf)) {
        if rec.headers.record_type() != Some(RecordType::Response) {
            return;
        }
        let Some(target) = rec.headers.target_uri() else {
            return;
        };
        let target = target.to_owned();
        let number = |name| rec.headers.get(name).and_then(|v| v.trim().parse().ok());
        let (depth, hops) = (number(DEPTH_FIELD), number(HOPS_FIELD).unwrap_or(0));
        let page_url = Url::parse(&target).ok();
        let (redirect, links, template) = match &page_url {
            Some(base) => self.links_of(base, &rec.block),
            None => (None, Vec::new(), None),
        };
        page(PageLinksOf {
            url: target,
            page: page_url,
            depth,
            hops,
            redirect,
            links,
            template,
        });
    }

    /// The redirect target, the page's links and, for an HTML page, its template.
    fn links_of(&mut self, base: &Url, block: &[u8]) -> (Option<Url>, Vec<Url>, Option<u64>) {
        let Ok(resp) = StoredResponse::parse(block) else {
            return (None, Vec::new(), None);
        };
        let mut redirect = None;
        if resp.is_redirect() {
            if let Some(loc) = resp.location() {
                redirect = canon::parse(loc, Some(base), &self.canon).ok();
            }
        }
        let mut links = Vec::new();
        if !(200..300).contains(&resp.status) {
            return (redirect, links, None);
        }
        let content_type = resp.content_type();
        let Ok(body) = resp.entity_body(self.body_cap) else {
            return (redirect, links, None);
        };
        if !is_html(content_type, &body.bytes) {
            if self.sitemaps {
                self.sitemap_links(base, &body.bytes, &mut links);
            }
            return (redirect, links, None);
        }
        canonical_links(
            &mut self.extractor,
            &body.bytes,
            base,
            content_type,
            &self.canon,
            &mut self.out,
        );
        links.extend(self.out.links.drain(..).map(|l| l.url));
        let template = self
            .templates
            .as_mut()
            .map(|t| t.template(&body.bytes, base, &links));
        (redirect, links, template)
    }
}

impl BatchReader {
    /// The canonical URLs of the sitemap in `body`, if it is one.
    fn sitemap_links(&self, base: &Url, body: &[u8], links: &mut Vec<Url>) {
        match sitemap::parse(body) {
            Ok(None) => {}
            Ok(Some(map)) => {
                if map.truncated {
                    tracing::warn!(url = %base, kept = map.locs.len(), "app: sitemap lists too many URLs; the rest are dropped");
                }
                links.extend(
                    map.locs
                        .iter()
                        .filter_map(|loc| canon::parse(loc, Some(base), &self.canon).ok()),
                );
            }
            Err(e) => tracing::warn!(url = %base, error = %e, "app: sitemap not read"),
        }
    }
}

/// HTML by type, or by sniffing when there is no type.
fn is_html(content_type: Option<&str>, body: &[u8]) -> bool {
    match content_type {
        Some(t) => {
            let mime = t.split(';').next().unwrap_or_default().trim();
            mime.eq_ignore_ascii_case("text/html")
                || mime.eq_ignore_ascii_case("application/xhtml+xml")
        }
        None => {
            let head = &body[..body.len().min(512)];
            let start = head
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .unwrap_or(0);
            let head = String::from_utf8_lossy(&head[start..]).to_ascii_lowercase();
            ["<!doctype html", "<html", "<head", "<body", "<a ", "<title"]
                .iter()
                .any(|p| head.starts_with(p))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_html() {
        assert!(is_html(Some("text/html; charset=utf-8"), b""));
        assert!(is_html(Some("Application/XHTML+xml"), b""));
        assert!(!is_html(Some("text/plain"), b"<html>"));
        assert!(is_html(None, b"  \n<!DOCTYPE html><html>"));
        assert!(!is_html(None, b"%PDF-1.4"));
    }

    #[test]
    fn a_sitemap_body_gives_its_urls_as_links_when_asked() {
        let block = b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n\r\n\
            <?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
            <url><loc>http://A.test:80/x/../one.html</loc></url>\
            <url><loc>two.html</loc></url><url><loc>mailto:x@a.test</loc></url></urlset>";
        let target = &Url::parse("http://a.test/maps/sitemap.xml").unwrap();
        let mut off = BatchReader::new(CanonConfig::default(), 1 << 20);
        assert_eq!(off.links_of(target, block), (None, vec![], None));
        let mut on = BatchReader::new(CanonConfig::default(), 1 << 20).with_sitemaps(true);
        let (_, links, _) = on.links_of(target, block);
        let links: Vec<&str> = links.iter().map(Url::as_str).collect();
        assert_eq!(
            links,
            ["http://a.test/one.html", "http://a.test/maps/two.html"]
        );
        // A 404 sitemap or broken XML gives nothing.
        let broken = b"HTTP/1.1 200 OK\r\n\r\n<urlset><url><loc>http://a.test/</lo></urlset>";
        assert_eq!(on.links_of(target, broken).1, vec![]);
    }
}
