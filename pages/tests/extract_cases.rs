//! Every tricky case of link extraction as a snippet with its exact expected links
//! (the table is `support/snippets.rs`), and the HTML5 oracle's verdict on each.
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

#[allow(dead_code)] // each test binary uses part of the shared support
mod support;

use std::collections::BTreeSet;

use pages::extract::{Extractor, PageLinks};
use support::snippets::{CASES, Case, ORIGIN, PAGE};
use url::Url;

fn expand(want: &str) -> String {
    if want.starts_with('/') {
        format!("{ORIGIN}{want}")
    } else {
        want.to_owned()
    }
}

fn find(name: &str) -> &'static Case {
    CASES
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

fn extract(case: &Case) -> PageLinks {
    let mut out = PageLinks::new();
    Extractor::new().extract(case.html, &Url::parse(PAGE).unwrap(), None, &mut out);
    out
}

fn check(name: &str) {
    let case = find(name);
    let out = extract(case);
    let got: Vec<&str> = out.links.iter().map(|l| l.url.as_str()).collect();
    let want: Vec<String> = case.want.iter().map(|w| expand(w)).collect();
    assert_eq!(
        got,
        want,
        "case {name}: {}",
        String::from_utf8_lossy(case.html)
    );
    assert_eq!(out.nofollow, case.nofollow, "case {name}: nofollow");
}

macro_rules! cases {
    ($($name:ident)*) => {
        $(#[test] fn $name() { check(stringify!($name)); })*
        const TESTED: &[&str] = &[$(stringify!($name)),*];
    };
}

cases! {
    quoting case spaces_around_equals newline_after_name slash_between duplicate_first_wins
    valueless_attribute_wins valueless_other lt_and_gt_in_values lt_in_url eof_in_tag
    eof_in_name nul_bytes end_tag_attributes whitespace_href entities legacy_entities
    entity_unquoted area_iframe frameset link_rels meta_refresh base_first_wins base_relative
    base_after_links base_without_href base_unparsable dropped_schemes fragment_on_path_kept
    non_ascii_utf8 windows_1252_page protocol_relative nested_anchors xlink_in_html_ignored
    robots_nofollow robots_none_late robots_follow robots_in_comment comment unclosed_comment
    empty_comments comment_bang_end comment_dashes bogus_comments bogus_end_tag
    doctype_gt_in_quotes cdata_in_html cdata_in_svg lt_in_text script script_split_end
    script_end_needs_delimiter script_double_escaped script_escaped_end
    script_self_closing_is_not script_unclosed raw_text_elements iframe_content_is_text
    rawtext_end_with_attrs plaintext noscript_counts svg_links svg_style_is_markup
    svg_title_is_not_rcdata svg_self_closing svg_breakout svg_foreign_object math_text_point
    font_breakout cdata_in_foreign_object svg_base_ignored frame_outside_frameset
    anchor_after_frameset integration_point_left_open frameset_replaces_body
    frameset_after_text_ignored frameset_after_img_ignored frameset_ignores_other_tags
    frameset_keeps_head frameset_drops_body_base frameset_after_body_tag_ignored
    frameset_after_template anchor_in_head_then_frameset template_inert template_nested
    template_robots template_in_svg_is_svg template_closes_foreign template_in_head
    svg_anchor_nested math_anchor_is_not_a_link math_breakout math_style_is_markup
    foreign_link_elements svg_end_p_breaks_out svg_end_br_breaks_out annotation_xml_html
    annotation_xml_svg svg_in_math_is_math svg_script_is_markup foreign_object_div_left_open
    integration_point_closed cdata_in_html_inside_svg svg_title_nested_math mglyph_stays_math
    font_without_attrs_stays_svg noscript_in_head noscript_in_head_broken noscript_after_head
    anchor_in_head after_html duplicate_rel_and_src duplicate_meta_name refresh_invalid_time
    refresh_to_self url_scheme_case_and_backslashes anchor_in_select svg_title_with_markup
}

#[test]
fn every_case_has_a_test() {
    let tested: BTreeSet<&str> = TESTED.iter().copied().collect();
    let missing: Vec<&str> = CASES
        .iter()
        .map(|c| c.name)
        .filter(|n| !tested.contains(n))
        .collect();
    assert!(missing.is_empty(), "cases without a test: {missing:?}");
}

#[test]
fn dropped_links_are_counted() {
    let out = extract(find("dropped_schemes"));
    assert_eq!(out.dropped, 8);
}

#[test]
fn base_used_is_reported() {
    assert_eq!(
        extract(find("base_relative")).base.as_str(),
        "https://www.acme17.test/up/"
    );
    assert_eq!(extract(find("base_unparsable")).base.as_str(), PAGE);
    assert_eq!(extract(find("quoting")).base.as_str(), PAGE);
}

/// The oracle (html5ever's tree builder, what a browser's DOM holds) agrees with every
/// snippet's expected links, except the known divergences, which are listed in the
/// table with their reason and checked here to still diverge.
#[test]
fn adversarial_known_divergences() {
    let page = Url::parse(PAGE).unwrap();
    let mut wrong = Vec::new();
    for case in CASES {
        let oracle = support::oracle::links(case.html, &page, oracle_encoding(case));
        let got: BTreeSet<String> = oracle.links.iter().map(|l| l.url.to_string()).collect();
        let want: BTreeSet<String> = case.want.iter().map(|w| expand(w)).collect();
        let agrees = got == want && oracle.nofollow == case.nofollow;
        match (agrees, case.oracle_differs) {
            (true, None) | (false, Some(_)) => {}
            (false, None) => wrong.push(format!("{}: oracle has {got:?}", case.name)),
            (true, Some(_)) => wrong.push(format!("{}: oracle now agrees", case.name)),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

fn oracle_encoding(case: &Case) -> &'static encoding_rs::Encoding {
    // The oracle is told the encoding a page declares, as a browser would find it.
    pages::extract::page_encoding(case.html, None)
}

/// Extracts `html` as the crawler does and as html5ever's DOM has it, asserts
/// they agree (links in order, nofollow, base) and returns the links.
fn agrees_with_oracle(html: &[u8], content_type: Option<&str>) -> Vec<String> {
    let page = Url::parse(PAGE).unwrap();
    let mut out = PageLinks::new();
    Extractor::new().extract(html, &page, content_type, &mut out);
    let encoding = pages::extract::page_encoding(html, content_type);
    let oracle = support::oracle::links(html, &page, encoding);
    let got: Vec<String> = out.links.iter().map(|l| l.url.to_string()).collect();
    let want: Vec<String> = oracle.links.iter().map(|l| l.url.to_string()).collect();
    assert_eq!(
        got,
        want,
        "links of {:?}",
        String::from_utf8_lossy(&html[..html.len().min(200)])
    );
    assert_eq!(out.nofollow, oracle.nofollow);
    assert_eq!(out.base, oracle.base);
    got
}

fn utf16(text: &str, big_endian: bool, bom: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let units = bom.then_some(0xFEFF).into_iter().chain(text.encode_utf16());
    for unit in units {
        if big_endian {
            out.extend_from_slice(&unit.to_be_bytes());
        } else {
            out.extend_from_slice(&unit.to_le_bytes());
        }
    }
    out
}

#[test]
fn utf16_pages_with_a_byte_order_mark() {
    let text = "<html><head><meta charset=windows-1252><title>t</title></head>\
                <body><a href=\"/caf\u{e9}?q=\u{e9}\u{30C4}\">x</a><a href=/plain></a></body>";
    let want = [
        format!("{ORIGIN}/caf%C3%A9?q=%C3%A9%E3%83%84"),
        format!("{ORIGIN}/plain"),
    ];
    for big_endian in [false, true] {
        let page = utf16(text, big_endian, true);
        assert_eq!(
            agrees_with_oracle(&page, None),
            want,
            "big endian: {big_endian}"
        );
        // The BOM wins over the HTTP header.
        let with_header = agrees_with_oracle(&page, Some("text/html; charset=koi8-r"));
        assert_eq!(with_header, want);
    }
    // UTF-16 declared over HTTP, no BOM.
    let page = utf16(text, false, false);
    assert_eq!(
        agrees_with_oracle(&page, Some("text/html; charset=utf-16le")),
        want
    );
}

#[test]
fn pages_without_a_charset_declaration() {
    // Valid UTF-8: UTF-8.
    let utf8 = "<a href=\"/caf\u{e9}?q=\u{e9}\">".as_bytes();
    assert_eq!(
        agrees_with_oracle(utf8, None),
        [format!("{ORIGIN}/caf%C3%A9?q=%C3%A9")]
    );
    // Not valid UTF-8: windows-1252, for the path and the query.
    let latin = b"<p>\xe9t\xe9</p><a href=\"/caf\xe9?q=\xe9\">";
    assert_eq!(
        agrees_with_oracle(latin, None),
        [format!("{ORIGIN}/caf%C3%A9?q=%E9")]
    );
    // Only a character reference is non-ASCII in the links; the page's other
    // bytes still decide the encoding of the query.
    let entity = b"<p>\xe9</p><a href=\"/x?q=&eacute;\"><a href=\"/y?q=&#233;\">";
    assert_eq!(
        agrees_with_oracle(entity, None),
        [format!("{ORIGIN}/x?q=%E9"), format!("{ORIGIN}/y?q=%E9")]
    );
    let entity_utf8 = b"<p>plain</p><a href=\"/x?q=&eacute;\">";
    assert_eq!(
        agrees_with_oracle(entity_utf8, None),
        [format!("{ORIGIN}/x?q=%C3%A9")]
    );
}

#[test]
fn very_long_attribute_values() {
    let long = "x".repeat(1 << 20);
    let page = format!(
        "<a title=\"{long}\" href=/after-title><a href=\"/long?q={long}\"><img alt='{long}'><a href=/end>"
    );
    let got = agrees_with_oracle(page.as_bytes(), None);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], format!("{ORIGIN}/after-title"));
    assert_eq!(got[1].len(), ORIGIN.len() + "/long?q=".len() + long.len());
    // Unquoted, and a name as long as a value.
    let page = format!("<a {long}=1 href=/n><a href=/u{long}>");
    assert_eq!(agrees_with_oracle(page.as_bytes(), None).len(), 2);
}

#[test]
fn hostile_nesting_stays_bounded() {
    // Deep foreign nesting beyond the tracked depth still reads the same links
    // (`<b>` breaks out of all of it: an SVG `<a>` would not be a link).
    let page = format!(
        "{}<b><a href=/deep></a></b>{}<a href=/after>",
        "<svg><g>".repeat(2000),
        "</g></svg>".repeat(2000)
    );
    assert_eq!(agrees_with_oracle(page.as_bytes(), None).len(), 2);
}
