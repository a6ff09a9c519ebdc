//! [`FrontierConfig`]: every knob of the crawl manager's scheduling core, with its
//! default and the reason for it.
//!
//! The struct is the file layer of the two-layer config (STYLE.md habit 6): serde with
//! `deny_unknown_fields`, so a typo in the RON file is an error, and [`Default`] for
//! every field. [`FrontierConfig::validate`] checks the values that would make the
//! frontier misbehave (a zero pop batch, a back-off schedule with no step) before
//! [`Frontier::open`](crate::frontier::Frontier::open) uses them.
//!
//! Times are milliseconds (`*_ms`), like everywhere in the frontier's API.

use serde::{Deserialize, Serialize};
use spool::ComponentId;

use super::FrontierError;

/// The largest `connections_per_host` accepted: more is a typo rather than a site's
/// wish (browsers open 6), and the frontier scans a host's requests in flight
/// linearly.
pub const MAX_CONNECTIONS_PER_HOST: u32 = 64;

/// The default of [`FrontierConfig::host_retry_window_ms`]: 2 min.
pub const DEFAULT_HOST_RETRY_WINDOW_MS: u64 = 120_000;

/// What the defaults promise (issue 37): a crawl whose last hosts never answer,
/// refuse connections or answer robots.txt with 5xx ends at most this long after
/// its last page, every URL of theirs with an outcome. Checked against
/// [`FrontierConfig::give_up_bound_ms`] of the defaults by a unit test.
pub const DEFAULT_GIVE_UP_PROMISE_MS: u64 = 180_000;

/// The crawl manager's scheduling settings (DESIGN.md section 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FrontierConfig {
    /// Our robots.txt product token (RFC 9309 user-agent), e.g. `polycrawl`.
    /// Default `polycrawl`.
    pub robots_agent: String,
    /// The component id under which the manager claims request files and publishes
    /// outcome files (`[a-z0-9_-]`, unique among live consumers). Default `manager`.
    pub component_id: String,

    /// `r`: the crawl's target speed in pages (fetches, robots.txt included) per
    /// second; sizes the ready queue (`s = k x r x d`). The service's speed control
    /// changes it at run time (time-of-day schedule, operator) with
    /// [`Frontier::set_target_rate`](crate::frontier::Frontier::set_target_rate).
    /// Default 100.
    pub target_pages_per_sec: f64,
    /// `k`: how many times `r x d` hosts the ready queue should hold before no more
    /// request files are loaded. Polybot used about 2. Default 2.
    pub ready_factor: f64,

    /// `d`: the time between the end of one request to a host (origin) and the start
    /// of the next, when nothing overrides it (between two starts when
    /// `connections_per_host` is above 1). Default 30,000 (30 s, as in Polybot).
    pub interval_ms: u64,
    /// The floor under every per-host interval: request hints (`interval_ms=`) and the
    /// adaptive interval are raised to it. Default 1,000.
    pub min_interval_ms: u64,
    /// Adaptive politeness: when on, a host's interval is
    /// `max(min_interval_ms, adaptive_factor x duration of its last fetch)` instead of
    /// `interval_ms` (a per-host hint still wins). Default off.
    pub adaptive: bool,
    /// `f` of the adaptive interval. Default 10.
    pub adaptive_factor: f64,
    /// robots.txt `Crawl-delay` is honoured up to this many milliseconds (it only ever
    /// lengthens a host's interval). Default 60,000.
    pub max_crawl_delay_ms: u64,

    /// Requests in flight at once to one host (origin), for sites whose owner allows
    /// more than one. With 1 (the default, as in Polybot) the host's interval runs
    /// from the end of a request to the start of the next; above 1 it runs from the
    /// start of a request to the start of the next, and up to this many requests of
    /// the host may be in flight at once (see [`super::politeness`]). The per-IP
    /// limits below still bound every start. 1 to [`MAX_CONNECTIONS_PER_HOST`].
    pub connections_per_host: u32,
    /// Requests in flight at once to one IP address, over all the hosts (origins) it
    /// serves; 0 means no limit. Default 2: one server often hosts many names, and two
    /// concurrent requests are what a browser-like client would open.
    pub ip_max_in_flight: u32,
    /// The time between the starts of two requests to one IP address, and (kept by
    /// the downloader, on the wire) between the end of a response from the address
    /// and the next request's start; 0 means no limit. Default 1,000.
    pub ip_min_interval_ms: u64,

    /// Back-off after a host's 1st, 2nd, ... consecutive failure (connect failure,
    /// timeout, failed DNS lookup, unreachable robots.txt); the last step repeats.
    /// Default 1 min, 5 min, 30 min, 2 h.
    pub backoff_ms: Vec<u64>,
    /// After this many consecutive failures the host is dead: its queued URLs become
    /// outcomes (`too_many_failures`, or `dns_failure` when DNS kept failing) and new
    /// URLs for it are dropped the same way for `dead_host_ttl_ms`. Default 5.
    pub max_failures: u32,
    /// How long a dead host stays dead. Default 86,400,000 (24 h).
    pub dead_host_ttl_ms: u64,
    /// The time bound on a failing host, beside the count bound `max_failures`:
    /// after a failure (connect failure, timeout, failed lookup, unreachable
    /// robots.txt: 5xx, 429, time-out or refused connection) the host is tried
    /// again only if its next try (after its back-off) starts within this long of
    /// the start of the first try of its current run of failures; otherwise it is
    /// dead at once, its URLs ending with `too_many_failures` (the detail says
    /// which bound ended it). With the default back-off (1 min, then 5 min) a host
    /// that refuses connections or answers robots.txt with a 5xx is tried twice
    /// and given up about 1 min after its first try; one that accepts a connection
    /// and never answers is tried twice and given up about 2 min after it. A host
    /// whose run of failures began before a restart gets a new window. See
    /// [`FrontierConfig::give_up_bound_ms`] for what it bounds. For Heritrix-like
    /// patience (30 tries 15 min apart) set it with `max_failures` and
    /// `backoff_ms`: `host_retry_window_ms: 27000000, max_failures: 30,
    /// backoff_ms: [900000]`. 0 gives up at the first failure. Default 120,000
    /// (2 min).
    pub host_retry_window_ms: u64,
    /// How many times one URL is tried when its fetch fails with a connect failure or
    /// timeout (each try also counts as a host failure), or is answered 429 or 503
    /// (the last such answer is then its page). Default 2.
    pub max_url_attempts: u32,
    /// The least rest of a host whose job was out at a downloader that vanished
    /// (killed, crashed, cut off): the request may still be in the server's hands, so
    /// the host's next request waits `max(its interval, this)` from the moment the
    /// manager noticed the loss. Only matters when intervals are shorter than a
    /// server's service time. Default 5,000.
    pub lost_job_rest_ms: u64,
    /// A 429 Too Many Requests or 503 Service Unavailable answer to a page backs its
    /// host off (the URL is tried again later, within `max_url_attempts`): for the
    /// server's `Retry-After`, or without one for `max(interval, throttle_min_ms)`
    /// doubled per answer in a row, with jitter; either way at most this long.
    /// Default 3,600,000 (1 h).
    pub throttle_max_ms: u64,
    /// The least first back-off after a 429 or 503 without `Retry-After` (a host
    /// whose interval is shorter starts from this). Default 1,000.
    pub throttle_min_ms: u64,

    /// How long a robots.txt verdict (rules, or "allow all" after a 4xx) is trusted.
    /// Default 86,400,000 (24 h, RFC 9309 section 2.4).
    pub robots_ttl_ms: u64,
    /// Redirects followed for one robots.txt fetch (RFC 9309 asks for at least 5).
    /// Default 5.
    pub robots_max_redirects: u32,
    /// A name asked of the resolvers and not answered within this time is asked
    /// again. Default 60,000.
    pub dns_retry_ms: u64,
    /// Dispatch to private, loopback, link-local and other non-global addresses.
    /// Default false: such URLs end with `forbidden_address`. Tests and demos against
    /// servers on this machine turn it on.
    pub allow_private_addresses: bool,
    /// Hosts (`www.example.com`) and domains (`.example.com` or `*.example.com`)
    /// never contacted: their URLs end with the `blacklisted` outcome. Applied at
    /// every start on top of the entries added at run time (which are persisted);
    /// to lift one of these, remove it here. Default empty.
    pub blacklist: Vec<String>,

    /// URLs read from RocksDB into a ready host's in-memory buffer at once. Default 16.
    pub pop_batch: usize,
    /// URLs of a request file written to RocksDB in one batch (each batch also
    /// records how far the file is loaded). Default 10,000.
    pub load_chunk_urls: usize,
    /// Most request-file chunks loaded by one call of `tick`/`next_jobs`, so a burst
    /// of files never stalls dispatch. Default 8.
    pub max_load_chunks_per_call: usize,
    /// How often the request folders are listed again for new files (the service can
    /// force it with `rescan_requests`). Default 2,000.
    pub request_scan_interval_ms: u64,

    /// An outcome file is published when it holds this many lines... Default 10,000.
    pub outcome_batch_lines: usize,
    /// ...or when its oldest line is this old. Default 5,000.
    pub outcome_max_age_ms: u64,
    /// After a restart, how long a page reported `Stored` before it, whose batch was
    /// not committed, waits for a downloader to claim it (a downloader that outlived
    /// the manager sends `Committed` for its earlier connections' jobs on its next
    /// one) before its URL is queued again (its downloader died with it). Long
    /// enough for a downloader to reconnect (its longest pause, 10 s) and publish its
    /// batch (`max_batch_age_ms`, 2 s): shorter refetches pages a surviving
    /// downloader publishes; longer only delays the refetch of pages that died.
    /// Default 12,000.
    pub restored_commit_wait_ms: u64,

    /// Body cap for pages. Default 10 MiB.
    pub max_page_bytes: u64,
    /// Body cap for robots.txt (the parser reads at most 500 KiB). Default 512 KiB.
    pub max_robots_bytes: u64,
    /// Connect (TCP + TLS) timeout. Default 10,000.
    pub connect_timeout_ms: u32,
    /// Timeout from request sent to first response byte. Default 30,000.
    pub first_byte_timeout_ms: u32,
    /// Timeout for a whole fetch. Default 120,000.
    pub total_timeout_ms: u32,
    /// Ask the downloader to keep the connection open when the host has more URLs and
    /// its interval is at most this. Default 5,000.
    pub keep_alive_max_interval_ms: u64,
    /// With `connections_per_host` 1, a host whose interval is at most this gets
    /// its next URL sent along with the current one, as a chained job
    /// (`spool::protocol::After`): the downloader starts it one interval after the
    /// current response ends, unless that response failed or was a 429/503, instead
    /// of waiting for the report to reach the manager and the next dispatch to come
    /// back. Only when the host's address may start another request at once (no
    /// per-IP spacing in the way). 0 turns chaining off. Default 1,000.
    pub chain_max_interval_ms: u64,
    /// With chaining, the longest chain sent to a host whose interval is 0
    /// (politeness off): its next URLs, each chained after the one before and
    /// started as soon as that one's response ends, so that one connection stays
    /// busy without a round trip through the manager every other page. Only as far
    /// as the dispatch round has room for it beside the other hosts ready then
    /// (each chained job holds a place in its downloader's window); hosts with an
    /// interval get one chained job (it hides the round trip already). Below 2
    /// counts as 2. Default 32 (against 8: about 3 % more pages a second on the
    /// benchmark web, where the last hosts left each run on one connection;
    /// BENCHMARKS.md, issue 39, session 31).
    pub chain_max_jobs: u32,
}

impl Default for FrontierConfig {
    fn default() -> Self {
        Self {
            robots_agent: "polycrawl".into(),
            component_id: "manager".into(),
            target_pages_per_sec: 100.0,
            ready_factor: 2.0,
            interval_ms: 30_000,
            min_interval_ms: 1_000,
            adaptive: false,
            adaptive_factor: 10.0,
            max_crawl_delay_ms: 60_000,
            connections_per_host: 1,
            ip_max_in_flight: 2,
            ip_min_interval_ms: 1_000,
            backoff_ms: vec![60_000, 300_000, 1_800_000, 7_200_000],
            max_failures: 5,
            dead_host_ttl_ms: 86_400_000,
            host_retry_window_ms: DEFAULT_HOST_RETRY_WINDOW_MS,
            max_url_attempts: 2,
            lost_job_rest_ms: 5_000,
            throttle_max_ms: 3_600_000,
            throttle_min_ms: 1_000,
            robots_ttl_ms: 86_400_000,
            robots_max_redirects: 5,
            dns_retry_ms: 60_000,
            allow_private_addresses: false,
            blacklist: Vec::new(),
            pop_batch: 16,
            load_chunk_urls: 10_000,
            max_load_chunks_per_call: 8,
            request_scan_interval_ms: 2_000,
            outcome_batch_lines: 10_000,
            outcome_max_age_ms: 5_000,
            restored_commit_wait_ms: 12_000,
            max_page_bytes: 10 * 1024 * 1024,
            max_robots_bytes: 512 * 1024,
            connect_timeout_ms: 10_000,
            first_byte_timeout_ms: 30_000,
            total_timeout_ms: 120_000,
            keep_alive_max_interval_ms: 5_000,
            chain_max_interval_ms: 1_000,
            chain_max_jobs: 32,
        }
    }
}

impl FrontierConfig {
    /// Checks the values; the error names the field.
    pub fn validate(&self) -> Result<(), FrontierError> {
        let bad =
            |field: &'static str, why: &'static str| Err(FrontierError::Config { field, why });
        if self.robots_agent.trim().is_empty() {
            return bad("robots_agent", "must not be empty");
        }
        if self
            .blacklist
            .iter()
            .any(|e| e.parse::<crate::blacklist::BlacklistEntry>().is_err())
        {
            return bad(
                "blacklist",
                "entries must be host.name, .domain or *.domain",
            );
        }
        if ComponentId::new(self.component_id.as_str()).is_err() {
            return bad("component_id", "must be 1 to 64 characters of [a-z0-9_-]");
        }
        if !(self.target_pages_per_sec.is_finite() && self.target_pages_per_sec > 0.0) {
            return bad("target_pages_per_sec", "must be a positive number");
        }
        if !(self.ready_factor.is_finite() && self.ready_factor > 0.0) {
            return bad("ready_factor", "must be a positive number");
        }
        if !(self.adaptive_factor.is_finite() && self.adaptive_factor >= 0.0) {
            return bad("adaptive_factor", "must be a number >= 0");
        }
        if self.connections_per_host == 0 || self.connections_per_host > MAX_CONNECTIONS_PER_HOST {
            return bad("connections_per_host", "must be 1 to 64");
        }
        if self.backoff_ms.is_empty() {
            return bad("backoff_ms", "needs at least one step");
        }
        if self.max_failures == 0 {
            return bad("max_failures", "must be at least 1");
        }
        if self.max_url_attempts == 0 {
            return bad("max_url_attempts", "must be at least 1");
        }
        if self.pop_batch == 0 || self.load_chunk_urls == 0 || self.max_load_chunks_per_call == 0 {
            return bad(
                "pop_batch/load_chunk_urls/max_load_chunks_per_call",
                "must be at least 1",
            );
        }
        if self.outcome_batch_lines == 0 {
            return bad("outcome_batch_lines", "must be at least 1");
        }
        Ok(())
    }

    /// The longest a failing host keeps URLs after the start of its first failing
    /// try: its last try starts at most `host_retry_window_ms` after that, and a
    /// try that gets no answer ends by `connect_timeout_ms + first_byte_timeout_ms`
    /// (a connection made at the last moment, then silence); its URLs' outcomes
    /// are then published within `outcome_max_age_ms`. A host first tried as the
    /// crawl's last pages are fetched therefore holds the crawl's end at most this
    /// long past them (plus the seconds the application takes to request its URLs
    /// and to confirm it is idle). A try that keeps receiving bytes is bounded by
    /// `total_timeout_ms` instead: a slow host, not a silent one. Default 165,000.
    pub fn give_up_bound_ms(&self) -> u64 {
        self.host_retry_window_ms
            .saturating_add(u64::from(self.connect_timeout_ms))
            .saturating_add(u64::from(self.first_byte_timeout_ms))
            .saturating_add(self.outcome_max_age_ms)
    }

    /// The component id, checked by [`validate`](Self::validate).
    pub(crate) fn component(&self) -> Result<ComponentId, FrontierError> {
        ComponentId::new(self.component_id.as_str()).map_err(|_| FrontierError::Config {
            field: "component_id",
            why: "must be 1 to 64 characters of [a-z0-9_-]",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_unknown_keys_are_errors() {
        FrontierConfig::default().validate().unwrap();
        let mut c = FrontierConfig::default();
        c.backoff_ms.clear();
        assert!(matches!(
            c.validate(),
            Err(FrontierError::Config {
                field: "backoff_ms",
                ..
            })
        ));
        let parsed: FrontierConfig = ron::from_str("(interval_ms: 5000)").unwrap();
        assert_eq!(parsed.interval_ms, 5000);
        assert_eq!(parsed.ip_max_in_flight, 2);
        assert!(ron::from_str::<FrontierConfig>("(interval: 5000)").is_err());
        assert_eq!(parsed.connections_per_host, 1, "one at a time by default");
        for bad_value in [0, MAX_CONNECTIONS_PER_HOST + 1, u32::MAX] {
            let c = FrontierConfig {
                connections_per_host: bad_value,
                ..FrontierConfig::default()
            };
            assert!(matches!(
                c.validate(),
                Err(FrontierError::Config {
                    field: "connections_per_host",
                    ..
                })
            ));
        }
        let c = FrontierConfig {
            connections_per_host: MAX_CONNECTIONS_PER_HOST,
            ..FrontierConfig::default()
        };
        c.validate().unwrap();
    }

    /// Issue 37: the defaults give up on hosts that never answer within the
    /// promised 3 minutes, and a config file that sets nothing gets them.
    #[test]
    fn default_give_up_bound_is_within_three_minutes() {
        let d = FrontierConfig::default();
        assert_eq!(d.host_retry_window_ms, 120_000);
        assert_eq!((d.max_failures, d.backoff_ms[0]), (5, 60_000));
        assert_eq!(d.give_up_bound_ms(), 165_000);
        assert!(d.give_up_bound_ms() <= DEFAULT_GIVE_UP_PROMISE_MS);
        let parsed: FrontierConfig = ron::from_str("()").unwrap();
        assert_eq!(parsed.host_retry_window_ms, DEFAULT_HOST_RETRY_WINDOW_MS);
        let patient: FrontierConfig = ron::from_str(
            "(host_retry_window_ms: 27000000, max_failures: 30, backoff_ms: [900000])",
        )
        .unwrap();
        patient.validate().unwrap();
        assert_eq!(patient.give_up_bound_ms(), 27_045_000);
    }
}
