//! Baseline 2: Cloudflare's `lol_html` streaming rewriter, with element handlers on the
//! link elements and a discarding output sink. Its tokenizer follows the HTML
//! Standard and simulates enough of the tree builder for raw text and foreign content.

use std::cell::RefCell;

use lol_html::{AsciiCompatibleEncoding, HtmlRewriter, Settings, element};
use pages::extract::{Attrs, RawPage, Tag};

use super::decode;

const SVG_NS: &str = "http://www.w3.org/2000/svg";
const HTML_NS: &str = "http://www.w3.org/1999/xhtml";

/// Fills `raw` from `html`.
pub fn scan(html: &[u8], raw: &mut RawPage) {
    let encoding = raw.encoding();
    let page = RefCell::new(raw);
    let mut buf = String::new();
    let handler = element!("a, area, frame, iframe, link, meta, base", |el| {
        let Some(tag) = Tag::from_name(&el.tag_name()) else {
            return Ok(());
        };
        let ns = el.namespace_uri();
        if tag == Tag::Base && ns != HTML_NS {
            return Ok(());
        }
        let names = ["href", "src", "rel", "name", "content", "http-equiv"];
        let mut spans: [Option<(usize, usize)>; 6] = [None; 6];
        buf.clear();
        for (slot, name) in names.iter().enumerate() {
            if slot == 6 && ns != SVG_NS {
                continue;
            }
            if let Some(value) = el.get_attribute(name) {
                let start = buf.len();
                // lol_html decoded the bytes; entities are left to us.
                decode(value.as_bytes(), encoding_rs::UTF_8, &mut buf);
                spans[slot] = Some((start, buf.len()));
            }
        }
        let get = |slot: usize| spans[slot].map(|(s, e)| &buf[s..e]);
        let attrs = Attrs {
            href: get(0),
            src: get(1),
            rel: get(2),
            name: get(3),
            content: get(4),
            http_equiv: get(5),
        };
        page.borrow_mut().element(tag, &attrs);
        Ok(())
    });
    let encoding =
        AsciiCompatibleEncoding::new(encoding).unwrap_or_else(AsciiCompatibleEncoding::utf_8);
    let settings = Settings::new()
        .append_element_content_handler(handler)
        .with_encoding(encoding)
        // Best effort on ambiguous markup instead of bailing out.
        .with_strict(false);
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    // A page that lol_html refuses (memory limit) simply yields what was found so far.
    if rewriter.write(html).is_ok() {
        let _ = rewriter.end();
    }
}
