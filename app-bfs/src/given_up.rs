//! [`GivenUp`]: the hosts the manager gave up on, for the summary. A host that
//! refuses connections, accepts and never answers, or whose robots.txt keeps
//! answering 5xx or nothing is retried within the manager's bounds
//! (`manager.frontier.max_failures`, `host_retry_window_ms`), then every URL of
//! it ends with the outcome `too_many_failures`, whose detail says which bound
//! ended it, after how many tries over how long, and what the last failure was.
//! This module reads those outcomes and keeps, per host (origin), the number of
//! its URLs that ended so and that detail, so the summary names each host with
//! its reason.
//!
//! Memory: at most [`MAX_NAMED`] hosts (the first given up), each its origin and
//! one detail (a few hundred bytes); URLs of further hosts are only counted. It is
//! a statistic of this run (not saved): a resumed crawl names the hosts given up
//! since it resumed. It must never decide anything about the crawl.

use std::collections::BTreeMap;
use std::fmt;

use spool::OutcomeReason;
use url::Url;

/// Most hosts named in the summary.
pub const MAX_NAMED: usize = 20;

/// One host given up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenUpHost {
    /// Its URLs that ended with `too_many_failures` in this run.
    pub urls: u64,
    /// The detail of its first such outcome: the bound, the tries, the last
    /// failure.
    pub why: String,
}

/// The hosts given up on in this run (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GivenUp {
    /// The first [`MAX_NAMED`] hosts, by origin (`http://host:port`).
    pub named: BTreeMap<String, GivenUpHost>,
    /// URLs of hosts beyond those, given up too.
    pub more_urls: u64,
}

impl GivenUp {
    /// Notes one outcome (any reason: only `too_many_failures` counts). O(log
    /// [`MAX_NAMED`]).
    pub fn note(&mut self, reason: OutcomeReason, url: &str, detail: &str) {
        if reason != OutcomeReason::TooManyFailures {
            return;
        }
        let origin =
            Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.origin().ascii_serialization());
        if let Some(host) = self.named.get_mut(&origin) {
            host.urls += 1;
        } else if self.named.len() < MAX_NAMED {
            let why = detail.trim().to_owned();
            self.named.insert(origin, GivenUpHost { urls: 1, why });
        } else {
            self.more_urls += 1;
        }
    }

    /// Whether no host was given up on.
    pub fn is_empty(&self) -> bool {
        self.named.is_empty()
    }
}

/// `hosts given up: ORIGIN (N URLs: DETAIL); ...`, plus the URLs of hosts not
/// named; nothing when none was given up.
impl fmt::Display for GivenUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return Ok(());
        }
        let hosts: Vec<String> = self
            .named
            .iter()
            .map(|(origin, h)| format!("{origin} ({} URLs: {})", h.urls, h.why))
            .collect();
        write!(
            f,
            "{} hosts given up: {}",
            self.named.len(),
            hosts.join("; ")
        )?;
        if self.more_urls > 0 {
            write!(f, "; and {} URLs of further hosts", self.more_urls)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_host_once_with_its_reason() {
        let mut g = GivenUp::default();
        assert_eq!(g.to_string(), "");
        let why = "given up after 2 failed tries in 60.000 s (next try past \
                   host_retry_window_ms 120000); last: robots.txt unreachable: \
                   robots.txt status 503";
        g.note(OutcomeReason::TooManyFailures, "http://a.test:8080/", why);
        g.note(
            OutcomeReason::TooManyFailures,
            "http://a.test:8080/p1",
            "other",
        );
        g.note(OutcomeReason::DnsFailure, "http://b.test/", "no such name");
        g.note(
            OutcomeReason::TooManyFailures,
            "https://c.test/x",
            "refused",
        );
        assert_eq!(
            g.to_string(),
            format!(
                "2 hosts given up: http://a.test:8080 (2 URLs: {why}); https://c.test (1 URLs: refused)"
            )
        );
    }

    #[test]
    fn names_at_most_max_named_hosts() {
        let mut g = GivenUp::default();
        for k in 0..MAX_NAMED + 3 {
            let url = format!("http://h{k}.test/");
            g.note(OutcomeReason::TooManyFailures, &url, "x");
            g.note(OutcomeReason::TooManyFailures, &url, "x");
        }
        assert_eq!(g.named.len(), MAX_NAMED);
        assert_eq!(g.more_urls, 6);
        assert!(g.to_string().ends_with("; and 6 URLs of further hosts"));
    }
}
