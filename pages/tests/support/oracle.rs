//! The recall oracle: the links a browser's DOM holds, from html5ever's full HTML5
//! tree builder (scripting disabled, like a crawler), reported through the same
//! `RawPage` policy as the production scanner so that only the parsing differs.

use encoding_rs::Encoding;
use html5ever::driver::{self, ParseOpts};
use html5ever::tendril::TendrilSink;
use html5ever::tree_builder::TreeBuilderOpts;
use pages::extract::{Attrs, PageLinks, RawPage, Tag};
use scraper::{Html, HtmlTreeSink, Node};
use url::Url;

const HTML_NS: &str = "http://www.w3.org/1999/xhtml";

/// Parses `html` (in `encoding`, as a browser decides it) into a DOM.
pub fn parse(html: &[u8], encoding: &'static Encoding) -> Html {
    // `decode` sniffs a byte order mark itself, as a browser does.
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

/// Fills `raw` with the link elements of the DOM in tree order: HTML elements only
/// (an SVG `<a>` is not a link). Template contents are not part of the document and
/// are skipped.
pub fn scan(doc: &Html, raw: &mut RawPage) {
    // Depth-first, children in order: tree order. An explicit stack, since
    // hostile pages nest deeply.
    let mut todo = vec![doc.tree.root()];
    while let Some(node) = todo.pop() {
        let children = node.children().collect::<Vec<_>>();
        if let Node::Element(el) = node.value() {
            let ns = &*el.name.ns;
            if ns == HTML_NS && &*el.name.local == "template" {
                continue; // Its contents are not in the document.
            }
            element(el, ns, raw);
        }
        todo.extend(children.into_iter().rev());
    }
}

fn element(el: &scraper::node::Element, ns: &str, raw: &mut RawPage) {
    let Some(tag) = Tag::from_name(&el.name.local) else {
        return;
    };
    if ns != HTML_NS {
        return;
    }
    let plain = |name: &str| el.attr(name);
    let attrs = Attrs {
        href: plain("href"),
        src: plain("src"),
        rel: plain("rel"),
        name: plain("name"),
        content: plain("content"),
        http_equiv: plain("http-equiv"),
    };
    raw.element(tag, &attrs);
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
