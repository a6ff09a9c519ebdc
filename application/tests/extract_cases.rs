//! Every tricky case of link extraction as a snippet with its exact expected links
//! (the table is `support/snippets.rs`), and the HTML5 oracle's verdict on each.

#[allow(dead_code)] // each test binary uses part of the shared support
mod support;

use std::collections::BTreeSet;

use application::extract::{Extractor, PageLinks};
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
    valueless_attribute_wins valueless_other lt_and_gt_in_values lt_in_url eof_in_tag eof_in_name
    nul_bytes end_tag_attributes whitespace_href entities legacy_entities entity_unquoted
    area_iframe frameset link_alternate_only meta_refresh base_first_wins base_relative
    base_after_links base_without_href base_unparsable dropped_schemes fragment_on_path_kept
    non_ascii_utf8 windows_1252_page protocol_relative nested_anchors xlink_in_html_ignored
    robots_nofollow robots_none_late robots_follow robots_in_comment comment unclosed_comment
    empty_comments comment_bang_end comment_dashes bogus_comments bogus_end_tag
    doctype_gt_in_quotes cdata_in_html cdata_in_svg lt_in_text script script_split_end
    script_end_needs_delimiter script_double_escaped script_escaped_end
    script_self_closing_is_not script_unclosed raw_text_elements iframe_content_is_text
    rawtext_end_with_attrs plaintext noscript_counts svg_links svg_style_is_markup
    svg_title_is_not_rcdata svg_self_closing svg_breakout svg_foreign_object math_text_point
    svg_base_ignored frame_outside_frameset anchor_in_select svg_title_with_markup
    font_breakout cdata_in_foreign_object anchor_after_frameset integration_point_left_open
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
    application::extract::page_encoding(case.html, None)
}
