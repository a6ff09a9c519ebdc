//! What a robots.txt fetch outcome means for a host (RFC 9309 section 2.3.1).

use std::time::Duration;

use super::Robots;
use super::pattern::Target;

/// The robots.txt verdict for one host, from the status of its robots.txt fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RobotsPolicy {
    /// robots.txt is unavailable (4xx, or redirects gave up): crawl anything
    /// (section 2.3.1.3, "the crawler MAY access any resources on the server").
    AllowAll,
    /// robots.txt is unreachable (5xx, 429, network error): crawl nothing and
    /// fetch robots.txt again later (section 2.3.1.4, "the crawler MUST assume
    /// complete disallow").
    DisallowAll,
    /// robots.txt was fetched (2xx): obey its rules (section 2.3.1.1).
    Rules(Robots),
}

impl RobotsPolicy {
    /// The policy for a robots.txt response with `status` and `body`, for the
    /// crawler whose product token is `agent`.
    ///
    /// - 2xx: the body is parsed ([`Robots::parse`]).
    /// - 3xx: the caller follows redirects (at least five, across hosts too, per
    ///   section 2.3.1.2) and passes the final response here; a 3xx reaching this
    ///   function means it gave up, which section 2.3.1.2 lets us treat as
    ///   unavailable: [`AllowAll`](Self::AllowAll).
    /// - 429 Too Many Requests: [`DisallowAll`](Self::DisallowAll). The RFC's 4xx
    ///   rule is only a MAY; a host that asks us to slow down is not inviting us
    ///   to crawl everything.
    /// - other 4xx: [`AllowAll`](Self::AllowAll).
    /// - 5xx, and any status outside 100..=599: [`DisallowAll`](Self::DisallowAll);
    ///   the caller retries later. A network failure is the caller's to map to
    ///   `DisallowAll` as well.
    /// - 1xx is not a final response and is treated as unreachable.
    pub fn from_fetch(status: u16, body: &[u8], agent: &str) -> RobotsPolicy {
        match status {
            200..=299 => RobotsPolicy::Rules(Robots::parse(body, agent)),
            429 => RobotsPolicy::DisallowAll,
            300..=499 => RobotsPolicy::AllowAll,
            _ => RobotsPolicy::DisallowAll,
        }
    }

    /// Whether `path_and_query` may be fetched. `/robots.txt` itself always may,
    /// even under [`DisallowAll`](Self::DisallowAll), so it can be fetched again.
    pub fn is_allowed(&self, path_and_query: &str) -> bool {
        match self {
            RobotsPolicy::AllowAll => true,
            RobotsPolicy::DisallowAll => Target::new(path_and_query).is_robots_txt(),
            RobotsPolicy::Rules(robots) => robots.is_allowed(path_and_query),
        }
    }

    /// The `Crawl-delay` to honour, if the rules give one.
    pub fn crawl_delay(&self) -> Option<Duration> {
        match self {
            RobotsPolicy::Rules(robots) => robots.crawl_delay(),
            RobotsPolicy::AllowAll | RobotsPolicy::DisallowAll => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] = b"User-agent: *\nDisallow: /private\nCrawl-delay: 2\n";

    #[test]
    fn rfc9309_2_3_1_1_success_parses_the_body() {
        let policy = RobotsPolicy::from_fetch(200, BODY, "polycrawl");
        assert!(matches!(policy, RobotsPolicy::Rules(_)));
        assert!(!policy.is_allowed("/private/x"));
        assert!(policy.is_allowed("/public"));
        assert_eq!(policy.crawl_delay(), Some(Duration::from_secs(2)));
        assert!(matches!(
            RobotsPolicy::from_fetch(204, b"", "polycrawl"),
            RobotsPolicy::Rules(_)
        ));
    }

    #[test]
    fn rfc9309_2_3_1_3_unavailable_4xx_allows_all() {
        for status in [400, 401, 403, 404, 410, 451, 499] {
            let policy = RobotsPolicy::from_fetch(status, BODY, "polycrawl");
            assert_eq!(policy, RobotsPolicy::AllowAll, "status {status}");
            assert!(policy.is_allowed("/private/x"));
            assert_eq!(policy.crawl_delay(), None);
        }
    }

    #[test]
    fn rfc9309_2_3_1_4_unreachable_5xx_disallows_all_but_robots_txt() {
        for status in [500, 502, 503, 504, 599, 429, 0, 100, 600, u16::MAX] {
            let policy = RobotsPolicy::from_fetch(status, BODY, "polycrawl");
            assert_eq!(policy, RobotsPolicy::DisallowAll, "status {status}");
            assert!(!policy.is_allowed("/"));
            assert!(!policy.is_allowed("/public"));
            assert!(policy.is_allowed("/robots.txt"));
        }
    }

    #[test]
    fn rfc9309_2_3_1_2_redirects_given_up_are_unavailable() {
        assert_eq!(
            RobotsPolicy::from_fetch(301, b"", "polycrawl"),
            RobotsPolicy::AllowAll
        );
        assert_eq!(
            RobotsPolicy::from_fetch(308, b"", "polycrawl"),
            RobotsPolicy::AllowAll
        );
    }
}
