//! Servers that ask for less: a 429 Too Many Requests or 503 Service Unavailable
//! answer to a page backs its host off, and the URL is tried again later.
//!
//! - The wait: the answer's `Retry-After` (seconds or an HTTP-date, parsed by the
//!   downloader), capped at `throttle_max_ms`; without a usable one,
//!   `max(interval, throttle_min_ms)` doubled per such answer in a row, with up to
//!   a quarter of jitter (from a hash of the host and the time, so hosts throttled
//!   together do not come back together), capped the same way. Never less than the
//!   host's interval. Only this host rests: its IP and every other host go on.
//! - The URL: the answer counts as one try. With tries left it goes back to the head
//!   of its host's queue (durably, like a connect failure's), so nothing is lost;
//!   at the last try (`max_url_attempts`) the stored answer is its page.
//! - Any other answer from the host ends the run of 429/503 answers.
//!
//! The back-off lives in memory only (a restarted manager rests every host one
//! interval, then asks again; a server that still wants less says so). The admin
//! page lists backed-off hosts with their reason and until when
//! ([`Frontier::backed_off_hosts`]: O(hosts in memory) per call, for the admin
//! status only). This module must never read the page: the answer's status and
//! `Retry-After` are all it needs.

use spool::protocol::{BackOffReason, BackedOffHost, StoredPage};

use super::hosts::HostState;
use super::report::Finished;
use super::store::Batch;
use super::{Frontier, FrontierError};
use crate::politeness;

/// A host's current run of 429/503 answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Throttle {
    /// The last answer's status (429 or 503).
    pub status: u16,
    /// The wait its `Retry-After` asked for (ms, before the cap), if it had one.
    pub retry_after_ms: Option<u64>,
    /// Such answers in a row.
    pub in_row: u32,
}

/// Whether a stored answer with `status` asks the crawler to slow down.
pub(crate) fn is_throttle(status: u16) -> bool {
    status == 429 || status == 503
}

/// splitmix64: the jitter of one back-off.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Frontier {
    /// Page job `done` was answered 429 or 503 (`page`): back the host off and try
    /// the URL again later, or keep the answer as its page at the last try. Returns
    /// whether the answer became the URL's page (counted; its batch must be
    /// committed, or the URL is queued again: `requeue`).
    pub(crate) fn page_throttled(
        &mut self,
        done: &Finished,
        page: &StoredPage,
        now_ms: u64,
    ) -> Result<bool, FrontierError> {
        let id = done.host;
        let mut batch = Batch::default();
        let mut is_page = false;
        if let Some(seq) = done.out.seq {
            let tries = done.out.tries + 1;
            match &done.app {
                Some(app) if tries >= self.config.max_url_attempts => {
                    self.url_fetched(id, seq, app, &mut batch);
                    is_page = true;
                }
                // Its own batch, committed at once; this one starts after it.
                _ => self.put_back(id, seq, tries)?,
            }
        }
        let Some(host) = self.hosts.get(id) else {
            self.commit(batch)?;
            return Ok(is_page);
        };
        let interval = self.interval_of(host);
        let in_row = host.throttle.map_or(0, |t| t.in_row).saturating_add(1);
        let retry_after_ms = page.retry_after.map(|r| r.wait_ms(now_ms));
        let wait = match retry_after_ms {
            Some(asked) => politeness::retry_after_ms(&self.config, asked),
            None => {
                let jitter = mix(id ^ now_ms.rotate_left(20) ^ u64::from(in_row));
                politeness::throttle_backoff_ms(&self.config, interval, in_row, jitter)
            }
        };
        let until = politeness::rest_until(now_ms, wait.max(interval));
        if let Some(host) = self.hosts.get_mut(id) {
            host.next_allowed_ms = host.next_allowed_ms.max(until);
            host.throttle = Some(Throttle {
                status: page.status,
                retry_after_ms,
                in_row,
            });
            if wait > super::queue::READ_AHEAD_MAX_REST_MS {
                host.buffer.clear(); // Resting long: free the read-ahead.
            }
            tracing::debug!(host = %host.origin, status = page.status, ?retry_after_ms,
                in_row, wait_ms = wait, "server asks for less; backing off");
        }
        self.save_host(id, &mut batch);
        self.advance(id, now_ms, &mut batch)?;
        self.commit(batch)?;
        Ok(is_page)
    }

    /// Hosts resting longer than their interval at `now_ms` (throttled or failing),
    /// those whose rest ends last first, at most `limit`. O(hosts in memory).
    pub fn backed_off_hosts(&self, now_ms: u64, limit: usize) -> Vec<BackedOffHost> {
        let mut out: Vec<BackedOffHost> = self
            .hosts
            .iter()
            .filter(|h| h.state() == HostState::BackedOff && h.next_allowed_ms > now_ms)
            .filter_map(|h| {
                let reason = match (h.throttle, h.failures) {
                    (_, count) if count > 0 => BackOffReason::Failures { count },
                    (Some(t), _) => BackOffReason::Throttled {
                        status: t.status,
                        retry_after_ms: t.retry_after_ms,
                        in_row: t.in_row,
                    },
                    (None, _) => return None,
                };
                Some(BackedOffHost {
                    origin: h.origin.to_string(),
                    reason,
                    until_ms: h.next_allowed_ms,
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.until_ms
                .cmp(&a.until_ms)
                .then_with(|| a.origin.cmp(&b.origin))
        });
        out.truncate(limit);
        out
    }
}
