//! URL canonicalization: one spelling per resource, so the seen set sees one URL.
//!
//! The `url` crate (WHATWG URL Standard) already lower-cases scheme and host, maps
//! international hosts to punycode (IDNA), drops default ports, resolves `.` and
//! `..` (also `%2e`), turns an empty path into `/` and percent-encodes spaces,
//! controls and non-ASCII as UTF-8. [`canonicalize`] adds:
//!
//! - the fragment is removed;
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

/// Canonicalization settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanonConfig {
    /// Longest canonical URL kept, in bytes. Default [`DEFAULT_MAX_URL_LEN`].
    pub max_len: usize,
    /// Keep hosts without a dot (`localhost`). Default false.
    pub allow_single_label_hosts: bool,
}

impl Default for CanonConfig {
    fn default() -> CanonConfig {
        CanonConfig {
            max_len: DEFAULT_MAX_URL_LEN,
            allow_single_label_hosts: false,
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
    let len = url.as_str().len();
    if len > config.max_len {
        return Err(Rejected::TooLong {
            len,
            max: config.max_len,
        });
    }
    Ok(())
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
}
