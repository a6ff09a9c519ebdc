//! The small string grammars inside attribute values: `rel` tokens (which
//! `<link>`s are followed), the robots `content` list and the `refresh` content.

/// ASCII whitespace as the HTML Standard defines it.
pub(super) fn is_ws(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | 0x0C | b'\r' | b' ')
}

/// `<link rel>` values that name another page a reader can go to: followed.
/// From the HTML Standard's link types (alternate, author, help, license, next,
/// prev, search, privacy-policy, terms-of-service), RFC 6596 (canonical), RFC 8288's
/// registry and HTML 4 (start, contents, index, glossary, copyright, chapter,
/// section, subsection, appendix, bookmark), and common usage (up, first, last,
/// home, toc, archives, sitemap, shortlink, amphtml, edit, me, tag).
pub const NAVIGATIONAL_RELS: &[&str] = &[
    "alternate",
    "amphtml",
    "appendix",
    "archives",
    "author",
    "begin",
    "bookmark",
    "canonical",
    "chapter",
    "contents",
    "copyright",
    "edit",
    "end",
    "first",
    "glossary",
    "help",
    "home",
    "index",
    "last",
    "license",
    "me",
    "next",
    "prev",
    "previous",
    "privacy-policy",
    "search",
    "section",
    "shortlink",
    "sitemap",
    "start",
    "subsection",
    "tag",
    "terms-of-service",
    "toc",
    "top",
    "up",
];

/// `<link rel>` values for resources a page loads or hints at, not pages: a
/// `rel` holding any of these is not followed even with a navigational value
/// beside it (`alternate stylesheet` is a style sheet).
pub const RESOURCE_RELS: &[&str] = &[
    "apple-touch-icon",
    "apple-touch-icon-precomposed",
    "apple-touch-startup-image",
    "compression-dictionary",
    "dns-prefetch",
    "edituri",
    "expect",
    "fluid-icon",
    "hub",
    "icon",
    "import",
    "manifest",
    "mask-icon",
    "modulepreload",
    "openid.delegate",
    "openid.server",
    "openid2.local_id",
    "openid2.provider",
    "pingback",
    "preconnect",
    "prefetch",
    "preload",
    "prerender",
    "serviceworker",
    "stylesheet",
    "webmention",
    "wlwmanifest",
];

/// Whether a `<link>` with this `rel` (space-separated, case-insensitive tokens)
/// is followed: it has a [`NAVIGATIONAL_RELS`] token and no [`RESOURCE_RELS`] one.
/// Unknown tokens are neither.
pub fn rel_is_followed(rel: &str) -> bool {
    let mut navigational = false;
    for token in rel.split(|c: char| c.is_ascii() && is_ws(c as u8)) {
        if token.is_empty() {
            continue;
        }
        let is = |list: &[&str]| list.iter().any(|r| token.eq_ignore_ascii_case(r));
        if is(RESOURCE_RELS) {
            return false;
        }
        navigational |= is(NAVIGATIONAL_RELS);
    }
    navigational
}

/// Whether a robots `content` (comma- or space-separated, case-insensitive) has
/// `nofollow` or `none`.
pub fn robots_nofollow(content: &str) -> bool {
    content
        .split(|c: char| c == ',' || (c.is_ascii() && is_ws(c as u8)))
        .any(|t| t.eq_ignore_ascii_case("nofollow") || t.eq_ignore_ascii_case("none"))
}

/// The URL of a `<meta http-equiv=refresh>` content, following the Standard's
/// "shared declarative refresh steps" (`5; url='x'`, `0;URL=x`, `3, x`, `.5 x`).
/// `None` when the content is malformed or names no URL (a reload of the page itself
/// is not a link).
pub fn refresh_url(content: &str) -> Option<&str> {
    let s = content.as_bytes();
    let mut i = skip_ws(s, 0);
    let digits = i;
    while s.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    if i == digits && s.get(i) != Some(&b'.') {
        return None;
    }
    while s.get(i).is_some_and(|&c| c.is_ascii_digit() || c == b'.') {
        i += 1;
    }
    if i < s.len() {
        if !(s[i] == b';' || s[i] == b',' || is_ws(s[i])) {
            return None;
        }
        i = skip_ws(s, i);
        if matches!(s.get(i), Some(b';' | b',')) {
            i += 1;
        }
        i = skip_ws(s, i);
    }
    if i >= s.len() {
        return None;
    }
    // `url =` is optional; when it is incomplete the text so far stays in the URL.
    let mut j = i;
    if s.get(j).is_some_and(|c| c.eq_ignore_ascii_case(&b'u')) {
        j += 1;
        if s.get(j).is_some_and(|c| c.eq_ignore_ascii_case(&b'r')) {
            j += 1;
            if s.get(j).is_some_and(|c| c.eq_ignore_ascii_case(&b'l')) {
                j += 1;
                j = skip_ws(s, j);
                if s.get(j) == Some(&b'=') {
                    i = skip_ws(s, j + 1);
                } else {
                    i = j;
                }
            } else {
                i = j;
            }
        } else {
            i = j;
        }
    }
    let mut url = &content[i..];
    if let Some(q @ (b'\'' | b'"')) = s.get(i).copied() {
        url = &url[1..];
        if let Some(end) = url.find(q as char) {
            url = &url[..end];
        }
    }
    (!url.is_empty()).then_some(url)
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while s.get(i).copied().is_some_and(is_ws) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_forms() {
        assert_eq!(refresh_url("5; url=/next"), Some("/next"));
        assert_eq!(refresh_url("0;URL=http://x.test/"), Some("http://x.test/"));
        assert_eq!(refresh_url(" 3 , url = 'a b' tail"), Some("a b"));
        assert_eq!(refresh_url("1; url=\"q\""), Some("q"));
        assert_eq!(refresh_url("2 /plain"), Some("/plain"));
        assert_eq!(refresh_url(".5; url=x"), Some("x"));
        assert_eq!(
            refresh_url("0; urx=y"),
            Some("x=y"),
            "incomplete `url` is kept"
        );
        assert_eq!(refresh_url("0; url"), None);
        assert_eq!(refresh_url("5"), None);
        assert_eq!(refresh_url("5;"), None);
        assert_eq!(refresh_url("; url=x"), None);
        assert_eq!(refresh_url("5x; url=x"), None);
    }

    #[test]
    fn robots_and_rel_tokens() {
        assert!(robots_nofollow("noindex, NOFOLLOW"));
        assert!(robots_nofollow("none"));
        assert!(robots_nofollow("noindex,nofollow"));
        assert!(!robots_nofollow("noindex, follow"));
        assert!(!robots_nofollow("nofollowing"));
        assert!(rel_is_followed("Alternate\threflang"));
        assert!(rel_is_followed("next"));
        assert!(rel_is_followed(" UP  index "));
        assert!(rel_is_followed("canonical"));
        assert!(!rel_is_followed("stylesheet alternates"));
        assert!(!rel_is_followed("alternate stylesheet"));
        assert!(!rel_is_followed("shortcut icon"));
        assert!(!rel_is_followed("preload"));
        assert!(!rel_is_followed("nofollow"));
        assert!(!rel_is_followed(""));
        // Both lists are sorted, lower-case and disjoint.
        for list in [NAVIGATIONAL_RELS, RESOURCE_RELS] {
            assert!(list.windows(2).all(|w| w[0] < w[1]));
            assert!(list.iter().all(|r| r.to_ascii_lowercase() == *r));
        }
        assert!(!NAVIGATIONAL_RELS.iter().any(|r| RESOURCE_RELS.contains(r)));
    }
}
