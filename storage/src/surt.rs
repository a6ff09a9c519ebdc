//! SURT keys ("Sort-friendly URI Reordering Transform"), the first column of a CDXJ
//! line: `http://www.Example.com:8080/a/B?b=2&a=1#top` becomes
//! `com,example:8080)/a/b?a=1&b=2`.
//!
//! The rules, those of the `surt` library that pywb and OutbackCDX use by default,
//! kept simple:
//! 1. parse with the `url` crate (lowercases scheme and host, IDNA to punycode, drops
//!    default ports, resolves `.`/`..` segments, percent-encodes; fragments dropped);
//!    only `http` and `https` are accepted, and both give the same key;
//! 2. host: a trailing dot and a leading `www.` (or `www2.`, `www123.`; only when two
//!    labels or more remain) are dropped, then the labels are reversed and joined by
//!    commas (`com,example`); an IP address is kept as is (`127.0.0.1`, `[::1]`);
//!    user info is dropped;
//! 3. a non-default port follows as `:port`, then `)`;
//! 4. the path, then `?` and the query parameters sorted bytewise (empty ones and an
//!    empty query dropped);
//! 5. everything lowercased.
//!
//! Keys are many-to-one on purpose (`http`/`https`, `www.`, case, parameter order):
//! [`Repository::get`](crate::Repository::get) prefers a capture whose stored URL is
//! exactly the one asked for, and takes the latest capture under the key otherwise.
//! Not done (on purpose, to stay predictable): session-id stripping and other
//! "massaging" that would merge different pages.

use url::{Host, Url};

use crate::error::{Result, StorageError};

/// The SURT key of `url` (see the module docs), or [`StorageError::BadUrl`].
pub fn surt(url: &str) -> Result<String> {
    let bad = |reason: &str| StorageError::BadUrl {
        url: url.chars().take(200).collect(),
        reason: reason.to_owned(),
    };
    let parsed = Url::parse(url.trim()).map_err(|e| bad(&e.to_string()))?;
    surt_of(&parsed).ok_or_else(|| bad("not an http(s) URL with a host"))
}

/// The SURT key of a parsed URL; `None` unless it is http(s) with a host.
pub fn surt_of(url: &Url) -> Option<String> {
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let mut key = String::with_capacity(url.as_str().len() + 4);
    match url.host()? {
        Host::Domain(domain) => {
            let domain = strip_www(domain.trim_end_matches('.'));
            for (i, label) in domain.rsplit('.').enumerate() {
                if i > 0 {
                    key.push(',');
                }
                key.push_str(label);
            }
        }
        Host::Ipv4(addr) => key.push_str(&addr.to_string()),
        Host::Ipv6(addr) => {
            key.push('[');
            key.push_str(&addr.to_string());
            key.push(']');
        }
    }
    if let Some(port) = url.port() {
        key.push(':');
        key.push_str(&port.to_string());
    }
    key.push(')');
    key.push_str(url.path());
    if let Some(query) = url.query() {
        let lower = query.to_ascii_lowercase();
        let mut params: Vec<&str> = lower.split('&').filter(|p| !p.is_empty()).collect();
        params.sort_unstable();
        if !params.is_empty() {
            key.push('?');
            key.push_str(&params.join("&"));
        }
    }
    key.make_ascii_lowercase();
    Some(key)
}

/// Drops a leading `www.` or `www<digits>.`, unless fewer than two labels would be
/// left (`www.com` stays).
fn strip_www(domain: &str) -> &str {
    let Some(rest) = domain.strip_prefix("www") else {
        return domain;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    match rest.strip_prefix('.') {
        Some(tail) if tail.contains('.') => tail,
        _ => domain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surt_cases() {
        let cases = [
            ("http://example.com/", "com,example)/"),
            ("http://example.com", "com,example)/"),
            (
                "https://www.Example.COM/Path/Page.html",
                "com,example)/path/page.html",
            ),
            ("http://www2.example.com/", "com,example)/"),
            ("http://wwwfoo.example.com/", "com,example,wwwfoo)/"),
            ("http://www.com/", "com,www)/"),
            ("http://a.b.example.co.uk/x", "uk,co,example,b,a)/x"),
            ("http://example.com:80/", "com,example)/"),
            ("https://example.com:443/", "com,example)/"),
            ("http://example.com:8080/a", "com,example:8080)/a"),
            ("http://user:pw@example.com/", "com,example)/"),
            ("http://example.com/a?b=2&a=1&c", "com,example)/a?a=1&b=2&c"),
            ("http://example.com/a?B=2&a=1", "com,example)/a?a=1&b=2"),
            ("http://example.com/a?", "com,example)/a"),
            ("http://example.com/a?&&", "com,example)/a"),
            ("http://example.com/a#frag", "com,example)/a"),
            ("http://example.com/a/./b/../c", "com,example)/a/c"),
            ("http://example.com/a b", "com,example)/a%20b"),
            ("http://example.com./", "com,example)/"),
            ("http://127.0.0.1:8000/x", "127.0.0.1:8000)/x"),
            ("http://[::1]/", "[::1])/"),
            ("http://bücher.example/", "example,xn--bcher-kva)/"),
        ];
        for (url, key) in cases {
            assert_eq!(surt(url).unwrap(), key, "{url}");
        }
    }

    #[test]
    fn refuses_what_has_no_key() {
        for url in [
            "",
            "not a url",
            "/relative",
            "ftp://example.com/",
            "mailto:a@b.c",
        ] {
            assert!(
                matches!(surt(url), Err(StorageError::BadUrl { .. })),
                "{url}"
            );
        }
    }

    #[test]
    fn keys_sort_a_domain_together() {
        let mut keys: Vec<String> = [
            "http://b.example.com/",
            "http://example.org/",
            "http://example.com/z",
            "http://a.example.com/",
        ]
        .iter()
        .map(|u| surt(u).unwrap())
        .collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "com,example)/z",
                "com,example,a)/",
                "com,example,b)/",
                "org,example)/"
            ]
        );
    }
}
