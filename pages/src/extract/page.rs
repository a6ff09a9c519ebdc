//! What a scanner found on a page, and the one policy that turns it into links.
//!
//! Every scanner (the production one, and the baselines and the HTML5 oracle in the
//! tests and the bench) reports elements through [`RawPage::element`] and resolves
//! through [`RawPage::resolve`], so they differ only in how they read the HTML.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};
use url::Url;

use super::meta;
use crate::directives::{self, Directives};

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
    /// `<link href>`, a link only when its `rel` is navigational
    /// ([`rel_is_followed`](super::rel_is_followed)).
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
    /// `<a href>`.
    Anchor,
    /// `<area href>`.
    Area,
    /// `<frame src>`.
    Frame,
    /// `<iframe src>`.
    Iframe,
    /// `<link href>` with a navigational `rel` (next, alternate, canonical, ...).
    Link,
    /// `<meta http-equiv=refresh content="N; url=...">` that leads elsewhere.
    Refresh,
}

/// A point in a scan that [`RawPage::truncate`] can go back to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    arena: usize,
    links: usize,
    events: usize,
}

/// A scan's findings, in document order, before resolution. Reused across pages:
/// values live in one string arena, so a page costs no allocation per link here.
#[derive(Debug)]
pub struct RawPage {
    arena: String,
    links: Vec<(usize, usize, LinkKind)>,
    /// The first base's value and the event number that set it.
    base: Option<(usize, usize, usize)>,
    /// The event number of the first robots nofollow.
    nofollow: Option<usize>,
    /// The `<meta name=robots>` (or our agent's name) elements seen: their
    /// directives and event numbers (see [`RawPage::robots`]).
    robots: Vec<(Directives, usize)>,
    /// Whether a meta `nofollow` removes the links (the default).
    obey_meta: bool,
    /// Elements recorded so far.
    events: usize,
    encoding: &'static Encoding,
    /// No encoding was declared: UTF-8 stands in until a value needs the answer.
    undecided: bool,
}

impl Default for RawPage {
    fn default() -> RawPage {
        RawPage {
            arena: String::new(),
            links: Vec::new(),
            base: None,
            nofollow: None,
            robots: Vec::new(),
            obey_meta: true,
            events: 0,
            encoding: UTF_8,
            undecided: false,
        }
    }
}

impl RawPage {
    /// Forgets the previous page, keeping the buffers.
    pub fn clear(&mut self) {
        self.arena.clear();
        self.links.clear();
        self.base = None;
        self.nofollow = None;
        self.robots.clear();
        self.events = 0;
        self.encoding = UTF_8;
        self.undecided = false;
    }

    /// Sets the page's encoding: values must have been decoded with it, and the
    /// query of a resolved URL is percent-encoded in its output encoding (UTF-8
    /// for a UTF-16 page, as the URL Standard says).
    pub fn set_encoding(&mut self, encoding: &'static Encoding) {
        self.encoding = encoding.output_encoding();
        self.undecided = false;
    }

    /// No encoding was declared (no byte order mark, HTTP charset or `<meta>`):
    /// the HTML Standard leaves the choice to autodetection and a default, which
    /// [`RawPage::decide_encoding`] makes when a value first needs it. Until then
    /// the encoding reads as UTF-8, which is right for ASCII.
    pub fn set_encoding_undecided(&mut self) {
        self.encoding = UTF_8;
        self.undecided = true;
    }

    /// Whether the encoding is still to be decided.
    pub fn encoding_undecided(&self) -> bool {
        self.undecided
    }

    /// Decides an undeclared encoding from the whole page: UTF-8 if the page is
    /// valid UTF-8, else windows-1252 (the Standard's default for most locales).
    /// Returns the encoding.
    pub fn decide_encoding(&mut self, html: &[u8]) -> &'static Encoding {
        if self.undecided {
            self.encoding = undeclared_encoding(html);
            self.undecided = false;
        }
        self.encoding
    }

    /// Ends a scan of `html`: an undecided encoding is decided if a value holds
    /// non-ASCII (from a character reference), because its query is encoded in it.
    pub fn finish(&mut self, html: &[u8]) {
        if self.undecided && !self.arena.is_ascii() {
            self.decide_encoding(html);
        }
    }

    /// Where the scan stands, to [`truncate`](RawPage::truncate) back to.
    pub fn mark(&self) -> Mark {
        Mark {
            arena: self.arena.len(),
            links: self.links.len(),
            events: self.events,
        }
    }

    /// Forgets everything recorded since `mark` (elements that the tree builder
    /// removed from the document): links, and the base and nofollow if they came
    /// from those elements.
    pub fn truncate(&mut self, mark: Mark) {
        self.arena.truncate(mark.arena);
        self.links.truncate(mark.links);
        if self.base.is_some_and(|(_, _, at)| at >= mark.events) {
            self.base = None;
        }
        if self.nofollow.is_some_and(|at| at >= mark.events) {
            self.nofollow = None;
        }
        self.robots.retain(|&(_, at)| at < mark.events);
    }

    /// Whether a meta robots `nofollow` removes the page's links in
    /// [`RawPage::resolve`] (default true; off, the directives are still reported).
    /// Kept across [`RawPage::clear`].
    pub fn set_obey_meta(&mut self, obey: bool) {
        self.obey_meta = obey;
    }

    /// The directives of the page's `<meta name=robots>` and `<meta name=polycrawl>`
    /// elements together ([`crate::directives`]).
    pub fn robots(&self) -> Directives {
        self.robots
            .iter()
            .fold(Directives::default(), |all, (d, _)| all.union(*d))
    }

    /// The page's encoding (UTF-8 unless set).
    pub fn encoding(&self) -> &'static Encoding {
        self.encoding
    }

    /// Records one element (start tag) in document order.
    pub fn element(&mut self, tag: Tag, attrs: &Attrs<'_>) {
        let event = self.events;
        self.events += 1;
        let (kind, value) = match tag {
            Tag::A => (LinkKind::Anchor, attrs.href),
            Tag::Area => (LinkKind::Area, attrs.href),
            Tag::Frame => (LinkKind::Frame, attrs.src),
            Tag::Iframe => (LinkKind::Iframe, attrs.src),
            Tag::Link if attrs.rel.is_some_and(meta::rel_is_followed) => {
                (LinkKind::Link, attrs.href)
            }
            Tag::Link => return,
            Tag::Base => {
                if let (None, Some(href)) = (self.base, attrs.href) {
                    let (start, end) = self.store(href);
                    self.base = Some((start, end, event));
                }
                return;
            }
            Tag::Meta => {
                let content = attrs.content.unwrap_or("");
                if attrs
                    .name
                    .is_some_and(|n| directives::meta_name_applies(n, directives::AGENT))
                {
                    let found = directives::meta_content(content);
                    if found.nofollow && self.nofollow.is_none() {
                        self.nofollow = Some(event);
                    }
                    if !found.is_empty() {
                        self.robots.push((found, event));
                    }
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

    /// Whether a `<meta name=robots>` (or `name=polycrawl`) said `nofollow` or `none`.
    pub fn nofollow(&self) -> bool {
        self.nofollow.is_some()
    }

    /// The raw link values found, in document order, with their kind.
    pub fn raw_links(&self) -> impl Iterator<Item = (&str, LinkKind)> + '_ {
        self.links.iter().map(|&(s, e, k)| (&self.arena[s..e], k))
    }

    /// The raw `href` of the first `<base href>`, if any.
    pub fn raw_base(&self) -> Option<&str> {
        self.base.map(|(s, e, _)| &self.arena[s..e])
    }

    /// Resolves the findings against `page_url` into `out` (cleared first).
    ///
    /// The base is the first `<base href>` parsed against the page URL, or the page
    /// URL if there is none or it does not parse. With `nofollow` no link is returned
    /// (unless [`RawPage::set_obey_meta`] turned that off).
    /// Dropped and counted: fragment-only values (`#x`), values that do not parse,
    /// every scheme but http and https (`javascript:`, `mailto:`, `data:`, `tel:`),
    /// and a refresh that leads back to the page itself (a reload, not a link).
    pub fn resolve(&self, page_url: &Url, out: &mut PageLinks) {
        out.links.clear();
        out.dropped = 0;
        out.nofollow = self.nofollow() && self.obey_meta;
        out.robots = self.robots();
        out.base = self
            .raw_base()
            .and_then(|href| page_url.join(href).ok())
            .unwrap_or_else(|| page_url.clone());
        if out.nofollow {
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
                Some(url) if kind == LinkKind::Refresh && same_document(&url, page_url) => {
                    out.dropped += 1;
                }
                Some(url) => out.links.push(Link { url, kind }),
                None => out.dropped += 1,
            }
        }
    }
}

/// An undeclared page's encoding: valid UTF-8 means UTF-8
/// (the Standard's optional autodetection step), anything else windows-1252.
pub(super) fn undeclared_encoding(html: &[u8]) -> &'static Encoding {
    if std::str::from_utf8(html).is_ok() {
        UTF_8
    } else {
        WINDOWS_1252
    }
}

/// Equal but for the fragment.
fn same_document(a: &Url, b: &Url) -> bool {
    let strip = |u: &Url| {
        let s = u.as_str();
        match u.fragment() {
            Some(f) => s.len() - f.len() - 1,
            None => s.len(),
        }
    };
    a.as_str()[..strip(a)] == b.as_str()[..strip(b)]
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
    /// A `<meta name=robots content=nofollow|none>` was seen and obeyed: `links` is
    /// empty.
    pub nofollow: bool,
    /// The page's meta robots directives, obeyed or not ([`RawPage::robots`]).
    pub robots: Directives,
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
            robots: Directives::default(),
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
