//! [`IpOwners`]: which downloader an IP address's next job must go to.
//!
//! Per-IP start spacing is kept on the wire by the downloader that sends the
//! requests (its gate spaces the writes to one address), so two downloaders must
//! never send to one address within the spacing of each other. Affinity (see
//! `engine/downloaders.rs`) sends an address's jobs to one downloader, but spills to
//! another when that one is full; a spilled job could then start right after a
//! job still waiting in the first downloader. So an address is *owned* by the
//! downloader of its last job while that downloader holds a job to it, and until
//! the spacing after the report of the last one has passed (the request was sent
//! before its report; the report's stamp, in µs, is rounded up to the millisecond,
//! never truncated); meanwhile its jobs go to the owner even past the owner's
//! window. That overfill is bounded: the frontier lets at most `ip_max_in_flight`
//! jobs per address out at once.
//!
//! A gone downloader's entries are ignored by the caller (it routes only to live
//! downloaders) and replaced by the next job to the address.
//!
//! Memory: one entry per address with a job out or reported within the spacing,
//! swept every [`SWEEP_EVERY`] reports. O(1) per job and report, amortised. This
//! module must never look at the frontier or do I/O.

use std::collections::HashMap;
use std::net::IpAddr;

use super::conn::ConnId;

/// Reports between two sweeps of expired entries.
const SWEEP_EVERY: u32 = 1024;

#[derive(Debug, Clone, Copy)]
struct Owner {
    conn: ConnId,
    outstanding: u32,
    /// Wall ms after which another downloader may take the address.
    free_at_ms: u64,
}

/// The owning downloader of each recently contacted address.
#[derive(Debug)]
pub(crate) struct IpOwners {
    owners: HashMap<IpAddr, Owner>,
    spacing_ms: u64,
    reports: u32,
}

impl IpOwners {
    /// Owners for a per-IP start spacing of `spacing_ms`.
    pub fn new(spacing_ms: u64) -> Self {
        Self {
            owners: HashMap::new(),
            spacing_ms,
            reports: 0,
        }
    }

    /// The downloader a job to `ip` must go to at `wall_ms`, if any.
    pub fn owner(&self, ip: IpAddr, wall_ms: u64) -> Option<ConnId> {
        let o = self.owners.get(&ip)?;
        (o.outstanding > 0 || wall_ms < o.free_at_ms).then_some(o.conn)
    }

    /// A job to `ip` went to downloader `conn`.
    pub fn sent(&mut self, ip: IpAddr, conn: ConnId) {
        let o = self.owners.entry(ip).or_insert(Owner {
            conn,
            outstanding: 0,
            free_at_ms: 0,
        });
        if o.conn != conn {
            // The owner is gone or no longer owns it: the address moves.
            *o = Owner {
                conn,
                outstanding: 0,
                free_at_ms: 0,
            };
        }
        o.outstanding += 1;
    }

    /// Downloader `conn` reported a job to `ip` (or gave it back) whose request
    /// ended by `end_us` (unix µs: the report's own stamp, or when it came). The
    /// address is free from the spacing after that moment rounded *up* to the
    /// millisecond: a truncated stamp could hand it to another downloader up to
    /// 1 ms early.
    pub fn ended(&mut self, ip: IpAddr, conn: ConnId, end_us: u64) {
        let end_ms = end_us.div_ceil(1000);
        if let Some(o) = self.owners.get_mut(&ip).filter(|o| o.conn == conn) {
            o.outstanding = o.outstanding.saturating_sub(1);
            o.free_at_ms = o.free_at_ms.max(end_ms.saturating_add(self.spacing_ms));
        }
        self.reports += 1;
        if self.reports >= SWEEP_EVERY {
            self.reports = 0;
            self.owners
                .retain(|_, o| o.outstanding > 0 || o.free_at_ms > end_ms);
        }
    }

    /// Addresses with an owner entry.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.owners.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 1, 0, last])
    }

    #[test]
    fn an_address_stays_with_its_downloader_until_the_spacing_after_its_last_report() {
        let mut o = IpOwners::new(100);
        assert_eq!(o.owner(ip(1), 0), None, "a new address is free");
        o.sent(ip(1), 7);
        o.sent(ip(1), 7);
        assert_eq!(
            o.owner(ip(1), 5_000),
            Some(7),
            "jobs out: owned however late"
        );
        o.ended(ip(1), 7, 1_000_000);
        assert_eq!(o.owner(ip(1), 5_000), Some(7), "one job still out");
        o.ended(ip(1), 7, 1_050_000);
        assert_eq!(
            o.owner(ip(1), 1_149),
            Some(7),
            "within the spacing of the report"
        );
        assert_eq!(o.owner(ip(1), 1_150), None, "free after it");
        o.sent(ip(1), 8);
        assert_eq!(o.owner(ip(1), 1_150), Some(8), "moved");
        // A stale report from the old owner changes nothing.
        o.ended(ip(1), 7, 1_200_000);
        assert_eq!(o.owner(ip(1), 9_000), Some(8));
    }

    /// Issue 38, Done-when 2: a request written at 1 000.05 ms (a stamp inside a
    /// millisecond) keeps its address until 1 100.05 ms: free from 1 101 ms, not at
    /// 1 100 ms (99.95 ms after it), as a stamp truncated to 1 000 ms said.
    #[test]
    fn a_sub_millisecond_stamp_is_rounded_up() {
        let mut o = IpOwners::new(100);
        o.sent(ip(1), 7);
        o.ended(ip(1), 7, 1_000_050);
        assert_eq!(o.owner(ip(1), 1_100), Some(7), "99.95 ms after the request");
        assert_eq!(o.owner(ip(1), 1_101), None, "100.95 ms after it");
        o.sent(ip(2), 7);
        o.ended(ip(2), 7, 1_000_000);
        assert_eq!(o.owner(ip(2), 1_099), Some(7));
        assert_eq!(o.owner(ip(2), 1_100), None, "a whole-ms stamp is not moved");
    }

    #[test]
    fn expired_entries_are_swept() {
        let mut o = IpOwners::new(10);
        for i in 0..SWEEP_EVERY - 1 {
            let addr = IpAddr::from([10, 0, (i >> 8) as u8, i as u8]);
            o.sent(addr, 1);
            o.ended(addr, 1, 0);
        }
        assert_eq!(o.len(), SWEEP_EVERY as usize - 1);
        o.sent(ip(1), 1);
        o.ended(ip(1), 1, 1_000_000);
        assert_eq!(o.len(), 1, "only the fresh one is left");
    }
}
