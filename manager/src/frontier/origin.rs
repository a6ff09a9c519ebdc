//! From a requested URL to its origin (scheme, host, port): the unit of queues,
//! robots.txt and per-host politeness.
//!
//! URLs are parsed with the `url` crate (WHATWG rules: IDNA to punycode, lower-case
//! host, default ports dropped). Only absolute `http` and `https` URLs with a host
//! are crawlable; anything else ends with the `invalid_url` outcome. This module must
//! never do I/O.

use std::net::IpAddr;

use url::{Host, Url};

/// The origin of a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    /// `scheme://host[:port]` (default port omitted), as the `url` crate serializes an
    /// origin: the host dictionary's key.
    pub key: String,
    /// The host name to resolve, or the IP literal (IPv6 without brackets).
    pub name: String,
    /// The port to connect to (explicit, or 80/443).
    pub port: u16,
}

impl Origin {
    /// The IP address, when the host is an IP literal (no DNS needed).
    pub fn literal_ip(name: &str) -> Option<IpAddr> {
        name.parse().ok()
    }

    /// `<origin>/robots.txt`.
    pub fn robots_url(key: &str) -> String {
        format!("{key}/robots.txt")
    }
}

/// The origin of `url`, or why it cannot be crawled.
pub(crate) fn origin_of(url: &str) -> Result<Origin, String> {
    let parsed = Url::parse(url).map_err(|e| format!("unparseable URL: {e}"))?;
    origin_of_parsed(&parsed)
}

/// The origin of an already parsed URL.
pub(crate) fn origin_of_parsed(parsed: &Url) -> Result<Origin, String> {
    match parsed.scheme() {
        "http" | "https" => {}
        other => return Err(format!("unsupported scheme {other:?}")),
    }
    let name = match parsed.host() {
        Some(Host::Domain(d)) => d.trim_end_matches('.').to_owned(),
        Some(Host::Ipv4(ip)) => ip.to_string(),
        Some(Host::Ipv6(ip)) => ip.to_string(),
        None => return Err("URL has no host".to_owned()),
    };
    if name.is_empty() {
        return Err("URL has an empty host".to_owned());
    }
    let port = parsed
        .port_or_known_default()
        .ok_or_else(|| "URL has no port".to_owned())?;
    Ok(Origin {
        key: parsed.origin().ascii_serialization(),
        name,
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_host_port() {
        let o = origin_of("HTTP://WWW.Example.COM/a?b").unwrap();
        assert_eq!(o.key, "http://www.example.com");
        assert_eq!((o.name.as_str(), o.port), ("www.example.com", 80));
        let o = origin_of("https://example.com:8443/").unwrap();
        assert_eq!(o.key, "https://example.com:8443");
        assert_eq!(o.port, 8443);
        let o = origin_of("http://[::1]:8080/x").unwrap();
        assert_eq!(o.name, "::1");
        assert_eq!(Origin::literal_ip(&o.name), Some("::1".parse().unwrap()));
        let o = origin_of("https://bücher.example/").unwrap();
        assert_eq!(o.name, "xn--bcher-kva.example");
        assert_ne!(
            origin_of("http://a.com/").unwrap().key,
            origin_of("https://a.com/").unwrap().key
        );
        assert_eq!(
            Origin::robots_url(&o.key),
            "https://xn--bcher-kva.example/robots.txt"
        );
    }

    #[test]
    fn only_http_urls_with_a_host_are_crawlable() {
        for bad in [
            "ftp://a.com/",
            "mailto:x@a.com",
            "/relative",
            "http://",
            "not a url",
        ] {
            assert!(origin_of(bad).is_err(), "{bad}");
        }
    }
}
