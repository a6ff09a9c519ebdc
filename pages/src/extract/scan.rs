//! The production scanner: `memchr` to the next `<`, then the HTML Standard's
//! tokenizer rules for what follows (tags, comments, bogus comments, doctype, CDATA)
//! and the tree builder's decisions that change what is read or what is in the
//! document:
//!
//! - the text mode an element switches to (raw text, RCDATA, script data,
//!   plaintext), which foreign content turns off;
//! - foreign content (`tree`): which elements are SVG or MathML, the breakout
//!   tags, integration points, CDATA;
//! - `<template>`: its contents are inert, so nothing in them counts;
//! - frameset documents: `<frame>` counts only inside `<frameset>`, a `<frameset>`
//!   in a body that has shown nothing yet replaces that body (and its links), and
//!   everything after `</frameset>` but `<noframes>` is ignored;
//! - `<head>` versus body: only for where the body starts (the frameset case).
//!
//! Text between tags is looked at only until the first non-whitespace character
//! (it clears the frameset-ok flag), and inside `<template>` never.

use encoding_rs::UTF_8;
use memchr::memmem;

use super::meta::is_ws;
use super::names::{self, BREAKOUT, FRAMESET_OFF, HEAD, Info, Kind, VOID};
use super::page::{Attrs, Mark, RawPage, Tag};
use super::raw::{bogus_comment, comment_end, raw_text_end, script_end};
use super::tree::{self, Ns, Open, Point, Stack, What};
use super::{entities, tag};

/// The insertion modes that matter here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Mode {
    /// Head, body, after body, after html: everything is read.
    #[default]
    Normal,
    /// Inside `<frameset>`: only `<frame>`, `<frameset>` and `<noframes>` count.
    Frameset,
    /// After the outer `</frameset>`: only `<noframes>` is read.
    AfterFrameset,
}

/// The scanner's reusable state.
#[derive(Debug, Default)]
pub(super) struct Scanner {
    stack: Stack,
    mode: Mode,
    frameset_depth: usize,
    /// The Standard's frameset-ok flag.
    frameset_ok: bool,
    /// Where the page stood when the body element was created.
    body: Option<Mark>,
    /// `</head>` was seen: a `<noscript>` now opens the body.
    after_head: bool,
    values: String,
}

/// Attribute slots, in [`Attrs`] order.
const HREF: usize = 0;
const SRC: usize = 1;
const REL: usize = 2;
const NAME: usize = 3;
const CONTENT: usize = 4;
const HTTP_EQUIV: usize = 5;

/// Character data that is not all ASCII whitespace (NUL is dropped in body).
fn has_text(text: &[u8]) -> bool {
    text.iter().any(|&c| !is_ws(c) && c != 0)
}

impl Scanner {
    /// Scans `html`, reporting link elements to `page`.
    pub(super) fn scan(&mut self, html: &[u8], page: &mut RawPage) {
        self.stack.clear();
        self.mode = Mode::Normal;
        self.frameset_depth = 0;
        self.frameset_ok = true;
        self.body = None;
        self.after_head = false;
        let mut pos = 0;
        while let Some(off) = memchr::memchr(b'<', &html[pos..]) {
            let lt = pos + off;
            if (self.frameset_ok || self.body.is_none()) && has_text(&html[pos..lt]) {
                self.text(page);
            }
            match self.markup(html, lt, page) {
                Some(next) => pos = next,
                // The rest of the page is inside a comment, raw text or a tag.
                None => return,
            }
        }
    }

    /// Non-whitespace character data: the body starts, frameset is no longer ok.
    fn text(&mut self, page: &RawPage) {
        if self.mode != Mode::Normal || self.stack.in_template() {
            return;
        }
        self.frameset_ok = false;
        self.start_body(page);
    }

    fn start_body(&mut self, page: &RawPage) {
        if self.body.is_none() {
            self.body = Some(page.mark());
        }
    }

    /// The current node is a foreign element (not HTML, not a template).
    fn top_is_foreign(&self) -> bool {
        matches!(
            self.stack.top(),
            Some(Open {
                what: What::Foreign(..),
                ..
            })
        )
    }

    /// Whether a start tag goes by the foreign-content rules (13.2.6's dispatcher).
    fn foreign_rules(&self, info: Info) -> bool {
        match self.stack.top().map(|o| o.what) {
            None | Some(What::Html(_) | What::Template) => false,
            Some(What::Foreign(_, Point::Html)) => false,
            Some(What::Foreign(_, Point::MathText)) => info.kind == Kind::MathGlyph,
            Some(What::Foreign(_, Point::AnnotationXml)) => info.kind != Kind::Svg,
            Some(What::Foreign(_, Point::None)) => true,
        }
    }

    /// Handles the markup at `lt` (a `<`); returns where text resumes.
    fn markup(&mut self, html: &[u8], lt: usize, page: &mut RawPage) -> Option<usize> {
        match html.get(lt + 1) {
            Some(c) if c.is_ascii_alphabetic() => self.start_tag(html, lt + 1, page),
            Some(b'/') => self.end_tag(html, lt + 2, page),
            Some(b'!') => self.declaration(html, lt + 2),
            Some(b'?') => bogus_comment(html, lt + 2),
            _ => Some(lt + 1),
        }
    }

    fn start_tag(&mut self, html: &[u8], start: usize, page: &mut RawPage) -> Option<usize> {
        let end = name_end(html, start)?;
        let info = names::classify(&html[start..end]);
        if self.mode != Mode::Normal {
            return self.frameset_start_tag(html, end, info, page);
        }
        if self.foreign_rules(info) {
            if info.kind == Kind::Font {
                let mut presentational = false;
                let tag_end = tag::attributes(html, end, |attr, _| {
                    presentational |= [&b"color"[..], b"face", b"size"]
                        .iter()
                        .any(|a| attr.eq_ignore_ascii_case(a));
                })?;
                if presentational {
                    self.stack.break_out();
                    self.html_element(html, start, end, info, page);
                } else if !tag_end.self_closing {
                    self.push_foreign(start, end, Point::None);
                }
                return Some(tag_end.next);
            }
            if !info.has(BREAKOUT) {
                return self.foreign_start_tag(html, start, end, info);
            }
            self.stack.break_out();
        }
        self.html_start_tag(html, start, end, info, page)
    }

    fn push_foreign(&mut self, start: usize, end: usize, point: Point) {
        let ns = match self.stack.top().map(|o| o.what) {
            Some(What::Foreign(ns, _)) => ns,
            _ => Ns::Svg,
        };
        self.stack
            .push(start, end - start, What::Foreign(ns, point));
    }

    /// A start tag in foreign content: an element in the current node's namespace.
    fn foreign_start_tag(
        &mut self,
        html: &[u8],
        start: usize,
        end: usize,
        info: Info,
    ) -> Option<usize> {
        let ns = match self.stack.top().map(|o| o.what) {
            Some(What::Foreign(ns, _)) => ns,
            _ => Ns::Svg,
        };
        let mut html_encoding = false;
        // No foreign element carries a link: an SVG `<a>` is not in the HTML
        // namespace, where a crawler's links are (html5ever's tree says the same).
        let tag_end = match (ns, info.kind) {
            (Ns::Math, Kind::AnnotationXml) => tag::attributes(html, end, |attr, value| {
                if attr.eq_ignore_ascii_case(b"encoding") {
                    html_encoding |= value.eq_ignore_ascii_case(b"text/html")
                        || value.eq_ignore_ascii_case(b"application/xhtml+xml");
                }
            })?,
            _ => tag::attributes(html, end, |_, _| {})?,
        };
        let point = match (ns, info.kind) {
            (Ns::Svg, Kind::SvgIntegration | Kind::Title) => Point::Html,
            (Ns::Math, Kind::MathText) => Point::MathText,
            (Ns::Math, Kind::AnnotationXml) if html_encoding => Point::Html,
            (Ns::Math, Kind::AnnotationXml) => Point::AnnotationXml,
            _ => Point::None,
        };
        if !tag_end.self_closing {
            self.stack
                .push(start, end - start, What::Foreign(ns, point));
        }
        Some(tag_end.next)
    }

    /// What an HTML start tag does to the insertion mode and the tracked stack,
    /// before its contents are read.
    fn html_element(&mut self, html: &[u8], start: usize, end: usize, info: Info, page: &RawPage) {
        if (self.body.is_none() || self.frameset_ok) && !self.stack.in_template() {
            let head = info.has(HEAD) || info.kind == Kind::Noscript && !self.after_head;
            if !head {
                self.start_body(page);
            }
            if info.has(FRAMESET_OFF) {
                self.frameset_ok = false;
            }
        }
        if self.stack.in_foreign() {
            let kind = tree::html_kind(info, &html[start..end]);
            self.stack.before_html_start(html, info, kind);
            let text_mode = matches!(
                info.kind,
                Kind::Script | Kind::RawText(_) | Kind::Title | Kind::Plaintext
            ) || info.kind == Kind::Link(Tag::Iframe);
            let other_stack = matches!(info.kind, Kind::Svg | Kind::Math | Kind::Template);
            if !info.has(VOID) && !text_mode && !other_stack {
                self.stack.push(start, end - start, What::Html(kind));
            }
        }
    }

    fn html_start_tag(
        &mut self,
        html: &[u8],
        start: usize,
        end: usize,
        info: Info,
        page: &mut RawPage,
    ) -> Option<usize> {
        if info.kind == Kind::Frameset {
            return self.frameset_in_body(html, end, page);
        }
        self.html_element(html, start, end, info, page);
        let in_template = self.stack.in_template();
        match info.kind {
            Kind::Link(Tag::Frame) => tag::skip(html, end),
            Kind::Link(t) => {
                let next = self.link_element(html, end, t, !in_template, page)?.next;
                match t {
                    Tag::Iframe => raw_text_end(html, next, b"iframe"),
                    _ => Some(next),
                }
            }
            Kind::Script => script_end(html, tag::skip(html, end)?),
            Kind::RawText(name) => raw_text_end(html, tag::skip(html, end)?, name),
            Kind::Title => raw_text_end(html, tag::skip(html, end)?, b"title"),
            Kind::Plaintext => None,
            Kind::Svg | Kind::Math => {
                let tag_end = tag::attributes(html, end, |_, _| {})?;
                if !tag_end.self_closing {
                    let ns = if info.kind == Kind::Svg {
                        Ns::Svg
                    } else {
                        Ns::Math
                    };
                    self.stack
                        .push(start, end - start, What::Foreign(ns, Point::None));
                }
                Some(tag_end.next)
            }
            Kind::Template => {
                let next = tag::skip(html, end)?;
                self.stack.push(start, end - start, What::Template);
                Some(next)
            }
            Kind::Input if self.frameset_ok && !in_template => {
                let mut hidden = false;
                let tag_end = tag::attributes(html, end, |attr, value| {
                    if attr.eq_ignore_ascii_case(b"type") {
                        hidden = value.eq_ignore_ascii_case(b"hidden");
                    }
                })?;
                if !hidden {
                    self.frameset_ok = false;
                }
                Some(tag_end.next)
            }
            _ => tag::skip(html, end),
        }
    }

    /// `<frameset>` in HTML content outside a frameset.
    fn frameset_in_body(&mut self, html: &[u8], end: usize, page: &mut RawPage) -> Option<usize> {
        let next = tag::skip(html, end)?;
        if self.stack.in_template() {
            return Some(next); // In a template the flag is always "not ok".
        }
        match self.body {
            // From the head: the document is a frameset.
            None => {}
            // In a body that showed nothing yet: the frameset replaces the body.
            Some(mark) if self.frameset_ok => page.truncate(mark),
            Some(_) => return Some(next),
        }
        self.stack.clear();
        self.mode = Mode::Frameset;
        self.frameset_depth = 1;
        Some(next)
    }

    /// A start tag in a frameset or after it.
    fn frameset_start_tag(
        &mut self,
        html: &[u8],
        end: usize,
        info: Info,
        page: &mut RawPage,
    ) -> Option<usize> {
        match (self.mode, info.kind) {
            (Mode::Frameset, Kind::Frameset) => {
                self.frameset_depth += 1;
                tag::skip(html, end)
            }
            (Mode::Frameset, Kind::Link(Tag::Frame)) => self
                .link_element(html, end, Tag::Frame, true, page)
                .map(|e| e.next),
            (_, Kind::RawText(b"noframes")) => {
                raw_text_end(html, tag::skip(html, end)?, b"noframes")
            }
            _ => tag::skip(html, end),
        }
    }

    fn end_tag(&mut self, html: &[u8], start: usize, page: &RawPage) -> Option<usize> {
        match html.get(start) {
            Some(c) if c.is_ascii_alphabetic() => {}
            Some(b'>') => return Some(start + 1),
            Some(_) => return bogus_comment(html, start),
            None => return Some(start),
        }
        let end = name_end(html, start)?;
        let next = tag::skip(html, end)?;
        let name = &html[start..end];
        match self.mode {
            Mode::Frameset => {
                if name.eq_ignore_ascii_case(b"frameset") {
                    self.frameset_depth -= 1;
                    if self.frameset_depth == 0 {
                        self.mode = Mode::AfterFrameset;
                    }
                }
                return Some(next);
            }
            Mode::AfterFrameset => return Some(next),
            Mode::Normal => {}
        }
        if self.stack.top().is_some() {
            if self.top_is_foreign() {
                if name.eq_ignore_ascii_case(b"br") || name.eq_ignore_ascii_case(b"p") {
                    // `</br>` and `</p>` break out of foreign content too.
                    self.stack.break_out();
                } else if !self.stack.foreign_end_tag(html, name) {
                    return Some(next);
                }
            }
            match names::classify(name).kind {
                Kind::Template => self.stack.close_template(),
                Kind::P => self.stack.close_p(html),
                _ => self.stack.html_end_tag(html, name),
            }
            if self.stack.in_template() {
                return Some(next);
            }
        }
        // What an end tag does at the top level, where only these matter.
        match name.len() {
            2 if name.eq_ignore_ascii_case(b"br") => {
                // Read as `<br>`.
                self.start_body(page);
                self.frameset_ok = false;
            }
            4 if name.eq_ignore_ascii_case(b"head") => self.after_head = true,
            // From the head, these end it and start an (empty) body.
            4 if name.eq_ignore_ascii_case(b"body") || name.eq_ignore_ascii_case(b"html") => {
                self.start_body(page);
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
        } else if rest.starts_with(b"[CDATA[") && self.top_is_foreign() {
            // The Standard asks whether the adjusted current node is foreign; right
            // inside `<foreignObject>` it is.
            let body = start + 7;
            memmem::find(&html[body..], b"]]>").map(|i| body + i + 3)
        } else {
            // Doctype and bogus comment alike end at the first `>`.
            bogus_comment(html, start)
        }
    }

    /// Reads the attributes of a link element and, if `record`, reports it.
    fn link_element(
        &mut self,
        html: &[u8],
        pos: usize,
        t: Tag,
        record: bool,
        page: &mut RawPage,
    ) -> Option<tag::TagEnd> {
        if !record {
            return tag::attributes(html, pos, |_, _| {});
        }
        let wanted: &[usize] = match t {
            Tag::A | Tag::Area | Tag::Base => &[HREF],
            Tag::Frame | Tag::Iframe => &[SRC],
            Tag::Link => &[REL, HREF],
            Tag::Meta => &[NAME, CONTENT, HTTP_EQUIV],
        };
        let mut spans: [Option<(usize, usize)>; 6] = [None; 6];
        let mut seen = [false; 6];
        let values = &mut self.values;
        values.clear();
        let mut encoding = page.encoding();
        let end = tag::attributes(html, pos, |name, raw| {
            let Some(slot) = slot_of(name) else { return };
            // The first attribute of a name wins, wanted or not.
            if std::mem::replace(&mut seen[slot], true) || !wanted.contains(&slot) {
                return;
            }
            let start = values.len();
            if !raw.is_ascii() && page.encoding_undecided() {
                encoding = page.decide_encoding(html);
            }
            if encoding == UTF_8 || raw.is_ascii() {
                entities::decode_attr_value(raw, values);
            } else {
                let text = encoding.decode_without_bom_handling(raw).0;
                entities::decode_attr_value(text.as_bytes(), values);
            }
            spans[slot] = Some((start, values.len()));
        })?;
        let get = |slot: usize| spans[slot].map(|(s, e)| &self.values[s..e]);
        let attrs = Attrs {
            href: get(HREF),
            src: get(SRC),
            rel: get(REL),
            name: get(NAME),
            content: get(CONTENT),
            http_equiv: get(HTTP_EQUIV),
        };
        page.element(t, &attrs);
        Some(end)
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
