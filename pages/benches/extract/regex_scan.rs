//! Baseline 1: the design card's regex scan (Polybot used PCRE). Finds link tags and
//! their attributes with two byte regexes (`-u`: pages are not always UTF-8); blind
//! to comments, scripts, raw text and foreign content, which is why it returns links
//! a browser never sees.

use std::sync::LazyLock;

use pages::extract::{Attrs, RawPage, Tag};
use regex::bytes::Regex;

use super::decode;

static TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i-u)<(a|area|frame|iframe|link|meta|base)[\s/]([^>]*)>").expect("regex")
});
static ATTR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i-u)([a-z:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))"#).expect("regex")
});

/// Fills `raw` from `html`.
pub fn scan(html: &[u8], raw: &mut RawPage, buf: &mut String) {
    for tag in TAG.captures_iter(html) {
        let name = String::from_utf8_lossy(&tag[1]).to_ascii_lowercase();
        let Some(t) = Tag::from_name(&name) else {
            continue;
        };
        let mut spans: [Option<(usize, usize)>; 6] = [None; 6];
        buf.clear();
        for attr in ATTR.captures_iter(&tag[2]) {
            let slot = match attr[1].to_ascii_lowercase().as_slice() {
                b"href" => 0,
                b"src" => 1,
                b"rel" => 2,
                b"name" => 3,
                b"content" => 4,
                b"http-equiv" => 5,
                _ => continue,
            };
            if spans[slot].is_none() {
                let value = attr
                    .get(2)
                    .or(attr.get(3))
                    .or(attr.get(4))
                    .map_or(&[][..], |m| m.as_bytes());
                let start = buf.len();
                decode(value, raw.encoding(), buf);
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
        raw.element(t, &attrs);
    }
}
