//! Full URLs in, robots verdicts out: what `polycrawl robots` needs, without a
//! URL parser.

use std::borrow::Cow;

use super::Robots;

/// The part of `url` that robots.txt rules are matched against: everything after
/// the authority, without the `#fragment`. An empty path is `/`.
///
/// Accepts `scheme://authority/path?query`, `//authority/path`, a bare `/path`,
/// and, for typing convenience, `host/path` without a scheme.
///
/// ```
/// use manager::robots::path_and_query;
/// assert_eq!(path_and_query("https://example.com:8443/a/b?c=d#top"), "/a/b?c=d");
/// assert_eq!(path_and_query("http://example.com"), "/");
/// assert_eq!(path_and_query("http://example.com?q=1"), "/?q=1");
/// assert_eq!(path_and_query("/already/a/path"), "/already/a/path");
/// ```
pub fn path_and_query(url: &str) -> Cow<'_, str> {
    let url = url.trim();
    let url = url.split_once('#').map_or(url, |(before, _)| before);
    let after_authority = if let Some(rest) = url.strip_prefix("//") {
        skip_authority(rest)
    } else if url.starts_with('/') {
        url
    } else if let Some(rest) = after_scheme(url) {
        skip_authority(rest)
    } else {
        skip_authority(url)
    };
    if after_authority.starts_with('/') {
        Cow::Borrowed(after_authority)
    } else {
        Cow::Owned(format!("/{after_authority}"))
    }
}

/// What follows `scheme://`, if `url` starts with one (RFC 3986 scheme syntax).
fn after_scheme(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    let mut chars = scheme.chars();
    let first_is_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (first_is_letter && rest_ok).then_some(rest)
}

/// Skips `userinfo@host:port`, which ends at the first `/` or `?`.
fn skip_authority(rest: &str) -> &str {
    rest.find(['/', '?']).map_or("", |end| &rest[end..])
}

/// Parses `robots_body` for `agent` and tells, for each full URL, whether it may be
/// fetched; the answers come back in the order of `urls`, each with its URL.
///
/// The body is read as a successfully fetched robots.txt; the URLs are assumed to
/// belong to the host it came from.
pub fn check_urls<S: AsRef<str>>(
    robots_body: &[u8],
    agent: &str,
    urls: &[S],
) -> Vec<(String, bool)> {
    let robots = Robots::parse(robots_body, agent);
    urls.iter()
        .map(|url| {
            let url = url.as_ref();
            (url.to_owned(), robots.is_allowed(&path_and_query(url)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_and_query_takes_everything_after_the_authority() {
        let cases = [
            ("https://example.com/", "/"),
            ("https://example.com", "/"),
            ("https://user:pw@example.com:8080/x?y=1", "/x?y=1"),
            ("https://example.com?y=1", "/?y=1"),
            ("https://example.com/a#frag", "/a"),
            ("https://example.com#frag", "/"),
            ("//example.com/a", "/a"),
            ("example.com/a/b", "/a/b"),
            ("example.com/go?u=http://x/y", "/go?u=http://x/y"),
            ("/a?b=http://c/d", "/a?b=http://c/d"),
            (
                "https://example.com/go?u=http://other/x",
                "/go?u=http://other/x",
            ),
            ("  https://example.com/space  ", "/space"),
            ("", "/"),
            ("https://", "/"),
        ];
        for (url, expected) in cases {
            assert_eq!(path_and_query(url), expected, "{url}");
        }
    }

    #[test]
    fn check_urls_answers_in_order() {
        let body = b"User-agent: polycrawl\nDisallow: /no\n";
        let urls = [
            "https://a.example/no/x",
            "https://a.example/yes",
            "https://a.example",
        ];
        let verdicts = check_urls(body, "polycrawl", &urls);
        assert_eq!(
            verdicts,
            vec![
                ("https://a.example/no/x".to_owned(), false),
                ("https://a.example/yes".to_owned(), true),
                ("https://a.example".to_owned(), true),
            ]
        );
        let owned: Vec<String> = urls.iter().map(|u| (*u).to_owned()).collect();
        assert_eq!(check_urls(body, "polycrawl", &owned), verdicts);
    }
}
