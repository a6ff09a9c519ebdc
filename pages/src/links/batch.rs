//! Reading one page batch: every `response` record's links, with the record's
//! `Polycrawl-Depth` and `Polycrawl-Hops` (the request's hints, written by the
//! downloader), so the crawl loop needs no memory of what it requested. HTML responses
//! (`text/html`, `application/xhtml+xml`, or no type and a body that sniffs as HTML)
//! go through [`canonical_links`] (base, nofollow, meta refresh...); a 3xx response's
//! `Location`, resolved against the record's URL, is its `redirect`. With
//! [`BatchReader::with_sitemaps`], any other 2xx body that is a sitemap or sitemap
//! index ([`crate::sitemap`], plain or gzip) gives its `<loc>` URLs as the page's
//! links, resolved against the record's URL (a sitemap that does not parse gives
//! none, with a warning). Robots directives ([`crate::directives`]) from the
//! `X-Robots-Tag` fields and an HTML page's meta robots apply unless switched off
//! ([`BatchReader::with_robots`]): `nofollow` empties the page's links (a 3xx's
//! `Location` is still its redirect: it is not a link on a page), and every page
//! reports what it obeyed in [`PageLinksOf::robots`] (the application keeps a
//! withheld page's body out of the archive, [`storage::withhold`]). Bodies are decoded
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
use crate::directives::{self, Directives};
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
    /// The robots directives obeyed for this page (header and meta, each unless
    /// switched off): with `nofollow`, `links` is empty.
    pub robots: Directives,
    /// The record's `WARC-Record-ID` (what [`storage::withhold`] names).
    pub record_id: Option<String>,
    /// The record block's length: the HTTP response as stored, head and body
    /// (the page's size in the site assignment's byte balance).
    pub bytes: u64,
}

/// Which robots directives a [`BatchReader`] obeys: both by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RobotsSwitches {
    /// The `X-Robots-Tag` response header fields.
    pub x_robots_tag: bool,
    /// `<meta name=robots>` and `<meta name=polycrawl>` in HTML pages.
    pub meta_robots: bool,
}

impl Default for RobotsSwitches {
    fn default() -> Self {
        Self {
            x_robots_tag: true,
            meta_robots: true,
        }
    }
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
    robots: RobotsSwitches,
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
            robots: RobotsSwitches::default(),
        }
    }

    /// Which robots directives are obeyed (see the module docs); both by default.
    pub fn with_robots(mut self, switches: RobotsSwitches) -> Self {
        self.robots = switches;
        self.extractor.set_obey_meta(switches.meta_robots);
        self
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
        let Read {
            redirect,
            links,
            template,
            robots,
        } = match &page_url {
            Some(base) => self.links_of(base, &rec.block),
            None => Read::default(),
        };
        page(PageLinksOf {
            url: target,
            page: page_url,
            depth,
            hops,
            redirect,
            links,
            template,
            robots,
            record_id: rec.headers.record_id().map(str::to_owned),
            bytes: rec.block.len() as u64,
        });
    }

    /// The redirect target, the page's links, for an HTML page its template, and
    /// the robots directives obeyed (a `nofollow` has emptied the links).
    fn links_of(&mut self, base: &Url, block: &[u8]) -> Read {
        let Ok(resp) = StoredResponse::parse(block) else {
            return Read::default();
        };
        let header = if self.robots.x_robots_tag {
            directives::x_robots_tag(resp.header_all("x-robots-tag"), directives::AGENT)
        } else {
            Directives::default()
        };
        let (redirect, mut links, template, meta) = self.page_links(base, &resp);
        let robots = header.union(meta);
        if robots.nofollow {
            links.clear();
        }
        Read {
            redirect,
            links,
            template,
            robots,
        }
    }

    /// [`BatchReader::links_of`] before the header's directives: also the meta
    /// robots directives obeyed.
    fn page_links(
        &mut self,
        base: &Url,
        resp: &StoredResponse<'_>,
    ) -> (Option<Url>, Vec<Url>, Option<u64>, Directives) {
        let none = Directives::default();
        let mut redirect = None;
        if resp.is_redirect() {
            if let Some(loc) = resp.location() {
                redirect = canon::parse(loc, Some(base), &self.canon).ok();
            }
        }
        let mut links = Vec::new();
        if !(200..300).contains(&resp.status) {
            return (redirect, links, None, none);
        }
        let content_type = resp.content_type();
        let Ok(body) = resp.entity_body(self.body_cap) else {
            return (redirect, links, None, none);
        };
        if !is_html(content_type, &body.bytes) {
            if self.sitemaps {
                self.sitemap_links(base, &body.bytes, &mut links);
            }
            return (redirect, links, None, none);
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
        let meta = if self.robots.meta_robots {
            self.out.robots
        } else {
            none
        };
        (redirect, links, template, meta)
    }
}

/// What [`BatchReader::links_of`] reads of one response.
#[derive(Debug, Default, PartialEq, Eq)]
struct Read {
    redirect: Option<Url>,
    links: Vec<Url>,
    template: Option<u64>,
    robots: Directives,
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
        assert_eq!(off.links_of(target, block), Read::default());
        let mut on = BatchReader::new(CanonConfig::default(), 1 << 20).with_sitemaps(true);
        let links = on.links_of(target, block).links;
        let links: Vec<&str> = links.iter().map(Url::as_str).collect();
        assert_eq!(
            links,
            ["http://a.test/one.html", "http://a.test/maps/two.html"]
        );
        // A 404 sitemap or broken XML gives nothing.
        let broken = b"HTTP/1.1 200 OK\r\n\r\n<urlset><url><loc>http://a.test/</lo></urlset>";
        assert_eq!(on.links_of(target, broken).links, vec![]);
    }

    #[test]
    fn robots_directives_from_headers_and_meta_follow_the_switches() {
        let target = &Url::parse("http://a.test/p.html").unwrap();
        let page = |headers: &str, meta: &str| {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n{headers}\r\n\
                 <html><head>{meta}</head><body><a href=/x>x</a></body></html>"
            )
            .into_bytes()
        };
        let mut on = BatchReader::new(CanonConfig::default(), 1 << 20);
        let mut off =
            BatchReader::new(CanonConfig::default(), 1 << 20).with_robots(RobotsSwitches {
                x_robots_tag: false,
                meta_robots: false,
            });
        let none = Directives::default();
        // X-Robots-Tag: nofollow, several fields, another agent's and ours.
        let r = on.links_of(target, &page("X-Robots-Tag: nofollow\r\n", ""));
        assert!(r.robots.nofollow && r.links.is_empty());
        let r = off.links_of(target, &page("X-Robots-Tag: nofollow\r\n", ""));
        assert_eq!((r.robots, r.links.len()), (none, 1));
        let r = on.links_of(target, &page("x-robots-tag: otherbot: none\r\n", ""));
        assert_eq!((r.robots, r.links.len()), (none, 1));
        let r = on.links_of(
            target,
            &page(
                "X-Robots-Tag: otherbot: noindex\r\nX-Robots-Tag: polycrawl: none\r\n",
                "",
            ),
        );
        assert!(r.robots.nofollow && r.robots.noindex && r.links.is_empty());
        // Meta robots: noarchive keeps the links; nofollow through our own name.
        let r = on.links_of(target, &page("", "<meta name=robots content=NOARCHIVE>"));
        assert!(r.robots.noarchive && !r.robots.nofollow && r.links.len() == 1);
        let r = off.links_of(target, &page("", "<meta name=robots content=noarchive>"));
        assert_eq!((r.robots, r.links.len()), (none, 1));
        let r = on.links_of(target, &page("", "<meta name=polycrawl content=nofollow>"));
        assert!(r.robots.nofollow && r.links.is_empty());
        let r = off.links_of(target, &page("", "<meta name=robots content=none>"));
        assert_eq!((r.robots, r.links.len()), (none, 1));
        let r = on.links_of(target, &page("", "<meta name=googlebot content=none>"));
        assert_eq!((r.robots, r.links.len()), (none, 1));
        // A redirect stays a redirect under nofollow (it is not a link on a page).
        let moved = b"HTTP/1.1 301 Moved\r\nLocation: /y\r\nX-Robots-Tag: none\r\n\r\n";
        let r = on.links_of(target, moved);
        assert!(r.robots.noindex && r.redirect.is_some());
    }
}
