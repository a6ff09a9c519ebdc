//! What an element's name means to the scanner: one lookup per start tag gives its
//! role and the HTML Standard's categories that the tree-construction model needs
//! (section 13.2.6: void and special elements, the foreign-content breakout list,
//! the tags that clear the frameset-ok flag or close a `<p>`, and what stays in
//! `<head>`).

use super::page::Tag;

/// The element's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Carries a link or a page rule (`<iframe>` also opens raw text).
    Link(Tag),
    /// `<script>`: script data with its `<!--` escape rules.
    Script,
    /// Raw text or RCDATA in HTML content, up to `</name`.
    RawText(&'static [u8]),
    /// `<title>`: RCDATA in HTML, an integration point in SVG.
    Title,
    /// `<plaintext>`: the rest of the page is text.
    Plaintext,
    Svg,
    Math,
    Template,
    Frameset,
    /// `<noscript>`: ordinary markup (a crawler has scripting off), but it stays in
    /// `<head>` when it opens there.
    Noscript,
    Body,
    /// `<font>`: a breakout only with a `color`, `face` or `size` attribute.
    Font,
    /// `<input>`: clears frameset-ok unless `type=hidden`.
    Input,
    /// `<foreignObject>` and `<desc>`: HTML integration points in SVG.
    SvgIntegration,
    /// `<mi>`, `<mo>`, `<mn>`, `<ms>`, `<mtext>`: MathML text integration points.
    MathText,
    /// `<annotation-xml>`: an HTML integration point if its `encoding` says HTML.
    AnnotationXml,
    /// `<mglyph>`, `<malignmark>`: stay MathML inside a text integration point.
    MathGlyph,
    /// `<p>`.
    P,
    /// `<li>`.
    Li,
    /// `<dd>`, `<dt>`.
    DdDt,
    /// `<a>` is [`Kind::Link`]; other elements that matter only by their flags.
    Other,
}

/// Void: never has an end tag or children.
pub(super) const VOID: u16 = 1;
/// The Standard's "special" category (HTML elements).
pub(super) const SPECIAL: u16 = 1 << 1;
/// Ends foreign content (13.2.6.5).
pub(super) const BREAKOUT: u16 = 1 << 2;
/// Sets the frameset-ok flag to "not ok" in body.
pub(super) const FRAMESET_OFF: u16 = 1 << 3;
/// Closes a `<p>` element in button scope first.
pub(super) const CLOSES_P: u16 = 1 << 4;
/// Goes into `<head>` when no body has started.
pub(super) const HEAD: u16 = 1 << 5;
/// A heading, `h1` to `h6`.
pub(super) const HEADING: u16 = 1 << 6;

/// An element name's role and flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Info {
    pub kind: Kind,
    pub flags: u16,
}

impl Info {
    pub fn has(self, flag: u16) -> bool {
        self.flags & flag != 0
    }
}

const fn info(kind: Kind, flags: u16) -> Info {
    Info { kind, flags }
}

const OTHER: Info = info(Kind::Other, 0);

/// A name of up to 15 bytes as one integer: its bytes little-endian, its length
/// in the top byte (so `a` and `a\0` differ).
const fn key(name: &[u8]) -> u128 {
    let mut k = (name.len() as u128) << 120;
    let mut i = 0;
    while i < name.len() {
        k |= (name[i] as u128) << (8 * i);
        i += 1;
    }
    k
}

const S: u16 = SPECIAL;
const B: u16 = BREAKOUT;
const F: u16 = FRAMESET_OFF;
const P: u16 = CLOSES_P;
const V: u16 = VOID;
const H: u16 = HEAD;

/// Every name with a role or a flag. Names are lower case, at most 15 bytes.
const NAMES: &[(&[u8], Info)] = &[
    (b"a", info(Kind::Link(Tag::A), 0)),
    (b"area", info(Kind::Link(Tag::Area), S | V | F)),
    (b"frame", info(Kind::Link(Tag::Frame), S | V)),
    (b"iframe", info(Kind::Link(Tag::Iframe), S | F)),
    (b"link", info(Kind::Link(Tag::Link), S | V | H)),
    (b"meta", info(Kind::Link(Tag::Meta), S | V | B | H)),
    (b"base", info(Kind::Link(Tag::Base), S | V | H)),
    (b"script", info(Kind::Script, S | H)),
    (b"style", info(Kind::RawText(b"style"), S | H)),
    (b"title", info(Kind::Title, S | H)),
    (b"textarea", info(Kind::RawText(b"textarea"), S | F)),
    (b"xmp", info(Kind::RawText(b"xmp"), S | F | P)),
    (b"noembed", info(Kind::RawText(b"noembed"), S)),
    (b"noframes", info(Kind::RawText(b"noframes"), S | H)),
    (b"plaintext", info(Kind::Plaintext, S | P)),
    (b"svg", info(Kind::Svg, 0)),
    (b"math", info(Kind::Math, 0)),
    (b"template", info(Kind::Template, S | F | H)),
    (b"frameset", info(Kind::Frameset, S)),
    (b"noscript", info(Kind::Noscript, S)),
    (b"body", info(Kind::Body, S | B | F)),
    (b"html", info(Kind::Other, S | H)),
    (b"head", info(Kind::Other, S | B | H)),
    (b"basefont", info(Kind::Other, S | V | H)),
    (b"bgsound", info(Kind::Other, S | V | H)),
    (b"font", info(Kind::Font, 0)),
    (b"input", info(Kind::Input, S | V)),
    (b"foreignobject", info(Kind::SvgIntegration, 0)),
    (b"desc", info(Kind::SvgIntegration, 0)),
    (b"mi", info(Kind::MathText, 0)),
    (b"mo", info(Kind::MathText, 0)),
    (b"mn", info(Kind::MathText, 0)),
    (b"ms", info(Kind::MathText, 0)),
    (b"mtext", info(Kind::MathText, 0)),
    (b"annotation-xml", info(Kind::AnnotationXml, 0)),
    (b"mglyph", info(Kind::MathGlyph, 0)),
    (b"malignmark", info(Kind::MathGlyph, 0)),
    (b"p", info(Kind::P, S | B | P)),
    (b"li", info(Kind::Li, S | B | F | P)),
    (b"dd", info(Kind::DdDt, S | B | F | P)),
    (b"dt", info(Kind::DdDt, S | B | F | P)),
    (b"h1", info(Kind::Other, S | B | P | HEADING)),
    (b"h2", info(Kind::Other, S | B | P | HEADING)),
    (b"h3", info(Kind::Other, S | B | P | HEADING)),
    (b"h4", info(Kind::Other, S | B | P | HEADING)),
    (b"h5", info(Kind::Other, S | B | P | HEADING)),
    (b"h6", info(Kind::Other, S | B | P | HEADING)),
    (b"blockquote", info(Kind::Other, S | B | P)),
    (b"center", info(Kind::Other, S | B | P)),
    (b"div", info(Kind::Other, S | B | P)),
    (b"dl", info(Kind::Other, S | B | P)),
    (b"menu", info(Kind::Other, S | B | P)),
    (b"ol", info(Kind::Other, S | B | P)),
    (b"ul", info(Kind::Other, S | B | P)),
    (b"pre", info(Kind::Other, S | B | F | P)),
    (b"listing", info(Kind::Other, S | B | F | P)),
    (b"table", info(Kind::Other, S | B | F | P)),
    (b"hr", info(Kind::Other, S | B | V | F | P)),
    (b"br", info(Kind::Other, S | B | V | F)),
    (b"embed", info(Kind::Other, S | B | V | F)),
    (b"img", info(Kind::Other, S | B | V | F)),
    (b"b", info(Kind::Other, B)),
    (b"big", info(Kind::Other, B)),
    (b"code", info(Kind::Other, B)),
    (b"em", info(Kind::Other, B)),
    (b"i", info(Kind::Other, B)),
    (b"nobr", info(Kind::Other, B)),
    (b"ruby", info(Kind::Other, B)),
    (b"s", info(Kind::Other, B)),
    (b"small", info(Kind::Other, B)),
    (b"span", info(Kind::Other, B)),
    (b"strong", info(Kind::Other, B)),
    (b"strike", info(Kind::Other, B)),
    (b"sub", info(Kind::Other, B)),
    (b"sup", info(Kind::Other, B)),
    (b"tt", info(Kind::Other, B)),
    (b"u", info(Kind::Other, B)),
    (b"var", info(Kind::Other, B)),
    (b"address", info(Kind::Other, S | P)),
    (b"article", info(Kind::Other, S | P)),
    (b"aside", info(Kind::Other, S | P)),
    (b"details", info(Kind::Other, S | P)),
    (b"dir", info(Kind::Other, S | P)),
    (b"fieldset", info(Kind::Other, S | P)),
    (b"figcaption", info(Kind::Other, S | P)),
    (b"figure", info(Kind::Other, S | P)),
    (b"footer", info(Kind::Other, S | P)),
    (b"header", info(Kind::Other, S | P)),
    (b"hgroup", info(Kind::Other, S | P)),
    (b"main", info(Kind::Other, S | P)),
    (b"nav", info(Kind::Other, S | P)),
    (b"search", info(Kind::Other, S | P)),
    (b"section", info(Kind::Other, S | P)),
    (b"summary", info(Kind::Other, S | P)),
    (b"form", info(Kind::Other, S | P)),
    (b"dialog", info(Kind::Other, P)),
    (b"keygen", info(Kind::Other, S | V | F)),
    (b"wbr", info(Kind::Other, S | V | F)),
    (b"image", info(Kind::Other, S | V | F)),
    (b"col", info(Kind::Other, S | V)),
    (b"param", info(Kind::Other, S | V)),
    (b"source", info(Kind::Other, S | V)),
    (b"track", info(Kind::Other, S | V)),
    (b"button", info(Kind::Other, S | F)),
    (b"applet", info(Kind::Other, S | F)),
    (b"marquee", info(Kind::Other, S | F)),
    (b"object", info(Kind::Other, S | F)),
    (b"select", info(Kind::Other, S | F)),
    (b"caption", info(Kind::Other, S)),
    (b"colgroup", info(Kind::Other, S)),
    (b"tbody", info(Kind::Other, S)),
    (b"td", info(Kind::Other, S)),
    (b"tfoot", info(Kind::Other, S)),
    (b"th", info(Kind::Other, S)),
    (b"thead", info(Kind::Other, S)),
    (b"tr", info(Kind::Other, S)),
];

/// Slots in the open-addressing table: a power of two, about four per name, so a
/// lookup nearly always ends at its first slot.
const SLOTS: usize = 512;

const fn slot(k: u128) -> usize {
    let x = (k as u64) ^ ((k >> 64) as u64).rotate_left(29);
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 9)) as usize
}

/// For each slot, 1 + the index in [`NAMES`] of the name hashed there, or 0.
/// Built at compile time with linear probing.
static SLOT_TABLE: [u8; SLOTS] = {
    assert!(NAMES.len() < 255 && SLOTS == 1 << 9);
    let mut table = [0u8; SLOTS];
    let mut i = 0;
    while i < NAMES.len() {
        let mut at = slot(key(NAMES[i].0));
        while table[at] != 0 {
            at = (at + 1) % SLOTS;
        }
        table[at] = (i + 1) as u8;
        i += 1;
    }
    table
};

/// The [`key`] of each of [`NAMES`].
static KEYS: [u128; NAMES.len()] = {
    let mut keys = [0u128; NAMES.len()];
    let mut i = 0;
    while i < NAMES.len() {
        keys[i] = key(NAMES[i].0);
        i += 1;
    }
    keys
};

/// Looks up a tag name as written (any case): one hash, usually one probe.
#[inline]
pub(super) fn classify(raw: &[u8]) -> Info {
    if raw.len() > 15 {
        return OTHER;
    }
    let mut k = (raw.len() as u128) << 120;
    for (i, &c) in raw.iter().enumerate() {
        k |= u128::from(c.to_ascii_lowercase()) << (8 * i);
    }
    let mut at = slot(k);
    loop {
        match SLOT_TABLE[at] {
            0 => return OTHER,
            i if KEYS[usize::from(i) - 1] == k => return NAMES[usize::from(i) - 1].1,
            _ => at = (at + 1) % SLOTS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_found_once() {
        for (name, info) in NAMES {
            assert!(name.len() <= 15 && name.iter().all(|c| !c.is_ascii_uppercase()));
            assert_eq!(classify(name), *info, "{}", String::from_utf8_lossy(name));
        }
        let mut keys = KEYS.to_vec();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), NAMES.len(), "no duplicate names");
        assert_eq!(classify(b"x-unknown"), OTHER);
        assert_eq!(classify(b""), OTHER);
        assert_eq!(classify(b"a\0"), OTHER);
    }

    #[test]
    fn lookups_ignore_case_and_long_names() {
        assert_eq!(classify(b"A").kind, Kind::Link(Tag::A));
        assert_eq!(classify(b"foreignObject").kind, Kind::SvgIntegration);
        assert_eq!(classify(b"ANNOTATION-XML").kind, Kind::AnnotationXml);
        assert_eq!(classify(b"annotation-xml-x"), OTHER);
        assert!(classify(b"Meta").has(BREAKOUT));
        assert!(!classify(b"link").has(BREAKOUT));
        assert!(classify(b"img").has(VOID) && classify(b"img").has(FRAMESET_OFF));
        assert!(classify(b"h3").has(HEADING));
    }
}
