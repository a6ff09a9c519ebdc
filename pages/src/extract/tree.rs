//! The part of the stack of open elements that decides how markup is read: foreign
//! elements (SVG, MathML) with their integration points, `<template>`s (whose
//! contents are inert), and the HTML elements opened inside foreign content (an
//! HTML element left open inside `<desc>` keeps `</desc>` from closing it).
//!
//! HTML elements outside foreign content are not tracked: at that level no end
//! tag changes how the tokenizer reads what follows, nor whether an element is in
//! the document. So the stack stays empty on pages without inline SVG, MathML or
//! templates, and holds a few entries on those with them.
//!
//! Simplified from the Standard (13.2.6): HTML elements inside integration points
//! follow the "any other end tag" rule, `<p>` closing, `<li>`/`<dd>`/`<dt>`
//! auto-closing and heading nesting; the adoption agency algorithm is reduced to
//! "a new `<a>` closes an open `<a>`"; `<table>` closes a `<p>` even in quirks
//! mode.

use super::names::{Info, Kind, SPECIAL};

/// Entries beyond this depth are not tracked (bounds memory on hostile input).
pub(super) const MAX_DEPTH: usize = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ns {
    Svg,
    Math,
}

/// What kind of integration point a foreign element is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Point {
    /// Not one.
    None,
    /// An HTML integration point: SVG `foreignObject`, `desc`, `title`, and MathML
    /// `annotation-xml` with an HTML `encoding`.
    Html,
    /// A MathML text integration point: `mi`, `mo`, `mn`, `ms`, `mtext`.
    MathText,
    /// MathML `annotation-xml` that is not an HTML integration point (`<svg>`
    /// inside it is still SVG).
    AnnotationXml,
}

/// The HTML elements whose identity the tree rules need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Html {
    P,
    Li,
    DdDt,
    A,
    Heading,
    /// Special, and a boundary of the default (and button) scope.
    Scope,
    /// Special, not a scope boundary.
    Special,
    /// Neither.
    Plain,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum What {
    Html(Html),
    Template,
    Foreign(Ns, Point),
}

/// One open element; its name is `html[start..start + len]` of the page.
#[derive(Clone, Copy, Debug)]
pub(super) struct Open {
    pub start: usize,
    pub len: usize,
    pub what: What,
}

impl Open {
    fn name<'a>(&self, html: &'a [u8]) -> &'a [u8] {
        &html[self.start..self.start + self.len]
    }

    /// Special in the Standard's sense (so an end tag stops at it).
    fn is_special(&self) -> bool {
        match self.what {
            What::Html(h) => !matches!(h, Html::A | Html::Plain),
            What::Template => true,
            What::Foreign(_, point) => point != Point::None,
        }
    }

    /// A boundary of the button scope.
    fn bounds_button_scope(&self, html: &[u8]) -> bool {
        match self.what {
            What::Html(Html::Scope) => true,
            What::Html(_) => self.name(html).eq_ignore_ascii_case(b"button"),
            What::Template => true,
            What::Foreign(_, point) => point != Point::None,
        }
    }
}

/// The HTML kind to record for an element's `Info` and name.
pub(super) fn html_kind(info: Info, name: &[u8]) -> Html {
    match info.kind {
        Kind::P => Html::P,
        Kind::Li => Html::Li,
        Kind::DdDt => Html::DdDt,
        Kind::Link(super::page::Tag::A) => Html::A,
        _ if info.has(super::names::HEADING) => Html::Heading,
        _ if info.has(SPECIAL) => {
            const SCOPE: [&[u8]; 9] = [
                b"applet", b"caption", b"html", b"table", b"td", b"th", b"marquee", b"object",
                b"select",
            ];
            if SCOPE.iter().any(|s| name.eq_ignore_ascii_case(s)) {
                Html::Scope
            } else {
                Html::Special
            }
        }
        _ => Html::Plain,
    }
}

/// The tracked stack, with counts of what it holds.
#[derive(Debug, Default)]
pub(super) struct Stack {
    open: Vec<Open>,
    foreign: usize,
    templates: usize,
}

impl Stack {
    pub fn clear(&mut self) {
        self.open.clear();
        self.foreign = 0;
        self.templates = 0;
    }

    pub fn top(&self) -> Option<&Open> {
        self.open.last()
    }

    /// Some foreign element is open: HTML elements are tracked.
    pub fn in_foreign(&self) -> bool {
        self.foreign > 0
    }

    /// Inside a `<template>`: what is read is inert.
    pub fn in_template(&self) -> bool {
        self.templates > 0
    }

    pub fn push(&mut self, start: usize, len: usize, what: What) {
        if self.open.len() >= MAX_DEPTH {
            return;
        }
        match what {
            What::Foreign(..) => self.foreign += 1,
            What::Template => self.templates += 1,
            What::Html(_) => {}
        }
        self.open.push(Open { start, len, what });
    }

    /// Pops entry `i` and everything above it.
    pub fn truncate(&mut self, i: usize) {
        for open in &self.open[i..] {
            match open.what {
                What::Foreign(..) => self.foreign -= 1,
                What::Template => self.templates -= 1,
                What::Html(_) => {}
            }
        }
        self.open.truncate(i);
    }

    fn pop(&mut self) {
        if !self.open.is_empty() {
            self.truncate(self.open.len() - 1);
        }
    }

    /// Foreign-content breakout: pops foreign elements until the current node is
    /// an HTML element, an HTML or MathML text integration point, or none.
    pub fn break_out(&mut self) {
        while let Some(Open {
            what: What::Foreign(_, Point::None | Point::AnnotationXml),
            ..
        }) = self.open.last()
        {
            self.pop();
        }
    }

    /// `</template>`: pops up to and including the innermost template.
    pub fn close_template(&mut self) {
        if let Some(i) = self.open.iter().rposition(|o| o.what == What::Template) {
            self.truncate(i);
        }
    }

    /// Closes a `<p>` in button scope, if there is one.
    pub fn close_p(&mut self, html: &[u8]) {
        for i in (0..self.open.len()).rev() {
            let open = self.open[i];
            if open.what == What::Html(Html::P) {
                self.truncate(i);
                return;
            }
            if open.bounds_button_scope(html) {
                return;
            }
        }
    }

    /// An end tag under the HTML rules ("any other end tag", 13.2.6.4.7): pops to
    /// the nearest HTML element of that name unless a special element comes
    /// first. Beyond the tracked entries it concerns untracked HTML only.
    pub fn html_end_tag(&mut self, html: &[u8], name: &[u8]) {
        for i in (0..self.open.len()).rev() {
            let open = self.open[i];
            if matches!(open.what, What::Html(_)) && open.name(html).eq_ignore_ascii_case(name) {
                self.truncate(i);
                return;
            }
            if open.is_special() {
                return;
            }
        }
    }

    /// An end tag under the foreign-content rules: pops to the nearest element of
    /// that name (case-insensitive), unless an HTML element comes first after the
    /// current node; then the HTML rules apply, which this returns as `true`.
    pub fn foreign_end_tag(&mut self, html: &[u8], name: &[u8]) -> bool {
        for i in (0..self.open.len()).rev() {
            let open = self.open[i];
            let first = i + 1 == self.open.len();
            if !first && matches!(open.what, What::Html(_) | What::Template) {
                return true;
            }
            if open.name(html).eq_ignore_ascii_case(name) {
                self.truncate(i);
                return false;
            }
        }
        // Below the tracked entries is HTML (the `<body>` at least).
        true
    }

    /// Before an HTML start tag inside foreign content: the implied end tags
    /// that `<p>`-closing, `<li>`, `<dd>`/`<dt>`, headings and `<a>` cause.
    pub fn before_html_start(&mut self, html: &[u8], info: Info, kind: Html) {
        match kind {
            Html::Li | Html::DdDt => {
                for i in (0..self.open.len()).rev() {
                    let open = self.open[i];
                    if open.what == What::Html(kind) {
                        self.truncate(i);
                        break;
                    }
                    let exempt = matches!(open.what, What::Html(Html::P))
                        || [&b"address"[..], b"div"]
                            .iter()
                            .any(|n| open.name(html).eq_ignore_ascii_case(n));
                    if open.is_special() && !exempt {
                        break;
                    }
                }
            }
            Html::A => {
                // The nearest `<a>` not behind a marker (template, table cell,
                // integration point): the adoption agency would close it.
                let a = self.open.iter().rposition(|o| {
                    matches!(
                        o.what,
                        What::Html(Html::A | Html::Scope)
                            | What::Template
                            | What::Foreign(_, Point::Html | Point::MathText)
                    )
                });
                if let Some(i) = a.filter(|&i| self.open[i].what == What::Html(Html::A)) {
                    self.open.remove(i);
                }
            }
            _ => {}
        }
        if info.has(super::names::CLOSES_P) {
            self.close_p(html);
        }
        if kind == Html::Heading
            && self
                .open
                .last()
                .is_some_and(|o| o.what == What::Html(Html::Heading))
        {
            self.pop();
        }
    }
}
