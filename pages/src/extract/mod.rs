//! Link extraction: the followable links of an HTML page, as a browser's DOM
//! (scripting off) holds them.
//!
//! [`Extractor::extract`] returns, in document order, the `href` of `<a>` and
//! `<area>`, the `src` of `<iframe>` and of
//! `<frame>` inside a `<frameset>`, the `href` of `<link>` whose `rel` is
//! navigational, and the URL of `<meta http-equiv=refresh content="N; url=...">`,
//! resolved against the first `<base href>` (itself resolved against the page URL)
//! or the page URL.
//!
//! # Which `<link rel>` values are followed
//!
//! A `<link>` is followed when its `rel` has a navigational token and no resource
//! token ([`rel_is_followed`]). Navigational ([`NAVIGATIONAL_RELS`]): alternate,
//! amphtml, appendix, archives, author, begin, bookmark, canonical, chapter,
//! contents, copyright, edit, end, first, glossary, help, home, index, last,
//! license, me, next, prev, previous, privacy-policy, search, section, shortlink,
//! sitemap, start, subsection, tag, terms-of-service, toc, top, up. Resources
//! ([`RESOURCE_RELS`]), never followed: stylesheet (so `alternate stylesheet` is
//! not), icon and the touch/mask icons, manifest, preload, prefetch, prerender,
//! modulepreload, preconnect, dns-prefetch, pingback, webmention, hub, import,
//! serviceworker, expect, compression-dictionary, EditURI, wlwmanifest, OpenID
//! endpoints. Other tokens are neither.
//!
//! # What a browser reads (HTML Standard, section 13.2)
//!
//! The scanner (`scan`) is a reading of the tokenizer plus the parts of tree
//! construction that decide which elements are in the document:
//!
//! - Nothing inside comments, `<script>`, `<style>`, `<textarea>`, `<title>`,
//!   `<xmp>`, `<iframe>`, `<noembed>`, `<noframes>`, `<plaintext>` or CDATA counts
//!   (raw text and RCDATA); `<noscript>` content does (scripting is off).
//! - Foreign content (`tree`): inside `<svg>` and `<math>` those elements are
//!   ordinary markup and CDATA is real; the breakout tags (`<p>`, `<div>`,
//!   `<font color>`, `</p>`, ...) end it; integration points (`foreignObject`,
//!   `desc`, `title`, `mi`..`mtext`, HTML `annotation-xml`) read HTML, and an HTML
//!   element left open there keeps `</desc>` from closing it. Only HTML elements
//!   carry links: SVG `<a>` (a browser's clickable SVG link) is not followed, as
//!   html5ever's tree has it outside the HTML namespace, and SVG or MathML `<base>`,
//!   `<link>`, `<iframe>`, `<area>`, `<frame>` are not either.
//! - `<template>` contents are inert: no link, base or robots rule in them counts.
//! - `<frame>` counts only inside `<frameset>`; a `<frameset>` in a body that has
//!   shown nothing yet (the frameset-ok flag) replaces that body and its links;
//!   after `</frameset>` everything but `<noframes>` is ignored.
//! - Attributes: the first of a name wins; values are entity-decoded like a
//!   browser does ([`decode_attr_value`]).
//!
//! A `<meta name=robots content=nofollow>` (or `none`, or `name=polycrawl`)
//! anywhere in the document yields no links and sets [`PageLinks::nofollow`]
//! (unless [`Extractor::set_obey_meta`] is off); every meta robots directive is
//! reported in [`PageLinks::robots`] ([`crate::directives`]). Fragment-only values, a refresh
//! back to the page itself, and everything that does not resolve to http or https
//! are dropped and counted in [`PageLinks::dropped`]. URLs are parsed by the `url`
//! crate, the WHATWG URL Standard's parser (`HTTP:\\host\\path` is
//! `http://host/path`).
//!
//! # Character encoding
//!
//! [`page_encoding`], in the Standard's order: byte order mark (UTF-8, UTF-16LE,
//! UTF-16BE), HTTP charset, `<meta>` prescan, then autodetection and default (UTF-8
//! if the page is valid UTF-8, else windows-1252). UTF-16 pages are transcoded to
//! UTF-8 first. Attribute values are decoded with the page's encoding, and the
//! query of a resolved URL is percent-encoded in it, as the URL Standard has
//! browsers do: `?q=é` on a windows-1252 page becomes `?q=%E9`, in the path
//! `%C3%A9`. Bytes invalid in the encoding become U+FFFD. An undeclared page is
//! checked for UTF-8 only when a link value holds non-ASCII, so pages with ASCII
//! URLs (nearly all) never pay for it.
//!
//! # Scanner choice, by measurement
//!
//! The design card names regex (Polybot used PCRE). `cargo bench --workspace
//! --bench extract` (`benches/extract/`) measures the candidates on one core over
//! generated pages and a real-page corpus, with recall and precision of the resolved
//! link sets against html5ever's tree builder (BENCHMARKS.md has the figures):
//! the memchr scanner here reads several times faster than `lol_html` and an
//! order of magnitude faster than regex or html5ever. Regex finds the links in
//! comments, scripts and CDATA too and cannot honour raw-text rules; `lol_html`
//! treats `<noscript>` as raw text (a scripting browser's view) and reads `<svg/>`
//! as an open `<svg>`. The real-page oracle test (`tests/real_pages.rs`) holds the
//! scanner to html5ever on pages from a dozen generators.
//!
//! # Known divergences from html5ever
//!
//! Declarative shadow DOM (`<template shadowrootmode>`) is inert here, as in
//! html5ever with scraper's tree. Inside foreign content the adoption agency and
//! table rules are simplified (see `tree`). Everything else the snippets in
//! `tests/support/snippets.rs` pin down agrees with html5ever
//! (`adversarial_known_divergences` checks it).

mod charset;
mod entities;
mod entity_table;
#[cfg(test)]
mod hard_pages;
mod meta;
mod names;
mod page;
mod raw;
mod scan;
mod tag;
mod tree;

use url::Url;

pub use charset::{charset_param, declared_encoding, page_encoding};
pub use entities::decode_attr_value;
pub use meta::{NAVIGATIONAL_RELS, RESOURCE_RELS, refresh_url, rel_is_followed, robots_nofollow};
pub use page::{Attrs, Link, LinkKind, Mark, PageLinks, RawPage, Tag};

/// The link extractor. Keep one per thread and reuse it: its buffers are kept.
#[derive(Debug, Default)]
pub struct Extractor {
    scanner: scan::Scanner,
    page: RawPage,
    /// A UTF-16 page, transcoded to UTF-8.
    transcoded: String,
}

impl Extractor {
    /// A new extractor.
    pub fn new() -> Extractor {
        Extractor::default()
    }

    /// Extracts the links of `html`, fetched from `page_url` with the HTTP
    /// `Content-Type` header `content_type` (if any), into `out`.
    pub fn extract(
        &mut self,
        html: &[u8],
        page_url: &Url,
        content_type: Option<&str>,
        out: &mut PageLinks,
    ) {
        self.scan(html, content_type);
        self.page.resolve(page_url, out);
    }

    /// Only the scanning half of [`Extractor::extract`]: what the page holds,
    /// before resolution against the base.
    pub fn scan(&mut self, html: &[u8], content_type: Option<&str>) -> &RawPage {
        self.page.clear();
        match declared_encoding(html, content_type) {
            Some(enc) if charset::is_utf16(enc) => {
                // Scanned as UTF-8; URL queries of a UTF-16 page are UTF-8 too.
                let (text, _) = enc.decode_with_bom_removal(html);
                self.transcoded.clear();
                self.transcoded.push_str(&text);
                let html = std::mem::take(&mut self.transcoded);
                self.scanner.scan(html.as_bytes(), &mut self.page);
                self.transcoded = html;
                return &self.page;
            }
            Some(enc) => self.page.set_encoding(enc),
            None => self.page.set_encoding_undecided(),
        }
        self.scanner.scan(html, &mut self.page);
        self.page.finish(html);
        &self.page
    }

    /// Whether a meta robots `nofollow` removes the links (default true): see
    /// [`RawPage::set_obey_meta`].
    pub fn set_obey_meta(&mut self, obey: bool) {
        self.page.set_obey_meta(obey);
    }

    /// What the last scan found, before resolution.
    pub fn raw(&self) -> &RawPage {
        &self.page
    }
}
