//! Hard HTML, each kind held against html5ever's reading of the same page (issue
//! 30): foreign-content breakout, `<a>` inside SVG, a fragment-only `<base>`, an
//! over-long attribute value, an upper-case `HTTP:` scheme.
//!
//! The reference is independent of the scanner and of [`RawPage`](super::RawPage):
//! html5ever builds the tree (scripting off, as a crawler reads), the walk takes the
//! link-bearing elements the module docs list, in the HTML namespace only and in
//! tree order (template contents are not in the document), and resolves them as the
//! HTML Standard says: against the first `<base href>` parsed against the page URL
//! (the page URL if it does not parse), with the `url` crate (the URL Standard's
//! parser). Only the policy the module docs state is shared: which `rel` is
//! followed, the refresh grammar, robots `nofollow`, and that fragment-only values,
//! a refresh back to the page and schemes other than http(s) are dropped.

use html5ever::driver::{self, ParseOpts};
use html5ever::tendril::TendrilSink;
use html5ever::tree_builder::TreeBuilderOpts;
use scraper::{Html, HtmlTreeSink, Node};
use url::Url;

use super::{Extractor, PageLinks, refresh_url, rel_is_followed, robots_nofollow};

const HTML_NS: &str = "http://www.w3.org/1999/xhtml";
const PAGE: &str = "http://example.com/dir/page.html?q=1";

/// html5ever's tree for `html` (UTF-8), scripting off.
fn tree(html: &str) -> Html {
    let opts = ParseOpts {
        tree_builder: TreeBuilderOpts {
            scripting_enabled: false,
            ..Default::default()
        },
        ..Default::default()
    };
    driver::parse_document(HtmlTreeSink::new(Html::new_document()), opts).one(html)
}

/// The HTML elements of `doc` in tree order, template contents left out.
fn html_elements(doc: &Html) -> Vec<&scraper::node::Element> {
    let mut out = Vec::new();
    let mut todo = vec![doc.tree.root()];
    while let Some(node) = todo.pop() {
        if let Node::Element(el) = node.value() {
            if &*el.name.ns == HTML_NS {
                if &*el.name.local == "template" {
                    continue;
                }
                out.push(el);
            }
        }
        todo.extend(node.children().collect::<Vec<_>>().into_iter().rev());
    }
    out
}

/// The links html5ever's tree holds, resolved as the Standard says.
fn reference(html: &str, page: &Url) -> Vec<String> {
    let doc = tree(html);
    let elements = html_elements(&doc);
    let nofollow = elements.iter().any(|el| {
        &*el.name.local == "meta"
            && el
                .attr("name")
                .is_some_and(|n| n.eq_ignore_ascii_case("robots"))
            && robots_nofollow(el.attr("content").unwrap_or(""))
    });
    if nofollow {
        return Vec::new();
    }
    let base = elements
        .iter()
        .find(|el| &*el.name.local == "base" && el.attr("href").is_some())
        .and_then(|el| page.join(el.attr("href")?).ok())
        .unwrap_or_else(|| page.clone());
    let mut links = Vec::new();
    for el in elements {
        let (value, refresh) = match &*el.name.local {
            "a" | "area" => (el.attr("href"), false),
            "iframe" | "frame" => (el.attr("src"), false),
            "link" if el.attr("rel").is_some_and(rel_is_followed) => (el.attr("href"), false),
            "meta"
                if el
                    .attr("http-equiv")
                    .is_some_and(|h| h.eq_ignore_ascii_case("refresh")) =>
            {
                (el.attr("content").and_then(refresh_url), true)
            }
            _ => continue,
        };
        let Some(value) = value else { continue };
        let value = value.trim_matches(|c: char| c <= ' ');
        if value.starts_with('#') {
            continue;
        }
        let Ok(url) = base.join(value) else { continue };
        if !matches!(url.scheme(), "http" | "https") {
            continue;
        }
        let doc_of = |u: &Url| {
            let mut u = u.clone();
            u.set_fragment(None);
            u
        };
        if refresh && doc_of(&url) == doc_of(page) {
            continue;
        }
        links.push(url.to_string());
    }
    links
}

/// What the extractor finds on `html`.
fn ours(html: &str, page: &Url) -> Vec<String> {
    let mut out = PageLinks::new();
    Extractor::new().extract(html.as_bytes(), page, Some("text/html"), &mut out);
    out.links.iter().map(|l| l.url.to_string()).collect()
}

/// Our links equal html5ever's on every page, and the reference is not empty
/// (a page whose reference holds no link tests nothing).
fn agree(kind: &str, pages: &[String]) {
    let page = Url::parse(PAGE).expect("a valid literal URL");
    for html in pages {
        let want = reference(html, &page);
        assert!(
            !want.is_empty(),
            "{kind}: the reference holds no link on {html:.200}"
        );
        assert_eq!(ours(html, &page), want, "{kind}: on {html:.300}");
    }
}

/// (`<annotation-xml encoding=text/html>` is left out: html5ever does not make it
/// an HTML integration point, a known divergence the snippet `annotation_xml_html`
/// records.)
#[test]
fn foreign_content_breakout() {
    let pages = [
        "<svg><p><a href=/after-p>x</a></p></svg>",
        "<svg><g><div><a href=/after-div></a></div></g></svg><a href=/out>",
        "<math><mi><a href=/in-mi></a></mi><p><a href=/after-math-p></a></math>",
        "<svg><b><a href=/after-b></a></b><circle/></svg>",
        "<svg><font color=red><a href=/after-font></a></font></svg>",
        "<svg><font><a href=/svg-font-a></a></font></svg><a href=/html>",
        "<svg><table><tr><td><a href=/in-table></a></td></tr></table></svg>",
        "<svg><desc><a href=/in-desc></a></desc><ul><li><a href=/after-ul></a></ul></svg>",
        "<svg></p><a href=/after-end-p></a></svg>",
        "<svg><br><a href=/after-br></a></svg>",
        "<svg><foreignObject><a href=/fo></a><svg><a href=/inner-svg></a></svg></foreignObject></svg>",
    ]
    .map(String::from);
    agree("foreign content breakout", &pages);
}

#[test]
fn anchor_inside_svg_is_not_a_link() {
    let pages = [
        "<svg><a href=/svg-a><text>x</text></a></svg><a href=/html-a>",
        "<svg><a xlink:href=/svg-xlink></a></svg><a href=/html-a>",
        "<svg><g><a href=/deep><circle/></a></g></svg><a href=/html-a>",
        "<math><a href=/math-a></a></math><a href=/html-a>",
        "<svg><template><a href=/svg-template></a></template></svg><a href=/html-a>",
        "<svg><a href=/svg-a></a><p><a href=/html-after-breakout></a></svg>",
    ]
    .map(String::from);
    agree("<a> inside SVG", &pages);
}

#[test]
fn fragment_only_base() {
    let pages = [
        "<base href=#x><a href=other.html></a><a href=''></a><a href=?q=2></a>",
        "<base href='#'><a href=/abs></a><a href=rel></a>",
        "<base href=#x><meta http-equiv=refresh content='0; url=#y'><a href=next>",
        "<base href=#x><meta http-equiv=refresh content='0; url=elsewhere'>",
        "<base href=#x><base href=/ignored/><a href=rel></a>",
        "<base href=' #x '><link rel=next href=n2><area href=a2>",
        "<base href=#x><a href=#y></a><a href=page.html#z></a>",
    ]
    .map(String::from);
    agree("fragment-only base", &pages);
}

#[test]
fn over_long_attribute_value() {
    let long = "a".repeat(100_000);
    let pages = [
        format!("<a href=/{long}></a><a href=/next>"),
        format!("<a href=\"/{long}\"></a><a href=/next>"),
        format!("<a title=\"{long}\" href=/after-title></a>"),
        format!("<a data-x='{long}' href='/single'></a>"),
        format!("<a href=/x{}></a><a href=/y>", "&amp;".repeat(20_000)),
        format!("<link rel=next href='/{long}'><a href=/z>"),
        format!("<base href='/{long}/'><a href=rel>"),
        format!("<meta content=\"{long}\" name=description><a href=/after-meta>"),
        format!("<a href=\"/q?{long}\" title='x'>y</a>"),
    ];
    agree("over-long attribute value", &pages);
}

#[test]
fn upper_case_scheme() {
    let pages = [
        "<a href=HTTP://Example.COM/Up></a>",
        "<a href=HTTPS://example.org/s></a>",
        "<a href=HTTP:rel-no-slashes></a>",
        "<a href=HTTP:/abs-path></a>",
        "<a href='HtTp://example.net/mixed'></a>",
        "<base href=HTTP://base.example/b/><a href=x></a>",
        "<meta http-equiv=refresh content='0; URL=HTTP://example.com/r'>",
        "<a href=HTTP:\\\\host\\path></a>",
        "<a href=JAVASCRIPT:void(0)></a><a href=MAILTO:x@y.z></a><a href=HTTPS:other></a>",
        "<iframe src=HTTP://frame.example/></iframe><link rel=NEXT href=HTTP://n.example/>",
    ]
    .map(String::from);
    agree("upper-case HTTP: scheme", &pages);
}
