//! [`IpGate`]: per-IP send spacing inside one fetcher; [`HostGate`], the same per
//! host (origin), for hosts the manager lets have several requests in flight.
//!
//! The manager spaces its dispatches to one IP address by `min_ip_spacing_ms`, but
//! what the server sees is when requests arrive, and between a dispatch and the
//! request going out a job can wait (in the downloader's queue, for a permit, for a
//! connection and TLS handshake, or while the process is not scheduled). Gating the
//! job's start is not enough: a job that needs a new TLS connection and one that
//! reuses a kept-alive connection, started a spacing apart, send their requests
//! closer than that. So the gate sits right before the request's first byte is
//! written ([`crate::exchange`]): a request to an address may be written only once
//! `spacing` has passed since the previous request to that address was completely
//! handed to the kernel. While a request is being written its address is busy, so
//! two writes never overlap.
//!
//! An address's spacing also runs from the end of each *exchange* with it: when its
//! response has been read, or the exchange failed or was abandoned
//! ([`Gate::exchange_over`], kept by an [`ExchangeEnd`] guard). So a request never
//! starts less than the spacing after the previous response from that address
//! ended, as in Polybot ("the interval after the previous download completed").
//! Without this the spacing between two requests *as the server sees them* could
//! be shorter than the spacing of the writes by however much longer the server
//! took to read the first request than the second (a busy server parses late);
//! from the previous response's end it cannot: the server read the previous
//! request before it answered.
//!
//! Soundness: the previous request's end is taken after its write returned (an
//! upper bound of the moment its last byte left), the next request's turn before
//! its write starts (a lower bound), so the real spacing is never smaller than
//! the one this gate enforces.
//!
//! The host gate works the same way, keyed by origin (`scheme://name:port`), with
//! the job's `min_host_spacing`: the manager spaces the *dispatches* of a host's
//! requests by its interval when several may be in flight at once, and this keeps
//! that spacing between the *writes* (start to start: the exchange ends are the
//! address's only). A request takes its host's turn first, then
//! its address's (always in that order, so two waits never deadlock).
//!
//! Memory: one entry per address (host) written to within the last spacing, dropped
//! once its spacing is over (swept every [`SWEEP_EVERY`] turns). O(1) per turn,
//! amortised. This module must never sleep itself: it only says when.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Turns between two sweeps of expired entries.
const SWEEP_EVERY: u32 = 1024;
/// How soon a request waiting behind another one's write asks again.
pub(crate) const BUSY_RETRY: Duration = Duration::from_millis(1);

/// When each key (an IP address, a host) may next be written to.
#[derive(Debug)]
pub(crate) struct Gate<K> {
    inner: Mutex<Inner<K>>,
}

/// The per-IP gate.
pub(crate) type IpGate = Gate<IpAddr>;
/// The per-host gate, keyed by origin.
pub(crate) type HostGate = Gate<String>;

impl<K> Default for Gate<K> {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner {
                slots: HashMap::new(),
                turns: 0,
            }),
        }
    }
}

#[derive(Debug)]
struct Inner<K> {
    slots: HashMap<K, Slot>,
    turns: u32,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// A request to the address is being written.
    busy: bool,
    /// Earliest start of the next write (once not busy).
    free_at: Instant,
}

/// The right to write one request to an address (host); ending it (drop, or
/// `Turn::written_at`) starts its spacing.
#[derive(Debug)]
pub(crate) struct Turn<'a, K: Eq + Hash + Clone> {
    gate: &'a Gate<K>,
    ip: K,
    spacing: Duration,
}

impl<K: Eq + Hash + Clone> Gate<K> {
    /// Takes the turn to write a request to `ip` at `now`, or says when to ask
    /// again: once `spacing` has passed after the previous request's write ended
    /// and no other write to `ip` is going on. A zero spacing never waits and
    /// keeps nothing.
    pub fn try_turn(&self, ip: K, spacing: Duration, now: Instant) -> Result<Turn<'_, K>, Instant> {
        // Made only when the turn is given: dropping a Turn ends a write.
        let turn = |ip| Turn {
            gate: self,
            ip,
            spacing,
        };
        if spacing.is_zero() {
            return Ok(turn(ip));
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.turns += 1;
        if inner.turns >= SWEEP_EVERY {
            inner.turns = 0;
            inner.slots.retain(|_, s| s.busy || s.free_at > now);
        }
        match inner.slots.get_mut(&ip) {
            Some(slot) if slot.busy => Err(now + BUSY_RETRY),
            Some(slot) if slot.free_at > now => Err(slot.free_at),
            Some(slot) => {
                slot.busy = true;
                Ok(turn(ip))
            }
            None => {
                inner.slots.insert(
                    ip.clone(),
                    Slot {
                        busy: true,
                        free_at: now,
                    },
                );
                Ok(turn(ip))
            }
        }
    }

    /// Waits for the turn to write a request to `ip` (see [`try_turn`](Self::try_turn)).
    pub async fn turn(&self, ip: K, spacing: Duration) -> Turn<'_, K> {
        loop {
            match self.try_turn(ip.clone(), spacing, Instant::now()) {
                Ok(turn) => return turn,
                Err(at) => tokio::time::sleep_until(at).await,
            }
        }
    }

    fn end(&self, ip: &K, spacing: Duration, now: Instant) {
        self.push_back(ip, spacing, now, true);
    }

    /// An exchange with `ip` ended at `now` (its response read, or it failed): the
    /// next write waits for `spacing` from now too. A write going on to `ip` (another
    /// exchange's) stays going on.
    pub fn exchange_over(&self, ip: &K, spacing: Duration, now: Instant) {
        self.push_back(ip, spacing, now, false);
    }

    fn push_back(&self, ip: &K, spacing: Duration, now: Instant, write_over: bool) {
        if spacing.is_zero() {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = inner.slots.entry(ip.clone()).or_insert(Slot {
            busy: false,
            free_at: now,
        });
        if write_over {
            slot.busy = false;
        }
        slot.free_at = slot.free_at.max(now + spacing);
    }

    /// Addresses with an entry (a write going on, a spacing running, or not yet
    /// swept).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .slots
            .len()
    }
}

/// Ends an exchange with an address when dropped: however the exchange ends
/// (response read, error, timeout, cancellation), the address's spacing runs from
/// then ([`Gate::exchange_over`]).
#[derive(Debug)]
pub(crate) struct ExchangeEnd<'a> {
    gate: &'a IpGate,
    ip: IpAddr,
    spacing: Duration,
}

impl<'a> ExchangeEnd<'a> {
    /// Starts watching an exchange with `ip` on `gate`.
    pub fn new(gate: &'a IpGate, ip: IpAddr, spacing: Duration) -> Self {
        Self { gate, ip, spacing }
    }
}

impl Drop for ExchangeEnd<'_> {
    fn drop(&mut self) {
        self.gate
            .exchange_over(&self.ip, self.spacing, Instant::now());
    }
}

impl<K: Eq + Hash + Clone> Turn<'_, K> {
    /// The request was written (its last byte handed to the kernel) at `now`.
    #[cfg(test)]
    fn written_at(self, now: Instant) {
        self.gate.end(&self.ip, self.spacing, now);
        std::mem::forget(self);
    }
}

impl<K: Eq + Hash + Clone> Drop for Turn<'_, K> {
    /// The write is over (done, failed or abandoned): the spacing runs from now.
    fn drop(&mut self) {
        self.gate.end(&self.ip, self.spacing, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 1, 0, last])
    }

    #[test]
    fn writes_to_one_address_are_spaced_from_the_previous_end() {
        let gate = IpGate::default();
        let t0 = Instant::now();
        let d = Duration::from_millis(100);
        let first = gate.try_turn(ip(1), d, t0).expect("a free address");
        // While the first is being written, the address is busy.
        assert_eq!(gate.try_turn(ip(1), d, t0).unwrap_err(), t0 + BUSY_RETRY);
        assert!(
            gate.try_turn(ip(2), d, t0).is_ok(),
            "another address is free"
        );
        // The write took 5 ms: the spacing runs from its end, not its start.
        let end = t0 + Duration::from_millis(5);
        first.written_at(end);
        assert_eq!(gate.try_turn(ip(1), d, end).unwrap_err(), end + d);
        assert_eq!(gate.try_turn(ip(1), d, end + d / 2).unwrap_err(), end + d);
        let second = gate.try_turn(ip(1), d, end + d).expect("spacing over");
        second.written_at(end + d);
        // Long after: no wait.
        let later = t0 + 10 * d;
        assert!(gate.try_turn(ip(1), d, later).is_ok());
        assert!(gate.try_turn(ip(3), Duration::ZERO, t0).is_ok());
        assert!(
            gate.try_turn(ip(3), Duration::ZERO, t0).is_ok(),
            "zero never waits"
        );
        assert_eq!(gate.len(), 2, "a zero spacing keeps no entry");
    }

    #[test]
    fn asking_while_waiting_neither_delays_nor_frees_the_address() {
        // Real clocks: a refused ask must change nothing (it once ended a write).
        let gate = IpGate::default();
        let d = Duration::from_millis(50);
        let writing = gate.try_turn(ip(1), d, Instant::now()).unwrap();
        for _ in 0..3 {
            let now = Instant::now();
            assert_eq!(gate.try_turn(ip(1), d, now).unwrap_err(), now + BUSY_RETRY);
        }
        drop(writing);
        let free_at = gate.try_turn(ip(1), d, Instant::now()).unwrap_err();
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(
                gate.try_turn(ip(1), d, Instant::now()).unwrap_err(),
                free_at
            );
        }
    }

    #[test]
    fn an_abandoned_turn_still_starts_the_spacing() {
        let gate = IpGate::default();
        let d = Duration::from_millis(50);
        let t0 = Instant::now();
        drop(gate.try_turn(ip(1), d, t0).unwrap());
        let at = gate.try_turn(ip(1), d, t0).unwrap_err();
        assert!(at >= t0 + d, "the dropped turn set the spacing");
    }

    #[test]
    fn the_spacing_also_runs_from_the_end_of_the_exchange() {
        let gate = IpGate::default();
        let t0 = Instant::now();
        let d = Duration::from_millis(100);
        gate.try_turn(ip(1), d, t0).unwrap().written_at(t0);
        // The response took 30 ms: the next write waits a spacing from its end.
        let over = t0 + Duration::from_millis(30);
        gate.exchange_over(&ip(1), d, over);
        assert_eq!(gate.try_turn(ip(1), d, t0 + d).unwrap_err(), over + d);
        // An exchange that ends while another write is going on leaves it going on.
        let writing = gate.try_turn(ip(1), d, over + d).unwrap();
        gate.exchange_over(&ip(1), d, over + d);
        assert_eq!(
            gate.try_turn(ip(1), d, over + d).unwrap_err(),
            over + d + BUSY_RETRY
        );
        writing.written_at(over + d);
        // An end long before the previous write's spacing changes nothing.
        gate.exchange_over(&ip(1), d, t0);
        assert_eq!(gate.try_turn(ip(1), d, over + d).unwrap_err(), over + 2 * d);
        // The guard ends the exchange when dropped, whatever ended it.
        let at = Instant::now();
        drop(ExchangeEnd::new(&gate, ip(2), d));
        assert!(gate.try_turn(ip(2), d, at).unwrap_err() >= at + d);
    }

    #[test]
    fn expired_entries_are_swept() {
        let gate = IpGate::default();
        let t0 = Instant::now();
        let d = Duration::from_millis(1);
        for i in 0..(SWEEP_EVERY - 1) {
            let addr = IpAddr::from([10, 0, (i >> 8) as u8, i as u8]);
            gate.try_turn(addr, d, t0).unwrap().written_at(t0);
        }
        assert_eq!(gate.len(), SWEEP_EVERY as usize - 1);
        let late = t0 + Duration::from_secs(1);
        gate.try_turn(ip(1), d, late).unwrap().written_at(late);
        assert_eq!(gate.len(), 1, "only the new entry is left");
    }

    /// Politeness is about time, not the wall clock: on tokio's paused clock a
    /// writer's turns come a spacing after the end of the previous exchange, to the
    /// millisecond, and the test takes no real time.
    #[tokio::test(start_paused = true)]
    async fn on_the_paused_clock_turns_wait_out_the_spacing_from_the_exchange_end() {
        let gate = IpGate::default();
        let spacing = Duration::from_secs(30);
        let t0 = Instant::now();
        let real = std::time::Instant::now();
        let mut starts = Vec::new();
        for _ in 0..4 {
            let turn = gate.turn(ip(1), spacing).await;
            starts.push(t0.elapsed());
            // The request takes 2 s to write, its response 5 s more.
            tokio::time::sleep(Duration::from_secs(2)).await;
            drop(turn);
            let _exchange = ExchangeEnd::new(&gate, ip(1), spacing);
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        let secs: Vec<u64> = starts.iter().map(Duration::as_secs).collect();
        assert_eq!(
            secs,
            [0, 37, 74, 111],
            "2 s write + 5 s response + 30 s spacing"
        );
        assert!(starts.iter().all(|d| d.subsec_nanos() == 0), "{starts:?}");
        assert!(real.elapsed() < Duration::from_secs(10), "no real waiting");
    }

    /// Three writers asking at once for one address and one host get their turns a
    /// spacing apart, the longer of the two spacings deciding (paused clock).
    #[tokio::test(start_paused = true)]
    async fn on_the_paused_clock_concurrent_writers_take_turns() {
        let ips = IpGate::default();
        let hosts = HostGate::default();
        let t0 = Instant::now();
        let writer = || async {
            // The host's turn first, then the address's (as the exchange does).
            let host = hosts
                .turn("http://a.test:80".to_owned(), Duration::from_secs(4))
                .await;
            let addr = ips.turn(ip(7), Duration::from_secs(10)).await;
            let at = t0.elapsed();
            drop(addr);
            drop(host);
            at
        };
        let (a, b, c) = tokio::join!(writer(), writer(), writer());
        let mut secs = vec![a.as_secs(), b.as_secs(), c.as_secs()];
        secs.sort_unstable();
        assert_eq!(secs, [0, 10, 20]);
    }

    #[test]
    fn hosts_are_gated_like_addresses() {
        let gate = HostGate::default();
        let t0 = Instant::now();
        let d = Duration::from_millis(100);
        let a = || "http://a.test:80".to_owned();
        gate.try_turn(a(), d, t0).unwrap().written_at(t0);
        assert_eq!(gate.try_turn(a(), d, t0).unwrap_err(), t0 + d);
        assert!(
            gate.try_turn("https://a.test:443".to_owned(), d, t0)
                .is_ok()
        );
        assert!(gate.try_turn(a(), d, t0 + d).is_ok());
    }
}
