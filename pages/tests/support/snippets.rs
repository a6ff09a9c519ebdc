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
        "link_rels",
        b"<link rel=stylesheet href=/css><link rel=\"Alternate\" href=/alt><link rel=\"alternate stylesheet\" href=/alt2><link rel=canonical href=/c><link href=/nr>\
          <link rel=next href=/n><link rel=PREV href=/p><link rel=\"up index\" href=/u><link rel=contents href=/toc><link rel=search href=/s><link rel=help href=/h>\
          <link rel=copyright href=/cr><link rel=\"shortcut icon\" href=/ico><link rel=preload href=/pre><link rel=manifest href=/m><link rel=\"schema.dc\" href=/dc>",
        &["/alt", "/c", "/n", "/p", "/u", "/toc", "/s", "/h", "/cr"],
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
    // An SVG `<a>` is not in the HTML namespace: not a link (as html5ever's tree
    // reads it, issue 30). Probes inside SVG use a breakout tag (`<b>`) instead.
    case("svg_links", b"<svg><a href=/svg-a><text>x</text></a><a xlink:href=/xl></a></svg>", &[]),
    case("svg_style_is_markup", b"<svg><style><b><a href=/in-svg-style></a></b></style></svg>", &["/in-svg-style"]),
    case("svg_title_is_not_rcdata", b"<svg><title>t<b><a href=/in-title></a></b></title></svg>", &["/in-title"]),
    case("svg_self_closing", b"<svg/><style><a href=/no></style><a href=/yes>", &["/yes"]),
    case("svg_breakout", b"<svg><p><style><a href=/no></style></p></svg><a href=/yes>", &["/yes"]),
    case(
        "svg_foreign_object",
        b"<svg><foreignObject><style><a href=/no></style><a href=/yes></a></foreignObject><style><b><a href=/svg></a></b></style></svg>",
        &["/yes", "/svg"],
    ),
    case("math_text_point", b"<math><mi><style><a href=/no></style></mi></math><a href=/yes>", &["/yes"]),
    case("font_breakout", b"<svg><font color=red><style><a href=/no></style></svg><svg><font><style><b><a href=/yes></a></b></style></svg>", &["/yes"]),
    case("cdata_in_foreign_object", b"<svg><foreignObject><![CDATA[ <b> <a href=/no> ]]></foreignObject></svg>", &[]),
    case("svg_base_ignored", b"<svg><base href=/svgbase/></svg><a href=x>", &["/dir/x"]),
    // Where the tree builder drops or moves what the tokenizer saw.
    case("frame_outside_frameset", b"<body><p>x<frame src=/f><a href=/yes>", &["/yes"]),
    case("anchor_after_frameset", b"<frameset><frame src=/f></frameset><a href=/after><frame src=/f2>", &["/f"]),
    case("integration_point_left_open", b"<svg><desc><a href=/d></desc><style><a href=/s></style></svg>", &["/d"]),
    case("frameset_replaces_body", b"<a href=/gone></a><link rel=next href=/gone2><frameset><frame src=/f></frameset>", &["/f"]),
    case("frameset_after_text_ignored", b"<p>hello<frameset><frame src=/f></frameset><a href=/kept>", &["/kept"]),
    case("frameset_after_img_ignored", b"<img src=x.png><frameset><frame src=/f></frameset><a href=/kept>", &["/kept"]),
    case(
        "frameset_ignores_other_tags",
        b"<frameset><a href=/no><script><a href=/no2></script><meta name=robots content=nofollow><frameset><frame src=/f></frameset>\
          <noframes><a href=/nf></noframes><iframe src=/no3><frame src=/f2></frameset><noframes><a href=/nf2></noframes><a href=/after>",
        &["/f", "/f2"],
    ),
    case("frameset_keeps_head", b"<head><link rel=next href=/n><base href=/b/></head><frameset><frame src=f>", &["/n", "/b/f"]),
    case("frameset_drops_body_base", b"<div><base href=/b/></div><frameset><frame src=f>", &["/dir/f"]),
    case("frameset_after_body_tag_ignored", b"<body><frameset><frame src=/f></frameset><a href=/kept>", &["/kept"]),
    case("frameset_after_template", b"<head><template></template></head><frameset><frame src=/f>", &["/f"]),
    case("anchor_in_head_then_frameset", b"<html><head><a href=/gone></head><frameset><frame src=/f>", &["/f"]),
    // Template contents are inert.
    case("template_inert", b"<template><a href=/t></a><base href=/tb/><link rel=next href=/tl></template><a href=x>", &["/dir/x"]),
    case("template_nested", b"<template><template></template><a href=/t2></template><a href=/yes>", &["/yes"]),
    case("template_robots", b"<template><meta name=robots content=nofollow></template><a href=/yes>", &["/yes"]),
    case("template_in_svg_is_svg", b"<svg><template><b><a href=/svg-template-a></a></b></template></svg>", &["/svg-template-a"]),
    case("template_closes_foreign", b"<template><svg><style></template><style><a href=/no></style><a href=/yes>", &["/yes"]),
    case("template_in_head", b"<head><template><meta http-equiv=refresh content=\"0; url=/no\"></template></head><a href=/yes>", &["/yes"]),
    // Foreign content: what is SVG or MathML, and where HTML breaks out.
    case("svg_anchor_nested", b"<svg><g><a href=/g1><text>t</text></a></g><a xlink:href=/x2 href=/h2></a><A XLINK:HREF=/x3></A></svg>", &[]),
    case("math_anchor_is_not_a_link", b"<math><mi><a href=/html-a>x</a></mi><a href=/math-a></a></math>", &["/html-a"]),
    case("math_breakout", b"<math><mrow><div><a href=/d></a></div></mrow></math><style><a href=/no></style>", &["/d"]),
    case("math_style_is_markup", b"<math><style><a href=/math-a></a></style></math><a href=/yes>", &["/yes"]),
    case("foreign_link_elements", b"<svg><link rel=next href=/no2><area href=/no3><frame src=/no4><base href=/b/><iframe src=/no><b><a href=/in-iframe></a></b></iframe></svg><a href=x>", &["/in-iframe", "/dir/x"]),
    case("svg_end_p_breaks_out", b"<svg></p><style><a href=/no></style></svg><a href=/yes>", &["/yes"]),
    case("svg_end_br_breaks_out", b"<svg><g></br><style><a href=/no></style><a href=/yes>", &["/yes"]),
    differs(
        "annotation_xml_html",
        b"<math><annotation-xml encoding=\"Text/HTML\"><style><a href=/no></style><a href=/yes></a></annotation-xml></math>",
        &["/yes"],
        "the Standard makes annotation-xml with an HTML encoding an HTML integration point; \
         html5ever asks its tree sink, and scraper's answers no (the trait's default)",
    ),
    case("annotation_xml_svg", b"<math><annotation-xml><svg><foreignObject><a href=/svg-in-math></a></foreignObject></svg></annotation-xml><a href=/math-a></a></math>", &["/svg-in-math"]),
    case("svg_in_math_is_math", b"<math><svg><a href=/no></a></svg></math><a href=/yes>", &["/yes"]),
    case("svg_script_is_markup", b"<svg><script><b><a href=/in-svg-script></a></b></script></svg>", &["/in-svg-script"]),
    case("foreign_object_div_left_open", b"<svg><foreignObject><div></foreignObject><style><a href=/no></style><a href=/yes></svg>", &["/yes"]),
    case("integration_point_closed", b"<svg><desc><b>x</b></desc><style><b><a href=/svg-style></a></b></style></svg>", &["/svg-style"]),
    case("cdata_in_html_inside_svg", b"<svg><foreignObject><div><![CDATA[<a href=/no>]]></div></foreignObject></svg><a href=/yes>", &["/yes"]),
    case("svg_title_nested_math", b"<svg><title><math><title></title><style><a href=/math-style-a></a></style></math></title><style><b><a href=/svg-a></a></b></style></svg>", &["/svg-a"]),
    case("mglyph_stays_math", b"<math><mi><mglyph><a href=/no></a></mglyph><b><a href=/yes></a></b></mi></math>", &["/yes"]),
    case("font_without_attrs_stays_svg", b"<svg><font face=x></font><style><a href=/no></style><svg><font><style><b><a href=/svg-a></a></b></style></font></svg>", &["/svg-a"]),
    // Head and after-body: elements still land in the body.
    case(
        "noscript_in_head",
        b"<html><head><noscript><link rel=next href=/n><meta http-equiv=refresh content=\"0; url=/nojs\"><style><a href=/no></style></noscript><a href=/a></head><body>",
        &["/n", "/nojs", "/a"],
    ),
    case("noscript_in_head_broken", b"<head><noscript><a href=/a><style><a href=/no></style></noscript><a href=/b>", &["/a", "/b"]),
    case("noscript_after_head", b"<head></head><noscript><a href=/a></noscript><frameset><frame src=/f>", &["/f"]),
    case("anchor_in_head", b"<html><head><a href=/in-head></a><title>t<a href=/no></title></head><body><a href=/b>", &["/in-head", "/b"]),
    case("after_html", b"<html><body></body></html><a href=/after-html><link rel=next href=/n2><!-- <a href=/no> -->", &["/after-html", "/n2"]),
    // Attributes.
    case("duplicate_rel_and_src", b"<link rel=stylesheet rel=next href=/css><link rel=next REL=stylesheet href=/n><iframe src=/i1 SRC=/i2></iframe>", &["/n", "/i1"]),
    case("duplicate_meta_name", b"<meta name=x name=robots content=nofollow><meta http-equiv=refresh http-equiv=x content=\"0;url=/r\"><a href=/yes>", &["/r", "/yes"]),
    // Refresh.
    case(
        "refresh_invalid_time",
        b"<meta http-equiv=refresh content=\"abc; url=/no\"><meta http-equiv=refresh content=\"-1; url=/no2\"><meta http-equiv=refresh content=\"1x; url=/no3\">\
          <meta http-equiv=refresh content=\"  2.5 ; URL = '/yes' \"><meta http-equiv=refresh content=\".; url=/dot\">",
        &["/yes", "/dot"],
    ),
    case(
        "refresh_to_self",
        b"<meta http-equiv=refresh content=\"0; url=page.html\"><meta http-equiv=refresh content=\"0; url=#top\"><meta http-equiv=refresh content=\"0; url=\">\
          <meta http-equiv=refresh content=\"1; url=page.html#x\"><meta http-equiv=refresh content=\"5; url=other.html\">",
        &["/dir/other.html"],
    ),
    // The WHATWG URL parser: scheme case, backslashes.
    case(
        "url_scheme_case_and_backslashes",
        b"<a href=\"HtTp://Acme17.TEST/a\"><a href=\"HTTPS:\\\\cdn.acme17.test\\x\\y\"><a href=\"http:\\\\other.test\"><a href=\"\\\\proto.test\\rel\"><a href=\"https:same\"><a href=\"/b\\c\"><a href=\"hTtPs://x.test:443/\">",
        &["http://acme17.test/a", "https://cdn.acme17.test/x/y", "http://other.test/", "https://proto.test/rel", "/dir/same", "/b/c", "https://x.test/"],
    ),
    case("anchor_in_select", b"<select><option>1<a href=/sel>x</a></select>", &["/sel"]),
    case(
        "svg_title_with_markup",
        b"<svg><title><a href=/t></a></title><style><b><a href=/s></a></b></style></svg>",
        &["/t", "/s"],
    ),
];
