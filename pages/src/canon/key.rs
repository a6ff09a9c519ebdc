//! Host-reversed keys: the form in which canonical URLs are sorted, stored in the
//! seen set and dealt by the unshuffle.
//!
//! ```text
//! key    = host path [ "?" query ] [ "#" scheme [ ":" port ] ]
//! host   = domain labels in reverse order | IPv4 as is | [IPv6] as is
//! ```
//!
//! | URL                                  | key                                |
//! |--------------------------------------|------------------------------------|
//! | `https://www.acme17.test/a?q=1`      | `test.acme17.www/a?q=1`            |
//! | `http://www.acme17.test/a?q=1`       | `test.acme17.www/a?q=1#http`       |
//! | `http://www.acme17.test:8080/a`      | `test.acme17.www/a#http:8080`      |
//! | `https://www.acme17.test:8443/`      | `test.acme17.www/#https:8443`      |
//! | `https://127.0.0.1/x`                | `127.0.0.1/x`                      |
//!
//! https on its default port is unmarked because it is most of the web; anything
//! else is marked after a `#`, which a canonical URL never contains (the fragment is
//! removed). The marker goes last, not next to the host (`www:8080/`), because `/`
//! is the only byte that sorts between `.` and the characters a host can continue
//! with: keys of a host (`test.acme17.www/...`) and of its subdomains
//! (`test.acme17.www.sub/...`) are then one contiguous run when sorted, and
//! `test.acme17.www2/...` cannot fall inside it. The same URL over http and https
//! sorts side by side. IP addresses are not reversed (their first label is a digit,
//! which no domain's last label is in the URL Standard, so the inverse can tell).

use std::fmt::Write as _;

use url::{Host, Url};

/// Why a string is not a key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No `/` after the host.
    #[error("key has no path")]
    NoPath,
    /// The marker after `#` is not `http`, `https`, or one of them with `:port`.
    #[error("bad scheme marker {0:?}")]
    Marker(String),
    /// The rebuilt URL does not parse.
    #[error("key does not make a URL: {0}")]
    Url(#[from] url::ParseError),
}

/// The host-reversed key of a canonical http(s) URL.
pub fn reversed_host_key(url: &Url) -> String {
    let mut key = String::with_capacity(url.as_str().len());
    write_reversed_host_key(url, &mut key);
    key
}

/// Appends the key of `url` to `out` (reuse `out` to avoid an allocation per URL).
pub fn write_reversed_host_key(url: &Url, out: &mut String) {
    match url.host() {
        Some(Host::Domain(domain)) => {
            for (i, label) in domain.rsplit('.').enumerate() {
                if i > 0 {
                    out.push('.');
                }
                out.push_str(label);
            }
        }
        Some(Host::Ipv4(_) | Host::Ipv6(_)) => out.push_str(url.host_str().unwrap_or_default()),
        None => {}
    }
    out.push_str(url.path());
    if let Some(query) = url.query() {
        out.push('?');
        out.push_str(query);
    }
    match (url.scheme(), url.port()) {
        ("https", None) => {}
        (scheme, None) => {
            out.push('#');
            out.push_str(scheme);
        }
        (scheme, Some(port)) => {
            // Writing to a String cannot fail.
            let _ = write!(out, "#{scheme}:{port}");
        }
    }
}

/// The URL a key was made from: the inverse of [`reversed_host_key`].
pub fn url_from_key(key: &str) -> Result<Url, KeyError> {
    let (main, marker) = key.split_once('#').unwrap_or((key, ""));
    let (scheme, port) = match marker {
        "" => ("https", None),
        m => {
            let (scheme, port) = m.split_once(':').map_or((m, None), |(s, p)| (s, Some(p)));
            let bad = || KeyError::Marker(m.to_owned());
            if !matches!(scheme, "http" | "https") {
                return Err(bad());
            }
            let port = port
                .map(|p| p.parse::<u16>().map_err(|_| bad()))
                .transpose()?;
            (scheme, port)
        }
    };
    let slash = main.find('/').ok_or(KeyError::NoPath)?;
    let (host, rest) = main.split_at(slash);
    let mut text = String::with_capacity(key.len() + 16);
    text.push_str(scheme);
    text.push_str("://");
    if host.starts_with('[') || host.split('.').next().is_some_and(is_number) {
        text.push_str(host);
    } else {
        for (i, label) in host.rsplit('.').enumerate() {
            if i > 0 {
                text.push('.');
            }
            text.push_str(label);
        }
    }
    if let Some(port) = port {
        let _ = write!(text, ":{port}");
    }
    text.push_str(rest);
    Ok(Url::parse(&text)?)
}

fn is_number(label: &str) -> bool {
    !label.is_empty() && label.bytes().all(|b| b.is_ascii_digit())
}
