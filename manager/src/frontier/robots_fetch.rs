//! robots.txt fetches: what their results mean for a host (RFC 9309 section 2.3.1,
//! through [`RobotsPolicy::from_fetch`]).
//!
//! - 2xx: the body (read from `robots/` by the service) is parsed; cached 24 h, also
//!   in RocksDB (`origin`), so a host that comes back or a restarted manager does not
//!   fetch it again.
//! - 3xx with a `Location`: followed, up to `robots_max_redirects` (5). Each hop is a
//!   new robots job, subject to the host's politeness. A target on the same host name
//!   uses the host's address; a target on another name is resolved first, and its
//!   robots.txt then applies to *this* host (RFC 9309 section 2.3.1.2 says redirects
//!   are followed across hosts too; `http://a/robots.txt -> https://a/robots.txt` and
//!   `a -> www.a` are the common cases). Too many hops, a missing or unparseable
//!   `Location`, or a target that does not resolve: robots.txt is unavailable, i.e.
//!   allow all (as RFC 9309 lets us). A hop to another origin is paced by that
//!   origin's politeness, not only the host's (see `borrowed`).
//! - 4xx (but 429): allow all, cached.
//! - 5xx, 429, a network failure, or a 2xx whose body the service could not read:
//!   unreachable. Nothing of the host is fetched (complete disallow), the host backs
//!   off as after any failure and robots.txt is fetched again; after `max_failures`
//!   its URLs end with `too_many_failures`.
//!
//! A fetched 2xx robots.txt's `Sitemap:` URLs (at most [`MAX_SITEMAPS_PER_HOST`],
//! resolved against the robots.txt URL, http(s) only) are reported to the
//! application of the host's head URL as `sitemap` lines of its outcome file, with
//! the depth of that URL plus one, in the same RocksDB batch as the verdict (so a
//! crash loses none and repeats none); see [`OutcomeReason::Sitemap`]. What to do
//! with them (request them as links, or not) is the application's business. A
//! verdict read back from the cache reports nothing again; a refetch after the TTL
//! reports them again (the application's seen set drops the repeats).
//!
//! This module must never do I/O other than through the store; the body arrives as
//! bytes.

use std::sync::Arc;

use spool::OutcomeReason;
use spool::protocol::{FetchPurpose, JobId};
use url::Url;

use super::hosts::{HostId, RobotsChase, RobotsInForce};
use super::origin::{Origin, origin_of_parsed};
use super::records::{CachedRobots, PendingOutcome};
use super::store::{Batch, Cf};
use super::{Frontier, FrontierError};
use crate::politeness;
use crate::robots::{MAX_ROBOTS_BYTES, RobotsPolicy};

/// Most `Sitemap:` URLs of one robots.txt reported (the rest are ignored).
pub const MAX_SITEMAPS_PER_HOST: usize = 100;

/// Longest `Sitemap:` URL reported, in bytes (a longer one is ignored).
const MAX_SITEMAP_URL_BYTES: usize = 4096;

impl Frontier {
    /// A robots.txt response was stored: `status`, the body (the service reads it from
    /// the `robots/` file named in the report; `None` if it could not), and the
    /// `Location` of a 3xx. Returns false if `job` is not a robots job in flight.
    pub fn on_robots_fetched(
        &mut self,
        job: JobId,
        status: u16,
        body: Option<&[u8]>,
        location: Option<&str>,
        now_ms: u64,
    ) -> Result<bool, FrontierError> {
        let Some(id) = self
            .finish_job(job, FetchPurpose::Robots, now_ms)
            .map(|d| d.host)
        else {
            return Ok(false);
        };
        let mut batch = Batch::default();
        let redirect = (300..400).contains(&status).then_some(location).flatten();
        match (redirect, body) {
            (Some(location), _) => self.follow_redirect(id, location, now_ms, &mut batch)?,
            (None, None) if (200..300).contains(&status) => {
                let detail = format!("robots.txt body of status {status} could not be read");
                self.robots_unreachable(id, &detail, now_ms, &mut batch)?;
            }
            (None, body) => {
                let body = body.unwrap_or_default();
                let body = &body[..body.len().min(MAX_ROBOTS_BYTES)];
                let mut policy = RobotsPolicy::from_fetch(status, body, &self.config.robots_agent);
                if let RobotsPolicy::Rules(robots) = &mut policy {
                    // The cache keeps only the rules.
                    let sitemaps = robots.take_sitemaps();
                    self.report_sitemaps(id, &sitemaps, now_ms, &mut batch)?;
                }
                if policy == RobotsPolicy::DisallowAll {
                    let detail = format!("robots.txt status {status}");
                    self.robots_unreachable(id, &detail, now_ms, &mut batch)?;
                } else {
                    let keep = matches!(policy, RobotsPolicy::Rules(_)).then(|| body.to_vec());
                    self.install_robots(id, policy, keep, now_ms, &mut batch)?;
                }
            }
        }
        self.commit(batch)?;
        Ok(true)
    }

    /// Reports the `Sitemap:` URLs of host `id`'s robots.txt to the application of
    /// its head URL (see the module docs). O(sitemaps).
    fn report_sitemaps(
        &mut self,
        id: HostId,
        sitemaps: &[String],
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        if sitemaps.is_empty() {
            return Ok(());
        }
        self.fill_buffer(id)?;
        let Some(host) = self.hosts.get(id) else {
            return Ok(());
        };
        let Some((_, head)) = host.buffer.front() else {
            return Ok(());
        };
        let (app, depth) = (head.app.clone(), head.depth.unwrap_or(0));
        let base = host
            .chase
            .url
            .clone()
            .unwrap_or_else(|| Origin::robots_url(&host.origin));
        let Ok(base) = Url::parse(&base) else {
            return Ok(());
        };
        let detail = spool::outcome::sitemap_detail(depth.saturating_add(1));
        for listed in sitemaps.iter().take(MAX_SITEMAPS_PER_HOST) {
            let Ok(url) = base.join(listed.trim()) else {
                continue;
            };
            if !matches!(url.scheme(), "http" | "https")
                || url.as_str().len() > MAX_SITEMAP_URL_BYTES
            {
                continue;
            }
            let outcome = PendingOutcome {
                app: app.clone(),
                url: url.into(),
                reason: OutcomeReason::Sitemap,
                detail: detail.clone(),
            };
            self.outcomes.add(batch, outcome, now_ms);
        }
        Ok(())
    }

    /// Follows a robots.txt redirect, or gives up (allow all).
    fn follow_redirect(
        &mut self,
        id: HostId,
        location: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let max = self.config.robots_max_redirects;
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(());
        };
        let current = host
            .chase
            .url
            .clone()
            .unwrap_or_else(|| Origin::robots_url(&host.origin));
        let target = Url::parse(&current)
            .and_then(|base| base.join(location))
            .ok()
            .and_then(|url| origin_of_parsed(&url).ok().map(|o| (url, o)));
        let Some((url, origin)) = target.filter(|_| host.chase.redirects < max) else {
            tracing::debug!(host = %host.origin, location, "robots.txt redirect not followed");
            return self.install_robots(id, RobotsPolicy::AllowAll, None, now_ms, batch);
        };
        let other_name =
            (origin.name != *host.name).then(|| Arc::<str>::from(origin.name.as_str()));
        let other_origin =
            (origin.key != *host.origin).then(|| Arc::<str>::from(origin.key.as_str()));
        host.chase = RobotsChase {
            url: Some(url.to_string()),
            redirects: host.chase.redirects + 1,
            name: other_name,
            addr: None,
            port: Some(origin.port),
            origin: other_origin,
        };
        // The next hop is another request, possibly to the same server: rest first.
        let interval = self.interval_of(self.hosts.get(id).expect("checked above"));
        if let Some(host) = self.hosts.get_mut(id) {
            host.next_allowed_ms = politeness::rest_until(now_ms, interval);
        }
        self.advance(id, now_ms, batch)
    }

    /// robots.txt could not be fetched: complete disallow for now, back off, retry.
    pub(crate) fn robots_unreachable(
        &mut self,
        id: HostId,
        detail: &str,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        if let Some(host) = self.hosts.get_mut(id) {
            host.robots = None;
            host.chase = RobotsChase::default();
        }
        let detail = format!("robots.txt unreachable: {detail}");
        if !self.host_failed(id, OutcomeReason::TooManyFailures, &detail, now_ms, batch)? {
            self.advance(id, now_ms, batch)?;
        }
        Ok(())
    }

    /// A robots.txt verdict for host `id`: in force for `robots_ttl_ms`, cached in the
    /// `origin` family with the 2xx `body`; the host then rests its interval.
    pub(crate) fn install_robots(
        &mut self,
        id: HostId,
        policy: RobotsPolicy,
        body: Option<Vec<u8>>,
        now_ms: u64,
        batch: &mut Batch,
    ) -> Result<(), FrontierError> {
        let expires_ms = now_ms.saturating_add(self.config.robots_ttl_ms);
        let Some(host) = self.hosts.get_mut(id) else {
            return Ok(());
        };
        host.robots = Some(RobotsInForce {
            policy: Arc::new(policy),
            expires_ms,
        });
        host.chase = RobotsChase::default();
        host.failures = 0;
        let origin = host.origin.clone();
        self.counters.robots_fetched += 1;
        let mut record = self.origin_record(&origin)?;
        record.robots = Some(CachedRobots { expires_ms, body });
        batch.put(Cf::Origin, origin.as_bytes().to_vec(), &record);
        let interval = self.interval_of(self.hosts.get(id).expect("checked above"));
        if let Some(host) = self.hosts.get_mut(id) {
            host.next_allowed_ms = host
                .next_allowed_ms
                .max(politeness::rest_until(now_ms, interval));
        }
        self.save_host(id, batch);
        self.advance(id, now_ms, batch)
    }
}
