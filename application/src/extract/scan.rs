//! The production scanner: `memchr` to the next `<`, then the HTML Standard's
//! tokenizer rules for what follows (tags, comments, bogus comments, doctype, CDATA)
//! and the tree builder's choice of text mode (raw text, RCDATA, script data,
//! plaintext) for the elements that switch it. Text between tags is never looked at.
//!
//! The tree builder is modelled only as far as it changes tokenizing: a stack of open
//! `<svg>`/`<math>` elements and their HTML integration points, because inside
//! foreign content `<style>`, `<title>` and `<textarea>` are ordinary elements and
//! `<![CDATA[` is a real CDATA section.

use encoding_rs::UTF_8;
use memchr::memmem;

use super::meta::is_ws;
use super::page::{Attrs, RawPage, Tag};
use super::raw::{bogus_comment, comment_end, raw_text_end, script_end};
use super::{entities, tag};

/// Open foreign elements beyond this depth are not tracked (bounds memory on
/// adversarial input; real pages nest `<svg>` a few levels at most).
const MAX_FOREIGN_DEPTH: usize = 256;

/// What an element name means to the scanner.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Name {
    /// Carries a link or a page rule.
    Link(Tag),
    /// `<script>`: script data with its `<!--` escape rules.
    Script,
    /// Raw text or RCDATA in HTML content, up to `</name`.
    RawText(&'static [u8]),
    /// `<plaintext>`: the rest of the page is text.
    Plaintext,
    Svg,
    Math,
    /// `<foreignObject>`, `<desc>`, `<title>` in SVG; `<mi>` etc. in MathML.
    Integration(&'static [u8]),
    /// A start tag that ends foreign content (HTML Standard 13.2.6.5).
    Breakout,
    /// `<font>`: a breakout only with a `color`, `face` or `size` attribute.
    Font,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Svg,
    Math,
    /// An HTML integration point, closed by `</name>`.
    Integration(&'static [u8]),
}

fn classify(raw: &[u8]) -> Name {
    let mut buf = [0u8; 14];
    if raw.len() > buf.len() {
        return Name::Other;
    }
    let name = &mut buf[..raw.len()];
    name.copy_from_slice(raw);
    name.make_ascii_lowercase();
    match &*name {
        b"a" => Name::Link(Tag::A),
        b"area" => Name::Link(Tag::Area),
        b"frame" => Name::Link(Tag::Frame),
        b"iframe" => Name::Link(Tag::Iframe),
        b"link" => Name::Link(Tag::Link),
        b"meta" => Name::Link(Tag::Meta),
        b"base" => Name::Link(Tag::Base),
        b"script" => Name::Script,
        b"style" => Name::RawText(b"style"),
        b"title" => Name::RawText(b"title"),
        b"textarea" => Name::RawText(b"textarea"),
        b"xmp" => Name::RawText(b"xmp"),
        b"noembed" => Name::RawText(b"noembed"),
        b"noframes" => Name::RawText(b"noframes"),
        b"plaintext" => Name::Plaintext,
        b"font" => Name::Font,
        b"svg" => Name::Svg,
        b"math" => Name::Math,
        b"foreignobject" => Name::Integration(b"foreignobject"),
        b"desc" => Name::Integration(b"desc"),
        b"mi" => Name::Integration(b"mi"),
        b"mo" => Name::Integration(b"mo"),
        b"mn" => Name::Integration(b"mn"),
        b"ms" => Name::Integration(b"ms"),
        b"mtext" => Name::Integration(b"mtext"),
        b"b" | b"big" | b"blockquote" | b"body" | b"br" | b"center" | b"code" | b"dd" | b"div"
        | b"dl" | b"dt" | b"em" | b"embed" | b"h1" | b"h2" | b"h3" | b"h4" | b"h5" | b"h6"
        | b"head" | b"hr" | b"i" | b"img" | b"li" | b"listing" | b"menu" | b"nobr" | b"ol"
        | b"p" | b"pre" | b"ruby" | b"s" | b"small" | b"span" | b"strong" | b"strike" | b"sub"
        | b"sup" | b"table" | b"tt" | b"u" | b"ul" | b"var" => Name::Breakout,
        _ => Name::Other,
    }
}

/// The scanner's reusable state.
#[derive(Debug, Default)]
pub(super) struct Scanner {
    foreign: Vec<Ctx>,
    values: String,
}

/// Attribute slots, in [`Attrs`] order.
const HREF: usize = 0;
const XLINK_HREF: usize = 1;
const SRC: usize = 2;
const REL: usize = 3;
const NAME: usize = 4;
const CONTENT: usize = 5;
const HTTP_EQUIV: usize = 6;

impl Scanner {
    /// Scans `html`, reporting link elements to `page`.
    pub(super) fn scan(&mut self, html: &[u8], page: &mut RawPage) {
        self.foreign.clear();
        let mut pos = 0;
        while let Some(off) = memchr::memchr(b'<', &html[pos..]) {
            match self.markup(html, pos + off, page) {
                Some(next) => pos = next,
                // The rest of the page is inside a comment, raw text or a tag.
                None => return,
            }
        }
    }

    fn in_foreign(&self) -> bool {
        matches!(self.foreign.last(), Some(Ctx::Svg | Ctx::Math))
    }

    /// Handles the markup at `lt` (a `<`); returns where text resumes.
    fn markup(&mut self, html: &[u8], lt: usize, page: &mut RawPage) -> Option<usize> {
        match html.get(lt + 1) {
            Some(c) if c.is_ascii_alphabetic() => self.start_tag(html, lt + 1, page),
            Some(b'/') => self.end_tag(html, lt + 2),
            Some(b'!') => self.declaration(html, lt + 2),
            Some(b'?') => bogus_comment(html, lt + 2),
            _ => Some(lt + 1),
        }
    }

    fn start_tag(&mut self, html: &[u8], start: usize, page: &mut RawPage) -> Option<usize> {
        let end = name_end(html, start)?;
        let name = classify(&html[start..end]);
        let mut foreign = self.in_foreign();
        if foreign && matches!(name, Name::Breakout | Name::Link(Tag::Meta)) {
            self.break_out();
            foreign = false;
        }
        match name {
            Name::Font if foreign => {
                let mut presentational = false;
                let tag_end = tag::attributes(html, end, |attr, _| {
                    presentational |= [&b"color"[..], b"face", b"size"]
                        .iter()
                        .any(|a| attr.eq_ignore_ascii_case(a));
                })?;
                if presentational {
                    self.break_out();
                }
                Some(tag_end.next)
            }
            Name::Link(Tag::Base) if foreign => tag::skip(html, end),
            Name::Link(t) => {
                let next = self.link_element(html, end, t, foreign, page)?;
                match t {
                    Tag::Iframe if !foreign => raw_text_end(html, next, b"iframe"),
                    _ => Some(next),
                }
            }
            Name::Script if !foreign => script_end(html, tag::skip(html, end)?),
            Name::RawText(text) if !(foreign && text == b"title") => {
                let next = tag::skip(html, end)?;
                if foreign {
                    Some(next)
                } else {
                    raw_text_end(html, next, text)
                }
            }
            Name::Plaintext if !foreign => None,
            Name::Svg | Name::Math | Name::Integration(_) | Name::RawText(b"title") => {
                let tag_end = tag::attributes(html, end, |_, _| {})?;
                if !tag_end.self_closing {
                    self.open(name, foreign);
                }
                Some(tag_end.next)
            }
            _ => tag::skip(html, end),
        }
    }

    /// Tracks a non-self-closing foreign or integration-point element.
    fn open(&mut self, name: Name, foreign: bool) {
        if self.foreign.len() >= MAX_FOREIGN_DEPTH {
            return;
        }
        let top = self.foreign.last().copied();
        let ctx = match (name, top) {
            // `<svg>` inside MathML (outside annotation-xml) is a MathML element.
            (Name::Svg, Some(Ctx::Math)) => return,
            (Name::Svg, _) => Ctx::Svg,
            (Name::Math, Some(Ctx::Svg)) => return,
            (Name::Math, _) => Ctx::Math,
            (Name::RawText(_), Some(Ctx::Svg)) => Ctx::Integration(b"title"),
            (Name::Integration(n), Some(Ctx::Svg)) if matches!(n, b"foreignobject" | b"desc") => {
                Ctx::Integration(n)
            }
            (Name::Integration(n), Some(Ctx::Math))
                if matches!(n, b"mi" | b"mo" | b"mn" | b"ms" | b"mtext") =>
            {
                Ctx::Integration(n)
            }
            _ => return,
        };
        debug_assert!(foreign || matches!(ctx, Ctx::Svg | Ctx::Math));
        self.foreign.push(ctx);
    }

    /// A breakout tag closes foreign elements up to the nearest integration point.
    fn break_out(&mut self) {
        while let Some(Ctx::Svg | Ctx::Math) = self.foreign.last() {
            self.foreign.pop();
        }
    }

    fn end_tag(&mut self, html: &[u8], start: usize) -> Option<usize> {
        match html.get(start) {
            Some(c) if c.is_ascii_alphabetic() => {}
            Some(b'>') => return Some(start + 1),
            Some(_) => return bogus_comment(html, start),
            None => return Some(start),
        }
        let end = name_end(html, start)?;
        let next = tag::skip(html, end)?;
        if self.foreign.is_empty() {
            return Some(next);
        }
        let close = match classify(&html[start..end]) {
            Name::Svg => Ctx::Svg,
            Name::Math => Ctx::Math,
            Name::Integration(n) => Ctx::Integration(n),
            Name::RawText(b"title") => Ctx::Integration(b"title"),
            Name::Breakout if self.in_foreign() => {
                // `</br>` and `</p>` break out of foreign content too.
                let name = &html[start..end];
                if name.eq_ignore_ascii_case(b"br") || name.eq_ignore_ascii_case(b"p") {
                    self.break_out();
                }
                return Some(next);
            }
            _ => return Some(next),
        };
        match close {
            Ctx::Integration(_) if self.foreign.last() == Some(&close) => {
                self.foreign.pop();
            }
            Ctx::Svg | Ctx::Math => {
                if let Some(i) = self.foreign.iter().rposition(|c| *c == close) {
                    self.foreign.truncate(i);
                }
            }
            _ => {}
        }
        Some(next)
    }

    /// `<!`: comment, doctype, CDATA or bogus comment.
    fn declaration(&mut self, html: &[u8], start: usize) -> Option<usize> {
        let rest = &html[start..];
        if rest.starts_with(b"--") {
            comment_end(html, start + 2)
        } else if rest.starts_with(b"[CDATA[") && !self.foreign.is_empty() {
            // Inside an integration point too: the Standard asks whether the current
            // node is foreign, and right inside `<foreignObject>` it is.
            let body = start + 7;
            memmem::find(&html[body..], b"]]>").map(|i| body + i + 3)
        } else {
            // Doctype and bogus comment alike end at the first `>`.
            bogus_comment(html, start)
        }
    }

    /// Reads the attributes of a link element and reports it.
    fn link_element(
        &mut self,
        html: &[u8],
        pos: usize,
        t: Tag,
        foreign: bool,
        page: &mut RawPage,
    ) -> Option<usize> {
        let wanted: &[usize] = match t {
            Tag::A if foreign => &[HREF, XLINK_HREF],
            Tag::A | Tag::Area | Tag::Base => &[HREF],
            Tag::Frame | Tag::Iframe => &[SRC],
            Tag::Link => &[REL, HREF],
            Tag::Meta => &[NAME, CONTENT, HTTP_EQUIV],
        };
        let mut spans: [Option<(usize, usize)>; 7] = [None; 7];
        let values = &mut self.values;
        values.clear();
        let encoding = page.encoding();
        let end = tag::attributes(html, pos, |name, raw| {
            let Some(slot) = slot_of(name) else { return };
            if spans[slot].is_none() && wanted.contains(&slot) {
                let start = values.len();
                if encoding == UTF_8 || raw.is_ascii() {
                    entities::decode_attr_value(raw, values);
                } else {
                    let text = encoding.decode_without_bom_handling(raw).0;
                    entities::decode_attr_value(text.as_bytes(), values);
                }
                spans[slot] = Some((start, values.len()));
            }
        })?;
        let get = |slot: usize| spans[slot].map(|(s, e)| &self.values[s..e]);
        let attrs = Attrs {
            href: get(HREF),
            xlink_href: get(XLINK_HREF),
            src: get(SRC),
            rel: get(REL),
            name: get(NAME),
            content: get(CONTENT),
            http_equiv: get(HTTP_EQUIV),
        };
        page.element(t, &attrs);
        Some(end.next)
    }
}

fn slot_of(name: &[u8]) -> Option<usize> {
    let eq = |s: &str| name.eq_ignore_ascii_case(s.as_bytes());
    Some(match name.len() {
        4 if eq("href") => HREF,
        3 if eq("src") => SRC,
        3 if eq("rel") => REL,
        4 if eq("name") => NAME,
        7 if eq("content") => CONTENT,
        10 if eq("http-equiv") => HTTP_EQUIV,
        10 if eq("xlink:href") => XLINK_HREF,
        _ => return None,
    })
}

/// The end of a tag name starting at `start`; `None` at EOF.
fn name_end(html: &[u8], start: usize) -> Option<usize> {
    let len = html[start..]
        .iter()
        .position(|&c| is_ws(c) || c == b'/' || c == b'>')?;
    Some(start + len)
}
