//! RFC 9309 (Robots Exclusion Protocol) conformance of `manager::robots`, rule by
//! rule. Each test names the section it checks; quoted text is from the RFC.
//! The last tests are the RFC's own examples (section 5) and a conformance table.

use std::time::{Duration, Instant};

use manager::robots::{MAX_ROBOTS_BYTES, Robots, check_urls, path_and_query};

const AGENT: &str = "polycrawl";

fn allowed(body: &str, agent: &str, path: &str) -> bool {
    Robots::parse(body.as_bytes(), agent).is_allowed(path)
}

// --- Section 2.1 / 2.2: protocol definition and formal syntax -------------------

#[test]
fn s2_2_field_names_are_case_insensitive() {
    let body = "USER-AGENT: *\nDISALLOW: /a\nuSeR-aGeNt: polycrawl\nDisAllow: /b\nALLOW: /b/ok\n";
    assert!(allowed(body, AGENT, "/a"));
    assert!(!allowed(body, AGENT, "/b"));
    assert!(allowed(body, AGENT, "/b/ok"));
    assert!(!allowed(body, "other", "/a"));
}

#[test]
fn s2_2_whitespace_around_keys_and_values_is_trimmed() {
    let body = "  User-agent  :   polycrawl  \n\t Disallow \t:\t /private \t\n";
    assert!(!allowed(body, AGENT, "/private/x"));
    assert!(allowed(body, AGENT, "/public"));
    // No whitespace at all is fine too (section 5.1 writes `Disallow:/`).
    assert!(!allowed("user-agent:polycrawl\ndisallow:/x\n", AGENT, "/x"));
}

#[test]
fn s2_2_3_hash_starts_a_comment() {
    // Section 2.2.3: "#" "Designates a line comment."
    let body = "# a comment line\nUser-agent: polycrawl # trailing comment\n\
                Disallow: /a # not part of the path\n#Disallow: /b\nDisallow: /c#d\n";
    // Were the comment part of the value, the rule would not match `/a` itself.
    assert!(!allowed(body, AGENT, "/a"));
    assert!(!allowed(body, AGENT, "/a/x"));
    assert!(allowed(body, AGENT, "/b"));
    assert!(!allowed(body, AGENT, "/c"));
    assert!(!allowed(body, AGENT, "/cx"));
}

#[test]
fn s2_2_lines_end_in_lf_crlf_or_cr() {
    // Section 2.2: NL = %x0D / %x0A / %x0D.0A
    for eol in ["\n", "\r\n", "\r"] {
        let body = [
            "User-agent: *",
            "Disallow: /a",
            "User-agent: polycrawl",
            "Disallow: /b",
            "",
        ]
        .join(eol);
        assert!(allowed(&body, AGENT, "/a"), "{eol:?}");
        assert!(!allowed(&body, AGENT, "/b"), "{eol:?}");
        assert!(!allowed(&body, "other", "/a"), "{eol:?}");
    }
    // Mixed endings in one file.
    let mixed = "User-agent: polycrawl\rDisallow: /a\r\nDisallow: /b\nDisallow: /c";
    for path in ["/a", "/b", "/c"] {
        assert!(!allowed(mixed, AGENT, path), "{path}");
    }
}

#[test]
fn s2_3_utf8_byte_order_mark_is_skipped() {
    // Section 2.3 requires UTF-8; a leading BOM must not hide the first line.
    let body = b"\xEF\xBB\xBFUser-agent: polycrawl\nDisallow: /\n";
    assert!(!Robots::parse(body, AGENT).is_allowed("/x"));
    // A BOM anywhere else is not skipped: it is part of that line's field name.
    let body = b"User-agent: polycrawl\n\xEF\xBB\xBFDisallow: /\n";
    assert!(Robots::parse(body, AGENT).is_allowed("/x"));
}

#[test]
fn s2_3_1_5_unparseable_lines_and_unknown_fields_are_ignored() {
    // "Crawlers MUST try to parse each line ... MUST use the parseable rules."
    let body = "User-agent: polycrawl\nDisallow: /b\nFoo: bar\nnonsense\n: empty key\n\
                Noindex: /c\nDisallow /x /y\nDisallow: /d\n";
    assert!(!allowed(body, AGENT, "/b"));
    assert!(allowed(body, AGENT, "/c"));
    assert!(allowed(body, AGENT, "/x"));
    assert!(allowed(body, AGENT, "/y"));
    assert!(!allowed(body, AGENT, "/d"));
}

#[test]
fn s2_3_1_5_a_missing_colon_is_read_as_google_reads_it() {
    // The RFC is silent; Google's parser takes whitespace for the colon when the
    // line is exactly two words, and so do we ("MUST use the parseable rules").
    let body = "User-agent polycrawl\nDisallow /a\nAllow\t/a/ok\n";
    assert!(!allowed(body, AGENT, "/a"));
    assert!(allowed(body, AGENT, "/a/ok"));
    assert!(allowed(body, AGENT, "/b"));
    // Three words is no line at all: `user agent polycrawl` names no one.
    let body = "user agent polycrawl\nDisallow /a\n";
    assert!(allowed(body, AGENT, "/a"));
}

#[test]
fn long_lines_are_cut_where_google_cuts_them() {
    // The RFC bounds the file (section 2.5), not a line. A line keeps its first
    // 16,663 bytes (8 x 2,083 less one, Google's buffer); the cut rule is a
    // shorter prefix rule and the rest of the line is ignored.
    let keep = 8 * 2083 - 1;
    let long = format!("/x/{}", "a".repeat(20_000));
    let body = format!("User-agent: polycrawl\nDisallow: {long}\nDisallow: /after\n");
    let cut = &long[..keep - "Disallow: ".len()];
    let robots = Robots::parse(body.as_bytes(), AGENT);
    assert!(!robots.is_allowed(&format!("{cut}/anything")));
    assert!(robots.is_allowed(&long[..cut.len() - 1]));
    assert!(
        !robots.is_allowed("/after"),
        "the next line is read as usual"
    );
    // A comment past the cut does not matter; one before it still does.
    let body = format!(
        "User-agent: polycrawl\nDisallow: /c # {}\n",
        "z".repeat(20_000)
    );
    assert!(!allowed(&body, AGENT, "/c"));
}

#[test]
fn allow_index_html_allows_its_directory() {
    // Google's parser reads `Allow: /d/index.html` as also allowing `/d/` itself
    // (the RFC is silent); only that exact directory URL, not what is below it.
    let body = "User-agent: *\nAllow: /d/index.html\nDisallow: /\n";
    assert!(allowed(body, AGENT, "/d/"));
    assert!(allowed(body, AGENT, "/d/index.html"));
    assert!(!allowed(body, AGENT, "/d/index.htm"));
    assert!(!allowed(body, AGENT, "/d/other"));
    assert!(!allowed(body, AGENT, "/d/?q=1"));
    assert!(allowed(
        "User-agent: *\nAllow: /index.htm\nDisallow: /\n",
        AGENT,
        "/"
    ));
    // A disallow of index.html does not disallow the directory.
    assert!(allowed(
        "User-agent: *\nDisallow: /d/index.html\n",
        AGENT,
        "/d/"
    ));
}

#[test]
fn s2_2_2_rules_outside_any_group_are_ignored() {
    // "The crawler SHOULD ignore "disallow" and "allow" rules that are not in any
    // group (for example, any rule that precedes the first user-agent line)."
    let body = "Disallow: /\nCrawl-delay: 9\nUser-agent: *\nDisallow: /x\n";
    let robots = Robots::parse(body.as_bytes(), AGENT);
    assert!(robots.is_allowed("/a"));
    assert!(!robots.is_allowed("/x"));
    assert_eq!(robots.crawl_delay(), None);
}

#[test]
fn s2_2_blank_lines_do_not_end_a_group() {
    // group = startgroupline *(startgroupline / emptyline) *(rule / emptyline)
    let body = "User-agent: other\n\nUser-agent: polycrawl\n\nDisallow: /a\n\nDisallow: /b\n";
    assert!(!allowed(body, AGENT, "/a"));
    assert!(!allowed(body, AGENT, "/b"));
    assert!(!allowed(body, "other", "/b"));
}

#[test]
fn s2_2_4_other_records_do_not_terminate_a_group() {
    // "Parsing of other records MUST NOT interfere with the parsing of explicitly
    // defined records in Section 2. For example, a "Sitemaps" record MUST NOT
    // terminate a group."
    let body = "User-agent: polycrawl\nSitemap: https://e.example/s.xml\nDisallow: /a\n\
                Sitemap: https://e.example/t.xml\nUnknown: x\nDisallow: /b\n";
    assert!(!allowed(body, AGENT, "/a"));
    assert!(!allowed(body, AGENT, "/b"));
    // Nor does a record between two user-agent lines split them into two groups.
    let body = "User-agent: other\nSitemap: https://e.example/s.xml\nUser-agent: polycrawl\nDisallow: /a\n";
    assert!(!allowed(body, AGENT, "/a"));
    assert!(!allowed(body, "other", "/a"));
}

// --- Section 2.2.1: the user-agent line and group selection ---------------------

#[test]
fn s2_2_1_specific_group_beats_star() {
    let body = "User-agent: *\nDisallow: /\n\nUser-agent: polycrawl\nDisallow: /private\n";
    assert!(allowed(body, AGENT, "/public"));
    assert!(!allowed(body, AGENT, "/private"));
    assert!(!allowed(body, "otherbot", "/public"));
}

#[test]
fn s2_2_1_specific_group_does_not_inherit_star_rules() {
    let body = "User-agent: *\nDisallow: /admin\n\nUser-agent: polycrawl\nDisallow: /tmp\n";
    assert!(allowed(body, AGENT, "/admin"));
    assert!(!allowed(body, AGENT, "/tmp"));
}

#[test]
fn s2_2_1_product_token_matching_is_case_insensitive() {
    // "Crawlers MUST use case-insensitive matching to find the group that matches
    // the product token and then obey the rules of the group."
    let body = "User-agent: POLYCRAWL\nDisallow: /a\n";
    assert!(!allowed(body, "polycrawl", "/a"));
    assert!(!allowed(body, "PolyCrawl", "/a"));
    assert!(allowed(body, "polycrawler", "/a"));
}

#[test]
fn s2_2_1_groups_naming_the_same_agent_are_merged() {
    // "If there is more than one group matching the user-agent, the matching
    // groups' rules MUST be combined into one group" -- the RFC's ExampleBot file.
    let body = "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\n\
                user-agent: ExampleBot\ndisallow: /baz\n";
    for path in ["/foo", "/bar", "/baz"] {
        assert!(!allowed(body, "examplebot", path), "{path}");
    }
    assert!(allowed(body, "examplebot", "/qux"));
    // Merged rules still follow longest match across the former groups.
    let body = "User-agent: polycrawl\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\n\
                User-agent: polycrawl\nAllow: /a/b\n";
    assert!(!allowed(body, AGENT, "/a/c"));
    assert!(allowed(body, AGENT, "/a/b"));
    assert!(allowed(body, AGENT, "/z"));
}

#[test]
fn s2_2_1_star_groups_are_merged_too() {
    let body = "User-agent: *\nDisallow: /a\n\nUser-agent: x\nDisallow: /\n\nUser-agent: *\nDisallow: /b\n";
    assert!(!allowed(body, AGENT, "/a"));
    assert!(!allowed(body, AGENT, "/b"));
    assert!(allowed(body, AGENT, "/c"));
}

#[test]
fn s2_2_1_several_user_agent_lines_share_one_group() {
    let body = "User-agent: a\nUser-agent: polycrawl\nUser-agent: b\nDisallow: /x\n\n\
                User-agent: c\nDisallow: /y\n";
    assert!(!allowed(body, AGENT, "/x"));
    assert!(allowed(body, AGENT, "/y"));
    assert!(!allowed(body, "b", "/x"));
    assert!(!allowed(body, "c", "/y"));
    assert!(allowed(body, "c", "/x"));
}

#[test]
fn s2_2_1_a_rule_closes_the_list_of_user_agents() {
    // Even an empty disallow is a rule: the next user-agent line starts a new group.
    let body = "User-agent: polycrawl\nDisallow:\nUser-agent: other\nDisallow: /\n";
    assert!(allowed(body, AGENT, "/x"));
    assert!(!allowed(body, "other", "/x"));
}

#[test]
fn s2_2_1_unmatched_agent_falls_back_to_star() {
    // "If no matching group exists, crawlers MUST obey the group with a user-agent
    // line with the "*" value, if present."
    let body = "User-agent: other\nDisallow: /\n\nUser-agent: *\nDisallow: /star\n";
    assert!(allowed(body, AGENT, "/x"));
    assert!(!allowed(body, AGENT, "/star"));
}

#[test]
fn s2_2_1_no_matching_group_and_no_star_means_no_rules() {
    // "If no group matches the product token and there is no group with a
    // user-agent line with the "*" value, or no groups are present at all, no
    // rules apply."
    assert!(allowed("User-agent: other\nDisallow: /\n", AGENT, "/x"));
    assert!(allowed("", AGENT, "/x"));
    assert!(allowed("# nothing but comments\n", AGENT, "/x"));
}

#[test]
fn s2_2_1_agent_identification_string_is_cut_to_its_product_token() {
    // The product token is the name before any version or comment.
    let body = "User-agent: polycrawl/2.0\nDisallow: /a\n";
    assert!(!allowed(
        body,
        "polycrawl/0.1 (+https://polycrawl.example/bot)",
        "/a"
    ));
    assert!(!allowed(body, AGENT, "/a"));
    // A token that merely starts with ours is another crawler.
    assert!(allowed(
        "User-agent: polycrawl-images\nDisallow: /\n",
        AGENT,
        "/a"
    ));
    assert!(allowed(
        "User-agent: polycrawler\nDisallow: /\n",
        AGENT,
        "/a"
    ));
    assert!(allowed("User-agent: poly\nDisallow: /\n", AGENT, "/a"));
    // `*bot` is not the wildcard, and not us.
    assert!(allowed("User-agent: *crawl\nDisallow: /\n", AGENT, "/a"));
}

#[test]
fn s2_1_an_empty_last_group_allows_everything() {
    // "The last group may have no rules, which means it implicitly allows
    // everything."
    let body = "User-agent: *\nDisallow: /\n\nUser-agent: polycrawl\n";
    assert!(allowed(body, AGENT, "/x"));
    assert!(!allowed(body, "other", "/x"));
}

#[test]
fn parse_keeps_only_the_rules_that_apply() {
    // Memory: groups for other agents are not stored at all.
    let mut full = String::from("User-agent: *\nDisallow: /star\n");
    for i in 0..1000 {
        full.push_str(&format!(
            "User-agent: bot{i}\nDisallow: /b{i}\nAllow: /b{i}/x\n"
        ));
    }
    full.push_str(
        "User-agent: polycrawl\nDisallow: /mine\nDisallow: /mine\nSitemap: https://e.example/s\n",
    );
    let only_ours = "Sitemap: https://e.example/s\nUser-agent: polycrawl\nDisallow: /mine\n";
    assert_eq!(
        Robots::parse(full.as_bytes(), AGENT),
        Robots::parse(only_ours.as_bytes(), AGENT)
    );
}

// --- Section 2.2.2: allow and disallow lines ------------------------------------

#[test]
fn s2_2_2_longest_match_wins() {
    // "The most specific match found MUST be used. The most specific match is the
    // match that has the most octets."
    let body = "User-agent: *\nDisallow: /downloads/\nAllow: /downloads/free/\n\
                Disallow: /downloads/free/beta\n";
    assert!(!allowed(body, AGENT, "/downloads/report.pdf"));
    assert!(allowed(body, AGENT, "/downloads/free/guide.pdf"));
    assert!(!allowed(body, AGENT, "/downloads/free/beta1.zip"));
    // Order in the file does not matter.
    let reversed = "User-agent: *\nDisallow: /downloads/free/beta\nAllow: /downloads/free/\n\
                    Disallow: /downloads/\n";
    assert!(allowed(reversed, AGENT, "/downloads/free/guide.pdf"));
    assert!(!allowed(reversed, AGENT, "/downloads/free/beta1.zip"));
}

#[test]
fn s2_2_2_wildcard_rules_count_their_pattern_octets() {
    // `/*.html` (7 octets) is more specific than `/page` (5) wherever both match.
    let body = "User-agent: *\nAllow: /page\nDisallow: /*.html\n";
    assert!(!allowed(body, AGENT, "/page.html"));
    assert!(allowed(body, AGENT, "/page.php"));
    let body = "User-agent: *\nAllow: /page/long\nDisallow: /*.html\n";
    assert!(allowed(body, AGENT, "/page/long.html"));
}

#[test]
fn s2_2_2_allow_wins_a_tie() {
    // "If an "allow" rule and a "disallow" rule are equivalent, then the "allow"
    // rule SHOULD be used."
    let body = "User-agent: *\nDisallow: /reports/q4\nAllow: /reports/q4\n";
    assert!(allowed(body, AGENT, "/reports/q4-summary"));
    let body = "User-agent: *\nDisallow: /*.gif\nAllow: /a/b/c\n";
    assert!(allowed(body, AGENT, "/a/b/c.gif"));
    // Hex case does not make two rules: same canonical octets, a tie.
    let body = "User-agent: *\nDisallow: /%7Ejoe\nAllow: /%7ejoe\n";
    assert!(allowed(body, AGENT, "/%7Ejoe/x"));
}

#[test]
fn s2_2_2_empty_disallow_disallows_nothing() {
    let body = "User-agent: polycrawl\nDisallow:\n";
    assert!(allowed(body, AGENT, "/"));
    assert!(allowed(body, AGENT, "/anything"));
    let body = "User-agent: polycrawl\nDisallow:    # nothing\n\nUser-agent: *\nDisallow: /\n";
    assert!(allowed(body, AGENT, "/anything"));
    // An empty allow does not override anything either.
    let body = "User-agent: polycrawl\nAllow:\nDisallow: /a\n";
    assert!(!allowed(body, AGENT, "/a"));
}

#[test]
fn s2_2_2_no_matching_rule_means_allowed() {
    // "If no match is found amongst the rules in a group for a matching user-agent
    // or there are no rules in the group, the URI is allowed."
    assert!(allowed("User-agent: *\nDisallow: /a\n", AGENT, "/b"));
}

#[test]
fn s2_2_2_robots_txt_is_always_allowed() {
    // "The /robots.txt URI is implicitly allowed."
    let body = "User-agent: *\nDisallow: /\nDisallow: /robots.txt\n";
    assert!(allowed(body, AGENT, "/robots.txt"));
    // Only that URI: an escaped spelling is another path (section 2.2.2's table
    // keeps escapes as they are).
    assert!(!allowed(body, AGENT, "/robots%2Etxt"));
    assert!(!allowed(body, AGENT, "/robots.txt.bak"));
    assert!(!allowed(body, AGENT, "/"));
}

#[test]
fn s2_2_2_matching_is_case_sensitive_and_starts_at_the_first_octet() {
    // "The matching SHOULD be case sensitive. The matching MUST start with the
    // first octet of the path."
    let body = "User-agent: *\nDisallow: /Private\n";
    assert!(!allowed(body, AGENT, "/Private"));
    assert!(allowed(body, AGENT, "/private"));
    assert!(allowed(body, AGENT, "/x/Private"));
}

#[test]
fn s2_2_2_rules_are_prefixes_and_include_the_query() {
    let body = "User-agent: *\nDisallow: /tmp\nDisallow: /search?q=\n";
    assert!(!allowed(body, AGENT, "/tmp"));
    assert!(!allowed(body, AGENT, "/tmpfiles"));
    assert!(!allowed(body, AGENT, "/tmp/a.html"));
    assert!(!allowed(body, AGENT, "/search?q=shoes"));
    assert!(allowed(body, AGENT, "/search"));
    assert!(allowed(body, AGENT, "/search?page=2"));
    assert!(allowed("User-agent: *\nDisallow: /tmp/\n", AGENT, "/tmp"));
}

#[test]
fn s2_2_2_percent_encoding_table() {
    // Section 2.2.2's table: each path is matched as its "Path to Match"; a rule
    // written either way matches a URL written either way. Non-ASCII is encoded
    // as UTF-8 on both sides; escapes are kept on both sides (the last row).
    let rows: [(&str, &str); 5] = [
        ("/foo/bar?baz=quz", "/foo/bar?baz=quz"),
        (
            "/foo/bar?baz=https://foo.bar",
            "/foo/bar?baz=https%3A%2F%2Ffoo.bar",
        ),
        ("/foo/bar/\u{30C4}", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%62%61%7A", "/foo/bar/%62%61%7A"),
    ];
    for (path, to_match) in rows {
        for rule in [path, to_match] {
            let body = format!("User-agent: *\nDisallow: {rule}$\n");
            for url in [path, to_match] {
                assert!(!allowed(&body, AGENT, url), "rule {rule} url {url}");
            }
        }
    }
    // Lower-case hex is the same octet.
    assert!(!allowed(
        "User-agent: *\nDisallow: /foo/bar/%e3%83%84\n",
        AGENT,
        "/foo/bar/\u{30C4}"
    ));
    // The table's last row: `%62%61%7A` is matched as written, so it is not `baz`,
    // whichever side spells it which way.
    assert!(allowed(
        "User-agent: *\nDisallow: /foo/bar/%62%61%7A\n",
        AGENT,
        "/foo/bar/baz"
    ));
    assert!(allowed(
        "User-agent: *\nDisallow: /foo/bar/baz\n",
        AGENT,
        "/foo/bar/%62%61%7A"
    ));
}

#[test]
fn s2_2_2_escapes_are_compared_as_escapes_on_both_sides() {
    // The prose says: "If a percent-encoded ASCII octet is encountered in the URI,
    // it MUST be unencoded prior to comparison, unless it is a reserved character
    // ... or the character is outside the unreserved character range." The
    // section's own table keeps `/foo/bar/%62%61%7A` as it is, and so do Google's
    // parser and our URL canonicalization; we normalize both sides the same way
    // (upper-case hex, nothing decoded), as the table shows.
    assert!(allowed(
        "User-agent: *\nDisallow: /~joe\n",
        AGENT,
        "/%7Ejoe/index.html"
    ));
    assert!(allowed(
        "User-agent: *\nDisallow: /%7ejoe\n",
        AGENT,
        "/~joe/index.html"
    ));
    assert!(!allowed(
        "User-agent: *\nDisallow: /%7ejoe\n",
        AGENT,
        "/%7Ejoe/index.html"
    ));
    assert!(!allowed(
        "User-agent: *\nDisallow: /a%3cd.html\n",
        AGENT,
        "/a%3Cd.html"
    ));
    assert!(allowed(
        "User-agent: *\nDisallow: /a%2fb.html\n",
        AGENT,
        "/a/b.html"
    ));
    assert!(allowed(
        "User-agent: *\nDisallow: /a/b.html\n",
        AGENT,
        "/a%2Fb.html"
    ));
    assert!(!allowed(
        "User-agent: *\nDisallow: /a%2fb.html\n",
        AGENT,
        "/a%2Fb.html"
    ));
}

#[test]
fn s2_2_2_query_data_delimiters_match_encoded_or_not() {
    // Row 2 of the table, with the rule not knowing where the query starts.
    let body = "User-agent: *\nDisallow: /*url=http://\n";
    assert!(!allowed(body, AGENT, "/go?url=http://x.example/"));
    assert!(!allowed(body, AGENT, "/go?url=http%3A%2F%2Fx.example%2F"));
    let body = "User-agent: *\nDisallow: /*url=http%3A%2F%2F\n";
    assert!(!allowed(body, AGENT, "/go?url=http://x.example/"));
}

// --- Section 2.2.3: special characters -----------------------------------------

#[test]
fn s2_2_3_star_matches_any_sequence_including_slashes() {
    // "*" "Designates 0 or more instances of any character." Section 5.1: "The "*"
    // character designates any character, including the otherwise-required
    // forward slash".
    let body = "User-agent: *\nDisallow: /this/*/exactly\nDisallow: *.gif\nDisallow: /x*\n";
    assert!(!allowed(body, AGENT, "/this/a/b/c/exactly"));
    assert!(!allowed(body, AGENT, "/this//exactly"));
    assert!(allowed(body, AGENT, "/this/exactly"));
    assert!(!allowed(body, AGENT, "/img/a.gif"));
    assert!(!allowed(body, AGENT, "/a.gif?size=2"));
    assert!(!allowed(body, AGENT, "/x"));
}

#[test]
fn s2_2_3_dollar_anchors_the_end() {
    // "$" "Designates the end of the match pattern."
    let body = "User-agent: *\nDisallow: /this/path/exactly$\nDisallow: /*.php$\n";
    assert!(!allowed(body, AGENT, "/this/path/exactly"));
    assert!(allowed(body, AGENT, "/this/path/exactly/"));
    assert!(allowed(body, AGENT, "/this/path/exactly?q"));
    assert!(!allowed(body, AGENT, "/a/b.php"));
    assert!(allowed(body, AGENT, "/a/b.php?x=1"));
    assert!(allowed(body, AGENT, "/a/b.phps"));
}

#[test]
fn s2_2_3_dollar_elsewhere_is_a_literal_dollar() {
    // "$" designates the *end* of the pattern, so only a final `$` anchors; one
    // in the middle is an ordinary character (as in Google's reference parser).
    let body = "User-agent: *\nDisallow: /price$list\n";
    assert!(!allowed(body, AGENT, "/price$list"));
    assert!(!allowed(body, AGENT, "/price%24list/x"));
    assert!(allowed(body, AGENT, "/price"));
    assert!(allowed(body, AGENT, "/pricelist"));
    // `$$`: the first is literal, the second anchors.
    let body = "User-agent: *\nDisallow: /a$$\n";
    assert!(!allowed(body, AGENT, "/a$"));
    assert!(allowed(body, AGENT, "/a$b"));
    assert!(allowed(body, AGENT, "/a"));
}

#[test]
fn s2_2_3_encoded_special_characters_match_literally() {
    // "If crawlers match special characters verbatim in the URI, crawlers SHOULD
    // use "%" encoding." Its examples: /path/file-with-a-%2A.html matches
    // .../path/file-with-a-*.html, and /path/foo-%24 matches .../path/foo-$.
    let body = "User-agent: *\nDisallow: /path/file-with-a-%2A.html\nDisallow: /path/foo-%24\n";
    assert!(!allowed(body, AGENT, "/path/file-with-a-*.html"));
    assert!(!allowed(body, AGENT, "/path/file-with-a-%2a.html"));
    assert!(allowed(body, AGENT, "/path/file-with-a-x.html"));
    assert!(!allowed(body, AGENT, "/path/foo-$"));
    assert!(allowed(body, AGENT, "/path/foo-"));
}

#[test]
fn s2_2_3_pathological_patterns_finish_fast() {
    // `*` never backtracks: each rule costs O(len(pattern) + len(path)).
    let mut body = String::from("User-agent: *\n");
    body.push_str("Disallow: /*a*a*a*a*a*a*a*b\n");
    body.push_str("Disallow: /*a*a*a*a*a*a*a*b$\n");
    body.push_str(&format!("Disallow: /{}b\n", "*a".repeat(2000)));
    for i in 0..100 {
        body.push_str(&format!("Disallow: *{}b{i}\n", "a".repeat(4000)));
        body.push_str(&format!("Disallow: /*{}b{i}$\n", "a".repeat(4000)));
    }
    let robots = Robots::parse(body.as_bytes(), AGENT);
    let path = format!("/{}", "a".repeat(50_000));
    let query = format!("/x?{}", "a:".repeat(25_000));
    let started = Instant::now();
    for _ in 0..10 {
        assert!(robots.is_allowed(&path));
        assert!(robots.is_allowed(&query));
    }
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
}

// --- Section 2.2.4: other records ------------------------------------------------

#[test]
fn s2_2_4_sitemaps_are_global_and_collected_in_order() {
    let body = "Sitemap: https://e.example/a.xml\nUser-agent: other\nsitemap:https://e.example/b.xml\n\
                Disallow: /\nSITEMAP :  https://e.example/c.xml # comment\nSitemap:\n";
    let mut robots = Robots::parse(body.as_bytes(), AGENT);
    let expected = [
        "https://e.example/a.xml",
        "https://e.example/b.xml",
        "https://e.example/c.xml",
    ];
    assert_eq!(robots.sitemaps().collect::<Vec<_>>(), expected);
    assert_eq!(robots.take_sitemaps(), expected);
    assert_eq!(robots.sitemaps().len(), 0);
}

#[test]
fn crawl_delay_is_per_group_and_parsed_as_seconds() {
    // Not in RFC 9309; section 2.2.4 lets crawlers interpret other records.
    let body = "User-agent: *\nDisallow: /p\nCrawl-delay: 10\n\n\
                User-agent: polycrawl\nCrawl-delay: 2.5\nDisallow: /x\n";
    assert_eq!(
        Robots::parse(body.as_bytes(), AGENT).crawl_delay(),
        Some(Duration::from_millis(2500))
    );
    assert_eq!(
        Robots::parse(body.as_bytes(), "other").crawl_delay(),
        Some(Duration::from_secs(10))
    );
    // The `*` group's delay does not leak into the specific group.
    let body =
        "User-agent: *\nDisallow: /p\nCrawl-delay: 10\n\nUser-agent: polycrawl\nDisallow: /x\n";
    assert_eq!(Robots::parse(body.as_bytes(), AGENT).crawl_delay(), None);
    // Crawl-delay is an "other record" (section 2.2.4) and does not end a run of
    // user-agent lines; nor do blank lines (section 2.2: `group = startgroupline
    // *(startgroupline / emptyline) *(rule / emptyline)`). So a group with no rule
    // yet continues, and its delay applies to every agent it names.
    let body = "User-agent: other\nCrawl-delay: 3\n\nUser-agent: polycrawl\nDisallow: /x\n";
    let robots = Robots::parse(body.as_bytes(), AGENT);
    assert_eq!(robots.crawl_delay(), Some(Duration::from_secs(3)));
    assert!(!robots.is_allowed("/x"));
    assert!(!allowed(body, "other", "/x"));
    // Several: the longest is obeyed. Garbage is ignored.
    let body = "User-agent: polycrawl\nCrawl-delay: 1\nCrawl-delay: soon\nCrawl-delay: -5\n\
                Crawl-delay: 4 # seconds\nCrawl-delay: 1e9\n";
    assert_eq!(
        Robots::parse(body.as_bytes(), AGENT).crawl_delay(),
        Some(Duration::from_secs(4))
    );
    let body = "User-agent: polycrawl\nCrawl-delay: 0.25\n";
    assert_eq!(
        Robots::parse(body.as_bytes(), AGENT).crawl_delay(),
        Some(Duration::from_millis(250))
    );
    assert_eq!(
        Robots::parse(b"User-agent: polycrawl\nCrawl-delay: x\n", AGENT).crawl_delay(),
        None
    );
}

// --- Section 2.5: limits -----------------------------------------------------------

#[test]
fn s2_5_only_the_first_500_kib_are_parsed() {
    // "The parsing limit MUST be at least 500 kibibytes [KiB]."
    assert_eq!(MAX_ROBOTS_BYTES, 512_000);
    let mut body = String::from("User-agent: polycrawl\nDisallow: /early\n");
    while body.len() < MAX_ROBOTS_BYTES - 100 {
        body.push_str("# padding padding padding padding padding padding padding padding\n");
    }
    // This line straddles the limit: it is dropped, not read as `Disallow: /`.
    let straddling = format!("Disallow: /{}\n", "s".repeat(200));
    body.push_str(&straddling);
    body.push_str("Disallow: /late\n");
    assert!(body.len() > MAX_ROBOTS_BYTES);
    let robots = Robots::parse(body.as_bytes(), AGENT);
    assert!(!robots.is_allowed("/early"));
    assert!(robots.is_allowed("/late"));
    assert!(robots.is_allowed("/s"));
    assert!(robots.is_allowed("/"));
}

// --- Robustness --------------------------------------------------------------------

#[test]
fn garbage_never_panics() {
    // A deterministic xorshift stream over bytes that matter to the parser.
    let alphabet = b"Uu-sSeErRaAgGnNtTdDiIlLoOwW:*$#?%/\r\n \t\x00\xff\xef\xbb\xbf~2Ff.=@";
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..2_000 {
        let len = (next() % 300) as usize;
        let body: Vec<u8> = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let robots = Robots::parse(&body, AGENT);
        let url_len = (next() % 40) as usize;
        let url: String = (0..url_len)
            .map(|_| char::from(alphabet[(next() % 40) as usize]))
            .collect();
        let _ = robots.is_allowed(&url);
        let _ = robots.crawl_delay();
        let _ = robots.sitemaps().count();
    }
    // Explicit edge cases.
    for body in [
        &b""[..],
        b"\xEF\xBB",
        b":",
        b"::::",
        b"Disallow",
        b"User-agent:\nDisallow: %",
        b"\r\r\n\n",
    ] {
        let robots = Robots::parse(body, AGENT);
        for url in ["", "%", "%%", "?", "#", "\u{0}", "/\u{FFFF}", "*", "$"] {
            let _ = robots.is_allowed(url);
        }
    }
}

// --- Section 5: the RFC's examples ---------------------------------------------------

const SIMPLE_EXAMPLE: &str = "User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
";

#[test]
fn s5_1_simple_example_star_group() {
    // "*": "allows access to the URLs with the /publications/ path prefix, and it
    // restricts access to the URLs with the /example/ path prefix and to all URLs
    // with a .gif suffix."
    let agent = "somebot";
    assert!(allowed(SIMPLE_EXAMPLE, agent, "/publications/"));
    assert!(allowed(SIMPLE_EXAMPLE, agent, "/publications/paper.pdf"));
    assert!(!allowed(SIMPLE_EXAMPLE, agent, "/example/"));
    assert!(!allowed(SIMPLE_EXAMPLE, agent, "/example/page.html"));
    assert!(!allowed(SIMPLE_EXAMPLE, agent, "/image.gif"));
    assert!(!allowed(SIMPLE_EXAMPLE, agent, "/deep/path/image.gif"));
    assert!(allowed(SIMPLE_EXAMPLE, agent, "/image.gif?v=2"));
    assert!(allowed(SIMPLE_EXAMPLE, agent, "/"));
    assert!(allowed(SIMPLE_EXAMPLE, agent, "/other.html"));
    // `/publications/` (14 octets) outweighs `*.gif$` (6).
    assert!(allowed(SIMPLE_EXAMPLE, agent, "/publications/figure.gif"));
}

#[test]
fn s5_1_simple_example_foobot() {
    // foobot: "The crawler only has access to two URL path prefixes on the site --
    // /example/page.html and /example/allowed.gif."
    assert!(allowed(SIMPLE_EXAMPLE, "foobot", "/example/page.html"));
    assert!(allowed(SIMPLE_EXAMPLE, "foobot", "/example/allowed.gif"));
    assert!(allowed(SIMPLE_EXAMPLE, "FooBot", "/example/page.html?x=1"));
    assert!(!allowed(SIMPLE_EXAMPLE, "foobot", "/"));
    assert!(!allowed(SIMPLE_EXAMPLE, "foobot", "/example/"));
    assert!(!allowed(SIMPLE_EXAMPLE, "foobot", "/publications/"));
    assert!(!allowed(
        SIMPLE_EXAMPLE,
        "foobot",
        "/example/disallowed.gif"
    ));
    assert!(allowed(SIMPLE_EXAMPLE, "foobot", "/robots.txt"));
}

#[test]
fn s5_1_simple_example_barbot_and_bazbot() {
    // "The crawlers are not allowed to access the URLs with the /example/page.html
    // path prefix but otherwise have unrestricted access".
    for agent in ["barbot", "bazbot"] {
        assert!(!allowed(SIMPLE_EXAMPLE, agent, "/example/page.html"));
        assert!(!allowed(SIMPLE_EXAMPLE, agent, "/example/page.html/more"));
        assert!(allowed(SIMPLE_EXAMPLE, agent, "/example/"));
        assert!(allowed(SIMPLE_EXAMPLE, agent, "/example/other.html"));
        assert!(allowed(SIMPLE_EXAMPLE, agent, "/image.gif"));
    }
}

#[test]
fn s5_1_simple_example_quxbot() {
    // "An empty group at the end of the file. The crawler has unrestricted access".
    for path in ["/", "/example/", "/image.gif", "/example/page.html"] {
        assert!(allowed(SIMPLE_EXAMPLE, "quxbot", path), "{path}");
    }
}

#[test]
fn s5_2_longest_match_example() {
    // (The RFC's prose names the URI `disallow.gif` while the rule says
    // `disallowed.gif`: erratum 7124. We test what the rules mean.)
    let body =
        "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n";
    assert!(allowed(body, "foobot", "/example/page/"));
    assert!(allowed(body, "foobot", "/example/page/allowed.gif"));
    assert!(!allowed(body, "foobot", "/example/page/disallowed.gif"));
    assert!(allowed(body, "foobot", "/example/page/disallow.gif"));
}

// --- Conformance table -----------------------------------------------------------------

/// One case a line: `section | robots.txt | agent | full URL | verdict`, where
/// `\n` in the robots.txt column is a line break.
const TABLE: &str = r"
2.2.1 | User-agent: *\nDisallow: /                                               | polycrawl | https://e.example/                                  | disallow
2.2.1 | User-agent: *\nDisallow: /                                               | polycrawl | https://e.example/robots.txt                        | allow
2.2.1 | User-agent: polycrawl\nDisallow: /                                       | polycrawl | https://e.example/a                                 | disallow
2.2.1 | User-agent: PolyCrawl\nDisallow: /                                       | polycrawl | https://e.example/a                                 | disallow
2.2.1 | User-agent: polycrawl\nDisallow: /                                       | POLYCRAWL | https://e.example/a                                 | disallow
2.2.1 | User-agent: other\nDisallow: /                                           | polycrawl | https://e.example/a                                 | allow
2.2.1 | User-agent: other\nDisallow: /\nUser-agent: *\nDisallow: /b              | polycrawl | https://e.example/a                                 | allow
2.2.1 | User-agent: other\nDisallow: /\nUser-agent: *\nDisallow: /b              | polycrawl | https://e.example/b                                 | disallow
2.2.1 | User-agent: *\nDisallow: /\nUser-agent: polycrawl\nAllow: /              | polycrawl | https://e.example/a                                 | allow
2.2.1 | User-agent: *\nDisallow: /\nUser-agent: polycrawl\nDisallow:             | polycrawl | https://e.example/a                                 | allow
2.2.1 | User-agent: a\nUser-agent: polycrawl\nDisallow: /x                       | polycrawl | https://e.example/x                                 | disallow
2.2.1 | User-agent: polycrawl\nDisallow: /x\nUser-agent: polycrawl\nDisallow: /y | polycrawl | https://e.example/y                                 | disallow
2.2.1 | User-agent: polycrawl/1.2\nDisallow: /                                   | polycrawl | https://e.example/a                                 | disallow
2.2.1 | User-agent: polycrawler\nDisallow: /                                     | polycrawl | https://e.example/a                                 | allow
2.2.1 | User-agent: *\nDisallow: /\nUser-agent: polycrawl                        | polycrawl | https://e.example/a                                 | allow
2.2.1 | Disallow: /\nUser-agent: polycrawl\nDisallow: /b                         | polycrawl | https://e.example/a                                 | allow
2.2.2 | User-agent: *\nDisallow: /a\nAllow: /a/b                                 | polycrawl | https://e.example/a/b/c                             | allow
2.2.2 | User-agent: *\nAllow: /a\nDisallow: /a/b                                 | polycrawl | https://e.example/a/b/c                             | disallow
2.2.2 | User-agent: *\nAllow: /a/b\nDisallow: /a/b                               | polycrawl | https://e.example/a/b                               | allow
2.2.2 | User-agent: *\nDisallow: /a/b\nAllow: /a/b                               | polycrawl | https://e.example/a/b                               | allow
2.2.2 | User-agent: *\nAllow: /page\nDisallow: /*.htm                            | polycrawl | https://e.example/page.htm                          | disallow
2.2.2 | User-agent: *\nAllow: /$\nDisallow: /                                    | polycrawl | https://e.example/                                  | allow
2.2.2 | User-agent: *\nAllow: /$\nDisallow: /                                    | polycrawl | https://e.example/page                              | disallow
2.2.2 | User-agent: *\nDisallow:                                                 | polycrawl | https://e.example/a                                 | allow
2.2.2 | User-agent: *\nAllow: /\nDisallow: /apply                                | polycrawl | https://e.example/apply                             | disallow
2.2.2 | User-agent: *\nDisallow: /Fish                                           | polycrawl | https://e.example/fish                              | allow
2.2.2 | User-agent: *\nDisallow: /fish/                                          | polycrawl | https://e.example/fish                              | allow
2.2.2 | User-agent: *\nDisallow: /fish                                           | polycrawl | https://e.example/fish.html                         | disallow
2.2.2 | User-agent: *\nDisallow: private                                         | polycrawl | https://e.example/private                           | allow
2.2.2 | User-agent: *\nDisallow: /foo/bar?baz=https://foo.bar                    | polycrawl | https://e.example/foo/bar?baz=https%3A%2F%2Ffoo.bar | disallow
2.2.2 | User-agent: *\nDisallow: /foo/bar?baz=https%3A%2F%2Ffoo.bar              | polycrawl | https://e.example/foo/bar?baz=https://foo.bar       | disallow
2.2.2 | User-agent: *\nDisallow: /foo/bar/ツ                                      | polycrawl | https://e.example/foo/bar/%E3%83%84                 | disallow
2.2.2 | User-agent: *\nDisallow: /foo/bar/%E3%83%84                              | polycrawl | https://e.example/foo/bar/ツ                         | disallow
2.2.2 | User-agent: *\nDisallow: /foo/bar/%62%61%7A                              | polycrawl | https://e.example/foo/bar/baz                       | allow
2.2.2 | User-agent: *\nDisallow: /foo/bar/baz                                    | polycrawl | https://e.example/foo/bar/%62%61%7a                 | allow
2.2.2 | User-agent: *\nDisallow: /%7Ejoe                                         | polycrawl | https://e.example/%7ejoe/                           | disallow
2.2.2 | User-agent: *\nDisallow: /~joe                                           | polycrawl | https://e.example/%7ejoe/                           | allow
2.2.2 | User-agent: *\nDisallow: /a%2Fb                                          | polycrawl | https://e.example/a/b                               | allow
2.2.2 | User-agent: *\nDisallow: /a%2Fb                                          | polycrawl | https://e.example/a%2fb                             | disallow
2.2.2 | User-agent: *\nDisallow: /a b                                            | polycrawl | https://e.example/a%20b                             | disallow
2.2.3 | User-agent: *\nDisallow: /*.gif$                                         | polycrawl | https://e.example/x/y.gif                           | disallow
2.2.3 | User-agent: *\nDisallow: /*.gif$                                         | polycrawl | https://e.example/x/y.gif?z                         | allow
2.2.3 | User-agent: *\nDisallow: /*?                                             | polycrawl | https://e.example/x?y                               | disallow
2.2.3 | User-agent: *\nDisallow: /*?                                             | polycrawl | https://e.example/x                                 | allow
2.2.3 | User-agent: *\nDisallow: /*/exactly                                      | polycrawl | https://e.example/this/a/b/exactly                  | disallow
2.2.3 | User-agent: *\nDisallow: /a$b                                            | polycrawl | https://e.example/a$b                               | disallow
2.2.3 | User-agent: *\nDisallow: /a%2A                                           | polycrawl | https://e.example/a*                                | disallow
2.2.3 | User-agent: *\nDisallow: /a%2A                                           | polycrawl | https://e.example/ab                                | allow
2.2.3 | User-agent: *\nDisallow: /a*                                             | polycrawl | https://e.example/ab                                | disallow
2.2.3 | User-agent: *\nDisallow: /a # comment                                    | polycrawl | https://e.example/a                                 | disallow
2.2.3 | User-agent: *\nDisallow: /a#b                                            | polycrawl | https://e.example/ax                                | disallow
urls  | User-agent: *\nDisallow: /$                                              | polycrawl | https://e.example                                   | disallow
urls  | User-agent: *\nDisallow: /$                                              | polycrawl | https://e.example/#top                              | disallow
urls  | User-agent: *\nDisallow: /?                                              | polycrawl | https://e.example?q=1                               | disallow
urls  | User-agent: *\nDisallow: /a$                                             | polycrawl | https://e.example/a#frag                            | disallow
";

#[test]
fn conformance_table() {
    let cases: Vec<Vec<&str>> = TABLE
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.split(" | ").map(str::trim).collect())
        .collect();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let [section, body, agent, url, verdict] = case[..] else {
            panic!("malformed table line: {case:?}");
        };
        let body = body.replace("\\n", "\n");
        let expected = match verdict {
            "allow" => true,
            "disallow" => false,
            other => panic!("verdict must be allow or disallow, not {other:?}"),
        };
        let got = check_urls(body.as_bytes(), agent, &[url]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, url);
        if got[0].1 != expected {
            failures.push(format!(
                "section {section}: {url} (path {}) for {agent} under {body:?}: expected {verdict}",
                path_and_query(url)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
