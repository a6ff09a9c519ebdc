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

/// Looks up a tag name as written (any case).
#[inline]
pub(super) fn classify(raw: &[u8]) -> Info {
    let mut buf = [0u8; 14];
    if raw.len() > buf.len() {
        return OTHER;
    }
    let name = &mut buf[..raw.len()];
    name.copy_from_slice(raw);
    name.make_ascii_lowercase();
    const S: u16 = SPECIAL;
    const B: u16 = BREAKOUT;
    const F: u16 = FRAMESET_OFF;
    const P: u16 = CLOSES_P;
    const V: u16 = VOID;
    const H: u16 = HEAD;
    match &*name {
        b"a" => info(Kind::Link(Tag::A), 0),
        b"area" => info(Kind::Link(Tag::Area), S | V | F),
        b"frame" => info(Kind::Link(Tag::Frame), S | V),
        b"iframe" => info(Kind::Link(Tag::Iframe), S | F),
        b"link" => info(Kind::Link(Tag::Link), S | V | H),
        b"meta" => info(Kind::Link(Tag::Meta), S | V | B | H),
        b"base" => info(Kind::Link(Tag::Base), S | V | H),
        b"script" => info(Kind::Script, S | H),
        b"style" => info(Kind::RawText(b"style"), S | H),
        b"title" => info(Kind::Title, S | H),
        b"textarea" => info(Kind::RawText(b"textarea"), S | F),
        b"xmp" => info(Kind::RawText(b"xmp"), S | F | P),
        b"noembed" => info(Kind::RawText(b"noembed"), S),
        b"noframes" => info(Kind::RawText(b"noframes"), S | H),
        b"plaintext" => info(Kind::Plaintext, S | P),
        b"svg" => info(Kind::Svg, 0),
        b"math" => info(Kind::Math, 0),
        b"template" => info(Kind::Template, S | F | H),
        b"frameset" => info(Kind::Frameset, S),
        b"noscript" => info(Kind::Noscript, S),
        b"body" => info(Kind::Body, S | B | F),
        b"html" => info(Kind::Other, S | H),
        b"head" => info(Kind::Other, S | B | H),
        b"basefont" | b"bgsound" => info(Kind::Other, S | V | H),
        b"font" => info(Kind::Font, 0),
        b"input" => info(Kind::Input, S | V),
        b"foreignobject" | b"desc" => info(Kind::SvgIntegration, 0),
        b"mi" | b"mo" | b"mn" | b"ms" | b"mtext" => info(Kind::MathText, 0),
        b"annotation-xml" => info(Kind::AnnotationXml, 0),
        b"mglyph" | b"malignmark" => info(Kind::MathGlyph, 0),
        b"p" => info(Kind::P, S | B | P),
        b"li" => info(Kind::Li, S | B | F | P),
        b"dd" | b"dt" => info(Kind::DdDt, S | B | F | P),
        b"h1" | b"h2" | b"h3" | b"h4" | b"h5" | b"h6" => info(Kind::Other, S | B | P | HEADING),
        b"blockquote" | b"center" | b"div" | b"dl" | b"menu" | b"ol" | b"ul" => {
            info(Kind::Other, S | B | P)
        }
        b"pre" | b"listing" => info(Kind::Other, S | B | F | P),
        b"table" => info(Kind::Other, S | B | F | P),
        b"hr" => info(Kind::Other, S | B | V | F | P),
        b"br" | b"embed" | b"img" => info(Kind::Other, S | B | V | F),
        b"b" | b"big" | b"code" | b"em" | b"i" | b"nobr" | b"ruby" | b"s" | b"small" | b"span"
        | b"strong" | b"strike" | b"sub" | b"sup" | b"tt" | b"u" | b"var" => info(Kind::Other, B),
        b"address" | b"article" | b"aside" | b"details" | b"dir" | b"fieldset" | b"figcaption"
        | b"figure" | b"footer" | b"header" | b"hgroup" | b"main" | b"nav" | b"search"
        | b"section" | b"summary" | b"form" => info(Kind::Other, S | P),
        b"dialog" => info(Kind::Other, P),
        b"keygen" | b"wbr" | b"image" => info(Kind::Other, S | V | F),
        b"col" | b"param" | b"source" | b"track" => info(Kind::Other, S | V),
        b"button" | b"applet" | b"marquee" | b"object" | b"select" => info(Kind::Other, S | F),
        b"caption" | b"colgroup" | b"tbody" | b"td" | b"tfoot" | b"th" | b"thead" | b"tr" => {
            info(Kind::Other, S)
        }
        _ => OTHER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
