//! What a scanner found on a page, and the one policy that turns it into links.
//!
//! Every scanner (the production one, and the baselines and the HTML5 oracle in the
//! tests and the bench) reports elements through [`RawPage::element`] and resolves
//! through [`RawPage::resolve`], so they differ only in how they read the HTML.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8};
use url::Url;

use super::meta;

/// The elements that carry links or page-level link rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    /// `<a href>`.
    A,
    /// `<area href>`.
    Area,
    /// `<frame src>`.
    Frame,
    /// `<iframe src>`.
    Iframe,
    /// `<link href>`, a link only when `rel` has the `alternate` token.
    Link,
    /// `<meta>`: `refresh` and `robots`.
    Meta,
    /// `<base href>`: the first one sets the base URL.
    Base,
}

impl Tag {
    /// The tag for a (lower-case) element name, if it is one of ours.
    pub fn from_name(name: &str) -> Option<Tag> {
        Some(match name {
            "a" => Tag::A,
            "area" => Tag::Area,
            "frame" => Tag::Frame,
            "iframe" => Tag::Iframe,
            "link" => Tag::Link,
            "meta" => Tag::Meta,
            "base" => Tag::Base,
            _ => return None,
        })
    }
}

/// The attributes [`RawPage::element`] looks at, decoded (entities, NUL), first
/// occurrence of each name. `None` means absent; `Some("")` is present and empty.
#[derive(Clone, Copy, Debug, Default)]
pub struct Attrs<'a> {
    /// `href`.
    pub href: Option<&'a str>,
    /// `xlink:href` on an SVG `<a>` (used when `href` is absent).
    pub xlink_href: Option<&'a str>,
    /// `src`.
    pub src: Option<&'a str>,
    /// `rel`.
    pub rel: Option<&'a str>,
    /// `name`.
    pub name: Option<&'a str>,
    /// `content`.
    pub content: Option<&'a str>,
    /// `http-equiv`.
    pub http_equiv: Option<&'a str>,
}

/// Which element a link came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// `<a href>` (HTML or SVG).
    Anchor,
    /// `<area href>`.
    Area,
    /// `<frame src>`.
    Frame,
    /// `<iframe src>`.
    Iframe,
    /// `<link rel=alternate href>`.
    Alternate,
    /// `<meta http-equiv=refresh content="N; url=...">`.
    Refresh,
}

/// A scan's findings, in document order, before resolution. Reused across pages:
/// values live in one string arena, so a page costs no allocation per link here.
#[derive(Debug)]
pub struct RawPage {
    arena: String,
    links: Vec<(usize, usize, LinkKind)>,
    base: Option<(usize, usize)>,
    nofollow: bool,
    encoding: &'static Encoding,
}

impl Default for RawPage {
    fn default() -> RawPage {
        RawPage {
            arena: String::new(),
            links: Vec::new(),
            base: None,
            nofollow: false,
            encoding: UTF_8,
        }
    }
}

impl RawPage {
    /// Forgets the previous page, keeping the buffers.
    pub fn clear(&mut self) {
        self.arena.clear();
        self.links.clear();
        self.base = None;
        self.nofollow = false;
        self.encoding = UTF_8;
    }

    /// Sets the page's encoding: values must have been decoded with it, and the
    /// query of a resolved URL is percent-encoded in it.
    pub fn set_encoding(&mut self, encoding: &'static Encoding) {
        self.encoding = encoding;
    }

    /// The page's encoding (UTF-8 unless set).
    pub fn encoding(&self) -> &'static Encoding {
        self.encoding
    }

    /// Records one element (start tag) in document order.
    pub fn element(&mut self, tag: Tag, attrs: &Attrs<'_>) {
        let (kind, value) = match tag {
            Tag::A => (LinkKind::Anchor, attrs.href.or(attrs.xlink_href)),
            Tag::Area => (LinkKind::Area, attrs.href),
            Tag::Frame => (LinkKind::Frame, attrs.src),
            Tag::Iframe => (LinkKind::Iframe, attrs.src),
            Tag::Link if attrs.rel.is_some_and(meta::rel_is_alternate) => {
                (LinkKind::Alternate, attrs.href)
            }
            Tag::Link => return,
            Tag::Base => {
                if let (None, Some(href)) = (self.base, attrs.href) {
                    self.base = Some(self.store(href));
                }
                return;
            }
            Tag::Meta => {
                let content = attrs.content.unwrap_or("");
                if attrs.name.is_some_and(|n| n.eq_ignore_ascii_case("robots"))
                    && meta::robots_nofollow(content)
                {
                    self.nofollow = true;
                }
                let refresh = attrs
                    .http_equiv
                    .is_some_and(|h| h.eq_ignore_ascii_case("refresh"));
                (
                    LinkKind::Refresh,
                    refresh.then(|| meta::refresh_url(content)).flatten(),
                )
            }
        };
        if let Some(value) = value {
            let (start, end) = self.store(value);
            self.links.push((start, end, kind));
        }
    }

    fn store(&mut self, value: &str) -> (usize, usize) {
        let start = self.arena.len();
        self.arena.push_str(value);
        (start, self.arena.len())
    }

    /// Whether a `<meta name=robots>` said `nofollow` or `none`.
    pub fn nofollow(&self) -> bool {
        self.nofollow
    }

    /// The raw link values found, in document order, with their kind.
    pub fn raw_links(&self) -> impl Iterator<Item = (&str, LinkKind)> + '_ {
        self.links.iter().map(|&(s, e, k)| (&self.arena[s..e], k))
    }

    /// The raw `href` of the first `<base href>`, if any.
    pub fn raw_base(&self) -> Option<&str> {
        self.base.map(|(s, e)| &self.arena[s..e])
    }

    /// Resolves the findings against `page_url` into `out` (cleared first).
    ///
    /// The base is the first `<base href>` parsed against the page URL, or the page
    /// URL if there is none or it does not parse. With `nofollow` no link is returned.
    /// Dropped and counted: fragment-only values (`#x`), values that do not parse,
    /// and every scheme but http and https (`javascript:`, `mailto:`, `data:`, `tel:`).
    pub fn resolve(&self, page_url: &Url, out: &mut PageLinks) {
        out.links.clear();
        out.dropped = 0;
        out.nofollow = self.nofollow;
        out.base = self
            .raw_base()
            .and_then(|href| page_url.join(href).ok())
            .unwrap_or_else(|| page_url.clone());
        if self.nofollow {
            return;
        }
        let encoding = self.encoding;
        let encode_query: &dyn Fn(&str) -> Cow<'_, [u8]> = &|s| encoding.encode(s).0;
        let mut options = Url::options().base_url(Some(&out.base));
        if encoding != UTF_8 {
            options = options.encoding_override(Some(encode_query));
        }
        for (raw, kind) in self.raw_links() {
            match resolve_one(raw, options) {
                Some(url) => out.links.push(Link { url, kind }),
                None => out.dropped += 1,
            }
        }
    }
}

fn resolve_one(raw: &str, options: url::ParseOptions<'_>) -> Option<Url> {
    // The URL parser trims C0 controls and spaces; do the same to spot `#x`.
    let trimmed = raw.trim_matches(|c: char| c <= ' ');
    if trimmed.starts_with('#') {
        return None;
    }
    let url = options.parse(trimmed).ok()?;
    matches!(url.scheme(), "http" | "https").then_some(url)
}

/// One followable link: absolute, http or https, not yet canonicalized (it may
/// still carry a fragment; [`crate::canon`] removes it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// The resolved URL.
    pub url: Url,
    /// The element it came from.
    pub kind: LinkKind,
}

/// The result for one page. Reuse it across pages to keep its `Vec`.
#[derive(Clone, Debug)]
pub struct PageLinks {
    /// The followable links in document order (repeats kept).
    pub links: Vec<Link>,
    /// A `<meta name=robots content=nofollow|none>` was seen: `links` is empty.
    pub nofollow: bool,
    /// The base URL the links were resolved against.
    pub base: Url,
    /// Link values dropped: fragment-only, unparsable, or not http(s).
    pub dropped: u32,
}

impl PageLinks {
    /// An empty result (`base` is a placeholder until the first page).
    pub fn new() -> PageLinks {
        PageLinks {
            links: Vec::new(),
            nofollow: false,
            base: Url::parse("http://placeholder.invalid/").expect("a valid literal URL"),
            dropped: 0,
        }
    }
}

impl Default for PageLinks {
    fn default() -> PageLinks {
        PageLinks::new()
    }
}
