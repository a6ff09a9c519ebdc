//! URL canonicalization: one spelling per resource, so the seen set sees one URL.
//!
//! The `url` crate (WHATWG URL Standard) already lower-cases scheme and host, maps
//! international hosts to punycode (IDNA), drops default ports, resolves `.` and
//! `..` (also `%2e`), turns an empty path into `/` and percent-encodes spaces,
//! controls and non-ASCII as UTF-8. [`canonicalize`] adds:
//!
//! - the fragment is removed;
//! - session identifiers are removed ([`CanonConfig::session_params`], default
//!   [`DEFAULT_SESSION_PARAMS`], names compared ignoring ASCII case): query pairs
//!   named so (`?sid=...&a=1` is `?a=1`; a query left empty goes with its `?`) and
//!   path parameters named so (`/p;jsessionid=...` is `/p`), so a site that puts a
//!   fresh session id in every link cannot make one page endlessly many URLs;
//! - trailing dots of the host are removed (`www.example.test.` is `www.example.test`,
//!   and keys get no empty label);
//! - rejected: schemes other than http and https; URLs carrying a user name or
//!   password (a crawler must not replay credentials found in a page); URLs longer
//!   than [`CanonConfig::max_len`] bytes once canonical; and host names of a single
//!   label (`localhost`, `intranet`), unless [`CanonConfig::allow_single_label_hosts`]
//!   is set (tests that crawl `localhost`). On the public web a dotless name never
//!   resolves to the site that linked it, and websim's names (`www.acme17.test`)
//!   have dots; IPv4 and IPv6 addresses are kept.
//!
//! Left as they are, on purpose: the case of percent-escapes and escaped unreserved
//! characters (`%7e` is not turned into `~`: the URL Standard keeps them, and so do
//! browsers), an empty query (`/p?` is not `/p` to every server), query order.
//!
//! [`key`] turns a canonical URL into its host-reversed sort key and back.

pub mod key;

use url::{Host, Url};

/// Default for [`CanonConfig::max_len`]: the longest URL that the common servers,
/// CDNs and sitemaps (50,000 URLs of at most 2,048 characters) agree on.
pub const DEFAULT_MAX_URL_LEN: usize = 2048;

/// Default for [`CanonConfig::session_params`]: the session-id names of the common
/// server stacks (PHP, Java servlets, ASP, ColdFusion, osCommerce, Zen Cart) and
/// the generic ones.
pub const DEFAULT_SESSION_PARAMS: [&str; 11] = [
    "sid",
    "sessionid",
    "session_id",
    "session",
    "phpsessid",
    "jsessionid",
    "aspsessionid",
    "cfid",
    "cftoken",
    "oscsid",
    "zenid",
];

/// Canonicalization settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanonConfig {
    /// Longest canonical URL kept, in bytes. Default [`DEFAULT_MAX_URL_LEN`].
    pub max_len: usize,
    /// Keep hosts without a dot (`localhost`). Default false.
    pub allow_single_label_hosts: bool,
    /// Query and path parameters removed as session identifiers (ASCII case
    /// ignored). Default [`DEFAULT_SESSION_PARAMS`].
    pub session_params: Vec<String>,
}

impl Default for CanonConfig {
    fn default() -> CanonConfig {
        CanonConfig {
            max_len: DEFAULT_MAX_URL_LEN,
            allow_single_label_hosts: false,
            session_params: DEFAULT_SESSION_PARAMS.map(str::to_owned).to_vec(),
        }
    }
}

/// Why a URL is not crawled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// The text is not a URL (relative to the base, if one was given).
    #[error("not a URL: {0}")]
    Parse(#[from] url::ParseError),
    /// The scheme is not http or https.
    #[error("scheme {0:?} is not crawled")]
    Scheme(String),
    /// The URL carries a user name or password.
    #[error("URL carries credentials")]
    Credentials,
    /// The host name has a single label (no dot) and those are not allowed.
    #[error("host {0:?} has no dot")]
    SingleLabelHost(String),
    /// The canonical URL is longer than the limit.
    #[error("URL is {len} bytes, longer than {max}")]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// Canonicalizes an already parsed URL (see the module docs).
pub fn canonicalize(mut url: Url, config: &CanonConfig) -> Result<Url, Rejected> {
    canonicalize_in_place(&mut url, config)?;
    Ok(url)
}

/// [`canonicalize`] without moving the URL; on `Err` the URL is left half done.
pub fn canonicalize_in_place(url: &mut Url, config: &CanonConfig) -> Result<(), Rejected> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Rejected::Scheme(url.scheme().to_owned()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Rejected::Credentials);
    }
    url.set_fragment(None);
    if let Some(Host::Domain(domain)) = url.host() {
        if domain.ends_with('.') {
            let trimmed = domain.trim_end_matches('.').to_owned();
            // An http(s) URL whose host was all dots has no valid form left.
            url.set_host(Some(&trimmed))?;
        }
    }
    if let Some(Host::Domain(domain)) = url.host() {
        if !config.allow_single_label_hosts && !domain.contains('.') {
            return Err(Rejected::SingleLabelHost(domain.to_owned()));
        }
    }
    strip_session_params(url, &config.session_params);
    let len = url.as_str().len();
    if len > config.max_len {
        return Err(Rejected::TooLong {
            len,
            max: config.max_len,
        });
    }
    Ok(())
}

/// Removes the query pairs and path parameters named in `names` (see the module
/// docs). Costs nothing for a URL without a query and without `;` in its path.
fn strip_session_params(url: &mut Url, names: &[String]) {
    if names.is_empty() {
        return;
    }
    let is_session = |pair: &str| {
        let name = pair.split_once('=').map_or(pair, |(n, _)| n);
        names.iter().any(|s| s.eq_ignore_ascii_case(name))
    };
    if url.path().contains(';') {
        let path = url.path();
        let kept: Vec<String> = path
            .split('/')
            .map(|segment| {
                let mut parts = segment.split(';');
                let mut out = parts.next().unwrap_or_default().to_owned();
                for p in parts.filter(|p| !is_session(p)) {
                    out.push(';');
                    out.push_str(p);
                }
                out
            })
            .collect();
        let stripped = kept.join("/");
        if stripped != path {
            url.set_path(&stripped);
        }
    }
    if let Some(query) = url.query() {
        if query.split('&').any(is_session) {
            let kept: Vec<&str> = query.split('&').filter(|p| !is_session(p)).collect();
            let kept = kept.join("&");
            url.set_query(if kept.is_empty() { None } else { Some(&kept) });
        }
    }
}

/// Parses `text` (a seed, a redirect `Location`) against `base` and canonicalizes it.
pub fn parse(text: &str, base: Option<&Url>, config: &CanonConfig) -> Result<Url, Rejected> {
    let url = Url::options().base_url(base).parse(text)?;
    canonicalize(url, config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_dots_and_errors() {
        let c = CanonConfig::default();
        let url = parse("HTTP://WWW.Example.TEST.:80/a/../b#f", None, &c).unwrap();
        assert_eq!(url.as_str(), "http://www.example.test/b");
        assert_eq!(
            parse("http://./", None, &c),
            Err(Rejected::Parse(url::ParseError::EmptyHost))
        );
        assert!(matches!(parse("ftp://x.test/", None, &c), Err(Rejected::Scheme(s)) if s == "ftp"));
    }

    #[test]
    fn session_ids_are_removed() {
        let c = CanonConfig::default();
        let p = |u: &str| parse(u, None, &c).unwrap().to_string();
        for (from, to) in [
            ("http://a.test/p3.html?sid=00ff", "http://a.test/p3.html"),
            ("http://a.test/p?SID=1&a=2", "http://a.test/p?a=2"),
            ("http://a.test/p?a=2&PHPSESSID=x&b", "http://a.test/p?a=2&b"),
            ("http://a.test/p?sessionid=&session_id=9", "http://a.test/p"),
            (
                "http://a.test/p.jsp;jsessionid=ABC123?x=1",
                "http://a.test/p.jsp?x=1",
            ),
            (
                "http://a.test/d;JSESSIONID=1/p;v=2",
                "http://a.test/d/p;v=2",
            ),
            (
                "http://a.test/p;a=1;jsessionid=x;b",
                "http://a.test/p;a=1;b",
            ),
            ("http://a.test/p?jsessionid=x#frag", "http://a.test/p"),
            // Names that only contain a session name stay.
            (
                "http://a.test/p?side=1&sids=2",
                "http://a.test/p?side=1&sids=2",
            ),
            ("http://a.test/p?", "http://a.test/p?"),
            ("http://a.test/p;x", "http://a.test/p;x"),
        ] {
            assert_eq!(p(from), to, "{from}");
        }
        let none = CanonConfig {
            session_params: Vec::new(),
            ..CanonConfig::default()
        };
        assert_eq!(
            parse("http://a.test/p?sid=1", None, &none)
                .unwrap()
                .as_str(),
            "http://a.test/p?sid=1"
        );
        let custom = CanonConfig {
            session_params: vec!["token".into()],
            ..CanonConfig::default()
        };
        assert_eq!(
            parse("http://a.test/p?token=1&sid=2", None, &custom)
                .unwrap()
                .as_str(),
            "http://a.test/p?sid=2"
        );
    }
}
