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
//! ([`Frontier::backed_off_hosts`](super::Frontier::backed_off_hosts): O(hosts in memory) per call, for the admin
//! status only). This module must never read the page: the answer's status and
//! `Retry-After` are all it needs.

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
pub(super) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
