//! [`IpGate`]: per-IP start spacing inside one downloader.
//!
//! The manager spaces its dispatches to one IP address by `min_ip_spacing_ms`, but
//! a job can wait in this downloader (behind its connection count, or while the
//! process is not scheduled) and then start right before the next job to the same
//! address, which arrived on time. So every job reserves its start here: no sooner
//! than the previous start to its address plus its spacing. With the manager
//! sending each address's jobs to one downloader, that holds on the wire too.
//!
//! Memory: one entry per address contacted within the last spacing, dropped once
//! its spacing is over (swept every [`SWEEP_EVERY`] reservations). O(1) per
//! reservation, amortised. This module must never sleep itself: it only says when.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Reservations between two sweeps of expired entries.
const SWEEP_EVERY: u32 = 1024;

/// When each IP address may next be contacted.
#[derive(Debug, Default)]
pub(crate) struct IpGate {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Address -> earliest start of the next request to it.
    free_at: HashMap<IpAddr, Instant>,
    reservations: u32,
}

impl IpGate {
    /// Reserves a start for a request to `ip` at `now` or later, `spacing` after the
    /// previous reservation's start; returns that start. A zero spacing reserves
    /// nothing and returns `now`.
    pub fn reserve(&self, ip: IpAddr, spacing: Duration, now: Instant) -> Instant {
        if spacing.is_zero() {
            return now;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.reservations += 1;
        if inner.reservations >= SWEEP_EVERY {
            inner.reservations = 0;
            inner.free_at.retain(|_, free| *free > now);
        }
        let start = inner.free_at.get(&ip).map_or(now, |free| (*free).max(now));
        inner.free_at.insert(ip, start + spacing);
        start
    }

    /// Addresses with a spacing still running (or not yet swept).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .free_at
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 1, 0, last])
    }

    #[test]
    fn starts_to_one_address_are_spaced_and_others_are_free() {
        let gate = IpGate::default();
        let t0 = Instant::now();
        let d = Duration::from_millis(100);
        assert_eq!(gate.reserve(ip(1), d, t0), t0);
        // Two jobs that arrive together: the second waits one spacing, the third two.
        assert_eq!(gate.reserve(ip(1), d, t0), t0 + d);
        assert_eq!(gate.reserve(ip(1), d, t0 + d / 2), t0 + 2 * d);
        assert_eq!(
            gate.reserve(ip(2), d, t0),
            t0,
            "another address is not held"
        );
        // Long after: no wait.
        let later = t0 + 10 * d;
        assert_eq!(gate.reserve(ip(1), d, later), later);
        assert_eq!(gate.reserve(ip(3), Duration::ZERO, t0), t0);
        assert_eq!(gate.len(), 2, "a zero spacing keeps no entry");
    }

    #[test]
    fn expired_entries_are_swept() {
        let gate = IpGate::default();
        let t0 = Instant::now();
        let d = Duration::from_millis(1);
        for i in 0..(SWEEP_EVERY - 1) {
            gate.reserve(IpAddr::from([10, 0, (i >> 8) as u8, i as u8]), d, t0);
        }
        assert_eq!(gate.len(), SWEEP_EVERY as usize - 1);
        gate.reserve(ip(1), d, t0 + Duration::from_secs(1));
        assert_eq!(gate.len(), 1, "only the new reservation is left");
    }
}
