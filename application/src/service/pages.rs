//! Reading one page batch: every `response` record's links, with the record's
//! `Polycrawl-Depth` and `Polycrawl-Hops` (the request's hints, written by the
//! downloader), so the crawl loop needs no memory of what it requested. HTML responses
//! (`text/html`, `application/xhtml+xml`, or no type and a body that sniffs as HTML)
//! go through [`canonical_links`] (base, nofollow, meta refresh...); a 3xx response's
//! `Location`, resolved against the record's URL, is its `redirect`. Bodies are decoded
//! with [`spool::http`] under `max_body_bytes`; a record whose HTTP is broken counts
//! as a page without links. A batch whose WARC framing is broken is an error (the
//! caller quarantines it). O(batch bytes) plus extraction.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use spool::http::StoredResponse;
use spool::warc::{
    DEPTH_FIELD, HOPS_FIELD, Record, RecordType, WarcError, WarcErrorKind, WarcReader,
};
use url::Url;

use crate::canon::{self, CanonConfig};
use crate::extract::{Extractor, PageLinks};
use crate::links::canonical_links;

/// What one response record gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLinksOf {
    /// The record's `WARC-Target-URI`.
    pub url: String,
    /// Its link depth (`Polycrawl-Depth`; `None` for records written without it).
    pub depth: Option<u32>,
    /// Redirects followed to reach it (`Polycrawl-Hops`; absent is 0).
    pub hops: u32,
    /// A 3xx response's canonical `Location`.
    pub redirect: Option<Url>,
    /// Canonical links found in the page (repeats possible).
    pub links: Vec<Url>,
}

/// Reusable page-batch reader.
#[derive(Debug)]
pub struct BatchReader {
    extractor: Extractor,
    out: PageLinks,
    canon: CanonConfig,
    body_cap: usize,
}

impl BatchReader {
    /// A reader canonicalizing with `canon`, decoding at most `body_cap` bytes a page.
    pub fn new(canon: CanonConfig, body_cap: usize) -> Self {
        Self {
            extractor: Extractor::new(),
            out: PageLinks::new(),
            canon,
            body_cap,
        }
    }

    /// Calls `page` once per response record of the batch at `path`.
    pub fn read(
        &mut self,
        path: &Path,
        mut page: impl FnMut(PageLinksOf),
    ) -> Result<(), WarcError> {
        let file = File::open(path).map_err(|e| WarcError {
            offset: 0,
            kind: WarcErrorKind::Io(e),
        })?;
        let mut reader = WarcReader::new(BufReader::with_capacity(256 << 10, file));
        let mut rec = Record::default();
        while reader.read_into(&mut rec)? {
            if rec.headers.record_type() != Some(RecordType::Response) {
                continue;
            }
            let Some(target) = rec.headers.target_uri() else {
                continue;
            };
            let target = target.to_owned();
            let number = |name| rec.headers.get(name).and_then(|v| v.trim().parse().ok());
            let (depth, hops) = (number(DEPTH_FIELD), number(HOPS_FIELD).unwrap_or(0));
            let (redirect, links) = self.links_of(&target, &rec.block);
            page(PageLinksOf {
                url: target,
                depth,
                hops,
                redirect,
                links,
            });
        }
        Ok(())
    }

    /// The redirect target and the page's links.
    fn links_of(&mut self, target: &str, block: &[u8]) -> (Option<Url>, Vec<Url>) {
        let Ok(base) = Url::parse(target) else {
            return (None, Vec::new());
        };
        let Ok(resp) = StoredResponse::parse(block) else {
            return (None, Vec::new());
        };
        let mut redirect = None;
        if resp.is_redirect() {
            if let Some(loc) = resp.location() {
                redirect = canon::parse(loc, Some(&base), &self.canon).ok();
            }
        }
        let mut links = Vec::new();
        if !(200..300).contains(&resp.status) {
            return (redirect, links);
        }
        let content_type = resp.content_type();
        let Ok(body) = resp.entity_body(self.body_cap) else {
            return (redirect, links);
        };
        if !is_html(content_type, &body.bytes) {
            return (redirect, links);
        }
        canonical_links(
            &mut self.extractor,
            &body.bytes,
            &base,
            content_type,
            &self.canon,
            &mut self.out,
        );
        links.extend(self.out.links.drain(..).map(|l| l.url));
        (redirect, links)
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
}
