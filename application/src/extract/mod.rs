//! Link extraction: the followable links of an HTML page.
//!
//! [`Extractor::extract`] returns, in document order, the `href` of `<a>` (HTML and
//! SVG, `xlink:href` on SVG) and `<area>`, the `src` of `<frame>` and `<iframe>`, the
//! `href` of `<link>` whose `rel` has `alternate`, and the URL of
//! `<meta http-equiv=refresh content="N; url=...">`, resolved against the first
//! `<base href>` (itself resolved against the page URL) or the page URL. Nothing
//! inside comments, `<script>`, `<style>`, `<textarea>`, `<title>`, `<xmp>`,
//! `<iframe>`, `<noembed>`, `<noframes>`, `<plaintext>` or CDATA counts: that is the
//! HTML Standard's raw text and RCDATA, which a browser does not parse as tags.
//! `<noscript>` content counts: a crawler is a browser with scripting disabled.
//! A `<meta name=robots content=nofollow>` (or `none`) anywhere yields no links and
//! sets [`PageLinks::nofollow`]. Values are entity-decoded like a browser does
//! ([`decode_attr_value`]); fragment-only values, and everything that does not
//! resolve to http or https, are dropped and counted in [`PageLinks::dropped`].
//!
//! # Scanner choice, by measurement
//!
//! The design card names regex (Polybot used PCRE). Measured with
//! `cargo bench -p application --bench extract` (`benches/extract/`) on one core of
//! an AMD EPYC (2 cores shared with other work, best of rounds), over 400 generated
//! pages (7.6 MB, mean 19 KB, 46,755 links) and 76 adversarial snippets; recall and
//! precision are of the resolved link sets against html5ever's tree builder (what a
//! browser's DOM holds, scripting disabled):
//!
//! | scanner        | scan MB/s | pages/s | with URL resolution | recall  | precision | snippets right |
//! |----------------|----------:|--------:|--------------------:|--------:|----------:|---------------:|
//! | memchr (this)  |       673 |  35,400 |  375 MB/s, 19,800/s | 100 %   | 100 %     | 76/76          |
//! | lol_html 3     |       163 |   8,600 |  135 MB/s,  7,100/s | 99.27 % | 100 %     | 73/76          |
//! | regex 1        |        93 |   4,900 |   85 MB/s,  4,500/s | 100 %   | 91.31 %   | 48/76          |
//! | html5ever 0.40 |        56 |   3,000 |   50 MB/s,  2,600/s | oracle  | oracle    | 73/76          |
//!
//! The memchr scanner is kept: 4x `lol_html` and 7x regex, and exact on the corpus.
//! Regex finds every link but also those in comments, scripts, styles, `<textarea>`
//! and CDATA (precision 91 %), cannot honour raw-text rules, and is the slowest of
//! the three here; it lives on in the bench as the baseline. `lol_html` follows the
//! tokenizer too, but treats `<noscript>` as raw text (a scripting browser's view),
//! so it misses the `<noscript>` links a crawler should follow, and it reads
//! `<svg/>` as an open `<svg>`.
//! With the scanner this fast, resolving URLs (the `url` crate) is now about half of
//! the per-page cost. The encoding prescan costs 0.07 us per page.
//!
//! # Character encoding
//!
//! Attribute values are decoded with the page's encoding ([`page_encoding`]: byte
//! order mark, HTTP charset, `<meta>` prescan, else UTF-8), and the query of a
//! resolved URL is percent-encoded in that encoding, as the URL Standard has browsers
//! do: `?q=é` on a windows-1252 page becomes `?q=%E9`, in the path `%C3%A9`. Bytes
//! invalid in the encoding become U+FFFD. Pages with only ASCII in their URLs (nearly
//! all) never reach the decoder.
//!
//! # Known divergences from a browser's DOM
//!
//! The tree builder is not run, so elements it would drop are still seen: `<frame>`
//! outside a `<frameset>` and start tags after `</frameset>` (kept on purpose: they
//! are the author's URLs). Links in `<template>` are kept, as html5ever keeps them.
//! Foreign content (`<svg>`, `<math>`) is tracked with a stack of open `svg`/`math`
//! elements and their integration points, not with the full stack of open elements:
//! an HTML element left open inside `<desc>`/`<title>`/`<foreignObject>` keeps a
//! browser in HTML mode after the integration point's end tag, which we do not
//! model; `annotation-xml` is not an integration point here. The snippets marked
//! `differs` in `tests/support/snippets.rs` pin these down, and the test
//! `adversarial_known_divergences` checks that they still differ.

mod charset;
mod entities;
mod entity_table;
mod meta;
mod page;
mod raw;
mod scan;
mod tag;

use url::Url;

pub use charset::{charset_param, page_encoding};
pub use entities::decode_attr_value;
pub use meta::{refresh_url, rel_is_alternate, robots_nofollow};
pub use page::{Attrs, Link, LinkKind, PageLinks, RawPage, Tag};

/// The link extractor. Keep one per thread and reuse it: its buffers are kept.
#[derive(Debug, Default)]
pub struct Extractor {
    scanner: scan::Scanner,
    page: RawPage,
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
        self.page.set_encoding(page_encoding(html, content_type));
        self.scanner.scan(html, &mut self.page);
        &self.page
    }

    /// What the last scan found, before resolution.
    pub fn raw(&self) -> &RawPage {
        &self.page
    }
}
