//! Throttling hosts (`--throttle`): servers that ask the crawler for less. With the
//! flag, the three most popular hosts (popularity ranks 0, 1 and 2 in `hosts.tsv`:
//! seeds, never dead, slow or robots-5xx) answer some of their page requests with
//! 429 Too Many Requests or 503 Service Unavailable instead of the page:
//!
//! | rank | kind | page requests answered so (the host's n-th, counting from 1) |
//! |---|---|---|
//! | 0 | [`Throttling::RetryAfter`] | the 2nd and the 4th: 429 with `Retry-After: 5` ([`RETRY_AFTER_SECS`]) |
//! | 1 | [`Throttling::SlowDown`] | the 2nd, 3rd and 4th: 429 without `Retry-After` |
//! | 2 | [`Throttling::Burst`] | the 2nd, 3rd and 4th: 503 without `Retry-After` (a burst of unavailability) |
//!
//! Only replies that would be a generated page count (robots.txt, redirects and
//! 404s are served as always), so a crawler that backs off and tries again gets
//! every page in the end, except where its own retry budget runs out first (a URL
//! answered 429 on every try). The manifest is the same web's: it says what a
//! correct crawl fetches, not how often it had to ask. Without the flag nothing
//! changes.
//!
//! This module must never sleep or hold a request: it only picks the answer. State:
//! one counter per throttling host.

use std::sync::atomic::{AtomicU32, Ordering};

use super::model::Web;

/// The `Retry-After` seconds of [`Throttling::RetryAfter`].
pub const RETRY_AFTER_SECS: u32 = 5;

/// How a throttling host asks for less.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttling {
    /// 429 with `Retry-After: 5` to its 2nd and 4th page requests.
    RetryAfter,
    /// 429 without `Retry-After` to its 2nd, 3rd and 4th page requests.
    SlowDown,
    /// 503 without `Retry-After` to its 2nd, 3rd and 4th page requests.
    Burst,
}

impl Throttling {
    /// Every kind, by the popularity rank of its host.
    pub const ALL: [Throttling; 3] = [
        Throttling::RetryAfter,
        Throttling::SlowDown,
        Throttling::Burst,
    ];

    /// What the host's `n`-th page request (from 1) gets instead of the page:
    /// the status and the `Retry-After` seconds, if any.
    pub fn answer(self, n: u32) -> Option<(u16, Option<u32>)> {
        match self {
            Throttling::RetryAfter if n == 2 || n == 4 => Some((429, Some(RETRY_AFTER_SECS))),
            Throttling::SlowDown if (2..=4).contains(&n) => Some((429, None)),
            Throttling::Burst if (2..=4).contains(&n) => Some((503, None)),
            _ => None,
        }
    }
}

/// The throttling hosts of one web and their page-request counts.
#[derive(Debug)]
pub struct Throttled {
    /// (host index, kind, page requests so far).
    hosts: Vec<(u32, Throttling, AtomicU32)>,
}

impl Throttled {
    /// The throttling hosts of `web`: its three most popular.
    pub fn new(web: &Web) -> Throttled {
        let mut hosts = Vec::with_capacity(Throttling::ALL.len());
        for (rank, kind) in Throttling::ALL.into_iter().enumerate() {
            if let Some(h) = (0..web.hosts.len() as u32).find(|&h| {
                let host = &web.hosts[h as usize];
                host.rank == rank as u32 && !host.misbehave && host.trap.is_none()
            }) {
                hosts.push((h, kind, AtomicU32::new(0)));
            }
        }
        Throttled { hosts }
    }

    /// A page request to host `h` arrived: what it gets instead of the page, if
    /// anything (status, `Retry-After` seconds).
    pub fn on_page(&self, h: u32) -> Option<(u16, Option<u32>)> {
        let (_, kind, count) = self.hosts.iter().find(|(host, _, _)| *host == h)?;
        let n = count.fetch_add(1, Ordering::Relaxed) + 1;
        kind.answer(n)
    }

    /// The throttling hosts' indices and kinds.
    pub fn hosts(&self) -> impl Iterator<Item = (u32, Throttling)> + '_ {
        self.hosts.iter().map(|(h, k, _)| (*h, *k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Params;

    #[test]
    fn the_three_most_popular_hosts_throttle_as_documented() {
        let web = Web::new(Params {
            traps: true,
            https_port: 443,
            ..Params::new(11, 30, 300)
        });
        let t = Throttled::new(&web);
        let kinds: Vec<(u32, Throttling)> = t.hosts().collect();
        assert_eq!(kinds.len(), 3);
        for (rank, (h, kind)) in kinds.iter().enumerate() {
            assert_eq!(web.hosts[*h as usize].rank, rank as u32);
            assert_eq!(*kind, Throttling::ALL[rank]);
        }
        let (h0, h1) = (kinds[0].0, kinds[1].0);
        let first: Vec<_> = (0..6).map(|_| t.on_page(h0)).collect();
        assert_eq!(
            first,
            [
                None,
                Some((429, Some(5))),
                None,
                Some((429, Some(5))),
                None,
                None
            ]
        );
        let second: Vec<_> = (0..5).map(|_| t.on_page(h1)).collect();
        assert_eq!(
            second,
            [
                None,
                Some((429, None)),
                Some((429, None)),
                Some((429, None)),
                None
            ]
        );
        assert_eq!(Throttling::Burst.answer(3), Some((503, None)));
        let plain = (0..web.hosts.len() as u32).find(|h| kinds.iter().all(|(k, _)| k != h));
        assert_eq!(plain.and_then(|h| t.on_page(h)), None);
    }
}
