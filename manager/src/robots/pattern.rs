//! The matching half of robots.txt: the canonical form that rule patterns and URLs
//! are compared in (RFC 9309 section 2.2.2), and the `*`/`$` matcher (section 2.2.3).
//!
//! # Canonical form
//!
//! Both sides go through the same canonicalization, so two spellings of one URI
//! compare equal and nothing else does:
//!
//! - `%hh` escapes get upper-case hex and are otherwise kept: an escape is never
//!   decoded, not even of an unreserved character (`/%7Ejoe` is not `/~joe`,
//!   `%62%61%7A` is not `baz`). Section 2.2.2's prose asks for unreserved escapes to
//!   be decoded, but its own example table maps `/foo/bar/%62%61%7A` to itself,
//!   Google's reference parser and its conformance cases do the same, and so does
//!   the rest of the crawler: URLs reach the matcher as the URL Standard and the
//!   application's canonicalization leave them, with `%7e` kept. Both sides are
//!   treated alike, so the choice only decides whether two spellings of one
//!   character are one path; keeping them apart is what the table shows.
//! - Octets outside US-ASCII, controls, space and the characters RFC 3986 never
//!   allows raw (`" # < > [ \ ] ^ ` { | }`) are percent-encoded (`/ツ` =
//!   `/%E3%83%84`). A `%` that starts no valid escape is a literal `%`, i.e. `%25`.
//! - `*` and `$` in a URL are data, so they are encoded (`%2A`, `%24`): a rule
//!   written `/file-%2A.html` matches the URL `/file-*.html` (section 2.2.3).
//! - In the query (after the first raw `?`), the four gen-delims RFC 3986 lets a
//!   query carry as data -- `:` `/` `?` `@` -- are encoded, as in the RFC's table
//!   (`?baz=https://foo.bar` is matched as `?baz=https%3A%2F%2Ffoo.bar`).
//!
//! The result is always ASCII, so it is kept as a `str` and searched with the
//! standard library's linear-time substring search.
//!
//! # Where a pattern segment may land
//!
//! A pattern is literal segments separated by `*`. A segment after a `*` may land
//! in the URL's path or in its query, and the pattern alone cannot tell which
//! (`/*url=http://` has no `?`), so such a segment has two forms: as written (for
//! the path) and with `:` `/` `?` `@` encoded (for the query). Together with the
//! canonical form this makes those four characters, spelled either way,
//! equivalent in the query and only there.
//!
//! # Matching cost
//!
//! The first segment must match at the start of the path; each later one is placed
//! at its leftmost match, which is optimal because a later start never ends
//! earlier; with `$` the last one must end at the end. No backtracking, and every
//! search is linear: O(len(pattern) + len(path)) per rule, whatever the `*`s.

/// Upper-case hex digits for escapes.
const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Octets that never appear raw in a canonical path or query.
fn must_escape(b: u8) -> bool {
    b <= b' '
        || b >= 0x7f
        || matches!(
            b,
            b'"' | b'#' | b'<' | b'>' | b'[' | b'\\' | b']' | b'^' | b'`' | b'{' | b'|' | b'}'
        )
}

/// The gen-delims a query carries as data; encoded in a canonical query.
fn is_query_data_delim(b: u8) -> bool {
    matches!(b, b':' | b'/' | b'?' | b'@')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Appends `%XX` for `b`.
fn push_escaped(out: &mut String, b: u8) {
    out.push('%');
    out.push(char::from(HEX[usize::from(b >> 4)]));
    out.push(char::from(HEX[usize::from(b & 0x0f)]));
}

/// Appends the canonical form of `input` to `out` and returns where its query
/// starts (the index in `out` of the first raw `?`), if it has one. With
/// `wildcards`, a raw `*` is kept as the wildcard (runs of `*` collapse to one);
/// `stars_dropped` counts the collapsed ones. Only ASCII is ever appended.
fn canonicalize(
    input: &[u8],
    wildcards: bool,
    out: &mut String,
    stars_dropped: &mut usize,
) -> Option<usize> {
    let mut query_start = None;
    let mut prev_star = false;
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        let is_star = wildcards && b == b'*';
        match b {
            b'%' => {
                let hi = input.get(i + 1).copied().and_then(hex_value);
                let lo = input.get(i + 2).copied().and_then(hex_value);
                if let (Some(hi), Some(lo)) = (hi, lo) {
                    push_escaped(out, hi << 4 | lo);
                    i += 3;
                    prev_star = false;
                    continue;
                }
                push_escaped(out, b'%');
            }
            b'*' if wildcards => {
                if prev_star {
                    *stars_dropped += 1;
                } else {
                    out.push('*');
                }
            }
            b'*' | b'$' => push_escaped(out, b),
            b'?' if query_start.is_none() => {
                query_start = Some(out.len());
                out.push('?');
            }
            _ if query_start.is_some() && is_query_data_delim(b) => push_escaped(out, b),
            _ if must_escape(b) => push_escaped(out, b),
            _ => out.push(char::from(b)),
        }
        prev_star = is_star;
        i += 1;
    }
    query_start
}

/// A URL path (and query) in canonical form, ready to be matched.
#[derive(Debug)]
pub(super) struct Target {
    text: String,
    /// Index of the `?` that starts the query.
    query_start: Option<usize>,
}

impl Target {
    /// Canonicalizes `path_and_query`: a fragment is cut off, an empty path is `/`
    /// and a path that does not start with `/` gets one.
    pub(super) fn new(path_and_query: &str) -> Target {
        let raw = path_and_query.as_bytes();
        let raw = match raw.iter().position(|&b| b == b'#') {
            Some(hash) => &raw[..hash],
            None => raw,
        };
        let mut text = String::with_capacity(raw.len() + 8);
        if raw.first() != Some(&b'/') {
            text.push('/');
        }
        let mut unused = 0;
        let query_start = canonicalize(raw, false, &mut text, &mut unused);
        Target { text, query_start }
    }

    /// The RFC 9309 section 2.2.2 exemption: "The /robots.txt URI is implicitly
    /// allowed." True when the path (query aside) is `/robots.txt`.
    pub(super) fn is_robots_txt(&self) -> bool {
        let path_end = self.query_start.unwrap_or(self.text.len());
        self.text.get(..path_end) == Some("/robots.txt")
    }
}

/// A rule's pattern in canonical form, as compiled by [`compile`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Compiled {
    /// The pattern ended in `$`, which was stripped from the stored text.
    pub(super) anchored: bool,
    /// Octets of the pattern in canonical form, counting each `*` and the final
    /// `$`: the RFC's "most octets" measure of how specific a match is.
    pub(super) specificity: u32,
}

/// Appends the canonical form of a rule pattern (already trimmed, non-empty) to
/// `out`. A final `$` anchors the match (section 2.2.3); a `$` anywhere else is a
/// literal dollar sign, the same as `%24`.
pub(super) fn compile(pattern: &[u8], out: &mut String) -> Compiled {
    let (body, anchored) = match pattern.split_last() {
        Some((b'$', rest)) => (rest, true),
        _ => (pattern, false),
    };
    let start = out.len();
    let mut stars_dropped = 0;
    canonicalize(body, true, out, &mut stars_dropped);
    let octets = out.len() - start + stars_dropped + usize::from(anchored);
    Compiled {
        anchored,
        specificity: u32::try_from(octets).unwrap_or(u32::MAX),
    }
}

/// Whether the compiled `pattern` matches `target` from its first octet.
pub(super) fn matches(pattern: &str, anchored: bool, target: &Target) -> bool {
    let url = target.text.as_str();
    let mut segments = pattern.split('*');
    let first = segments.next().unwrap_or_default();
    // The first segment starts at the first octet, so it lines up with the URL:
    // its `?` (if any) is the URL's query delimiter and its forms agree.
    if !url.starts_with(first) {
        return false;
    }
    let mut pos = first.len();
    let mut segments = segments.peekable();
    if segments.peek().is_none() {
        return !anchored || pos == url.len();
    }
    let mut in_query = first.contains('?');
    let mut scratch = String::new();
    while let Some(segment) = segments.next() {
        let at_end = anchored && segments.peek().is_none();
        let place = Placement {
            url,
            query_start: target.query_start,
            from: pos,
            at_end,
        };
        let end = if in_query {
            place.in_query(segment)
        } else {
            place.anywhere(segment, &mut scratch)
        };
        match end {
            Some(end) => pos = end,
            None => return false,
        }
        in_query |= segment.contains('?');
    }
    true
}

/// Finds the leftmost place, at or after `from`, for one segment that follows a
/// `*`, and returns where it ends. With `at_end`, only a place ending at the end
/// of the URL counts.
struct Placement<'a> {
    url: &'a str,
    query_start: Option<usize>,
    from: usize,
    at_end: bool,
}

impl Placement<'_> {
    /// `needle` within `url[lo..hi]`, starting at or after `lo`.
    fn find(&self, needle: &str, lo: usize, hi: usize) -> Option<usize> {
        if self.at_end {
            let start = hi.checked_sub(needle.len())?;
            let fits = hi == self.url.len() && start >= lo;
            return (fits && self.url.get(start..hi) == Some(needle)).then_some(hi);
        }
        let found = self.url.get(lo..hi)?.find(needle)?;
        Some(lo + found + needle.len())
    }

    /// A segment that comes after the pattern's `?`: it is in query form already
    /// and can only land in the query.
    fn in_query(&self, segment: &str) -> Option<usize> {
        let query_start = self.query_start?;
        self.find(segment, self.from.max(query_start + 1), self.url.len())
    }

    /// A segment written in path context: it may land in the path as written, or
    /// in the query in query form; if it holds the pattern's `?`, the path form
    /// must put that `?` on the URL's query delimiter.
    fn anywhere(&self, segment: &str, scratch: &mut String) -> Option<usize> {
        let path_end = self.query_start.unwrap_or(self.url.len());
        let in_path = match segment.find('?') {
            None => self.find(segment, self.from, path_end),
            Some(at) => path_end
                .checked_sub(at)
                .filter(|&start| start >= self.from)
                .map(|start| (start, start + segment.len()))
                .filter(|&(start, end)| self.url.get(start..end) == Some(segment))
                .filter(|&(_, end)| !self.at_end || end == self.url.len())
                .map(|(_, end)| end),
        };
        if in_path.is_some() {
            return in_path;
        }
        let query_start = self.query_start?;
        scratch.clear();
        for b in segment.bytes() {
            if is_query_data_delim(b) {
                push_escaped(scratch, b);
            } else {
                scratch.push(char::from(b));
            }
        }
        self.find(scratch, self.from.max(query_start + 1), self.url.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical_url(s: &str) -> String {
        Target::new(s).text
    }

    fn compiled(pattern: &str) -> (String, Compiled) {
        let mut out = String::new();
        let c = compile(pattern.as_bytes(), &mut out);
        (out, c)
    }

    fn is_match(pattern: &str, url: &str) -> bool {
        let mut out = String::new();
        let c = compile(pattern.as_bytes(), &mut out);
        matches(&out, c.anchored, &Target::new(url))
    }

    #[test]
    fn rfc9309_2_2_2_table_path_to_match() {
        // Section 2.2.2's example table: Path -> "Path to Match".
        assert_eq!(canonical_url("/foo/bar?baz=quz"), "/foo/bar?baz=quz");
        assert_eq!(
            canonical_url("/foo/bar?baz=https://foo.bar"),
            "/foo/bar?baz=https%3A%2F%2Ffoo.bar"
        );
        assert_eq!(canonical_url("/foo/bar/\u{30C4}"), "/foo/bar/%E3%83%84");
        assert_eq!(canonical_url("/foo/bar/%E3%83%84"), "/foo/bar/%E3%83%84");
        assert_eq!(canonical_url("/foo/bar/%62%61%7A"), "/foo/bar/%62%61%7A");
    }

    #[test]
    fn escapes_get_upper_case_hex_and_stay_escaped() {
        assert_eq!(canonical_url("/%7ejoe"), "/%7Ejoe");
        assert_eq!(canonical_url("/~joe"), "/~joe");
        assert_eq!(canonical_url("/a%3cd"), "/a%3Cd");
        assert_eq!(canonical_url("/a%2fb"), "/a%2Fb");
        assert_eq!(canonical_url("/100%"), "/100%25");
        assert_eq!(canonical_url("/%zz%4"), "/%25zz%254");
        assert_eq!(canonical_url("/a b\t<c>"), "/a%20b%09%3Cc%3E");
        assert_eq!(canonical_url("/a*b$c"), "/a%2Ab%24c");
        assert_eq!(canonical_url("/a?b?c"), "/a?b%3Fc");
        assert_eq!(canonical_url("/a:b@c?d:e@f"), "/a:b@c?d%3Ae%40f");
        assert_eq!(canonical_url("/a#frag"), "/a");
        assert_eq!(canonical_url(""), "/");
        assert_eq!(canonical_url("a"), "/a");
    }

    #[test]
    fn patterns_keep_wildcards_and_count_canonical_octets() {
        let (bytes, c) = compiled("/a**b$");
        assert_eq!(bytes, "/a*b");
        assert!(c.anchored);
        assert_eq!(c.specificity, 6);
        let (bytes, c) = compiled("/a$b");
        assert_eq!(bytes, "/a%24b");
        assert!(!c.anchored);
        let (bytes, c) = compiled("/%7ejoe");
        assert_eq!((bytes.as_str(), c.specificity), ("/%7Ejoe", 7));
        let (bytes, c) = compiled("/\u{30C4}");
        assert_eq!((bytes.as_str(), c.specificity), ("/%E3%83%84", 10));
        let (bytes, _) = compiled("/p?u=http://x");
        assert_eq!(bytes, "/p?u=http%3A%2F%2Fx");
    }

    #[test]
    fn prefix_star_and_anchor() {
        assert!(is_match("/fish", "/fish.html"));
        assert!(!is_match("/fish", "/Fish"));
        assert!(is_match("/fish*", "/fish"));
        assert!(is_match("/*.php", "/a/b.php?x"));
        assert!(is_match("/*.php$", "/a/b.php"));
        assert!(!is_match("/*.php$", "/a/b.php?x"));
        assert!(is_match("/fish$", "/fish"));
        assert!(!is_match("/fish$", "/fish/"));
        assert!(is_match("*.gif$", "/x/y.gif"));
        assert!(is_match("/a*$", "/a/anything"));
        assert!(is_match("/a*b*c$", "/abxbxc"));
        assert!(!is_match("/a*b*c$", "/abxbxcd"));
        assert!(is_match("/", "/"));
        assert!(!is_match("/a", "/"));
    }

    #[test]
    fn query_delimiters_match_either_spelling_in_the_query_only() {
        assert!(is_match("/*url=http://", "/go?url=http%3A%2F%2Fx"));
        assert!(is_match("/*url=http%3A%2F%2F", "/go?url=http://x"));
        assert!(is_match("/go?url=http://", "/go?url=http%3a%2f%2fx"));
        assert!(is_match("/*?q=", "/s?a=1?q=2"));
        // In the path `/` and `%2F` differ (a different resource).
        assert!(!is_match("/a/b", "/a%2Fb"));
        assert!(!is_match("/a%2Fb", "/a/b"));
        // `%3F` in a path is a literal question mark, not the query delimiter.
        assert!(!is_match("/a?b", "/a%3Fb"));
        assert!(!is_match("/a%3Fb", "/a?b"));
    }

    #[test]
    fn pathological_patterns_stay_linear() {
        let path = format!("/{}", "a".repeat(200_000));
        let started = std::time::Instant::now();
        assert!(!is_match("/*a*a*a*a*a*a*a*b", &path));
        assert!(!is_match("/*a*a*a*a*a*a*a*b$", &path));
        assert!(is_match("/*a*a*a*a*a*a*a*a$", &path));
        let long = format!("/{}", "*a".repeat(500));
        assert!(!is_match(&format!("{long}b"), &path[..5_000]));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }

    /// The obvious exponential-free definition, by memoized recursion over
    /// (pattern index, URL index): a pattern octet matches the same URL octet, or,
    /// inside the query, a raw `:` `/` `?` `@` matches its `%XX` form.
    fn reference(pattern: &[u8], anchored: bool, url: &[u8], query_start: Option<usize>) -> bool {
        fn go(
            p: &[u8],
            anchored: bool,
            u: &[u8],
            qs: Option<usize>,
            j: usize,
            i: usize,
            memo: &mut Vec<Option<bool>>,
        ) -> bool {
            let key = j * (u.len() + 1) + i;
            if let Some(known) = memo[key] {
                return known;
            }
            let result = if j == p.len() {
                !anchored || i == u.len()
            } else if p[j] == b'*' {
                go(p, anchored, u, qs, j + 1, i, memo)
                    || (i < u.len() && go(p, anchored, u, qs, j, i + 1, memo))
            } else {
                let literal = u.get(i) == Some(&p[j]) && go(p, anchored, u, qs, j + 1, i + 1, memo);
                let mut escaped = String::new();
                push_escaped(&mut escaped, p[j]);
                let encoded = qs.is_some_and(|q| i > q)
                    && is_query_data_delim(p[j])
                    && u.get(i..i + 3) == Some(escaped.as_bytes())
                    && go(p, anchored, u, qs, j + 1, i + 3, memo);
                literal || encoded
            };
            memo[key] = Some(result);
            result
        }
        let mut memo = vec![None; (pattern.len() + 1) * (url.len() + 1)];
        go(pattern, anchored, url, query_start, 0, 0, &mut memo)
    }

    #[test]
    fn matcher_agrees_with_the_reference_definition() {
        let pattern_parts = [
            "a", "b", "/", ":", "?", "*", "*", "%2F", "%3F", "%3A", "@", "$", "%61",
        ];
        let url_parts = [
            "a", "b", "/", ":", "?", "%2F", "%3F", "%3A", "%61", "@", "%40",
        ];
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut checked = 0;
        for _ in 0..50_000 {
            let mut pattern = String::from(if next(4) == 0 { "*" } else { "/" });
            for _ in 0..next(7) {
                pattern.push_str(pattern_parts[next(pattern_parts.len())]);
            }
            let mut url = String::from("/");
            for _ in 0..next(9) {
                url.push_str(url_parts[next(url_parts.len())]);
            }
            let mut compiled = String::new();
            let c = compile(pattern.as_bytes(), &mut compiled);
            let target = Target::new(&url);
            let expected = reference(
                compiled.as_bytes(),
                c.anchored,
                target.text.as_bytes(),
                target.query_start,
            );
            assert_eq!(
                matches(&compiled, c.anchored, &target),
                expected,
                "pattern {pattern:?} ({compiled:?}) url {url:?} ({:?})",
                target.text
            );
            checked += usize::from(expected);
        }
        assert!(checked > 1_000, "too few positive cases: {checked}");
    }
}
