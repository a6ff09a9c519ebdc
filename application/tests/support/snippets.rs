//! Hand-written tricky and adversarial snippets, each with the exact links expected.
//! The page URL is [`PAGE`]; an expected link starting with `/` is on its origin.

/// The URL every snippet is fetched from.
pub const PAGE: &str = "https://www.acme17.test/dir/page.html";
/// The origin that `/`-links in [`Case::want`] are on.
pub const ORIGIN: &str = "https://www.acme17.test";

/// One snippet.
pub struct Case {
    /// Test name.
    pub name: &'static str,
    /// The page.
    pub html: &'static [u8],
    /// The links, in document order, as resolved (fragments kept).
    pub want: &'static [&'static str],
    /// A robots nofollow is expected (then `want` is empty).
    pub nofollow: bool,
    /// Why a browser's DOM (the html5ever oracle) has other links, if it does.
    pub oracle_differs: Option<&'static str>,
}

const fn case(name: &'static str, html: &'static [u8], want: &'static [&'static str]) -> Case {
    Case {
        name,
        html,
        want,
        nofollow: false,
        oracle_differs: None,
    }
}

const fn differs(
    name: &'static str,
    html: &'static [u8],
    want: &'static [&'static str],
    why: &'static str,
) -> Case {
    Case {
        name,
        html,
        want,
        nofollow: false,
        oracle_differs: Some(why),
    }
}

/// Every snippet.
pub const CASES: &[Case] = &[
    // Attribute syntax.
    case("quoting", b"<a href=\"/d\">1</a><a href='/s'>2</a><a href=/u>3</a>", &["/d", "/s", "/u"]),
    case("case", b"<A HREF=\"/up\">x</A><a HrEf='/mixed'>y</a>", &["/up", "/mixed"]),
    case("spaces_around_equals", b"<A HREF = \"x\">", &["/dir/x"]),
    case("newline_after_name", b"<a\nhref=/nl><a\n  class=x\n  href=\"/spread\"\n>", &["/nl", "/spread"]),
    case("slash_between", b"<a/href=/slash><a class=\"c\"href=\"/tight\">", &["/slash", "/tight"]),
    case("duplicate_first_wins", b"<a href=\"/first\" HREF=\"/second\">", &["/first"]),
    case("valueless_attribute_wins", b"<a href href=\"/second\">", &["/dir/page.html"]),
    case("valueless_other", b"<a download href=/dl hidden>", &["/dl"]),
    case("lt_and_gt_in_values", b"<a title=\"a<b>c\" href=\"/lt\"><img alt='a > b'><a href=/after>", &["/lt", "/after"]),
    case("lt_in_url", b"<a href=\"/x?a<b\">", &["/x?a%3Cb"]),
    case("eof_in_tag", b"<a href=/yes><a href=\"/unterminated", &["/yes"]),
    case("eof_in_name", b"<a href=/yes><a", &["/yes"]),
    case("nul_bytes", b"<a href=\"/n\0ul\"><a\0 href=/not-a>", &["/n%EF%BF%BDul"]),
    case("end_tag_attributes", b"</div title=\">\"><a href=/yes>", &["/yes"]),
    case("whitespace_href", b"<a href=\"  /sp  \"><a href=\" \">", &["/sp", "/dir/page.html"]),
    // Character references.
    case("entities", b"<a href=\"/q?a=1&amp;b=2&#38;c=3&#x26;d=4\">", &["/q?a=1&b=2&c=3&d=4"]),
    case("legacy_entities", b"<a href=\"/q?a=1&copy=2&lang=3&amp\">", &["/q?a=1&copy=2&lang=3&"]),
    case("entity_unquoted", b"<a href=/q?a&amp;b&quot>", &["/q?a&b%22"]),
    // Elements.
    case("area_iframe", b"<map><area href=/area><area nohref></map><iframe src=/if></iframe>", &["/area", "/if"]),
    case(
        "frameset",
        b"<html><head><title>f</title></head><frameset><frame src=/f1><FRAME SRC='/f2'><noframes><a href=/nf></noframes></frameset>",
        &["/f1", "/f2"],
    ),
    case(
        "link_alternate_only",
        b"<link rel=stylesheet href=/css><link rel=\"Alternate\" href=/alt><link rel=\"alternate stylesheet\" href=/alt2><link rel=canonical href=/c><link href=/nr>",
        &["/alt", "/alt2"],
    ),
    case(
        "meta_refresh",
        b"<meta http-equiv=\"Refresh\" content=\"3; URL='/r'\"><meta http-equiv=refresh content=5><meta content=\"0;url=/r2\" http-equiv=REFRESH>",
        &["/r", "/r2"],
    ),
    case("base_first_wins", b"<base href=\"https://other.test/b/\"><base href=\"/ignored/\"><a href=\"x\">", &["https://other.test/b/x"]),
    case("base_relative", b"<base href=\"../up/\"><a href=x>", &["/up/x"]),
    case("base_after_links", b"<a href=x></a><base href=\"/b/\">", &["/b/x"]),
    case("base_without_href", b"<base target=_blank><base href=/b2/><a href=x>", &["/b2/x"]),
    case("base_unparsable", b"<base href=\"http://[bad/\"><a href=x>", &["/dir/x"]),
    case(
        "dropped_schemes",
        b"<a href=\"javascript:go()\"><a href=\"mailto:a@b.test\"><a href=\"data:text/html,x\"><a href=\"tel:+1\"><a href=\"#top\"><a href=\" #sp\"><a href=\"ftp://f.test/\"><a href=\"JavaScript:x\">",
        &[],
    ),
    case("fragment_on_path_kept", b"<a href=\"/p#x\"><a href=\"?q#y\">", &["/p#x", "/dir/page.html?q#y"]),
    case("non_ascii_utf8", "<a href=\"/café?q=crème\">".as_bytes(), &["/caf%C3%A9?q=cr%C3%A8me"]),
    case(
        "windows_1252_page",
        b"<meta charset=iso-8859-1><a href=\"/caf\xe9?q=cr\xe8me\">",
        &["/caf%C3%A9?q=cr%E8me"],
    ),
    case("protocol_relative", b"<a href=\"//cdn.acme17.test/x\">", &["https://cdn.acme17.test/x"]),
    case("nested_anchors", b"<a href=/one><a href=/two></a></a>", &["/one", "/two"]),
    case("xlink_in_html_ignored", b"<a xlink:href=/no>", &[]),
    Case {
        name: "robots_nofollow",
        html: b"<meta name=\"robots\" content=\"noindex,NOFOLLOW\"><a href=/x>",
        want: &[],
        nofollow: true,
        oracle_differs: None,
    },
    Case {
        name: "robots_none_late",
        html: b"<a href=/x><p>text</p><meta name=ROBOTS content=none>",
        want: &[],
        nofollow: true,
        oracle_differs: None,
    },
    case("robots_follow", b"<meta name=robots content=\"index, follow\"><a href=/x>", &["/x"]),
    case("robots_in_comment", b"<!-- <meta name=robots content=nofollow> --><a href=/x>", &["/x"]),
    // Comments and declarations.
    case("comment", b"<!-- <a href=/c> --><a href=/after>", &["/after"]),
    case("unclosed_comment", b"<a href=/before><!-- <a href=/never>", &["/before"]),
    case("empty_comments", b"<!--><a href=/a1><!---><a href=/a2><!----><a href=/a3>", &["/a1", "/a2", "/a3"]),
    case("comment_bang_end", b"<!-- x --!><a href=/bang><!-- y -- --><a href=/dash>", &["/bang", "/dash"]),
    case("comment_dashes", b"<!-- a --- b ---><a href=/after>", &["/after"]),
    case("bogus_comments", b"<!x <a href=/no1> ><?php echo '<a href=/no2>' ?><a href=/yes>", &["/yes"]),
    case("bogus_end_tag", b"</ <a href=/no> ><a href=/yes></><a href=/yes2>", &["/yes", "/yes2"]),
    case("doctype_gt_in_quotes", b"<!DOCTYPE html PUBLIC \"a>b\"><a href=/yes>", &["/yes"]),
    case("cdata_in_html", b"<![CDATA[ <a href=/in-cdata> ]]><![CDATA[ <b> ]]><a href=/yes>", &["/yes"]),
    case("cdata_in_svg", b"<svg><![CDATA[ <b> <a href=/no> ]]></svg><a href=/yes>", &["/yes"]),
    case("lt_in_text", b"a < b <a href=/yes> 3 <4 <", &["/yes"]),
    // Raw text, RCDATA, script data.
    case("script", b"<script>var a = \"<a href='/no'>\";</script><a href=/yes>", &["/yes"]),
    case("script_split_end", b"<script>document.write(\"</scr\" + \"ipt><a href='/no'>\")</script><a href=/yes>", &["/yes"]),
    case("script_end_needs_delimiter", b"<script>x=\"</scripts><a href=/no>\"</SCRIPT ><a href=/yes>", &["/yes"]),
    case("script_double_escaped", b"<script><!-- <script> </script> <a href=/no> --></script><a href=/yes>", &["/yes"]),
    case("script_escaped_end", b"<script><!-- <a href=/no> </script><a href=/yes>", &["/yes"]),
    case("script_self_closing_is_not", b"<script src=x.js /><a href=/no></script><a href=/yes>", &["/yes"]),
    case("script_unclosed", b"<a href=/yes><script><a href=/no>", &["/yes"]),
    case(
        "raw_text_elements",
        b"<style>a[href]{} <a href=/s></style><textarea><a href=/t></textarea><title><a href=/ti></title><xmp><a href=/x></xmp><noembed><a href=/ne></noembed><noframes><a href=/nf></noframes><a href=/yes>",
        &["/yes"],
    ),
    case("iframe_content_is_text", b"<iframe src=/if><a href=/no></iframe><a href=/yes>", &["/if", "/yes"]),
    case("rawtext_end_with_attrs", b"<style></style x=\">\"><a href=/yes>", &["/yes"]),
    case("plaintext", b"<a href=/yes><plaintext><a href=/no></plaintext><a href=/no2>", &["/yes"]),
    case("noscript_counts", b"<noscript><a href=/ns></noscript>", &["/ns"]),
    // Foreign content.
    case("svg_links", b"<svg><a href=/svg-a><text>x</text></a><a xlink:href=/xl></a></svg>", &["/svg-a", "/xl"]),
    case("svg_style_is_markup", b"<svg><style><a href=/in-svg-style></a></style></svg>", &["/in-svg-style"]),
    case("svg_title_is_not_rcdata", b"<svg><title>t</title><a href=/after-title></a></svg>", &["/after-title"]),
    case("svg_self_closing", b"<svg/><style><a href=/no></style><a href=/yes>", &["/yes"]),
    case("svg_breakout", b"<svg><p><style><a href=/no></style></p></svg><a href=/yes>", &["/yes"]),
    case(
        "svg_foreign_object",
        b"<svg><foreignObject><style><a href=/no></style><a href=/yes></a></foreignObject><style><a href=/svg></style></svg>",
        &["/yes", "/svg"],
    ),
    case("math_text_point", b"<math><mi><style><a href=/no></style></mi></math><a href=/yes>", &["/yes"]),
    case("font_breakout", b"<svg><font color=red><style><a href=/no></style></svg><svg><font><a href=/yes></svg>", &["/yes"]),
    case("cdata_in_foreign_object", b"<svg><foreignObject><![CDATA[ <b> <a href=/no> ]]></foreignObject></svg>", &[]),
    case("svg_base_ignored", b"<svg><base href=/svgbase/></svg><a href=x>", &["/dir/x"]),
    // Where the tree builder drops or moves what the tokenizer saw.
    differs(
        "frame_outside_frameset",
        b"<body><p>x<frame src=/f>",
        &["/f"],
        "the tree builder ignores <frame> in body; we keep the author's URL",
    ),
    differs(
        "anchor_after_frameset",
        b"<frameset><frame src=/f></frameset><a href=/after>",
        &["/f", "/after"],
        "after </frameset> the tree builder ignores start tags; we keep the author's URL",
    ),
    differs(
        "integration_point_left_open",
        b"<svg><desc><a href=/d></desc><style><a href=/s></style></svg>",
        &["/d", "/s"],
        "with an HTML <a> still open inside SVG <desc>, </desc> is ignored and <style> is raw \
         text; we close <desc> and read SVG <style> as markup",
    ),
    case("anchor_in_select", b"<select><option>1<a href=/sel>x</a></select>", &["/sel"]),
    case(
        "svg_title_with_markup",
        b"<svg><title><a href=/t></a></title><style><a href=/s></style></svg>",
        &["/t", "/s"],
    ),
];
