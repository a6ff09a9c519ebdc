//! The recall oracle: the links a browser's DOM holds, from html5ever's full HTML5
//! tree builder (scripting disabled, like a crawler), reported through the same
//! `RawPage` policy as the production scanner so that only the parsing differs.

use application::extract::{Attrs, PageLinks, RawPage, Tag};
use encoding_rs::Encoding;
use html5ever::driver::{self, ParseOpts};
use html5ever::tendril::TendrilSink;
use html5ever::tree_builder::TreeBuilderOpts;
use scraper::{Html, HtmlTreeSink, Node};
use url::Url;

const HTML_NS: &str = "http://www.w3.org/1999/xhtml";
const XLINK_NS: &str = "http://www.w3.org/1999/xlink";

/// Parses `html` (in `encoding`, as declared by whoever made the page) into a DOM.
pub fn parse(html: &[u8], encoding: &'static Encoding) -> Html {
    let (text, _, _) = encoding.decode(html);
    let opts = ParseOpts {
        tree_builder: TreeBuilderOpts {
            scripting_enabled: false,
            ..Default::default()
        },
        ..Default::default()
    };
    driver::parse_document(HtmlTreeSink::new(Html::new_document()), opts).one(&*text)
}

/// Fills `raw` with the link elements of the DOM in tree order.
pub fn scan(doc: &Html, raw: &mut RawPage) {
    for node in doc.tree.root().descendants() {
        let Node::Element(el) = node.value() else {
            continue;
        };
        let Some(tag) = Tag::from_name(&el.name.local) else {
            continue;
        };
        if tag == Tag::Base && &*el.name.ns != HTML_NS {
            continue;
        }
        let plain = |name: &str| el.attr(name);
        let xlink_href = el
            .attrs
            .iter()
            .find(|(q, _)| &*q.ns == XLINK_NS && &*q.local == "href")
            .map(|(_, v)| &**v);
        let attrs = Attrs {
            href: plain("href"),
            xlink_href,
            src: plain("src"),
            rel: plain("rel"),
            name: plain("name"),
            content: plain("content"),
            http_equiv: plain("http-equiv"),
        };
        raw.element(tag, &attrs);
    }
}

/// The oracle's links for a page.
pub fn links(html: &[u8], page_url: &Url, encoding: &'static Encoding) -> PageLinks {
    let mut raw = RawPage::default();
    raw.set_encoding(encoding);
    scan(&parse(html, encoding), &mut raw);
    let mut out = PageLinks::new();
    raw.resolve(page_url, &mut out);
    out
}
