//! Per-client pacing (`--pace-per-client BYTES_PER_SEC`): every client address (the
//! peer IP of a connection) gets a fixed bandwidth share over all its connections,
//! as the disk web of the full-coverage paper paces each crawling agent at a fixed
//! rate. Off by default: without the flag nothing is paced.
//!
//! The rule is a token bucket per peer IP, kept as its theoretical arrival time
//! (GCRA): `tat` is when the bytes reserved so far would have left at exactly the
//! rate. A write of `n` bytes at time `now` may start at `max(tat, now) - burst/rate`
//! (at once if that is not later than `now`) and moves `tat` to `max(tat, now) +
//! n/rate`. So over any interval of length `T` a client receives at most
//! `rate * T + burst + PACE_CHUNK` bytes, however many connections it opens, and a
//! client that keeps asking gets the rate. [`super::http`] writes every response
//! (head and body, as sent: after gzip and chunked framing, before TLS) in pieces
//! of at most [`PACE_CHUNK`] bytes, each reserved here first. The burst is
//! `max(PACE_CHUNK, rate / 20)`: 50 ms of the rate, which absorbs the timer's
//! granularity at high rates. Error replies before a request is parsed (400, 431,
//! 413) and the misbehaving host's answers are not paced.
//!
//! Waiting happens in the caller, asynchronously, after [`Pacer::reserve`] returned:
//! this module holds its lock only for the arithmetic and never sleeps.
//!
//! State: one `(IpAddr, Instant)` per client whose `tat` lies in the future. An entry
//! whose `tat` has passed means exactly what no entry means, so when the map reaches
//! its sweep mark (twice its size after the last sweep, at least [`MIN_SWEEP`]) those
//! entries are dropped: memory O(clients paced right now), amortized O(1) time per
//! reservation.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Largest piece of a response written after one reservation.
pub const PACE_CHUNK: usize = 16 * 1024;
/// The map of clients is not swept below this many entries.
pub const MIN_SWEEP: usize = 1024;

/// The pacing of every client address; shared by all connections.
#[derive(Debug)]
pub struct Pacer {
    /// Bytes per second per client address.
    rate: u64,
    /// `burst / rate`: how far ahead of the rate a client may be.
    tolerance: Duration,
    clients: Mutex<Clients>,
}

#[derive(Debug)]
struct Clients {
    /// Per client address, when its reserved bytes are paid for at the rate.
    tat: HashMap<IpAddr, Instant>,
    /// Sweep when the map reaches this size.
    sweep_at: usize,
}

impl Pacer {
    /// A pacer giving every client address `rate` bytes per second (at least 1).
    pub fn new(rate: u64) -> Pacer {
        let rate = rate.max(1);
        let burst = (PACE_CHUNK as u64).max(rate / 20);
        Pacer {
            rate,
            tolerance: seconds(burst, rate),
            clients: Mutex::new(Clients {
                tat: HashMap::new(),
                sweep_at: MIN_SWEEP,
            }),
        }
    }

    /// Bytes per second per client address.
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// The burst in bytes: how much a client that was quiet gets at once.
    pub fn burst(&self) -> u64 {
        (self.tolerance.as_secs_f64() * self.rate as f64).round() as u64
    }

    /// Reserves `bytes` for client `ip` at `now`; returns when they may be written
    /// (`now` or later). The caller waits until then without holding anything of
    /// this pacer.
    pub fn reserve(&self, ip: IpAddr, bytes: usize, now: Instant) -> Instant {
        let cost = seconds(bytes as u64, self.rate);
        // A poisoned lock only means another connection panicked mid-arithmetic:
        // the map is still a valid map.
        let mut c = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if c.tat.len() >= c.sweep_at {
            c.tat.retain(|_, tat| *tat > now);
            c.sweep_at = (2 * c.tat.len()).max(MIN_SWEEP);
        }
        let tat = c.tat.entry(ip).or_insert(now);
        let start = (*tat).max(now);
        *tat = start + cost;
        start.checked_sub(self.tolerance).unwrap_or(now).max(now)
    }

    /// Waits (asynchronously) until `bytes` more may be sent to `ip`.
    pub async fn wait(&self, ip: IpAddr, bytes: usize) {
        let at = self.reserve(ip, bytes, Instant::now());
        tokio::time::sleep_until(at).await;
    }

    /// Client addresses currently held (for tests of the bound).
    pub fn clients_held(&self) -> usize {
        self.clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .tat
            .len()
    }
}

/// `bytes / rate` seconds, to the nanosecond.
fn seconds(bytes: u64, rate: u64) -> Duration {
    let nanos = u128::from(bytes) * 1_000_000_000 / u128::from(rate);
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
    }

    #[test]
    fn a_quiet_client_gets_its_burst_at_once_then_the_rate() {
        let p = Pacer::new(100_000);
        assert_eq!(p.burst(), PACE_CHUNK as u64);
        let t0 = Instant::now();
        // The burst's worth goes at once: the first piece, then the one the
        // tolerance covers.
        assert_eq!(p.reserve(ip(2), PACE_CHUNK, t0), t0);
        assert_eq!(p.reserve(ip(2), PACE_CHUNK, t0), t0);
        // The third waits until the first is paid for: 16384 bytes at 100 kB/s.
        let third = p.reserve(ip(2), PACE_CHUNK, t0);
        assert_eq!(third - t0, Duration::from_nanos(163_840_000));
        // Sustained: n pieces reserved back to back take n * chunk / rate.
        let mut at = third;
        for _ in 0..100 {
            at = p.reserve(ip(2), PACE_CHUNK, at);
        }
        let expect = seconds(101 * PACE_CHUNK as u64, 100_000);
        assert_eq!(at - t0, expect);
    }

    #[test]
    fn clients_are_paced_apart_and_connections_of_one_client_together() {
        let p = Pacer::new(50_000);
        let t0 = Instant::now();
        // Two addresses: each gets the rate of its own.
        let mut a = t0;
        let mut b = t0;
        for _ in 0..50 {
            a = p.reserve(ip(2), 1000, a);
            b = p.reserve(ip(3), 1000, b);
        }
        assert_eq!(a, b);
        // One address, four "connections" interleaved: together, the rate of one.
        let q = Pacer::new(50_000);
        let mut last = t0;
        for _ in 0..50 {
            for _conn in 0..4 {
                last = last.max(q.reserve(ip(9), 1000, t0));
            }
        }
        // 200 kB at 50 kB/s: 4 s, less the tolerance (16384 bytes: 0.328 s) and the
        // last piece (1000 bytes: 20 ms) that may start before its end.
        let sent = seconds(200_000, 50_000) - q.tolerance - seconds(1000, 50_000);
        assert_eq!(last - t0, sent);
    }

    #[test]
    fn idle_time_is_not_banked_beyond_the_burst() {
        let p = Pacer::new(100_000);
        let t0 = Instant::now();
        let _ = p.reserve(ip(2), 1000, t0);
        // Ten idle seconds later: again only the burst goes at once.
        let later = t0 + Duration::from_secs(10);
        assert_eq!(p.reserve(ip(2), PACE_CHUNK, later), later);
        assert_eq!(p.reserve(ip(2), PACE_CHUNK, later), later);
        assert!(p.reserve(ip(2), PACE_CHUNK, later) > later);
    }

    #[test]
    fn high_rates_get_a_burst_of_fifty_milliseconds() {
        let p = Pacer::new(100_000_000);
        assert_eq!(p.burst(), 5_000_000);
        assert_eq!(p.tolerance, Duration::from_millis(50));
    }

    #[test]
    fn idle_clients_are_swept_so_the_map_stays_bounded() {
        let p = Pacer::new(1_000_000);
        let t0 = Instant::now();
        // 10,000 clients, each quiet again 1 ms after its one small reply.
        for k in 0..10_000u32 {
            let now = t0 + Duration::from_millis(u64::from(k) * 2);
            let [_, _, x, y] = k.to_be_bytes();
            let _ = p.reserve(IpAddr::V4(Ipv4Addr::new(127, 9, x, y)), 1000, now);
        }
        assert!(p.clients_held() <= MIN_SWEEP, "{}", p.clients_held());
        // A client still owing is kept through a sweep and paced as before.
        let p = Pacer::new(1000);
        let busy = p.reserve(ip(7), 100_000, t0);
        assert_eq!(busy, t0);
        for k in 0..3000u32 {
            let [_, _, x, y] = k.to_be_bytes();
            let _ = p.reserve(IpAddr::V4(Ipv4Addr::new(127, 8, x, y)), 1, t0);
        }
        assert!(p.reserve(ip(7), 1, t0) > t0 + Duration::from_secs(80));
    }
}
