//! The keep-alive pool: idle connections kept for the next fetch to the same place.
//!
//! A connection is keyed by (address, scheme, TLS host): plain http connections to one
//! address serve any virtual host, TLS ones only the name their certificate was
//! verified for. A connection through a proxy is also keyed by the proxy and the
//! target origin (host, port): it leads to that one origin only. A connection is checked in only when its response was read to the
//! end, nothing followed it, and the server did not say `Connection: close` (the
//! caller decides that). Checkout takes the most recently used connection (the one
//! most likely still open at the server) and drops those idle longer than the idle
//! timeout. A stale connection the server closed meanwhile is caught by the caller,
//! which retries once on a new connection.
//!
//! The pool holds whatever the fetcher keeps (an HTTP/1.1 connection or an HTTP/2
//! one, see `fetcher.rs`): a checked-out connection belongs to one fetch until it
//! is checked in again, so an HTTP/2 connection carries one request at a time too.
//!
//! Caps: `max_per_key` idle connections per key (the oldest is closed to make room)
//! and `max_total` overall (when full, after a sweep, the returning connection is
//! closed instead). Complexity: checkout and checkin are O(1) amortized under one
//! short mutex; a sweep over every idle connection (O(idle)) runs at most once per
//! idle timeout, so an expired connection is closed within about two idle timeouts
//! while fetches go on. Connections are dropped (closed) outside the lock.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::proxy::Proxy;

/// Where a pooled connection leads.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PoolKey {
    /// The address connected to.
    pub addr: SocketAddr,
    /// For https, the server name the certificate was verified for; `None` for http.
    pub tls_host: Option<String>,
    /// For a connection through a proxy: the proxy and the target's host and port;
    /// `None` for a direct connection.
    pub via: Option<(Arc<Proxy>, String, u16)>,
}

struct Idle<C> {
    conn: C,
    since: Instant,
}

struct Inner<C> {
    /// Per key, oldest first.
    idle: HashMap<PoolKey, VecDeque<Idle<C>>>,
    total: usize,
    last_sweep: Instant,
}

/// The pool of connections `C`; shared by every fetch of one fetcher.
pub(crate) struct Pool<C> {
    idle_timeout: Duration,
    max_per_key: usize,
    max_total: usize,
    inner: Mutex<Inner<C>>,
}

impl<C> Pool<C> {
    pub(crate) fn new(idle_timeout: Duration, max_per_key: usize, max_total: usize) -> Self {
        Self {
            idle_timeout,
            max_per_key,
            max_total,
            inner: Mutex::new(Inner {
                idle: HashMap::new(),
                total: 0,
                last_sweep: Instant::now(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<C>> {
        // A panic while holding the lock leaves the map consistent enough to go on.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A live-looking idle connection for `key`, if any.
    pub(crate) fn checkout(&self, key: &PoolKey) -> Option<C> {
        let now = Instant::now();
        let mut expired = Vec::new();
        let found = {
            let mut inner = self.lock();
            let inner = &mut *inner;
            let queue = inner.idle.get_mut(key)?;
            while queue
                .front()
                .is_some_and(|i| now.duration_since(i.since) >= self.idle_timeout)
            {
                expired.extend(queue.pop_front());
            }
            let found = queue.pop_back();
            if queue.is_empty() {
                inner.idle.remove(key);
            }
            inner.total -= expired.len() + usize::from(found.is_some());
            found
        };
        drop(expired);
        found.map(|i| i.conn)
    }

    /// Keeps `conn` for reuse, or closes it if the pool is full.
    pub(crate) fn checkin(&self, key: PoolKey, conn: C) {
        if self.max_total == 0 || self.max_per_key == 0 {
            return;
        }
        let now = Instant::now();
        let mut closed = Vec::new();
        {
            let mut inner = self.lock();
            let due = now.duration_since(inner.last_sweep) >= self.idle_timeout;
            if due || inner.total >= self.max_total {
                self.sweep(&mut inner, now, &mut closed);
            }
            if inner.total >= self.max_total {
                closed.push(conn);
            } else {
                let queue = inner.idle.entry(key).or_default();
                let evicted = if queue.len() >= self.max_per_key {
                    queue.pop_front()
                } else {
                    None
                };
                queue.push_back(Idle { conn, since: now });
                if let Some(old) = evicted {
                    closed.push(old.conn);
                } else {
                    inner.total += 1;
                }
            }
        }
        drop(closed);
    }

    fn sweep(&self, inner: &mut Inner<C>, now: Instant, closed: &mut Vec<C>) {
        inner.last_sweep = now;
        let before = closed.len();
        let timeout = self.idle_timeout;
        inner.idle.retain(|_, queue| {
            while queue
                .front()
                .is_some_and(|i| now.duration_since(i.since) >= timeout)
            {
                closed.extend(queue.pop_front().map(|i| i.conn));
            }
            !queue.is_empty()
        });
        inner.total -= closed.len() - before;
    }

    /// Idle connections held now.
    pub(crate) fn idle(&self) -> usize {
        self.lock().total
    }
}

#[cfg(test)]
mod tests {
    use tokio::net::{TcpListener, TcpStream};

    use super::*;
    use crate::conn::Conn;

    async fn conns(n: usize) -> (TcpListener, Vec<Conn>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(Conn::plain(TcpStream::connect(addr).await.unwrap()));
        }
        (listener, out)
    }

    fn key(port: u16) -> PoolKey {
        PoolKey {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            tls_host: None,
            via: None,
        }
    }

    #[tokio::test]
    async fn caps_per_key_and_total() {
        let (_l, cs) = conns(5).await;
        let pool = Pool::new(Duration::from_secs(60), 2, 3);
        for c in cs {
            pool.checkin(key(1), c);
        }
        assert_eq!(pool.idle(), 2, "per-key cap");
        let (_l, cs) = conns(3).await;
        for (i, c) in cs.into_iter().enumerate() {
            pool.checkin(key(10 + i as u16), c);
        }
        assert_eq!(pool.idle(), 3, "total cap");
        assert!(pool.checkout(&key(1)).is_some());
        assert!(pool.checkout(&key(1)).is_some());
        assert!(pool.checkout(&key(1)).is_none());
        assert!(pool.checkout(&key(10)).is_some());
        assert!(pool.checkout(&key(11)).is_none(), "was refused when full");
        assert_eq!(pool.idle(), 0);
    }

    #[tokio::test]
    async fn expired_connections_are_not_handed_out() {
        let (_l, cs) = conns(2).await;
        let pool = Pool::new(Duration::ZERO, 4, 4);
        for c in cs {
            pool.checkin(key(1), c);
        }
        assert!(pool.checkout(&key(1)).is_none());
        assert_eq!(pool.idle(), 0);
        let pool = Pool::new(Duration::from_secs(60), 4, 0);
        let (_l, cs) = conns(1).await;
        pool.checkin(key(1), cs.into_iter().next().unwrap());
        assert_eq!(pool.idle(), 0, "max_total 0 disables reuse");
    }
}
