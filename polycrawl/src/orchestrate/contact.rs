//! The operator's contact in the User-Agent: site operators need a URL or an address
//! to reach whoever runs a crawl (Heritrix will not start a job without one), so
//! `polycrawl crawl` refuses to start, before any process or request, when a seed
//! lies outside this machine and the names reserved for testing and the user agent
//! names no contact.
//!
//! - A contact is `+http://...` or `+https://...` (the convention of the big
//!   crawlers' agents: `(+https://example.org/bot.html)`) or `mailto:...@...`.
//! - A seed is local when its host is a loopback address (127.0.0.0/8, `::1`),
//!   `localhost`, or a name under a TLD reserved for testing (RFC 2606 and 6761:
//!   `.test`, `.example`, `.invalid`, `.localhost`): websim's hosts are all so, and
//!   the demo and the tests run with the default agent.
//!
//! The default agent stays `polycrawl/<version>`: a default cannot name the
//! operator, and a made-up contact would send complaints nowhere. This module
//! must never make a request or resolve a name: it reads the seeds file only.

use std::net::IpAddr;

use url::{Host, Url};

/// TLDs reserved for testing (RFC 2606, RFC 6761).
const TEST_TLDS: [&str; 4] = ["test", "example", "invalid", "localhost"];

/// Whether `agent` names a contact: `+http(s)://X` or `mailto:X@Y`.
pub fn has_contact(agent: &str) -> bool {
    let url = ["+http://", "+https://"].iter().any(|p| {
        agent
            .match_indices(p)
            .any(|(i, _)| agent[i + p.len()..].starts_with(|c: char| c.is_ascii_alphanumeric()))
    });
    let mail = agent.match_indices("mailto:").any(|(i, _)| {
        let rest = agent[i + "mailto:".len()..]
            .split([' ', ')', ';', ','])
            .next()
            .unwrap_or("");
        rest.split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && host.contains('.'))
    });
    url || mail
}

/// Whether `host` is this machine or a name reserved for testing.
fn is_local(host: &Host<&str>) -> bool {
    match host {
        Host::Ipv4(ip) => IpAddr::V4(*ip).is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
        Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            let tld = name.rsplit('.').next().unwrap_or("");
            TEST_TLDS.contains(&tld)
        }
    }
}

/// The first seed of `seeds` (one URL a line; blank lines and `#` comments
/// skipped) whose host is neither loopback nor a test name. Lines that are no
/// URL are left to the application, which reports them.
pub fn first_remote_seed(seeds: &str) -> Option<&str> {
    seeds
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .find(|l| {
            Url::parse(l)
                .ok()
                .and_then(|u| u.host().map(|h| !is_local(&h)))
                .unwrap_or(false)
        })
}

/// Refuses a crawl of `seeds` with `agent` when a seed is remote and the agent
/// names no contact: the one line that says what to set.
pub fn check(agent: &str, seeds: &str) -> Result<(), String> {
    match first_remote_seed(seeds) {
        Some(seed) if !has_contact(agent) => Err(format!(
            "the user agent {agent:?} names no contact, and seed {seed} is on the open web: \
             set downloader.user_agent to one with a URL or address site operators can reach \
             you at, e.g. \"{agent} (+https://your.site/crawler; mailto:you@your.site)\""
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contacts_are_urls_with_a_plus_or_mail_addresses() {
        for yes in [
            "polycrawl/0.1 (+https://example.org/crawler)",
            "polycrawl/0.1 (+http://example.org)",
            "polycrawl/0.1 (mailto:ops@example.org)",
            "polycrawl/0.1; mailto:a@b.c",
        ] {
            assert!(has_contact(yes), "{yes}");
        }
        for no in [
            "polycrawl/0.1.0",
            "polycrawl/0.1 (https://example.org)",
            "polycrawl/0.1 (+https://)",
            "polycrawl/0.1 (mailto:)",
            "polycrawl/0.1 (mailto:nobody)",
            "polycrawl/0.1 (mailto:@example.org)",
        ] {
            assert!(!has_contact(no), "{no}");
        }
    }

    #[test]
    fn loopback_and_test_names_are_local() {
        let local = "# websim\nhttp://www.acme1.test/\n\nhttps://127.1.0.3:8443/x\n\
                     http://[::1]/\nhttp://localhost:8080/\nhttp://a.example./\nnot a url\n";
        assert_eq!(first_remote_seed(local), None);
        assert!(check("polycrawl/0.1.0", local).is_ok());
        let mixed = format!("{local}http://www.example.com/\nhttp://10.0.0.1/\n");
        assert_eq!(first_remote_seed(&mixed), Some("http://www.example.com/"));
        assert_eq!(
            first_remote_seed("http://10.0.0.1/"),
            Some("http://10.0.0.1/")
        );
        let err = check("polycrawl/0.1.0", &mixed).unwrap_err();
        assert!(err.contains("set downloader.user_agent"), "{err}");
        assert!(!err.contains('\n'));
        assert!(check("polycrawl/0.1 (+https://ops.example.org/)", &mixed).is_ok());
    }
}
